"""kNN on the real Enron-spam corpora (slow; CI has them)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.neighbors import KNeighborsClassifier

from spamkit.corpus import Corpus
from spamkit.features.vectorizer import Vectorizer
from spamkit.decide.curves import roc_auc
from spamkit.models import KNNClassifier
from spamkit import SpamFilter

from conftest import shared_corpus

pytestmark = pytest.mark.slow


def halves(n):
    with Corpus(shared_corpus(f"enron-spam/enron{n}.tar.gz")) as corpus:
        msgs = list(corpus)                      # arrival order
    return msgs[: len(msgs) // 2], msgs[len(msgs) // 2:]


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6])
def test_cosine_knn_tfidf_auc_on_enron(n):
    train, test = halves(n)
    f = SpamFilter(vectorizer=Vectorizer("tfidf"), model=KNNClassifier(k=15, weights="softmax", tau=0.1))
    f.fit(train)
    p = f.p_spam(test)
    y = np.array([m.label == "spam" for m in test])
    auc = roc_auc(y, p)
    print(f"enron{n}: cosine kNN (TF-IDF, k=15, softmax) AUC {auc:.4f} spam recall "
          f"{np.mean(p[y] > 0.5):.4f} ham recall {np.mean(p[~y] <= 0.5):.4f}")
    assert auc >= 0.95


def test_neighbours_match_sklearn_on_enron1():
    train, test = halves(1)
    f = SpamFilter(vectorizer=Vectorizer("tfidf"), model=KNNClassifier(k=5))
    f.fit(train)
    X, Q = f.transform(train), f.transform(test[:800])
    y = np.array([m.label for m in train])
    ours = KNNClassifier(k=5).fit(X, y)
    theirs = KNeighborsClassifier(5, metric="cosine", algorithm="brute").fit(X, y)
    idx, sim = ours.kneighbors(Q, 6)
    dist, idx_b = theirs.kneighbors(Q, 6)
    # The similarities of the k nearest agree everywhere (Enron has duplicate messages, so the
    # indices can differ only inside groups of equal similarity) ...
    np.testing.assert_allclose(sim, 1 - dist, atol=1e-12)
    # ... and where the 5th and 6th neighbours are not tied, the 5 neighbours and the vote agree.
    clear = ~np.isclose(sim[:, 4], sim[:, 5], rtol=0, atol=1e-12)
    assert clear.mean() > 0.8
    np.testing.assert_array_equal(np.sort(idx[clear, :5], axis=1), np.sort(idx_b[clear, :5], axis=1))
    np.testing.assert_allclose(ours.predict_proba(Q)[clear], theirs.predict_proba(Q)[clear], atol=1e-12)
