"""kNN search over shards of the stored rows: each shard's exact top k, merged in the
single-process order."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ...common.errors import ConfigError


def _shard_search(rows: sp.csr_matrix, dense_cols: np.ndarray, params: dict, Q: sp.csr_matrix, k: int, offset: int,
                  scale=None):
    """Top k of one shard of stored (already prepared) rows, as global indices."""
    from ...models.knn import KNNClassifier
    from ...models.cosine import CosineIndex
    knn = KNNClassifier(**params, n_jobs=1)
    knn.check_search_params()
    knn.scale_ = scale
    knn.classes_ = np.array([0])
    knn.y_codes_ = np.zeros(rows.shape[0], dtype=np.int64)
    knn.n_features_in_ = rows.shape[1]
    knn.ids_ = None
    knn.set_rows(rows)
    if knn.metric == "cosine":
        knn.index_ = CosineIndex(rows, knn.memory_bytes_, dense_cols=dense_cols)
    scores, idx = knn.search(Q, min(k, rows.shape[0]))
    return scores, idx + offset


def sharded_kneighbors(client, knn, X, n_shards: int, k: int | None = None):
    """``knn.kneighbors(X)`` with the stored rows split into ``n_shards`` tasks; same result.

    Returns ``(indices, measure)`` like :meth:`~spamkit.models.KNNClassifier.kneighbors`.
    """
    from ...models.neighbours import NeighbourSearch
    k = int(knn.k if k is None else k)
    n = knn.rows_.shape[0]
    if k > n:
        raise ConfigError(f"k={k} is larger than the {n} stored training rows")
    Q = knn.check_query(X)                   # each shard prepares it, as a single search does
    params = {name: getattr(knn, name) for name in ("k", "weights", "metric", "tau", "epsilon", "memory_limit", "p")}
    dense_cols = knn.index_.dense_cols if knn.metric == "cosine" else None
    bounds = np.linspace(0, n, max(1, min(n_shards, n)) + 1).astype(np.int64)
    # the queries travel with each task (not scattered): a task re-run after a lost worker has all it needs
    scale = getattr(knn, "scale_", None)
    futures = [client.submit(_shard_search, knn.rows_[lo:hi], dense_cols, params, Q, k, int(lo), scale, pure=False)
               for lo, hi in zip(bounds[:-1], bounds[1:]) if hi > lo]
    parts = client.gather(futures)
    best_s, best_i = parts[0]
    for s, i in parts[1:]:
        best_s, best_i = NeighbourSearch.merge(best_s, best_i, s, i, k)
    order = np.lexsort((best_i, -best_s), axis=1)
    best_s = np.take_along_axis(best_s, order, axis=1)
    best_i = np.take_along_axis(best_i, order, axis=1)
    measure = best_s if knn.metric in ("cosine", "jaccard") else -best_s
    return best_i, measure


def sharded_predict_proba(client, knn, X, n_shards: int) -> np.ndarray:
    """``knn.predict_proba(X)`` from the sharded search (the vote is computed here)."""
    k = knn.k_for_vote()
    idx, measure = sharded_kneighbors(client, knn, X, n_shards, k)
    scores = measure if knn.metric in ("cosine", "jaccard") else -measure
    votes, _ = knn.votes(scores, idx)
    total = votes.sum(axis=1, keepdims=True)
    total[total == 0] = 1.0
    return votes / total
