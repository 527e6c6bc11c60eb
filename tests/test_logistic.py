"""Online logistic regression: the gradient step by hand, the stream against scikit-learn's SGD."""

import math

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.linear_model import SGDClassifier

from spamkit.common.errors import ConfigError
from spamkit.models import OnlineLogistic
from spamkit.models.logistic import fit_l2_logistic


def test_two_gradient_steps_by_hand():
    # rate 0.5, three tokens. Message 1 = tokens {0, 1}, spam: z = 0, sigma = 1/2, so every
    # touched weight moves by 0.5 * (1 - 1/2) = 0.25 (and so does the bias).
    # Message 2 = tokens {1, 2}, ham: z = b + w1 + w2 = 0.25 + 0.25 + 0 = 0.5,
    # sigma(0.5) = 0.6224593312, step 0.5 * (0 - 0.6224593312) = -0.3112296656.
    model = OnlineLogistic(rate=0.5)
    model.partial_fit(sp.csr_matrix([[1.0, 1.0, 0.0]]), ["spam"], classes=["ham", "spam"])
    np.testing.assert_allclose(model.coef_, [0.25, 0.25, 0.0])
    assert model.intercept_ == pytest.approx(0.25)
    model.partial_fit(sp.csr_matrix([[0.0, 3.0, 1.0]]), ["ham"])        # counts: presence is what counts
    np.testing.assert_allclose(model.coef_, [0.25, 0.25 - 0.3112296656, -0.3112296656], atol=1e-10)
    assert model.intercept_ == pytest.approx(0.25 - 0.3112296656, abs=1e-10)
    # P(spam | token 0 alone) = sigma(b + w0) = sigma(0.1887703344) = 0.5470529
    p = model.predict_proba(sp.csr_matrix([[1.0, 0.0, 0.0]]))[0]
    assert p[1] == pytest.approx(1 / (1 + math.exp(-0.1887703344)), abs=1e-9)
    assert p[1] == pytest.approx(0.5470529, abs=1e-7)
    assert model.class_count_.tolist() == [1.0, 1.0] and model.n_steps_ == 2


def _stream(seed=0, n=300, d=60):
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.45, "spam", "ham")
    rates = np.where(y[:, None] == "spam", 0.05 + 0.3 * (np.arange(d) < 10), 0.05 + 0.3 * (np.arange(d) >= 50))
    X = (rng.random((n, d)) < rates).astype(float)
    return X, y


@pytest.mark.parametrize("rate", [0.002, 0.05, 0.5])
def test_the_stream_matches_sklearn_sgd_log_loss(rate):
    """The same stream, one row at a time, with scikit-learn's constant-rate SGD on log-loss."""
    X, y = _stream()
    ours = OnlineLogistic(rate=rate)
    oracle = SGDClassifier(loss="log_loss", penalty=None, learning_rate="constant", eta0=rate,
                           fit_intercept=True, shuffle=False, average=False)
    for i in range(len(y)):
        ours.partial_fit(sp.csr_matrix(X[i:i + 1]), y[i:i + 1], classes=["ham", "spam"])
        oracle.partial_fit(X[i:i + 1], y[i:i + 1], classes=["ham", "spam"])   # dense: no intercept decay
    np.testing.assert_allclose(ours.coef_, oracle.coef_[0], rtol=1e-9, atol=1e-12)
    assert ours.intercept_ == pytest.approx(float(oracle.intercept_[0]), rel=1e-9, abs=1e-12)
    np.testing.assert_allclose(ours.decision_function(sp.csr_matrix(X)), oracle.decision_function(X),
                               rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(ours.predict_proba(sp.csr_matrix(X)), oracle.predict_proba(X), rtol=1e-9, atol=1e-12)


def test_fit_is_the_stream_in_order_and_epochs_repeat_it():
    X, y = _stream(1)
    streamed = OnlineLogistic(rate=0.1)
    for i in range(len(y)):
        streamed.partial_fit(sp.csr_matrix(X[i:i + 1]), y[i:i + 1], classes=["ham", "spam"])
    batch = OnlineLogistic(rate=0.1).fit(sp.csr_matrix(X), y)
    np.testing.assert_allclose(batch.coef_, streamed.coef_, rtol=1e-12)
    oracle = SGDClassifier(loss="log_loss", penalty=None, learning_rate="constant", eta0=0.1, shuffle=False)
    for _ in range(3):
        for i in range(len(y)):
            oracle.partial_fit(X[i:i + 1], y[i:i + 1], classes=["ham", "spam"])
    three = OnlineLogistic(rate=0.1, epochs=3).fit(sp.csr_matrix(X), y)
    np.testing.assert_allclose(three.coef_, oracle.coef_[0], rtol=1e-9, atol=1e-12)


def test_a_step_costs_the_message_not_the_columns():
    """Only the message's own weights move (and the bias)."""
    model = OnlineLogistic(rate=0.3)
    d = 1 << 20
    model.partial_fit(sp.csr_matrix(([1.0, 1.0], [7, 900_000], [0, 2]), shape=(1, d)), ["spam"],
                      classes=["ham", "spam"])
    assert np.flatnonzero(model.coef_).tolist() == [7, 900_000]


def test_learns_separable_data_and_unlearn_steps_back():
    X, y = _stream(2, n=400)
    model = OnlineLogistic(rate=0.2, epochs=2).fit(sp.csr_matrix(X), y)
    assert (model.predict(sp.csr_matrix(X)) == y).mean() > 0.9
    before = model.coef_.copy()
    x = sp.csr_matrix(X[:1])
    model.partial_fit(x, y[:1])
    model.unlearn(x, y[:1])
    # approximately back: the two steps differ by O(rate^2)
    assert np.abs(model.coef_ - before).max() < 0.2 ** 2
    assert not OnlineLogistic.exact_unlearning


def test_bad_parameters_and_labels_are_refused():
    X = sp.csr_matrix([[1.0, 0.0]])
    with pytest.raises(ConfigError, match="learning rate"):
        OnlineLogistic(rate=0).fit(X, ["spam"])
    with pytest.raises(ConfigError, match="epochs"):
        OnlineLogistic(epochs=0).fit(X, ["spam"])
    with pytest.raises(ConfigError, match="classes"):
        OnlineLogistic().partial_fit(X, ["spam"])
    with pytest.raises(ValueError, match="two-class"):
        OnlineLogistic().fit(sp.csr_matrix(np.eye(3)), ["a", "b", "c"])
    model = OnlineLogistic().partial_fit(X, ["spam"], classes=["ham", "spam"])
    with pytest.raises(ConfigError, match="not one of the classes"):
        model.partial_fit(X, ["eggs"])
    with pytest.raises(ConfigError, match="never learned"):
        model.unlearn(X, ["ham"])


def test_compiled_steps_equal_the_python_loop():
    # spamkit.common.speedups.logistic_steps is the Python loop in C; the only difference allowed is
    # the order of the dot product's sum (NumPy may pair terms), so agreement is to rounding
    from spamkit.models import logistic
    if logistic.speedups is None:
        pytest.skip("spamkit.common.speedups was not built")
    X, y = _stream(3, n=300)
    X = sp.csr_matrix(X)
    weights = np.linspace(0.5, 2.0, X.shape[0])
    compiled = OnlineLogistic(rate=0.3, epochs=2).fit(X, y, sample_weight=weights)
    python = OnlineLogistic(rate=0.3, epochs=2)
    python._start(y, X.shape[1])
    codes = python.class_codes(y)
    for _ in range(2):
        python._steps_python(logistic.presence(X), codes, weights, 0.3)
    np.testing.assert_allclose(compiled.coef_, python.coef_, rtol=1e-12, atol=1e-15)
    assert compiled.intercept_ == pytest.approx(python.intercept_, rel=1e-12)
    assert compiled.n_steps_ == 2 * X.shape[0]
    # a matrix whose column indices do not fit the weights is refused before any step
    with pytest.raises(ValueError):
        logistic.speedups.logistic_steps(np.array([0, 1]), np.array([5]), np.array([1.0]), np.zeros(3), 0.0,
                                         np.array([1.0]), np.array([1.0]), 0.1, 1.0, 35.0)


def test_a_row_of_weight_zero_is_no_step_and_the_indices_are_read_as_they_are():
    # the stack's folds step a regression on "every row but the held fold" by giving the held
    # rows weight 0 instead of copying the matrix without them: the same weights to the last bit,
    # from int32 column indices (scipy's usual, read without a copy) as from int64
    from spamkit.models import logistic
    X, y = _stream(5, n=200)
    X = sp.csr_matrix(X)
    keep = np.arange(X.shape[0]) % 3 != 1
    subset = OnlineLogistic(rate=0.2).partial_fit(X[keep], y[keep], classes=np.unique(y))
    for indices_type in (np.int32, np.int64):
        Xt = X.copy()
        Xt.indices = Xt.indices.astype(indices_type)
        weighted = OnlineLogistic(rate=0.2).partial_fit(Xt, y, classes=np.unique(y), sample_weight=keep.astype(float))
        assert np.array_equal(weighted.coef_, subset.coef_) and weighted.intercept_ == subset.intercept_
    python = OnlineLogistic(rate=0.2)
    python._start(np.unique(y), X.shape[1])
    python._steps_python(logistic.presence(X), python.class_codes(y), keep.astype(float), 0.2)
    np.testing.assert_allclose(python.coef_, subset.coef_, rtol=1e-12, atol=1e-15)
    if logistic.speedups is not None:
        with pytest.raises(TypeError, match="int32 or int64"):
            logistic.speedups.logistic_steps(np.array([0, 1]), np.array([0], dtype=np.int16), np.array([1.0]),
                                             np.zeros(3), 0.0, np.array([1.0]), np.array([1.0]), 0.1, 1.0, 35.0)


def test_the_combiners_regression_by_hand():
    # two points, x = +1 (c1) and x = -1 (c0): by symmetry b = 0, and the objective
    # 2 log(1 + e^(-w)) + w^2 / 2 is stationary where w = 2 σ(-w) = 2 / (1 + e^w): w = 0.6748...
    w, b = fit_l2_logistic([[1.0], [-1.0]], [True, False])
    assert b == pytest.approx(0.0, abs=1e-12)
    assert w[0] == pytest.approx(2.0 / (1.0 + np.exp(w[0])), abs=1e-12)
    assert w[0] == pytest.approx(0.6748, abs=1e-4)
    # C scales the penalty: with C -> large the same points are separable and w grows
    assert fit_l2_logistic([[1.0], [-1.0]], [True, False], C=100.0)[0][0] > 3.0
    with pytest.raises(ConfigError, match="both classes"):
        fit_l2_logistic([[1.0], [2.0]], [True, True])


@pytest.mark.parametrize("seed", range(6))
def test_the_combiners_regression_equals_scikit_learns_solved_exactly(seed):
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(seed)
    n = int(rng.integers(10, 2000))
    X = rng.normal(size=(n, 3)) * rng.uniform(0.1, 50.0, 3)     # log-odds columns of any scale
    y = X @ rng.normal(size=3) + rng.normal(size=n) * 3 > rng.normal()
    if y.all() or not y.any():
        y[0] = not y[0]
    w, b = fit_l2_logistic(X, y)
    oracle = LogisticRegression(C=1.0, tol=1e-12, max_iter=10000).fit(X, y)
    np.testing.assert_allclose(w, oracle.coef_[0], rtol=1e-6, atol=1e-7)
    assert b == pytest.approx(oracle.intercept_[0], rel=1e-6, abs=1e-7)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(["ham", "spam", "hamm", "", "é"]), max_size=30))
def test_class_codes_of_text_labels_are_the_lookups(labels):
    # text labels are mapped by one comparison per class; the codes are the dict lookup's, and
    # a label that is no class is named in the error either way
    from spamkit.common.errors import ConfigError
    m = OnlineLogistic().partial_fit(sp.csr_matrix(np.eye(2)), ["ham", "spam"], classes=["ham", "spam"])
    known = all(label in ("ham", "spam") for label in labels)
    for given_as in (labels, np.array(labels, dtype=str), np.array(labels, dtype=object)):
        if known:
            assert m.class_codes(given_as).tolist() == [["ham", "spam"].index(v) for v in labels]
        else:
            first = next(v for v in labels if v not in ("ham", "spam"))
            with pytest.raises(ConfigError, match=f"label {first!r} is not one of the classes"):
                m.class_codes(given_as)


def test_the_combiners_prior_and_sample_weights_worked_by_hand():
    # one column, rows x = 1 (class 1) and x = -1 (class 0), C = 1, the prior centred on c: by
    # symmetry b = 0 and w solves the objective's derivative 2 / (1 + e^w) = w - c (each row's
    # log-loss log(1 + e^-w) has derivative -1 / (1 + e^w)); found here by bisection
    X, t = [[1.0], [-1.0]], [1, 0]
    for c in (0.0, 2.0, -1.0):
        low, high = -20.0, 20.0
        for _ in range(200):
            mid = (low + high) / 2
            if 2 / (1 + math.exp(mid)) - (mid - c) > 0:
                low = mid
            else:
                high = mid
        w, b = fit_l2_logistic(X, t, C=1.0, center=[c])
        assert w[0] == pytest.approx(low, abs=1e-9) and b == pytest.approx(0.0, abs=1e-9)
    # without rows that count, the weights are the prior's
    w, _ = fit_l2_logistic([[1.0, 2.0], [-1.0, 0.5], [0.3, -2.0]], [1, 0, 1], center=[0.7, -0.2],
                           sample_weight=[0.0, 0.0, 0.0])
    assert w == pytest.approx([0.7, -0.2], abs=1e-9)
    # a row of weight 2 is that row twice
    rows, labels = [[1.0], [-0.5], [0.2], [-1.5]], [1, 0, 0, 1]
    twice = fit_l2_logistic(rows + [rows[2]], labels + [labels[2]])
    weighted = fit_l2_logistic(rows, labels, sample_weight=[1, 1, 2, 1])
    assert weighted[0] == pytest.approx(twice[0], abs=1e-9) and weighted[1] == pytest.approx(twice[1], abs=1e-9)
    with pytest.raises(ConfigError, match="sample weights must be 4 finite numbers"):
        fit_l2_logistic(rows, labels, sample_weight=[1, 1, -1, 1])
