"""Training on the cluster (:func:`fit_on_cluster`), the familiarity guard, and the stacked
filter's combiner fitted on cross-validated scores computed on the workers."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ...features.matrices import columns_per_row
from ...models import FisherNBStack
from .cluster import DEFAULT_PARTITION, RunReport, default_pending, partitions, submit_all, wait_all
from .counts import Part, Shared, build_from_stats, check_distributable, counting, part_stats, stats_size, subset, tokenize_partition, tree_reduce


def fit_on_cluster(spam_filter, items, client, partition_size: int = DEFAULT_PARTITION, progress=None,
                   report: RunReport | None = None, max_pending: int | None = None, status=None):
    """Train ``spam_filter`` on the cluster of ``client``; the result equals ``spam_filter.fit(items)``.

    ``items``: LabelledMessage objects, taken here in order and cut into partitions of
    ``partition_size`` messages (:func:`partitions`). Messages listed without being read
    (:meth:`spamkit.corpus.Corpus.listing`) travel as file names and the workers read them
    (the corpus must be at the same path on every worker: a shared or copied file system);
    others travel as bytes. At most ``max_pending`` partitions wait at a time (default: four
    per worker), so the driver's memory stays bounded whatever the corpus size. ``status(text)``
    hears how many partitions are done.
    """
    check_distributable(spam_filter)
    report = report if report is not None else RunReport()
    started = time.perf_counter()
    stacked = isinstance(spam_filter.model, FisherNBStack)
    labels: list = []
    sizes_of_parts: list = []
    parts = partitions(items, partition_size, report, progress, on_message=lambda m: labels.append(str(m.label)))
    # keep each tokenized partition on its worker: the familiarity guard (and the stack's
    # combiner) need a second look at the rows once the vocabulary is known
    parts = counting(parts, sizes_of_parts)
    tokenized = submit_all(client, tokenize_partition, parts, max_pending or default_pending(client),
                            spam_filter.analyzer.get_config(), spam_filter.vectorizer.hashing)
    futures = [client.submit(part_stats, f, pure=False) for f in tokenized]
    report.read_seconds = time.perf_counter() - started
    wait_all(futures, status)
    before_reduce = time.perf_counter()
    sizes = client.gather([client.submit(stats_size, f, pure=False) for f in futures])
    report.bytes_out = int(sum(sizes))
    stats = tree_reduce(client, futures).result()
    report.reduce_seconds = time.perf_counter() - before_reduce
    report.worker_seconds = stats.seconds
    report.mail_bytes = stats.n_bytes
    build_from_stats(spam_filter, stats)
    if stacked:
        fit_combiner_on_cluster(spam_filter, client, tokenized, labels, sizes_of_parts, status)
    _fit_guard_on_cluster(spam_filter, client, tokenized)
    report.wall_seconds = time.perf_counter() - started
    return spam_filter


def part_familiarity(part: Part, shared: Shared) -> tuple[np.ndarray, np.ndarray | None]:
    """Per message of a partition: its tokens known without it (see SpamFilter.fit_guard), and its
    distinct tokens."""
    vocabulary, n_features, known_without_self = shared.value
    return columns_per_row(_global_rows(part, vocabulary, n_features), known_without_self), part.distinct


def _fit_guard_on_cluster(spam_filter, client, tokenized: list) -> None:
    """The familiarity guard of SpamFilter.fit, from the partitions kept on the workers."""
    vec = spam_filter.vectorizer
    mask = spam_filter.known_without_self(vec.df_)
    shared = client.scatter(Shared((dict(vec.vocabulary_) if vec.vocabulary_ is not None else None,
                                    vec.n_features_, mask)), broadcast=True, hash=False)
    parts = client.gather([client.submit(part_familiarity, t, shared, pure=False) for t in tokenized])
    known = np.concatenate([p[0] for p in parts]) if parts else np.zeros(0)
    distinct = np.concatenate([p[1] for p in parts]) if parts else np.zeros(0)
    spam_filter.fit_guard(vec.df_, known, distinct)


@dataclass
class FoldCounts:
    """Per cross-validation fold: documents per class (k, 2) and per class and column (k, 2, n_cols)."""

    cols: np.ndarray
    class_count: np.ndarray
    feature_count: np.ndarray


def global_counts(part: Part, vocabulary, n_features: int) -> sp.csr_matrix:
    """A partition's counts over a filter's columns (unknown terms dropped), indices sorted:
    what ``Vectorizer.counts`` gives for the same messages. ``vocabulary`` None: hashing (the
    partition's terms are already column numbers)."""
    if vocabulary is None:
        mapping = np.asarray(part.terms, dtype=np.int64)
    else:
        mapping = np.fromiter((vocabulary.get(t, -1) for t in part.terms), dtype=np.int64, count=len(part.terms))
    X = part.X
    cols = mapping[X.indices]
    keep = cols >= 0
    indptr = np.concatenate([[0], np.cumsum(keep)])[X.indptr]
    out = sp.csr_matrix((X.data[keep], cols[keep], indptr), shape=(X.shape[0], n_features))
    out.has_sorted_indices = False
    out.sort_indices()
    return out


def _global_rows(part: Part, vocabulary, n_features: int) -> sp.csr_matrix:
    """:func:`global_counts` as presence (1.0 where a term occurs)."""
    X = global_counts(part, vocabulary, n_features)
    X.data[:] = 1.0
    return X


def part_fold_counts(part: Part, vocabulary: Shared, n_features: int, folds: np.ndarray, codes: np.ndarray,
                     k: int, rows=None) -> FoldCounts:
    """Counts of each fold's rows of one partition (as FisherNBStack.fit counts them)."""
    X = _global_rows(subset(part, rows), vocabulary.value, n_features)
    cols = np.unique(X.indices)
    local = sp.csr_matrix((X.data, np.searchsorted(cols, X.indices), X.indptr), shape=(X.shape[0], len(cols)))
    cc = np.zeros((k, 2), dtype=np.int64)
    fc = np.zeros((k, 2, len(cols)), dtype=np.int64)
    for f in range(k):
        rows = np.flatnonzero(folds == f)
        if rows.size == 0:
            continue
        Y = sp.csr_matrix((np.ones(rows.size), codes[rows], np.arange(rows.size + 1)), shape=(rows.size, 2))
        cc[f] = np.bincount(codes[rows], minlength=2)
        fc[f] = np.rint((Y.T @ local[rows]).toarray()).astype(np.int64)
    return FoldCounts(cols=cols, class_count=cc, feature_count=fc)


def merge_fold_counts(a: FoldCounts, b: FoldCounts) -> FoldCounts:
    cols = np.union1d(a.cols, b.cols)
    fc = np.zeros(a.feature_count.shape[:2] + (len(cols),), dtype=np.int64)
    fc[:, :, np.searchsorted(cols, a.cols)] += a.feature_count
    fc[:, :, np.searchsorted(cols, b.cols)] += b.feature_count
    return FoldCounts(cols=cols, class_count=a.class_count + b.class_count, feature_count=fc)


def part_fold_scores(part: Part, vocabulary: Shared, model_params: dict, classes, counts: Shared,
                     folds: np.ndarray, k: int, rows=None) -> np.ndarray:
    """(Fisher, NB) log-odds of each row from the model of the other folds (totals minus its fold),
    and with ``length_aware`` its distinct tokens (``FisherNBStack.component_scores``)."""
    class_count, feature_count, fold_cc, fold_fc = counts.value
    X = _global_rows(subset(part, rows), vocabulary.value, feature_count.shape[1])
    model = FisherNBStack(**model_params)
    model.classes_ = np.asarray(classes)
    scores = np.zeros((X.shape[0], model.score_columns()))
    for f in range(k):
        held = folds == f
        if held.any():
            scores[held] = model.component_scores(class_count - fold_cc[f], feature_count - fold_fc[f], X[held])
    return scores


def fit_combiner_on_cluster(spam_filter, client, tokenized: list, labels: list, sizes: list, status=None,
                             rows_per_part=None):
    """FisherNBStack.fit's combiner, from the partitions kept on the workers: same folds, same scores.

    ``labels``: of the training rows in order; ``sizes``: training rows per partition;
    ``rows_per_part``: which rows of each partition train (None: all).
    """
    from ...models.stack import fold_of_rows
    model = spam_filter.model
    classes = model.classes_
    codes = np.searchsorted(classes, np.asarray(labels))
    k = int(min(model.folds, np.bincount(codes, minlength=2).min()))
    if k < 2:
        return
    folds = fold_of_rows(codes, k)
    bounds = np.concatenate([[0], np.cumsum(sizes)])
    vec = spam_filter.vectorizer
    # in a box: scatter would send a dict's values (or a tuple's items) as separate pieces
    vocabulary = client.scatter(Shared(dict(vec.vocabulary_) if vec.vocabulary_ is not None else None),
                                broadcast=True, hash=False)
    n = vec.n_features_
    rows_per_part = rows_per_part or [None] * len(tokenized)
    per_part = [client.submit(part_fold_counts, t, vocabulary, n, folds[lo:hi], codes[lo:hi], k, r, pure=False)
                for t, lo, hi, r in zip(tokenized, bounds[:-1], bounds[1:], rows_per_part)]
    fold = tree_reduce(client, per_part, merge_fold_counts).result()
    fold_fc = np.zeros((k, 2, n))
    fold_fc[:, :, fold.cols] = fold.feature_count
    counts = client.scatter(Shared((model.class_count_, model.feature_count_,
                                    fold.class_count.astype(np.float64), fold_fc)), broadcast=True, hash=False)
    params = {p: getattr(model, p) for p in ("strength", "prior", "min_dev", "max_clues", "alpha", "folds",
                                             "length_aware")}
    scored = [client.submit(part_fold_scores, t, vocabulary, params, classes, counts, folds[lo:hi], k, r, pure=False)
              for t, lo, hi, r in zip(tokenized, bounds[:-1], bounds[1:], rows_per_part)]
    wait_all(scored, status)
    scores = np.vstack(client.gather(scored))
    model.fit_combiner(scores, codes == 1)
