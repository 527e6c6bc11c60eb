"""``spamkit-pipe``: hand one message to a running ``spamkit serve`` (standard library only).

Starts in a few tens of milliseconds because it imports nothing but the standard library
(:mod:`spamkit.mail.serve.wire` documents the protocol). Reads one message on standard input, writes
the tagged message on standard output and exits 0 spam, 1 ham, 2 unsure, 3 error. When no
server answers, the message is written out unchanged with status 3, so a delivery agent
never loses it.

    spamkit-pipe --socket ~/.spamkit.sock < message.eml > tagged.eml
"""

from __future__ import annotations

import os
import socket
import sys

from ...common.passthrough import EXIT_ERROR, EXIT_REFUSED, guard

#: reply status of a refused request (the payload is the reason); see spamkit.mail.serve.wire

#: every length on the wire: 8-byte big-endian unsigned
LENGTH_BYTES = 8

USAGE = """usage: spamkit-pipe [-h] [--socket SOCKET] [--timeout SECONDS]

Hand one message to a running spamkit serve.

options:
  -h, --help           show this help message and exit
  --socket SOCKET      The socket of spamkit serve (default: $SPAMKIT_SOCKET).
  --timeout SECONDS    Seconds to wait for the answer (default: 60).
"""


class UsageError(ValueError):
    """A command line spamkit-pipe does not take (the message still passes through: exit 3)."""


def parse_arguments(argv: list[str]) -> dict:
    """``{"socket": ..., "timeout": ..., "help": ...}`` from the command line (``--opt VALUE`` or
    ``--opt=VALUE``): two options need no :mod:`argparse`, whose imports (``gettext``,
    ``shutil``) cost a delivery a few milliseconds more than the client's own work.

    >>> parse_arguments(["--socket", "/run/s.sock", "--timeout=5"])["timeout"]
    5.0
    >>> parse_arguments(["--colour"])
    Traceback (most recent call last):
    spamkit.mail.serve.client.UsageError: unrecognised option --colour
    """
    found: dict = {"socket": os.environ.get("SPAMKIT_SOCKET"), "timeout": 60.0, "help": False}
    rest = list(argv)
    while rest:
        arg = rest.pop(0)
        if arg in ("-h", "--help"):
            found["help"] = True
            continue
        name, given, value = arg.partition("=")
        if name not in ("--socket", "--timeout"):
            raise UsageError(f"unrecognised option {arg}" if arg.startswith("-") else f"unexpected argument {arg}")
        if not given:
            if not rest:
                raise UsageError(f"{name} needs a value")
            value = rest.pop(0)
        if name == "--socket":
            found["socket"] = value
        else:
            try:
                found["timeout"] = float(value)
            except ValueError:
                raise UsageError(f"--timeout takes seconds, not {value!r}") from None
            if not found["timeout"] > 0:
                raise UsageError(f"--timeout takes a positive number of seconds, not {value!r}")
    return found


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
        sock.sendall(len(raw).to_bytes(LENGTH_BYTES, "big") + raw)
        head = read_exact(sock, 1 + LENGTH_BYTES)
        if len(head) < 1 + LENGTH_BYTES:
            raise OSError("the server closed the connection without an answer")
        status, length = head[0], int.from_bytes(head[1:], "big")
        out = read_exact(sock, length)
        if len(out) < length or (status == EXIT_ERROR and length == 0):
            raise OSError("incomplete answer from the server")
        if status == EXIT_REFUSED:
            raise OSError(f"the server refused the message: {out.decode('utf-8', 'replace')[:300]}")
        return status, out


def main(argv=None) -> int:
    """Console-script entry point. A command line it does not take still lets the message through,
    unchanged, with status 3 and the reason on standard error (as a server that does not answer)."""
    try:
        args = parse_arguments(sys.argv[1:] if argv is None else list(argv))
        problem = None
    except UsageError as exc:
        args, problem = {}, exc
    if args.get("help"):
        sys.stdout.write(USAGE)
        return 0
    raw = sys.stdin.buffer.read()

    def work(message: bytes) -> tuple[int, bytes]:
        if problem is not None:
            raise OSError(f"{problem} (spamkit-pipe --help lists the options)")
        if not args["socket"]:
            raise OSError("no socket given (--socket or SPAMKIT_SOCKET)")
        status, out = ask(args["socket"], message, args["timeout"])
        if status == EXIT_ERROR:
            raise OSError("the server could not classify the message (its log says why)")
        return status, out

    return guard(raw, work, "spamkit-pipe")


if __name__ == "__main__":
    sys.exit(main())
