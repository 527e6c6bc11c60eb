#!/usr/bin/env python3
"""Training from raw mail through the command line: seconds and peak memory of ``spamkit train``
next to bogofilter's bulk training, on the same messages, in one run.

spamkit: ``spamkit train CORPUS... -o FILTER`` in a new process (start-up, reading the
archives, parsing, tokenizing, counting, fitting the default filter and writing its file:
everything a user waits for), with ``--jobs 1`` pinned to one CPU (no thread of it borrows a
second core) and ``--jobs N``; its peak resident memory is
the process's own (or its largest worker's) ``ru_maxrss`` from ``os.wait4``. bogofilter: the
same messages written to files once (not timed), then ``bogofilter -s -B`` on the spam files
and ``-n -B`` on the ham files into a new word list (one process per 2,000 files), its time
the sum and its memory the largest. Two sets of corpora by default: trec07p-dev and Enron1
(10,172 messages: the goal of the issue "Raw mail at bogofilter's speed" is a peak of at most
150 MB for 10,000 messages), and the corpora that goal names for speed, trec07p-dev and
Enron1-6 (38,715 messages). Configurations run in turns, ``--rounds`` times, medians printed;
no threshold is asserted.

    python scripts/bench_train.py [--corpora A.tar.gz B.tar.gz ...] [--jobs N] [--rounds 3] [--also OPTIONS]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bogofilter import ensure_bogofilter  # standard library only
from _measure import compile_package, run_child

SHARED = Path(__file__).resolve().parents[2] / "shared" / "corpora"
TEN_THOUSAND = [SHARED / "trec07p-dev" / "trec07p-dev.tar.gz", SHARED / "enron-spam" / "enron1.tar.gz"]
ALL_RAW = [SHARED / "trec07p-dev" / "trec07p-dev.tar.gz", *(SHARED / "enron-spam" / f"enron{i}.tar.gz"
                                                          for i in range(1, 7))]


#: the CPU of the one-core runs (the first this process may use)
ONE_CPU = {min(os.sched_getaffinity(0))} if hasattr(os, "sched_getaffinity") else None


def write_messages(corpora, folder: Path | None) -> tuple[list[str], list[str]]:
    """The corpora's messages as files for bogofilter (none written without a ``folder``):
    (spam files, ham files)."""
    from spamkit.corpus import Corpus

    spam, ham = [], []
    for k, path in enumerate(corpora):
        with Corpus(path) as corpus:
            for i, m in enumerate(corpus):
                target = Path(folder or ".") / f"{k}-{i:06d}.eml"
                if folder is not None:
                    target.write_bytes(m.raw)
                (spam if m.label == "spam" else ham).append(str(target))
    return spam, ham


def bogofilter_train(exe: str, spam, ham, wordlist: Path) -> tuple[float, float]:
    """Seconds (summed) and peak MB (largest) of bulk-training a new word list."""
    wordlist.mkdir()
    seconds, peak = 0.0, 0.0
    for flag, files in (("-s", spam), ("-n", ham)):
        for i in range(0, len(files), 2000):                # argument lists of a sane length
            s, p = run_child([exe, "-C", "-d", str(wordlist), flag, "-B", *files[i:i + 2000]], ok=(0,))
            seconds, peak = seconds + s, max(peak, p)
    return seconds, peak


def bench(corpora, jobs: int, rounds: int, exe, also=()) -> None:
    """Train on ``corpora`` with one process, with ``jobs``, and with bogofilter, in turns (and
    with ``jobs`` and each of the option strings ``also``); print the medians and the ratios."""
    runs: dict[str, list] = {}
    with tempfile.TemporaryDirectory(prefix="bench-train-") as tmp:
        tmp = Path(tmp)
        spam, ham = write_messages(corpora, tmp if exe else None)
        n = len(spam) + len(ham)
        for r in range(rounds):
            for j in (1, jobs):
                out = tmp / f"filter-{r}-{j}.spamkit"
                cmd = [sys.executable, "-m", "spamkit", "train", *map(str, corpora), "-o", str(out), "--jobs", str(j)]
                # one process on one CPU: no thread of it (decompression, imports, the hash
                # index, the loops cut into parts) borrows a second core
                name = "spamkit train --jobs 1, one CPU" if j == 1 else f"spamkit train --jobs {j}"
                runs.setdefault(name, []).append(run_child(cmd, ok=(0,), cpus=ONE_CPU if j == 1 else None))
            for options in also:
                out = tmp / f"filter-{r}-also.spamkit"
                cmd = [sys.executable, "-m", "spamkit", "train", *map(str, corpora), "-o", str(out), "--jobs",
                       str(jobs), *options.split()]
                runs.setdefault(f"spamkit train --jobs {jobs} {options}", []).append(run_child(cmd, ok=(0,)))
            if exe:
                runs.setdefault("bogofilter -s/-n -B", []).append(bogofilter_train(exe, spam, ham, tmp / f"wl-{r}"))
    print(f"{' + '.join(p.name for p in corpora)}: {n} messages, {rounds} rounds in turns (medians)")
    print_medians(runs, n, "bogofilter -s/-n -B" if exe else None)


def print_medians(runs: dict, n: int, reference: str | None) -> None:
    """Each configuration's median seconds, messages/s and peak MB of ``runs`` (name -> list of
    (seconds, peak MB)), then each spamkit row's ratios to the ``reference`` row."""
    width = max(map(len, runs)) + 2
    print(f"{'':<{width}} {'seconds':>8} {'msg/s':>7} {'peak MB':>8}")
    rows = {name: (statistics.median(s for s, _ in v), statistics.median(p for _, p in v)) for name, v in runs.items()}
    for name, (seconds, peak) in rows.items():
        print(f"{name:<{width}} {seconds:>8.2f} {n / seconds:>7.0f} {peak:>8.0f}")
    if reference is not None:
        b_s, b_p = rows[reference]
        for name, (seconds, peak) in rows.items():
            if name.startswith("spamkit"):
                print(f"ratio {name} / bogofilter: speed {b_s / seconds:.2f}, memory {peak / b_p:.1f}x")
    print()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpora", type=Path, nargs="+", default=None,
                        help="One set of corpora (default: the two sets above).")
    parser.add_argument("--jobs", type=int, default=2, help="Worker processes of the second spamkit run.")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--also", action="append", default=[], metavar="OPTIONS",
                        help="Also train with --jobs N and these options (e.g. '--byte-grams'); repeatable.")
    parser.add_argument("--no-install", action="store_true", help="Do not apt-get install bogofilter.")
    args = parser.parse_args()
    exe = ensure_bogofilter(not args.no_install)
    compile_package()                              # as an installed copy has it
    for corpora in ([args.corpora] if args.corpora else [TEN_THOUSAND, ALL_RAW]):
        bench(corpora, args.jobs, args.rounds, exe, args.also)


if __name__ == "__main__":
    main()
