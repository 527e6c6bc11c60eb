"""The scoring core (spamkit.scoring): its chi-square tails against SciPy's chi-square and by
hand, its compiled loop against its definition, its array forms against SciPy's special
functions, and the models' array forms of Robinson's f(w), naive Bayes and the combiner against
its one-message definitions on a trained filter."""

from __future__ import annotations

import array
import math

import numpy as np
import pytest
import scipy.special
from scipy.stats import chi2

import spamkit.scoring as scoring
from spamkit.filterfile.config import BEST, build_filter
from spamkit.corpus import Corpus
from spamkit.models.robinson import presence
from spamkit.scoring import arrays
from spamkit.scoring import fisher_log_probabilities, log_gamma_p, log_gamma_q, log_gamma_q_and_p

from conftest import SAMPLE, compiled_expected


# ---------------------------------------------------------------- the chi-square tails

def test_chi_square_tails_by_hand():
    # Q(n, m) = e^-m Σ_{i<n} m^i / i!  (A&S 26.4.21): Q(1, m) = e^-m, Q(2, m) = e^-m (1 + m),
    # Q(3, m) = e^-m (1 + m + m^2 / 2)
    assert log_gamma_q(1, 3.0) == pytest.approx(-3.0, abs=1e-15)
    assert log_gamma_q(2, 3.0) == pytest.approx(-3.0 + math.log(4.0), abs=1e-14)
    assert log_gamma_q(3, 2.0) == pytest.approx(-2.0 + math.log(5.0), abs=1e-14)
    assert log_gamma_q(3, 0.0) == 0.0                     # Q(n, 0) = 1
    assert log_gamma_p(3, 0.0) == -math.inf
    assert log_gamma_q_and_p(4, math.inf) == (-math.inf, 0.0)
    # P(2, m) = 1 - e^-m (1 + m) ≈ m^2 / 2 for tiny m; P(1, m) ≈ m
    assert log_gamma_p(2, 1e-8) == pytest.approx(math.log(0.5e-16), rel=1e-9)
    assert log_gamma_p(1, 1e-300) == pytest.approx(math.log(1e-300), rel=1e-12)
    # far beyond where Q or P underflow: Q(2, 2000) = e^-2000 * 2001; P(400, 1) ≈ e^-1 / 400! (1 + 1/401 + ...)
    assert log_gamma_q(2, 2000.0) == pytest.approx(-2000.0 + math.log(2001.0), rel=1e-12)
    first = -1.0 - math.lgamma(401.0)
    assert log_gamma_p(400, 1.0) == pytest.approx(first + math.log1p(1 / 401 + 1 / (401 * 402)), rel=1e-9)


@pytest.mark.parametrize("n", [1, 2, 3, 5, 10, 40, 150, 600, 1000])
def test_chi_square_tails_match_scipy(n):
    # Q(n, m) is chi-square's survival function with 2n degrees of freedom at 2m; P its CDF
    for m in (1e-300, 1e-5, 1e-3, 0.5, 1.0, 3.0, 20.0, 80.0, 200.0, n - 1.0, float(n), n + 1.0, 2.0 * n,
              10.0 * n, 700.0, 800.0, 5000.0):
        if m <= 0:
            continue
        q, p = log_gamma_q_and_p(n, m)
        sf, cdf = chi2.logsf(2 * m, 2 * n), chi2.logcdf(2 * m, 2 * n)
        if np.isfinite(sf) and sf > -700:
            assert q == pytest.approx(sf, rel=1e-9, abs=1e-300), (n, m)
        if np.isfinite(cdf) and cdf > -700:
            assert p == pytest.approx(cdf, rel=1e-9, abs=1e-300), (n, m)
        # either way, the two are a distribution and its complement
        assert math.exp(q) + math.exp(p) == pytest.approx(1.0, abs=1e-12)


def test_fisher_combining_hand_worked():
    # two clues f = 0.9 and 0.8: m_h = -ln 0.72, m_s = -ln 0.02; Q(2, m) = e^-m (1 + m):
    # P(spam) = (Q(2, m_h) + 1 - Q(2, m_s)) / 2 = (0.956523 + 1 - 0.098240) / 2 = 0.929141
    log_c0, log_c1 = fisher_log_probabilities(math.log(0.72), math.log(0.02), 2)
    expected = (0.72 * (1 - math.log(0.72)) + 1 - 0.02 * (1 - math.log(0.02))) / 2
    assert math.exp(log_c1) == pytest.approx(expected, rel=1e-12)
    assert math.exp(log_c1) == pytest.approx(0.929141, abs=1e-6)
    assert math.exp(log_c0) == pytest.approx(1 - expected, rel=1e-12)
    assert fisher_log_probabilities(0.0, 0.0, 0) == (-math.log(2), -math.log(2))     # no clue: 1/2


def _random_rows(seed: int, rows: int = 3000):
    rng = np.random.default_rng(seed)
    n = rng.integers(0, 300, rows)
    n[:5] = [0, 1, 150, 2000, 1]
    log_f = -rng.exponential(2.0, rows) * n
    log_1mf = -rng.exponential(2.0, rows) * n
    log_f[4], log_1mf[4] = -1e-300, -700.0               # the smallest and a large m
    return n.astype(np.int64), log_f, log_1mf


def test_the_compiled_tails_are_the_definition():
    if scoring.compiled_tails() is None:
        assert not compiled_expected(), "spamkit.scoring.chisquare was not built"
        pytest.skip("spamkit.scoring.chisquare was not built")
    n, log_f, log_1mf = _random_rows(1)
    c0, c1 = np.empty(len(n)), np.empty(len(n))
    scoring.compiled_tails().fisher_tails(n, log_f, log_1mf, c0, c1)
    for k in range(len(n)):
        d0, d1 = fisher_log_probabilities(float(log_f[k]), float(log_1mf[k]), int(n[k]))
        # Python's lgamma is its own, the C library's another: the last bits may differ
        assert c0[k] == pytest.approx(d0, rel=1e-12, abs=1e-12) and c1[k] == pytest.approx(d1, rel=1e-12, abs=1e-12)


def test_the_compiled_tails_refuse_what_does_not_fit():
    if scoring.compiled_tails() is None:
        assert not compiled_expected(), "spamkit.scoring.chisquare was not built"
        pytest.skip("spamkit.scoring.chisquare was not built")
    tails = scoring.compiled_tails().fisher_tails
    n, x, out = np.ones(3, dtype=np.int64), np.zeros(3), np.empty(3)
    with pytest.raises(ValueError, match="differ in length"):
        tails(n, x, x, out, np.empty(2))
    with pytest.raises(TypeError, match="n must be"):
        tails(np.ones(3, dtype=np.int32), x, x, out, out)
    with pytest.raises(TypeError, match="log_f must be"):
        tails(n, np.zeros(3, dtype=np.float32), x, out, out)
    with pytest.raises(BufferError):
        tails(n, x, x, out, bytes(24))                 # an output that cannot be written


def test_without_the_compiled_loop_the_definition_fills_the_same_rows(monkeypatch):
    n, log_f, log_1mf = _random_rows(2, rows=400)
    c0, c1 = arrays.fisher_log_odds(log_f, log_1mf, n)
    monkeypatch.setattr(scoring, "_chisquare", None)
    p0, p1 = array.array("d", bytes(8 * len(n))), array.array("d", bytes(8 * len(n)))
    scoring.fisher_log_probabilities_into(array.array("q", n.tolist()), array.array("d", log_f.tolist()),
                                          array.array("d", log_1mf.tolist()), p0, p1)
    np.testing.assert_allclose(np.array(p0), c0, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.array(p1), c1, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="differ in length"):
        scoring.fisher_log_probabilities_into(array.array("q", [1]), array.array("d", [0.0, 0.0]),
                                              array.array("d", [0.0]), p0, p1)


def test_fisher_over_arrays_keeps_the_rank_of_very_sure_messages():
    # three spams ever more sure: P(c0) underflows long before, their log-odds still differ
    # (P(c0) = (P(n, m_h) + Q(n, m_s)) / 2 with P(150, m_h) ≈ m_h^150 / 150!: e^-1000 apart)
    n = np.array([150, 150, 150])
    log_f = np.array([-1e-3, -1e-6, -1e-9])
    log_1mf = np.array([-8000.0, -8000.0, -8000.0])
    log_c0, log_c1 = arrays.fisher_log_odds(log_f, log_1mf, n)
    assert np.all(np.exp(log_c0) == 0.0)
    assert np.all(np.diff(log_c1 - log_c0) > 1000)


# ---------------------------------------------------------------- the logistic function over arrays

def test_logistic_functions_match_scipy():
    z = np.concatenate([np.linspace(-800, 800, 1601), [-1e-300, 0.0, 1e-300, 36.9, -36.9, 745.2, -745.2]])
    # subnormal results differ: scipy rounds e^-745 / (1 + e^745) to 0, this keeps the subnormal
    np.testing.assert_allclose(arrays.expit(z), scipy.special.expit(z), rtol=1e-15, atol=1e-300)
    np.testing.assert_allclose(arrays.log_expit(z), scipy.special.log_expit(z), rtol=1e-15, atol=1e-300)
    p = np.concatenate([np.linspace(0, 1, 1001), [1e-300, 1 - 1e-16]])
    with np.errstate(divide="ignore"):
        np.testing.assert_allclose(arrays.logit(p), scipy.special.logit(p), rtol=1e-13, atol=1e-15)
    assert np.isnan(arrays.expit(np.array([np.nan]))[0]) and np.isnan(arrays.log_expit(np.array([np.nan]))[0])
    for v in (-30.0, -1.0, 0.0, 2.5, 40.0):                # the scalar definition and the array form
        assert scoring.log_expit(v) == pytest.approx(float(arrays.log_expit(v)), rel=1e-15)


# ---------------------------------------------------------------- the models' array forms are the definitions

@pytest.fixture(scope="module")
def stack_and_rows():
    with Corpus(SAMPLE) as corpus:
        messages = list(corpus)
    f = build_filter(**BEST).fit(messages[::2])            # the default: byte 4-grams as a side input
    X = presence(f.transform(messages[1::2]))
    return f.model, X


def test_robinson_fisher_and_nb_of_the_stack_are_the_definitions(stack_and_rows):
    stack, X = stack_and_rows
    scores = stack.component_scores(stack.class_count_, stack.feature_count_, X, stack.feature_total_,
                                    stack.logistic_)
    ham, spam = stack.feature_count_[0].tolist(), stack.feature_count_[1].tolist()
    n_ham, n_spam = stack.class_count_.tolist()
    f = stack._fisher(stack.class_count_, stack.feature_count_, stack.feature_total_)
    cols_all = np.arange(X.shape[1])
    np.testing.assert_allclose(
        f.token_probability(cols_all[:500]),
        [scoring.robinson_f(ham[j], spam[j], n_ham, n_spam, f.strength, f.prior) for j in range(500)], rtol=1e-14)
    for i in range(X.shape[0]):
        cols = sorted(X[i].indices.tolist())
        k, log_f, log_1mf = scoring.fisher_clue_sums(cols, ham, spam, n_ham, n_spam, f.strength, f.prior,
                                                     f.min_dev, f.max_clues)
        c0, c1 = fisher_log_probabilities(log_f, log_1mf, k)
        assert scores[i, 0] == pytest.approx(scoring.finite_log_odds(c1 - c0), rel=1e-9, abs=1e-9)
        nb = scoring.nb_log_odds(cols, ham, spam, (n_ham, n_spam), stack.feature_total_.tolist(), float(stack.alpha),
                                 X.shape[1])
        assert scores[i, 1] == pytest.approx(nb, rel=1e-9, abs=1e-9)


def test_the_stacks_combiner_is_the_definition(stack_and_rows):
    stack, X = stack_and_rows
    scores = stack.component_log_odds(X)
    # side scores as a 4-gram model gives them, and what the combiner must clean: NaN, beyond ±700
    side = np.random.default_rng(3).normal(0, 20, X.shape[0])
    side[:3] = [np.nan, 1e4, -1e4]
    z = stack.combined_log_odds(scores, side)
    assert stack.length_aware and stack.squash == "slog" and scores.shape[1] == 4   # Fisher, NB, logistic, length
    assert stack.side_inputs == 1
    for i in range(X.shape[0]):
        length = scoring.length_input(int(scores[i, -1]), stack.length_range_)
        expected = scoring.combined_log_odds(scores[i, :-1].tolist(), stack.coef_.tolist(), stack.intercept_,
                                             stack.squash, length, (float(side[i]),))
        assert z[i] == pytest.approx(expected, rel=1e-12, abs=1e-12)
