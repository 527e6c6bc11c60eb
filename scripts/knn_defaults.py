#!/usr/bin/env python3
"""Which kNN does ``spamkit train --model knn`` give? Candidate defaults on every mail corpus.

Each configuration is trained on the first half of each corpus in arrival order and ranks
the second half (ROC AUC, spam and ham recall at P(spam) > 0.5), on Enron1-6, trec07p-dev and
CSDMC2010 — the protocol of ``tests/test_real_knn.py``. Prints every configuration on every
corpus, the mean and the worst AUC; the default is the configuration with the best worst case.

    python scripts/knn_defaults.py [--corpora ../shared/corpora]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from spamkit.filterfile.config import build_filter
from spamkit.corpus import Corpus
from spamkit.decide.curves import roc_auc

CONFIGS = {
    "old default (mail tokens, TF, k=5, uniform)": dict(tokens="mail", representation="tf",
                                                        knn={"k": 5, "weights": "uniform"}),
    "mail tokens, TF-IDF, k=15, softmax": dict(tokens="mail", representation="tfidf",
                                              knn={"k": 15, "weights": "softmax", "tau": 0.1}),
    "words, TF-IDF, k=15, softmax": dict(tokens="words", representation="tfidf",
                                        knn={"k": 15, "weights": "softmax", "tau": 0.1}),
    "words, TF-IDF, k=5, softmax": dict(tokens="words", representation="tfidf",
                                       knn={"k": 5, "weights": "softmax", "tau": 0.1}),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpora", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "corpora")
    args = parser.parse_args()
    corpora = [args.corpora / f"enron-spam/enron{i}.tar.gz" for i in range(1, 7)]
    corpora += [args.corpora / "trec07p-dev/trec07p-dev.tar.gz", args.corpora / "csdmc2010/csdmc2010.tar.gz"]
    aucs = {name: [] for name in CONFIGS}
    print(f"{'corpus':<14} " + " | ".join(f"{n[:34]:>34}" for n in CONFIGS))
    for path in corpora:
        with Corpus(path) as corpus:
            msgs = list(corpus)
        train, test = msgs[:len(msgs) // 2], msgs[len(msgs) // 2:]
        y = np.array([m.label == "spam" for m in test])
        cells = []
        for name, options in CONFIGS.items():
            started = time.perf_counter()
            f = build_filter(model="knn", **options).fit(train)
            p = f.p_spam(test)
            auc = roc_auc(y, p)
            aucs[name].append(auc)
            cells.append(f"AUC {auc:.4f} s {np.mean(p[y] > 0.5):.3f} h {np.mean(p[~y] <= 0.5):.3f} "
                         f"{time.perf_counter() - started:3.0f}s")
        print(f"{path.name.split('.')[0]:<14} " + " | ".join(f"{c:>34}" for c in cells), flush=True)
    print(f"{'mean AUC':<14} " + " | ".join(f"{np.mean(a):>34.4f}" for a in aucs.values()))
    print(f"{'worst AUC':<14} " + " | ".join(f"{np.min(a):>34.4f}" for a in aucs.values()))
    best = max(aucs, key=lambda n: (np.min(aucs[n]), np.mean(aucs[n])))
    print(f"best worst case: {best}")


if __name__ == "__main__":
    main()
