"""Metrics: hand-worked values and scikit-learn.metrics as oracle."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn import metrics as skm

from spamkit.common.errors import DegenerateDataWarning
from spamkit.decide.metrics import binary_report, confusion_matrix, multiclass_report
from spamkit.decide.curves import average_ranks, roc_auc


def test_auc_by_hand_with_a_tie():
    # spam scores 0.8, 0.4; ham scores 0.4, 0.1: pairs win, win, tie (1/2), win -> 3.5 / 4
    assert roc_auc([1, 1, 0, 0], [0.8, 0.4, 0.4, 0.1]) == 0.875


def test_auc_degenerate():
    with pytest.warns(DegenerateDataWarning):
        assert np.isnan(roc_auc([1, 1], [0.2, 0.3]))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0])),
                min_size=2, max_size=60))
def test_auc_agrees_with_sklearn_including_ties(pairs):
    y = np.array([p[0] for p in pairs])
    s = np.array([p[1] for p in pairs])
    if y.all() or not y.any():
        return
    assert roc_auc(y, s) == pytest.approx(skm.roc_auc_score(y, s), abs=1e-12)
    # no ties in the reversed ranking: auc(-s) == 1 - auc(s)
    assert roc_auc(y, -s) == pytest.approx(1 - roc_auc(y, s), abs=1e-12)


def test_binary_report_by_hand_and_oracle():
    y = ["spam", "spam", "spam", "ham", "ham"]
    pred = ["spam", "ham", "spam", "spam", "ham"]
    p = [0.9, 0.3, 0.8, 0.6, 0.2]
    r = binary_report(y, pred, p)
    assert (r["tp"], r["fn"], r["fp"], r["tn"]) == (2, 1, 1, 1)
    assert r["spam_recall"] == pytest.approx(2 / 3) and r["ham_recall"] == pytest.approx(1 / 2)
    assert r["spam_precision"] == pytest.approx(2 / 3)
    assert r["accuracy"] == pytest.approx(skm.accuracy_score(y, pred))
    assert r["f1"] == pytest.approx(skm.f1_score(y, pred, pos_label="spam"))
    assert r["auc"] == pytest.approx(skm.roc_auc_score([t == "spam" for t in y], p))


def test_confusion_and_multiclass_against_sklearn():
    rng = np.random.default_rng(1)
    labels = ["a", "b", "c"]
    y = rng.choice(labels, 200)
    pred = rng.choice(labels, 200)
    np.testing.assert_array_equal(confusion_matrix(y, pred, labels), skm.confusion_matrix(y, pred, labels=labels))
    r = multiclass_report(y, pred, labels)
    assert r["macro_f1"] == pytest.approx(skm.f1_score(y, pred, average="macro"))
    for label in labels:
        assert r["per_class"][label]["recall"] == pytest.approx(
            skm.recall_score(y, pred, labels=[label], average="macro"))


def test_spam_caught_at_a_ham_rate_by_hand_and_against_sklearn():
    from sklearn.metrics import roc_curve as sk_roc
    from spamkit.decide.metrics import spam_caught_at, trec_measures
    # 2,000 ham scored 0..1999; 10 spam: 6 above every ham, 2 just below the top 2 ham, 2 low.
    # At 0.1% (2 ham may be misfiled) the threshold can go down past the top 2 ham: 8 of 10 spam.
    ham = np.arange(2000.0)
    spam = np.array([5000, 5001, 5002, 5003, 5004, 5005, 1997.5, 1997.2, 3, 4.5])
    y = np.r_[np.zeros(2000), np.ones(10)]
    s = np.r_[ham, spam]
    assert spam_caught_at(y, s, 0.001) == pytest.approx(0.8)
    assert spam_caught_at(y, s, 0.0005) == pytest.approx(0.6)      # one ham may go: not enough for 1997.x
    assert spam_caught_at(y, s, 0.0001) is None                     # 2,000 ham < 10,000: not measurable
    assert trec_measures(y, s, 0.5)["spam_caught_pct_at_hm"] == {"1/1000": pytest.approx(80.0), "1/10000": None}
    rng = np.random.default_rng(0)
    for _ in range(20):
        y = rng.random(3000) < 0.3
        s = np.round(rng.normal(y * 2.0, 1.0), 1)                     # many ties
        fpr, tpr, _ = sk_roc(y, s, drop_intermediate=False)
        for rate in (0.01, 0.001):
            assert spam_caught_at(y, s, rate) == pytest.approx(tpr[fpr <= rate].max())


def test_learning_curve_windows_against_sklearn():
    from sklearn.metrics import roc_auc_score
    from spamkit.decide.metrics import learning_curve
    rng = np.random.default_rng(1)
    y = rng.random(2000) < 0.4
    s = rng.normal(y * np.linspace(0, 3, 2000), 1.0)          # a filter that learns as it goes
    curve = learning_curve(y, s, window=400, points=8)
    assert [p["end"] for p in curve] == [250 * k for k in range(1, 9)]
    for p in curve:
        wy, ws = y[p["start"]:p["end"]], s[p["start"]:p["end"]]
        assert p["start"] == max(0, p["end"] - 400) and p["spam"] == wy.sum() and p["ham"] == (~wy).sum()
        assert p["roca_pct"] == pytest.approx(100 * (1 - roc_auc_score(wy, ws)))
    assert curve[-1]["roca_pct"] < curve[0]["roca_pct"]       # it learned
    one_class = learning_curve([0] * 300 + [1] * 300, np.arange(600.0), window=200, points=3)
    assert one_class[0]["roca_pct"] is None and one_class[-1]["roca_pct"] is None


def test_one_vs_rest_equals_scikit_learn():
    from sklearn.metrics import average_precision_score, roc_auc_score
    from sklearn.preprocessing import label_binarize
    from spamkit.decide.curves import one_vs_rest
    rng = np.random.default_rng(3)
    labels = ["a", "b", "c", "d"]
    y = rng.choice(labels, size=300, p=[0.4, 0.3, 0.2, 0.1])
    raw = rng.random((300, 4)) + 0.8 * (y[:, None] == np.array(labels)[None, :])
    proba = np.round(raw / raw.sum(axis=1, keepdims=True), 2)          # rounding makes ties
    r = one_vs_rest(y, proba, labels)
    Y = label_binarize(y, classes=labels)
    for k, label in enumerate(labels):
        assert r["per_class"][label]["auc"] == pytest.approx(roc_auc_score(Y[:, k], proba[:, k]), abs=1e-12)
        assert r["per_class"][label]["average_precision"] == pytest.approx(
            average_precision_score(Y[:, k], proba[:, k]), abs=1e-12)
    for average in ("macro", "weighted", "micro"):
        assert r[average]["auc"] == pytest.approx(roc_auc_score(Y, proba, average=average), abs=1e-12)
        assert r[average]["average_precision"] == pytest.approx(
            average_precision_score(Y, proba, average=average), abs=1e-12)


def test_one_vs_rest_with_an_absent_class():
    from spamkit.decide.curves import one_vs_rest
    r = one_vs_rest(["a", "b", "a"], [[.7, .2, .1], [.2, .7, .1], [.6, .3, .1]], ["a", "b", "c"])
    assert np.isnan(r["per_class"]["c"]["auc"]) and r["per_class"]["c"]["support"] == 0
    assert r["macro"]["auc"] == 1.0                      # over the classes present


def test_jaccard_score_matches_scikit_learn():
    from sklearn.metrics import jaccard_score

    from spamkit.decide.metrics import binary_report, confusion_matrix, per_class_scores
    rng = np.random.default_rng(7)
    labels = ["ham", "spam", "news"]
    y_true = rng.choice(labels, 300)
    y_pred = np.where(rng.random(300) < 0.7, y_true, rng.choice(labels, 300))
    ours = per_class_scores(confusion_matrix(y_true, y_pred, labels), labels)
    theirs = jaccard_score(y_true, y_pred, labels=labels, average=None)
    np.testing.assert_allclose([ours[c]["jaccard"] for c in labels], theirs, rtol=1e-12)
    two = np.where(y_true == "spam", "spam", "ham"), np.where(y_pred == "spam", "spam", "ham")
    report = binary_report(*two, p_spam=(two[1] == "spam").astype(float))
    assert report["jaccard"] == pytest.approx(jaccard_score(*two, pos_label="spam"), rel=1e-12)
    assert report["jaccard"] == pytest.approx(report["tp"] / (report["tp"] + report["fp"] + report["fn"]))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([0.0, 0.1, 0.5, 0.5000000000000001, 1.0, -3.0, 1e300]) | st.floats(-1e6, 1e6),
                min_size=0, max_size=60))
def test_average_ranks_equal_scipys_rankdata(values):
    from scipy.stats import rankdata

    np.testing.assert_array_equal(average_ranks(values), rankdata(values) if values else np.zeros(0))
