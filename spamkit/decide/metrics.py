"""Measures of a classifier: confusion matrix, accuracy, precision/recall/F1, ROC AUC.

Spam is the positive class in every two-class measure. Every measure here is
checked against ``sklearn.metrics`` and a hand-worked example in
``tests/test_metrics.py``. Degenerate but computable cases (an AUC with no
spam) return NaN with a :class:`~spamkit.common.errors.DegenerateDataWarning`.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..common.errors import ConfigError, DegenerateDataWarning
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


# ---------------------------------------------------------------------- curves

def _binary_inputs(y_true, scores):
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
    y, s = _binary_inputs(y_true, scores)
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
    y, s = _binary_inputs(y_true, scores)
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
    y, s = _binary_inputs(y_true, scores)
    n_neg = int((~y).sum())
    if n_neg == 0 or not (y.any()) or n_neg * ham_rate < 1 - 1e-9:
        return None
    fpr, tpr, _ = roc_curve(y, s)
    return float(tpr[fpr <= ham_rate + 1e-12].max())


def three_way_rates(y_true, p_spam, low: float, high) -> dict:
    """What a three-way decision does with ham and spam: ham below ``low``, spam above ``high``
    (one cut, or each message's own: :func:`spamkit.decide.decision.stream_spam_cuts`; then
    ``high`` reports the last and ``high_range`` the lowest and highest).

    Returns percentages: ``ham_misfiled`` (ham decided spam), ``ham_unsure``, ``spam_caught``
    (spam decided spam), ``spam_unsure``, and the counts of each class. A score equal to a
    threshold falls on the cautious side (unsure).

    >>> r = three_way_rates([0, 0, 0, 0, 1, 1], [0.1, 0.5, 0.99, 0.2, 0.995, 0.6], 0.2, 0.98)
    >>> r["ham_misfiled"], r["ham_unsure"], r["spam_caught"], r["spam_unsure"]
    (25.0, 50.0, 50.0, 50.0)
    """
    y, p = _binary_inputs(y_true, p_spam)
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
    y, s = _binary_inputs(y_true, scores)
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
    y, s = _binary_inputs(y_true, fused)
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
    y, s = _binary_inputs(y_true, scores)
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
