"""The cosine index of exact nearest-neighbour search: unit rows stored with their frequent
terms dense and the rest sparse, and each block's exact top k found without sorting it.

Takes L2-normalised CSR rows (stored, and blocks of queries) and gives, for each query of a
block, its k best stored rows by cosine similarity with their scores; the search that cuts
queries and stored rows into blocks and merges their candidates is
:mod:`spamkit.models.neighbours`.

The vocabulary is split in two: the few terms found in a quarter or more of the stored rows,
which make most of the work of a sparse product (a term in a fraction p of the queries and of
the stored rows costs p² of all pairs), go through a dense BLAS product; the rest through a
sparse product. The top k of a block is then found without sorting or partitioning the whole
block: the maxima of column groups give a lower bound on each row's k-th score, only entries
above that bound (minus a rigorous rounding margin) are candidates, and the candidates'
similarities are recomputed in one fixed order, so scores, and therefore ties, do not depend
on block sizes, threads or BLAS kernels.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def sparse_dense_product(A: sp.csr_matrix, B, out=None) -> np.ndarray:
    """A @ B (both sparse) as a dense array, written into ``out`` if given: scikit-learn's
    ``sparse_matmul_to_dense`` (>= 1.7; about 3x scipy's product then ``toarray``), imported on
    the first search so that loading a filter does not import scikit-learn."""
    try:
        from sklearn.utils.sparsefuncs import sparse_matmul_to_dense
    except ImportError:  # pragma: no cover - older scikit-learn
        dense = (A @ B).toarray()
        if out is None:
            return dense
        out[...] = dense
        return out
    return sparse_matmul_to_dense(A, B, out=out)


class CosineIndex:
    """Unit rows stored for cosine search: frequent terms dense, the other terms sparse.

    A sparse-by-sparse product costs one multiply-add per (query, stored row, shared
    term); a term present in a fraction p of both sides costs p² of all pairs, so the
    handful of terms in many messages make most of the work (on Enron and TREC, the
    100 most frequent terms are about 80% of it). For those terms a dense matrix
    product is far cheaper per multiply-add (BLAS, about 20x on the benchmark machine),
    and it pays once p² exceeds about 1/20: terms in at least ``DENSE_SHARE`` (a quarter)
    of the stored rows go dense, as many as a quarter of the memory budget allows.

    ``candidates`` is the exact block search. With A the block's similarities from the
    two products and S the same similarities recomputed for single pairs in one fixed
    order (sparse part as the sparse product sums it, then the dense terms one by one),
    ``|A - S| <= delta``: both are sums of at most F + 1 rounded products whose true sum
    of magnitudes is at most ||q|| ||x|| <= 1 (Higham, *Accuracy and Stability of
    Numerical Algorithms*, §3.1: error <= gamma_n * sum |q_i x_i|). If L is at most the
    k-th largest A of a row, the k-th largest S is at least L - delta, so every entry of
    the true top k (ties included) has A >= L - 2 delta. L is the k-th largest of the
    maxima of k or more disjoint column groups (each group max is an entry, so at least
    k entries reach it). Only those candidates are rescored and ordered.
    """

    DENSE_SHARE = 0.25
    GROUP = 16

    def __init__(self, X: sp.csr_matrix, memory: int, dense_cols: np.ndarray | None = None):
        """``dense_cols`` imposes the split (a shard of a bigger index uses the whole index's)."""
        n = X.shape[0]
        if dense_cols is not None:
            dense = np.asarray(dense_cols, dtype=np.int64)
        else:
            df = np.bincount(X.indices, minlength=X.shape[1])
            dense = np.flatnonzero(df >= max(1.0, self.DENSE_SHARE * n))
            max_cols = memory // (4 * 8 * max(n, 1))
            if len(dense) > max_cols:                   # keep the most frequent that fit the budget
                dense = np.sort(dense[np.argsort(-df[dense], kind="stable")[:max_cols]])
        self.is_dense = np.zeros(X.shape[1], dtype=bool)
        self.is_dense[dense] = True
        self.dense_cols = dense
        self.rare_T = self._drop(X, self.is_dense).T.tocsr()
        self.dense_T = np.ascontiguousarray(X[:, dense].toarray().T)      # (F, n_stored)
        # |A - S| <= 2 gamma_{F+1} + rounding of one sum; a factor 4 to spare
        self.delta = (len(dense) + 8) * 2.0 ** -50

    @staticmethod
    def _drop(X: sp.csr_matrix, columns: np.ndarray) -> sp.csr_matrix:
        keep = ~columns[X.indices]
        indptr = np.concatenate([[0], np.cumsum(keep)])[X.indptr]      # kept entries before each row
        return sp.csr_matrix((X.data[keep], X.indices[keep], indptr), shape=X.shape)

    def split(self, Q: sp.csr_matrix):
        """A block of unit query rows as (sparse rare part, dense frequent part transposed)."""
        return self._drop(Q, self.is_dense), np.ascontiguousarray(Q[:, self.dense_cols].toarray().T)

    def block(self, query, lo: int, hi: int, k: int, out=None):
        """Exact top min(k, hi - lo) of the stored rows lo:hi for each query row.

        Returns (scores, global indices), each row ordered by score descending, then index.
        """
        Qr, QdT = query
        Xd = self.dense_T[:, lo:hi]
        R = sparse_dense_product(Qr, self.rare_T[:, lo:hi], out=out)
        A = QdT.T @ Xd if len(self.dense_cols) else R.copy()
        if len(self.dense_cols):
            A += R
        rows, cols = self._candidates(A, k)
        s = R[rows, cols]                              # one fixed order: sparse part, then each dense term
        for j in range(QdT.shape[0]):
            s += QdT[j, rows] * Xd[j, cols]
        return self._select(s, rows, cols + lo, A.shape[0], min(k, A.shape[1]))

    def _candidates(self, A: np.ndarray, k: int):
        b, m = A.shape
        if k >= m:
            return np.repeat(np.arange(b), m), np.tile(np.arange(m), b)
        g = self.GROUP
        n_groups = m // g
        margin = 2 * self.delta
        if n_groups < k:                             # too few groups for the bound: the k-th score itself
            lower = np.partition(A, m - k, axis=1)[:, m - k] - margin
            return np.nonzero(A >= lower[:, None])
        # group j = columns j, j + n_groups, ...: an elementwise maximum of g contiguous slices
        maxima = A[:, : n_groups * g].reshape(b, g, n_groups).max(axis=1)
        lower = np.partition(maxima, n_groups - k, axis=1)[:, n_groups - k] - margin
        gr, gj = np.nonzero(maxima >= lower[:, None])
        rows = np.repeat(gr, g)
        cols = (gj[:, None] + n_groups * np.arange(g)).ravel()
        hit = A[rows, cols] >= lower[rows]
        rows, cols = rows[hit], cols[hit]
        if m > n_groups * g:                         # the columns left over after the groups
            tr, tc = np.nonzero(A[:, n_groups * g:] >= lower[:, None])
            rows = np.concatenate([rows, tr])
            cols = np.concatenate([cols, tc + n_groups * g])
        return rows, cols

    @staticmethod
    def _select(s, rows, cols, b: int, k: int):
        """Per row: the k best candidates, higher score first, then lower index."""
        order = np.lexsort((cols, -s, rows))
        rows, cols, s = rows[order], cols[order], s[order]
        start = np.searchsorted(rows, np.arange(b))
        rank = np.arange(len(rows)) - start[rows]
        keep = rank < k
        return s[keep].reshape(b, k), cols[keep].reshape(b, k)
