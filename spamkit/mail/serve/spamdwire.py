"""SpamAssassin's spamd protocol on the wire: its exit codes, the request's head parsed, its
length and compression read, an answer framed.

Takes the bytes of a request's head and body and gives a :class:`Request` (or a
:class:`ProtocolError` with the code spamd would answer), and gives the bytes of an answer;
what each command does is :mod:`spamkit.mail.serve.spamd`. Protocol: SpamAssassin's
``spamd/PROTOCOL`` (Apache SpamAssassin 3.4/4.0).
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass, field

#: spamd's exit codes (sysexits.h) used in answers
EX_OK, EX_USAGE, EX_DATAERR, EX_NOUSER, EX_UNAVAILABLE, EX_SOFTWARE, EX_TEMPFAIL, EX_PROTOCOL, EX_NOPERM = (
    0, 64, 65, 67, 69, 70, 75, 76, 77)
CODE_NAMES = {EX_OK: "EX_OK", EX_USAGE: "EX_USAGE", EX_DATAERR: "EX_DATAERR", EX_NOUSER: "EX_NOUSER",
              EX_UNAVAILABLE: "EX_UNAVAILABLE", EX_SOFTWARE: "EX_SOFTWARE", EX_TEMPFAIL: "EX_TEMPFAIL",
              EX_PROTOCOL: "EX_PROTOCOL", EX_NOPERM: "EX_NOPERM"}
#: commands that carry a message
SCORING = ("CHECK", "SYMBOLS", "REPORT", "REPORT_IFSPAM", "PROCESS", "HEADERS")
COMMANDS = SCORING + ("PING", "SKIP", "TELL")
#: the request line and header fields together (real requests: under 200 bytes)
MAX_HEAD_BYTES = 16 << 10
REQUEST_LINE = re.compile(r"([A-Z_]+) SPAMC/(\d+)\.(\d+)\Z")
#: the blank line that ends a request's header fields
HEAD_END = re.compile(rb"\r?\n\r?\n")


class ProtocolError(Exception):
    """A request spamd would refuse: answered with ``code`` and the text."""

    def __init__(self, code: int, text: str):
        super().__init__(code, text)             # both, so that it pickles back from a worker
        self.code, self.text = code, text

    def __str__(self) -> str:
        return self.text


@dataclass
class Request:
    command: str
    version: str
    headers: dict = field(default_factory=dict)      # lower-case name -> value
    body: bytes = b""


def answer(code: int, text: str | None = None, headers=(), body: bytes | None = None, version: str = "1.1") -> bytes:
    """One spamd answer: ``SPAMD/<version> <code> <text>``, the header fields, a blank line, the body."""
    lines = [f"SPAMD/{version} {code} {text or CODE_NAMES.get(code, 'EX_OK')}"]
    if body is not None:
        lines.append(f"Content-length: {len(body)}")
    lines += [f"{name}: {value}" for name, value in headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8") + (body or b"")


def error(code: int, text: str) -> bytes:
    return f"SPAMD/1.0 {code} {text}\r\n\r\n".encode("utf-8", "replace")


def parse_head(head: bytes) -> Request:
    """The request line and header fields (the bytes before the blank line)."""
    lines = head.decode("latin-1").replace("\r\n", "\n").split("\n")
    m = REQUEST_LINE.match(lines[0].strip())
    if m is None:
        raise ProtocolError(EX_PROTOCOL, f"bad request line {lines[0][:80]!r}")
    command, version = m.group(1), f"{m.group(2)}.{m.group(3)}"
    if command not in COMMANDS:
        raise ProtocolError(EX_PROTOCOL, f"unknown command {command}")
    headers = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep or not name.strip():
            raise ProtocolError(EX_PROTOCOL, f"bad header line: {line[:80]}")
        headers[name.strip().lower()] = value.strip()
    return Request(command, version, headers)


def content_length(request: Request) -> int | None:
    """The request's ``Content-length`` (None without one: the body ends with the stream)."""
    length = request.headers.get("content-length")
    if length is None:
        return None
    try:
        length = int(length)
    except ValueError:
        raise ProtocolError(EX_PROTOCOL, f"Content-length {length!r} is not a number") from None
    if length < 0:
        raise ProtocolError(EX_PROTOCOL, "negative Content-length")
    return length


def inflate(request: Request, body: bytes, max_size: int) -> bytes:
    """The body, inflated if ``Compress: zlib`` (within ``max_size``)."""
    compress = request.headers.get("compress")
    if not compress:
        return body
    if compress.lower() != "zlib":
        raise ProtocolError(EX_PROTOCOL, f"unknown compression {compress!r}")
    inflater = zlib.decompressobj()
    try:
        body = inflater.decompress(body, max_size + 1)
    except zlib.error as exc:
        raise ProtocolError(EX_DATAERR, f"damaged zlib body ({exc})") from None
    if len(body) > max_size or inflater.unconsumed_tail:
        raise ProtocolError(EX_DATAERR, f"message inflates to over the server's limit of {max_size}")
    return body
