"""Scoring on the cluster: the filter travels once to every worker; each partition comes
back as its rows' log-probabilities."""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
import time
from collections import Counter

import numpy as np

from ...common.errors import ConfigError, CorpusError
from ...parse.message import parse_message
from .cluster import DEFAULT_PARTITION, RunReport, default_pending, partitions, submit_all, wait_all
from .counts import Shared, read_partition


#: filters loaded by this (worker) process, by the digest of their file
_FILTERS: dict = {}


def filter_from_bytes(blob: bytes, digest: str):
    from ...filterfile.spamfilter import SpamFilter
    f = _FILTERS.get(digest)
    if f is None:
        fd, path = tempfile.mkstemp(suffix=".spamkit")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(blob)
            f = SpamFilter.load(path)
        finally:
            os.unlink(path)
        if len(_FILTERS) >= 8:                      # a few at a time (the folds of a cross-validation)
            _FILTERS.pop(next(iter(_FILTERS)))
        _FILTERS[digest] = f
    return f


def send_filter(client, spam_filter):
    """The filter's file, sent once to every worker: (future of its bytes, their SHA-256)."""
    fd, path = tempfile.mkstemp(suffix=".spamkit")
    os.close(fd)
    try:
        spam_filter.save(path)
        with open(path, "rb") as fh:
            blob = fh.read()
    finally:
        os.unlink(path)
    return client.scatter(Shared(blob), broadcast=True, hash=False), hashlib.sha256(blob).hexdigest()


def score_partition(blob: Shared, digest: str, partition):
    """The model's log-probabilities of a partition's messages, the parse fallbacks seen, the
    bytes read, the seconds taken and the messages' familiarities."""
    started = time.perf_counter()
    f = filter_from_bytes(blob.value, digest)
    rows: list = []
    fallbacks: Counter = Counter()
    n_bytes = 0
    texts: list | None = [] if f.reads_bytes else None
    for raw, kind, _label in read_partition(partition):
        msg = parse_message(raw, kind)
        if msg.defects:
            fallbacks.update({d.split(":", 1)[0] for d in msg.defects})
        rows.append(f.analyzer(msg))
        if texts is not None:                       # the byte 4-gram model reads the raw bytes
            texts.append(msg.raw[:f.side_bytes])     # the bytes parsed (without spamkit's tags)
        n_bytes += len(raw)
    X = f.vectorizer.transform(rows)
    lp = f.model_log_proba(X, f.side_scores(texts) if texts is not None else None)
    return lp, fallbacks, n_bytes, time.perf_counter() - started, f.familiarity(rows, X)


def score_on_cluster(client, partition_size: int = DEFAULT_PARTITION, report: RunReport | None = None,
                     max_pending: int | None = None, ship: bool = False, status=None):
    """A ``score`` function for :func:`spamkit.jobs.evaluate.evaluate_filter` that scores on the cluster.

    The filter travels once to every worker (as its file's bytes); each partition comes back
    as the model's log-probabilities of its messages, which are the same, row by row, as
    scoring in one process. Calibration and prior correction are applied by the caller.
    Corpora whose messages are files are listed and the workers read them, unless ``ship``.
    """
    report = report if report is not None else RunReport()

    def score(spam_filter, corpora, progress=None):
        from ...corpus import Unread, iter_corpora
        started = time.perf_counter()
        blob_future, digest = send_filter(client, spam_filter)
        labels, ids, refs = [], [], []

        def keep(msg):
            labels.append(msg.label)
            ids.append(msg.source)
            refs.append((msg.raw if isinstance(msg.raw, Unread) else None, msg.kind))

        with contextlib.ExitStack() as listing:
            for corpus in corpora if not ship else ():
                listing.enter_context(corpus.listing())
            try:
                futures = submit_all(client, score_partition,
                                      partitions(iter_corpora(corpora), partition_size, report, progress, keep),
                                      max_pending or default_pending(client), blob_future, digest)
            except ConfigError as exc:
                raise CorpusError(f"{exc}; evaluation needs labelled corpora") from None
            report.read_seconds = time.perf_counter() - started
            wait_all(futures, status)
            parts = client.gather(futures)
        lp = np.vstack([p[0] for p in parts]) if parts else np.zeros((0, len(spam_filter.classes_)))
        familiarity = np.concatenate([p[4] for p in parts]) if parts else np.zeros(0)
        spam_filter.parse_fallbacks = sum((p[1] for p in parts), Counter())
        report.mail_bytes = sum(p[2] for p in parts)
        report.worker_seconds = sum(p[3] for p in parts)
        report.wall_seconds = time.perf_counter() - started

        def rows_of(indices):
            """Feature rows of a few messages, read again here (for the report's explanations)."""
            raws = {i: refs[i][0].read() for i in indices if refs[i][0] is not None}
            missing = set(indices) - set(raws)
            if missing:                             # shipped as bytes: one more pass to find them
                for pos, msg in enumerate(iter_corpora(corpora)):
                    if pos in missing:
                        raws[pos] = bytes(msg.raw)
            rows = [spam_filter.analyzer(parse_message(raws[i], refs[i][1])) for i in indices]
            return spam_filter.vectorizer.transform(rows)

        return labels, ids, lp, rows_of, familiarity

    return score
