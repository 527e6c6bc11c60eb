"""An IMAP connection that does not trust its server: literals, untagged responses and time bounded.

The red team ran ``spamkit filter`` against hostile IMAP servers (issue "Tried as an
attacker..."): a ``BODY[]`` literal announced as 3 GiB when ``RFC822.SIZE`` said 4,928 took
the run to 3.2 GB and a ``MemoryError`` traceback; 40 MB bodies behind a small
``RFC822.SIZE`` were read; an endless stream of ``* 1 EXISTS`` never let a command end (1.3
MB/s of memory); one byte every 20 s kept a command alive forever under a 60 s socket
timeout. ``imaplib`` reads what the server announces, keeps every untagged response, and its
socket timeout restarts with each byte.

:class:`GuardedIMAPClient` is ``imapclient.IMAPClient`` over an ``imaplib`` connection that
reads the socket itself (:class:`_Guard`):

* a literal (``{N}``) longer than ``max_literal`` is refused before a byte of it is read;
* at most :data:`MAX_UNTAGGED` untagged responses a command;
* each command has a deadline (``command_seconds`` from its tag, waiting included): a
  server that answers one byte at a time cannot hold a run past it (IDLE, which waits by
  design, has the socket timeout instead);
* bytes the server sent after a STARTTLS answer, before TLS, are refused (they would be
  read as if they came over TLS).

Each is an ``imaplib.IMAP4.abort``: the run reports a lost connection ("nothing is lost")
and exits 1, as for any connection that fails.
"""

from __future__ import annotations

import socket
import time

import imapclient
from imapclient import imap4, tls

#: untagged responses one command may bring (a FETCH of a batch brings one a message)
MAX_UNTAGGED = 100_000
#: longest line read from the server (imaplib's own limit, 1,000,000 bytes: a longer line is an error)
MAX_LINE = 1_000_000
#: seconds one command may take, from its tag to its tagged answer
COMMAND_SECONDS = 120.0


class _Guard:
    """What :class:`GuardedIMAPClient`'s connections do instead of ``imaplib``'s reading."""

    # imaplib.IMAP4's, which this class is mixed into (GuardedIMAPClient)
    sock: socket.socket
    abort: type[Exception]

    max_literal = (16 << 20) + (64 << 10)
    command_seconds = COMMAND_SECONDS
    read_seconds: float | None = 60.0

    def open(self, *args, **kwargs):                        # imaplib's, and a buffer of our own
        self._inbuf = bytearray()
        self._deadline = None
        self._untagged = 0
        self._command_name = ""
        super().open(*args, **kwargs)

    def _fill(self) -> None:
        """One ``recv`` into the buffer, within the command's deadline. Inside IDLE the socket is
        left as ``imapclient`` set it (non-blocking while it polls: no data is its signal)."""
        if self._command_name == "IDLE":
            data = self.sock.recv(1 << 16)
            if not data:
                raise self.abort("socket error: EOF")
            self._inbuf += data
            return
        wait = self.read_seconds
        if self._deadline is not None:
            left = self._deadline - time.monotonic()
            if left <= 0:
                raise self.abort(f"the server took over {self.command_seconds:g} s to answer {self._command_name}")
            wait = left if wait is None else min(wait, left)
        self.sock.settimeout(wait)
        try:
            data = self.sock.recv(1 << 16)
        except (socket.timeout, TimeoutError):
            if self._deadline is not None and time.monotonic() >= self._deadline:
                raise self.abort(f"the server took over {self.command_seconds:g} s to answer {self._command_name}") from None
            raise self.abort(f"the server sent nothing for {wait:.0f} s during {self._command_name or 'the greeting'}") from None
        if not data:
            raise self.abort("socket error: EOF")
        self._inbuf += data

    def read(self, size):
        if size > self.max_literal:
            raise self.abort(f"the server announced {size} bytes of data, more than the {self.max_literal} a "
                             "message may take (--max-size); not read")
        while len(self._inbuf) < size:
            self._fill()
        out = bytes(self._inbuf[:size])
        del self._inbuf[:size]
        return out

    def readline(self):
        start = 0
        while True:
            end = self._inbuf.find(b"\n", start)
            if end >= 0:
                line = bytes(self._inbuf[:end + 1])
                del self._inbuf[:end + 1]
                return line
            if len(self._inbuf) > MAX_LINE:
                raise self.error(f"got more than {MAX_LINE} bytes")
            start = len(self._inbuf)
            self._fill()

    def _new_tag(self):
        self._deadline = time.monotonic() + self.command_seconds
        self._untagged = 0
        self._command_name = "a command"
        return super()._new_tag()

    def _command(self, name, *args):
        tag = super()._command(name, *args)
        self._command_name = name
        if name == "IDLE":                                  # waits by design: the socket timeout only
            self._deadline = None
        return tag

    def _append_untagged(self, typ, dat):
        self._untagged += 1
        if self._untagged > MAX_UNTAGGED:
            raise self.abort(f"the server sent over {MAX_UNTAGGED} untagged responses to {self._command_name}")
        super()._append_untagged(typ, dat)

    def starttls(self, ssl_context=None):
        result = super().starttls(ssl_context)
        if self._inbuf:
            raise self.abort("the server sent data after its STARTTLS answer, before TLS began")
        return result


class _GuardedTLS(_Guard, tls.IMAP4_TLS):
    pass


class _GuardedPlain(_Guard, imap4.IMAP4WithTimeout):
    pass


class GuardedIMAPClient(imapclient.IMAPClient):
    """``imapclient.IMAPClient`` whose connection is bounded as the module docstring says;
    ``max_literal`` bytes at most in one literal, ``command_seconds`` for each command."""

    def __init__(self, *args, max_literal: int = _Guard.max_literal, command_seconds: float = COMMAND_SECONDS,
                 **kwargs):
        self._max_literal, self._command_seconds = max_literal, command_seconds
        super().__init__(*args, **kwargs)

    def _create_IMAP4(self):
        connect_timeout = getattr(self._timeout, "connect", None)
        cls = _GuardedTLS if self.ssl else _GuardedPlain
        # the limits are set on the class made for this client: imaplib reads the greeting in __init__
        guarded = type(cls.__name__, (cls,), {"max_literal": self._max_literal, "command_seconds": self._command_seconds,
                                              "read_seconds": getattr(self._timeout, "read", None) or 60.0})
        if self.ssl:
            return guarded(self.host, self.port, self.ssl_context, connect_timeout)
        return guarded(self.host, self.port, connect_timeout)
