"""Requests handed to the worker processes of ``spamkit serve``: queued in order, one to each
idle worker or several to one when more wait than workers are idle, and a worker that dies or
overruns the timeout replaced, only its requests answered with their fallback.

Takes whole requests from the event loop (:class:`spamkit.mail.serve.server.ServeLoop`: a
connection whose ``work`` is set) and gives each its answer through the loop's ``answer``;
the worker processes themselves are :class:`spamkit.mail.serve.pool.Workers`.
"""

from __future__ import annotations

import collections
import selectors
import time

from .pool import MAX_BATCH, MAX_BATCH_BYTES, Workers, log, run_batch, run_inline


def first_in_state(waiting: collections.deque, state: str):
    """The first connection of ``waiting`` still in ``state`` (those that moved on meanwhile,
    answered or closed, are dropped from it), or None."""
    while waiting and waiting[0].state != state:
        waiting.popleft()
    return waiting[0] if waiting else None


class Handout:
    """The queue of requests waiting for a worker, the workers busy with which connections (and
    their deadlines), and how many requests each hand-out carried (``batches``). ``answer(conn,
    data)`` is the loop's: it writes a reply back. Each worker's pipe is watched by the loop's
    ``selector`` (events tagged ``("worker", worker)``: the loop then calls :meth:`done`)."""

    def __init__(self, workers: Workers, selector, timeout: float, answer):
        self.workers, self.selector, self.timeout, self.answer = workers, selector, timeout, answer
        self.queued: collections.deque = collections.deque()
        self.busy: dict = {}                     # worker -> (its connections, deadline)
        self.batches: collections.Counter = collections.Counter()   # requests per hand-out -> hand-outs
        for worker in workers.idle:
            selector.register(worker.conn, selectors.EVENT_READ, ("worker", worker))

    def submit(self, conn) -> None:
        """Queue a connection whose request is whole (``conn.work``) and hand out what can be."""
        conn.state = "queued"
        self.queued.append(conn)
        self.dispatch()

    def summary(self) -> str:
        """What the workers were handed: requests, and how many of them went in batches."""
        requests = sum(size * count for size, count in self.batches.items())
        batched = sum(size * count for size, count in self.batches.items() if size > 1)
        return (f"{requests} requests handed to the workers, {batched} of them in "
                f"{sum(count for size, count in self.batches.items() if size > 1)} batches")

    def expire(self, now: float) -> None:
        """Replace the workers past their deadline; their requests get the fallback."""
        for worker, (conns, deadline) in list(self.busy.items()):
            if now > deadline:
                self.lost(worker, conns, f"the filter took over {self.timeout:g} s", "timeout")

    def dispatch(self) -> None:
        while (conn := first_in_state(self.queued, "queued")) is not None:
            if self.workers.n and not self.workers.idle:
                return
            self.queued.popleft()
            work = conn.work
            if self.workers.n == 0:
                self.answer(conn, run_inline(work.job, work.args, work.fallback))
                continue
            conns = [conn]
            if work.batch is not None and not conn.ctx.get("alone"):
                conns += self.batch_mates(work.batch, conn.held + conn.free)
            worker = self.workers.idle.pop()
            try:
                if len(conns) == 1:
                    worker.conn.send((work.job, work.args))
                else:
                    worker.conn.send((run_batch, (work.job, work.batch, [c.work.args for c in conns])))
            except (OSError, EOFError):
                # it died while idle (its end of the pipe is gone): its replacement takes the requests
                self.queued.extendleft(reversed(conns))
                self.lost(worker, (), "an idle worker process died; it has been replaced")
                continue
            for c in conns:
                c.state = "working"
            self.busy[worker] = (conns, time.monotonic() + self.timeout)
            self.batches[len(conns)] += 1

    def batch_mates(self, batch, first_size: int) -> list:
        """The queued connections to hand out with one of ``batch`` (of ``first_size`` bytes) just
        taken off the queue: as many as make the waiting requests' share of one idle worker (none
        when every waiting request has an idle worker of its own), up to :data:`~spamkit.mail.serve.pool.MAX_BATCH` in all
        and :data:`~spamkit.mail.serve.pool.MAX_BATCH_BYTES` of requests (the bytes each was read with), each of the same
        ``batch`` and next in the queue."""
        waiting = sum(1 for c in self.queued if c.state == "queued")
        share = min(MAX_BATCH, -(-(waiting + 1) // len(self.workers.idle)))
        mates: list = []
        size = first_size
        while len(mates) + 1 < share:
            nxt = first_in_state(self.queued, "queued")
            if (nxt is None or nxt.work.batch is not batch or nxt.ctx.get("alone")
                    or size + nxt.held + nxt.free > MAX_BATCH_BYTES):
                break
            size += nxt.held + nxt.free
            mates.append(self.queued.popleft())
        return mates

    def done(self, worker) -> None:
        if worker not in self.workers.all:
            return                                # replaced earlier in the same batch of events
        conns, _ = self.busy.pop(worker, ((), None))
        try:
            status, value = worker.conn.recv()
        except (EOFError, OSError):
            if len(conns) > 1:
                # one of the batch may have killed it: each goes again alone, so that only that
                # one is answered with the fallback
                for conn in conns:
                    if conn.state == "working":
                        conn.state, conn.ctx["alone"] = "queued", True
                self.queued.extendleft(reversed(conns))
                conns = ()
            return self.lost(worker, conns, "a worker process died; it has been replaced")
        self.workers.idle.append(worker)
        if len(conns) > 1 and status == "ok":
            results = value
        else:
            results = [(status, value)] * len(conns)
        for conn, (status, value) in zip(conns, results):
            if conn.state != "working":
                continue
            if status == "ok":
                self.answer(conn, value)
            else:
                text = value if isinstance(value, str) else f"{type(value).__name__}: {value}"
                log(text)
                self.answer(conn, conn.work.fallback("failed", text))
        self.dispatch()

    def lost(self, worker, conns, text: str, kind: str = "failed") -> None:
        """A worker died or overran: a new one in its place; its requests answered with the fallback."""
        self.busy.pop(worker, None)
        if worker in self.workers.idle:
            self.workers.idle.remove(worker)
        try:
            self.selector.unregister(worker.conn)
        except (KeyError, ValueError):
            pass
        new = self.workers.replace(worker)
        self.selector.register(new.conn, selectors.EVENT_READ, ("worker", new))
        self.workers.idle.append(new)
        log(text)
        for conn in conns:
            if conn.state in ("working", "queued"):
                self.answer(conn, conn.work.fallback(kind, text))
        self.dispatch()
