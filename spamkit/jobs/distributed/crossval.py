"""Cross-validation on the cluster: tokenized partitions stay on the workers and the folds
run in parallel, each built from the other folds' counts."""

from __future__ import annotations

import contextlib
import time
from collections import Counter

import numpy as np

from ...common.errors import CorpusError

from ...models import FisherNBStack
from ...models.base import finite_log_odds
from .cluster import DEFAULT_PARTITION, RunReport, default_pending, partitions, submit_all, wait_all
from .counts import Part, Shared, build_from_stats, check_distributable, counting, part_stats, subset, tokenize_partition, tree_reduce
from .fit import fit_combiner_on_cluster, global_counts
from .score import filter_from_bytes, send_filter


def part_log_odds(part: Part, blob: Shared, digest: str, rows) -> np.ndarray:
    """log-odds of spam of some rows of a partition under a filter (sent as its file's bytes)."""
    from ...common.labels import SPAM_NAME
    f = filter_from_bytes(blob.value, digest)
    vec = f.vectorizer
    counts = global_counts(subset(part, rows), vec.vocabulary_ if vec.hashing is None else None, vec.n_features_)
    lp = f.log_proba(vec.represent(counts))
    s = list(f.classes_).index(SPAM_NAME)
    with np.errstate(invalid="ignore"):
        return lp[:, s] - lp[:, 1 - s]


def _part_cost(part: Part) -> tuple:
    return part.seconds, part.n_bytes


def fit_from_parts(spam_filter, client, tokenized: list, labels: list, rows_per_part: list, status=None):
    """Train ``spam_filter`` on some rows of tokenized partitions (cross-validation's training folds)."""
    check_distributable(spam_filter)
    futures = [client.submit(part_stats, t, r, pure=False) for t, r in zip(tokenized, rows_per_part)]
    build_from_stats(spam_filter, tree_reduce(client, futures).result())
    if isinstance(spam_filter.model, FisherNBStack):
        fit_combiner_on_cluster(spam_filter, client, tokenized, labels, [len(r) for r in rows_per_part],
                                 None, rows_per_part)
    return spam_filter


def cv_on_cluster(client, partition_size: int = DEFAULT_PARTITION, report: RunReport | None = None,
                  ship: bool = False, status=None, max_pending: int | None = None):
    """A replacement for :func:`spamkit.jobs.crossval.cross_validated_log_odds` that runs on the cluster.

    Every message is read and tokenized once, on the workers, and stays there; the folds
    then run in parallel (one driver thread each): a fold's filter is built from the
    statistics of the other folds' rows (:func:`fit_from_parts`, the fisher-nb combiner
    included) and scores its own rows on the workers. Same folds, same filters, same
    scores as in one process.
    """
    from concurrent.futures import ThreadPoolExecutor

    from ...corpus import iter_corpora, require_classes
    from ...decide.selection import stratified_folds
    from ...features.vectorizer import Vectorizer as _Vectorizer
    from ...common.labels import HAM_NAME, SPAM_NAME
    report = report if report is not None else RunReport()

    def cv(spam_filter, corpora, folds: int = 5, seed: int = 0, progress=None, return_folds: bool = False):
        from sklearn.base import clone

        from ...filterfile.spamfilter import SpamFilter
        check_distributable(spam_filter)
        started = time.perf_counter()
        labels: list = []
        sizes: list = []

        def keep(msg):
            if msg.label not in (HAM_NAME, SPAM_NAME):
                raise CorpusError(f"{msg.source}: cross-validation needs two classes named ham and spam, got {msg.label!r}")
            labels.append(str(msg.label))

        with contextlib.ExitStack() as listing:
            for corpus in corpora if not ship else ():
                listing.enter_context(corpus.listing())
            parts = counting(partitions(iter_corpora(corpora), partition_size, report, progress, keep), sizes)
            tokenized = submit_all(client, tokenize_partition, parts, max_pending or default_pending(client),
                                    spam_filter.analyzer.get_config(), spam_filter.vectorizer.hashing)
        report.read_seconds = time.perf_counter() - started
        wait_all(tokenized, status)
        y = np.asarray(labels)
        require_classes(Counter(labels), "the threshold corpus")
        fold_of = stratified_folds(y, folds, seed=seed)
        bounds = np.concatenate([[0], np.cumsum(sizes)])
        config = spam_filter.vectorizer.get_config()

        def run_fold(k):
            train_rows = [np.flatnonzero(fold_of[lo:hi] != k) for lo, hi in zip(bounds[:-1], bounds[1:])]
            held_rows = [np.flatnonzero(fold_of[lo:hi] == k) for lo, hi in zip(bounds[:-1], bounds[1:])]
            f = SpamFilter(spam_filter.analyzer, _Vectorizer(**config), clone(spam_filter.model),
                           calibrate=spam_filter.calibrate)
            fit_from_parts(f, client, tokenized, y[fold_of != k].tolist(), train_rows)
            shared, digest = send_filter(client, f)
            scored = [client.submit(part_log_odds, t, shared, digest, r, pure=False)
                      for t, r in zip(tokenized, held_rows)]
            out = np.zeros(len(y))
            for t_rows, lo, part_scores in zip(held_rows, bounds[:-1], client.gather(scored)):
                out[lo + t_rows] = part_scores
            return fold_of == k, out

        with ThreadPoolExecutor(max_workers=folds) as pool:     # the folds in parallel
            results = list(pool.map(run_fold, range(folds)))
        scores = np.zeros(len(y))
        for mask, out in results:
            scores[mask] = out[mask]
        scores = finite_log_odds(scores)
        report.wall_seconds = time.perf_counter() - started
        costs = client.gather([client.submit(_part_cost, t, pure=False) for t in tokenized])
        report.worker_seconds = float(sum(c[0] for c in costs))
        report.mail_bytes = int(sum(c[1] for c in costs))
        if return_folds:
            return y == SPAM_NAME, scores, fold_of
        return y == SPAM_NAME, scores

    return cv
