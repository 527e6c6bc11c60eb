"""Models whose whole training is a table of counts: multinomial and Bernoulli Naive Bayes,
Robinson/Fisher, and the Fisher + NB stack.

What such a model learns from labelled rows X (n x D) with class codes c_i and weights w_i
is two arrays,

    class_count_[c]      = Σ_{i: c_i = c} w_i                 (messages of class c)
    feature_count_[c, j] = Σ_{i: c_i = c} w_i x_ij            (occurrences, or documents
                                                                containing j, of class c)

and everything it predicts is derived from them. Counting is a sum over rows, so training
on the whole corpus, in batches (:meth:`CountingModel.partial_fit`), or on parts counted
elsewhere and added (:meth:`CountingModel.add_counts`, :meth:`CountingModel.from_counts`:
the Dask engine's workers count partitions, the driver adds the tables) gives the same
arrays; and a message learned before can be taken out again exactly
(:meth:`CountingModel.unlearn`) -- the correction ``spamkit learn`` makes when a user
re-files a message. scikit-learn's ``sklearn/naive_bayes.py`` (``_BaseDiscreteNB._count``)
keeps the same two arrays under the same names.

A subclass says what is counted (:meth:`CountingModel.counted`: raw counts, presence,
binarized values) and re-derives its estimates in :meth:`CountingModel.counts_changed`.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..common.errors import ConfigError
from .base import ProbabilisticClassifier, check_sample_weight


class CountingModel(ProbabilisticClassifier):
    """Base of the counting models: ``fit``, ``partial_fit``, ``unlearn``, the state a filter file
    keeps, and building a model from count tables.

    Attributes
    ----------
    classes_ : ndarray (n_classes,)
    class_count_ : ndarray (n_classes,)
        Weighted messages learned per class.
    feature_count_ : ndarray (n_classes, n_features)
        Weighted sum of each feature's values per class (what :meth:`counted` gives).
    feature_total_ : ndarray (n_classes,)
        ``feature_count_.sum(axis=1)``, kept up to date without summing D columns per message.
    """

    #: the number of classes the model is defined for (None: any number, at least one)
    n_classes_required: int | None = None
    #: whether ``sample_weight`` is accepted
    takes_sample_weight = True

    # ------------------------------------------------------------- hooks

    def counted(self, X):
        """The values counted for rows X (validated CSR): the rows themselves by default."""
        return X

    def counts_changed(self) -> None:
        """Re-derive the estimates from the counts (called after every change)."""

    def check_params(self):
        """Refuse bad hyper-parameters before anything is counted."""

    # ------------------------------------------------------------- counting

    def _start_counts(self, classes, n_features: int) -> None:
        classes = np.unique(np.asarray(classes))
        if self.n_classes_required is not None and len(classes) != self.n_classes_required:
            how_many = {2: "two"}.get(self.n_classes_required, str(self.n_classes_required))
            # (scikit-learn's wording first, for more classes than a two-class model separates)
            binary = "Only binary classification is supported: " if self.n_classes_required == 2 < len(classes) else ""
            raise ValueError(f"{binary}{type(self).__name__} is a {how_many}-class model; got "
                             f"{len(classes)} class(es) {classes.tolist()}")
        self.classes_ = classes
        self.class_count_ = np.zeros(len(classes), dtype=np.float64)
        self.feature_count_ = np.zeros((len(classes), n_features), dtype=np.float64)
        self.feature_total_ = np.zeros(len(classes), dtype=np.float64)

    def _weights(self, sample_weight, n: int) -> np.ndarray:
        if sample_weight is not None and not self.takes_sample_weight:
            raise ConfigError(f"{type(self).__name__} does not take sample weights")
        return check_sample_weight(sample_weight, n)

    def count_rows(self, X, codes: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(class counts, feature counts)`` of rows X (as :meth:`counted` gives them) with class
        codes and weights: ``(Σ w_i [c_i = c], Σ w_i x_ij [c_i = c])``.

        One sparse product ``(X^T Y)^T`` with the small dense one-hot Y (n x C): X^T of a CSR
        matrix is a CSC view of the same arrays, so nothing is copied.
        """
        n_classes = len(self.classes_)
        Y = sp.csr_matrix((weights, codes, np.arange(len(codes) + 1)), shape=(len(codes), n_classes)).toarray()
        return Y.sum(axis=0), np.asarray(X.T @ Y).T

    def add_counts(self, class_count, feature_count) -> "CountingModel":
        """Add a count table (of the same classes and columns: counted elsewhere, e.g. by a worker)."""
        self.check_fitted()
        class_count = np.asarray(class_count, dtype=np.float64)
        feature_count = np.asarray(feature_count, dtype=np.float64)
        if class_count.shape != self.class_count_.shape or feature_count.shape != self.feature_count_.shape:
            raise ValueError(f"count tables of shapes {class_count.shape} and {feature_count.shape} do not match "
                             f"the model's {self.class_count_.shape} and {self.feature_count_.shape}")
        self.class_count_ += class_count
        self.feature_count_ += feature_count
        self.feature_total_ = self.feature_count_.sum(axis=1)
        self.counts_changed()
        return self

    @classmethod
    def from_counts(cls, classes, class_count, feature_count, **params) -> "CountingModel":
        """A fitted model whose counts are the given tables (what :meth:`fit` would have counted).

        >>> from spamkit.models import MultinomialNB
        >>> m = MultinomialNB.from_counts(["ham", "spam"], [2, 1], [[3, 0], [0, 4]])
        >>> m.predict(np.array([[0, 2]])).tolist()
        ['spam']
        """
        model = cls(**params)
        model.check_params()
        classes = np.asarray(classes)
        model.restore_state(classes, np.asarray(feature_count).shape[1],
                            {"class_count_": np.asarray(class_count, dtype=np.float64),
                             "feature_count_": np.asarray(feature_count, dtype=np.float64)}, {})
        return model

    def fit(self, X, y, sample_weight=None):
        """Count from scratch; returns ``self``."""
        self.check_params()
        X, y = self._validate_Xy(X, y, reset=True)
        self._start_counts(y, X.shape[1])               # the classes are checked before the values
        X = self.counted(X)
        class_count, feature_count = self.count_rows(X, self.class_codes(y), self._weights(sample_weight, X.shape[0]))
        self.class_count_ += class_count
        self.feature_count_ += feature_count
        self.feature_total_ = self.feature_count_.sum(axis=1)
        self.counts_changed()
        return self

    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """Add the counts of a batch (``classes`` is required on the first call): fitting in
        batches equals fitting at once. Touches only the batch's non-zeros, O(nnz)."""
        self.check_params()
        first = self.first_partial_fit(classes)
        X, y = self._validate_Xy(X, y, reset=first)
        X = self.counted(X)
        if not sp.issparse(X):
            X = sp.csr_matrix(X)
        if first:
            self._start_counts(classes, X.shape[1])
        codes = self.class_codes(y)
        weights = self._weights(sample_weight, X.shape[0])
        rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
        values = X.data * weights[rows]
        np.add.at(self.class_count_, codes, weights)
        np.add.at(self.feature_count_, (codes[rows], X.indices), values)
        np.add.at(self.feature_total_, codes[rows], values)
        self.counts_changed()
        return self

    def unlearn(self, X, y, sample_weight=None):
        """Remove messages learned before: their counts are subtracted, exactly (integer counts).

        Refuses, leaving the model as it was, when a count would go negative (a message that
        was never learned with that label).
        """
        self.check_fitted()
        X, y = self._validate_Xy(X, y, reset=False)
        X = self.counted(X)
        class_delta, feature_delta = self.count_rows(X, self.class_codes(y), self._weights(sample_weight, X.shape[0]))
        if (self.class_count_ - class_delta < 0).any() or (self.feature_count_ - feature_delta < -1e-9).any():
            raise ConfigError("cannot unlearn messages that were never learned (counts would go negative)")
        self.class_count_ -= class_delta
        self.feature_count_ -= feature_delta
        self.feature_total_ = self.feature_count_.sum(axis=1)
        self.counts_changed()
        return self

    # ------------------------------------------------------------- persistence (spamkit.filterfile.persist)

    def state_arrays(self) -> tuple[dict, dict]:
        """Learned arrays (and text lists) a filter file stores: the counts; the rest is derived."""
        return {"class_count_": self.class_count_, "feature_count_": self.feature_count_}, {}

    def restore_state(self, classes, n_features: int, arrays: dict, texts: dict) -> None:
        self.classes_ = np.asarray(classes)
        self.class_count_ = np.asarray(arrays["class_count_"], dtype=np.float64)
        self.feature_count_ = np.asarray(arrays["feature_count_"], dtype=np.float64)
        n_classes = self.n_classes_required or len(self.classes_)
        if (self.classes_.shape != (n_classes,) or self.class_count_.shape != (n_classes,)
                or self.feature_count_.shape != (n_classes, n_features)):
            raise ValueError(f"feature counts have shape {self.feature_count_.shape}, expected "
                             f"({n_classes}, {n_features})")
        # a caller that keeps the totals (the stack, per scored message) passes them along
        self.feature_total_ = (np.asarray(arrays["feature_total_"], dtype=np.float64) if "feature_total_" in arrays
                               else self.feature_count_.sum(axis=1))
        self.n_features_in_ = int(n_features)
        self.counts_changed()
