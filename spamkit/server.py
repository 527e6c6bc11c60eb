"""The resident filter process (``spamkit serve``) and spamkit's own wire protocol.

``spamkit serve MODEL --socket PATH`` loads the filter once and answers on a Unix-domain
socket; ``spamkit-pipe --socket PATH`` (:mod:`spamkit.client`, standard library only) sends
one message and writes the tagged message to standard output, with the exit status of
``spamkit filter MODEL -``. The machinery here — loaded filters that reload when their file
changes (:class:`FilterCache`), worker processes (:class:`Workers`), the limits on clients,
bytes and time (:class:`Resident`) — is shared with SpamAssassin's protocol
(:mod:`spamkit.spamd`, ``spamkit serve --spamd``).

Protocol (all lengths 8-byte big-endian unsigned):

    request:  length, message bytes
    reply:    status byte, length, bytes
              0 spam, 1 ham, 2 unsure: the tagged message
              3 error: the message unchanged
              4 refused (too big, server busy): a UTF-8 reason; the client keeps its copy

Built to hold under abuse (issue "Hostile inputs"):

* **Concurrency.** Each connection has its own thread, so a client that connects and
  sends nothing, or sends slowly, holds only its own thread; the listen backlog
  (:data:`BACKLOG`) absorbs bursts. Classification is CPU-bound Python, so it runs in
  ``workers`` processes forked after the filter is loaded (they share its arrays
  copy-on-write), one message at a time each, which uses every core; ``workers=0``
  classifies in the connection threads, one at a time.
* **Timeouts.** A request must arrive in full within ``timeout`` seconds of the
  connection (a slow-loris client is cut off and costs nothing meanwhile); a
  classification that takes longer than ``timeout`` is answered with the message
  unchanged (status 3).
* **Bounded memory.** A request longer than ``max_size`` is read and discarded in small
  pieces and refused (status 4) with the reason; the bytes of all requests being held at
  once are limited by ``memory_budget`` (a connection waits for room, and is refused
  when none frees up within the timeout). Parsing itself is bounded
  (:mod:`spamkit.message`).
* **The socket.** Created with mode 0600 unless ``socket_mode`` says otherwise; only a
  stale socket of a process that is gone is ever removed from the path (a regular file
  there is refused).
* **Connections.** At most ``max_clients`` are served at once (default
  :data:`MAX_CLIENTS`); one more is refused at once with "server busy" (status 4) and the
  client keeps its message.
* **Reloading.** The filter file is checked (one ``stat``) before each message and
  reloaded when it changed — ``spamkit learn`` replaces it atomically — and every filter
  is reloaded after SIGHUP; messages in flight finish with the filter they started with.
"""

from __future__ import annotations

import collections
import multiprocessing
import os
import queue
import signal
import socket
import socketserver
import stat
import sys
import threading
import time

from .client import LENGTH as _LENGTH
from .mailfilter import tag
from .passthrough import EXIT_ERROR, EXIT_REFUSED, VERDICT_STATUS

#: largest message classified (bytes); a bigger one is refused and the client passes it on
MAX_MESSAGE = 16 << 20
#: bytes of requests held at once, all connections together
MEMORY_BUDGET = 64 << 20
#: seconds a client has to send its request, and the server to classify it
TIMEOUT = 30.0
#: pending connections the kernel queues before refusing (capped by net.core.somaxconn)
BACKLOG = 1024
#: connections served at once; more are answered "busy" at once (spamd's --max-children)
MAX_CLIENTS = 256
#: filter files kept loaded at once (per-user filters): the least recently used is dropped
MAX_FILTERS = 64
#: connection threads kept waiting for the next connection, and how long each waits
IDLE_THREADS = 16
IDLE_SECONDS = 30.0


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

    def __init__(self, load, max_filters: int = MAX_FILTERS, generation=None):
        self.load = load
        self.max_filters = max_filters
        self.generation = generation if generation is not None else multiprocessing.Value("L", 0, lock=False)
        self._filters: collections.OrderedDict = collections.OrderedDict()
        self._lock = threading.Lock()
        self._failed: dict = {}

    def after_fork(self) -> None:
        """In a new worker process: fresh locks (another thread may have held them at the fork)."""
        self._lock = threading.Lock()

    @staticmethod
    def signature(path: str) -> tuple:
        st = os.stat(path)
        return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns

    def reload_all(self) -> None:
        """Reload every filter at its next use (SIGHUP)."""
        self.generation.value += 1

    def get(self, path):
        """The filter of ``path``, loaded or reloaded as needed."""
        path = str(path)
        signature = (self.signature(path), self.generation.value)
        with self._lock:
            entry = self._filters.get(path)
            if entry is not None and entry[0] == signature:
                self._filters.move_to_end(path)
                return entry[1]
        try:
            loaded = self.load(path)
        except Exception as exc:                  # noqa: BLE001 -- keep serving with what we have
            if entry is None:
                raise
            if self._failed.get(path) != signature:
                self._failed[path] = signature
                log(f"{path} changed but cannot be loaded ({type(exc).__name__}: {exc}); still using the "
                    "filter loaded before")
            return entry[1]
        with self._lock:
            self._filters[path] = (signature, loaded)
            self._filters.move_to_end(path)
            while len(self._filters) > self.max_filters:
                self._filters.popitem(last=False)
        if entry is not None:
            log(f"reloaded {path}")
        return loaded


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
    """Runs jobs (module-level functions) in ``n`` worker processes forked now, with what
    :func:`worker_state` holds, or in the calling thread, one at a time, for ``n`` = 0.

    Classification is CPU-bound Python, so processes use every core; they are forked before
    any thread exists and share the loaded filters copy-on-write. Each worker has its own
    pipe and takes one job at a time (an idle queue in the parent hands them out), so nothing
    is shared between processes that a dying worker could leave locked: a worker that dies or
    overruns ``timeout`` is killed and replaced, and the job raises (TimeoutError,
    RuntimeError) while every other request goes on.
    """

    def __init__(self, n: int, state: dict, timeout: float):
        _WORKER.clear()
        _WORKER.update(state)
        self.n, self.timeout = n, timeout
        self._lock = threading.Lock()
        self._context = multiprocessing.get_context("fork")
        self._idle: queue.Queue = queue.Queue()
        self._all: set = set()
        for _ in range(n):
            self._add()

    def _add(self) -> None:
        worker = _Worker(self._context)
        with self._lock:
            self._all.add(worker)
        self._idle.put(worker)

    def _replace(self, worker: _Worker) -> None:
        worker.kill()
        with self._lock:
            self._all.discard(worker)
        self._add()

    def run(self, job, *args):
        """``job(*args)``; raises TimeoutError after ``timeout`` s, or what the job raised."""
        if self.n == 0:
            with self._lock:
                return job(*args)
        deadline = time.monotonic() + self.timeout
        try:
            worker = self._idle.get(timeout=self.timeout)
        except queue.Empty:
            raise TimeoutError(f"every worker was busy for {self.timeout:g} s") from None
        try:
            worker.conn.send((job, args))
            if not worker.conn.poll(max(deadline - time.monotonic(), 0.0)):
                self._replace(worker)
                raise TimeoutError(f"the filter took over {self.timeout:g} s")
            status, value = worker.conn.recv()
        except (EOFError, OSError):
            self._replace(worker)
            raise RuntimeError("a worker process died; it has been replaced") from None
        self._idle.put(worker)
        if status == "error":
            raise value
        return value

    def close(self) -> None:
        with self._lock:
            workers, self._all = list(self._all), set()
        for worker in workers:
            worker.kill()


def answer_job(model: str, raw: bytes) -> tuple[int, bytes]:
    """(status, bytes to deliver) for one message of the spamkit protocol; never loses it."""
    try:
        spam_filter = _WORKER["cache"].get(model)
        verdict, p = spam_filter.verdict(raw)
        return VERDICT_STATUS[verdict], tag(raw, verdict, p, spam_filter.model_id,
                                            getattr(spam_filter, "points_threshold", 0.5))
    except Exception as exc:                      # noqa: BLE001 -- a mail filter must pass mail on
        log(f"{type(exc).__name__}: {exc}; message passed through")
        return EXIT_ERROR, raw


# ----------------------------------------------------------------------------- connections

class Budget:
    """Bytes of requests held at once: acquire before reading a request, release after replying."""

    def __init__(self, limit: int):
        self.limit, self.used = limit, 0
        self._cond = threading.Condition()

    def acquire(self, n: int, deadline: float) -> bool:
        with self._cond:
            while self.used + n > self.limit:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
            self.used += n
            return True

    def release(self, n: int) -> None:
        with self._cond:
            self.used -= n
            self._cond.notify_all()


class Deadline(Exception):
    """The client did not send its request in time, or went away."""


def read_exact(sock, n: int, deadline: float, keep: bool = True) -> bytes:
    """Exactly ``n`` bytes before ``deadline`` (``keep=False``: read and drop them)."""
    chunks, got = [], 0
    while got < n:
        left = deadline - time.monotonic()
        if left <= 0:
            raise Deadline("timed out")
        sock.settimeout(left)
        try:
            chunk = sock.recv(min(1 << 20, n - got))
        except (socket.timeout, OSError) as exc:
            raise Deadline(str(exc)) from None
        if not chunk:
            raise Deadline("the client closed the connection")
        got += len(chunk)
        if keep:
            chunks.append(chunk)
    return b"".join(chunks)


def unix_socket_ready(path: str) -> None:
    """Make ``path`` free for a new socket: only a stale socket of a process that is gone is
    removed; a regular file, or a socket someone answers on, is refused (OSError)."""
    if not os.path.lexists(path):
        return
    if not stat.S_ISSOCK(os.lstat(path).st_mode):
        raise OSError(f"{path} exists and is not a socket; not replacing it (choose another socket path)")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(path)
    except OSError:
        os.unlink(path)                            # stale socket of a process that is gone
    else:
        raise OSError(f"{path}: another server is already answering here")
    finally:
        probe.close()


class Resident:
    """What every protocol's server shares: the workers, the limits, the connection count.

    Mixed into a ``socketserver`` server class with ``ThreadingMixIn``: a thread per
    connection (a client that sends nothing holds only its own thread). A thread that has
    served its connection waits up to :data:`IDLE_SECONDS` for the next one (at most
    :data:`IDLE_THREADS` wait), so a busy server does not start a thread per message (about
    0.1 ms each). At most ``max_clients`` connections are served at once; one more is handed
    to :meth:`busy`.
    """

    daemon_threads = True
    request_queue_size = BACKLOG
    allow_reuse_address = True

    def setup_resident(self, workers: Workers, max_size: int, memory_budget: int, timeout: float,
                       max_clients: int) -> None:
        self.workers = workers
        self.max_size = max_size
        self.timeout = timeout
        self.budget = Budget(max(memory_budget, max_size))
        self.clients = threading.BoundedSemaphore(max_clients)
        self._idle: list = []                     # the inboxes of threads waiting for a connection
        self._idle_lock = threading.Lock()

    def process_request(self, request, client_address):
        if not self.clients.acquire(blocking=False):
            try:
                self.busy(request)
            finally:
                self.shutdown_request(request)
            return
        try:
            with self._idle_lock:
                inbox = self._idle.pop() if self._idle else None
            if inbox is not None:
                inbox.put((request, client_address))
            else:
                threading.Thread(target=self._connections, args=(request, client_address), daemon=True).start()
        except BaseException:
            self.clients.release()
            raise

    def _connections(self, request, client_address) -> None:
        """A connection thread: serve a connection, then wait for the next one or end."""
        inbox: queue.SimpleQueue = queue.SimpleQueue()
        while True:
            try:
                socketserver.ThreadingMixIn.process_request_thread(self, request, client_address)
            finally:
                self.clients.release()
            with self._idle_lock:
                if len(self._idle) >= IDLE_THREADS:
                    return
                self._idle.append(inbox)
            try:
                request, client_address = inbox.get(timeout=IDLE_SECONDS)
            except queue.Empty:
                with self._idle_lock:
                    if inbox in self._idle:
                        self._idle.remove(inbox)
                        return
                request, client_address = inbox.get()   # handed one just as the wait ran out

    def busy(self, request) -> None:
        """Answer a connection over ``max_clients`` (the protocol's "try again later")."""


class PrivateUnixServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    """A threaded server on a Unix-domain socket created with ``socket_mode`` (umask set while it
    is made, so it is never more open, even for an instant) after :func:`unix_socket_ready`;
    the socket file is removed when the server closes."""

    def __init__(self, path, handler, socket_mode: int):
        path = str(path)
        unix_socket_ready(path)
        old = os.umask(0o777 & ~socket_mode)
        try:
            super().__init__(path, handler)
        finally:
            os.umask(old)
        os.chmod(path, socket_mode)

    def server_close(self):
        super().server_close()
        try:
            os.unlink(self.server_address)
        except OSError:
            pass


# ----------------------------------------------------------------------------- the spamkit protocol

class _Handler(socketserver.BaseRequestHandler):
    def handle(self):
        server: FilterServer = self.server
        deadline = time.monotonic() + server.timeout
        try:
            (length,) = _LENGTH.unpack(read_exact(self.request, _LENGTH.size, deadline))
            if length > server.max_size:
                read_exact(self.request, length, deadline, keep=False)
                return self._reply(EXIT_REFUSED, f"message of {length} bytes is over the server's limit of "
                                                 f"{server.max_size} (spamkit serve --max-size)".encode())
            if not server.budget.acquire(length, deadline):
                read_exact(self.request, length, deadline, keep=False)
                return self._reply(EXIT_REFUSED, b"server busy: too many bytes in flight; try again")
            try:
                raw = read_exact(self.request, length, deadline)
                status, out = server.classify_one(raw)
                self._reply(status, out)
            finally:
                server.budget.release(length)
        except Deadline:
            return                                 # the client still holds its message

    def _reply(self, status: int, payload: bytes) -> None:
        self.request.settimeout(self.server.timeout)
        try:
            self.request.sendall(bytes([status]) + _LENGTH.pack(len(payload)) + payload)
        except OSError:
            pass                                   # the client went away; it still holds its message


class FilterServer(Resident, PrivateUnixServer):
    """spamkit's own protocol on a Unix-domain socket (see the module docstring), for
    ``spamkit-pipe``; the filter file ``model`` is reloaded when it changes (the filters of the
    workers' :class:`FilterCache` carry their ``model_id``)."""

    def __init__(self, path, model: str, workers: Workers, max_size: int = MAX_MESSAGE,
                 memory_budget: int = MEMORY_BUDGET, timeout: float = TIMEOUT, socket_mode: int = 0o600,
                 max_clients: int = MAX_CLIENTS):
        self.model = str(model)
        self.setup_resident(workers, max_size, memory_budget, timeout, max_clients)
        super().__init__(path, _Handler, socket_mode)

    def busy(self, request) -> None:
        payload = b"server busy: too many clients at once; try again"
        try:
            request.settimeout(1.0)
            request.sendall(bytes([EXIT_REFUSED]) + _LENGTH.pack(len(payload)) + payload)
        except OSError:
            pass

    def classify_one(self, raw: bytes) -> tuple[int, bytes]:
        """(status, bytes to deliver): in a worker process if there are any; the message on a timeout."""
        try:
            return self.workers.run(answer_job, self.model, raw)
        except TimeoutError as exc:
            log(f"{exc}; message passed through")
            return EXIT_ERROR, raw
        except Exception as exc:                  # noqa: BLE001 -- a worker died: pass the mail on
            log(f"{type(exc).__name__}: {exc}; message passed through")
            return EXIT_ERROR, raw
