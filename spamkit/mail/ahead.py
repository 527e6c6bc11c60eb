"""Judging the next messages in worker processes while this process tags and moves in order.

``spamkit filter --jobs N`` (default: every core) hands the messages of a mailbox to N worker
processes in chunks, a few chunks ahead of the message being written; the workers read and
classify (parse, tokens, model, decision -- the expensive part), and the filter run acts on
each message in mailbox order exactly as with one process:

* A Maildir or MH message is read again by the run just before it is tagged or moved, as it
  always was, and the worker's verdict is used only if the bytes it judged are the bytes read
  now (same length and CRC-32); otherwise (a mail client changed the file meanwhile) the run
  classifies it itself. So the window in which another program can change a message under
  the filter is the same as with one process.
* An mbox is read by the run (under its locks) and the workers get the messages' bytes.
* Given the filter's ``score`` (many raw messages -> class probabilities and familiarity, as
  :meth:`spamkit.filterfile.spamfilter.SpamFilter.score`), a worker scores a chunk in one batch (on
  short messages five times quicker than one message at a time) and returns the scores, not
  verdicts: the run decides (:meth:`~spamkit.filterfile.spamfilter.SpamFilter.verdict_from`) in mailbox
  order, so the familiarity guard sees the stream, and counts it, as with one process.
* In a tagging run over a Maildir or MH folder a worker also writes each message's tagged
  version beside it, as the run would (:class:`WriteAhead`: the folder's temporary name, under
  the worker's pid, the message's mode, not yet fsynced), for the verdict it expects. The run
  renames it over the message, with its group, only if the bytes it reads now are the bytes
  the worker judged and its own verdict and P(spam), decided in mailbox order, are the ones
  the version was written for; otherwise it removes it and writes its own. Versions written
  for messages the run never reaches (it stopped) are removed when it stops; a worker whose
  run is gone writes none, and what a killed run's workers left is removed by the next run's
  clean-up, as the run's own temporaries are (a name never renamed over a message). This
  takes the tagging and the file creation, a third of the run's own work per message, off
  the run's process (10,000 Maildir messages tagged and moved on tmpfs: 5.6-5.9 -> 5.0 s).
* A worker that fails on a message reports the error as a value: the message is counted as a
  failure and left as it was, as with one process. A worker that dies (killed, out of memory)
  breaks the pool: the run notices and classifies the rest itself.
* The workers are forked before the run takes any lock, so no lock is held by a worker; they
  exit when the run's process is gone (killed included), and write nothing to its standard
  output or error.

The workers inherit the classifier by ``fork`` (nothing is pickled) when the run's process has
one thread, as the ``spamkit filter`` command's has; a program that runs a filter with other
threads alive gets ``forkserver`` workers and the classifier pickled to them in memory (see
:mod:`spamkit.common.processes`: ``fork`` beside other threads can hang a worker for ever). Where the
platform has no ``fork``, ``--jobs`` has no effect.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
import warnings
import zlib
from collections import deque
from concurrent.futures.process import BrokenProcessPool
from itertools import islice
from typing import Callable

from ..common.durable import MAX_MESSAGE_FILE, read_file, unlink_quietly
from ..common.processes import start_context, worker_pool
from .tags import recorded_verdict, tag

#: messages per task
CHUNK = 32

_CLASSIFY: Callable | None = None
_SCORE: Callable | None = None
_DECIDE: Callable | None = None
_MODEL_ID = ""
_FORCE = False
_PARENT = None


class WriteAhead:
    """What a worker needs to write a Maildir or MH message's tagged version as well (see
    :func:`_judge_chunk`): the mailbox (its ``write_new``), the filter's id and its threshold
    on P(spam) (the tags' points). Sent with each chunk of a tagging run's folder messages."""

    def __init__(self, box, model_id: str, threshold: float):
        self.box, self.model_id, self.threshold = box, model_id, threshold

    def write(self, path, raw: bytes, verdict: str, p: float):
        """``(temporary path, or "" when tagging changes nothing, verdict, p)``; None if it
        could not be written (the run then writes it itself and meets the error itself) or
        the run is gone (killed: nothing more is written for it)."""
        if _PARENT is not None and os.getppid() != _PARENT:
            return None
        try:
            new = tag(raw, verdict, p, self.model_id, self.threshold)
            if new == raw:
                return "", verdict, p
            tmp, fd = self.box.write_new(path, new)
        except Exception:                        # noqa: BLE001 - the run tries again and reports
            return None
        os.close(fd)                             # the run makes it durable with its group
        return str(tmp), verdict, p


def _watch_parent(parent: int) -> None:
    while True:
        time.sleep(0.25)
        if os.getppid() != parent:          # the run is gone (killed): nothing left to judge for
            os.kill(os.getpid(), signal.SIGKILL)


def _start(classify, score, decide, model_id: str, force: bool, parent: int | None) -> None:
    """A worker's start: what it judges with, standard streams to /dev/null, and a watch on
    ``parent`` (the run, when forked from it; else this worker's parent now, a forkserver,
    which exits with the run)."""
    global _CLASSIFY, _SCORE, _DECIDE, _MODEL_ID, _FORCE, _PARENT
    _CLASSIFY, _SCORE, _DECIDE, _MODEL_ID, _FORCE = classify, score, decide, model_id, force
    if parent is None:
        parent = os.getppid()
    _PARENT = parent
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.dup2(null, 2)
    os.close(null)
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()


def _ready() -> bool:
    return True


def fingerprint(raw: bytes) -> tuple[int, int]:
    """What identifies the bytes a worker judged: their length and CRC-32."""
    return len(raw), zlib.crc32(raw)


def _judge_chunk(entries, writer: WriteAhead | None = None) -> list:
    """Per entry (a path, message bytes, or None to skip): None, or ``(fingerprint, outcome,
    value, p)`` with outcome "ok" (value: the verdict), "scored" (value: the row of class
    probabilities, p: the familiarity; the run decides), "recorded" (already tagged by this
    model: the run reads the recorded verdict itself) or "error" (value: what went wrong).

    With a ``writer`` (a tagging run over a Maildir or MH folder), an "ok" or "scored" entry
    read from a path gets a fifth item, :meth:`WriteAhead.write`'s: its tagged version written
    beside it, under this worker's pid, for the verdict this worker expects -- the run's own
    for "ok"; for "scored", the filter's ``decide`` here, which the run's decision in mailbox
    order may overrule (the familiarity guard's window). The run uses the file only if its
    own verdict and P(spam) are these and the bytes it reads are the bytes judged; it removes
    it otherwise."""
    out: list = [None] * len(entries)
    batch = []                                   # (position, bytes, fingerprint) to score together
    for i, entry in enumerate(entries):
        if entry is None:
            continue
        if isinstance(entry, bytes):
            raw = entry
        else:
            try:
                raw = read_file(entry, MAX_MESSAGE_FILE)
            except OSError:
                continue                         # the run reads it again and reports what it finds
        mark = fingerprint(raw)
        if not _FORCE and recorded_verdict(raw, _MODEL_ID) is not None:
            out[i] = (mark, "recorded", None, None)
        elif _SCORE is not None:
            batch.append((i, raw, mark))
        else:
            try:
                assert _CLASSIFY is not None         # set by _start in every worker
                verdict, p = _CLASSIFY(raw)
            except Exception as exc:             # noqa: BLE001 - reported as a failure of this message
                out[i] = _failure(mark, exc)
                continue
            out[i] = (mark, "ok", verdict, float(p))
            if writer is not None and not isinstance(entry, bytes):
                out[i] += (writer.write(entry, raw, verdict, float(p)),)
    if batch:
        try:
            rows = _scored([raw for _, raw, _ in batch])
        except Exception:                        # noqa: BLE001 - find the message, one at a time
            rows = None
        for k, (i, raw, mark) in enumerate(batch):
            if rows is None:
                try:
                    row, familiarity = _scored([raw])[0]
                except Exception as exc:         # noqa: BLE001 - reported as a failure of this message
                    out[i] = _failure(mark, exc)
                    continue
            else:
                row, familiarity = rows[k]
            out[i] = (mark, "scored", row, familiarity)
            if writer is not None and _DECIDE is not None and not isinstance(entries[i], bytes):
                try:
                    verdict, p = _DECIDE(row, familiarity)
                except Exception:                # noqa: BLE001 - the run decides, and reports, itself
                    continue
                out[i] += (writer.write(entries[i], raw, verdict, p),)
    return out


def _pickles(value) -> bool:
    import pickle
    try:
        pickle.dumps(value)
    except Exception:                            # noqa: BLE001 - whatever pickling raises
        return False
    return True


def written_ahead(judgement):
    """What a worker wrote with this judgement (:func:`_judge_chunk`): ``(the temporary's path,
    or "" when tagging changed nothing, the verdict, P(spam))``, or None."""
    if judgement is not None and len(judgement) > 4:
        return judgement[4]
    return None


def _remove_version(judgement) -> None:
    version = written_ahead(judgement)
    if version is not None and version[0]:
        unlink_quietly(version[0])


def _failure(mark, exc: Exception) -> tuple:
    return mark, "error", f"{type(exc).__name__}: {exc}", None


def _scored(raws) -> list:
    """``[(class probabilities as floats, familiarity)]`` of messages, by the filter's ``score``."""
    assert _SCORE is not None                    # set by _start where a filter scores
    proba, familiarity = _SCORE(raws)
    if len(proba) != len(raws) or len(familiarity) != len(raws):
        raise ValueError(f"scored {len(proba)} of {len(raws)} messages")
    return [([float(v) for v in proba[k]], float(familiarity[k])) for k in range(len(raws))]


class JudgeAhead:
    """Worker processes that judge messages ahead of a filter run (use as a context manager)."""

    def __init__(self, classify, model_id: str, force: bool, jobs: int, chunk: int = CHUNK, score=None,
                 decide=None):
        self.jobs, self.chunk = jobs, chunk
        self.broken = False
        self._pool = None
        if "fork" not in multiprocessing.get_all_start_methods():
            return
        context = start_context(preload=(__name__,))
        forked = context.get_start_method() == "fork"
        if not forked and decide is not None and not _pickles(decide):
            decide = None                         # only a guess to write ahead with: the workers score without it
        self._pool = worker_pool(jobs, context, _start,
                                 (classify, score, decide, model_id, force, os.getpid() if forked else None))
        # every worker starts at the first task: now, before the run takes any lock
        try:
            self._pool.submit(_ready).result()
        except Exception as exc:                  # noqa: BLE001 - forkserver workers need what pickles
            self.close()
            warnings.warn(f"filter workers not started ({type(exc).__name__}: {exc}); the run judges every "
                          "message itself", RuntimeWarning, stacklevel=2)

    def __enter__(self) -> "JudgeAhead":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def judged(self, items, entry, writer: WriteAhead | None = None):
        """``(item, judgement or None)`` for each of ``items`` in order; ``entry(item)`` is what
        a worker reads: a path, bytes, or None (nothing to judge). A None judgement means: judge
        it yourself. With a ``writer``, the workers also write tagged versions (see
        :func:`_judge_chunk`): the caller owns the temporary of each judgement it is handed
        (:func:`written_ahead`) and removes it unless it renames it; those of judgements not
        handed out (the run stopped or failed first) are removed here when the generator is
        closed."""
        source = iter(items)
        if self._pool is None or self.broken:
            for item in source:
                yield item, None
            return
        pending: deque = deque()
        unhanded: list = []                       # the current chunk's judgements not yet handed out

        def submit() -> bool:
            chunk = list(islice(source, self.chunk))
            if chunk:
                assert self._pool is not None        # the pool lives as long as the run
                try:
                    future = self._pool.submit(_judge_chunk, [entry(item) for item in chunk], writer)
                except (BrokenProcessPool, RuntimeError):
                    future = None
                pending.append((chunk, future))
            return bool(chunk)

        try:
            more = True
            while more and len(pending) < 2 * self.jobs:
                more = submit()
            while pending:
                chunk, future = pending.popleft()
                results = None
                if future is not None and not self.broken:
                    try:
                        results = future.result()
                    except BrokenProcessPool:     # a worker died: judge the rest here
                        self.broken = True
                if more:
                    more = submit()
                unhanded[:] = results or []
                for i, item in enumerate(chunk):
                    judgement = results[i] if results is not None else None
                    unhanded[:1] = []
                    yield item, judgement
            for item in source:                   # after a broken pool: what was not yet sent
                yield item, None
        finally:
            if writer is not None:
                self._remove_written(unhanded, pending)

    def _remove_written(self, unhanded, pending) -> None:
        """Remove the temporaries of judgements never handed out: the rest of the current
        chunk's and, waiting for them, the pending chunks' (a chunk not yet started is cancelled)."""
        for judgement in unhanded:
            _remove_version(judgement)
        for _, future in pending:
            if future is None or future.cancel():
                continue
            try:
                results = future.result()
            except Exception:                     # noqa: BLE001 - a dead worker wrote what the next clean-up removes
                continue
            for judgement in results:
                _remove_version(judgement)
