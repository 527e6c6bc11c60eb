"""Categorical Naive Bayes: features that take one of several values (outlook = sunny,
overcast or rain), with Lidstone smoothing over each feature's own number of values, and
missing values left out of the product.

Sources: the course notes in ../shared/seeds (the "play tennis" example, Naive Bayes with
MLE estimates θ_{j,v,c} = #{X_j = v, Y = c} / #{Y = c}, and the summary slide: Naive Bayes
"works natively with missing values -- just remove the missing j from the product");
Mitchell, *Machine Learning* (1997) §6.9 for the data set. The estimator follows
scikit-learn's ``CategoricalNB`` (the tests use it as the oracle when nothing is missing).

For class c, feature j with K_j values, and smoothing α (1: Laplace, 0: the MLE of the notes):

    θ_{j,v,c} = (N_{c,j,v} + α) / (N_{c,j} + α K_j)

where N_{c,j,v} counts the training rows of class c whose feature j is v and N_{c,j} those
whose feature j is known (all of class c when nothing is missing). A message is scored by

    log p(c) + Σ_{j known} log θ_{j,x_j,c}

so a missing feature (NaN, a negative code, or a value never seen in training) drops out.
"""

from __future__ import annotations

import numpy as np

from ..common.errors import ConfigError
from .base import (NaiveBayesParameters, ProbabilisticClassifier, check_alpha, check_sample_weight, class_labels,
                   class_log_prior)


class CategoricalNB(NaiveBayesParameters, ProbabilisticClassifier):
    """Naive Bayes over categorical features, missing values allowed.

    Parameters
    ----------
    alpha : float
        Lidstone smoothing (1 = Laplace, 0 = maximum likelihood).
    fit_prior : bool
        Learn p(c) from the class frequencies; False uses a uniform prior.
    class_prior : array-like, optional
        Fixed priors, in ``classes_`` order.

    Input: a 2-D array, one row per example. Numeric columns hold category codes 0, 1, 2, …
    (NaN or a negative code: missing); an array of strings (or objects) holds the values
    themselves, encoded per column in sorted order (``None``, ``""`` and NaN: missing).

    Attributes
    ----------
    classes_ : ndarray
    categories_ : list of ndarray
        The values of each feature (the codes, or the strings in sorted order).
    category_count_ : list of ndarray (n_classes, K_j)
        N_{c,j,v}.
    class_count_ : ndarray (n_classes,)
    feature_log_prob_ : list of ndarray (n_classes, K_j)
        log θ_{j,v,c}.

    Examples
    --------
    >>> X = [["sunny", "hot"], ["rain", "mild"], ["sunny", "mild"], ["overcast", "hot"]]
    >>> nb = CategoricalNB(alpha=1.0).fit(X, ["no", "yes", "no", "yes"])
    >>> nb.predict([["sunny", None]]).tolist()          # temperature unknown: left out
    ['no']
    """

    _accept_sparse: str | bool = False

    #: the scikit-learn checks it cannot pass, and why (tests/test_estimator_checks.py): their
    #: data are real numbers, where its input is categories -- whole-number codes (a negative one:
    #: missing) or strings -- and a table of strings is its input, not an error
    EXPECTED_FAILED_CHECKS = {
        "check_positive_only_tag_during_fit": "its data are negative real numbers, refused as not whole; a "
                                              "negative whole code is a missing value, which this model takes",
        "check_sample_weight_equivalence_on_dense_data": "its data are real numbers; categories are whole-number "
                                                         "codes or strings",
        "check_classifiers_one_label_sample_weights": "its data are real numbers drawn from [0, 1); categories are "
                                                      "whole-number codes or strings",
        "check_dtype_object": "it expects a table of strings to be refused; strings are this model's categories "
                              "(the example in this docstring)",
    }

    sklearn_tag_settings = {"input_tags.categorical": True, "input_tags.allow_nan": True}

    # ------------------------------------------------------------- encoding

    @staticmethod
    def _as_table(X) -> np.ndarray:
        """X as a 2-D array of categories (refusing, with scikit-learn's words where it has
        some: sparse matrices, complex numbers, one row only, no rows or no columns)."""
        if hasattr(X, "toarray") or hasattr(X, "tocsr"):
            raise TypeError("CategoricalNB takes a dense table of categories; sparse input is not supported")
        X = np.asarray(X, dtype=object if not isinstance(X, np.ndarray) else None)
        if X.dtype.kind == "c" or (X.dtype == object and any(isinstance(v, complex) for v in X.ravel()[:1000])):
            raise ValueError("Complex data not supported: categories are whole-number codes or strings")
        if X.ndim != 2:
            raise ConfigError(f"expected a 2-D table of categories, got an array of shape {X.shape}: "
                              "Reshape your data (one row per message, one column per feature)")
        if X.shape[1] == 0:
            raise ValueError(f"0 feature(s) (shape={X.shape}) while a minimum of 1 is required.")
        if X.shape[0] == 0:
            raise ValueError(f"0 sample(s) (shape={X.shape}) while a minimum of 1 is required.")
        return X

    @staticmethod
    def _missing(column) -> np.ndarray:
        if column.dtype.kind in "fiu":
            values = column.astype(np.float64)
            return np.isnan(values) | (values < 0)
        return np.array([v is None or v == "" or (isinstance(v, float) and v != v) for v in column], dtype=bool)

    def _codes(self, X, fitting: bool) -> np.ndarray:
        """Integer codes per column, -1 for missing (and, at prediction, for unseen values)."""
        X = self._as_table(X)
        if fitting:
            self.n_features_in_ = X.shape[1]
            self.categories_ = []
        elif X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but CategoricalNB is expecting "
                             f"{self.n_features_in_} features as input.")
        codes = np.full(X.shape, -1, dtype=np.int64)
        for j in range(X.shape[1]):
            column = X[:, j]
            missing = self._missing(column)
            known = column[~missing]
            if column.dtype.kind in "fiu":
                values = known.astype(np.float64)
                if np.any(values != np.round(values)):
                    raise ConfigError(f"feature {j}: category codes must be whole numbers")
                values = values.astype(np.int64)
                if fitting:
                    self.categories_.append(np.arange(int(values.max()) + 1 if len(values) else 0))
                size = len(self.categories_[j])
                ok = values < size
                out = np.full(len(values), -1, dtype=np.int64)
                out[ok] = values[ok]
                codes[~missing, j] = out
            else:
                strings = np.array([str(v) for v in known], dtype=object)
                if fitting:
                    self.categories_.append(np.array(sorted(set(strings.tolist())), dtype=object))
                index = {v: i for i, v in enumerate(self.categories_[j].tolist())}
                codes[~missing, j] = [index.get(v, -1) for v in strings.tolist()]
        return codes

    # ------------------------------------------------------------- fitting

    def fit(self, X, y, sample_weight=None):
        """Count categories per class and feature; returns ``self``."""
        alpha = check_alpha(self.alpha)
        if y is None:
            raise ValueError("CategoricalNB requires y to be passed, but the target y is None")
        codes = self._codes(X, fitting=True)
        y = class_labels(y, codes.shape[0])
        w = check_sample_weight(sample_weight, len(y))
        self.classes_, y_codes = np.unique(y[w > 0] if sample_weight is not None else y, return_inverse=False), None
        if len(self.classes_) < 2:
            raise ValueError(f"CategoricalNB needs messages of at least two classes (of non-zero weight); "
                             f"got one class only, {self.classes_.tolist()}")
        y_codes = np.searchsorted(self.classes_, y)
        y_codes[~np.isin(y, self.classes_)] = 0         # rows of weight 0 whose class is gone: they add 0
        n_classes = len(self.classes_)
        self.class_count_ = np.bincount(y_codes, weights=w, minlength=n_classes).astype(np.float64)
        self.category_count_ = []
        for j, cats in enumerate(self.categories_):
            counts = np.zeros((n_classes, len(cats)))
            known = codes[:, j] >= 0
            np.add.at(counts, (y_codes[known], codes[known, j]), w[known])
            self.category_count_.append(counts)
        self._alpha = alpha
        self._update()
        return self

    def _update(self):
        self.class_log_prior_ = class_log_prior(self.class_count_, self.fit_prior, self.class_prior)
        self.feature_log_prob_ = []
        for counts in self.category_count_:
            observed = counts.sum(axis=1, keepdims=True)             # N_{c,j}: rows with j known
            with np.errstate(divide="ignore", invalid="ignore"):
                log_theta = np.log(counts + self._alpha) - np.log(observed + self._alpha * counts.shape[1])
            self.feature_log_prob_.append(log_theta)

    # ------------------------------------------------------------- posteriors

    def joint_log_likelihood(self, X) -> np.ndarray:
        """log p(x, c) with every missing (or unseen) feature left out, shape (n, n_classes)."""
        self.check_fitted()
        codes = self._codes(X, fitting=False)
        jll = np.tile(self.class_log_prior_, (codes.shape[0], 1))
        for j, log_theta in enumerate(self.feature_log_prob_):
            known = codes[:, j] >= 0
            jll[known] += log_theta[:, codes[known, j]].T
        return jll
