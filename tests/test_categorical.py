"""Categorical Naive Bayes: the lecture notes' play-tennis example by hand, scikit-learn's
CategoricalNB as the oracle, and missing values left out of the product."""

from __future__ import annotations

import numpy as np
import pytest

from spamkit.models import CategoricalNB

from test_naive_bayes import TENNIS  # Mitchell (1997), Table 3.2, the notes' play-tennis data

X = [row[:4] for row in TENNIS]
y = [row[4] for row in TENNIS]
QUERY = [("sunny", "cool", "high", "strong")]


def test_the_notes_play_tennis_numbers_without_smoothing():
    nb = CategoricalNB(alpha=0).fit(X, y)
    joint = np.exp(nb.joint_log_likelihood(QUERY))[0]
    no, yes = list(nb.classes_).index("no"), list(nb.classes_).index("yes")
    # the notes: 9/14 * 2/9 * 3/9 * 3/9 * 3/9 = 0.0053 and 5/14 * 3/5 * 1/5 * 4/5 * 3/5 = 0.0205
    assert joint[yes] == pytest.approx(9 / 14 * 2 / 9 * 3 / 9 * 3 / 9 * 3 / 9, rel=1e-12)
    assert round(joint[yes], 4) == 0.0053 and round(joint[no], 4) == 0.0206
    assert joint[no] == pytest.approx(5 / 14 * 3 / 5 * 1 / 5 * 4 / 5 * 3 / 5, rel=1e-12)
    assert nb.predict(QUERY).tolist() == ["no"]                      # "not a good day for tennis"
    assert nb.predict_proba(QUERY)[0, no] == pytest.approx(joint[no] / joint.sum(), rel=1e-12)


def test_laplace_smoothing_by_hand():
    nb = CategoricalNB(alpha=1).fit(X, y)
    joint = np.exp(nb.joint_log_likelihood(QUERY))[0]
    yes = list(nb.classes_).index("yes")
    # outlook and temperature have 3 values, humidity and wind 2: (n + 1) / (N_c + K_j)
    assert joint[yes] == pytest.approx(9 / 14 * 3 / 12 * 4 / 12 * 4 / 11 * 4 / 11, rel=1e-12)
    # overcast never goes with "no": 0 without smoothing, 1/8 with
    no = list(nb.classes_).index("no")
    outlook = list(nb.categories_[0]).index("overcast")
    assert np.exp(nb.feature_log_prob_[0][no, outlook]) == pytest.approx(1 / 8)
    assert np.exp(CategoricalNB(alpha=0).fit(X, y).feature_log_prob_[0][no, outlook]) == 0.0


def test_a_missing_feature_drops_out_of_the_product():
    nb = CategoricalNB(alpha=1).fit(X, y)
    with_missing = nb.joint_log_likelihood([("sunny", None, "high", "strong")])[0]
    without = CategoricalNB(alpha=1).fit([(a, c, d) for a, _, c, d in X], y).joint_log_likelihood(
        [("sunny", "high", "strong")])[0]
    np.testing.assert_allclose(with_missing, without, rtol=1e-12)
    # an unseen value counts as missing too
    np.testing.assert_allclose(nb.joint_log_likelihood([("sunny", "freezing", "high", "strong")])[0],
                               without, rtol=1e-12)


def test_missing_values_in_training_count_only_the_rows_that_have_them():
    rows = [("sunny", "hot"), ("sunny", None), ("rain", "mild"), ("rain", "mild")]
    nb = CategoricalNB(alpha=0).fit(rows, ["a", "a", "b", "b"])
    a = list(nb.classes_).index("a")
    temp_hot = list(nb.categories_[1]).index("hot")
    assert np.exp(nb.feature_log_prob_[1][a, temp_hot]) == 1.0       # 1 of the 1 class-a rows that say


@pytest.mark.parametrize("alpha", [1.0, 0.5])
def test_equals_scikit_learn(alpha):
    from sklearn.naive_bayes import CategoricalNB as Reference
    rng = np.random.default_rng(7)
    Xn = np.column_stack([rng.integers(0, k, 200) for k in (2, 3, 5, 4)])
    yn = rng.choice(["x", "y", "z"], 200)
    ours = CategoricalNB(alpha=alpha).fit(Xn, yn)
    ref = Reference(alpha=alpha).fit(Xn, yn)
    Q = np.column_stack([rng.integers(0, k, 50) for k in (2, 3, 5, 4)])
    np.testing.assert_allclose(ours.predict_log_proba(Q), ref.predict_log_proba(Q), rtol=1e-9, atol=1e-9)
    for mine, theirs in zip(ours.feature_log_prob_, ref.feature_log_prob_):
        np.testing.assert_allclose(mine, theirs, rtol=1e-12)


def test_numeric_codes_with_nan_as_missing():
    Xn = np.array([[0, 1], [0, np.nan], [1, 0], [1, 0]], dtype=float)
    nb = CategoricalNB(alpha=1).fit(Xn, ["a", "a", "b", "b"])
    np.testing.assert_allclose(nb.joint_log_likelihood([[0, np.nan]]), nb.joint_log_likelihood([[0, -1]]))
    only_first = CategoricalNB(alpha=1).fit(Xn[:, :1], ["a", "a", "b", "b"]).joint_log_likelihood([[0]])
    np.testing.assert_allclose(nb.joint_log_likelihood([[0, np.nan]]), only_first, rtol=1e-12)
