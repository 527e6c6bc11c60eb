#!/usr/bin/env python3
"""kNN search: spamkit against scikit-learn's brute-force cosine kNN, side by side in one run.

For each corpus (Enron1-6 and trec07p-dev from ../shared/corpora): TF-IDF features from
spamkit's pipeline, the first half of the corpus stored, the second half queried. Both
classifiers get the same CSR matrices:

* spamkit: ``KNNClassifier(metric="cosine", k=k, memory_limit=...)`` (blocked exact search,
  two threads);
* scikit-learn: ``KNeighborsClassifier(metric="cosine", algorithm="brute", n_neighbors=k)``
  with its defaults (chunked by ``working_memory``, 1 GiB).

Reported: queries/s of ``predict_proba`` (best of ``--repeat`` runs, 7 by default: one run takes well under a second), peak traced memory
during one ``predict_proba`` (tracemalloc, a separate untimed run), and whether the two
agree on the probabilities. Ratio = spamkit queries/s / scikit-learn queries/s.

    python scripts/bench_knn.py [--corpora ../shared/corpora] [--memory-limit 64M] [--only enron1]
"""

from __future__ import annotations

import argparse
import gc
import time
import tracemalloc
from pathlib import Path

import numpy as np
from sklearn.neighbors import KNeighborsClassifier

from spamkit.corpus import Corpus
from spamkit.features.vectorizer import Vectorizer
from spamkit.models import KNNClassifier
from spamkit.models.neighbours import parse_memory
from spamkit import SpamFilter


def features(path: Path):
    with Corpus(path) as corpus:
        msgs = list(corpus)
    half = len(msgs) // 2
    f = SpamFilter(vectorizer=Vectorizer("tfidf"))
    f.fit(msgs[:half])
    y = np.array([m.label for m in msgs[:half]])
    return f.transform(msgs[:half]), y, f.transform(msgs[half:])


def best_time(fn, repeat):
    times = []
    for _ in range(repeat):
        gc.collect()
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def peak(fn) -> float:
    gc.collect()
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / 2 ** 20
    finally:
        tracemalloc.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpora", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "corpora")
    parser.add_argument("--memory-limit", default="64M")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--only", nargs="*")
    args = parser.parse_args()
    budget = parse_memory(args.memory_limit) / 2 ** 20
    corpora = [(f"enron{i}", args.corpora / "enron-spam" / f"enron{i}.tar.gz") for i in range(1, 7)]
    corpora.append(("trec", args.corpora / "trec07p-dev" / "trec07p-dev.tar.gz"))
    print(f"memory budget for spamkit: {args.memory_limit}")
    print(f"{'corpus':<8} {'stored':>6} {'queries':>7} {'k':>3} | {'spamkit q/s':>11} {'peak MB':>8} | "
          f"{'sklearn q/s':>11} {'peak MB':>8} | {'ratio':>5} {'agree':>6}")
    for name, path in corpora:
        if args.only and name not in args.only:
            continue
        if not path.exists():
            print(f"{name:<8} missing: {path}")
            continue
        X, y, Q = features(path)
        for k in (1, 5, 15):
            ours = KNNClassifier(k=k, memory_limit=args.memory_limit).fit(X, y)
            theirs = KNeighborsClassifier(n_neighbors=k, metric="cosine", algorithm="brute").fit(X, y)
            t_ours = best_time(lambda ours=ours, Q=Q: ours.predict_proba(Q), args.repeat)
            t_theirs = best_time(lambda theirs=theirs, Q=Q: theirs.predict_proba(Q), args.repeat)
            m_ours = peak(lambda ours=ours, Q=Q: ours.predict_proba(Q))
            m_theirs = peak(lambda theirs=theirs, Q=Q: theirs.predict_proba(Q))
            agree = np.mean(np.all(np.isclose(ours.predict_proba(Q), theirs.predict_proba(Q)), axis=1))
            n = Q.shape[0]
            print(f"{name:<8} {X.shape[0]:>6} {n:>7} {k:>3} | {n / t_ours:>11.0f} {m_ours:>8.1f} | "
                  f"{n / t_theirs:>11.0f} {m_theirs:>8.1f} | {t_theirs / t_ours:>5.2f} {100 * agree:>5.1f}%")
    print(f"\npeak MB: tracemalloc peak during one predict_proba (spamkit's budget: {budget:.0f} MB). "
          "agree: share of queries whose probabilities are equal (they differ only where neighbours "
          "tie at the k-th place: spamkit takes the lower index, scikit-learn an arbitrary one).")


if __name__ == "__main__":
    main()
