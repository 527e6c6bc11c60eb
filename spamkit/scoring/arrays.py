"""The scoring core's formulas over NumPy arrays: what the models use on whole matrices.

Each function is the array form of a definition in :mod:`spamkit.scoring` (the logistic
function, Fisher combining); ``tests/test_scoring.py`` checks them against it and against
SciPy. SciPy's ``scipy.special`` is not imported: its array-API layer alone took a tenth of a
second of every ``spamkit train``, for three one-line functions.
"""

from __future__ import annotations

import numpy as np

from . import fisher_log_probabilities_into


def log_expit(z) -> np.ndarray:
    """log(1 / (1 + e^-z)) elementwise, without overflow: -log(1 + e^-z) = -logaddexp(0, -z).

    >>> log_expit(np.array([0.0, -800.0])).tolist()
    [-0.6931471805599453, -800.0]
    """
    with np.errstate(invalid="ignore"):                 # NaN in, NaN out, as scipy.special's: no warning
        return -np.logaddexp(0.0, -np.asarray(z, dtype=np.float64))


def expit(z) -> np.ndarray:
    """1 / (1 + e^-z) elementwise, without overflow: e^z / (1 + e^z) where z < 0.

    >>> expit(np.array([0.0, 800.0, -800.0])).tolist()
    [0.5, 1.0, 0.0]
    """
    z = np.asarray(z, dtype=np.float64)
    e = np.exp(-np.abs(z))                      # in (0, 1]: never overflows
    return np.where(z >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def logit(p) -> np.ndarray:
    """log(p / (1 - p)) elementwise (±inf at 1 and 0).

    >>> logit(np.array([0.5, 0.0, 1.0])).tolist()
    [0.0, -inf, inf]
    """
    p = np.asarray(p, dtype=np.float64)
    with np.errstate(divide="ignore"):
        return np.log(p) - np.log1p(-p)


def fisher_log_odds(log_f, log_1mf, n) -> tuple[np.ndarray, np.ndarray]:
    """(log P(c0), log P(c1)) of Fisher combining for each row, from its clue count ``n`` and
    its sums Σ ln f (``log_f``) and Σ ln (1 - f) (``log_1mf``): the definition
    :func:`spamkit.scoring.fisher_log_probabilities` row by row (compiled where built). Rows
    with no clue get log 1/2 for both.

    >>> [round(float(np.exp(v[0])), 6) for v in fisher_log_odds([np.log(0.72)], [np.log(0.02)], [2])]
    [0.070859, 0.929141]
    """
    n = np.ascontiguousarray(np.atleast_1d(n), dtype=np.int64)
    log_f = np.ascontiguousarray(np.atleast_1d(log_f), dtype=np.float64)
    log_1mf = np.ascontiguousarray(np.atleast_1d(log_1mf), dtype=np.float64)
    log_c0, log_c1 = np.empty(n.shape), np.empty(n.shape)
    fisher_log_probabilities_into(n.reshape(-1), log_f.reshape(-1), log_1mf.reshape(-1), log_c0.reshape(-1),
                                  log_c1.reshape(-1))
    return log_c0, log_c1
