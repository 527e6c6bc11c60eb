#!/usr/bin/env python3
"""How many folds the byte 4-gram model's held-out scores need: accuracy and fitting time.

A stack's combiner weighs the 4-gram model (``spamkit.models.bytegrams``) by scores held out
from it: for each fold, a model of the other folds scores the fold's messages
(``ByteGramLogistic.held_out_scores``). With k folds the fold models learn (k - 1) passes of
the training messages in all: 4 with the stack's own 5, 1 with 2. Fewer folds make the fold
models learn from less mail (half of it with 2), so their scores are those of a model a little
less trained than the one the combiner will weigh.

For each corpus the default filter (``spamkit train``'s defaults) is trained on the first half
of its messages in corpus order (arrival order for TREC and Enron) with each fold count and
judges the second half. Printed per corpus and fold count: (1-AUC)% of the judged half, the
ham and the spam past the default's cuts (P(spam) >= the spam cut: ham misfiled; spam caught)
and the fit's seconds in this process (noisy: compare within one run). The default is
``spamkit.common.names.GRAM_FOLDS``.

    python scripts/gram_folds.py [--corpora ../shared/corpora] [--folds 5,3,2] [--only trec07p-dev,enron1]
"""

from __future__ import annotations

import argparse
import itertools
import time
from pathlib import Path

import numpy as np

from spamkit.corpus import Corpus
from spamkit.decide.curves import roc_auc
from spamkit.filterfile.config import BEST, build_filter

CORPORA = {"trec07p-dev": ("trec07p-dev/trec07p-dev.tar.gz", None), "csdmc2010": ("csdmc2010/csdmc2010.tar.gz", None),
           "trec06p-10k": ("trec06p/trec06p.tar.gz", 10000),
           **{f"enron{i}": (f"enron-spam/enron{i}.tar.gz", None) for i in range(1, 7)}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpora", default=str(Path(__file__).resolve().parents[2] / "shared" / "corpora"))
    parser.add_argument("--folds", default="5,3,2")
    parser.add_argument("--only", default="")
    args = parser.parse_args()
    folds = [int(k) for k in args.folds.split(",")]
    names = [n for n in CORPORA if not args.only or n in args.only.split(",")]
    print(f"{'corpus':12} {'folds':>5} {'(1-AUC)%':>9} {'ham >= cut':>10} {'spam >= cut':>11} {'fit s':>6}")
    for name in names:
        path, limit = CORPORA[name]
        with Corpus(Path(args.corpora) / path) as corpus:
            messages = list(itertools.islice(corpus, limit))
        half = len(messages) // 2
        train, judged = messages[:half], messages[half:]
        labels = np.array([m.label == "spam" for m in judged])
        for k in folds:
            f = build_filter(**{**BEST, "grams": {"folds": k}})
            started = time.perf_counter()
            f.fit(train)
            seconds = time.perf_counter() - started
            p = f.p_spam(judged)
            cut = f.spam_threshold()
            ham_out, spam_in = (p[~labels] >= cut).sum(), (p[labels] >= cut).sum()
            print(f"{name:12} {k:5d} {100 * (1 - roc_auc(labels, p)):9.4f} {ham_out:5d}/{(~labels).sum():<5d}"
                  f"{spam_in:6d}/{labels.sum():<5d} {seconds:6.2f}", flush=True)


if __name__ == "__main__":
    main()
