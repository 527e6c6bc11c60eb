"""Decision theory and the wider metrics: the lecture's numbers, brute force, and scikit-learn."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn import metrics as skm

from spamkit.decide.decision import CostMatrix, Verdict, bayes_threshold, unsure_band, verdicts
from spamkit.decide.thresholds import choose_thresholds, correct_prior, realised_cost
from spamkit.common.errors import ConfigError
from spamkit.decide.metrics import mcc, total_cost_ratio, trec_measures, weighted_accuracy
from spamkit.decide.curves import average_precision, pr_curve, roc_auc, roc_curve


def test_lecture_example():
    # c_FP = 100, c_FN = 10: t* = 100/110; P(spam) = 0.6 costs 40 as spam and 6 as ham: deliver.
    assert bayes_threshold(100, 10) == pytest.approx(100 / 110)
    cm = CostMatrix.parse("fp=100,fn=10")
    assert cm.expected_costs([[0.4, 0.6]])[0].tolist() == pytest.approx([6.0, 40.0])
    assert cm.decide([[0.4, 0.6]]).tolist() == ["ham"]
    assert cm.threshold() == pytest.approx(100 / 110)
    # with correct-decision costs: t* = (c_FP - c_TN) / ((c_FP - c_TN) + (c_FN - c_TP))
    assert bayes_threshold(100, 10, c_tp=2, c_tn=1) == pytest.approx(99 / (99 + 8))


@settings(max_examples=200, deadline=None)
@given(st.floats(0.01, 1000), st.floats(0.01, 1000), st.floats(0, 1))
def test_threshold_is_where_expected_costs_cross(c_fp, c_fn, p):
    cm = CostMatrix.binary(c_fp, c_fn)
    t = bayes_threshold(c_fp, c_fn)
    decision = cm.decide([[1 - p, p]])[0]
    if p > t + 1e-9:
        assert decision == "spam"
    elif p < t - 1e-9:
        assert decision == "ham"


def test_unsure_band_by_hand_and_by_matrix():
    # u = 2: ham below 2/10 = 0.2, spam above 1 - 2/100 = 0.98
    assert unsure_band(100, 10, 2) == pytest.approx((0.2, 0.98))
    cm = CostMatrix.binary(100, 10, c_unsure=2)
    for p, expected in ((0.1, "ham"), (0.5, "unsure"), (0.99, "spam")):
        assert cm.decide([[1 - p, p]])[0] == expected
    # an abstention dearer than c_FP c_FN / (c_FP + c_FN) is never chosen: the band is empty
    low, high = unsure_band(100, 10, 50)
    assert low == high == pytest.approx(100 / 110)
    assert [Verdict(v) for v in verdicts([0.1, 0.5, 0.99], 0.2, 0.98)] == [Verdict.HAM, Verdict.UNSURE, Verdict.SPAM]


def test_multiclass_costs_from_file(tmp_path):
    path = tmp_path / "costs.csv"
    path.write_text("decision,ham,spam,news\nham,0,10,2\nspam,100,0,50\nnews,20,5,0\n")
    cm = CostMatrix.from_file(path)
    # expected costs for p = (0.5, 0.3, 0.2): ham 3.4, spam 60, news 11.5
    assert cm.expected_costs([[0.5, 0.3, 0.2]])[0].tolist() == pytest.approx([3.4, 60.0, 11.5])
    aligned = cm.align(["news", "spam", "ham"])
    assert aligned.decide([[0.2, 0.3, 0.5]]).tolist() == ["ham"]
    with pytest.raises(ConfigError, match="the model has"):
        cm.align(["ham", "spam"])


def test_bad_costs():
    with pytest.raises(ConfigError, match="at least fp= and fn="):
        CostMatrix.parse("fp=3")
    with pytest.raises(ConfigError, match="not a number"):
        CostMatrix.parse("fp=x,fn=1")
    with pytest.raises(ConfigError, match="correct decision must be the cheapest"):
        CostMatrix([[5, 0], [0, 1]], ["ham", "spam"])
    with pytest.raises(ConfigError, match="always cheaper"):
        bayes_threshold(-1, 1)


def test_prior_correction_by_bayes_rule():
    # p = 0.8 at a 50% training spam rate, deployed where 20% is spam:
    # 0.8 * 0.2/0.5 = 0.32 ; 0.2 * 0.8/0.5 = 0.32  -> 0.5
    assert float(correct_prior(0.8, 0.5, 0.2)) == pytest.approx(0.5)
    p = np.linspace(0.01, 0.99, 25)
    back = correct_prior(correct_prior(p, 0.3, 0.7), 0.7, 0.3)
    np.testing.assert_allclose(back, p)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.sampled_from([0.05, 0.2, 0.4, 0.5, 0.6, 0.9, 0.99])),
                min_size=1, max_size=40), st.floats(0.5, 50), st.floats(0.5, 50))
def test_choose_thresholds_agrees_with_brute_force(pairs, c_fp, c_fn):
    y = np.array([a for a, _ in pairs])
    p = np.array([b for _, b in pairs])
    result = choose_thresholds(y, p, c_fp, c_fn)
    brute = min(realised_cost(y, p, t, c_fp, c_fn) for t in np.r_[-1.0, p, 2.0])
    assert result["best_cost"] == pytest.approx(brute)
    for t in result["optimal"]:
        assert realised_cost(y, p, t, c_fp, c_fn) == pytest.approx(brute)


# ------------------------------------------------------------------ metrics against scikit-learn


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.sampled_from([0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0])),
                min_size=2, max_size=50))
def test_curves_agree_with_sklearn(pairs):
    y = np.array([a for a, _ in pairs])
    s = np.array([b for _, b in pairs])
    if y.all() or not y.any():
        return
    fpr, tpr, thr = roc_curve(y, s)
    efpr, etpr, _ = skm.roc_curve(y, s, drop_intermediate=False)
    np.testing.assert_allclose(fpr, efpr)
    np.testing.assert_allclose(tpr, etpr)
    assert np.all(np.diff(fpr) >= 0) and np.all(np.diff(tpr) >= 0)          # monotone
    assert (fpr[0], tpr[0], fpr[-1], tpr[-1]) == (0, 0, 1, 1)                # (0,0) to (1,1)
    assert np.trapezoid(tpr, fpr) == pytest.approx(roc_auc(y, s))
    precision, recall, t = pr_curve(y, s)
    ep, er, et = skm.precision_recall_curve(y, s)
    np.testing.assert_allclose(precision, ep)
    np.testing.assert_allclose(recall, er)
    np.testing.assert_allclose(t, et)
    assert average_precision(y, s) == pytest.approx(skm.average_precision_score(y, s))


def test_mcc_weighted_accuracy_tcr():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 300)
    pred = np.where(rng.random(300) < 0.8, y, 1 - y)
    tp = int(np.sum((pred == 1) & (y == 1)))
    fp = int(np.sum((pred == 1) & (y == 0)))
    tn = int(np.sum((pred == 0) & (y == 0)))
    fn = int(np.sum((pred == 0) & (y == 1)))
    assert mcc(tp, fp, tn, fn) == pytest.approx(skm.matthews_corrcoef(y, pred))
    # lambda = 1: weighted accuracy is accuracy
    assert weighted_accuracy(tp, fp, tn, fn, 1) == pytest.approx(skm.accuracy_score(y, pred))
    # lambda = 999 by hand
    assert weighted_accuracy(tp, fp, tn, fn, 999) == pytest.approx((999 * tn + tp) / (999 * (tn + fp) + tp + fn))
    assert total_cost_ratio(tp, fp, tn, fn, 9) == pytest.approx((tp + fn) / (9 * fp + fn))


def test_trec_measures_by_hand():
    # 10 ham, 2 above the threshold: hm = 0.2; 5 spam, 1 at or below: sm = 0.2 -> lam = 0.2
    y = np.r_[np.zeros(10), np.ones(5)]
    s = np.r_[[0.9, 0.8], np.full(8, 0.1), [0.95, 0.9, 0.8, 0.7], [0.3]]
    m = trec_measures(y, s, 0.5)
    assert (m["hm_pct"], m["sm_pct"]) == pytest.approx((20.0, 20.0))
    assert m["lam_pct"] == pytest.approx(20.0)
    # unequal: hm = 0.1, sm = 0.4 -> lam = inverse logit of the mean logit
    s2 = np.r_[[0.9], np.full(9, 0.1), [0.95, 0.9, 0.8], [0.3, 0.2]]
    m2 = trec_measures(y, s2, 0.5)
    logit = lambda x: math.log(x / (1 - x))  # noqa: E731
    expected = 1 / (1 + math.exp(-(logit(0.1) + logit(0.4)) / 2))
    assert m2["lam_pct"] == pytest.approx(100 * expected)
    assert m2["roca_pct"] == pytest.approx(100 * (1 - skm.roc_auc_score(y, s2)))


# ------------------------------------------------------------------ the decision layer in filters and the CLI


def test_filter_saves_its_costs(tmp_path):
    from spamkit.corpus import Corpus
    from spamkit import SpamFilter, build_filter
    from conftest import SAMPLE

    f = build_filter()
    with Corpus(SAMPLE) as corpus:
        f.fit(corpus)
    f.set_costs(CostMatrix.parse("fp=100,fn=10,unsure=2"))
    assert f.decide(np.array([[0.4, 0.6], [0.9, 0.1], [0.01, 0.99]])).tolist() == ["unsure", "ham", "spam"]
    f.save(tmp_path / "c.spamkit")
    g = SpamFilter.load(tmp_path / "c.spamkit")
    assert g.costs.as_dict() == f.costs.as_dict()
    assert g.decide(np.array([[0.4, 0.6]])).tolist() == ["unsure"]


def test_cli_costs(tmp_path):
    import json

    from click.testing import CliRunner

    from spamkit.cli import cli
    from conftest import SAMPLE

    runner = CliRunner()
    model = tmp_path / "m.spamkit"
    assert runner.invoke(cli, ["train", str(SAMPLE), "-o", str(model), "--cost", "fp=100,fn=10"]).exit_code == 0
    result = runner.invoke(cli, ["evaluate", str(model), str(SAMPLE), "--json"])
    costs = json.loads(result.output)["costs"]
    assert costs["threshold"] == pytest.approx(100 / 110)
    assert sum(sum(row.values()) for row in costs["decisions"].values()) == 240
    result = runner.invoke(cli, ["classify", str(model), str(SAMPLE / "ham"), "--cost", "fp=1,fn=1,unsure=0.01"])
    assert result.exit_code == 0
    assert {line.split("\t")[1] for line in result.output.splitlines()} <= {"ham", "spam", "unsure"}
    result = runner.invoke(cli, ["classify", str(model), str(SAMPLE / "ham"), "--cost", "fp=oops"])
    assert result.exit_code == 2 and "is not a number" in result.output


def test_spam_rate_correction_in_the_filter(tmp_path):
    import numpy as np
    from click.testing import CliRunner

    from spamkit.cli import cli
    from spamkit.corpus import Corpus
    from spamkit.decide.thresholds import correct_prior
    from spamkit.common.errors import ConfigError
    from spamkit import build_filter
    from conftest import SAMPLE

    with Corpus(SAMPLE) as c:
        msgs = list(c)
    f = build_filter(model="multinomial", tokens="words").fit(msgs[::2])
    train_rate = f.model.class_count_[1] / f.model.class_count_.sum()
    before = f.p_spam(msgs[1::2])
    f.set_spam_rate(0.05)
    np.testing.assert_allclose(f.p_spam(msgs[1::2]), correct_prior(before, train_rate, 0.05), rtol=1e-9, atol=1e-12)
    # hand-worked: trained at 1/2, deployed at 1/5: odds x 1/4, so P = 0.6 becomes 0.375/1.375
    assert correct_prior(np.array([0.6]), 0.5, 0.2)[0] == pytest.approx(0.375 / 1.375)
    raw_fisher = build_filter(model="fisher").fit(msgs[::2])
    with pytest.raises(ConfigError, match="ignores class priors"):
        raw_fisher.set_spam_rate(0.3)
    model = tmp_path / "m.spamkit"
    assert CliRunner().invoke(cli, ["train", str(SAMPLE), "-o", str(model)]).exit_code == 0
    out = CliRunner().invoke(cli, ["classify", str(model), str(SAMPLE / "spam"), "--spam-rate", "0.01"])
    assert out.exit_code == 0, out.output


@settings(max_examples=300, deadline=None)
@given(st.floats(0, 1), st.sampled_from([(100, 10, 2), (100, 10, None), (1, 1, None), (7, 3, 0.5), (10, 100, 1)]))
def test_one_row_decides_as_the_matrix(p, costs):
    """A filter run decides message by message with :meth:`CostMatrix.decide_row` (plain Python);
    evaluation decides whole arrays with :meth:`CostMatrix.decide`: the same decision, also on
    the band's edges, where the expected costs are equal (ties go to the decision listed first)."""
    c_fp, c_fn, c_unsure = costs
    cm = CostMatrix.binary(c_fp, c_fn, c_unsure=c_unsure)
    edges = [p, *unsure_band(c_fp, c_fn, c_unsure if c_unsure is not None else 1e9)]
    for q in edges:
        row = [1 - q, q]
        assert cm.decide_row(row) == cm.decide([row])[0], (q, costs)
        by_hand = [row[0] * c[0] + row[1] * c[1] for c in cm.costs.tolist()]
        assert cm.expected_costs([row])[0].tolist() == by_hand     # each product and sum rounded once


def test_one_row_of_three_classes_by_hand():
    # E[cost | d] = sum_c p(c) cost[d, c]; p = (0.5, 0.3, 0.2):
    #   ham: 0.3*10 + 0.2*2 = 3.4; spam: 0.5*100 + 0.2*50 = 60; newsletter: 0.5*20 + 0.3*5 = 11.5
    cm = CostMatrix([[0, 10, 2], [100, 0, 50], [20, 5, 0]], ["ham", "spam", "newsletter"])
    assert cm.expected_costs([[0.5, 0.3, 0.2]])[0].tolist() == pytest.approx([3.4, 60.0, 11.5])
    assert cm.decide_row([0.5, 0.3, 0.2]) == cm.decide([[0.5, 0.3, 0.2]])[0] == "ham"
    # a tie (both 5.0) goes to the decision listed first, as np.argmin
    tie = CostMatrix([[0, 10], [10, 0]], ["ham", "spam"])
    assert tie.decide_row([0.5, 0.5]) == tie.decide([[0.5, 0.5]])[0] == "ham"
    with pytest.raises(ConfigError, match="columns"):
        cm.decide_row([0.5, 0.5])
