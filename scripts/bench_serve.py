#!/usr/bin/env python3
"""Load test of the resident filter: messages/s and latency with 1, 8 and 64 clients at once.

Starts ``spamkit serve`` on a loopback Unix socket (the default filter trained on the
first ``--train`` messages of trec07p-dev), then for each number of concurrent clients
sends the next ``--messages`` messages, each client one request at a time over the
protocol of ``spamkit-pipe`` (:func:`spamkit.mail.serve.client.ask`; the clients are threads of this
process, so what is measured is the server, not the start-up of client processes).
Reports messages/s and the 50th/90th/99th latency percentiles, the server's peak memory
(its own and its worker processes', VmHWM) and how many requests were not tagged.

Next to it, the same messages through ``bogofilter -T`` with a word list trained on the
same mail, one process per message as a delivery agent runs it, with the same numbers of
messages in flight. Then a few single requests: a 66 KB and a 1 MB HTML message (the
cases that took 11 s and more before HTML-to-text was linear) and a request over
``--max-size`` (refused). Bounded in count and time; loopback only; no threshold asserted.

    python scripts/bench_serve.py [--messages 2000] [--clients 1,8,64] [--workers 2]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from spamkit.mail.serve.client import ask
from spamkit.corpus import Corpus
from spamkit.parse.markup import split_tags
from spamkit import BEST, build_filter

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bogofilter import ensure_bogofilter, serving, trained_wordlist
from bench_bogofilter import DEFAULT_CORPUS


def peak_mb(pid: int) -> float:
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0
    return int(next(line.split()[1] for line in text.splitlines() if line.startswith("VmHWM:"))) / 1024


def children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def run_load(n_clients: int, messages: list[bytes], send) -> dict:
    """Send every message, ``n_clients`` at a time; latency of each, total rate, failures."""
    latencies: list[float] = []
    failures = [0]
    lock = threading.Lock()
    queue = list(enumerate(messages))

    def client():
        while True:
            with lock:
                if not queue:
                    return
                _, raw = queue.pop()
            t0 = time.perf_counter()
            ok = send(raw)
            dt = time.perf_counter() - t0
            with lock:
                latencies.append(dt)
                failures[0] += not ok

    started = time.perf_counter()
    threads = [threading.Thread(target=client) for _ in range(n_clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.perf_counter() - started
    latencies.sort()

    def pct(q):
        return 1000 * latencies[min(len(latencies) - 1, int(q * len(latencies)))]

    return {"rate": len(messages) / seconds, "p50": pct(0.50), "p90": pct(0.90), "p99": pct(0.99),
            "failed": failures[0]}


def html_message(size: int) -> bytes:
    unit = b'<tr><td class="c">Cheap <b>meds</b> <a href="http://shop.example/%d">here</a></td></tr>\n'
    body = b"<html><body><table>" + b"".join(unit % i for i in range(size // len(unit))) + b"</table></body></html>"
    return b"Subject: offer\nContent-Type: text/html; charset=utf-8\n\n" + body


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--train", type=int, default=2000)
    ap.add_argument("--messages", type=int, default=2000, help="messages sent at each level of concurrency")
    ap.add_argument("--clients", default="1,8,64")
    ap.add_argument("--workers", default=None, help="spamkit serve --workers (default: one per core)")
    args = ap.parse_args()
    levels = [int(c) for c in args.clients.split(",")]
    with Corpus(args.corpus) as corpus:
        msgs = list(corpus)
    train = msgs[:args.train]
    rest = [m.raw for m in msgs[args.train:]]
    test = [rest[i % len(rest)] for i in range(args.messages)]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        model = Path(tmp) / "best.spamkit"
        build_filter(**BEST).fit(train).save(model)
        sock = Path(tmp) / "spamkit.sock"
        with serving(model, sock, "--max-size", "4M",
                     *(["--workers", args.workers] if args.workers is not None else [])) as server:
            def send(raw):
                try:
                    status, out = ask(str(sock), raw, timeout=120)
                except OSError:
                    return False
                # tagged: spamkit's fields on top (after an mbox envelope line, which stays
                # first), and nothing else changed
                fields, rest = split_tags(out)
                return status in (0, 1, 2) and "x-spamkit-model" in fields and rest == raw

            for n in levels:
                rows.append(("spamkit serve", n, run_load(n, test, send)))
            singles = []
            for name, raw in (("66 KB HTML", html_message(66_000)), ("1 MB HTML", html_message(1_000_000))):
                times = []
                for _ in range(5):
                    t0 = time.perf_counter()
                    ok = send(raw)
                    times.append(time.perf_counter() - t0)
                singles.append((name, len(raw), min(times), ok))
            t0 = time.perf_counter()
            try:
                ask(str(sock), b"Subject: x\n\n" + b"y" * (5 << 20), timeout=60)
                refused = "not refused"
            except OSError as exc:
                refused = str(exc)
            refuse_ms = 1000 * (time.perf_counter() - t0)
            memory = peak_mb(server.pid), sum(peak_mb(c) for c in children(server.pid))
        exe = ensure_bogofilter(True)
        if exe:
            wordlist = trained_wordlist(exe, tmp, train)

            def bogo(raw):
                out = subprocess.run([exe, "-C", "-d", str(wordlist), "-T"], input=raw, capture_output=True)
                return out.returncode in (0, 1, 2)

            for n in levels:
                rows.append(("bogofilter -T (a process each)", n, run_load(n, test, bogo)))
    print(f"{len(test)} messages of {args.corpus.name} at each level; filter trained on {len(train)}")
    print(f"{'server':<32} {'clients':>7} {'msg/s':>8} {'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>8} {'untagged':>8}")
    for name, n, r in rows:
        print(f"{name:<32} {n:>7} {r['rate']:>8.0f} {r['p50']:>8.1f} {r['p90']:>8.1f} {r['p99']:>8.1f} "
              f"{r['failed']:>8}")
    by = {(name, n): r for name, n, r in rows}
    for n in levels:
        ours, theirs = by.get(("spamkit serve", n)), by.get(("bogofilter -T (a process each)", n))
        if ours and theirs:
            print(f"ratio spamkit/bogofilter at {n} clients: msg/s {ours['rate'] / theirs['rate']:.2f}, "
                  f"p99 {ours['p99'] / theirs['p99']:.2f}")
    for name, size, seconds, ok in singles:
        print(f"single {name} message ({size} bytes): {1000 * seconds:.1f} ms (best of 5), "
              f"{'tagged' if ok else 'NOT tagged'}")
    print(f"5 MB message with --max-size 4M: {refuse_ms:.0f} ms, {refused}")
    print(f"server peak memory: {memory[0]:.0f} MB, worker processes together {memory[1]:.0f} MB (VmHWM)")


if __name__ == "__main__":
    main()
