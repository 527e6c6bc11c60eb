#!/usr/bin/env python3
"""Pipe mode latency: start-up plus one message, as a mail delivery agent runs a filter.

Times ``spamkit filter MODEL - < message`` (a new Python process per message, as procmail,
maildrop or a Sieve ``execute`` would start it; scored by :mod:`spamkit.mail.lean`, and again with
``SPAMKIT_LEAN=0``, the full path) and ``spamkit-pipe`` talking to a running
``spamkit serve`` (the resident process: the client is a new process per message, the
filter stays loaded), and SpamAssassin's ``spamc`` talking to ``spamkit serve --spamd`` (one
table on the test messages, one on messages of 15-25 KB, and the messages per second with 8
concurrent clients) over real messages of trec07p-dev, next to
``bogofilter -T`` on the same messages with a word list trained on the same mail (bogofilter
is installed with apt-get when missing, as in bench_bogofilter.py). Prints the median and
90th percentile wall time per message and the ratio, where one-shot pipe mode's time goes (the
interpreter alone, with the standard library modules pipe mode imports, with all its imports:
the rest is reading and checking the filter file and scoring), and the start-up alone of
``spamkit --help``, ``spamkit train --help`` and ``spamkit info MODEL``; no threshold is
asserted anywhere. The commands of a table run in turns, message by message (and the two
concurrent rates in alternating rounds), so that a machine whose speed drifts during the run
slows every row alike.

The first rows are what a mail server runs: the ``spamkit`` console script of a ``pip install
.`` of this checkout into a new virtual environment (``_measure.installed_copy``; an editable
install runs setuptools' finder at every start, 20-25 ms). The ``python -m spamkit`` rows run
the checkout, its bytecode compiled first (``compileall``), as ``pip install .`` does at
install time: an editable install compiles nothing, and where ``PYTHONDONTWRITEBYTECODE`` is
set (this project's CI machines set it) every new process would recompile spamkit's sources,
20-40 ms of each one-shot run that no installed copy pays.

    python scripts/bench_pipe.py [--corpus ../shared/corpora/trec07p-dev/trec07p-dev.tar.gz] [--runs 30]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from spamkit.corpus import Corpus
from spamkit import BEST, build_filter
from spamkit.decide.decision import CostMatrix
from spamkit.jobs.learn import learn_messages

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bogofilter import ensure_bogofilter, serving, trained_wordlist
from _measure import compile_package, installed_copy, run_clients
from bench_bogofilter import DEFAULT_CORPUS


#: the standard library modules one-shot pipe mode imports beyond the interpreter's own (the
#: rows "where the time goes" of the first table)
STDLIB_IMPORTS = "import re, json, hashlib, array, math, zlib, bisect, signal, quopri, binascii"
#: everything it imports (the compiled loops among them), nothing read or scored
PIPE_IMPORTS = ("import spamkit.__main__, spamkit.mail.lean, spamkit.mail.tags, spamkit.text, "
                "spamkit.common.compiled as c; c.speedups(); c.chisquare()")


def timed(cmd, data: bytes, env: dict | None = None) -> float:
    started = time.perf_counter()
    subprocess.run(cmd, input=data, capture_output=True, env={**os.environ, **env} if env else None)
    return time.perf_counter() - started


def twenty_kb(messages, n: int) -> list[bytes]:
    """``n`` raw messages of 15-25 KB (the issue's "20 KB message"), cycled if there are fewer."""
    sized = [m.raw for m in messages if 15_000 <= len(m.raw) <= 25_000] or [m.raw for m in messages]
    return [sized[i % len(sized)] for i in range(n)]


def round_robin(commands, messages) -> list:
    """``[(name, times)]``: each message through every command in turn (``(name, cmd, env)``;
    the names distinct)."""
    times = {name: [] for name, _, _ in commands}
    assert len(times) == len(commands), "two commands of a table share a name"
    for raw in messages:
        for name, cmd, env in commands:
            times[name].append(timed(cmd, raw, env))
    return list(times.items())


def concurrent_rate(cmd, messages, clients: int, per_client: int) -> float:
    """Messages per second with ``clients`` threads each running ``cmd`` once per message."""
    return clients * per_client / run_clients(cmd, messages, clients, per_client)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--train", type=int, default=2000, help="Messages to train both filters on.")
    parser.add_argument("--runs", type=int, default=30, help="Messages piped through each filter.")
    args = parser.parse_args()
    compile_package()                                                  # as an installed copy has it
    with Corpus(args.corpus) as corpus:
        msgs = list(corpus)
    train, test = msgs[:args.train], msgs[args.train:args.train + args.runs]
    startup = []
    with tempfile.TemporaryDirectory() as tmp:
        model = Path(tmp) / "best.spamkit"
        best = build_filter(**BEST).fit(train)
        best.save(model)
        print(f"filter file: {model.stat().st_size / 1e6:.1f} MB (best filter, {len(train)} messages)")
        # the same filter after spamkit learn --all-mail on the next 300 messages: a file with the
        # learned messages' keys and the judged ones (the lean route reads and checks them too)
        learned = Path(tmp) / "learned.spamkit"
        best.set_costs(CostMatrix.default())               # as spamkit train writes it
        learn_messages(best, msgs[args.train + args.runs:args.train + args.runs + 300], judge=True)
        best.save(learned)
        spamkit = [sys.executable, "-m", "spamkit", "filter", str(model), "-"]
        console = installed_copy(tmp)
        exe = ensure_bogofilter(True)
        bogo = None
        if exe:
            wordlist = trained_wordlist(exe, tmp, train)
            bogo = [exe, "-C", "-d", str(wordlist), "-T"]
        sock, spamd_sock = Path(tmp) / "spamkit.sock", Path(tmp) / "spamd.sock"
        spamc = shutil.which("spamc")
        big = twenty_kb(msgs[args.train:], args.runs)
        with serving(model, sock, "--spamd-socket", str(spamd_sock)):
            while not spamd_sock.exists():
                time.sleep(0.05)
            client = [sys.executable, "-m", "spamkit.mail.serve.client", "--socket", str(sock)]
            commands = []
            if console:
                installed = [console, "filter", str(model), "-"]
                commands += [("spamkit filter MODEL - (pip install .)", installed, None),
                             ("  the same, SPAMKIT_LEAN=0 (full route)", installed, {"SPAMKIT_LEAN": "0"})]
                commands.append(("  after spamkit learn --all-mail (300)", [console, "filter", str(learned), "-"], None))
            commands += [("python -m spamkit filter MODEL - (checkout)", spamkit, None),
                         ("  the same, SPAMKIT_LEAN=0 (full route) ", spamkit, {"SPAMKIT_LEAN": "0"}),
                         ("spamkit-pipe -> spamkit serve", client, None)]
            spamc_cmd = [spamc, "-U", str(spamd_sock)]
            if spamc:
                commands.append(("spamc -> spamkit serve --spamd", spamc_cmd, None))
            # where one-shot pipe mode's time goes: the interpreter alone, with the standard
            # library modules pipe mode needs, with all it imports; the rest is reading the
            # filter file (every member's SHA-256 and values checked) and scoring the message
            python = [sys.executable, "-c"]
            commands += [("  python -c pass (the interpreter)", python + ["pass"], None),
                         ("  python + pipe mode's stdlib imports", python + [STDLIB_IMPORTS], None),
                         ("  python + all pipe mode's imports", python + [PIPE_IMPORTS], None)]
            if bogo:
                commands.append(("bogofilter -T (new process)", bogo, None))
            # round robin, message by message: a machine whose speed drifts during the run
            # (a shared 2-core VM does) slows every row alike, so the ratios hold
            rows = round_robin(commands, [m.raw for m in test])
            # the compiled clients in turns (a Python process between two spamc calls would leave
            # the server's caches cold), then spamkit-pipe alone
            big_commands = [c for c in commands if c[1][0] in (spamc, exe)]
            if spamc:
                big_commands.insert(1, ("spamc -c -> spamkit serve --spamd", spamc_cmd + ["-c"], None))
            big_rows = round_robin(big_commands, big)
            big_rows.insert(-1 if bogo else len(big_rows), ("spamkit-pipe -> spamkit serve",
                                                             [timed(client, m) for m in big]))
            throughput = bogo_rate = None
            if spamc:                              # in turns too: two rounds each, the mean rate
                rates = {"spamc": [], "bogo": []}
                for _ in range(2):
                    rates["spamc"].append(concurrent_rate(spamc_cmd, big, clients=8,
                                                          per_client=max(args.runs, 25) // 2 + 1))
                    if bogo:
                        rates["bogo"].append(concurrent_rate(bogo, big, clients=8,
                                                             per_client=max(args.runs, 25) // 2 + 1))
                throughput = statistics.mean(rates["spamc"])
                bogo_rate = statistics.mean(rates["bogo"]) if rates["bogo"] else None
        # start-up alone: what every command pays before it does anything
        for name, cmd in (("spamkit --help", ["--help"]), ("spamkit train --help", ["train", "--help"]),
                          ("spamkit info MODEL", ["info", str(model)])):
            startup.append((name, [timed([sys.executable, "-m", "spamkit", *cmd], b"") for _ in test]))
    print(f"{'command':<40} {'median ms':>10} {'p90 ms':>8}")
    for name, times in rows:
        times = sorted(times)
        p90 = times[int(0.9 * (len(times) - 1))]
        print(f"{name:<40} {1000 * statistics.median(times):>10.1f} {1000 * p90:>8.1f}")
    for name, times in startup:
        times = sorted(times)
        print(f"{name:<40} {1000 * statistics.median(times):>10.1f} {1000 * times[int(0.9 * (len(times) - 1))]:>8.1f}")
    if big_rows:
        print(f"\nmessages of 15-25 KB ({len(big)}, median {statistics.median(map(len, big)) / 1000:.1f} KB), "
              "a new client process per message:")
        print(f"{'command':<40} {'median ms':>10} {'p90 ms':>8}")
        for name, times in big_rows:
            times = sorted(times)
            print(f"{name:<40} {1000 * statistics.median(times):>10.1f} {1000 * times[int(0.9 * (len(times) - 1))]:>8.1f}")
    if throughput:
        print(f"\n8 concurrent clients, a new process per message: spamc -> spamkit serve --spamd "
              f"{throughput:.0f} messages/s" + (f"; bogofilter -T {bogo_rate:.0f} messages/s"
                                                 f" (ratio {throughput / bogo_rate:.2f})" if bogo_rate else ""))
    for table, label in ((rows, ""), (big_rows, ", 15-25 KB")):
        if table and table[-1][0].startswith("bogofilter"):
            reference = statistics.median(table[-1][1])
            for name, times in table[:-1]:
                print(f"ratio {name.strip()} / bogofilter{label} (median): {statistics.median(times) / reference:.1f}")


if __name__ == "__main__":
    main()
