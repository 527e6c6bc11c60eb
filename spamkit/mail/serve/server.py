"""The resident filter process (``spamkit serve``) and spamkit's own wire protocol.

``spamkit serve MODEL --socket PATH`` loads the filter once and answers on a Unix-domain
socket; ``spamkit-pipe --socket PATH`` (:mod:`spamkit.mail.serve.client`, standard library only) sends
one message and writes the tagged message to standard output, with the exit status of
``spamkit filter MODEL -``. The machinery here — loaded filters that reload when their file
changes (:class:`~spamkit.mail.serve.pool.FilterCache`), worker processes
(:class:`~spamkit.mail.serve.pool.Workers`), the event loop that
reads the connections and keeps the limits on clients, bytes and time (:class:`ServeLoop`) —
is shared with SpamAssassin's protocol (:mod:`spamkit.mail.serve.spamd`, ``spamkit serve --spamd``).

spamkit's own protocol on the wire is :mod:`spamkit.mail.serve.wire`.

Built to hold under abuse (issue "Hostile inputs"):

* **Concurrency.** One event loop in the main process (:class:`ServeLoop`) reads every
  connection as its bytes arrive, so a client that connects and sends nothing, or sends
  slowly, costs a few hundred bytes and no thread; the listen backlog (:data:`spamkit.mail.serve.listen.BACKLOG`)
  absorbs bursts. Classification is CPU-bound Python, so it runs in ``workers`` processes
  forked after the filter is loaded (they share its arrays copy-on-write), which uses every
  core; ``workers=0`` classifies in the loop itself. A worker takes one request, or, when
  more are waiting than workers are idle, several at once, scored together for less work
  each (:data:`~spamkit.mail.serve.pool.MAX_BATCH`, :class:`~spamkit.mail.serve.pool.Work`; the same answers as one by one).
* **Timeouts.** A request must arrive in full within ``timeout`` seconds of the
  connection (a slow-loris client is cut off and costs nothing meanwhile); a
  classification that has not ended ``timeout`` seconds after the request's last byte
  (waiting for a worker included) is answered with the message unchanged (status 3), and
  its worker is killed and replaced.
* **Bounded memory.** A request longer than ``max_size`` is read and discarded in small
  pieces and refused (status 4) with the reason; the bytes of all requests being held at
  once are limited by ``memory_budget``, taken as they arrive (never as a request declares
  them: connections that announce 16 MiB and send nothing hold nothing) beyond each
  connection's first :data:`FREE_BYTES` (so a full budget never holds up a small request);
  a connection with no room waits, unread, and is refused when none frees up within the
  timeout. Parsing itself is bounded (:mod:`spamkit.parse.message`).
* **The socket.** Created with mode 0600 unless ``socket_mode`` says otherwise; only a
  stale socket of a process that is gone is ever removed from the path (a regular file
  there is refused).
* **Connections.** At most ``max_clients`` are served at once (default
  :data:`MAX_CLIENTS`); when all are taken, a new connection takes the slot of the one that
  has sent nothing for longest, if that is over :data:`IDLE_EVICT` seconds and it is still
  sending its request (idle sockets cannot starve clients that send); otherwise it is
  refused at once with "server busy" (status 4) and the client keeps its message. One TCP
  address may hold at most a quarter of the slots (``max_per_host``): a host that keeps its
  connections busy cannot take the others' turn.
* **Who may connect.** A TCP listener answers only clients whose address is in its
  :class:`~spamkit.mail.serve.listen.AllowList` (``--allowed-ips``; by default the loopback networks, as spamd's
  ``--allowed-ips`` defaults to 127.0.0.1 and ::1); any other connection is closed at once,
  unread, and logged (at most once a minute per address). spamc then passes the message on
  unchanged. Unix sockets are guarded by their file mode instead.
* **Reloading.** The filter file is checked (one ``stat``) before each message and
  reloaded when it changed — ``spamkit learn`` replaces it atomically — and every filter
  is reloaded after SIGHUP; messages in flight finish with the filter they started with.
"""

from __future__ import annotations

import collections
import os
import socket
import selectors
import time

from .listen import AllowList
from .handout import Handout, first_in_state
from .pool import Budget, Reply, Work, Workers, log


#: largest message classified (bytes); a bigger one is refused and the client passes it on
MAX_MESSAGE = 16 << 20
#: bytes each connection may have read before it takes from the memory budget
FREE_BYTES = 64 << 10
#: seconds a connection must have sent nothing before a new one may take its slot when all are taken
IDLE_EVICT = 1.0
#: bytes of requests held at once, all connections together
MEMORY_BUDGET = 64 << 20
#: seconds a client has to send its request, and the server to classify it
TIMEOUT = 30.0
#: connections served at once; more are answered "busy" at once (spamd's --max-children)
MAX_CLIENTS = 256
#: seconds an answered client that still sends (a refused one) is read from before it is cut off
DRAIN_SECONDS = 2.0


CLOSE = object()


class Connection:
    """One client: what it sent so far (``buf``; ``eof`` once it closed its side), the protocol's
    own state (``ctx``), the budget it holds, its deadline, and what is left to write."""
    __slots__ = ("sock", "protocol", "buf", "eof", "ctx", "held", "deadline", "state", "out", "work", "events",
                 "last", "free", "host")

    def __init__(self, sock, protocol, deadline: float):
        self.sock, self.protocol, self.deadline = sock, protocol, deadline
        self.last = time.monotonic()             # when it last sent a byte (or connected)
        self.free = 0                            # bytes read within its allowance (ServeLoop.free_bytes)
        self.host = None                         # a TCP client's address (ServeLoop.max_per_host)
        self.buf = bytearray()
        self.eof = False
        self.ctx: dict = {}
        self.held = 0
        self.state = "reading"                   # reading, budget, queued, working, writing, draining
        self.out: memoryview | None = None
        self.work: object = None
        self.events = 0                          # what the loop's selector watches it for


class ServeLoop:
    """Every listening socket and connection of ``spamkit serve``, in one thread of the main
    process: requests are read as their bytes arrive (a client that sends nothing, or slowly,
    costs a few hundred bytes and no thread), handed whole to an idle worker process, and the
    answer the worker built is written back as the client takes it.

    One thread and no locks: a message costs the main process an ``accept``, a few reads, one
    write down a worker's pipe and one read back, and the answer's write (about 14 system calls),
    and the worker builds the whole answer. The thread per connection this replaces handed the
    interpreter lock around every socket and pipe call (54 ``futex`` calls per message); the main
    process's CPU per 20 KB message under 8 spamc clients fell from 0.40-0.49 ms to 0.20-0.30
    (``scripts/spamd_cpu.py --compare``, docs/mail-filtering.md). Run it in a process's only
    thread, as ``spamkit serve`` does: it forks a worker's replacement from there.

    Limits: ``timeout`` seconds to send a request (from the connection), again to classify it
    (from the request's last byte, waiting for a worker included) and again to take the answer;
    ``max_size`` per request (enforced by the protocols); ``memory_budget`` bytes of requests held
    at once (a request waits for room until its deadline); ``max_clients`` connections open at
    once (one more is answered the protocol's "busy" at once).
    """

    #: seconds between checks of the deadlines (they are seconds long; this is their resolution)
    TICK = 0.1

    def __init__(self, workers: Workers, *, max_size: int, memory_budget: int, timeout: float, max_clients: int,
                 free_bytes: int = FREE_BYTES, max_per_host: int | None = None):
        self.workers = workers
        self.max_size, self.timeout, self.max_clients = max_size, timeout, max_clients
        self.free_bytes = free_bytes
        # one TCP address may hold a quarter of the slots: a host that keeps them busy (sending a
        # byte a second, which no idle rule catches) leaves the rest to the others
        self.max_per_host = max_per_host if max_per_host is not None else max(8, max_clients // 4)
        self.per_host: dict = {}
        self.budget = Budget(max(memory_budget, max_size))
        self.selector = selectors.DefaultSelector()
        self.listeners: list = []
        self.connections: set = set()
        self.budget_waiting: collections.deque = collections.deque()
        self.resting: list = []                  # listening sockets whose accept failed, until the next check
        self.allowed: dict = {}                  # TCP listening socket -> its AllowList
        self.refused: collections.OrderedDict = collections.OrderedDict()   # address -> when last logged
        self._accept_failed_said = -1e9
        self.evicted = 0                         # idle connections closed to let new ones in
        self.stopped = False
        self.handout = Handout(workers, self.selector, timeout, self._answer)

    # -- set-up and shut-down

    def listen(self, sock, protocol, allowed: AllowList | None = None) -> None:
        """Serve ``protocol`` on the listening socket ``sock`` (a Unix-domain socket's file is
        removed on :meth:`close`); on a TCP socket, only to the clients ``allowed`` lets in
        (None: the loopback networks)."""
        sock.setblocking(False)
        self.listeners.append((sock, sock.getsockname() if sock.family == socket.AF_UNIX else None))
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            self.allowed[sock] = allowed or AllowList.parse(AllowList.LOOPBACK)
        self.selector.register(sock, selectors.EVENT_READ, ("listen", sock, protocol))

    def stop(self) -> None:
        """End :meth:`run` within :attr:`TICK` seconds (safe from a signal handler)."""
        self.stopped = True

    def summary(self) -> str:
        """What the workers were handed: requests, and how many of them went in batches."""
        return self.handout.summary()

    def close(self) -> None:
        for sock, path in self.listeners:
            sock.close()
            if path:
                try:
                    os.unlink(path)
                except OSError:
                    pass
        self.listeners = []
        for conn in list(self.connections):
            self._close(conn)
        self.selector.close()

    def run(self) -> None:
        """Serve until :meth:`stop`."""
        next_check = time.monotonic() + self.TICK
        while not self.stopped:
            for key, events in self.selector.select(self.TICK):
                kind = key.data[0]
                if kind == "conn":
                    conn = key.data[1]
                    if events & selectors.EVENT_READ and conn.state == "reading":
                        self._read(conn)
                    elif events & selectors.EVENT_WRITE and conn.state == "writing":
                        self._write(conn)
                    elif events & selectors.EVENT_READ and conn.state == "draining":
                        self._drain(conn)
                elif kind == "worker":
                    self.handout.done(key.data[1])
                else:
                    self._accept(key.data[1], key.data[2])
            now = time.monotonic()
            if now >= next_check:
                self._expire(now)
                next_check = now + self.TICK

    # -- connections

    def _accept(self, listener, protocol) -> None:
        for _ in range(64):                      # then let the others' events be served too
            try:
                sock, peer = listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                # e.g. out of file descriptors: the socket stays readable, so the loop would spin on it;
                # rest it until the next deadline check and serve the connections already open
                now = time.monotonic()
                if now - self._accept_failed_said >= 10.0:     # said once in ten seconds, not every tick
                    log(f"accept failed ({exc}); trying again every {self.TICK:g} s")
                    self._accept_failed_said = now
                self.selector.unregister(listener)
                self.resting.append((listener, protocol))
                return
            allowed = self.allowed.get(listener)
            if allowed is not None and not allowed.allows(peer[0]):
                self._refuse(sock, peer[0], allowed)
                continue
            sock.setblocking(False)
            conn = Connection(sock, protocol, time.monotonic() + self.timeout)
            host = peer[0] if allowed is not None else None      # a TCP client's address (Unix: none)
            conn.host = host
            crowded = (host is not None and self.per_host.get(host, 0) >= self.max_per_host
                       and not self._evict_idlest(conn.last, host))
            busy = crowded or (len(self.connections) >= self.max_clients and not self._evict_idlest(conn.last))
            if host is not None:
                self.per_host[host] = self.per_host.get(host, 0) + 1
            self.connections.add(conn)
            if busy:
                self._answer(conn, protocol.busy())
                continue
            self._watch(conn, selectors.EVENT_READ)
            self._read(conn)                      # the request often arrives with the connection

    def _evict_idlest(self, now: float, host: str | None = None) -> bool:
        """Make room for a new connection when every slot is taken: close the connection that has
        sent nothing for longest, if it is still sending its request and has been quiet for at
        least :data:`IDLE_EVICT` seconds (260 idle sockets made every spamc call pass its message
        through untagged; a client that connects and waits now gives way to one that sends). A
        connection already answered that is only being drained (told "busy" while it sent) goes
        before any. A request being classified or its answer being written is never closed. True if one was closed. ``host``:
        among that address's connections only (its share is full)."""
        idlest = None
        for conn in self.connections:
            if host is not None and conn.host != host:
                continue
            if conn.state == "draining":              # answered already (told "busy"): it goes first
                idlest = conn
                break
            if conn.state in ("reading", "budget") and (idlest is None or conn.last < idlest.last):
                idlest = conn
        if idlest is None or idlest.state != "draining" and now - idlest.last < IDLE_EVICT:
            return False
        self.evicted += 1
        self._close(idlest)                        # its client still holds its message
        return True

    def _refuse(self, sock, host: str, allowed: AllowList) -> None:
        """Close a connection from an address the listener does not allow, unread (as spamd
        does: the client passes its message on unchanged); logged at most once a minute per
        address, the log's memory of addresses bounded."""
        sock.close()
        now = time.monotonic()
        if now - self.refused.get(host, -1e9) >= 60.0:
            log(f"refused a connection from {host}: not in --allowed-ips ({allowed})")
            self.refused[host] = now
            self.refused.move_to_end(host)
            while len(self.refused) > 1024:
                self.refused.popitem(last=False)

    def _read(self, conn: Connection) -> None:
        # memory is taken from the budget as bytes arrive, not as a request declares them: four
        # connections that announced 16 MiB each and sent nothing held the whole budget, and every
        # real client waited out its deadline. The first free_bytes of each connection (a request
        # line, most whole messages) are not counted: a full budget never keeps a small request
        # waiting (at most max_clients * free_bytes more: 16 MiB by default)
        free = self.free_bytes - conn.free
        room = self.budget.limit - self.budget.used + free
        if room <= 0:
            return self._wait_for_budget(conn)
        try:
            chunk = conn.sock.recv(min(1 << 18, room))
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            return self._close(conn)
        if chunk:
            conn.buf += chunk
            first = min(len(chunk), free)        # a connection's first bytes are its own allowance
            conn.free += first
            self.budget.take(len(chunk) - first)
            conn.held += len(chunk) - first
            conn.last = time.monotonic()
        else:
            conn.eof = True
        self._step(conn)

    def _wait_for_budget(self, conn: Connection) -> None:
        """No room in the budget: stop reading ``conn`` (the kernel holds its bytes) until another
        connection gives some back, or its deadline passes (then the protocol's refusal)."""
        conn.state = "budget"
        self._watch(conn, 0)
        self.budget_waiting.append(conn)

    def _step(self, conn: Connection) -> None:
        """Ask the protocol what the bytes so far call for, and do it."""
        while True:
            step = conn.protocol.step(conn)
            if not isinstance(step, Work) and conn.held > len(conn.buf):
                self._give_back(conn, conn.held - len(conn.buf))     # parsed or dropped: room for others
            if step is None:
                if conn.eof:                      # it will send nothing more: the request cannot be completed
                    self._close(conn)
                return
            if step is CLOSE:
                return self._close(conn)
            if isinstance(step, Reply):
                return self._answer(conn, step.data)
            conn.work = step
            conn.buf = bytearray()                # the request is in the job's arguments now
            self._watch(conn, 0)
            conn.deadline = time.monotonic() + self.timeout
            return self.handout.submit(conn)

    def _answer(self, conn: Connection, data: bytes) -> None:
        conn.state, conn.out, conn.work = "writing", memoryview(data), None
        conn.deadline = time.monotonic() + self.timeout
        self._write(conn)

    def _write(self, conn: Connection) -> None:
        try:
            sent = conn.sock.send(conn.out)
        except (BlockingIOError, InterruptedError):
            sent = 0
        except OSError:
            return self._close(conn)              # the client went away; it still holds its message
        assert conn.out is not None               # set by _answer before the connection writes
        conn.out = conn.out[sent:]
        if len(conn.out):
            return self._watch(conn, selectors.EVENT_WRITE)
        try:
            conn.sock.shutdown(socket.SHUT_WR)
            left = not conn.eof and conn.sock.recv(1 << 16)
        except (BlockingIOError, InterruptedError):
            left = False                          # nothing unread: closing sends an orderly end
        except OSError:
            left = False
        if left:
            # Bytes the request did not use (a refused or "busy" client still sending): closing
            # now would reset the connection, and the client could lose the answer it has not
            # read yet. Read and drop them until the client closes, for DRAIN_SECONDS at most.
            conn.state, conn.deadline = "draining", time.monotonic() + DRAIN_SECONDS
            return self._watch(conn, selectors.EVENT_READ)
        self._close(conn)

    def _drain(self, conn: Connection) -> None:
        try:
            if conn.sock.recv(1 << 16):
                return
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            pass
        self._close(conn)

    def _watch(self, conn: Connection, events: int) -> None:
        """Have the selector watch ``conn`` for ``events`` (0: not at all)."""
        if events == conn.events:
            return
        if not events:
            self.selector.unregister(conn.sock)
        elif conn.events:
            self.selector.modify(conn.sock, events, ("conn", conn))
        else:
            self.selector.register(conn.sock, events, ("conn", conn))
        conn.events = events

    def _close(self, conn: Connection) -> None:
        if conn not in self.connections:
            return
        self.connections.discard(conn)
        if conn.host is not None:
            left = self.per_host.get(conn.host, 1) - 1
            if left:
                self.per_host[conn.host] = left
            else:
                self.per_host.pop(conn.host, None)
        self._watch(conn, 0)
        conn.sock.close()
        conn.state = "closed"
        if conn.held:
            self._give_back(conn, conn.held)

    def _give_back(self, conn: Connection, n: int) -> None:
        self.budget.give(n)
        conn.held -= n
        self._budget_freed()

    def _budget_freed(self) -> None:
        while self.budget.used < self.budget.limit and (conn := first_in_state(self.budget_waiting, "budget")) is not None:
            self.budget_waiting.popleft()
            conn.state = "reading"
            self._watch(conn, selectors.EVENT_READ)
            self._read(conn)                     # the bytes that came meanwhile are still to be read

    def _expire(self, now: float) -> None:
        for listener, protocol in self.resting:
            self.selector.register(listener, selectors.EVENT_READ, ("listen", listener, protocol))
        self.resting = []
        self.handout.expire(now)
        for conn in list(self.connections):
            if now <= conn.deadline:
                continue
            if conn.state == "budget":
                self._answer(conn, conn.protocol.too_many_bytes())
            elif conn.state == "queued":
                text = f"every worker was busy for {self.timeout:g} s"
                log(text)
                self._answer(conn, conn.work.fallback("timeout", text))
            elif conn.state in ("reading", "writing", "draining"):
                self._close(conn)                 # too slow; the client still holds its message
