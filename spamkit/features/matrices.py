"""Sparse matrices measured and scaled: how many marked columns each row holds, the information
gain of each column's presence about the class, rows scaled to unit length.

Takes CSR matrices (and per-class document frequencies) and gives arrays or a new matrix; the
vectorizer (:mod:`spamkit.features.vectorizer`) selects and represents with them, the
familiarity guard counts known tokens with :func:`columns_per_row`.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def columns_per_row(X, marked) -> np.ndarray:
    """For each row of a CSR matrix, how many of its non-zero columns are marked (``marked``: one
    0/1 or boolean per column).

    >>> columns_per_row(sp.csr_matrix([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]]), [True, True, False]).tolist()
    [1.0, 1.0]
    """
    # rows a block at a time, one byte per non-zero: a row index and a weight per non-zero
    # (16 bytes, or 8 for reduceat's cast of the whole matrix) were the peak of training
    marked = np.asarray(marked, dtype=bool)
    indptr = np.asarray(X.indptr, dtype=np.int64)
    out = np.zeros(X.shape[0])
    nonempty = np.flatnonzero(indptr[1:] > indptr[:-1])
    step = max(1, len(nonempty) * (1 << 16) // max(int(indptr[-1]), 1))     # about 64 Ki non-zeros a block
    for a in range(0, len(nonempty), step):
        rows = nonempty[a:a + step]
        lo, hi = int(indptr[rows[0]]), int(indptr[rows[-1] + 1])
        flags = marked[X.indices[lo:hi]]
        out[rows] = np.add.reduceat(flags, indptr[rows] - lo, dtype=np.int64)
    return out


def information_gain(df_per_class: np.ndarray, class_counts: np.ndarray) -> np.ndarray:
    """Information gain (bits) of each term's presence about the class.

    ``IG(t) = sum_c sum_{e in {t, not t}} P(e, c) log2(P(e, c) / (P(e) P(c)))``,
    the mutual information between "document contains t" and the class, with
    ``0 log 0 = 0`` (Yang & Pedersen 1997; used for attribute selection by
    Metsis, Androutsopoulos & Paliouras 2006).

    Parameters
    ----------
    df_per_class : array (n_features, n_classes)
        Documents of each class containing each term.
    class_counts : array (n_classes,)
        Documents of each class.

    Examples
    --------
    A term in every spam and no ham carries the whole class entropy (1 bit when
    the classes are balanced); a term spread evenly carries nothing:

    >>> information_gain(np.array([[0, 5], [2, 2]]), np.array([5, 5])).round(6).tolist()
    [1.0, 0.0]
    """
    df = np.asarray(df_per_class, dtype=np.float64)
    nc = np.asarray(class_counts, dtype=np.float64)
    n = nc.sum()
    p_c = nc / n                                           # (C,)
    joint_t = df / n                                       # P(t, c)
    joint_not = (nc[None, :] - df) / n                     # P(not t, c)
    p_t = joint_t.sum(axis=1, keepdims=True)               # P(t)
    p_not = 1.0 - p_t
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(joint_t > 0, joint_t * np.log2(joint_t / (p_t * p_c)), 0.0)
        b = np.where(joint_not > 0, joint_not * np.log2(joint_not / (p_not * p_c)), 0.0)
    return np.maximum((a + b).sum(axis=1), 0.0)


def l2_normalize_rows(X: sp.csr_matrix) -> sp.csr_matrix:
    """Scale every row to unit Euclidean length (all-zero rows stay zero); returns a new matrix."""
    X = sp.csr_matrix(X, dtype=np.float64, copy=True)
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    norms[norms == 0] = 1.0
    X.data /= np.repeat(norms, np.diff(X.indptr))
    return X
