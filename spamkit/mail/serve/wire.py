"""spamkit's own wire protocol, which ``spamkit-pipe`` (:mod:`spamkit.mail.serve.client`) speaks
to ``spamkit serve --socket``: a request framed, read as its bytes arrive, answered by a
worker with the tagged message.

Protocol (all lengths 8-byte big-endian unsigned):

    request:  length, message bytes
    reply:    status byte, length, bytes
              0 spam, 1 ham, 2 unsure: the tagged message
              3 error: the message unchanged
              4 refused (too big, server busy): a UTF-8 reason; the client keeps its copy

Takes a connection's bytes (:class:`SpamkitProtocol`, read by
:class:`spamkit.mail.serve.server.ServeLoop`) and gives the work a worker does and its reply
(:func:`answer_job`, :func:`answer_batch`); a message that fails anywhere goes back unchanged.
"""

from __future__ import annotations

import struct

from .client import LENGTH_BYTES
from .. import tag
from ...common.passthrough import EXIT_ERROR, EXIT_REFUSED, VERDICT_STATUS
from .pool import Reply, Work, log, worker_state

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .server import Connection

#: every length on the wire: LENGTH_BYTES (8) bytes, big-endian unsigned, as the client writes them
LENGTH = struct.Struct(">Q")
assert LENGTH.size == LENGTH_BYTES


def frame(status: int, payload: bytes) -> bytes:
    """One reply of spamkit's protocol: the status byte, the length, the bytes."""
    return bytes([status]) + LENGTH.pack(len(payload)) + payload


def answer_job(model: str, raw: bytes) -> bytes:
    """The reply to one message of the spamkit protocol (in a worker): the tagged message and
    its verdict's status, or the message unchanged (status 3) if anything fails; never loses it."""
    try:
        spam_filter = worker_state()["cache"].get(model)
        verdict, p = spam_filter.verdict(raw)
        return frame(VERDICT_STATUS[verdict], tag(raw, verdict, p, spam_filter.model_id,
                                                  getattr(spam_filter, "points_threshold", 0.5)))
    except Exception as exc:                      # noqa: BLE001 -- a mail filter must pass mail on
        log(f"{type(exc).__name__}: {exc}; message passed through")
        return frame(EXIT_ERROR, raw)


def answer_batch(items: list) -> list:
    """:func:`answer_job` for several ``(model, raw)`` requests, the same replies: each filter
    file's messages scored together, then each tagged (a message that fails to tag goes back
    unchanged, as alone)."""
    replies: list = [None] * len(items)
    groups: dict = {}
    for i, (model, _raw) in enumerate(items):
        groups.setdefault(model, []).append(i)
    for model, members in groups.items():
        spam_filter = worker_state()["cache"].get(model)
        proba, familiarity = spam_filter.score([items[i][1] for i in members])
        for i, row, known in zip(members, proba, familiarity):
            raw = items[i][1]
            try:
                verdict, p = spam_filter.verdict_from(row, known, alone=True)
                replies[i] = frame(VERDICT_STATUS[verdict], tag(raw, verdict, p, spam_filter.model_id,
                                                                getattr(spam_filter, "points_threshold", 0.5)))
            except Exception as exc:              # noqa: BLE001 -- a mail filter must pass mail on
                log(f"{type(exc).__name__}: {exc}; message passed through")
                replies[i] = frame(EXIT_ERROR, raw)
    return replies


class SpamkitProtocol:
    """spamkit's own protocol (the module docstring), for ``spamkit-pipe``, on the filter file
    ``model`` (reloaded when it changes: the workers' :class:`~spamkit.mail.serve.pool.FilterCache`)."""

    def __init__(self, model: str, max_size: int):
        self.model, self.max_size = str(model), max_size

    @staticmethod
    def busy() -> bytes:
        return frame(EXIT_REFUSED, b"server busy: too many clients at once; try again")

    @staticmethod
    def too_many_bytes() -> bytes:
        return frame(EXIT_REFUSED, b"server busy: too many bytes in flight; try again")

    def step(self, conn: Connection):
        ctx, buf = conn.ctx, conn.buf
        if "length" not in ctx:
            if len(buf) < LENGTH.size:
                return None
            (length,) = LENGTH.unpack(buf[:LENGTH.size])
            del buf[:LENGTH.size]
            ctx["length"] = length
            if length > self.max_size:
                ctx["refuse"], ctx["dropped"] = (f"message of {length} bytes is over the server's limit of "
                                                 f"{self.max_size} (spamkit serve --max-size)").encode(), 0
        length = ctx["length"]
        if "refuse" in ctx:                       # read and drop it all, then refuse: the client keeps it
            ctx["dropped"] += len(buf)
            buf.clear()
            return Reply(frame(EXIT_REFUSED, ctx["refuse"])) if ctx["dropped"] >= length else None
        if len(buf) < length:
            return None
        raw = bytes(buf[:length])
        return Work(answer_job, (self.model, raw), lambda kind, text: frame(EXIT_ERROR, raw), answer_batch)
