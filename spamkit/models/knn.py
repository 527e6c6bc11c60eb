"""k-nearest-neighbour classification and regression over sparse vectors, explainable.

Sources: the course notes in ../shared/seeds (Libovický & Straka 2024, "k-NN":
uniform, inverse-distance and softmax weighting, regression as a weighted mean;
"Nearest Neighbors and Naive Bayes": Euclidean and Manhattan distances, distance-weighted
kNN); Manning, Raghavan & Schütze, *Introduction to IR* §14.3 (kNN text classification
with cosine similarity); Hart (1968), "The condensed nearest neighbor rule"; Wilson
(1972), "Asymptotic properties of nearest neighbor rules using edited data".

Training stores the rows, so a query costs one search (:mod:`spamkit.models.neighbours`,
exact, in bounded memory). A vote that ties between classes goes to the class first in
``classes_`` order (``predict`` is always the argmax of ``predict_proba``). Hart's
condensing (optionally after Wilson's editing) keeps only the prototypes the vote needs.
The neighbours (message ids, similarities, labels) explain each verdict.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from ..common import errors
from ..common.errors import ConfigError
from .base import Estimator, ProbabilisticClassifier, RegressorMixin
from .neighbours import NeighbourSearch


class KNNClassifier(NeighbourSearch, ProbabilisticClassifier):
    """k-nearest-neighbour classifier; ``predict_proba`` is the neighbours' weighted vote.

    Parameters
    ----------
    k : int, default 5
        Neighbours that vote (all stored rows vote if fewer are stored, e.g. after condensing).
    weights : {"uniform", "inverse", "softmax"}
        uniform: one vote each; inverse: ``1 / (distance + epsilon)`` (cosine distance is
        ``1 - similarity``); softmax: ``exp(similarity / tau)`` (for Lp metrics, similarity
        is ``-distance``).
    metric : {"cosine", "euclidean", "manhattan", "minkowski", "chebyshev", "hamming", "jaccard"}
        The notes' distances: cosine similarity; the Lp norms ``(Σ |x_j - x'_j|^p)^(1/p)``
        (euclidean p = 2, manhattan p = 1, minkowski any ``p`` >= 1, chebyshev p = ∞:
        ``max_j |x_j - x'_j|``); hamming: the number of features present in one row and not
        the other; jaccard: ``|x ∩ x'| / |x ∪ x'|`` (hamming and jaccard work on presence,
        non-zero = 1). Minkowski with p other than 1 and 2, and chebyshev, are computed
        densely over the columns a block of rows uses: exact, but slower on big vocabularies.
    p : float, default 2
        The exponent of ``metric="minkowski"`` (>= 1; ``float("inf")`` is Chebyshev's).
    feature_weights : array of one non-negative number per feature, optional
        The notes' weighted distance: ``(Σ_j w_j |x_j - x'_j|^p)^(1/p)`` (and ``Σ_j w_j [x_j != x'_j]``
        for hamming; cosine compares the weighted vectors).
    standardize : bool, default False
        Divide each feature by its standard deviation over the training rows before measuring.
    tau : float, default 0.1
        Softmax temperature.
    epsilon : float, default 1e-6
        Added to distances for inverse weighting; 0 gives exact matches all the weight.
    memory_limit : int or str, default "256M"
        Budget of the similarity blocks of one search.
    n_jobs : int, optional
        Threads over query blocks (default: up to 2).

    Examples
    --------
    Cosine similarity by hand: (1, 0) and (1, 1) have cos = 1/sqrt(2) ≈ 0.707.

    >>> knn = KNNClassifier(k=1).fit([[1, 1], [0, 1]], ["a", "b"])
    >>> idx, sim = knn.kneighbors([[1, 0]])
    >>> idx.tolist(), sim.round(3).tolist(), knn.predict([[1, 0]]).tolist()
    ([[0]], [[0.707]], ['a'])
    """


    def fit(self, X, y, ids=None):
        """Store the rows (prepared for the metric), their labels, and optional ids for explanations."""
        self.check_search_params()
        X, y = self._validate_Xy(X, y, reset=True)
        self.classes_, self.y_codes_ = np.unique(y, return_inverse=True)
        self._store(X)
        self.ids_ = None if ids is None else np.asarray([str(i) for i in ids], dtype=object)
        if self.ids_ is not None and len(self.ids_) != X.shape[0]:
            raise ConfigError(f"{len(self.ids_)} ids for {X.shape[0]} rows")
        return self

    def votes(self, scores, idx):
        w = self.neighbour_weights(scores)
        labels = self.y_codes_[idx]
        votes = np.zeros((scores.shape[0], len(self.classes_)))
        for c in range(len(self.classes_)):
            votes[:, c] = (w * (labels == c)).sum(axis=1)
        return votes, labels

    def predict_proba(self, X) -> np.ndarray:
        """Weighted class distribution of the k nearest neighbours."""
        self.check_fitted()
        scores, idx = self.search(X, self.k_for_vote())
        votes, _ = self.votes(scores, idx)
        total = votes.sum(axis=1, keepdims=True)
        total[total == 0] = 1.0
        return votes / total

    def predict_log_proba(self, X) -> np.ndarray:
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))

    def predict(self, X) -> np.ndarray:
        """The class with most weight; an exact tie goes to the class first in ``classes_``.

        This is ``argmax(predict_proba(X))``, so decisions made from the probabilities (the
        cost-based decision layer) and ``predict`` never disagree.
        """
        proba = self.predict_proba(X)
        return self.classes_[np.argmax(proba, axis=1)]

    def joint_log_likelihood(self, X):
        raise NotImplementedError("kNN has no likelihood; use predict_proba")

    def explain(self, x, n: int | None = None) -> list:
        """The neighbours behind a verdict: (id or index, similarity or distance, label, weight)."""
        idx, measure = self.kneighbors(x, n)
        scores, _ = self.search(x, n or self.k)
        w = self.neighbour_weights(scores)[0]
        out = []
        for j, m, wt in zip(idx[0], measure[0], w):
            ident = self.ids_[j] if self.ids_ is not None else int(j)
            out.append((ident, float(m), str(self.classes_[self.y_codes_[j]]), float(wt)))
        return out

    def condense(self, edit: bool = False, max_passes: int = 100) -> dict:
        """Keep only the prototypes needed (Hart's condensed nearest neighbour, 1-NN rule).

        Visits the training rows in order, keeping a row only if the rows kept so far
        misclassify it with 1-NN; passes repeat until one keeps nothing new. With ``edit``,
        rows that the full k-NN misclassifies are removed first (Wilson editing). Every
        remaining training row (``retained_rows_``) is then classified correctly by 1-NN over the
        prototypes. Returns counts before and after; the model keeps only the prototypes (use
        a small k with them: with k larger than the prototypes of a class, they are outvoted).
        """
        self.check_fitted()
        n0 = self.rows_.shape[0]
        keep = np.arange(n0)
        if edit:
            # Wilson: leave-one-out k-NN on the training set, drop what it gets wrong.
            scores, idx = self.search(self._fit_X_original(), min(self.k + 1, n0))
            own = idx == np.arange(n0)[:, None]
            # remove each row itself from its neighbour list (it is its own nearest)
            scores = np.where(own, -np.inf, scores)
            order = np.argsort(own, axis=1, kind="stable")[:, : min(self.k, n0 - 1)]
            s = np.take_along_axis(scores, order, axis=1)
            i = np.take_along_axis(idx, order, axis=1)
            votes, labels = self.votes(s, i)
            wrong = votes.argmax(axis=1) != self.y_codes_
            keep = np.flatnonzero(~wrong)
            if keep.size == 0:
                raise ConfigError("editing removed every training row; the data are too noisy for Wilson editing")
        self.retained_rows_ = keep                  # training rows left after editing
        X = self.rows_[keep]
        y = self.y_codes_[keep]
        n = len(keep)
        # For each row: the best (highest-score, then lowest-index) prototype so far.
        best_score = np.full(n, -np.inf)
        best_proto = np.full(n, n, dtype=np.int64)
        in_s = np.zeros(n, dtype=bool)
        sq = self._fit_sq[keep]

        def add(p):
            in_s[p] = True
            col = X[p]
            dots = (X @ col.T).toarray().ravel()
            if self.metric == "cosine":
                s = dots
            elif self.metric == "jaccard":
                union = sq + sq[p] - dots
                with np.errstate(invalid="ignore", divide="ignore"):
                    s = np.where(union > 0, dots / union, 1.0)
            elif self.metric == "euclidean":
                s = -np.sqrt(np.maximum(sq + sq[p] - 2 * dots, 0.0))
            else:                                   # the other distances: the search's own scores
                q_sq = np.asarray(col.multiply(col).sum(axis=1)).ravel()
                s = self._scores(col, q_sq, 0, self.rows_.shape[0])[0][keep]
            better = (s > best_score) | ((s == best_score) & (p < best_proto))
            best_score[better] = s[better]
            best_proto[better] = p

        add(0)
        passes = 0
        while passes < max_passes:
            passes += 1
            added = 0
            for row in range(n):
                if not in_s[row] and y[best_proto[row]] != y[row]:
                    add(row)
                    added += 1
            if added == 0:
                break
        protos = keep[np.flatnonzero(in_s)]
        self.set_rows(self.rows_[protos])
        self.y_codes_ = self.y_codes_[protos]
        if self.ids_ is not None:
            self.ids_ = self.ids_[protos]
        return {"n_before": int(n0), "n_edited": int(n0 - len(keep)), "n_after": int(len(protos)),
                "passes": passes}

    # ------------------------------------------------------------------ persistence (spamkit.filterfile.persist)

    def state_arrays(self) -> tuple[dict, dict]:
        """The stored rows (CSR arrays), their class codes, and the message ids as text."""
        X = self.rows_
        arrays = {"X_data": X.data, "X_indices": X.indices.astype(np.int64), "X_indptr": X.indptr.astype(np.int64),
                  "X_shape": np.asarray(X.shape, dtype=np.int64), "y": self.y_codes_.astype(np.int64)}
        if getattr(self, "scale_", None) is not None:
            arrays["scale_"] = self.scale_
        texts = {"ids": [str(i) for i in self.ids_]} if self.ids_ is not None else {}
        return arrays, texts

    def restore_state(self, classes, n_features: int, arrays: dict, texts: dict) -> None:
        self.check_search_params()
        self.classes_ = np.asarray(classes)
        shape = tuple(int(v) for v in arrays["X_shape"])
        X = sp.csr_matrix((arrays["X_data"], arrays["X_indices"], arrays["X_indptr"]), shape=shape)
        X.check_format(full_check=True)
        if shape[1] != n_features:
            raise ValueError(f"stored rows have {shape[1]} features, expected {n_features}")
        y = np.asarray(arrays["y"], dtype=np.int64)
        if y.shape != (shape[0],) or (len(y) and (y.min() < 0 or y.max() >= len(self.classes_))):
            raise ValueError("stored class codes do not match the stored rows and classes")
        self.y_codes_ = y
        self.scale_ = None
        if "scale_" in arrays:
            scale = np.asarray(arrays["scale_"], dtype=np.float64)
            if scale.shape != (n_features,) or not np.all(np.isfinite(scale)) or np.any(scale < 0):
                raise ValueError("the column factors (scale_) are damaged")
            self.scale_ = scale
        self.set_rows(X)
        ids = texts.get("ids")
        self.ids_ = np.asarray(ids, dtype=object) if ids is not None else None
        if self.ids_ is not None and len(self.ids_) != shape[0]:
            raise ValueError(f"{len(self.ids_)} ids for {shape[0]} stored rows")
        self.n_features_in_ = int(n_features)

    def _fit_X_original(self):
        # The stored rows are already prepared for the metric; preparing them again is a no-op
        # for cosine (unit rows) and jaccard (0/1 rows), and leaves Lp rows as they are -- once
        # the column factors are taken back out (zero-weight columns stay 0 either way).
        if getattr(self, "scale_", None) is None:
            return self.rows_
        inverse = np.divide(1.0, self.scale_, out=np.zeros_like(self.scale_), where=self.scale_ > 0)
        return sp.csr_matrix(self.rows_ @ sp.diags(inverse))


class KNNRegressor(NeighbourSearch, RegressorMixin, Estimator):
    """k-nearest-neighbour regression: the weighted mean of the neighbours' targets.

    Same parameters as :class:`KNNClassifier`.

    Examples
    --------
    >>> r = KNNRegressor(k=2, metric="euclidean").fit([[0.0], [1.0], [10.0]], [0.0, 2.0, 50.0])
    >>> r.predict([[0.4]]).tolist()
    [1.0]
    """


    def fit(self, X, y):
        self.check_search_params()
        from sklearn.utils.validation import validate_data

        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64, y_numeric=True)
        self._target = np.asarray(y, dtype=np.float64)
        self._store(sp.csr_matrix(X))
        return self

    def predict(self, X) -> np.ndarray:
        if not hasattr(self, "rows_"):
            raise errors.NotFittedError("this KNNRegressor is not fitted yet; call fit first")
        scores, idx = self.search(X, self.k)
        w = self.neighbour_weights(scores)
        t = self._target[idx]
        return (w * t).sum(axis=1) / w.sum(axis=1)
