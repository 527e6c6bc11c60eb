#!/usr/bin/env python3
"""Do character 4-grams help the stack's logistic component? Metsis et al.'s protocol on Enron1-6.

The TREC 2007 best runs learned a logistic regression on byte 4-grams of each message's first
kilobytes (G. V. Cormack, "University of Waterloo Participation in the TREC 2007 Spam Track").
spamkit's best filter stacks Robinson/Fisher, multinomial NB and an online logistic regression
over mail tokens. Here the logistic component alone also sees the distinct character 4-grams of
the first 3,000 characters of the body (``Analyzer.char_grams``), while Fisher and NB keep the
tokens; each variant runs the protocol of ``reproduce_metsis.py`` (batches of 100 in arrival
order, each classified by a filter trained on all earlier ones) and prints spam and ham recall
at P(spam) = 0.5, the best balanced recall any threshold reaches (max over t of min(spam recall,
ham recall)), and the AUC, averaged over Enron1-6.

    python scripts/ngram_logistic.py [--corpora ../shared/corpora] [--rates 0.2,0.05,0.02]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from spamkit.corpus import Corpus
from spamkit.features.vectorizer import Vectorizer
from spamkit.parse.message import parse_message
from spamkit.decide.curves import roc_auc
from spamkit.models import FisherNBStack
from spamkit.models.robinson import presence
from spamkit.models.stack import BEST_STACK
from spamkit.text import Analyzer


class TokensForCounts(FisherNBStack):
    """The stack with Fisher and NB on the first ``n_tokens`` columns only; the logistic
    component sees every column (tokens, then the n-gram columns)."""

    n_tokens: int = 0

    def component_scores(self, class_count, feature_count, X, totals=None, logistic=None):
        k = self.n_tokens
        tokens = X[:, :k]
        columns = [self._log_odds(self._fisher(class_count, feature_count[:, :k]), tokens),
                   self._nb_log_odds(class_count, feature_count[:, :k], tokens)]
        if logistic is not None:
            columns.append(logistic.decision_function(X))
        if self.length_aware:                     # the combiner's length: the tokens, not the n-grams
            columns.append(np.diff(presence(tokens).indptr))
        return np.column_stack(columns)


def best_balanced(y, s) -> float:
    """max over thresholds t of min(spam recall, ham recall) at "spam if s > t"."""
    order = np.sort(np.unique(s))
    cuts = order[:: max(1, len(order) // 2000)]
    return max(min(np.mean(s[y] > t), np.mean(s[~y] <= t)) for t in np.concatenate([[-np.inf], cuts]))


def run(matrices, y, rate: float, grams: bool, batch: int) -> np.ndarray:
    X_tokens, X_grams = matrices
    X = sp.hstack([X_tokens, X_grams]).tocsr() if grams else X_tokens
    scores = np.empty(len(y) - batch)
    for start in range(batch, len(y), batch):
        stop = min(start + batch, len(y))
        model = TokensForCounts(**{**BEST_STACK, "logistic": rate})
        model.n_tokens = X_tokens.shape[1]
        lp = model.fit(X[:start], y[:start]).predict_log_proba(X[start:stop])
        scores[start - batch:stop - batch] = lp[:, 1] - lp[:, 0]
    return scores


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpora", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "corpora")
    parser.add_argument("--rates", default="0.2,0.05,0.02")
    parser.add_argument("--batch", type=int, default=100)
    args = parser.parse_args()
    variants = [("tokens (the best filter)", float(BEST_STACK["logistic"]), False)]
    variants += [(f"tokens + 4-grams, rate {r}", float(r), True) for r in args.rates.split(",")]
    tokens, grams = Analyzer.mail(), Analyzer(char_ngrams=4)
    table = {name: [] for name, _, _ in variants}
    started = time.perf_counter()
    for i in range(1, 7):
        with Corpus(args.corpora / f"enron-spam/enron{i}.tar.gz") as corpus:
            msgs = list(corpus)
        y = np.array([m.label == "spam" for m in msgs])
        docs = [parse_message(m.raw, m.kind) for m in msgs]
        matrices = (Vectorizer("binary").fit_transform(tokens(d) for d in docs),
                    Vectorizer("binary").fit_transform(grams.char_grams(d.body) for d in docs))
        truth = y[args.batch:]
        for name, rate, with_grams in variants:
            s = run(matrices, y, rate, with_grams, args.batch)
            table[name].append((np.mean(s[truth] > 0), np.mean(s[~truth] <= 0), best_balanced(truth, s),
                                roc_auc(truth, s)))
        print(f"enron{i} done ({time.perf_counter() - started:.0f} s)", flush=True)
    print(f"\n{'variant':<32} {'spam rec':>9} {'ham rec':>8} {'balanced':>9} {'AUC':>7}   (averages over Enron1-6)")
    for name, rows in table.items():
        m = np.mean(rows, axis=0)
        print(f"{name:<32} {100 * m[0]:>8.2f}% {100 * m[1]:>7.2f}% {100 * m[2]:>8.2f}% {m[3]:>7.4f}")
    print(f"\n({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
