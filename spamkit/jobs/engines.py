"""The local engine on several cores: messages parsed and tokenized in worker processes.

A job (:mod:`spamkit.jobs`) given ``engine=ProcessEngine(jobs)`` reads the corpus in this
process, sends chunks of messages to a pool of ``jobs`` worker processes (the standard
library's :class:`~concurrent.futures.ProcessPoolExecutor`, no scheduler of ours: a worker
that dies breaks the pool and the job fails with :class:`~spamkit.common.errors.WorkerError` instead
of waiting for it for ever; workers start as :mod:`spamkit.common.processes` says) which parse and tokenize them --
the bulk of the work on raw mail -- and takes the token lists back *in corpus order*, so
vocabulary, counts, the logistic component's steps and every score are the same as with
one process: the filter file and the scores are identical to ``--jobs 1`` (the tests
compare them). Counting, fitting and scoring stay in this process.

Chunks of up to :data:`CHUNK` messages and :data:`CHUNK_BYTES` bytes keep the pickling
overhead small; at most two chunks per worker wait at a time, so memory stays bounded
whatever the corpus size.
"""

from __future__ import annotations

import contextlib
import itertools
import os
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from collections import deque
from functools import partial

from ..corpus.archives import open_spools
from ..common.errors import CorpusError, WorkerError
from .engine import Engine
from .chunks import (indexed, message_size, numbered_chunk, on_the_wire, parse_chunk, rows_chunk, start_worker,
                     tokenize_chunk, unpack_chunk)
from ..common.processes import start_context, worker_pool

#: messages per task sent to a worker, at most
CHUNK = 256
#: raw mail per task: a chunk ends at CHUNK messages or once it holds this many bytes. Bounding
#: the bytes rather than the messages alone lets a chunk of short messages be large (fewer
#: hand-overs through the pool's queues, whose threads share this process with the reading)
#: while one of long messages stays bounded in memory; 512 KB was the fastest of 256 KB, 512 KB
#: and 1 MB within the 150 MB goal for 10,000 messages (the measurements: docs/results.md).
CHUNK_BYTES = 512 * 1024
#: numbers training runs, so that a worker knows when to start numbering terms again
_SESSIONS = itertools.count()
#: what :meth:`ProcessEngine.count_ahead` gives the workers before ``spamkit train`` turns to its
#: own imports (NumPy, SciPy and the models: 0.2-0.3 s, during which nothing takes results): at
#: most this many messages or bytes of raw mail, about 0.4 s of two workers' work on TREC mail;
#: a smaller window let the workers run dry, a larger one gained nothing beyond noise (docs/results.md).
AHEAD_MESSAGES = 4096
AHEAD_BYTES = 32 * 1024 * 1024

def _stop(pool: ProcessPoolExecutor) -> None:
    """Shut ``pool`` down now: queued chunks are dropped, the workers end their current chunk."""
    pool.shutdown(wait=True, cancel_futures=True)


def _analyzer_key(analyzer) -> str:
    """What tells analyzers apart: the same key, the same tokens."""
    return repr(sorted(analyzer.get_config().items()))


def _ahead_key(analyzer, grams: tuple | None) -> str:
    """What tells chunks counted ahead apart: the analyzer's key and the 4-gram settings."""
    return f"{_analyzer_key(analyzer)} grams={grams!r}"


_END = object()


class _Replay:
    """An iterator over ``items`` in front of which drawn items can be put back (:meth:`push`)."""

    def __init__(self, items):
        self._front: deque = deque()
        self._items = iter(items)

    def __iter__(self):
        return self

    def __next__(self):
        if self._front:
            return self._front.popleft()
        return next(self._items)

    def push(self, items) -> None:
        self._front.extendleft(reversed(list(items)))


class _Ahead:
    """The chunks :meth:`ProcessEngine.count_ahead` submitted: for which analyzer (``key``), the
    workers' numbering session, and ``(what was sent of each message, future)`` per chunk."""

    def __init__(self, key, session, chunks):
        self.key, self.session, self.chunks = key, session, chunks


def _trim_heap() -> None:
    """Give the C heap's free pages back to the system: glibc's ``malloc_trim(0)``, where the C
    library has it (nothing elsewhere). Called once the results that waited for ``spamkit
    train`` to finish its imports (:meth:`ProcessEngine.count_ahead`) are taken: freed, they left
    holes in the heap that the counting's later allocations did not reuse, and its peak grew with
    them (training trec07p-dev + Enron1: peak 145-154 MB without, 142-146 MB with; the call
    returned 10-15 MB)."""
    try:
        import ctypes
        trim = ctypes.CDLL(None).malloc_trim
    except (ImportError, OSError, AttributeError):           # pragma: no cover - not glibc
        return
    trim(0)


def worker_grams(spam_filter) -> tuple | None:
    """(n_bytes, bits) of a filter's byte 4-gram model when the workers can make its features
    (no context model, which reads the bytes in the driver anyway), else None."""
    grams = getattr(spam_filter, "grams", None)
    if grams is None or getattr(spam_filter, "context", None) is not None:
        return None
    return int(grams.n_bytes), int(grams.bits)


def default_jobs() -> int:
    """All the cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:                                   # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


class ProcessEngine(Engine):
    """Parse and tokenize in ``jobs`` worker processes; everything else as in one process.

    Use as a context manager (the pools are closed on exit). It gives the jobs' engine
    interface (:class:`spamkit.jobs.engine.Engine`) its primitives -- :meth:`tokenizer`,
    :meth:`counter`, :meth:`row_source`, :meth:`parsed` -- and keeps its whole operations.
    """

    name = "processes"
    works_ahead = True
    #: the corpus is read here and the messages travel to the workers
    reads_files = False
    #: but for the ones the workers read where they lie (``Corpus.located``: members of an
    #: archive whose spool the workers inherit), which are listed here, not read
    reads_located = True

    def __init__(self, jobs: int | None = None, chunk: int = CHUNK, chunk_bytes: int = CHUNK_BYTES):
        self.jobs = default_jobs() if not jobs else int(jobs)
        self.chunk = chunk
        self.chunk_bytes = chunk_bytes
        self._pools: dict = {}
        self._ahead: _Ahead | None = None

    def close(self) -> None:
        self._ahead = None
        for pool in self._pools.values():
            _stop(pool)
        self._pools.clear()

    def _new_pool(self, *initargs) -> ProcessPoolExecutor:
        # one pool at a time: a pool's manager thread would make the next start a forkserver's
        # workers instead of forking (spamkit.common.processes), and the engine uses one pool at a time
        self.close()
        context = start_context(preload=(__name__,))
        pool = worker_pool(self.jobs, context, start_worker, initargs)
        # forked workers (all of them at the first task, after this) inherit the open spools
        pool.wire = on_the_wire(open_spools() if context.get_start_method() == "fork" else frozenset())  # type: ignore[attr-defined]  # what the pool's items travel as
        return pool

    def start_workers(self, analyzer) -> None:
        """Start the workers that will tokenize with ``analyzer`` now (all of them, forked from this
        process as it is: :func:`spamkit.common.processes.worker_pool`), instead of with the first chunk.
        ``spamkit train`` starts them before it opens the corpora and imports NumPy, so that
        they hold the spools of the archives decompressing meanwhile and have no NumPy."""
        pool = self._pool(analyzer)
        pool.submit(os.getpid)                       # a task: the pool starts its workers with it

    def _pool(self, analyzer):
        key = _analyzer_key(analyzer)
        if key not in self._pools:
            self._pools[key] = self._new_pool(analyzer)
        return self._pools[key]

    def ordered(self, pool, work, items, wire=None, pending: deque | None = None):
        """``work(chunk)`` for consecutive chunks of ``items`` on ``pool``, results in order (a
        chunk ends at ``chunk`` items or once its raw messages reach ``chunk_bytes`` bytes).

        The items are drawn here, in this process, so a bad message raises here, at its place
        in the corpus; at most two chunks per worker wait at a time. ``wire(item)``: what of
        an item travels (the whole item without it). ``pending``: futures of chunks submitted
        before (:meth:`count_ahead`), whose results come first; while any of them is left, two
        chunks per worker *in the workers* are kept (the ones done wait for this process, which
        takes them quicker than the workers make them), so that the workers do not wait while
        this process catches up with what they did ahead."""
        source = iter(items)
        queued: deque = deque() if pending is None else pending
        ahead = len(queued)

        def submit() -> bool:
            chunk, size = [], 0
            for item in source:
                chunk.append(item)
                size += message_size(item)
                if len(chunk) >= self.chunk or size >= self.chunk_bytes:
                    break
            if chunk:
                queued.append(pool.submit(work, chunk if wire is None else [wire(item) for item in chunk]))
            return bool(chunk)

        def room() -> bool:
            if ahead:
                return sum(not future.done() for future in queued) < 2 * self.jobs
            return len(queued) < 2 * self.jobs

        # a worker that dies breaks the pool: the next result raises, or already the next submit
        # (when the pool learned of the death first); either way the job fails, it never hangs
        try:
            more = True
            while more and room():
                more = submit()
            while queued:
                done = queued.popleft().result()
                ahead = max(ahead - 1, 0)
                while more and room():
                    more = submit()
                yield done
        except BrokenProcessPool as exc:
            raise WorkerError(f"a worker process died (killed, or out of memory?) before it returned "
                              f"its messages; run again, or with --jobs 1 ({exc})") from None

    def tokenizer(self, analyzer):
        """``tokenize(items)`` for :meth:`spamkit.filterfile.spamfilter.SpamFilter.tokenized`: ``(tokens,
        defect families)`` per item, in order (see :meth:`ordered`)."""
        def tokenize(items):
            pool = self._pool(analyzer)
            for done in self.ordered(pool, tokenize_chunk, items, pool.wire):
                yield from unpack_chunk(done)
        return tokenize

    def parsed(self, items):
        """``(source, kind, defects)`` of each message, parsed in the workers, in order."""
        if "parse" not in self._pools:
            self._pools["parse"] = self._new_pool(None)
        for done in self.ordered(self._pools["parse"], parse_chunk, items):
            yield from done

    def counter(self, analyzer, grams: tuple | None = None):
        """``count(items)`` for :meth:`spamkit.filterfile.spamfilter.SpamFilter.fit`: ``(IndexedChunk, defect
        families of its messages, their byte 4-gram slots or None)`` per chunk of items, in
        order (see :meth:`ordered`); the slots with ``grams`` (n_bytes, bits), made in the
        workers (``count.gram_rows`` is then True). Where :meth:`count_ahead` began with the
        same messages and settings, its chunks come first."""
        def count(items):
            pool = self._pool(analyzer)
            source = _Replay(items)
            session, pending = self._resume_ahead(_ahead_key(analyzer, grams), source, pool.wire)
            if pending is None:                          # nothing ahead, or other items
                session, pending = next(_SESSIONS), None
            work = partial(numbered_chunk, (os.getpid(), session), grams=grams)
            waited = len(pending) if pending is not None else -1
            for done in self.ordered(pool, work, source, pool.wire, pending):
                waited -= 1
                if waited == 0:
                    _trim_heap()
                yield indexed(done)
        count.gram_rows = grams is not None  # type: ignore[attr-defined]  # read by the caller
        return count

    def count_ahead(self, analyzer, corpora, grams: tuple | None = None) -> None:
        """Give the workers the first messages of ``corpora`` to number now, before the caller
        turns to work of its own: at most :data:`AHEAD_MESSAGES` messages or :data:`AHEAD_BYTES`
        bytes, of those the workers read themselves (members of an archive they inherited,
        :func:`on_the_wire`), listed without being read here (:meth:`spamkit.corpus.Corpus.listing`).
        A training over the same messages then takes their results first (:meth:`counter`); one
        over other messages drops them. Nothing else changes -- the chunks' order, the numbering,
        the filter -- and an error listing the corpora is left for the training to meet at its place.

        ``spamkit train`` calls it before it imports NumPy, SciPy and the models (0.2-0.3 s of one
        core), so that the workers, forked from a process that has not loaded them, parse and
        tokenize meanwhile; ``grams`` (n_bytes, bits): a filter with byte 4-grams, whose slots the
        workers make too (:meth:`counter`)."""
        from ..corpus import iter_corpora
        pool = self._pool(analyzer)
        session = next(_SESSIONS)
        work = partial(numbered_chunk, (os.getpid(), session), grams=grams)
        chunks: deque = deque()
        chunk, chunk_size, messages, size = [], 0, 0, 0
        try:
            with contextlib.ExitStack() as listing:
                for corpus in corpora:
                    listing.enter_context(corpus.listing())
                for item in iter_corpora(corpora):
                    sent = pool.wire(item)
                    if not isinstance(sent[0], tuple):     # its bytes would travel: not listed ahead
                        break
                    chunk.append(sent)
                    chunk_size += sent[0][2]
                    if len(chunk) >= self.chunk or chunk_size >= self.chunk_bytes:
                        chunks.append((chunk, pool.submit(work, chunk)))
                        messages, size = messages + len(chunk), size + chunk_size
                        chunk, chunk_size = [], 0
                        if messages >= AHEAD_MESSAGES or size >= AHEAD_BYTES:
                            break
        except CorpusError:
            chunk = []                                     # the training meets it where it is
        if chunk:
            chunks.append((chunk, pool.submit(work, chunk)))
        self._ahead = _Ahead(_ahead_key(analyzer, grams), session, chunks)

    def _resume_ahead(self, key: str, source, wire):
        """``(session, futures)`` of the chunks :meth:`count_ahead` submitted, when ``source``
        starts with the very messages (``wire(item)`` the same: the same place in the same
        archive), drawn from it here so that the caller sees each one; else ``(None, None)``,
        the messages drawn to find out put back in front of ``source`` (a :class:`_Replay`)
        and the chunks ahead dropped."""
        ahead, self._ahead = self._ahead, None
        if ahead is None or ahead.key != key:
            return None, None
        pending: deque = deque()
        seen: list = []
        for chunk, future in ahead.chunks:
            for expected in chunk:
                item = next(source, _END)
                if item is not _END:
                    seen.append(item)
                if item is _END or wire(item) != expected:
                    for _, other in ahead.chunks:
                        other.cancel()
                    source.push(seen)
                    return None, None
            pending.append(future)
        return ahead.session, pending

    def row_blocks(self, spam_filter, items, at_least: int):
        """Blocks of the feature rows of ``items`` under a trained filter with each message's
        number of distinct tokens, ``(csr_matrix, distinct)``, in order, each of at least
        ``at_least`` messages but the last; the rows are made in the workers (the same rows as
        ``spam_filter.vectorizer.transform`` of the tokens: the representation is row by row);
        for a filter whose byte 4-grams the workers make (:func:`worker_grams`), a third item,
        the block's side scores (n, 1): the model's log-odds of each message, scored there.
        Parse fallbacks are counted on ``spam_filter.parse_fallbacks``."""
        import numpy as np
        import scipy.sparse as sp
        grams = spam_filter.grams if worker_grams(spam_filter) is not None else None
        pool = self._new_pool(spam_filter.analyzer, spam_filter.vectorizer, grams)
        try:
            blocks, distinct, side, held = [], [], [], 0
            for (data, indices, indptr, shape), sizes, families, *scores in self.ordered(pool, rows_chunk, items,
                                                                                         pool.wire):  # type: ignore[attr-defined]  # see _new_pool
                blocks.append(sp.csr_matrix((data, indices, indptr), shape=shape))
                distinct.append(sizes)
                side.extend(scores)
                held += shape[0]
                spam_filter.count_fallbacks(families)
                if held >= at_least:
                    yield (sp.vstack(blocks, format="csr"), np.concatenate(distinct),
                           *([np.concatenate(side)[:, None]] if grams is not None else []))
                    blocks, distinct, side, held = [], [], [], 0
            if blocks:
                yield (sp.vstack(blocks, format="csr"), np.concatenate(distinct),
                       *([np.concatenate(side)[:, None]] if grams is not None else []))
        finally:
            _stop(pool)

    def makes_gram_rows(self, spam_filter) -> bool:
        """Whether :meth:`fit` has the workers make ``spam_filter``'s byte 4-gram slots (then its
        driver need not read the messages' bytes: :meth:`spamkit.filterfile.spamfilter.SpamFilter.driver_reads_bytes`)."""
        vectorizer = spam_filter.vectorizer
        return worker_grams(spam_filter) is not None and vectorizer.hashing is None and vectorizer.select != "ig"

    def worker_grams(self, spam_filter) -> tuple | None:
        return worker_grams(spam_filter)

    def row_source(self, spam_filter):
        """``rows(items, at_least)``: blocks of the messages' feature rows made in the workers
        (:meth:`row_blocks`), with the side scores where the workers score the byte 4-grams
        (``rows.side_scores``)."""
        def rows(items, at_least):
            return self.row_blocks(spam_filter, items, at_least)
        rows.side_scores = worker_grams(spam_filter) is not None
        return rows
