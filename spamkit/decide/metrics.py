"""Measures of a classifier at its decisions: confusion matrix, accuracy, precision/recall/F1,
MCC, costs, spam caught at a ham rate, the three-way rates, learning curves, TREC's measures.

Spam is the positive class in every two-class measure. Every measure here is
checked against ``sklearn.metrics`` and a hand-worked example in
``tests/test_metrics.py``. Degenerate but computable cases return NaN with a
:class:`~spamkit.common.errors.DegenerateDataWarning`. The ranking measures (ROC AUC, the
curves, average precision) are :mod:`spamkit.decide.curves`.
"""

from __future__ import annotations


import numpy as np

from ..common.errors import ConfigError
from .curves import binary_inputs, roc_auc, roc_curve
from typing import Any


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
    """Precision, recall, F1, the Jaccard score and support per class from a confusion matrix
    (rows: true class, columns: decided; NaN where undefined).

    Jaccard is the lecture notes' TP / (TP + FP + FN) (CPSC 340, "Decision theory"): the
    overlap of the messages decided as the class and those that are, over their union.

    >>> s = per_class_scores(np.array([[50, 10], [5, 35]]), ["ham", "spam"])["spam"]
    >>> round(s["jaccard"], 4), round(s["f1"], 4)     # TP 35, FP 10, FN 5: 35/50, 70/85
    (0.7, 0.8235)
    """
    out = {}
    for i, label in enumerate(labels):
        tp = C[i, i]
        predicted = C[:, i].sum()
        actual = C[i, :].sum()
        precision = _ratio(tp, predicted)
        recall = _ratio(tp, actual)
        f1 = _ratio(2 * tp, predicted + actual)
        jaccard = _ratio(tp, predicted + actual - tp)
        out[str(label)] = {"precision": precision, "recall": recall, "f1": f1, "jaccard": jaccard,
                           "support": int(actual)}
    return out


def binary_report(y_true, y_pred, p_spam, positive="spam", negative="ham", ranking=None) -> dict:
    """The two-class measures at one operating point, plus the AUC of ``ranking`` (default ``p_spam``).

    ``positive`` is the class the ROC and precision-recall measures are about ("spam" for a
    spam filter; ``spamkit evaluate --positive``); the ``spam_*`` / ``ham_*`` keys then mean
    the positive and the negative class, whose names the report carries.

    The TREC hm% / sm% / lam% in it are taken at P(spam) > 0.5, the operating point of
    ``y_pred`` when it is the most probable class. ``ranking``, any increasing function of
    P(spam) such as the log-odds, ranks messages whose probability rounds to 0 or 1 (a long
    message's posterior often does), which ``p_spam`` itself would tie.
    """
    labels = [negative, positive]
    C = confusion_matrix(y_true, y_pred, labels)
    tn, fp, fn, tp = (int(v) for v in C.ravel())
    n = tn + fp + fn + tp
    scores = per_class_scores(C, labels)
    return {
        "positive": str(positive), "negative": str(negative),
        "n": n, "tp": tp, "fp": fp, "tn": tn, "fn": fn,
        "accuracy": _ratio(tp + tn, n),
        "spam_recall": _ratio(tp, tp + fn),
        "ham_recall": _ratio(tn, tn + fp),
        "spam_precision": scores[str(positive)]["precision"],
        "f1": scores[str(positive)]["f1"],
        "jaccard": scores[str(positive)]["jaccard"],
        "fp_rate": _ratio(fp, fp + tn),
        "fn_rate": _ratio(fn, fn + tp),
        "mcc": mcc(tp, fp, tn, fn),
        "auc": roc_auc(np.asarray(y_true) == positive, p_spam if ranking is None else ranking),
        **{k: v for k, v in trec_measures(np.asarray(y_true) == positive, p_spam, 0.5).items() if k != "roca_pct"},
        # read off the ROC curve of the ranking, as the AUC is
        "spam_caught_pct_at_hm": trec_measures(np.asarray(y_true) == positive,
                                               p_spam if ranking is None else ranking, 0.5)["spam_caught_pct_at_hm"],
    }


def multiclass_report(y_true, y_pred, labels) -> dict:
    """Accuracy, macro-averaged F1 and per-class precision/recall/F1 for any number of classes."""
    C = confusion_matrix(y_true, y_pred, labels)
    per_class = per_class_scores(C, labels)
    f1s = [v["f1"] for v in per_class.values() if v["support"] > 0]
    return {"n": int(C.sum()), "accuracy": _ratio(np.trace(C), C.sum()),
            "macro_f1": float(np.nanmean(f1s)) if f1s else float("nan"),
            "per_class": per_class, "confusion": C.tolist(), "labels": [str(label) for label in labels]}


# ---------------------------------------------------------------------- single numbers

def mcc(tp: int, fp: int, tn: int, fn: int) -> float:
    """Matthews correlation coefficient; 0 when a margin is empty (scikit-learn's convention).

    ``(tp tn - fp fn) / sqrt((tp + fp)(tp + fn)(tn + fp)(tn + fn))``

    >>> round(mcc(tp=2, fp=1, tn=1, fn=1), 4)     # (2 - 1) / sqrt(3 * 3 * 2 * 2)
    0.1667
    """
    den = float(tp + fp) * float(tp + fn) * float(tn + fp) * float(tn + fn)
    return 0.0 if den == 0 else float((tp * tn - fp * fn) / np.sqrt(den))


def weighted_accuracy(tp: int, fp: int, tn: int, fn: int, lam: float) -> float:
    """Androutsopoulos et al.'s weighted accuracy: each ham counts lam times.

    ``WAcc = (lam * n(ham->ham) + n(spam->spam)) / (lam * N_ham + N_spam)``

    >>> weighted_accuracy(tp=90, fp=1, tn=99, fn=10, lam=9)     # (9*99 + 90) / (9*100 + 100)
    0.981
    """
    return (lam * tn + tp) / (lam * (tn + fp) + (tp + fn))


def total_cost_ratio(tp: int, fp: int, tn: int, fn: int, lam: float) -> float:
    """TCR = N_spam / (lam * n(ham->spam) + n(spam->ham)): > 1 means better than no filter.

    >>> total_cost_ratio(tp=90, fp=1, tn=99, fn=10, lam=9)     # 100 / (9 + 10)
    5.2631578947368425
    """
    den = lam * fp + fn
    return float("inf") if den == 0 else (tp + fn) / den


def _logit(x: float) -> float:
    with np.errstate(divide="ignore"):
        return float(np.log(x) - np.log1p(-x))


#: the ham-misfiled rates at which the spam caught is read off the ROC curve: 0.1% and 0.01%
HAM_RATES = ("1/1000", "1/10000")


def spam_caught_at(y_true, scores, ham_rate: float) -> float | None:
    """The fraction of spam caught when at most ``ham_rate`` of the ham is misfiled.

    Read off the ROC curve: the highest true-positive rate among the thresholds whose
    false-positive rate is at most ``ham_rate`` (a threshold inside a group of tied scores
    cannot split it, so the curve's corners are the achievable points). ``None`` — not
    measurable — when there are fewer than ``1 / ham_rate`` ham, since then no ham at all
    may be misfiled and the figure would be "spam caught with no ham lost", a stricter
    and different measure. (Cormack & Lynam's TREC overviews report "sm% at hm% = 0.1".)

    >>> y = [0] * 1000 + [1] * 4
    >>> s = list(range(1000)) + [2000, 999.5, 998.5, 10]     # one ham above two of the spam
    >>> spam_caught_at(y, s, 0.001), spam_caught_at(y, s, 0.0001)
    (0.75, None)
    """
    y, s = binary_inputs(y_true, scores)
    n_neg = int((~y).sum())
    if n_neg == 0 or not (y.any()) or n_neg * ham_rate < 1 - 1e-9:
        return None
    fpr, tpr, _ = roc_curve(y, s)
    return float(tpr[fpr <= ham_rate + 1e-12].max())


def three_way_rates(y_true, p_spam, low: float, high) -> dict:
    """What a three-way decision does with ham and spam: ham below ``low``, spam above ``high``
    (one cut, or each message's own: :func:`spamkit.decide.thresholds.stream_spam_cuts`; then
    ``high`` reports the last and ``high_range`` the lowest and highest).

    Returns percentages: ``ham_misfiled`` (ham decided spam), ``ham_unsure``, ``spam_caught``
    (spam decided spam), ``spam_unsure``, and the counts of each class. A score equal to a
    threshold falls on the cautious side (unsure).

    >>> r = three_way_rates([0, 0, 0, 0, 1, 1], [0.1, 0.5, 0.99, 0.2, 0.995, 0.6], 0.2, 0.98)
    >>> r["ham_misfiled"], r["ham_unsure"], r["spam_caught"], r["spam_unsure"]
    (25.0, 50.0, 50.0, 50.0)
    """
    y, p = binary_inputs(y_true, p_spam)
    cuts = np.asarray(high, dtype=np.float64)
    spam, ham = p > cuts, p < low
    n_spam, n_ham = int(y.sum()), int((~y).sum())
    out: dict[str, Any] = {"ham_misfiled": 100.0 * _ratio(float((spam & ~y).sum()), n_ham),
           "ham_unsure": 100.0 * _ratio(float((~spam & ~ham & ~y).sum()), n_ham),
           "spam_caught": 100.0 * _ratio(float((spam & y).sum()), n_spam),
           "spam_unsure": 100.0 * _ratio(float((~spam & ~ham & y).sum()), n_spam),
           "n_ham": n_ham, "n_spam": n_spam, "low": float(low)}
    if cuts.ndim:
        out.update(high=float(cuts[-1]) if len(cuts) else float("nan"),
                   high_range=[float(cuts.min()), float(cuts.max())] if len(cuts) else [])
    else:
        out["high"] = float(cuts)
    return out


def learning_curve(y_true, scores, window: int | None = None, points: int = 10) -> list[dict]:
    """(1-ROCA)% of an online stream over a sliding window: how fast a filter learns.

    The stream (messages in the order they were classified) is cut into ``points`` equal
    steps; at the end of each step, the (1-ROCA)% of the last ``window`` messages (default:
    a fifth of the stream, at least 200) is reported, with how many ham and spam it held.
    A window with only one class has no ROC area (``None``). The TREC spam-track overviews
    plot this learning curve (Cormack & Lynam 2005).

    >>> y = [0, 1] * 50 + [0, 1] * 50
    >>> s = [1, 0] * 50 + [0, 1] * 50            # wrong at first, then right
    >>> [round(p["roca_pct"]) for p in learning_curve(y, s, window=100, points=2)]
    [100, 0]
    """
    y, s = binary_inputs(y_true, scores)
    n = len(y)
    window = window or max(200, n // 5)
    curve = []
    for k in range(1, points + 1):
        end = round(k * n / points)
        start = max(0, end - window)
        wy, ws = y[start:end], s[start:end]
        n_spam, n_ham = int(wy.sum()), int((~wy).sum())
        roca = 100.0 * (1.0 - roc_auc(wy, ws)) if n_spam and n_ham else None
        curve.append({"end": end, "start": start, "ham": n_ham, "spam": n_spam, "roca_pct": roca})
    return curve


def window_comparison(y_true, fused, inputs: dict, floor: float = 0.005, window: int | None = None,
                      points: int = 10, resamples: int = 400, level: float = 0.95, seed: int = 0) -> list[dict]:
    """A fusion's online stream against its inputs', window by window of the learning curve.

    For each window of :func:`learning_curve` with both classes: the fusion's (1-ROCA)%, the
    best input's in that window (the smallest, chosen after the fact), their ratio (each at
    least ``floor``: below it, a few message pairs decide), and -- where the ratio is over 1.1 --
    whether the fusion is *significantly* worse than that input: worse on at least ``level`` of
    ``resamples`` paired bootstrap resamples of the window's messages (the same messages for
    both, drawn with replacement; B. Efron and R. Tibshirani, "An Introduction to the
    Bootstrap", 1993, ch. 16). A window's (1-ROCA)% of 0.02-0.1 is a few hundred misordered
    pairs, often one message ranked below a few hundred of the other class; the bootstrap says
    whether a difference is more than such a message.

    >>> y = np.array([0, 1] * 150)
    >>> good = np.where(y == 1, 1.0, -1.0)
    >>> rows = window_comparison(y, good, {"a": good, "b": -good}, window=300, points=1)
    >>> rows[0]["fused"], rows[0]["best_input"], rows[0]["ratio"], rows[0]["significantly_worse"]
    (0.0, 'a', 1.0, False)
    """
    y, s = binary_inputs(y_true, fused)
    columns = {name: np.asarray(v, dtype=np.float64) for name, v in inputs.items()}
    rng = np.random.default_rng(seed)
    rows = []
    for point in learning_curve(y, s, window, points):
        if point["roca_pct"] is None:
            continue
        part = slice(point["start"], point["end"])
        wy = y[part]
        values = {name: 100.0 * (1.0 - roc_auc(wy, v[part])) for name, v in columns.items()}
        best = min(values, key=lambda name: values[name])
        fused_value = point["roca_pct"]
        ratio = max(fused_value, floor) / max(values[best], floor)
        worse = False
        if ratio > 1.1:
            ws, wb = s[part], columns[best][part]
            wins = total = 0
            while total < resamples:
                idx = rng.integers(0, len(wy), len(wy))
                ry = wy[idx]
                if ry.all() or not ry.any():
                    continue
                total += 1
                wins += max(100.0 * (1.0 - roc_auc(ry, ws[idx])), floor) > max(100.0 * (1.0 - roc_auc(ry, wb[idx])), floor)
            worse = wins >= level * resamples
        rows.append({"start": point["start"], "end": point["end"], "fused": fused_value, "best_input": best,
                     "best": values[best], "ratio": ratio, "significantly_worse": bool(worse)})
    return rows


def trec_measures(y_true, scores, threshold: float) -> dict:
    """The TREC spam-track summary measures (Cormack & Lynam 2005), in percent.

    * ``roca_pct``: (1 - ROC AUC) x 100, lower is better;
    * ``hm_pct``: ham misclassification (ham scored above the threshold) x 100;
    * ``sm_pct``: spam misclassification (spam at or below it) x 100;
    * ``lam_pct``: logistic average misclassification, the inverse logit of the mean of
      logit(hm) and logit(sm), x 100. It is 0 if either rate is 0 (logit -inf) and NaN if
      one is 0 and the other 1;
    * ``spam_caught_pct_at_hm``: for each ham-misfiled rate of :data:`HAM_RATES`
      (``"1/1000"`` is 0.1%), the spam caught in percent (:func:`spam_caught_at`), or
      ``None`` where too few ham make it not measurable.

    >>> m = trec_measures([0, 0, 0, 0, 1, 1, 1, 1], [.1, .2, .3, .9, .4, .6, .7, .8], 0.5)
    >>> m["hm_pct"], m["sm_pct"], round(m["lam_pct"], 4)        # hm = sm = 1/4, so lam = 1/4
    (25.0, 25.0, 25.0)
    """
    y, s = binary_inputs(y_true, scores)
    ham, spam = ~y, y
    hm = float(np.mean(s[ham] > threshold)) if ham.any() else float("nan")
    sm = float(np.mean(s[spam] <= threshold)) if spam.any() else float("nan")
    mean_logit = (_logit(hm) + _logit(sm)) / 2.0
    lam = float(1.0 / (1.0 + np.exp(-mean_logit))) if np.isfinite(mean_logit) or mean_logit == -np.inf else (
        1.0 if mean_logit == np.inf else float("nan"))
    caught = {}
    for rate in HAM_RATES:
        value = spam_caught_at(y, s, 1.0 / int(rate.split("/")[1])) if ham.any() and spam.any() else None
        caught[rate] = None if value is None else 100.0 * value
    return {"roca_pct": 100.0 * (1.0 - roc_auc(y, s)), "hm_pct": 100.0 * hm, "sm_pct": 100.0 * sm,
            "lam_pct": 100.0 * lam, "spam_caught_pct_at_hm": caught}
