"""Naive Bayes: Bernoulli, multinomial and Gaussian event models.

Sources: the course notes in ../shared/seeds (Libovický & Straka, "k-NN,
Naive Bayes", 2024: Bernoulli, multinomial and Gaussian NB with additive
smoothing; CPSC 340 "Naive Bayes" for the ten-example table); McCallum &
Nigam (1998), "A comparison of event models for Naive Bayes text
classification"; Manning, Raghavan & Schütze, *Introduction to Information
Retrieval* §13.2-13.3. The estimator interface follows scikit-learn's
``sklearn/naive_bayes.py`` (``_BaseDiscreteNB``): the same attribute names,
so results can be compared one to one.

Everything is computed in log space on sparse matrices. Both discrete models
are linear in x: ``log p(x, c) = b_c + x . w_c``; absent features of the
Bernoulli model are folded into ``b_c`` so a sparse message costs only its
non-zeros. Zero probabilities (possible only with ``alpha=0``) are handled
exactly, never hidden by an epsilon: a row that hits one gets ``-inf`` for
that class.

One concern over ~440 lines: three event models sharing the log-space linear form, the
exact handling of zero probabilities and the multinomial model's online split form.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..common.errors import ConfigError
from .base import NaiveBayesParameters, ProbabilisticClassifier, check_alpha, check_sample_weight, class_log_prior
from .counting import CountingModel


def _finite(a: np.ndarray) -> np.ndarray:
    return np.where(np.isfinite(a), a, 0.0)


class _DiscreteNB(NaiveBayesParameters, CountingModel):
    """Shared priors and posteriors of the Bernoulli and multinomial models (their counting:
    :class:`~spamkit.models.counting.CountingModel`)."""

    # the linear form of the fitted model (set by _update; annotations only)
    _w_finite: np.ndarray
    _b_finite: np.ndarray
    _b_neg_inf: np.ndarray

    # ------------------------------------------------------------- counting (spamkit.models.counting)

    def counts_changed(self):
        self._update()

    # ------------------------------------------------------------- estimates

    def _update(self):
        self._alpha = check_alpha(self.alpha)
        self._update_class_log_prior()
        self._update_feature_log_prob(self._alpha)
        self._update_linear_form()
        self._cache_transposes()

    def _update_class_log_prior(self):
        # p(c) = N_c / N (learned from the class frequencies), or given, or uniform
        self.class_log_prior_ = class_log_prior(self.class_count_, self.fit_prior, self.class_prior)

    def _update_linear_form(self):
        """Cache ``b_c`` and ``w_c`` of ``log p(x, c) = b_c + x . w_c`` and where they are -inf."""
        raise NotImplementedError

    def _cache_transposes(self):
        # X @ w.T with w.T a non-contiguous view makes scipy copy w on every call: keep a
        # contiguous copy, and note whether any -inf needs the exact (slower) path at all.
        # Without -inf terms (any alpha > 0) the indicator arrays are not kept.
        self._w_finite_T = np.ascontiguousarray(self._w_finite.T)
        q_zero = getattr(self, "_q_zero", None)
        self._has_neg_inf = bool(self._w_neg_inf.any() or self._b_neg_inf.any()
                                 or (q_zero is not None and q_zero.any()))
        if not self._has_neg_inf:
            self._w_neg_inf = self._q_zero = None

    # ------------------------------------------------------------- prediction

    def joint_log_likelihood(self, X) -> np.ndarray:
        """log p(x, c) = log p(c) + log p(x | c), shape (n_docs, n_classes)."""
        X = self.counted(self._validate_X(X, reset=False))
        if not sp.issparse(X):
            X = sp.csr_matrix(X)
        jll = np.asarray(X @ self._w_finite_T) + self._b_finite
        if self._has_neg_inf:
            # A present feature whose weight is -inf (a zero probability) makes the class impossible.
            present = X.copy()
            present.data = (present.data != 0).astype(np.float64)
            hits = np.asarray(present @ np.ascontiguousarray(self._w_neg_inf.T))
            jll[(hits + self._b_neg_inf) != 0] = -np.inf
        return jll

    def feature_weights(self) -> np.ndarray:
        """``w`` of the linear form, shape (n_classes, n_features): each feature's log-evidence per class."""
        self.check_fitted()
        if self._w_neg_inf is None:
            return self._w_finite
        return self._w_finite - np.where(self._w_neg_inf > 0, np.inf, 0.0)

    def contributions(self, x) -> tuple[np.ndarray, np.ndarray]:
        """For one row: the indices of its non-zero features and ``x_j * w[c, j]`` for each class.

        The sum over features plus ``b_c`` is ``log p(x, c)``: these are the tokens' shares of
        the verdict, used to explain it. Returns ``(indices, contributions (n_classes, k))``.
        """
        X = self.counted(self._validate_X(x, reset=False))
        row = sp.csr_matrix(X)[0]
        idx = row.indices
        values = row.data
        return idx, self.feature_weights()[:, idx] * values[None, :]


class MultinomialNB(_DiscreteNB):
    """Multinomial Naive Bayes: a document is a bag of token draws.

    ``p(x | c) ∝ prod_j p[c, j] ** x_j`` with additive (Laplace/Lidstone) smoothing
    ``p[c, j] = (n[c, j] + alpha) / (sum_j' n[c, j'] + alpha * D)``,
    where n[c, j] is the total count of feature j in class c and D the number of
    features (Libovický & Straka 2024; McCallum & Nigam 1998, eq. 6).

    Parameters
    ----------
    alpha : float, default 1.0
        Additive smoothing; 1 is Laplace's rule. 0 gives the unsmoothed maximum-likelihood
        estimate (for hand checks; unseen events then have probability 0).
    fit_prior : bool, default True
        Learn p(c) from class frequencies; False uses a uniform prior.
    class_prior : array (n_classes,), optional
        Fixed prior probabilities (overrides fit_prior).

    Examples
    --------
    The IR book's example (Manning et al. 2008, Table 13.1): four training documents,
    "Chinese Chinese Chinese Tokyo Japan" is classified as China with
    p(c|d) ∝ 3/4 * (3/7)^3 * 1/14 * 1/14 ≈ 0.0003 against 1/4 * (2/9)^3 * 2/9 * 2/9 ≈ 0.0001.

    >>> import numpy as np
    >>> # columns: chinese beijing shanghai macao tokyo japan
    >>> X = np.array([[2, 1, 0, 0, 0, 0], [2, 0, 1, 0, 0, 0], [1, 0, 0, 1, 0, 0], [1, 0, 0, 0, 1, 1]])
    >>> nb = MultinomialNB(alpha=1.0).fit(X, ["china", "china", "china", "japan"])
    >>> np.exp(nb.joint_log_likelihood([[3, 0, 0, 0, 1, 1]])).round(4).tolist()
    [[0.0003, 0.0001]]
    """

    sklearn_tag_settings = {"input_tags.positive_only": True}

    def counted(self, X):
        data = X.data if sp.issparse(X) else X
        if np.any(data < 0):
            raise ValueError("Negative values in data passed to MultinomialNB (input X): "
                             "the multinomial model needs counts (tf, tfnorm or tfidf, never negative)")
        return X

    # With alpha > 0 the model is kept in a split form that partial_fit can update in time
    # proportional to the batch, not to the vocabulary (online filtering learns one message at
    # a time over 2^20 hashed columns):
    #   log p[c, j] = log(n[c, j] + alpha) - log(N_c + alpha D),   N_c = sum_j n[c, j]
    #   log p(x, c) = log p(c) + x . log(n[c] + alpha) - (sum_j x_j) log(N_c + alpha D)
    # A batch changes the numerators of the columns it touches and one denominator per class.
    # With alpha = 0 (hand checks), zero probabilities need the exact -inf bookkeeping of the
    # base class, and the plain form is used.

    @property
    def feature_log_prob_(self):
        """log p[c, j], shape (n_classes, n_features)."""
        if self._split:
            return self._log_num_T.T - self._log_den[:, None]
        return self._feature_log_prob

    def _update_feature_log_prob(self, alpha):
        # p[c, j] = (n[c, j] + alpha) / (sum_j' n[c, j'] + alpha * D)
        smoothed = self.feature_count_ + alpha
        self._split = alpha > 0
        if self._split:
            self._log_num_T = np.ascontiguousarray(np.log(smoothed).T)
            self._log_den = np.log(self.feature_total_ + alpha * self.feature_count_.shape[1])
            return
        with np.errstate(divide="ignore", invalid="ignore"):
            self._feature_log_prob = np.log(smoothed) - np.log(smoothed.sum(axis=1, keepdims=True))

    def _update_linear_form(self):
        # log p(x, c) = log p(c) + sum_j x_j log p[c, j]
        self._b_finite = _finite(self.class_log_prior_)
        self._b_neg_inf = (self.class_log_prior_ == -np.inf).astype(np.float64)
        if self._split:
            self._w_finite = self._w_neg_inf = None
            return
        w = self._feature_log_prob
        self._w_finite = w if np.isfinite(w).all() else _finite(w)
        self._w_neg_inf = (w == -np.inf).astype(np.float64)

    def _cache_transposes(self):
        if not self._split:
            return super()._cache_transposes()
        self._has_neg_inf = bool(self._b_neg_inf.any())

    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """Add a batch's counts; with alpha > 0 only the columns it touches are recomputed."""
        if not hasattr(self, "classes_") or not getattr(self, "_split", False) or check_alpha(self.alpha) == 0:
            return super().partial_fit(X, y, classes=classes, sample_weight=sample_weight)
        self.first_partial_fit(classes)                   # not the first: checks that classes are the first's
        X, y = self._validate_Xy(X, y, reset=False)
        X = sp.csr_matrix(self.counted(X))
        codes = self.class_codes(y)
        weights = check_sample_weight(sample_weight, X.shape[0])
        # n[c_i, j] += w_i x_ij over the batch's non-zeros only: O(nnz), whatever the width
        rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
        values = X.data * weights[rows]
        np.add.at(self.feature_count_, (codes[rows], X.indices), values)
        np.add.at(self.class_count_, codes, weights)
        np.add.at(self.feature_total_, codes[rows], values)
        touched = np.unique(X.indices)
        alpha = self._alpha
        self._log_num_T[touched] = np.log(self.feature_count_[:, touched].T + alpha)
        self._log_den = np.log(self.feature_total_ + alpha * self.feature_count_.shape[1])
        self._update_class_log_prior()
        self._update_linear_form()
        self._cache_transposes()
        return self

    def joint_log_likelihood(self, X) -> np.ndarray:
        """log p(x, c) = log p(c) + sum_j x_j log p[c, j], shape (n_docs, n_classes)."""
        if not getattr(self, "_split", False):
            return super().joint_log_likelihood(X)
        X = self.counted(self._validate_X(X, reset=False))
        if not sp.issparse(X):
            X = sp.csr_matrix(X)
        row_sums = np.asarray(X.sum(axis=1)).ravel()
        jll = np.asarray(X @ self._log_num_T) - row_sums[:, None] * self._log_den[None, :] + self._b_finite
        if self._has_neg_inf:
            jll[:, self._b_neg_inf > 0] = -np.inf          # a class with prior 0
        return jll

    def feature_weights(self) -> np.ndarray:
        self.check_fitted()
        if self._split:
            return self.feature_log_prob_
        return super().feature_weights()


class BernoulliNB(_DiscreteNB):
    """Bernoulli Naive Bayes: one binary event per vocabulary term, present or absent.

    ``p(x | c) = prod_j p[c, j] ** x_j * (1 - p[c, j]) ** (1 - x_j)`` with
    ``p[c, j] = (docs of class c containing j + alpha) / (docs of class c + 2 alpha)``
    (Libovický & Straka 2024; McCallum & Nigam 1998, eq. 2). Absent terms count too.

    Without densifying: ``log p(x | c) = sum_j log(1 - p[c, j]) + x . (log p[c, j] - log(1 - p[c, j]))``;
    the first sum is computed once per class, the second touches only the non-zeros of x.

    Parameters
    ----------
    alpha, fit_prior, class_prior
        As for :class:`MultinomialNB`.
    binarize : float or None, default 0.0
        Values above this count as present; ``None`` takes X as already binary.

    Examples
    --------
    The CPSC 340 ten-example table, unsmoothed: p(y=0, x=[1,1]) = 0.4 * 4/4 * 1/4 = 0.1 and
    p(y=1, x=[1,1]) = 0.6 * 3/6 * 4/6 = 0.2.

    >>> import numpy as np
    >>> X = [[0, 1], [1, 1], [0, 0], [1, 1], [1, 1], [0, 0], [1, 0], [1, 0], [1, 1], [1, 0]]
    >>> y = [1, 1, 1, 1, 1, 1, 0, 0, 0, 0]
    >>> nb = BernoulliNB(alpha=0.0).fit(X, y)
    >>> np.exp(nb.joint_log_likelihood([[1, 1]])).round(6).tolist()
    [[0.1, 0.2]]
    """

    def __init__(self, alpha=1.0, fit_prior=True, class_prior=None, binarize=0.0):
        super().__init__(alpha=alpha, fit_prior=fit_prior, class_prior=class_prior)
        self.binarize = binarize


    def counted(self, X):
        if self.binarize is None:
            return X
        if sp.issparse(X):
            X = X.copy()
            X.data = (X.data > self.binarize).astype(np.float64)
            X.eliminate_zeros()
            return X
        return (np.asarray(X) > self.binarize).astype(np.float64)

    def _update_feature_log_prob(self, alpha):
        # p[c, j] = (docs of c containing j + alpha) / (docs of c + 2 alpha)
        with np.errstate(divide="ignore", invalid="ignore"):
            self.feature_log_prob_ = (np.log(self.feature_count_ + alpha)
                                      - np.log(self.class_count_ + 2.0 * alpha)[:, None])
            self._log_absent = (np.log(self.class_count_[:, None] - self.feature_count_ + alpha)
                                - np.log(self.class_count_ + 2.0 * alpha)[:, None])

    def _update_linear_form(self):
        # log p(x, c) = [log p(c) + sum_j log(1 - p[c, j])] + sum_j x_j [log p[c, j] - log(1 - p[c, j])]
        # Terms equal to -inf are tracked apart so that x_j = 1 cancels a -inf absent term exactly.
        log_p, log_q = self.feature_log_prob_, self._log_absent
        p_zero = log_p == -np.inf                 # present feature impossible in class c
        q_zero = log_q == -np.inf                 # absent feature impossible in class c
        self._w_finite = _finite(log_p) - _finite(log_q)
        self._b_finite = _finite(self.class_log_prior_) + _finite(log_q).sum(axis=1)
        self._q_zero = q_zero.astype(np.float64)
        self._w_neg_inf = p_zero.astype(np.float64)
        self._b_neg_inf = (self.class_log_prior_ == -np.inf).astype(np.float64)

    def joint_log_likelihood(self, X) -> np.ndarray:
        X = self.counted(self._validate_X(X, reset=False))
        if not sp.issparse(X):
            X = sp.csr_matrix(X)
        jll = np.asarray(X @ self._w_finite_T) + self._b_finite
        if not self._has_neg_inf:
            return jll
        present = X.copy()
        present.data = (present.data != 0).astype(np.float64)
        # impossible if: a present feature has p = 0, or an absent feature has p = 1 (q = 0),
        # i.e. (number of q = 0 features) - (those of them present) > 0, or the prior is 0.
        present_p_zero = np.asarray(present @ self._w_neg_inf.T)
        absent_q_zero = self._q_zero.sum(axis=1)[None, :] - np.asarray(present @ self._q_zero.T)
        jll[(present_p_zero > 0) | (absent_q_zero > 0) | (self._b_neg_inf[None, :] > 0)] = -np.inf
        return jll

    def feature_weights(self) -> np.ndarray:
        self.check_fitted()
        return self._w_finite


class GaussianNB(ProbabilisticClassifier):
    """Gaussian Naive Bayes for dense numeric features.

    ``p(x_j | c) = N(x_j; mu[c, j], sigma2[c, j])`` with the maximum-likelihood mean and
    variance per class, the variances increased by ``var_smoothing`` times the largest
    variance of all features (Libovický & Straka 2024, as scikit-learn does).
    ``partial_fit`` merges batch means and variances exactly (Chan, Golub & LeVeque 1979).

    Examples
    --------
    The course example: mean 73 and standard deviation 6.2 give p(66 | class) ≈ 0.034.

    >>> import numpy as np
    >>> nb = GaussianNB(var_smoothing=0.0).fit([[73 - 6.2], [73 + 6.2]], [0, 0])
    >>> float(np.exp(nb.joint_log_likelihood([[66.0]]))[0, 0]).__round__(3)
    0.034
    """

    _accept_sparse = False

    def __init__(self, priors=None, var_smoothing=1e-9):
        self.priors = priors
        self.var_smoothing = var_smoothing

    def fit(self, X, y, sample_weight=None):
        for attr in ("classes_", "theta_", "var_", "class_count_"):
            if hasattr(self, attr):
                delattr(self, attr)
        X, y = self._validate_Xy(X, y, reset=True)
        return self._partial(X, y, np.unique(y), sample_weight)

    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """Merge a batch into the running means and variances; ``classes`` on the first call."""
        first = self.first_partial_fit(classes)
        X, y = self._validate_Xy(X, y, reset=first)
        return self._partial(X, y, np.unique(classes) if first else self.classes_, sample_weight)

    def _partial(self, X, y, classes, sample_weight):
        if y.shape[0] != X.shape[0]:
            raise ConfigError(f"y has {y.shape[0]} labels for {X.shape[0]} rows")
        if float(self.var_smoothing) < 0:
            raise ConfigError(f"var_smoothing must be >= 0, got {self.var_smoothing!r}")
        w_all = check_sample_weight(sample_weight, len(y))
        if not hasattr(self, "classes_"):
            self.classes_ = np.asarray(classes)
            n_c, n_f = len(self.classes_), X.shape[1]
            self.theta_ = np.zeros((n_c, n_f))
            self.var_ = np.zeros((n_c, n_f))          # unsmoothed (maximum-likelihood) variances
            self.class_count_ = np.zeros(n_c)
        unknown = set(np.unique(y).tolist()) - set(self.classes_.tolist())
        if unknown:
            raise ConfigError(f"labels {sorted(unknown)} are not among the classes {self.classes_.tolist()}")
        for i, c in enumerate(self.classes_):
            mask = (y == c) & (w_all > 0)
            if not mask.any():
                continue
            Xc, wc = X[mask], w_all[mask]
            n_new = wc.sum()
            mu_new = np.average(Xc, axis=0, weights=wc)
            var_new = np.average((Xc - mu_new) ** 2, axis=0, weights=wc)
            n_old = self.class_count_[i]
            n_tot = n_old + n_new
            # Chan et al.: M2 = M2_a + M2_b + delta^2 n_a n_b / n
            delta = mu_new - self.theta_[i]
            m2 = self.var_[i] * n_old + var_new * n_new + delta ** 2 * n_old * n_new / n_tot
            self.theta_[i] = self.theta_[i] + delta * n_new / n_tot
            self.var_[i] = m2 / n_tot
            self.class_count_[i] = n_tot
        self._sigma_max = max(getattr(self, "_sigma_max", 0.0), float(np.var(X, axis=0).max()) if X.size else 0.0)
        self.epsilon_ = float(self.var_smoothing) * self._sigma_max
        if self.priors is not None:
            priors = np.asarray(self.priors, dtype=np.float64)
            if priors.shape != (len(self.classes_),) or not np.isclose(priors.sum(), 1.0) or np.any(priors < 0):
                raise ConfigError(f"priors must be {len(self.classes_)} non-negative numbers summing to 1")
            self.class_prior_ = priors
        else:
            self.class_prior_ = self.class_count_ / self.class_count_.sum()
        return self

    def joint_log_likelihood(self, X) -> np.ndarray:
        X = self._validate_X(X, reset=False)
        var = self.var_ + self.epsilon_
        # log N(x; mu, s2) = -0.5 log(2 pi s2) - (x - mu)^2 / (2 s2), summed over features
        with np.errstate(divide="ignore"):
            log_prior = np.log(self.class_prior_)
        norm = -0.5 * np.log(2.0 * np.pi * var).sum(axis=1)
        sq = ((X[:, None, :] - self.theta_[None, :, :]) ** 2 / var[None, :, :]).sum(axis=2)
        return log_prior + norm - 0.5 * sq
