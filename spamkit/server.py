"""A resident filter process and its wire protocol, for fast pipe mode (the spamd/spamc design).

Starting Python and importing the numerical stack costs about a second per message, too
slow to run once per delivered message. ``spamkit serve MODEL --socket PATH`` loads the
filter once and answers on a Unix-domain socket; ``spamkit-pipe --socket PATH``
(:mod:`spamkit.client`, standard library only) sends one message and writes the tagged
message to standard output, with the exit status of ``spamkit filter MODEL -``.

Protocol (all lengths 8-byte big-endian unsigned):

    request:  length, message bytes
    reply:    status byte (0 spam, 1 ham, 2 unsure, 3 error), length, tagged message bytes

On an error the reply carries the message unchanged with status 3. The socket file is
created with mode 0600 (only its owner may ask), and replaced if a stale one is in the way.
"""

from __future__ import annotations

import os
import socket
import stat
import socketserver
import sys

from .client import LENGTH as _LENGTH
from .client import read_exact
from .mailfilter import EXIT_ERROR, EXIT_HAM, EXIT_SPAM, EXIT_UNSURE, tag

#: largest message accepted (bytes); a bigger one is answered with status 3 and passed through
MAX_MESSAGE = 256 * 1024 * 1024
STATUS = {"spam": EXIT_SPAM, "ham": EXIT_HAM, "unsure": EXIT_UNSURE}


def answer(classify, model_id: str, raw: bytes) -> tuple[int, bytes]:
    """(status, bytes to deliver) for one message; never raises, never loses the message."""
    try:
        verdict, p = classify(raw)
        return STATUS[verdict], tag(raw, verdict, p, model_id)
    except Exception as exc:                      # noqa: BLE001 -- a mail filter must pass mail on
        print(f"spamkit serve: {type(exc).__name__}: {exc}; message passed through", file=sys.stderr)
        return EXIT_ERROR, raw


class _Handler(socketserver.BaseRequestHandler):
    def handle(self):
        header = read_exact(self.request, _LENGTH.size)
        if len(header) < _LENGTH.size:
            return
        (length,) = _LENGTH.unpack(header)
        if length > MAX_MESSAGE:
            self.request.sendall(bytes([EXIT_ERROR]) + _LENGTH.pack(0))
            return
        raw = read_exact(self.request, length)
        if len(raw) < length:
            return                                 # the client went away; it still holds its message
        status, out = answer(self.server.classify, self.server.model_id, raw)
        self.request.sendall(bytes([status]) + _LENGTH.pack(len(out)) + out)


class FilterServer(socketserver.UnixStreamServer):
    """Answers one connection at a time (scoring is CPU-bound; the kernel queues the rest)."""

    def __init__(self, path, classify, model_id: str):
        self.classify = classify
        self.model_id = model_id
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
        old = os.umask(0o177)
        try:
            super().__init__(path, _Handler)
        finally:
            os.umask(old)

    def server_close(self):
        super().server_close()
        try:
            os.unlink(self.server_address)
        except OSError:
            pass
