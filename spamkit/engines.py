"""The local engine on several cores: messages parsed and tokenized in worker processes.

A job (:mod:`spamkit.jobs`) given ``engine=ProcessEngine(jobs)`` reads the corpus in this
process, sends chunks of messages to a pool of ``jobs`` worker processes (the standard
library's :mod:`multiprocessing`, no scheduler of ours) which parse and tokenize them --
the bulk of the work on raw mail -- and takes the token lists back *in corpus order*, so
vocabulary, counts, the logistic component's steps and every score are the same as with
one process: the filter file and the scores are identical to ``--jobs 1`` (the tests
compare them). Counting, fitting and scoring stay in this process.

Chunks of :data:`CHUNK` messages keep the pickling overhead small; at most two chunks per
worker wait at a time, so memory stays bounded whatever the corpus size.
"""

from __future__ import annotations

import multiprocessing
import os
from collections import deque
from itertools import islice

from .spamfilter import defect_families, parse_item

#: messages per task sent to a worker
CHUNK = 64

_ANALYZER = None


def _start_worker(analyzer) -> None:
    global _ANALYZER
    _ANALYZER = analyzer


#: joins a chunk's tokens for the trip back (a token holding it makes the chunk travel as lists)
_SEP = "\x00"


def _tokenize_chunk(items) -> tuple:
    """The chunk's tokens as one string and the number of tokens of each message, with the
    defect families: one long string pickles and splits in C, where 400 short strings per
    message cost the driver more to unpickle than to count (0.7 s per 5,000 TREC messages)."""
    token_lists, families = [], []
    for item in items:
        msg = parse_item(item)
        token_lists.append(_ANALYZER(msg))
        families.append(defect_families(msg) if msg.defects else ())
    flat = [t for tokens in token_lists for t in tokens]
    joined = _SEP.join(flat)
    if flat and joined.count(_SEP) != len(flat) - 1:          # a token with the separator in it
        return None, token_lists, families
    return joined, [len(tokens) for tokens in token_lists], families


def _unpack_chunk(done) -> list:
    """``(tokens, defect families)`` per message from what :func:`_tokenize_chunk` sent."""
    joined, sizes, families = done
    if joined is None:
        return list(zip(sizes, families))
    flat = joined.split(_SEP) if sum(sizes) else []
    out, at = [], 0
    for size, family in zip(sizes, families):
        out.append((flat[at:at + size], family))
        at += size
    return out


def default_jobs() -> int:
    """All the cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:                                   # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


class ProcessEngine:
    """Parse and tokenize in ``jobs`` worker processes; everything else as in one process.

    Use as a context manager (the pools are closed on exit). :meth:`fit`, :meth:`score` and
    :meth:`cross_validated_log_odds` are what the jobs call (the engine protocol of
    :mod:`spamkit.jobs`; the Dask engine has the same three).
    """

    name = "processes"
    #: the corpus is read here and the messages travel to the workers
    reads_files = False

    def __init__(self, jobs: int | None = None, chunk: int = CHUNK):
        self.jobs = default_jobs() if not jobs else int(jobs)
        self.chunk = chunk
        self._pools: dict = {}

    def __enter__(self) -> "ProcessEngine":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        for pool in self._pools.values():
            pool.terminate()
            pool.join()
        self._pools.clear()

    def check(self, spam_filter) -> None:
        """Every filter can be trained this way."""

    def parameters(self) -> dict:
        return {}                                            # the filter is the same as with one process

    def _pool(self, analyzer):
        key = repr(sorted(analyzer.get_config().items()))
        if key not in self._pools:
            methods = multiprocessing.get_all_start_methods()
            context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
            self._pools[key] = context.Pool(self.jobs, initializer=_start_worker, initargs=(analyzer,))
        return self._pools[key]

    def tokenizer(self, analyzer):
        """``tokenize(items)`` for :meth:`spamkit.spamfilter.SpamFilter.tokenized`: ``(tokens,
        defect families)`` per item, in order. The items are drawn here, in this process, so a
        bad message raises here, at its place in the corpus."""
        def tokenize(items):
            pool = self._pool(analyzer)
            source = iter(items)
            pending: deque = deque()

            def submit() -> bool:
                chunk = list(islice(source, self.chunk))
                if chunk:
                    pending.append(pool.apply_async(_tokenize_chunk, (chunk,)))
                return bool(chunk)

            more = True
            while more and len(pending) < 2 * self.jobs:
                more = submit()
            while pending:
                done = pending.popleft().get()
                if more:
                    more = submit()
                yield from _unpack_chunk(done)
        return tokenize

    def fit(self, spam_filter, messages, progress=None):
        return spam_filter.fit(messages, progress=progress, tokenize=self.tokenizer(spam_filter.analyzer))

    def score(self, spam_filter, corpora, progress=None):
        from .jobs.evaluate import score_locally
        return score_locally(spam_filter, corpora, progress, tokenize=self.tokenizer(spam_filter.analyzer))

    def cross_validated_log_odds(self, spam_filter, corpora, folds: int = 5, seed: int = 0, progress=None,
                                 return_folds: bool = False, status=None):
        from .jobs.crossval import cross_validated_log_odds
        return cross_validated_log_odds(spam_filter, corpora, folds, seed, progress, return_folds, status,
                                        tokenize=self.tokenizer(spam_filter.analyzer))
