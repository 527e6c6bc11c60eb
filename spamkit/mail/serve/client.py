"""``spamkit-pipe``: hand one message to a running ``spamkit serve`` (standard library only).

Starts in a few tens of milliseconds because it imports nothing but the standard library
(:mod:`spamkit.mail.serve.server` documents the protocol). Reads one message on standard input, writes
the tagged message on standard output and exits 0 spam, 1 ham, 2 unsure, 3 error. When no
server answers, the message is written out unchanged with status 3, so a delivery agent
never loses it.

    spamkit-pipe --socket ~/.spamkit.sock < message.eml > tagged.eml
"""

from __future__ import annotations

import argparse
import os
import socket
import struct
import sys

from ...common.passthrough import EXIT_ERROR, EXIT_REFUSED, guard

#: reply status of a refused request (the payload is the reason); see spamkit.mail.serve.server

#: every length on the wire: 8-byte big-endian unsigned
LENGTH = struct.Struct(">Q")


def read_exact(sock, n: int) -> bytes:
    """Exactly n bytes from a socket (or fewer only if the peer closed it)."""
    chunks, got = [], 0
    while got < n:
        chunk = sock.recv(min(1 << 20, n - got))
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def ask(path: str, raw: bytes, timeout: float) -> tuple[int, bytes]:
    """(status, message to deliver) from the server at ``path``; raises OSError if it cannot."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(path)
        sock.sendall(LENGTH.pack(len(raw)) + raw)
        head = read_exact(sock, 1 + LENGTH.size)
        if len(head) < 1 + LENGTH.size:
            raise OSError("the server closed the connection without an answer")
        status, (length,) = head[0], LENGTH.unpack(head[1:])
        out = read_exact(sock, length)
        if len(out) < length or (status == EXIT_ERROR and length == 0):
            raise OSError("incomplete answer from the server")
        if status == EXIT_REFUSED:
            raise OSError(f"the server refused the message: {out.decode('utf-8', 'replace')[:300]}")
        return status, out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="spamkit-pipe", description=__doc__.splitlines()[0])
    parser.add_argument("--socket", default=os.environ.get("SPAMKIT_SOCKET"),
                        help="The socket of spamkit serve (default: $SPAMKIT_SOCKET).")
    parser.add_argument("--timeout", type=float, default=60.0, help="Seconds to wait for the answer.")
    args = parser.parse_args(argv)
    raw = sys.stdin.buffer.read()

    def work(message: bytes) -> tuple[int, bytes]:
        if not args.socket:
            raise OSError("no socket given (--socket or SPAMKIT_SOCKET)")
        status, out = ask(args.socket, message, args.timeout)
        if status == EXIT_ERROR:
            raise OSError("the server could not classify the message (its log says why)")
        return status, out

    return guard(raw, work, "spamkit-pipe")


if __name__ == "__main__":
    sys.exit(main())
