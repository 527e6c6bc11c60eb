"""What the benchmark scripts measure a command with (standard library only)."""

from __future__ import annotations

import os
import subprocess
import time


def run_child(cmd, stdin=None, ok=(0, 1, 2)) -> tuple[float, float]:
    """(seconds, peak resident memory in MB) of one child process, from wait4's own rusage (the
    child's peak, or that of its largest descendant: the worker processes it waited for)."""
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdin=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - started
    code = os.waitstatus_to_exitcode(status)
    if code not in ok:
        raise RuntimeError(f"{cmd[0]} failed with status {code}: {proc.stderr.read().decode()[-500:]}")
    proc.stderr.close()
    return seconds, usage.ru_maxrss / 1024


def compile_package() -> None:
    """Compile spamkit's bytecode, as ``pip install .`` does for an installed copy: a checkout run
    with PYTHONDONTWRITEBYTECODE set would otherwise compile every module in every new process."""
    import compileall
    from pathlib import Path

    import spamkit

    compileall.compile_dir(Path(spamkit.__file__).parent, quiet=1)


def run_clients(cmd, messages, clients: int, per_client: int, stride: int = 1) -> float:
    """Seconds for ``clients`` threads each running ``cmd`` once per message, ``per_client``
    messages each (client k starts at message ``k * stride``), a new process per message."""
    import threading

    def client(k: int) -> None:
        for i in range(per_client):
            subprocess.run(cmd, input=messages[(k * stride + i) % len(messages)], capture_output=True)

    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - started
