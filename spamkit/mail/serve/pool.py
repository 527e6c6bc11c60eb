"""The resident filter's loaded filters and worker processes, shared by spamkit's own protocol
(:mod:`spamkit.mail.serve.server`) and SpamAssassin's (:mod:`spamkit.mail.serve.spamd`).

:class:`FilterCache` keeps filter files loaded (at most :data:`MAX_FILTERS`, the least recently
used dropped, a changed file reloaded at its next use); :class:`Workers` forks the processes that
classify, after the filter is loaded so that they share its arrays copy-on-write, and hands them
jobs (module-level functions) one at a time or in batches (:func:`run_batch`); :class:`Budget`,
:class:`Reply` and :class:`Work` are what a protocol gives the event loop
(:class:`spamkit.mail.serve.server.ServeLoop`) for each request.
"""

from __future__ import annotations

import collections
import multiprocessing
import os
import signal
import sys
import threading

#: filter files kept loaded at once (per-user filters): the least recently used is dropped
MAX_FILTERS = 64


def log(text: str) -> None:
    print(f"spamkit serve: {text}", file=sys.stderr, flush=True)



# ----------------------------------------------------------------------------- loaded filters

class FilterCache:
    """Filter files loaded once and reloaded when they change: after ``spamkit learn`` (the file
    is replaced: new inode, size or time) or when :meth:`reload_all` is called (SIGHUP).

    ``load(path)`` makes a filter. Requests in flight keep the filter they started with; a file
    that fails to load keeps the previous filter in use (and says so once). At most
    ``max_filters`` stay loaded, the least recently used dropped first. ``generation``, a shared
    counter (``multiprocessing.Value``), makes :meth:`reload_all` reach worker processes too.
    """

    def __init__(self, load, max_filters: int = MAX_FILTERS, generation=None, max_bytes: int | None = None,
                 weigh=None):
        self.load = load
        self.max_filters = max_filters
        # at most max_bytes of loaded filters (weigh(filter) each; the one in use always stays):
        # rotating spamc -u over 70 users' filters took a worker from 159 MB to 2.4 GB
        self.max_bytes, self.weigh = max_bytes, weigh or filter_memory
        self.generation = generation if generation is not None else multiprocessing.Value("L", 0, lock=False)
        self._filters: collections.OrderedDict = collections.OrderedDict()
        self._lock = threading.Lock()
        self._failed: dict = {}

    def after_fork(self) -> None:
        """In a new worker process: fresh locks (another thread may have held them at the fork)."""
        self._lock = threading.Lock()

    @staticmethod
    def signature(path) -> tuple:
        """What tells a file's versions apart; for a tuple of paths (a site filter and what a user
        taught over it), each one's."""
        if isinstance(path, tuple):
            return tuple(FilterCache.signature(p) for p in path)
        st = os.stat(path)
        return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns

    def reload_all(self) -> None:
        """Reload every filter at its next use (SIGHUP)."""
        self.generation.value += 1

    def get(self, path):
        """The filter of ``path`` (or of a tuple of paths ``load`` takes), loaded or reloaded as needed."""
        path = path if isinstance(path, tuple) else str(path)
        signature = (self.signature(path), self.generation.value)
        with self._lock:
            entry = self._filters.get(path)
            if entry is not None and entry[0] == signature:
                self._filters.move_to_end(path)
                return entry[1]
        try:
            loaded = self.load(path)
        except Exception as exc:                  # keep serving with what we have
            if entry is None:
                raise
            if self._failed.get(path) != signature:
                self._failed[path] = signature
                log(f"{path} changed but cannot be loaded ({type(exc).__name__}: {exc}); still using the "
                    "filter loaded before")
            return entry[1]
        weight = self.weigh(loaded) if self.max_bytes is not None else 0
        with self._lock:
            self._filters[path] = (signature, loaded, weight)
            self._filters.move_to_end(path)
            while len(self._filters) > self.max_filters or (
                    self.max_bytes is not None and len(self._filters) > 1
                    and sum(entry[2] for entry in self._filters.values()) > self.max_bytes):
                self._filters.popitem(last=False)
        if entry is not None:
            log(f"reloaded {path}")
        return loaded


def filter_memory(spam_filter) -> int:
    """About how many bytes a loaded filter holds: its model's, vectorizer's and context model's
    arrays (whatever has ``nbytes``), and 80 bytes a vocabulary term (a ``str``, its list slot
    and its share of the vocabulary's dict)."""
    total = 0
    for part in (getattr(spam_filter, "model", None), getattr(spam_filter, "vectorizer", None),
                 getattr(spam_filter, "context", None)):
        for value in (vars(part).values() if hasattr(part, "__dict__") else ()):
            total += getattr(value, "nbytes", 0) if isinstance(getattr(value, "nbytes", 0), int) else 0
    terms = getattr(getattr(spam_filter, "vectorizer", None), "terms_", None)
    return total + 80 * len(terms or ())


# ----------------------------------------------------------------------------- worker processes

_WORKER: dict = {}                                # set in the parent before the workers fork


def worker_state() -> dict:
    """What the jobs of this process share: ``cache`` (a :class:`FilterCache`) and the settings
    the server put there before the workers forked."""
    return _WORKER


def _worker_init() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and stops the workers
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # the parent reloads (through the shared generation)
    cache = _WORKER.get("cache")
    if cache is not None:
        cache.after_fork()


def _worker_loop(conn) -> None:
    """A worker process: run the jobs that come down its pipe, one at a time, until it closes."""
    _worker_init()
    while True:
        try:
            job, args = conn.recv()
        except (EOFError, OSError):
            return
        try:
            reply = ("ok", job(*args))
        except Exception as exc:                  # noqa: BLE001 -- the parent decides what it means
            reply = ("error", exc)
        try:
            conn.send(reply)
        except Exception:                         # noqa: BLE001 -- an exception that does not pickle
            conn.send(("error", RuntimeError(f"{type(reply[1]).__name__}: {reply[1]}")))


class _Worker:
    """One worker process and the parent's end of its pipe."""

    def __init__(self, context):
        self.conn, child = context.Pipe()
        self.process = context.Process(target=_worker_loop, args=(child,), daemon=True)
        self.process.start()
        child.close()

    def kill(self) -> None:
        self.process.kill()
        self.process.join(5)
        self.conn.close()


class Workers:
    """``n`` worker processes forked now, with what :func:`worker_state` holds, for
    :class:`ServeLoop` to hand jobs (module-level functions) to; ``n`` = 0: none, the loop runs
    each job itself.

    Classification is CPU-bound Python, so processes use every core; they are forked before
    any thread exists and share the loaded filters copy-on-write. Each worker has its own
    pipe and takes one job at a time (one request, or a batch of them: :func:`run_batch`), so
    nothing is shared between processes that a dying worker could leave locked: a worker that
    dies or overruns the loop's timeout is killed and replaced (:meth:`replace`), and only the
    request it was running is answered with the protocol's fallback (a batch whose worker
    died is handed out again request by request, so that only the request that kills a
    worker gets it; a batch that overran gets it whole).
    """

    def __init__(self, n: int, state: dict):
        _WORKER.clear()
        _WORKER.update(state)
        self.n = n
        self._context = multiprocessing.get_context("fork")
        self.idle: list = [_Worker(self._context) for _ in range(n)]
        self.all: set = set(self.idle)

    def replace(self, worker: _Worker) -> _Worker:
        """Kill ``worker`` (dead, or overrunning) and start another in its place: the new one."""
        worker.kill()
        self.all.discard(worker)
        new = _Worker(self._context)
        self.all.add(new)
        return new

    def close(self) -> None:
        workers, self.all, self.idle = list(self.all), set(), []
        for worker in workers:
            worker.kill()


def run_inline(job, args, fallback):
    """``job(*args)`` in this process (``--workers 0``); what it raises is answered with ``fallback``."""
    try:
        return job(*args)
    except Exception as exc:                      # noqa: BLE001 -- the protocol's answer, never a crash
        log(f"{type(exc).__name__}: {exc}")
        return fallback("failed", f"{type(exc).__name__}: {exc}")


# ----------------------------------------------------------------------------- the event loop

class Budget:
    """Bytes of requests held at once, all connections together (taken as they arrive, given back
    as the protocol drops them and when their connection closes)."""

    def __init__(self, limit: int):
        self.limit, self.used = limit, 0

    def take(self, n: int) -> bool:
        if self.used + n > self.limit:
            return False
        self.used += n
        return True

    def give(self, n: int) -> None:
        self.used -= n


class Reply:
    """A protocol's step: answer ``data`` and close the connection."""
    __slots__ = ("data",)

    def __init__(self, data: bytes):
        self.data = data


class Work:
    """A protocol's step: run ``job(*args)`` (in a worker) and answer what it returns;
    ``fallback(kind, text)`` answers instead when the job overruns (``kind`` "timeout") or its
    worker dies (``kind`` "failed").

    ``batch``, if given, is a module-level function that answers several such requests at once:
    ``batch([args, ...])`` returns the list of what ``job(*args)`` returns for each, the same
    answers (a filter scores a message the same alone and in a batch), for less work than the
    jobs one by one. The loop hands an idle worker several queued requests of the same
    ``batch`` when more are waiting than workers are idle (:func:`run_batch`).
    """
    __slots__ = ("job", "args", "fallback", "batch")

    def __init__(self, job, args: tuple, fallback, batch=None):
        self.job, self.args, self.fallback, self.batch = job, args, fallback, batch


#: requests handed to one worker at once, at most (see :class:`Work`)
MAX_BATCH = 8
#: bytes of requests handed to one worker at once, at most (beyond one request): batching saves
#: the per-call cost of scoring, which a big message does not notice, and a batch shares one
#: timeout, which a few big messages together could overrun where each alone would not
MAX_BATCH_BYTES = 1 << 20


def run_batch(job, batch, args_list: list) -> list:
    """Several requests in one worker: ``("ok", answer)`` or ``("error", text)`` for each, in order.

    ``batch(args_list)`` answers them together; should it fail as a whole, each request is
    answered by ``job`` alone, so that one request's failure is that request's alone.
    """
    try:
        answers = batch(args_list)
        if len(answers) == len(args_list):
            return [("ok", a) for a in answers]
        log(f"a batch of {len(args_list)} requests gave {len(answers)} answers; answering them one by one")
    except Exception as exc:                      # noqa: BLE001 -- each request is then tried alone
        log(f"{type(exc).__name__}: {exc}; answering a batch of {len(args_list)} requests one by one")
    out = []
    for args in args_list:
        try:
            out.append(("ok", job(*args)))
        except Exception as exc:                  # noqa: BLE001 -- that request's fallback answers it
            out.append(("error", f"{type(exc).__name__}: {exc}"))
    return out


#: a protocol's step: close the connection without an answer
