"""Evaluation protocols on feature matrices: stratified cross-validation, and tuning kNN's k.

Owns the protocols; the measures come from :mod:`spamkit.metrics`, the models from
:mod:`spamkit.models`. (Online TREC-style evaluation and the literature protocols come
with the decision-theory issue.)
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .errors import ConfigError
from .models.knn import WEIGHTS, KNNClassifier


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
        scores, idx = knn._search(X[test], k_max)
        truth = np.searchsorted(knn.classes_, y[test])
        for w in weights:
            knn.weights = w
            wts = knn._weights(scores)
            labels = knn._y[idx]
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
    result.best_error, result.best_k, result.best_weights = best
    return result


def _vote_winner(votes: np.ndarray) -> np.ndarray:
    """Row-wise winner with KNNClassifier's tie rule: the tied class first in ``classes_``."""
    return votes.argmax(axis=1)
