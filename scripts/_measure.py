"""What the benchmark scripts measure a command with (standard library only)."""

from __future__ import annotations

import os
import subprocess
import time


def run_child(cmd, stdin=None, ok=(0, 1, 2), cpus=None) -> tuple[float, float]:
    """(seconds, peak resident memory in MB) of one child process, from wait4's own rusage (the
    child's peak, or that of its largest descendant: the worker processes it waited for).
    ``cpus``: the set of CPUs the child may run on (``os.sched_setaffinity``), e.g. one CPU for
    a one-core measurement that no helper thread can escape."""
    started = time.perf_counter()
    pin = (lambda: os.sched_setaffinity(0, cpus)) if cpus else None
    proc = subprocess.Popen(cmd, stdin=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=pin)
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


def installed_copy(where) -> str | None:
    """The console script of a ``pip install .`` of this checkout (the README's first command)
    in a new virtual environment under ``where``, or None (said on standard error) where it
    cannot be built. An editable install (the development one) runs setuptools' finder at
    every start, and ``python -m spamkit`` from a checkout is not what a mail server runs.

    The new environment gets spamkit alone (``--no-deps``); the packages of the running one
    (NumPy and the rest, which the full route imports) are put on its path as plain entries,
    so their ``.pth`` files, an editable install's finder among them, are not run."""
    import subprocess
    import sys
    from pathlib import Path

    venv = Path(where) / "installed"
    repo = Path(__file__).resolve().parents[1]
    try:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True)
        subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps", str(repo)], check=True,
                       capture_output=True)
    except subprocess.CalledProcessError as exc:
        print(f"no installed copy to time ({' '.join(map(str, exc.cmd[:4]))} ...: "
              f"{exc.stderr.decode(errors='replace')[-300:]})", file=sys.stderr)
        return None
    site = next((venv / "lib").glob("python*/site-packages"))
    parents = [p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir()]
    (site / "_parent_packages.pth").write_text("".join(p + "\n" for p in parents))
    return str(venv / "bin" / "spamkit")


def run_clients(cmd, messages, clients: int, per_client: int, stride: int = 1, times: list | None = None) -> float:
    """Seconds for ``clients`` concurrent clients each running ``cmd`` once per message,
    ``per_client`` messages each (client k starts at message ``k * stride``), a new process per
    message, as a mail server's delivery processes start ``spamc`` or ``bogofilter``.

    The messages are written to files first and each process is started by ``posix_spawn`` with
    its message file as standard input and ``/dev/null`` as output, from one thread that waits
    for any child to end and starts that client's next: the driver's own CPU (a Python
    ``subprocess.run`` with pipes costs about 0.5 ms a call, on the same two cores as the
    server) stays out of the way of what is measured. ``times``: a list that gets ``os.times()``
    as the first client starts and as the last one has ended (the CPU of the clients alone,
    without writing the files). Raises if a process exits with a status other than 0, 1 or 2
    (bogofilter's spam, ham, unsure) or is killed."""
    import shutil
    import tempfile

    program = shutil.which(cmd[0]) or cmd[0]
    with tempfile.TemporaryDirectory(prefix="clients-") as tmp:
        files = []
        for i, raw in enumerate(messages):
            path = os.path.join(tmp, f"{i}.eml")
            with open(path, "wb") as f:
                f.write(raw)
            files.append(path)
        devnull = os.open(os.devnull, os.O_WRONLY)
        running: dict = {}                        # pid -> (client, its next message number)

        def spawn(k: int, i: int) -> None:
            actions = [(os.POSIX_SPAWN_OPEN, 0, files[(k * stride + i) % len(files)], os.O_RDONLY, 0),
                       (os.POSIX_SPAWN_DUP2, devnull, 1), (os.POSIX_SPAWN_DUP2, devnull, 2)]
            running[os.posix_spawn(program, list(cmd), os.environ, file_actions=actions)] = (k, i + 1)

        if times is not None:
            times.append(os.times())
        started = time.perf_counter()
        try:
            for k in range(clients):
                if per_client:
                    spawn(k, 0)
            while running:
                pid, status = os.wait()
                k, i = running.pop(pid)
                code = os.waitstatus_to_exitcode(status)
                if code not in (0, 1, 2):
                    raise RuntimeError(f"{' '.join(map(str, cmd))} exited with status {code}")
                if i < per_client:
                    spawn(k, i)
            elapsed = time.perf_counter() - started
            if times is not None:
                times.append(os.times())
            return elapsed
        finally:
            os.close(devnull)
            for pid in running:
                os.waitpid(pid, 0)