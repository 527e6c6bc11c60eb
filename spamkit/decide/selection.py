"""Model selection over feature matrices: seeded stratified folds, out-of-fold scores of a
model, kNN's k and weighting by cross-validation, and the cost-minimising threshold.

The corpus-level jobs (:mod:`spamkit.jobs.crossval`) read corpora, build the features and
call these; so does the trained filter for ``--k auto`` and calibration.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..common.errors import ConfigError
from ..models.base import finite_log_odds
from ..models.knn import KNNClassifier
from ..models.neighbours import WEIGHTS
from ..scoring.arrays import expit, logit


def stratified_folds(y, n_folds: int, seed: int = 0) -> np.ndarray:
    """Fold number (0..n_folds-1) of each row: every class spread evenly over the folds.

    Within each class the rows are shuffled with ``seed`` and dealt round-robin, so fold
    sizes per class differ by at most one.

    >>> stratified_folds(["a"] * 4 + ["b"] * 2, 2, seed=0).tolist().count(0)
    3
    """
    y = np.asarray(y)
    if n_folds < 2:
        raise ConfigError(f"cross-validation needs at least 2 folds, got {n_folds}")
    classes, counts = np.unique(y, return_counts=True)
    if counts.min() < n_folds:
        small = classes[counts.argmin()]
        raise ConfigError(f"class {small!r} has {counts.min()} examples, fewer than the {n_folds} folds")
    rng = np.random.default_rng(seed)
    folds = np.empty(len(y), dtype=np.int64)
    for c in classes:
        rows = np.flatnonzero(y == c)
        rows = rows[rng.permutation(len(rows))]
        folds[rows] = np.arange(len(rows)) % n_folds
    return folds


def out_of_fold_log_odds(model, X, y, n_folds: int = 5, seed: int = 0) -> np.ndarray:
    """Out-of-fold log-odds log p(c1 | x) - log p(c0 | x) of a two-class model, one per row.

    Each row is scored by a clone of ``model`` fitted on the other folds (stratified; fewer
    folds when a class has fewer than ``n_folds`` rows): the held-out scores a calibration
    or a threshold must be learned from.
    """
    from sklearn.base import clone
    y = np.asarray(y)
    smallest = int(np.unique(y, return_counts=True)[1].min())
    folds = stratified_folds(y, int(max(2, min(n_folds, smallest))), seed=seed)
    scores = np.zeros(len(y))
    for k in np.unique(folds):
        held = folds == k
        lp = clone(model).fit(X[~held], y[~held]).predict_log_proba(X[held])
        with np.errstate(invalid="ignore"):
            scores[held] = lp[:, 1] - lp[:, 0]
    return scores


@dataclass
class TuneResult:
    """Cross-validated error of kNN for every (k, weighting) tried."""

    ks: list
    weights: list
    errors: dict = field(default_factory=dict)        # weights -> list of mean error per k
    stds: dict = field(default_factory=dict)
    best_k: int = 0
    best_weights: str = ""
    best_error: float = float("nan")
    folds: int = 0
    seed: int = 0

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def tune_knn(X, y, ks=(1, 3, 5, 7, 9, 15, 21, 31), weights=("uniform", "inverse"), folds: int = 5,
             seed: int = 0, **knn_params) -> TuneResult:
    """Choose k and the weighting by stratified cross-validation (lowest mean error rate).

    The neighbours of each held-out row are searched once, for the largest k; every smaller
    k and every weighting is scored from that list (the first k of the k_max nearest are the
    k nearest). Ties in error go to the smaller k, then to the weighting listed first.
    """
    y = np.asarray(y)
    ks = sorted({int(k) for k in ks})
    if not ks or ks[0] < 1:
        raise ConfigError(f"k values must be positive integers, got {ks}")
    for w in weights:
        if w not in WEIGHTS:
            raise ConfigError(f"unknown weights {w!r}; choose from {', '.join(WEIGHTS)}")
    fold_of = stratified_folds(y, folds, seed)
    k_max = ks[-1]
    errors = {w: np.zeros((folds, len(ks))) for w in weights}
    for f in range(folds):
        train, test = fold_of != f, fold_of == f
        if k_max > train.sum():
            raise ConfigError(f"k={k_max} is more than the {int(train.sum())} training rows of a fold")
        knn = KNNClassifier(k=k_max, **knn_params).fit(X[train], y[train])
        scores, idx = knn.search(X[test], k_max)
        truth = np.searchsorted(knn.classes_, y[test])
        for w in weights:
            knn.weights = w
            wts = knn.neighbour_weights(scores)
            labels = knn.y_codes_[idx]
            for col, k in enumerate(ks):
                votes = np.stack([(wts[:, :k] * (labels[:, :k] == c)).sum(axis=1)
                                  for c in range(len(knn.classes_))], axis=1)
                pred = _vote_winner(votes)
                errors[w][f, col] = float(np.mean(pred != truth))
    result = TuneResult(ks=ks, weights=list(weights), folds=folds, seed=seed)
    best = None
    for w in weights:
        mean = errors[w].mean(axis=0)
        result.errors[w] = mean.tolist()
        result.stds[w] = errors[w].std(axis=0).tolist()
    for col, k in enumerate(ks):                       # smaller k first, then weighting order
        for w in weights:
            e = result.errors[w][col]
            if best is None or e < best[0] - 1e-12:
                best = (e, k, w)
    if best is None:
        raise ConfigError("no k and weighting to choose from")
    result.best_error, result.best_k, result.best_weights = best
    return result


def _vote_winner(votes: np.ndarray) -> np.ndarray:
    """Row-wise winner with KNNClassifier's tie rule: the tied class first in ``classes_``."""
    return votes.argmax(axis=1)


def threshold_report(is_spam, log_odds, c_fp: float, c_fn: float, folds: int = 5, seed: int = 0) -> dict:
    """The realised cost per message against the threshold, on out-of-fold log-odds.

    The chosen threshold is the middle of the cheapest interval of thresholds (among tied
    optima, the one nearest the Bayes threshold's log-odds). Also reports the cost at the
    Bayes threshold t* = c_FP / (c_FP + c_FN) of the costs, and a curve of 41 thresholds.
    """

    from .decision import bayes_threshold
    from .thresholds import choose_thresholds, realised_cost
    y = np.asarray(is_spam, dtype=bool)
    s = finite_log_odds(log_odds)
    choice = choose_thresholds(y, s, c_fp, c_fn)
    t_bayes = bayes_threshold(c_fp, c_fn)
    bayes_lo = float(logit(t_bayes)) if 0 < t_bayes < 1 else (np.inf if t_bayes >= 1 else -np.inf)
    finite = [t for t in choice["optimal"] if np.isfinite(t)] or [bayes_lo if np.isfinite(bayes_lo) else 0.0]
    chosen = min(finite, key=lambda t: abs(t - bayes_lo) if np.isfinite(bayes_lo) else abs(t))

    def cost_at(t):
        return realised_cost(y, s, t, c_fp, c_fn)

    grid = np.unique(np.concatenate([np.linspace(-10, 10, 41), [chosen, bayes_lo if np.isfinite(bayes_lo) else 0.0]]))
    return {"n": int(len(y)), "n_spam": int(y.sum()), "n_ham": int((~y).sum()), "folds": folds, "seed": seed,
            "c_fp": c_fp, "c_fn": c_fn,
            "chosen": {"log_odds": float(chosen), "p_spam": float(expit(chosen)), "cost": cost_at(chosen),
                       "false_positives": int(np.sum((s > chosen) & ~y)), "false_negatives": int(np.sum((s <= chosen) & y))},
            "bayes": {"p_spam": float(t_bayes), "log_odds": bayes_lo, "cost": cost_at(bayes_lo)},
            "at_one_half": {"cost": cost_at(0.0)},
            "curve": [{"log_odds": float(t), "p_spam": float(expit(t)), "cost": cost_at(t)} for t in grid]}
