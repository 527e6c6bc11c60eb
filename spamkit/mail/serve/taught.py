"""What one user taught a shared filter: the messages and their labels, in a small file of its own.

``spamkit serve --user-models DIR --allow-tell`` learns a user's ``TELL`` (``spamc -u USER
-L spam``) into ``DIR/USER.taught`` rather than into a copy of the whole site filter: a copy
took 4.1 MB a user (82 MB in 4.3 s for a client sending a fresh ``User:`` each time), and a
worker serving 70 users' copies grew from 159 MB to 2.4 GB. The user's filter is the site
filter with these messages learned on top (:func:`spamkit.jobs.learn.learn_messages`, in
the order taught), made when first needed and kept in the worker's byte-bounded cache; a
retrained site filter keeps what each user taught, since the messages themselves are kept
(not columns of a vocabulary that the next training renumbers).

The file: a line ``spamkit-taught 1``, then for each message a line ``LABEL SIZE`` and the
message's ``SIZE`` bytes and a line feed. Read as hostile data: a damaged file is refused
with the reason (:class:`~spamkit.common.errors.ModelFormatError`), never half read.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ...common.durable import fsync_dir, unlink_quietly, write_durable
from ...common.errors import ModelFormatError

MAGIC = b"spamkit-taught 1\n"
#: messages one user may teach (the oldest go first past it)
MAX_MESSAGES = 2000
#: bytes one user's file may hold (the oldest messages go first past it)
MAX_BYTES = 32 << 20
_RECORD = re.compile(rb"(ham|spam) (\d{1,9})\n")


def read_taught(path, max_bytes: int = MAX_BYTES) -> list[tuple[str, bytes]]:
    """``[(label, raw message), ...]`` of a taught file, in the order taught; [] when it does not exist.

    >>> import tempfile, os; d = tempfile.mkdtemp(); p = os.path.join(d, "u.taught")
    >>> write_taught(p, [("spam", b"Subject: buy"), ("ham", b"Subject: lunch\\n")])
    >>> read_taught(p)
    [('spam', b'Subject: buy'), ('ham', b'Subject: lunch\\n')]
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise ModelFormatError(f"{path}: cannot read ({exc.strerror or exc})") from None
    try:
        st = os.fstat(fd)
        if not (st.st_mode & 0o170000 == 0o100000):
            raise ModelFormatError(f"{path}: not a regular file")
        if st.st_size > max_bytes + len(MAGIC) + MAX_MESSAGES * 16:
            raise ModelFormatError(f"{path}: {st.st_size} bytes, more than a user's taught messages may take")
        data = b""
        while len(data) < st.st_size:
            piece = os.read(fd, st.st_size - len(data))
            if not piece:
                break
            data += piece
    finally:
        os.close(fd)
    if not data.startswith(MAGIC):
        raise ModelFormatError(f"{path}: not a file of taught messages")
    out: list[tuple[str, bytes]] = []
    at = len(MAGIC)
    while at < len(data):
        m = _RECORD.match(data, at)
        if m is None or len(out) >= MAX_MESSAGES:
            raise ModelFormatError(f"{path}: damaged at byte {at}")
        size, start = int(m.group(2)), m.end()
        if start + size + 1 > len(data) or data[start + size:start + size + 1] != b"\n":
            raise ModelFormatError(f"{path}: damaged at byte {at} (a message shorter than its size)")
        out.append((m.group(1).decode(), data[start:start + size]))
        at = start + size + 1
    return out


def write_taught(path, entries: list[tuple[str, bytes]]) -> None:
    """Write ``entries`` atomically (a temporary file renamed over ``path``)."""
    parts = [MAGIC]
    for label, raw in entries:
        if label not in ("ham", "spam"):
            raise ValueError(f"a taught message is ham or spam, not {label!r}")
        parts += [f"{label} {len(raw)}\n".encode(), raw, b"\n"]
    path = Path(path)
    tmp = path.with_name(f".{path.name}.spamkit-{os.getpid()}")
    unlink_quietly(tmp)                                   # left by a killed writer with this pid
    write_durable(tmp, b"".join(parts))
    os.replace(tmp, path)
    fsync_dir(path.parent)


def bounded(entries: list, max_messages: int = MAX_MESSAGES, max_bytes: int = MAX_BYTES) -> list:
    """The newest ``entries`` that fit: at most ``max_messages``, ``max_bytes`` of messages."""
    kept: list[tuple[str, bytes]] = []
    size = 0
    for label, raw in reversed(entries):
        if len(kept) >= max_messages or size + len(raw) > max_bytes:
            break
        kept.append((label, raw))
        size += len(raw)
    return kept[::-1]
