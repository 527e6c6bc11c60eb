#!/usr/bin/env python3
"""The standard 20 Newsgroups experiment: train on 20news-bydate-train, test on 20news-bydate-test.

Both splits are read straight from the archive (``ARCHIVE!20news-bydate-train``). spamkit's
multinomial, complement and Bernoulli Naive Bayes and kNN (word tokens; first each model with
its own defaults, then the textbook settings) run next to scikit-learn's MultinomialNB,
ComplementNB, BernoulliNB and cosine KNeighborsClassifier on the same posts (raw text,
headers included, through CountVectorizer / TfidfVectorizer), in one run; the best
configuration found runs next to scikit-learn's LinearSVC on TF-IDF, the issue's reference.
Prints accuracy and macro-F1 of each, and spamkit minus scikit-learn in points.

    python scripts/reproduce_20news.py [--corpora ../shared/corpora]

Published orders of magnitude (Rennie et al. 2003, Table 4; their preprocessing differs):
multinomial NB 84.8%, complement/weight-normalised NB 86.1% (TWCNB) on 20 Newsgroups.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer
from sklearn.metrics import accuracy_score, f1_score
from sklearn.naive_bayes import BernoulliNB, ComplementNB, MultinomialNB
from sklearn.neighbors import KNeighborsClassifier
from sklearn.svm import LinearSVC

from spamkit.filterfile.config import build_filter
from spamkit.corpus import Corpus

#: (name, spamkit options, scikit-learn estimator, scikit-learn vectorizer): first each model as
#: ``spamkit train --model X`` gives it (its defaults: spamkit.filterfile.config.MODEL_DEFAULTS, chosen on every
#: corpus by scripts/model_defaults.py) next to scikit-learn's same model as near as it gets, then
#: the textbook settings next to scikit-learn's defaults, then the best configuration found.
RUNS = [
    ("multinomial NB, default (a 0.01)", dict(model="multinomial"), lambda: MultinomialNB(alpha=0.01), "count"),
    ("complement NB, default (a 0.1)", dict(model="complement"), lambda: ComplementNB(alpha=0.1), "logtf"),
    ("Bernoulli NB, default (a 0.1)", dict(model="bernoulli"), lambda: BernoulliNB(alpha=0.1), "binary2"),
    ("kNN (TF-IDF, cosine, k 15)", dict(model="knn"), lambda: KNeighborsClassifier(15, metric="cosine",
                                                                                   algorithm="brute"), "tfidf"),
    ("multinomial NB, a 1", dict(model="multinomial", alpha=1.0), lambda: MultinomialNB(alpha=1.0), "count"),
    ("multinomial NB, a 1, min_df 2", dict(model="multinomial", alpha=1.0, min_df=2),
     lambda: MultinomialNB(alpha=1.0), "count2"),
    ("complement NB, a 1, WCNB counts", dict(model="complement", alpha=1.0, tf_transform=False, length_norm=False,
                                             weight_norm=True), lambda: ComplementNB(alpha=1.0, norm=True), "count"),
    ("Bernoulli NB, a 1, min_df 1", dict(model="bernoulli", alpha=1.0, min_df=1), lambda: BernoulliNB(alpha=1.0),
     "binary"),
    ("best: complement NB + bigrams", dict(model="complement", ngrams=2), lambda: LinearSVC(), "tfidf"),
]
#: how each scikit-learn row sees the posts (its vectorizers' defaults unless said): "logtf" is
#: Rennie et al.'s transform as near as scikit-learn gets (1 + log TF, unit length, no IDF); the
#: last row's reference is the linear SVM on TF-IDF the issue names (86.2% measured here)
VECTORIZERS = {"count": lambda: CountVectorizer(), "count2": lambda: CountVectorizer(min_df=2),
               "binary": lambda: CountVectorizer(binary=True), "binary2": lambda: CountVectorizer(binary=True, min_df=2),
               "tfidf": lambda: TfidfVectorizer(),
               "logtf": lambda: TfidfVectorizer(sublinear_tf=True, use_idf=False)}


def read(archive: Path, split: str):
    with Corpus(f"{archive}!20news-bydate-{split}", classes=None) as corpus:
        return list(corpus)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpora", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "corpora")
    args = parser.parse_args()
    archive = args.corpora / "20news" / "20news-bydate.tar.gz"
    train, test = read(archive, "train"), read(archive, "test")
    y_train = np.array([m.label for m in train])
    y_test = np.array([m.label for m in test])
    text_train = [m.raw.decode("latin-1") for m in train]
    text_test = [m.raw.decode("latin-1") for m in test]
    vectors = {k: make() for k, make in VECTORIZERS.items()}
    matrices = {k: (v.fit_transform(text_train), v.transform(text_test)) for k, v in vectors.items()}
    print(f"20 Newsgroups bydate: {len(train)} training posts, {len(test)} test posts, {len(set(y_train))} groups")
    print(f"{'model':<34} {'spamkit acc':>11} {'macro-F1':>9} {'s':>5} | {'sklearn acc':>11} {'macro-F1':>9} {'s':>5}"
          f" | {'diff acc':>8} {'diff F1':>8}")
    for name, options, estimator, vec in RUNS:
        started = time.perf_counter()
        f = build_filter(tokens="words", **options).fit(train)
        pred = f.predict(test)
        ours = (accuracy_score(y_test, pred), f1_score(y_test, pred, average="macro"), time.perf_counter() - started)
        started = time.perf_counter()
        Xtr, Xte = matrices[vec]
        pred = estimator().fit(Xtr, y_train).predict(Xte)
        theirs = (accuracy_score(y_test, pred), f1_score(y_test, pred, average="macro"), time.perf_counter() - started)
        print(f"{name:<34} {100 * ours[0]:>10.2f}% {100 * ours[1]:>8.2f}% {ours[2]:>5.1f} | "
              f"{100 * theirs[0]:>10.2f}% {100 * theirs[1]:>8.2f}% {theirs[2]:>5.1f} | "
              f"{100 * (ours[0] - theirs[0]):>+8.2f} {100 * (ours[1] - theirs[1]):>+8.2f}", flush=True)


if __name__ == "__main__":
    main()
