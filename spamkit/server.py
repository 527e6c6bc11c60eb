"""A resident filter process and its wire protocol, for fast pipe mode (the spamd/spamc design).

Starting Python and importing the numerical stack costs about a second per message, too
slow to run once per delivered message. ``spamkit serve MODEL --socket PATH`` loads the
filter once and answers on a Unix-domain socket; ``spamkit-pipe --socket PATH``
(:mod:`spamkit.client`, standard library only) sends one message and writes the tagged
message to standard output, with the exit status of ``spamkit filter MODEL -``.

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
"""

from __future__ import annotations

import multiprocessing
import os
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


def answer(classify, model_id: str, raw: bytes) -> tuple[int, bytes]:
    """(status, bytes to deliver) for one message; never raises, never loses the message."""
    try:
        verdict, p = classify(raw)
        return VERDICT_STATUS[verdict], tag(raw, verdict, p, model_id)
    except Exception as exc:                      # noqa: BLE001 -- a mail filter must pass mail on
        print(f"spamkit serve: {type(exc).__name__}: {exc}; message passed through", file=sys.stderr)
        return EXIT_ERROR, raw


# ----------------------------------------------------------------------------- worker processes

_WORKER: dict = {}                                # set in the parent before the workers fork


def _worker_init() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and stops the pool
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _worker_answer(raw: bytes) -> tuple[int, bytes]:
    return answer(_WORKER["classify"], _WORKER["model_id"], raw)


class _Budget:
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


class _Deadline(Exception):
    """The client did not send its request in time, or went away."""


def _read_exact(sock, n: int, deadline: float, keep: bool = True) -> bytes:
    """Exactly ``n`` bytes before ``deadline`` (``keep=False``: read and drop them)."""
    chunks, got = [], 0
    while got < n:
        left = deadline - time.monotonic()
        if left <= 0:
            raise _Deadline("timed out")
        sock.settimeout(left)
        try:
            chunk = sock.recv(min(1 << 20, n - got))
        except (socket.timeout, OSError) as exc:
            raise _Deadline(str(exc)) from None
        if not chunk:
            raise _Deadline("the client closed the connection")
        got += len(chunk)
        if keep:
            chunks.append(chunk)
    return b"".join(chunks)


class _Handler(socketserver.BaseRequestHandler):
    def handle(self):
        server: FilterServer = self.server
        deadline = time.monotonic() + server.timeout
        try:
            (length,) = _LENGTH.unpack(_read_exact(self.request, _LENGTH.size, deadline))
            if length > server.max_size:
                _read_exact(self.request, length, deadline, keep=False)
                return self._reply(EXIT_REFUSED, f"message of {length} bytes is over the server's limit of "
                                                 f"{server.max_size} (spamkit serve --max-size)".encode())
            if not server.budget.acquire(length, deadline):
                _read_exact(self.request, length, deadline, keep=False)
                return self._reply(EXIT_REFUSED, b"server busy: too many bytes in flight; try again")
            try:
                raw = _read_exact(self.request, length, deadline)
                status, out = server.classify_one(raw)
                self._reply(status, out)
            finally:
                server.budget.release(length)
        except _Deadline:
            return                                 # the client still holds its message

    def _reply(self, status: int, payload: bytes) -> None:
        self.request.settimeout(self.server.timeout)
        try:
            self.request.sendall(bytes([status]) + _LENGTH.pack(len(payload)) + payload)
        except OSError:
            pass                                   # the client went away; it still holds its message


class FilterServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    """A concurrent resident filter on a Unix-domain socket (see the module docstring)."""

    daemon_threads = True
    request_queue_size = BACKLOG

    def __init__(self, path, classify, model_id: str, workers: int = 0, max_size: int = MAX_MESSAGE,
                 memory_budget: int = MEMORY_BUDGET, timeout: float = TIMEOUT, socket_mode: int = 0o600):
        self.classify = classify
        self.model_id = model_id
        self.max_size = max_size
        self.timeout = timeout
        self.budget = _Budget(max(memory_budget, max_size))
        self._lock = threading.Lock()
        self.pool = None
        path = str(path)
        if os.path.lexists(path):
            if not stat.S_ISSOCK(os.lstat(path).st_mode):
                raise OSError(f"{path} exists and is not a socket; not replacing it (choose another --socket)")
            probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                probe.connect(path)
            except OSError:
                os.unlink(path)                    # stale socket of a process that is gone
            else:
                probe.close()
                raise OSError(f"{path}: another spamkit serve is already answering here")
            finally:
                probe.close()
        if workers > 0:
            # fork the workers now, before any thread exists; they inherit the loaded filter
            _WORKER.update(classify=classify, model_id=model_id)
            self.pool = multiprocessing.get_context("fork").Pool(workers, initializer=_worker_init)
        old = os.umask(0o777 & ~socket_mode)
        try:
            super().__init__(path, _Handler)
        finally:
            os.umask(old)
        os.chmod(path, socket_mode)

    def classify_one(self, raw: bytes) -> tuple[int, bytes]:
        """(status, bytes to deliver): in a worker process if there are any; the message on a timeout."""
        if self.pool is None:
            with self._lock:
                return answer(self.classify, self.model_id, raw)
        try:
            return self.pool.apply_async(_worker_answer, (raw,)).get(self.timeout)
        except multiprocessing.TimeoutError:
            print(f"spamkit serve: classifying took over {self.timeout:g} s; message passed through",
                  file=sys.stderr)
            return EXIT_ERROR, raw
        except Exception as exc:                  # noqa: BLE001 -- a worker died: pass the mail on
            print(f"spamkit serve: {type(exc).__name__}: {exc}; message passed through", file=sys.stderr)
            return EXIT_ERROR, raw

    def server_close(self):
        super().server_close()
        if self.pool is not None:
            self.pool.terminate()
            self.pool.join()
        try:
            os.unlink(self.server_address)
        except OSError:
            pass
