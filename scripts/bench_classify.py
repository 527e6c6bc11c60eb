#!/usr/bin/env python3
"""Classifying raw mail through the command line: seconds and peak memory of ``spamkit evaluate``
next to bogofilter's bulk classification, on the same messages, in one run.

A filter is trained once on the corpora (``spamkit train``; bogofilter ``-s -B``/``-n -B`` into a
word list; neither timed). Then, in turns, ``--rounds`` times: ``spamkit evaluate FILTER
CORPUS...`` in a new process (start-up, loading the filter, reading the archives, parsing,
tokenizing, scoring every message and printing the measures: everything a user waits for),
with ``--jobs 1`` pinned to one CPU and with ``--jobs N``; and ``bogofilter -B`` over the same
messages written to files beforehand (one process per 2,000 files, their times summed, the
largest peak). Medians printed, with the ratios; no threshold is asserted.

    python scripts/bench_classify.py [--corpora A.tar.gz ...] [--jobs N] [--rounds 5] [--no-install]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bogofilter import ensure_bogofilter  # standard library only
from _measure import compile_package, run_child
from bench_train import ONE_CPU, SHARED, bogofilter_train, print_medians, write_messages

DEFAULT = [SHARED / "trec07p-dev" / "trec07p-dev.tar.gz"]


def bogofilter_classify(exe: str, files, wordlist: Path) -> tuple[float, float]:
    """Seconds (summed) and peak MB (largest) of classifying ``files`` in bulk."""
    seconds, peak = 0.0, 0.0
    for i in range(0, len(files), 2000):                      # argument lists of a sane length
        s, p = run_child([exe, "-C", "-d", str(wordlist), "-B", *files[i:i + 2000]], ok=(0, 1, 2))
        seconds, peak = seconds + s, max(peak, p)
    return seconds, peak


def bench(corpora, jobs: int, rounds: int, exe) -> None:
    runs: dict[str, list] = {}
    with tempfile.TemporaryDirectory(prefix="bench-classify-") as tmp:
        tmp = Path(tmp)
        spam, ham = write_messages(corpora, tmp if exe else None)
        n = len(spam) + len(ham)
        model = tmp / "filter.spamkit"
        run_child([sys.executable, "-m", "spamkit", "train", *map(str, corpora), "-o", str(model)], ok=(0,))
        if exe:
            bogofilter_train(exe, spam, ham, tmp / "wordlist")
        for _ in range(rounds):
            for j in (1, jobs):
                cmd = [sys.executable, "-m", "spamkit", "evaluate", str(model), *map(str, corpora), "--jobs", str(j)]
                name = "spamkit evaluate --jobs 1, one CPU" if j == 1 else f"spamkit evaluate --jobs {j}"
                runs.setdefault(name, []).append(run_child(cmd, ok=(0,), cpus=ONE_CPU if j == 1 else None))
            if exe:
                runs.setdefault("bogofilter -B", []).append(bogofilter_classify(exe, spam + ham, tmp / "wordlist"))
    print(f"{' + '.join(p.name for p in corpora)}: {n} messages classified, {rounds} rounds in turns (medians)")
    print_medians(runs, n, "bogofilter -B" if exe else None)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpora", type=Path, nargs="+", default=DEFAULT)
    parser.add_argument("--jobs", type=int, default=2, help="Worker processes of the second spamkit run.")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--no-install", action="store_true", help="Do not apt-get install bogofilter.")
    args = parser.parse_args()
    exe = ensure_bogofilter(not args.no_install)
    compile_package()                              # as an installed copy has it
    bench(args.corpora, args.jobs, args.rounds, exe)


if __name__ == "__main__":
    main()
