"""Exact nearest-neighbour search over sparse vectors: blocked, bounded memory, two threads.

The search engine behind :mod:`spamkit.models.knn` (the classifier, its condensing, the
regressor): :class:`NeighbourSearch` stores rows (L2-normalised once for cosine) and
finds each query's k best rows, and :class:`CosineIndex` does it for cosine.

Search is exact: queries and training rows are cut into blocks whose
similarity matrix fits the memory budget; each block keeps its top k and the blocks'
candidates are merged. Two threads share the query blocks.

Cosine search (the default metric) goes through a :class:`~spamkit.models.cosine.CosineIndex`
(frequent terms dense, the rest sparse, candidates pruned by a rigorous bound), so scores,
and therefore ties, do not depend on block sizes, threads or BLAS kernels.

Neighbour order is fixed: higher similarity (or smaller distance) first, and among
equal ones the lower training index first, whatever the block sizes.

One concern: exact blocked search and its scheduling; the cosine index and its candidate
pruning are :mod:`spamkit.models.cosine`.
"""

from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.sparse as sp
from threadpoolctl import threadpool_limits
from ..common import errors
from ..common.errors import ConfigError, check_choice
from ..common.names import METRICS, WEIGHTS
from .base import is_plain_csr, unit_rows
from .cosine import CosineIndex, sparse_dense_product
from typing import Any

#: default memory budget of one search, in bytes
DEFAULT_MEMORY = 256 * 2 ** 20


def _binary(X: sp.csr_matrix) -> sp.csr_matrix:
    X = sp.csr_matrix(X, dtype=np.float64, copy=True)
    X.data = (X.data != 0).astype(np.float64)
    X.eliminate_zeros()
    return X


def parse_memory(value) -> int:
    """Bytes from ``"256M"``, ``"2G"``, ``"64k"`` or a number.

    >>> parse_memory("256M"), parse_memory("1.5G"), parse_memory(100000)
    (268435456, 1610612736, 100000)
    """
    if isinstance(value, (int, np.integer)):
        n = int(value)
    else:
        text = str(value).strip().upper().removesuffix("B")
        units = {"K": 2 ** 10, "M": 2 ** 20, "G": 2 ** 30}
        try:
            n = int(float(text[:-1]) * units[text[-1]]) if text and text[-1] in units else int(float(text))
        except ValueError:
            raise ConfigError(f"memory limit {value!r} is not a size like 256M or 2G") from None
    if n < 2 ** 16:
        raise ConfigError(f"memory limit {value!r} is too small (at least 64K)")
    return n


class NeighbourSearch:
    """Exact top-k search over stored rows, shared by the classifier and the regressor."""

    def __init__(self, k=5, weights="uniform", metric="cosine", tau=0.1, epsilon=1e-6,
                 memory_limit="256M", n_jobs=None, p=2.0, feature_weights=None, standardize=False):
        self.k = k
        self.weights = weights
        self.metric = metric
        self.tau = tau
        self.epsilon = epsilon
        self.memory_limit = memory_limit
        self.n_jobs = n_jobs
        self.p = p
        self.feature_weights = feature_weights
        self.standardize = standardize

    sklearn_tag_settings = {"input_tags.sparse": True}

    def check_search_params(self):
        check_choice(self.metric, METRICS, "metric")
        if not isinstance(self.k, (int, np.integer)) or self.k < 1:
            raise ConfigError(f"k must be a positive integer, got {self.k!r}")
        check_choice(self.weights, WEIGHTS, "weights")
        if not float(self.tau) > 0:
            raise ConfigError(f"tau must be > 0, got {self.tau!r}")
        if not float(self.epsilon) >= 0:
            raise ConfigError(f"epsilon must be >= 0, got {self.epsilon!r}")
        try:
            p = float(self.p)
        except (TypeError, ValueError):
            p = float("nan")
        if not p >= 1:
            raise ConfigError(f"p (the Minkowski exponent) must be a number >= 1 or inf, got {self.p!r}")
        if self.metric == "jaccard" and (self.feature_weights is not None or self.standardize):
            raise ConfigError("jaccard compares sets of present features: feature weights and standardising do not apply")
        if self.metric == "hamming" and self.standardize:
            raise ConfigError("hamming counts features present in one row and not the other: standardising does "
                              "not apply (feature weights do)")
        if self.feature_weights is not None:
            w = np.asarray(self.feature_weights, dtype=np.float64)
            if w.ndim != 1 or not np.all(np.isfinite(w)) or np.any(w < 0):
                raise ConfigError("feature_weights must be one finite, non-negative number per feature")
        self.memory_bytes_ = parse_memory(self.memory_limit)

    def _prepare(self, X) -> sp.csr_matrix:
        """Rows as stored for the metric: unit length (cosine), 0/1 (jaccard, hamming), as given (Lp);
        each column multiplied by :attr:`scale_` first (feature weights, standardising)."""
        X = sp.csr_matrix(X, dtype=np.float64)
        if self.metric in ("jaccard", "hamming"):
            X = _binary(X)
        scale = getattr(self, "scale_", None)
        if scale is not None:
            X = sp.csr_matrix(X @ sp.diags(scale))
        if self.metric == "cosine":
            return unit_rows(X)
        return X

    def fit_scale(self, X) -> None:
        """The column factors the distance uses (``scale_``; None: all 1), from the training rows.

        The notes' weighted distance ``(Σ_j w_j |x_j - x'_j|^p)^(1/p)`` is the plain Lp distance
        of columns multiplied by ``w_j^(1/p)`` (by ``w_j`` for p = ∞; by ``sqrt(w_j)`` for the
        Hamming count ``Σ_j w_j [x_j != x'_j]``, which is computed from products of 0/1 rows);
        standardising divides column j by its standard deviation over the training rows (zeros
        included; a constant column is left alone), so that no feature dominates by its scale.
        Centring would change nothing: an Lp distance does not move with a shift.
        """
        self.scale_ = None
        if self.feature_weights is None and not self.standardize:
            return
        d = X.shape[1]
        scale = np.ones(d)
        if self.feature_weights is not None:
            w = np.asarray(self.feature_weights, dtype=np.float64)
            if w.shape != (d,):
                raise ConfigError(f"{len(w)} feature weights for {d} features")
            p = 2.0 if self.metric == "hamming" else (self._lp() or 1.0)
            scale *= w if math.isinf(p) else w ** (1.0 / p)
        if self.standardize:
            X = sp.csr_matrix(X, dtype=np.float64)
            mean = np.asarray(X.mean(axis=0)).ravel()
            sd = np.sqrt(np.maximum(np.asarray(X.multiply(X).mean(axis=0)).ravel() - mean ** 2, 0.0))
            varies = sd > 0
            scale[varies] /= sd[varies]
        self.scale_ = scale

    def _lp(self) -> float | None:
        """The exponent of an Lp metric (inf for Chebyshev), None for the others."""
        return {"euclidean": 2.0, "manhattan": 1.0, "chebyshev": math.inf,
                "minkowski": float(self.p)}.get(self.metric)

    def _store(self, X):
        self.fit_scale(sp.csr_matrix(X, dtype=np.float64))
        self.set_rows(self._prepare(X))

    def set_rows(self, X: sp.csr_matrix):
        """Keep prepared rows and build the search structure over them.

        Cosine: a :class:`CosineIndex`; other metrics: the rows transposed, so products
        ``Q @ X^T`` need no transposing per query.
        """
        X.sort_indices()
        self.rows_ = X
        # per-row quantities the metrics need: squared norms (euclidean), sizes (jaccard)
        self._fit_sq = np.asarray(X.multiply(X).sum(axis=1)).ravel()
        #: the cosine search's index, or the training rows transposed (the other metrics)
        self.index_: Any = CosineIndex(X, self.memory_bytes_) if self.metric == "cosine" else X.T.tocsr()

    # ------------------------------------------------------------------ scores

    def _scores(self, Q: sp.csr_matrix, q_sq: np.ndarray, lo: int, hi: int, out=None) -> np.ndarray:
        """Dense (n_queries, hi - lo) block of scores, higher = nearer (written into ``out`` if given)."""
        XT = self.index_[:, lo:hi] if (lo, hi) != (0, self.rows_.shape[0]) else self.index_
        p = self._lp()
        if p == 1.0:
            from sklearn.metrics.pairwise import manhattan_distances
            return -manhattan_distances(Q, self.rows_[lo:hi])
        if p is not None and p != 2.0:
            # any other p, and p = inf (Chebyshev): no product form, so the block is made dense
            # over the columns its rows use (the others add |0 - 0| = 0) and measured exactly
            from scipy.spatial.distance import cdist
            X = self.rows_[lo:hi]
            cols = np.union1d(Q.indices, X.indices)
            if not len(cols):
                return np.zeros((Q.shape[0], hi - lo))
            kind = ("chebyshev",) if math.isinf(p) else ("minkowski",)
            extra = {} if math.isinf(p) else {"p": p}
            return -cdist(Q[:, cols].toarray(), X[:, cols].toarray(), *kind, **extra)
        dots = sparse_dense_product(Q, XT, out=out)
        if self.metric == "cosine":
            return dots
        if self.metric == "jaccard":
            union = q_sq[:, None] + self._fit_sq[None, lo:hi] - dots
            with np.errstate(invalid="ignore", divide="ignore"):
                return np.where(union > 0, dots / union, 1.0)   # two empty sets are identical
        if self.metric == "hamming":
            # 0/1 rows: the features present in one and not the other, |q| + |x| - 2 |q ∩ x|
            return -(q_sq[:, None] + self._fit_sq[None, lo:hi] - 2.0 * dots)
        # euclidean: ||q - x||^2 = ||q||^2 + ||x||^2 - 2 q.x  (clipped: rounding can go below 0)
        sq = np.maximum(q_sq[:, None] + self._fit_sq[None, lo:hi] - 2.0 * dots, 0.0)
        return -np.sqrt(sq)

    def _block_sizes(self, n_queries: int, n_train: int, k: int) -> tuple[int, int]:
        """Rows of queries and of training data per block, from the memory budget.

        A block of scores costs about three float64 copies (the product, derived scores,
        comparisons): 24 bytes an entry, and each thread has its own block. Query blocks are
        also kept small enough that every thread gets several: while one thread computes a
        product (which holds the GIL), the other partitions its block (which releases it).
        """
        per_thread = self.memory_bytes_ // (24 * self._n_threads)
        train_block = max(k, min(n_train, per_thread // 64))
        query_block = max(1, min(n_queries, per_thread // max(train_block, 1)))
        if self._n_threads > 1:
            query_block = min(query_block, max(64, math.ceil(n_queries / (4 * self._n_threads))))
        return query_block, train_block

    @property
    def _n_threads(self) -> int:
        n = self.n_jobs if self.n_jobs not in (None, 0) else min(2, os.cpu_count() or 1)
        return max(1, int(n if n > 0 else os.cpu_count() or 1))

    @staticmethod
    def _top_k(scores: np.ndarray, offset: int, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Top k of each row of a block as (scores, global indices), exact with ties.

        argpartition finds the k-th best value; rows where more entries equal it than fit
        are resolved by the lower index, so the result does not depend on block sizes.
        """
        n = scores.shape[1]
        if k >= n:
            idx = np.broadcast_to(np.arange(n), scores.shape).copy()
            return scores.copy(), idx + offset
        part = np.argpartition(scores, n - k, axis=1)[:, n - k:]
        top = np.take_along_axis(scores, part, axis=1)
        kth = top.min(axis=1)
        ambiguous = np.flatnonzero(np.count_nonzero(scores >= kth[:, None], axis=1) > k)
        for r in ambiguous:                             # ties at the boundary: lowest index wins
            cand = np.flatnonzero(scores[r] >= kth[r])
            order = np.lexsort((cand, -scores[r, cand]))[:k]
            part[r] = cand[order]
            top[r] = scores[r, part[r]]
        return top, part + offset

    @staticmethod
    def merge(a_s, a_i, b_s, b_i, k):
        s = np.concatenate([a_s, b_s], axis=1)
        i = np.concatenate([a_i, b_i], axis=1)
        order = np.lexsort((i, -s), axis=1)[:, :k]
        return np.take_along_axis(s, order, axis=1), np.take_along_axis(i, order, axis=1)

    def _search_block(self, Q: sp.csr_matrix, k: int, train_block: int):
        n_train = self.rows_.shape[0]
        cosine = self.metric == "cosine"
        if cosine:
            query = self.index_.split(Q)
        else:
            q_sq = np.asarray(Q.multiply(Q).sum(axis=1)).ravel()
        best_s = best_i = None
        buffer = np.empty((Q.shape[0], min(train_block, n_train)))    # reused for every train block
        for lo in range(0, n_train, train_block):
            hi = min(n_train, lo + train_block)
            out = buffer[:, : hi - lo] if hi - lo == buffer.shape[1] else None
            if cosine:
                s, i = self.index_.block(query, lo, hi, k, out)
            else:
                s, i = self._top_k(self._scores(Q, q_sq, lo, hi, out), lo, min(k, hi - lo))
            if best_s is None:
                best_s, best_i = s, i
            else:
                best_s, best_i = self.merge(best_s, best_i, s, i, k)
        assert best_s is not None and best_i is not None   # n_train >= 1: one block at least
        order = np.lexsort((best_i, -best_s), axis=1)      # final order: nearest first, then index
        return np.take_along_axis(best_s, order, axis=1), np.take_along_axis(best_i, order, axis=1)

    def search(self, X, k: int):
        """(scores, indices) of the k nearest stored rows for every row of X."""
        if not hasattr(self, "rows_"):
            raise errors.NotFittedError(f"this {type(self).__name__} is not fitted yet; call fit first")
        n_train = self.rows_.shape[0]
        if k > n_train:
            raise ConfigError(f"k={k} is larger than the {n_train} stored training rows")
        Q = self._prepare(self.check_query(X))
        query_block, train_block = self._block_sizes(Q.shape[0], n_train, k)
        starts = list(range(0, Q.shape[0], query_block))
        jobs = [Q[a:a + query_block] for a in starts]
        if self._n_threads > 1 and len(jobs) > 1:
            # our threads share the query blocks; BLAS inside each stays on one thread
            with threadpool_limits(1, user_api="blas"), ThreadPoolExecutor(self._n_threads) as pool:
                parts = list(pool.map(lambda q: self._search_block(q, k, train_block), jobs))
        else:
            parts = [self._search_block(q, k, train_block) for q in jobs]
        if not parts:
            return np.zeros((0, k)), np.zeros((0, k), dtype=np.int64)
        return np.vstack([p[0] for p in parts]), np.vstack([p[1] for p in parts])

    def check_query(self, X):
        if is_plain_csr(X, self.n_features_in_):  # spamkit's own matrices: no general validation
            return X
        from sklearn.utils.validation import validate_data

        X = validate_data(self, X, accept_sparse="csr", reset=False, dtype=np.float64)
        return sp.csr_matrix(X)

    # ------------------------------------------------------------------ weights

    def _distances(self, scores: np.ndarray) -> np.ndarray:
        """Scores back to distances: 1 - similarity (cosine, jaccard), or the Lp distance."""
        return 1.0 - scores if self.metric in ("cosine", "jaccard") else -scores

    def k_for_vote(self) -> int:
        """k, or every stored row when fewer are stored (after condensing, say)."""
        return min(int(self.k), self.rows_.shape[0])

    def neighbour_weights(self, scores: np.ndarray) -> np.ndarray:
        if self.weights == "uniform":
            return np.ones_like(scores)
        if self.weights == "softmax":
            # w ∝ exp(similarity / tau); for Lp metrics the similarity is -distance.
            z = scores / float(self.tau)
            return np.exp(z - z.max(axis=1, keepdims=True))
        dist = np.maximum(self._distances(scores), 0.0)
        eps = float(self.epsilon)
        if eps > 0:
            return 1.0 / (dist + eps)
        # epsilon = 0: 1/d, and a row with exact matches (d = 0) gives them all the weight,
        # as scikit-learn's weights="distance" does.
        with np.errstate(divide="ignore"):
            w = 1.0 / dist
        exact = dist == 0
        rows = exact.any(axis=1)
        w[rows] = exact[rows].astype(np.float64)
        return w

    def kneighbors(self, X, k: int | None = None):
        """The k nearest stored rows of each row of X.

        Returns ``(indices, measure)``, both (n_queries, k), nearest first: the similarity for
        cosine and jaccard, the distance for euclidean and manhattan.
        """
        scores, idx = self.search(X, self.k if k is None else int(k))
        measure = scores if self.metric in ("cosine", "jaccard") else -scores
        return idx, measure
