"""Robinson/Fisher combining: hand-worked values, a scalar oracle on scipy's chi-square, log-space ranking
(the chi-square tails themselves: tests/test_scoring.py)."""

import math

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import chi2

from spamkit.common.errors import ConfigError
from spamkit.models import RobinsonFisher
from spamkit.scoring.arrays import fisher_log_odds


def test_token_probability_hand_worked():
    # A token in 3 of 10 spams and 1 of 20 hams: b = 0.3, g = 0.05, p = 0.3 / 0.35 = 6/7,
    # n = 4; with s = 0.45, x = 0.5: f = (0.225 + 4 * 6/7) / 4.45 = 0.821027...
    X = np.zeros((30, 2))
    X[:3, 0] = 1                     # spams 0..9, token 0 in three of them
    X[10, 0] = 1                     # hams 10..29, token 0 in one
    X[5, 1] = 1
    y = ["spam"] * 10 + ["ham"] * 20
    m = RobinsonFisher(strength=0.45, prior=0.5).fit(X, y)
    assert m.token_probability([0])[0] == pytest.approx((0.225 + 4 * 6 / 7) / 4.45)
    assert m.token_probability([0])[0] == pytest.approx(0.821027, abs=1e-6)
    # only in one spam: p = 1, n = 1: f = (0.225 + 1) / 1.45
    assert m.token_probability([1])[0] == pytest.approx(1.225 / 1.45)


def test_unseen_token_gets_the_prior():
    m = RobinsonFisher(prior=0.4).fit(np.array([[1, 0], [1, 0]]), ["ham", "spam"])
    assert m.token_probability([1])[0] == pytest.approx(0.4)
    # strength 0: an unseen token still gets x (no evidence at all), never 0/0
    m = RobinsonFisher(strength=0.0, prior=0.5).fit(np.array([[1, 0], [1, 0]]), ["ham", "spam"])
    assert m.token_probability([1])[0] == pytest.approx(0.5)


def test_fisher_combining_hand_worked():
    # Two clues f = 0.9 and 0.8. -ln 0.9 - ln 0.8 = -ln 0.72 (m_h), -ln 0.1 - ln 0.2 = -ln 0.02 (m_s).
    # Q(2, m) = e^-m (1 + m):  Q(2, m_h) = 0.72 (1 - ln 0.72) = 0.956523,
    # Q(2, m_s) = 0.02 (1 - ln 0.02) = 0.098240.  P(spam) = (1 + (1 - 0.098240) - (1 - 0.956523)) / 2
    q_h = 0.72 * (1 - math.log(0.72))
    q_s = 0.02 * (1 - math.log(0.02))
    expected = (1 + (1 - q_s) - (1 - q_h)) / 2
    assert expected == pytest.approx(0.929141, abs=1e-6)
    log_c0, log_c1 = fisher_log_odds(np.array([math.log(0.72)]), np.array([math.log(0.02)]), np.array([2]))
    assert math.exp(log_c1[0]) == pytest.approx(expected, rel=1e-12)
    assert math.exp(log_c0[0]) == pytest.approx(1 - expected, rel=1e-12)


def test_no_clue_means_one_half():
    log_c0, log_c1 = fisher_log_odds(np.zeros(1), np.zeros(1), np.zeros(1, dtype=int))
    assert np.exp(log_c1) == pytest.approx([0.5]) and np.exp(log_c0) == pytest.approx([0.5])


def _scalar_fisher(feature_count, class_count, tokens, s, x, min_dev, max_clues):
    """An independent, one-token-at-a-time version (as SpamBayes' classifier.py reads), on scipy's chi2.sf."""
    n_ham, n_spam = class_count
    clues = []
    for j in sorted(set(tokens)):
        ham, spam = feature_count[0][j], feature_count[1][j]
        b = spam / n_spam
        g = ham / n_ham
        p = b / (b + g) if b + g > 0 else x
        n = ham + spam
        f = (s * x + n * p) / (s + n) if s + n > 0 else x
        if abs(f - 0.5) >= min_dev:
            clues.append((abs(f - 0.5), -j, f))
    clues.sort(reverse=True)
    if max_clues:
        clues = clues[:max_clues]
    if not clues:
        return 0.5
    fs = [c[2] for c in clues]
    H = 1 - chi2.sf(-2 * sum(math.log(f) for f in fs), 2 * len(fs))
    S = 1 - chi2.sf(-2 * sum(math.log(1 - f) for f in fs), 2 * len(fs))
    return (1 + S - H) / 2


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10 ** 6), strength=st.sampled_from([0.0178, 0.1, 0.45, 1.0]),
       min_dev=st.sampled_from([0.0, 0.1, 0.3]), max_clues=st.sampled_from([0, 3, 150]))
def test_matches_the_scalar_oracle(seed, strength, min_dev, max_clues):
    rng = np.random.default_rng(seed)
    X = (rng.random((40, 12)) < rng.random(12)).astype(float)
    y = np.where(rng.random(40) < 0.5, "spam", "ham")
    y[:2] = ["ham", "spam"]
    m = RobinsonFisher(strength=strength, min_dev=min_dev, max_clues=max_clues).fit(X, y)
    Q = (rng.random((8, 12)) < 0.4).astype(float)
    got = m.predict_proba(Q)[:, 1]
    for row, p in zip(Q, got):
        expected = _scalar_fisher(m.feature_count_, m.class_count_, np.flatnonzero(row), strength, 0.5,
                                  min_dev, max_clues)
        assert p == pytest.approx(expected, abs=1e-9)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10 ** 6), max_clues=st.sampled_from([1, 3, 5]))
def test_clue_choice_ignores_the_order_of_a_rows_columns(seed, max_clues):
    """The strongest clues of a row, ties to the lower column, whatever order the CSR holds the
    row's columns in (rows with fewer candidates than max_clues keep them all; empty rows too)."""
    rng = np.random.default_rng(seed)
    X = (rng.random((40, 12)) < 0.5).astype(float)
    y = np.where(rng.random(40) < 0.5, "spam", "ham")
    y[:2] = ["ham", "spam"]
    m = RobinsonFisher(min_dev=0.0, max_clues=max_clues).fit(X, y)
    Q = (rng.random((9, 12)) < rng.random((9, 1))).astype(float)
    Q[0] = 0
    ordered = sp.csr_matrix(Q)
    shuffled = ordered.copy()
    for r in range(Q.shape[0]):                            # reverse each row's columns
        a, b = shuffled.indptr[r], shuffled.indptr[r + 1]
        shuffled.indices[a:b] = shuffled.indices[a:b][::-1].copy()
    shuffled.has_sorted_indices = False
    expected = m.predict_proba(ordered)[:, 1]
    # the same clues (the sums only in another order)
    assert m.predict_proba(shuffled)[:, 1] == pytest.approx(expected, rel=1e-12, abs=1e-15)
    for row, p in zip(Q, expected):
        assert p == pytest.approx(_scalar_fisher(m.feature_count_, m.class_count_, np.flatnonzero(row), 0.45, 0.5,
                                                 0.0, max_clues), abs=1e-9)


def test_log_odds_rank_messages_whose_probability_rounds_to_one():
    X = np.zeros((20, 400))
    X[:10, :300] = 1                    # spams share 300 tokens, hams the other 100
    X[10:, 300:] = 1
    y = ["spam"] * 10 + ["ham"] * 10
    m = RobinsonFisher(max_clues=0).fit(X, y)
    strong, stronger = np.zeros((1, 400)), np.zeros((1, 400))
    strong[0, :150] = 1
    stronger[0, :300] = 1
    both = np.vstack([strong, stronger])
    assert (m.predict_proba(both)[:, 1] == 1.0).all()          # saturated in floating point
    scores = m.decision_function(both)
    assert np.isfinite(scores).all() and scores[1] > scores[0] > 30


def test_presence_and_chunked_learning_equal_one_fit():
    rng = np.random.default_rng(3)
    X = sp.csr_matrix(rng.poisson(0.4, (60, 30)).astype(float))
    y = np.where(rng.random(60) < 0.5, "spam", "ham")
    whole = RobinsonFisher().fit(X, y)
    tripled = RobinsonFisher().fit(X * 3, y)
    chunks = RobinsonFisher()
    for i in range(0, 60, 7):
        chunks.partial_fit(X[i:i + 7], y[i:i + 7], classes=["ham", "spam"])
    for other in (tripled, chunks):
        assert np.array_equal(other.feature_count_, whole.feature_count_)
        assert np.array_equal(other.class_count_, whole.class_count_)
    np.testing.assert_allclose(chunks.predict_proba(X), whole.predict_proba(X))


def test_unlearn_undoes_learning():
    X = np.array([[1, 0, 1], [0, 1, 1], [1, 1, 0]], dtype=float)
    m = RobinsonFisher().fit(X[:2], ["spam", "ham"])
    before = m.feature_count_.copy()
    m.partial_fit(X[2:], ["spam"])
    m.unlearn(X[2:], ["spam"])
    assert np.array_equal(m.feature_count_, before)
    with pytest.raises(ConfigError, match="never learned"):
        m.unlearn(X[2:], ["ham"])
    assert np.array_equal(m.feature_count_, before)


def test_two_classes_only_and_parameter_checks():
    with pytest.raises(ValueError, match="two-class"):
        RobinsonFisher().fit(np.eye(3), ["a", "b", "c"])
    with pytest.raises(ConfigError, match="min_dev"):
        RobinsonFisher(min_dev=0.5).fit(np.eye(2), ["ham", "spam"])
    with pytest.raises(ConfigError, match="prior"):
        RobinsonFisher(prior=1.0).fit(np.eye(2), ["ham", "spam"])


def test_sklearn_conventions():
    from sklearn.base import clone
    m = RobinsonFisher(strength=0.2, min_dev=0.25)
    assert clone(m).get_params() == m.get_params()
    X = np.array([[1, 0], [0, 1], [1, 0], [0, 1]], dtype=float)
    fitted = m.fit(X, ["spam", "ham", "spam", "ham"])
    assert fitted is m and m.predict(np.array([[1.0, 0.0]]))[0] == "spam"
    np.testing.assert_allclose(m.predict_proba(X).sum(axis=1), 1.0)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10 ** 6), min_dev=st.sampled_from([0.0, 0.1, 0.3]), max_clues=st.sampled_from([0, 1, 3, 150]),
       indices_type=st.sampled_from([np.int32, np.int64]), shuffle=st.booleans())
def test_compiled_clue_sums_equal_the_numpy_definition(seed, min_dev, max_clues, indices_type, shuffle):
    """spamkit.common.speedups.fisher_sums is RobinsonFisher._clue_sums_python in one C pass per row: the
    same clue count, and the same sums to the last bits of a logarithm (NumPy's vector log may
    round its last bit differently from the C library's), with small counts (many tied f
    values, so max_clues must break ties as _clues does), empty rows, int32 or int64 column
    indices and rows whose columns are not in order."""
    from spamkit.models import robinson
    if robinson.speedups is None:
        pytest.skip("spamkit.common.speedups was not built")
    rng = np.random.default_rng(seed)
    X = (rng.random((30, 25)) < rng.random(25)).astype(float)
    y = np.where(rng.random(30) < 0.5, "spam", "ham")
    y[:2] = ["ham", "spam"]
    m = RobinsonFisher(min_dev=min_dev, max_clues=max_clues).fit(X, y)
    Q = sp.csr_matrix((rng.random((12, 25)) < rng.random((12, 1))).astype(float))
    Q.indices = Q.indices.astype(indices_type)
    if shuffle:
        for r in range(Q.shape[0]):
            a, b = Q.indptr[r], Q.indptr[r + 1]
            Q.indices[a:b] = rng.permutation(Q.indices[a:b])
        Q.has_sorted_indices = False
    n, log_f, log_1mf = m.clue_sums(Q)
    n_py, log_f_py, log_1mf_py = m._clue_sums_python(Q)
    assert n.tolist() == n_py.tolist()
    np.testing.assert_allclose(log_f, log_f_py, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(log_1mf, log_1mf_py, rtol=1e-13, atol=1e-15)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10 ** 6), max_clues=st.sampled_from([1, 20, 150, 299]), levels=st.sampled_from([2, 5, 50]))
def test_compiled_clue_choice_on_wide_rows_is_the_definitions(seed, max_clues, levels):
    """Rows of hundreds of candidate clues, many tied in strength (counts from a few levels), cut to
    max_clues: the compiled kernel selects them by quickselect, the definition by a stable sort;
    the same clues, so the same count and sums."""
    from spamkit.models import robinson
    if robinson.speedups is None:
        pytest.skip("spamkit.common.speedups was not built")
    rng = np.random.default_rng(seed)
    n_cols = 400
    m = RobinsonFisher(min_dev=0.0, max_clues=max_clues)
    counts = rng.integers(0, levels, size=(2, n_cols)).astype(np.float64)
    m.fit(np.eye(2, n_cols), ["ham", "spam"])
    m.feature_count_[:] = counts
    m.class_count_[:] = [float(levels), float(levels)]
    Q = sp.csr_matrix((rng.random((6, n_cols)) < rng.random((6, 1)) * 0.9 + 0.1).astype(float))
    n, log_f, log_1mf = m.clue_sums(Q)
    n_py, log_f_py, log_1mf_py = m._clue_sums_python(Q)
    assert n.tolist() == n_py.tolist()
    np.testing.assert_allclose(log_f, log_f_py, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(log_1mf, log_1mf_py, rtol=1e-13, atol=1e-15)


def test_compiled_clue_sums_refuse_what_does_not_fit():
    from spamkit.models import robinson
    if robinson.speedups is None:
        pytest.skip("spamkit.common.speedups was not built")
    counts = np.zeros(3)
    args = (1.0, 1.0, 0.45, 0.5, 0.1, 150)
    with pytest.raises(ValueError, match="do not fit"):            # a column past the counts
        robinson.speedups.fisher_sums(np.array([0, 1]), np.array([3], dtype=np.int32), counts, counts, *args,
                                      np.zeros(3))
    with pytest.raises(ValueError, match="do not fit"):            # an output of the wrong length
        robinson.speedups.fisher_sums(np.array([0, 1]), np.array([2], dtype=np.int32), counts, counts, *args,
                                      np.zeros(2))
    with pytest.raises(ValueError, match="do not fit"):            # indptr past the indices
        robinson.speedups.fisher_sums(np.array([0, 2]), np.array([2], dtype=np.int32), counts, counts, *args,
                                      np.zeros(3))
    with pytest.raises(TypeError, match="int32 or int64"):
        robinson.speedups.fisher_sums(np.array([0, 1]), np.array([0], dtype=np.int16), counts, counts, *args,
                                      np.zeros(3))
