"""A :class:`spamkit.mail.serve.server.ServeLoop` on a protocol made for ``tests/test_serve_loop.py``, run
in a process of its own (its workers are forked from a process with one thread, as in
``spamkit serve``).

    python tests/loop_server.py SOCKET '{"workers": 2, "timeout": 5.0, ...}'

The protocol: a line ``COMMAND SIZE``, then SIZE bytes; the job (in a worker) answers ``ok:``,
the command and what it was sent; ``sleep`` sleeps for the body's seconds first, ``die`` ends
the worker, ``big`` answers SIZE bytes of ``B``, ``fail`` raises; before handing out
``killidle``, the loop kills its idle workers. ``becho``, ``bdie`` and
``bfail`` (as ``echo``, ``die``, ``fail``) may be handed out in batches (``batch_job``; a ``bfail`` fails its whole batch).
``stats 0`` is answered by the loop itself: its budget in use, its connections' states, its
workers' pids and how many hand-outs of each size it made, as JSON. Stops on SIGTERM.
Options: the loop's limits, ``workers``, and ``nofile`` (file descriptors left for connections).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from spamkit.mail.serve import listen
from spamkit.mail.serve import pool as workers
from spamkit.mail.serve import server as srv


def job(command: bytes, body: bytes) -> bytes:
    if command == b"sleep":
        time.sleep(float(body))
    elif command in (b"die", b"bdie"):
        os._exit(3)
    elif command == b"big":
        return b"B" * int(body)
    elif command in (b"fail", b"bfail"):
        raise ValueError("as asked")
    return b"ok:" + command + b":" + body


def batch_job(args_list: list) -> list:
    """A batch of ``becho``/``bdie``/``bfail``: the same answers as ``job``; a ``bfail`` among
    them fails the whole batch."""
    if any(command == b"bfail" for command, _ in args_list):
        raise ValueError("a batch with bfail")
    return [job(*args) for args in args_list]


def fallback(kind: str, text: str) -> bytes:
    return f"fallback:{kind}".encode()


class LineProtocol:
    def __init__(self):
        self.loop = None

    @staticmethod
    def busy() -> bytes:
        return b"busy"

    @staticmethod
    def too_many_bytes() -> bytes:
        return b"no room"

    def step(self, conn):
        ctx = conn.ctx
        if "size" not in ctx:
            if b"\n" not in conn.buf:
                return None
            line, _, rest = bytes(conn.buf).partition(b"\n")
            command, size = line.split()
            conn.buf = bytearray(rest)
            ctx["command"], ctx["size"] = command, int(size)
            if command == b"killidle":           # the idle workers die before this request is handed out
                for worker in self.loop.workers.idle:
                    worker.process.kill()
                    worker.process.join()
            if command == b"stats":
                states = sorted(c.state for c in self.loop.connections if c is not conn)
                return workers.Reply(json.dumps({"budget": self.loop.budget.used - conn.held, "states": states,
                                             "workers": sorted(w.process.pid for w in self.loop.workers.all),
                                             "batches": {str(k): v for k, v in self.loop.handout.batches.items()}}
                                            ).encode())
        if len(conn.buf) < ctx["size"]:
            return None
        batch = batch_job if ctx["command"] in (b"becho", b"bdie", b"bfail") else None
        return workers.Work(job, (ctx["command"], bytes(conn.buf[:ctx["size"]])), fallback, batch)


def main(path: str, options: str) -> None:
    limits = {"max_size": 1 << 20, "memory_budget": 1 << 20, "timeout": 5.0, "max_clients": 64, **json.loads(options)}
    pool = workers.Workers(limits.pop("workers", 2), {})
    nofile = limits.pop("nofile", None)
    if nofile:                                   # this many file descriptors beyond those open now
        import resource
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (len(os.listdir("/proc/self/fd")) + 2 + nofile, hard))
    loop = srv.ServeLoop(pool, **limits)
    protocol = LineProtocol()
    protocol.loop = loop
    loop.listen(listen.unix_listener(path, 0o600), protocol)
    signal.signal(signal.SIGTERM, lambda signum, frame: loop.stop())
    print("ready", flush=True)
    try:
        loop.run()
    finally:
        loop.close()
        pool.close()


if __name__ == "__main__":
    main(*sys.argv[1:])
