"""Online logistic regression over binary features: one gradient step per learned message.

The filter behind the best runs of the TREC 2006 and 2007 spam tracks was not a Bayesian
word counter but a logistic regression learned online over binary features of the raw
message (overlapping byte 4-grams), one stochastic-gradient step per message, with a
small constant learning rate:

- J. Goodman and W. Yih, "Online Discriminative Spam Filter Training", CEAS 2006: online
  logistic regression with one gradient step per message matches or beats the best
  generative filters on the TREC 2005 corpora.
- G. V. Cormack, "University of Waterloo Participation in the TREC 2007 Spam Track"
  (TREC 2007 proceedings): logistic regression on binary byte 4-gram features of the first
  3,000-odd bytes of each message, learning rate about 0.002 (the figures spamkit starts
  from; its own choice is measured in ``scripts/ablation.py``).
- G. V. Cormack, "TREC 2007 Spam Track Overview": the Waterloo runs among the best in the
  immediate-feedback task.

The model, for two classes c0 and c1 (ham and spam) and a binary feature vector x:

    z = b + Σ_j w_j x_j          P(c1 | x) = σ(z) = 1 / (1 + e^(-z))

and after each message with label y ∈ {0, 1} (1 for c1), the gradient step on its log-loss

    w_j ← w_j + η (y - σ(z)) x_j   for the features of the message,   b ← b + η (y - σ(z)).

It touches only the message's non-zero features, so a step costs O(non-zeros), not
O(columns). This is scikit-learn's ``SGDClassifier(loss="log_loss", penalty=None,
learning_rate="constant", eta0=η)`` fed one row at a time (on dense input; the tests check
the weights against it), written here as a sparse update.

Exact unlearning is impossible: each step depends on the weights it found, so a message
learned long ago cannot be subtracted. :meth:`OnlineLogistic.unlearn` takes a step the
other way (gradient ascent on the message's log-loss with its wrong label), which undoes a
mistake approximately; ``spamkit info`` says so.
"""

from __future__ import annotations

import numpy as np

from ..common.errors import ConfigError
from ..common.names import DEFAULT_RATE
from ..scoring import LOGISTIC_LIMIT as SCORE_LIMIT
from ..scoring.arrays import expit, log_expit

from ..common.compiled import speedups as _compiled
from .base import ProbabilisticClassifier, check_positive, check_sample_weight, csr_index_arrays
from .robinson import PRESENCE_FAILED_CHECKS, PRESENCE_TAGS, presence

speedups = _compiled()                   # spamkit/common/speedups.c, or None: the Python definition

#: why a weight is not a repetition here: a message of weight w is one gradient step w times as
#: long, where w copies are w steps, each taken from where the last one left the weights
_ONLINE_WEIGHTS = ("online gradient steps: a message of weight w takes one step w times as long, w copies of it "
                   "w steps from successive weights, which differ (only counting models can be exact here)")

#: scores are clipped to SCORE_LIMIT (the scoring core's LOGISTIC_LIMIT, 35: σ(±35) is within 1e-15
#: of 0 and 1)


class OnlineLogistic(ProbabilisticClassifier):
    """Two-class logistic regression learned by stochastic gradient steps on binary features.

    Parameters
    ----------
    rate : float
        The constant learning rate η of every step (:data:`DEFAULT_RATE`; Cormack's 0.002 is
        far too slow for the stack on these corpora: see ``scripts/ablation.py``).
    epochs : int
        Passes over the data in :meth:`fit` (in the given order: mail is learned in the
        order it arrived). :meth:`partial_fit` always takes one step per row.

    Attributes
    ----------
    coef_ : ndarray (n_features,)
        The weights w.
    intercept_ : float
        The bias b.
    class_count_ : ndarray (2,)
        Messages learned per class (what the filter has seen; not used in scoring).
    n_steps_ : int
        Gradient steps taken.
    """

    exact_unlearning = False

    def __init__(self, rate=DEFAULT_RATE, epochs=1):
        self.rate = rate
        self.epochs = epochs

    sklearn_tag_settings = PRESENCE_TAGS
    #: the scikit-learn checks it cannot pass, and why (tests/test_estimator_checks.py)
    EXPECTED_FAILED_CHECKS = {**PRESENCE_FAILED_CHECKS,
                              "check_sample_weight_equivalence_on_dense_data": _ONLINE_WEIGHTS,
                              "check_sample_weight_equivalence_on_sparse_data": _ONLINE_WEIGHTS}

    def check_params(self) -> float:
        rate = check_positive(self.rate, "the learning rate")
        if not (isinstance(self.epochs, (int, np.integer)) and self.epochs >= 1):
            raise ConfigError(f"epochs must be an integer >= 1, got {self.epochs!r}")
        return rate

    def _start(self, classes, n_features: int) -> None:
        self.classes_ = np.unique(np.asarray(classes))
        if len(self.classes_) != 2:
            binary = "Only binary classification is supported: " if len(self.classes_) > 2 else ""
            raise ValueError(f"{binary}OnlineLogistic is a two-class model; got {len(self.classes_)} class(es) "
                             f"{self.classes_.tolist()}")
        self.coef_ = np.zeros(n_features)
        self.intercept_ = 0.0
        self.class_count_ = np.zeros(2)
        self.n_steps_ = 0

    def _steps(self, X, codes, weights, rate: float, sign: float = 1.0) -> None:
        """One gradient step per row, in row order (each step sees the weights of the last).

        In C (``spamkit.common.speedups.logistic_steps``) when the extension is built: the same
        arithmetic in the same order, but the dot product summed left to right where NumPy's
        may pair terms, so the two agree to rounding (tests/test_logistic.py)."""
        if speedups is not None and self.coef_.flags.c_contiguous and self.coef_.dtype == np.float64:
            self.intercept_ = speedups.logistic_steps(
                *csr_index_arrays(X), np.ascontiguousarray(X.data, dtype=np.float64), self.coef_,
                float(self.intercept_), np.ascontiguousarray(codes, dtype=np.float64), np.ascontiguousarray(weights, dtype=np.float64),
                float(rate), float(sign), SCORE_LIMIT)
            self.n_steps_ += X.shape[0]
            return
        self._steps_python(X, codes, weights, rate, sign)

    def _steps_python(self, X, codes, weights, rate: float, sign: float = 1.0) -> None:
        """:meth:`_steps` in Python and NumPy."""
        w, indptr, indices, data = self.coef_, X.indptr, X.indices, X.data
        b = self.intercept_
        for i in range(X.shape[0]):
            if weights[i] == 0.0:
                continue                                   # a step of weight 0 changes nothing
            cols = indices[indptr[i]:indptr[i + 1]]
            vals = data[indptr[i]:indptr[i + 1]]
            z = min(max(b + float(w[cols] @ vals), -SCORE_LIMIT), SCORE_LIMIT)
            g = sign * rate * weights[i] * (codes[i] - expit(z))
            w[cols] += g * vals
            b += g
        self.intercept_ = float(b)
        self.n_steps_ += X.shape[0]

    def fit(self, X, y, sample_weight=None):
        """``epochs`` passes of one gradient step per row, from zero weights; returns ``self``."""
        rate = self.check_params()
        X, y = self._validate_Xy(X, y, reset=True)
        self._start(y, X.shape[1])                       # the classes are checked before the values
        X = presence(X)
        codes = self.class_codes(y)
        weights = check_sample_weight(sample_weight, X.shape[0])
        np.add.at(self.class_count_, codes, 1.0)
        for _ in range(int(self.epochs)):
            self._steps(X, codes, weights, rate)
        return self

    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """One gradient step per row (``classes`` on the first call); returns ``self``."""
        rate = self.check_params()
        first = self.first_partial_fit(classes)
        X, y = self._validate_Xy(X, y, reset=first)
        X = presence(X)
        if first:
            self._start(classes, X.shape[1])
        codes = self.class_codes(y)
        np.add.at(self.class_count_, codes, 1.0)
        self._steps(X, codes, check_sample_weight(sample_weight, X.shape[0]), rate)
        return self

    def unlearn(self, X, y, sample_weight=None):
        """Approximately undo learning rows with labels ``y``: one step up their log-loss each.

        Not exact (see the module docstring): the weights after learning and unlearning a
        message differ from the weights never having seen it by O(η²).
        """
        rate = self.check_params()
        self.check_fitted()
        X, y = self._validate_Xy(X, y, reset=False)
        codes = self.class_codes(y)
        counts = np.bincount(codes, minlength=2)
        if (self.class_count_ - counts < 0).any():
            raise ConfigError("cannot unlearn messages that were never learned (counts would go negative)")
        self._steps(presence(X), codes, check_sample_weight(sample_weight, X.shape[0]), rate, sign=-1.0)
        self.class_count_ -= counts
        return self

    # ------------------------------------------------------------- prediction

    def decision_function(self, X) -> np.ndarray:
        """z = b + w · x for each row (log-odds of c1), clipped to ±:data:`SCORE_LIMIT`."""
        X = presence(self._validate_X(X, reset=False))
        z = np.asarray(X @ self.coef_ + self.intercept_, dtype=np.float64).ravel()
        return np.minimum(np.maximum(z, -SCORE_LIMIT), SCORE_LIMIT)      # np.clip's numbers, without its wrapper

    def joint_log_likelihood(self, X) -> np.ndarray:
        """log P(c | x), shape (n, 2) (already normalised: the model is discriminative)."""
        z = self.decision_function(X)
        return np.column_stack([log_expit(-z), log_expit(z)])

    def contributions(self, x) -> tuple[np.ndarray, np.ndarray]:
        """For one row: its features and (-w_j/2, w_j/2), whose difference is each weight."""
        X = presence(self._validate_X(x, reset=False))[0]
        cols = X.indices
        half = self.coef_[cols] / 2.0
        return cols, np.vstack([-half, half])

    # ------------------------------------------------------------- persistence (spamkit.filterfile.persist)

    def state_arrays(self) -> tuple[dict, dict]:
        return {"coef_": self.coef_, "intercept_": np.array([self.intercept_]),
                "class_count_": self.class_count_, "n_steps_": np.array([self.n_steps_], dtype=np.int64)}, {}

    def restore_state(self, classes, n_features: int, arrays: dict, texts: dict) -> None:
        self.classes_ = np.asarray(classes)
        self.coef_ = np.array(arrays["coef_"], dtype=np.float64)
        intercept = np.asarray(arrays["intercept_"], dtype=np.float64)
        self.class_count_ = np.asarray(arrays["class_count_"], dtype=np.float64)
        steps = np.asarray(arrays["n_steps_"])
        if (self.classes_.shape != (2,) or self.coef_.shape != (n_features,) or intercept.shape != (1,)
                or self.class_count_.shape != (2,) or steps.shape != (1,)):
            raise ValueError(f"weights have shape {self.coef_.shape}, expected ({n_features},)")
        if not (np.isfinite(self.coef_).all() and np.isfinite(intercept).all()):
            raise ValueError("the weights are not finite")
        self.intercept_ = float(intercept[0])
        self.n_steps_ = int(steps[0])
        self.n_features_in_ = int(n_features)


def fit_l2_logistic(X, is_c1, C: float = 1.0, tol: float = 1e-10, max_iter: int = 100,
                    sample_weight=None, center=None, precision=None) -> tuple[np.ndarray, float]:
    """Batch L2-regularised logistic regression on a few dense columns, by Newton's method:
    the weights w and intercept b minimising

        Σ_i v_i log(1 + e^(-s_i z_i)) + ||w - w0||² / (2 C),   z_i = w · x_i + b,  s_i = ±1 (c1 / c0),

    the objective of scikit-learn's ``LogisticRegression(C=C)`` (the intercept is not
    penalised). With g = Xᵀ(σ(z) - t) + w / C and H = Xᵀ diag(σ(z)(1 - σ(z))) X + I / C
    (X with a column of ones, nothing added for the intercept; v_i the ``sample_weight`` of row i,
    1 if not given, entering g and H as it enters the sum; w0 the ``center``, 0 if not given: the
    mean of a Gaussian prior on the weights, so that few rows leave the weights near w0 and many
    rows outweigh it), each step solves H Δ = g and
    halves Δ until the objective falls (Nocedal & Wright, "Numerical Optimization", ch. 3),
    until max |g| ≤ tol × n. The objective is strictly convex when both classes are present,
    so the minimum is unique and reached to near machine precision in a few steps -- what the
    stack's combiner needs (two or three columns) without importing scikit-learn.

    ``precision``: a Gaussian prior on weights and intercept together instead, with this
    (m + 1) x (m + 1) precision matrix P and ``center`` its mean θ0 (m + 1 numbers, the intercept
    last): the penalty is (θ - θ0)ᵀ P (θ - θ0) / 2, added to g as P (θ - θ0) and to H as P. With
    θ0 a fit on earlier rows and P the Hessian of that fit's objective there
    (:func:`logistic_precision`), the fit on new rows alone approximates the fit on old and new
    rows together (the Laplace approximation of the old rows' likelihood; Bishop, "Pattern
    Recognition and Machine Learning", 2006, sec. 4.5): what a deployed stack refits its combiner
    with when it has kept only its training fit (:meth:`spamkit.models.combiner.StackCombiner.refit_combiner`).

    >>> w, b = fit_l2_logistic([[-2.0], [-1.0], [1.0], [2.0], [0.5], [-0.5]], [0, 0, 1, 1, 0, 1])
    >>> round(float(w[0]), 6), abs(round(b, 6))         # symmetric data: the intercept is 0 (or -0)
    (0.760463, 0.0)
    """
    X = np.asarray(X, dtype=np.float64)
    t = np.asarray(is_c1, dtype=np.float64)
    n, m = X.shape
    if not (t.any() and not t.all()):
        raise ConfigError("a logistic regression needs examples of both classes")
    A = np.column_stack([X, np.ones(n)])
    penalty = np.append(np.full(m, 1.0 / C), 0.0)
    sign = 2.0 * t - 1.0
    v = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    if v.shape != (n,) or not (np.isfinite(v).all() and (v >= 0).all()):
        raise ConfigError(f"sample weights must be {n} finite numbers >= 0")
    w0 = np.zeros(m + 1)
    if precision is not None:
        P = np.asarray(precision, dtype=np.float64)
        if P.shape != (m + 1, m + 1) or center is None or np.shape(center) != (m + 1,):
            raise ConfigError(f"a prior precision needs a ({m + 1}, {m + 1}) matrix and a centre of {m + 1} "
                              "numbers (the weights, then the intercept)")
        w0 = np.asarray(center, dtype=np.float64).copy()
    elif center is not None:
        w0[:m] = np.asarray(center, dtype=np.float64).reshape(m)

    def prior(d):                                 # (penalty, its gradient, its Hessian) at theta - w0 = d
        if precision is None:
            return 0.5 * penalty @ (d ** 2), penalty * d, np.diag(penalty)
        return 0.5 * d @ P @ d, P @ d, P

    def objective(theta):
        return float(v @ np.logaddexp(0.0, -sign * (A @ theta)) + prior(theta - w0)[0])

    theta = w0.copy()
    value = objective(theta)
    for _ in range(max_iter):
        p = expit(A @ theta)
        _, prior_gradient, prior_hessian = prior(theta - w0)
        gradient = A.T @ (v * (p - t)) + prior_gradient
        if np.abs(gradient).max() <= tol * n:
            break
        hessian = (A * (v * p * (1.0 - p))[:, None]).T @ A + prior_hessian
        step = np.linalg.solve(hessian, gradient)
        for _ in range(60):                       # backtracking: halve until the objective falls
            candidate = theta - step
            new_value = objective(candidate)
            if new_value <= value:
                break
            step = step / 2.0
        else:
            break                                 # no descent left at machine precision
        if new_value == value and np.array_equal(candidate, theta):
            break
        theta, value = candidate, new_value
    return theta[:m].copy(), float(theta[m])


def logistic_precision(X, coef, intercept: float, C: float = 1.0, sample_weight=None) -> np.ndarray:
    """The Hessian of :func:`fit_l2_logistic`'s objective at (``coef``, ``intercept``) over (weights,
    intercept): Aᵀ diag(v σ(z)(1 - σ(z))) A + diag(1/C, ..., 1/C, 0), A the rows with a column of
    ones. At a fit's minimum it is the precision of the Laplace approximation of that fit, the
    prior :func:`fit_l2_logistic`'s ``precision`` takes.

    >>> logistic_precision([[0.0], [0.0]], [0.0], 0.0).tolist()   # two rows at z = 0: 1/4 each
    [[1.0, 0.0], [0.0, 0.5]]
    """
    X = np.asarray(X, dtype=np.float64)
    n, m = X.shape
    A = np.column_stack([X, np.ones(n)])
    v = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    p = expit(A @ np.append(np.asarray(coef, dtype=np.float64), float(intercept)))
    return (A * (v * p * (1.0 - p))[:, None]).T @ A + np.diag(np.append(np.full(m, 1.0 / C), 0.0))
