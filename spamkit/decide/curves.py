"""Ranking measures of a two-class score: ROC AUC, the ROC and precision-recall curves,
average precision, and each class against the rest for any number of classes.

Spam is the positive class. Every measure is checked against ``sklearn.metrics`` and a
hand-worked example in ``tests/test_metrics.py``; degenerate but computable cases (an AUC with
no spam) return NaN with a :class:`~spamkit.common.errors.DegenerateDataWarning`. The measures
at one operating point, and the single numbers made from these, are
:mod:`spamkit.decide.metrics`.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..common.errors import ConfigError, DegenerateDataWarning


def average_ranks(values) -> np.ndarray:
    """1-based ranks of ``values``, tied values sharing the mean of the ranks they span (what
    ``scipy.stats.rankdata`` calls "average"; written out because importing ``scipy.stats``
    takes longer than scoring a mailbox).

    >>> average_ranks([0.5, 0.1, 0.5, 0.9]).tolist()
    [2.5, 1.0, 2.5, 4.0]
    """
    v = np.asarray(values, dtype=np.float64).ravel()
    order = np.argsort(v, kind="stable")
    ordered = v[order]
    # tie groups: [start, end) runs of equal sorted values; a group's ranks start+1..end average (start+1+end)/2
    new_group = np.empty(len(v), dtype=bool)
    new_group[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=new_group[1:])
    starts = np.flatnonzero(new_group)
    ends = np.append(starts[1:], len(v))
    ranks = np.empty(len(v), dtype=np.float64)
    ranks[order] = np.repeat((starts + 1 + ends) / 2.0, ends - starts)
    return ranks


def roc_auc(y_true, scores) -> float:
    """Area under the ROC curve: the probability that a random spam scores above a random ham.

    Computed as the Mann-Whitney statistic with tied scores counted one half
    (``AUC = (R_pos - n_pos (n_pos + 1) / 2) / (n_pos n_neg)``, ``R_pos`` the sum of the
    positives' average ranks), which equals the trapezoidal area under the exact ROC curve.

    Parameters
    ----------
    y_true : array of bool or 0/1
        1 (True) for spam.
    scores : array of float
        Higher means more likely spam.

    Examples
    --------
    Four scores by hand: pairs (spam, ham) = (0.8, 0.1) win, (0.8, 0.4) win, (0.35, 0.1) win,
    (0.35, 0.4) lose: AUC = 3/4.

    >>> roc_auc([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    0.75
    """
    y = np.asarray(y_true).astype(bool)
    s = np.asarray(scores, dtype=np.float64)
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    if n_pos == 0 or n_neg == 0:
        warnings.warn("ROC AUC is undefined with only one class present", DegenerateDataWarning, stacklevel=2)
        return float("nan")
    ranks = average_ranks(s)
    return float((ranks[y].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))



def binary_inputs(y_true, scores):
    """Labels (bool) and scores (float64) as two 1-D arrays of one length, or a ConfigError."""
    y = np.asarray(y_true).astype(bool)
    s = np.asarray(scores, dtype=np.float64)
    if y.shape != s.shape or y.ndim != 1:
        raise ConfigError(f"labels and scores must be 1-D of one length, got {y.shape} and {s.shape}")
    return y, s


def roc_curve(y_true, scores):
    """ROC curve with exact handling of tied scores: ``(fpr, tpr, thresholds)``.

    One point per distinct score, from the highest down; a group of tied scores moves the
    curve diagonally in one step. The first point is (0, 0) with threshold +inf. (Equal to
    ``sklearn.metrics.roc_curve(..., drop_intermediate=False)``.)

    >>> fpr, tpr, thr = roc_curve([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    >>> fpr.tolist(), tpr.tolist()
    ([0.0, 0.0, 0.5, 0.5, 1.0], [0.0, 0.5, 0.5, 1.0, 1.0])
    """
    y, s = binary_inputs(y_true, scores)
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    order = np.argsort(-s, kind="mergesort")
    s, y = s[order], y[order]
    last = np.r_[np.flatnonzero(np.diff(s)), len(s) - 1]    # last index of each tied group
    tps = np.cumsum(y)[last]
    fps = (last + 1) - tps
    if n_pos == 0 or n_neg == 0:
        warnings.warn("ROC curve with only one class present", DegenerateDataWarning, stacklevel=2)
    with np.errstate(invalid="ignore", divide="ignore"):
        tpr = np.r_[0.0, tps / n_pos] if n_pos else np.full(len(tps) + 1, np.nan)
        fpr = np.r_[0.0, fps / n_neg] if n_neg else np.full(len(fps) + 1, np.nan)
    return fpr, tpr, np.r_[np.inf, s[last]]


def auc_trapezoid(x, y) -> float:
    """Area under a curve given by points sorted on x (trapezoidal rule)."""
    return float(np.trapezoid(y, x)) if hasattr(np, "trapezoid") else float(np.trapz(y, x))  # type: ignore[attr-defined,unused-ignore]  # NumPy < 2


def pr_curve(y_true, scores):
    """Precision-recall points per distinct score threshold, highest first: ``(precision, recall, thresholds)``.

    Ends with recall 0 and precision 1 appended, as scikit-learn's ``precision_recall_curve``
    does, and arrays run from the lowest threshold to the highest as there.
    """
    y, s = binary_inputs(y_true, scores)
    n_pos = int(y.sum())
    if n_pos == 0:
        warnings.warn("precision-recall curve with no spam", DegenerateDataWarning, stacklevel=2)
    order = np.argsort(-s, kind="mergesort")
    s, y = s[order], y[order]
    last = np.r_[np.flatnonzero(np.diff(s)), len(s) - 1]
    tps = np.cumsum(y)[last]
    predicted = last + 1
    precision = tps / predicted
    recall = tps / n_pos if n_pos else np.full(len(tps), np.nan)
    thr = s[last]
    return np.r_[precision[::-1], 1.0], np.r_[recall[::-1], 0.0], thr[::-1]


def average_precision(y_true, scores) -> float:
    """AP = sum_n (R_n - R_{n-1}) P_n over thresholds, highest first (no interpolation).

    >>> average_precision([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])     # (0.5 * 1) + (0.5 * 2/3)
    0.8333333333333333
    """
    precision, recall, _ = pr_curve(y_true, scores)
    return float(-np.sum(np.diff(recall) * precision[:-1]))


def one_vs_rest(y_true, proba, labels) -> dict:
    """Ranking measures for any number of classes: each class against the rest, ranked by its
    own column of ``proba`` (rows: messages, columns: ``labels``), and their averages.

    Per class: ROC AUC and average precision (nan when the class, or every other class, is
    absent). ``macro``: the plain mean over the classes present; ``weighted``: weighted by each
    class's share of the messages (prevalence); ``micro``: one pooled ranking of every
    (message, class) pair, relevant when the class is the message's own. The same definitions
    as scikit-learn's ``roc_auc_score(..., multi_class="ovr")`` and ``average_precision_score``
    on binarized labels (the tests compare).

    By hand: class b's one positive (0.6) beats two of its three negatives (0.1, 0.2, not
    0.65): AUC 2/3; class a's positives 0.8 and 0.3 against 0.3 and 0.2 win 3 pairs and tie
    one: 3.5/4; class c wins all; the macro average is (0.875 + 2/3 + 1) / 3.

    >>> r = one_vs_rest(["a", "b", "c", "a"], [[.8, .1, .1], [.3, .6, .1], [.2, .2, .6], [.3, .65, .05]],
    ...                 ["a", "b", "c"])
    >>> r["per_class"]["a"]["auc"], round(r["per_class"]["b"]["auc"], 4), round(r["macro"]["auc"], 6)
    (0.875, 0.6667, 0.847222)
    """
    labels = [str(label) for label in labels]
    y = np.asarray([str(v) for v in y_true])
    P = np.asarray(proba, dtype=np.float64)
    if P.ndim != 2 or P.shape != (len(y), len(labels)):
        raise ConfigError(f"probabilities must have shape ({len(y)}, {len(labels)}), got {P.shape}")
    per_class, aucs, aps, weights = {}, [], [], []
    for k, label in enumerate(labels):
        is_k = y == label
        n_k = int(is_k.sum())
        if 0 < n_k < len(y):
            auc, ap = roc_auc(is_k, P[:, k]), average_precision(is_k, P[:, k])
            aucs.append(auc)
            aps.append(ap)
            weights.append(n_k)
        else:
            auc = ap = float("nan")
        per_class[label] = {"auc": float(auc), "average_precision": float(ap), "support": n_k}
    onehot = (y[:, None] == np.asarray(labels)[None, :]).ravel()
    pooled = P.ravel()
    micro = ({"auc": float(roc_auc(onehot, pooled)), "average_precision": float(average_precision(onehot, pooled))}
             if 0 < onehot.sum() < len(onehot) else {"auc": float("nan"), "average_precision": float("nan")})
    nan = float("nan")
    return {"per_class": per_class,
            "macro": {"auc": float(np.mean(aucs)) if aucs else nan, "average_precision": float(np.mean(aps)) if aps else nan},
            "weighted": {"auc": float(np.average(aucs, weights=weights)) if aucs else nan,
                         "average_precision": float(np.average(aps, weights=weights)) if aps else nan},
            "micro": micro}
