"""The data of the evaluation reports: the numbers the terminal, JSON and HTML reports are drawn
from (:func:`report_data` for ham and spam, :func:`k_class_report_data` for any number of
classes) -- ROC and PR curves, a bootstrap interval of the AUC, reliability bins, probability
scores, the score histogram's range. One computation feeds all three forms (``spamkit
evaluate``; :mod:`spamkit.jobs.evaluate` calls it, :mod:`spamkit.cli.report` draws it).
"""

from __future__ import annotations

import numpy as np

from ..decide.selection import threshold_report
from ..models.base import finite_log_odds


def both_class_resamples(is_spam, n_boot: int, seed: int = 0):
    """``n_boot`` bootstrap resamples of the messages (index arrays, drawn with replacement), each
    holding both classes (one that does not is drawn again); none where the messages are of one
    class. The same ``seed`` gives the same resamples, so two scorings of the same messages can
    be compared on them (a paired bootstrap)."""
    y = np.asarray(is_spam, dtype=bool)
    if y.all() or not y.any():
        return
    rng = np.random.default_rng(seed)
    made = 0
    while made < n_boot:
        idx = rng.integers(0, len(y), len(y))
        if y[idx].all() or not y[idx].any():
            continue
        made += 1
        yield idx


def bootstrap_auc(is_spam, scores, n_boot: int = 1000, seed: int = 0, level: float = 0.95) -> dict:
    """Percentile bootstrap confidence interval of the ROC AUC (messages resampled with replacement).

    Resamples that hold one class only are drawn again. Returns the point estimate, the
    interval, and the same for (1 - AUC)% (the TREC (1-ROCA)%); all NaN where the messages are
    of one class (no resample could hold both).
    """
    from ..decide.curves import roc_auc
    y = np.asarray(is_spam, dtype=bool)
    s = np.asarray(scores, dtype=np.float64)
    if y.all() or not y.any():
        nan = float("nan")
        return {"auc": nan, "auc_low": nan, "auc_high": nan, "level": level, "n_boot": 0,
                "roca_pct": nan, "roca_pct_low": nan, "roca_pct_high": nan}
    values = [roc_auc(y[idx], s[idx]) for idx in both_class_resamples(y, n_boot, seed)]
    lo, hi = np.quantile(values, [(1 - level) / 2, 1 - (1 - level) / 2])
    auc = roc_auc(y, s)
    return {"auc": float(auc), "auc_low": float(lo), "auc_high": float(hi), "level": level, "n_boot": n_boot,
            "roca_pct": 100 * (1 - float(auc)), "roca_pct_low": 100 * (1 - float(hi)),
            "roca_pct_high": 100 * (1 - float(lo))}


def reliability_bins(is_spam, p_spam, n_bins: int = 10) -> list:
    """Reliability diagram data: per bin of predicted P(spam), the mean prediction and the observed spam rate."""
    y = np.asarray(is_spam, dtype=bool)
    p = np.asarray(p_spam, dtype=np.float64)
    edges = np.linspace(0, 1, n_bins + 1)
    which = np.clip(np.digitize(p, edges[1:-1]), 0, n_bins - 1)
    out = []
    for b in range(n_bins):
        inside = which == b
        n = int(inside.sum())
        out.append({"low": float(edges[b]), "high": float(edges[b + 1]), "n": n,
                    "mean_predicted": float(p[inside].mean()) if n else None,
                    "observed": float(y[inside].mean()) if n else None})
    return out


def probability_scores(is_spam, p_spam) -> dict:
    """Brier score and log loss (natural log, probabilities clipped to [1e-15, 1 - 1e-15]) of P(spam)."""
    y = np.asarray(is_spam, dtype=np.float64)
    p = np.clip(np.asarray(p_spam, dtype=np.float64), 1e-15, 1 - 1e-15)
    return {"brier": float(np.mean((p - y) ** 2)),
            "log_loss": float(-np.mean(y * np.log(p) + (1 - y) * np.log1p(-p)))}


def report_data(is_spam, log_odds, p_spam, decisions, c_fp: float = 1.0, c_fn: float = 1.0,
                n_boot: int = 1000, seed: int = 0, max_points: int = 2000, p_raw=None,
                c_unsure: float = 0.0) -> dict:
    """Everything the HTML report shows beyond the measures of the result, computed once (the
    JSON output carries the same numbers).

    ``decisions``: the filter's own decision of each message, ``"spam"``, ``"ham"`` or
    ``"unsure"``, as it decided them -- costs, unsure band,
    familiarity guard and all. The ten most costly mistakes are ranked by what each decision
    cost (``c_fp`` for a ham decided spam, ``c_fn`` for a spam decided ham, ``c_unsure`` for
    either left unsure), then by how sure the filter was; each carries its decision. The
    score histogram spans the scores there are, and the ROC's log axis starts at the smallest
    false-positive rate these messages can show (one ham in all of them). ``p_raw``: the
    model's P(spam) before the filter's calibration, so the report can measure what
    calibration did.
    """
    from ..decide.curves import average_precision, pr_curve, roc_curve
    y = np.asarray(is_spam, dtype=bool)
    s = finite_log_odds(log_odds)
    decided = np.asarray(decisions, dtype=object)
    fpr, tpr, _ = roc_curve(y, s)
    precision, recall, _ = pr_curve(y, s)
    keep = np.unique(np.linspace(0, len(fpr) - 1, min(len(fpr), max_points)).astype(int))
    keep_pr = np.unique(np.linspace(0, len(recall) - 1, min(len(recall), max_points)).astype(int))
    cost = (np.where((decided == "spam") & ~y, c_fp, 0.0) + np.where((decided == "ham") & y, c_fn, 0.0)
            + np.where(decided == "unsure", c_unsure, 0.0))
    wrong = np.flatnonzero(cost > 0)
    ranked = wrong[np.lexsort((-np.abs(s[wrong]), -cost[wrong]))][:10]
    low, high = histogram_range(s)
    return {
        "auc": bootstrap_auc(y, s, n_boot=n_boot, seed=seed),
        "average_precision": float(average_precision(y, s)),
        "roc": {"fpr": fpr[keep].tolist(), "tpr": tpr[keep].tolist(),
                "smallest_fpr": 1.0 / max(int((~y).sum()), 1)},
        "pr": {"precision": precision[keep_pr].tolist(), "recall": recall[keep_pr].tolist()},
        "reliability": reliability_bins(y, p_spam),
        "histogram": {"ham": np.histogram(s[~y], bins=40, range=(low, high))[0].tolist(),
                      "spam": np.histogram(s[y], bins=40, range=(low, high))[0].tolist(), "range": [low, high]},
        "threshold": threshold_report(y, s, c_fp, c_fn),
        "costly_mistakes": [int(i) for i in ranked],
        "mistake_costs": [float(cost[i]) for i in ranked],
        "calibration": {**probability_scores(y, p_spam),
                        **({"raw": {**probability_scores(y, p_raw), "reliability": reliability_bins(y, p_raw)}}
                           if p_raw is not None else {})},
    }


def histogram_range(scores) -> tuple[float, float]:
    """The span of a score histogram: the scores' own, widened to whole numbers (and to at least
    one unit), so that the bars are where the scores are.

    >>> histogram_range([-9.6, 2.0, 14.2])
    (-10.0, 15.0)
    """
    s = np.asarray(scores, dtype=np.float64)
    s = s[np.isfinite(s)]
    if not s.size:
        return -1.0, 1.0
    low, high = float(np.floor(s.min())), float(np.ceil(s.max()))
    return (low, high) if high > low else (low - 0.5, high + 0.5)


def k_class_report_data(y_true, proba, classes, max_points: int = 500) -> dict:
    """The curves of the K-class HTML report: for each class against the rest, and micro-averaged
    over every (message, class) pair, the ROC curve and the precision-recall curve (at most
    ``max_points`` points each; the AUC and average precision are in the result's
    ``one_vs_rest``)."""
    from ..decide.curves import pr_curve, roc_curve
    labels = [str(c) for c in classes]
    y = np.asarray([str(v) for v in y_true])
    P = np.asarray(proba, dtype=np.float64)

    def curves(truth, scores):
        fpr, tpr, _ = roc_curve(truth, scores)
        precision, recall, _ = pr_curve(truth, scores)
        keep = np.unique(np.linspace(0, len(fpr) - 1, min(len(fpr), max_points)).astype(int))
        keep_pr = np.unique(np.linspace(0, len(recall) - 1, min(len(recall), max_points)).astype(int))
        return {"roc": {"fpr": fpr[keep].tolist(), "tpr": tpr[keep].tolist()},
                "pr": {"precision": precision[keep_pr].tolist(), "recall": recall[keep_pr].tolist()}}

    per_class = {label: curves(y == label, P[:, k]) for k, label in enumerate(labels) if 0 < np.sum(y == label) < len(y)}
    onehot = (y[:, None] == np.asarray(labels)[None, :]).ravel()
    return {"per_class": per_class, "micro": curves(onehot, P.ravel())}


#: models that learn one message at a time for any number of classes (counting models)
