#!/usr/bin/env python3
"""Training and classifying raw mail, messages per second: spamkit on one and on all cores next
to bogofilter's bulk modes, on the same messages in one run.

spamkit: the default filter, from the corpus archive (reading, parsing, tokenizing, counting,
fitting -- what ``spamkit train`` does), then ``evaluate``-style scoring of the same corpus,
with ``--jobs 1`` (one process) and ``--jobs N`` (worker processes parse and tokenize; the
results are identical, which this script checks). bogofilter 1.2.5: the messages written
to files once (not timed), then ``bogofilter -s -B`` on the spam and ``-n -B`` on the ham
(bulk training, one process), and ``bogofilter -B`` classifying every file (bulk
classification). The configurations run in turns, ``--rounds`` times (default 3), and the
median time of each is printed, so that a machine whose speed drifts during the run slows
every row alike. Ratios are printed; no threshold is asserted anywhere.

    python scripts/bench_throughput.py [--corpus ../shared/corpora/trec07p-dev/trec07p-dev.tar.gz]
                                       [--jobs N] [--rounds 3] [--no-install]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from spamkit.corpus import Corpus
from spamkit.jobs.engines import ProcessEngine, default_jobs
from spamkit.jobs.evaluate import evaluate_filter
from spamkit.jobs.train import train_filter
from spamkit import BEST, build_filter

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bogofilter import ensure_bogofilter

DEFAULT_CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpora" / "trec07p-dev" / "trec07p-dev.tar.gz"


def spamkit_run(corpus_path: Path, jobs: int):
    """(train seconds, classify seconds, messages, feature counts, scores) with ``jobs`` processes."""
    engine = ProcessEngine(jobs) if jobs > 1 else None
    try:
        f = build_filter(**BEST)
        with Corpus(corpus_path) as corpus:
            started = time.perf_counter()
            report = train_filter(f, [corpus], engine=engine)
            train_s = time.perf_counter() - started
        with Corpus(corpus_path) as corpus:
            started = time.perf_counter()
            result = evaluate_filter(f, [corpus], engine=engine)
            classify_s = time.perf_counter() - started
    finally:
        if engine is not None:
            engine.close()
    return train_s, classify_s, report.n_train, f.model.feature_count_.copy(), result["auc"]


def bogofilter_run(exe: str, corpus_path: Path):
    import subprocess
    with tempfile.TemporaryDirectory(prefix="bench-throughput-") as tmp:
        spam, ham = [], []
        with Corpus(corpus_path) as corpus:
            for i, m in enumerate(corpus):
                path = Path(tmp) / f"{i:06d}.eml"
                path.write_bytes(m.raw)
                (spam if m.label == "spam" else ham).append(str(path))
        wordlist = Path(tmp) / "wordlist"
        wordlist.mkdir()
        started = time.perf_counter()
        for flag, files in (("-s", spam), ("-n", ham)):
            for i in range(0, len(files), 2000):                # argument lists of a sane length
                subprocess.run([exe, "-C", "-d", str(wordlist), flag, "-B", *files[i:i + 2000]], check=True,
                               capture_output=True)
        train_s = time.perf_counter() - started
        started = time.perf_counter()
        files = spam + ham
        for i in range(0, len(files), 2000):
            subprocess.run([exe, "-C", "-d", str(wordlist), "-B", *files[i:i + 2000]], capture_output=True)
        classify_s = time.perf_counter() - started
    return train_s, classify_s, len(spam) + len(ham)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--jobs", type=int, default=default_jobs(), help="Worker processes of the second run.")
    parser.add_argument("--no-install", action="store_true", help="Do not apt-get install bogofilter.")
    parser.add_argument("--rounds", type=int, default=3, help="Rounds of all configurations; medians are printed.")
    args = parser.parse_args()
    exe = ensure_bogofilter(not args.no_install)
    # rounds of every configuration in turn, the median of each: a machine whose speed drifts
    # during the run (a shared 2-core VM does, by 10-40%) then slows every row alike
    runs: dict = {}
    same = True
    for _ in range(args.rounds):
        one = spamkit_run(args.corpus, 1)
        runs.setdefault("spamkit, 1 process", []).append(one[:3])
        if args.jobs > 1:
            many = spamkit_run(args.corpus, args.jobs)
            same = same and np.array_equal(one[3], many[3]) and one[4] == many[4]
            runs.setdefault(f"spamkit, --jobs {args.jobs}", []).append(many[:3])
        if exe:
            runs.setdefault("bogofilter -B (bulk, 1 process)", []).append(bogofilter_run(exe, args.corpus))
    if args.jobs > 1:
        print(f"--jobs {args.jobs} gives the same counts and AUC as one process: {same}")
    rows = [(name, times[0][2], statistics.median(t[0] for t in times), statistics.median(t[1] for t in times))
            for name, times in runs.items()]
    print(f"{args.corpus.name}: {rows[0][1]} messages")
    print(f"{'':<34} {'train msg/s':>12} {'classify msg/s':>15}")
    for name, n, train_s, classify_s in rows:
        print(f"{name:<34} {n / train_s:>12.0f} {n / classify_s:>15.0f}")
    if exe:
        b = rows[-1]
        for name, n, train_s, classify_s in rows[:-1]:
            print(f"ratio {name} / bogofilter: train {(n / train_s) / (b[1] / b[2]):.2f}, "
                  f"classify {(n / classify_s) / (b[1] / b[3]):.2f}")


if __name__ == "__main__":
    main()
