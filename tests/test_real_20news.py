"""20 Newsgroups, read straight from its archive (``ARCHIVE!FOLDER``), any number of classes (slow; CI has it)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from spamkit.filterfile.config import build_filter
from spamkit.corpus import Corpus, iter_corpora
from spamkit.decide.curves import one_vs_rest

from conftest import shared_corpus

pytestmark = pytest.mark.slow
GROUPS = ["comp.graphics", "rec.autos", "sci.med", "talk.politics.mideast"]


def split(name: str) -> list:
    archive = shared_corpus("20news/20news-bydate.tar.gz")
    corpora = [Corpus(f"{archive}!20news-bydate-{name}/{g}", label=g, classes=None) for g in GROUPS]
    try:
        return list(iter_corpora(corpora))
    finally:
        for c in corpora:
            c.close()


def test_the_split_reads_as_a_class_folder_corpus_from_the_archive():
    archive = shared_corpus("20news/20news-bydate.tar.gz")
    with Corpus(f"{archive}!20news-bydate-train", classes=None) as corpus:
        labels = [m.label for m in corpus]
    assert corpus.format == "folders" and len(labels) == 11314 and len(set(labels)) == 20


@pytest.mark.parametrize("model", ["complement", "multinomial"])
def test_one_vs_rest_auc_on_four_groups_matches_scikit_learn(model):
    train, test = split("train"), split("test")
    f = build_filter(model=model, tokens="words").fit(train)
    proba = f.predict_proba(test)
    y = np.array([m.label for m in test])
    labels = [str(c) for c in f.classes_]
    ours = one_vs_rest(y, proba, labels)
    theirs = roc_auc_score(y, proba, multi_class="ovr", average=None, labels=labels)
    np.testing.assert_allclose([ours["per_class"][c]["auc"] for c in labels], theirs, rtol=0, atol=1e-9)
    assert ours["macro"]["auc"] == pytest.approx(roc_auc_score(y, proba, multi_class="ovr", labels=labels), abs=1e-9)
    accuracy = float(np.mean(np.asarray(labels)[proba.argmax(axis=1)] == y))
    assert accuracy > 0.9                                   # four well-separated groups


def test_complement_naive_bayes_with_its_defaults_reaches_a_linear_svm_on_the_whole_split():
    # scripts/reproduce_20news.py: 86.68% (complement NB's defaults, word tokens); the issue's
    # reference, a linear SVM on TF-IDF, 86.2% (85.32% with scikit-learn's defaults in that run)
    archive = shared_corpus("20news/20news-bydate.tar.gz")
    with Corpus(f"{archive}!20news-bydate-train", classes=None) as corpus:
        f = build_filter(model="complement", tokens="words").fit(corpus)
    with Corpus(f"{archive}!20news-bydate-test", classes=None) as corpus:
        test = list(corpus)
    pred = f.predict(test)
    accuracy = float(np.mean(pred == np.array([m.label for m in test])))
    print(f"\n20 Newsgroups bydate, complement NB defaults: accuracy {accuracy:.4f}")
    assert accuracy >= 0.86
