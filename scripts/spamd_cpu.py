#!/usr/bin/env python3
"""CPU time per message of ``spamkit serve --spamd`` under concurrent ``spamc`` clients, process by process.

Trains the default filter on the first 2,000 messages of trec07p-dev, starts ``spamkit serve MODEL
--spamd-socket PATH`` and sends messages of 15-25 KB from the rest through SpamAssassin's real
``spamc`` client, a new client process per message, from ``--clients`` threads at once. Before
and after, it reads the CPU time (user + system, ``/proc/PID/stat``) of the server's main process
and of each of its worker processes, and ``os.times()`` for the spamc processes and this script:
printed per message, with the messages per second of the run and the server's CPU (main and
workers) over spamc's
(spamc does the same work in every run, so the ratio sees through the machine's drift). With ``--compare DIR`` (another
checkout of spamkit, built in place) a server of that checkout is measured too, in turns with
this one, ``--rounds`` times, so that a machine whose speed drifts slows both alike. Nothing is
asserted; docs/mail-filtering.md quotes the output.

    python scripts/spamd_cpu.py [--messages 800] [--clients 8] [--rounds 2] [--workers N] [--compare ../other-checkout]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from spamkit.corpus import Corpus
from spamkit import BEST, build_filter

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import run_clients
from bench_pipe import DEFAULT_CORPUS, twenty_kb

TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def measure(root: Path, model: Path, messages: list, clients: int, sock: Path, workers: int | None) -> dict:
    """One run against a server of the checkout at ``root``: CPU ms per message by process, and messages/s."""
    if sock.exists():
        sock.unlink()
    extra = ["--workers", str(workers)] if workers is not None else []
    server = subprocess.Popen([sys.executable, "-m", "spamkit", "serve", str(model), "--spamd-socket", str(sock),
                               *extra], cwd=root, env={**os.environ, "PYTHONPATH": str(root)}, stderr=subprocess.DEVNULL)
    try:
        while not sock.exists():
            if server.poll() is not None:
                raise SystemExit(f"spamkit serve ({root}) exited with status {server.returncode}")
            time.sleep(0.05)
        time.sleep(1.0)                                      # its workers are up
        children = [int(p) for p in Path(f"/proc/{server.pid}/task/{server.pid}/children").read_text().split()]
        cmd = ["spamc", "-U", str(sock)]
        for raw in messages[:20]:                            # warm the server's caches
            subprocess.run(cmd, input=raw, capture_output=True)
        per_client = len(messages) // clients
        before = {pid: cpu_seconds(pid) for pid in [server.pid, *children]}
        times = []                                           # around the clients, not the files' writing
        elapsed = run_clients(cmd, messages, clients, per_client, stride=7, times=times)
        times_before, times_after = times
        n = per_client * clients
        spent = {pid: cpu_seconds(pid) - before[pid] for pid in before}
    finally:
        server.terminate()
        server.wait()
    return {"rate": n / elapsed, "main": 1000 * spent[server.pid] / n,
            "workers": 1000 * sum(spent[p] for p in children) / n,
            "spamc": 1000 * (times_after.children_user + times_after.children_system
                             - times_before.children_user - times_before.children_system) / n,
            "driver": 1000 * (times_after.user + times_after.system - times_before.user - times_before.system) / n}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--messages", type=int, default=800)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--workers", type=int, default=None, help="spamkit serve --workers (default: its own).")
    parser.add_argument("--compare", type=Path, default=None,
                        help="Another spamkit checkout (built in place) to measure in turns with this one.")
    args = parser.parse_args()
    if not shutil.which("spamc"):
        raise SystemExit("spamc is not installed (Debian: apt-get install spamc)")
    with Corpus(args.corpus) as corpus:
        msgs = list(corpus)
    here = Path(__file__).resolve().parents[1]
    checkouts = [("this checkout", here)] + ([("--compare", args.compare.resolve())] if args.compare else [])
    with tempfile.TemporaryDirectory(prefix="spamd-cpu-") as tmp:
        model = Path(tmp) / "best.spamkit"
        build_filter(**BEST).fit(msgs[:2000]).save(model)
        big = twenty_kb(msgs[2000:], args.messages)
        print(f"{args.messages} messages of 15-25 KB, {args.clients} concurrent spamc clients; "
              "CPU ms per message (user + system)")
        print(f"{'server':<16} {'msg/s':>6} {'main':>6} {'workers':>8} {'spamc':>6} {'driver':>7} {'server/spamc':>14}")
        for _ in range(args.rounds):
            for name, root in checkouts:
                r = measure(root, model, big, args.clients, Path(tmp) / "spamd.sock", args.workers)
                print(f"{name:<16} {r['rate']:>6.0f} {r['main']:>6.2f} {r['workers']:>8.2f} {r['spamc']:>6.2f} "
                      f"{r['driver']:>7.2f} {(r['main'] + r['workers']) / r['spamc']:>14.2f}", flush=True)


if __name__ == "__main__":
    main()
