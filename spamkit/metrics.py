"""Measures of a classifier: confusion matrix, accuracy, precision/recall/F1, ROC AUC.

Spam is the positive class in every two-class measure. Every measure here is
checked against ``sklearn.metrics`` and a hand-worked example in
``tests/test_metrics.py``. Degenerate but computable cases (an AUC with no
spam) return NaN with a :class:`~spamkit.errors.DegenerateDataWarning`.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy.stats import rankdata

from .errors import ConfigError, DegenerateDataWarning


def confusion_matrix(y_true, y_pred, labels) -> np.ndarray:
    """``C[i, j]`` = messages of true class ``labels[i]`` predicted as ``labels[j]`` (scikit-learn's layout).

    >>> confusion_matrix(["ham", "spam", "spam"], ["ham", "ham", "spam"], ["ham", "spam"]).tolist()
    [[1, 0], [1, 1]]
    """
    index = {label: i for i, label in enumerate(labels)}
    C = np.zeros((len(labels), len(labels)), dtype=np.int64)
    for t, p in zip(y_true, y_pred):
        if t not in index or p not in index:
            raise ConfigError(f"label {t if t not in index else p!r} is not among {list(labels)}")
        C[index[t], index[p]] += 1
    return C


def _ratio(num: float, den: float) -> float:
    return float(num) / float(den) if den else float("nan")


def per_class_scores(C: np.ndarray, labels) -> dict:
    """Precision, recall, F1 and support per class from a confusion matrix (NaN where undefined)."""
    out = {}
    for i, label in enumerate(labels):
        tp = C[i, i]
        predicted = C[:, i].sum()
        actual = C[i, :].sum()
        precision = _ratio(tp, predicted)
        recall = _ratio(tp, actual)
        f1 = _ratio(2 * tp, predicted + actual)
        out[str(label)] = {"precision": precision, "recall": recall, "f1": f1, "support": int(actual)}
    return out


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
    ranks = rankdata(s)                       # average ranks for ties
    return float((ranks[y].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def binary_report(y_true, y_pred, p_spam, positive="spam", negative="ham") -> dict:
    """The two-class measures at one operating point, plus the AUC of ``p_spam``."""
    labels = [negative, positive]
    C = confusion_matrix(y_true, y_pred, labels)
    tn, fp, fn, tp = (int(v) for v in C.ravel())
    n = tn + fp + fn + tp
    scores = per_class_scores(C, labels)
    return {
        "n": n, "tp": tp, "fp": fp, "tn": tn, "fn": fn,
        "accuracy": _ratio(tp + tn, n),
        "spam_recall": _ratio(tp, tp + fn),
        "ham_recall": _ratio(tn, tn + fp),
        "spam_precision": scores[str(positive)]["precision"],
        "f1": scores[str(positive)]["f1"],
        "fp_rate": _ratio(fp, fp + tn),
        "fn_rate": _ratio(fn, fn + tp),
        "auc": roc_auc(np.asarray(y_true) == positive, p_spam),
    }


def multiclass_report(y_true, y_pred, labels) -> dict:
    """Accuracy, macro-averaged F1 and per-class precision/recall/F1 for any number of classes."""
    C = confusion_matrix(y_true, y_pred, labels)
    per_class = per_class_scores(C, labels)
    f1s = [v["f1"] for v in per_class.values() if v["support"] > 0]
    return {"n": int(C.sum()), "accuracy": _ratio(np.trace(C), C.sum()),
            "macro_f1": float(np.nanmean(f1s)) if f1s else float("nan"),
            "per_class": per_class, "confusion": C.tolist(), "labels": [str(l) for l in labels]}
