"""Where one message of an mbox ends and the next begins, as mail clients tell it.

An mbox (RFC 4155) is messages one after another, each after an envelope line ``From sender
date``, with a blank line before the next. A body line that starts with ``From `` is a
problem the format never solved: writers escape it (mboxo and mboxrd write ``>From ``,
mboxrd also ``>>From`` for ``>From``), or count the body instead (mboxcl2's
``Content-Length:``), and many write it unescaped. Splitting at every ``From `` after a
blank line, as spamkit did, cut such a message in two: 60 messages became 120, one message's
head went to Junk and its tail to Unsure, and tags were inserted mid-body.

The rules here are mutt's (``mbox.c``'s ``mbox_parse_mailbox`` and ``from.c``'s ``is_from``),
the reader most careful about what others write:

* a message's ``Content-Length:`` is used when it is right: the counted body ends at the end
  of the file or before a blank line (or none) and a ``From `` line. Whatever the body holds
  is then the body, envelope-shaped lines included (mboxcl2). A wrong count is ignored.
* Otherwise a new message starts at a ``From `` line after a blank line (or at the file's
  start) only if the line looks like an envelope: a sender, then a date with a month name,
  a time and a year (``From a@b.example Mon Apr  9 07:14:25 2007``, ``From - Tue, 13 Mar 2007
  10:00:00 +0000``). ``From the desk of ...`` is body text.

Lines keep their bytes (LF or CRLF, ``>From`` escapes as stored): a message read here and
written back is the same bytes. :func:`split_mbox` works on any iterator of lines (a file,
an archive member), one message buffered at a time.
"""

from __future__ import annotations

import re
from collections import deque

#: an envelope line's date: a month name, a time and a four-digit year, in either order of
#: asctime (``Mon Apr  9 07:14:25 2007``) or RFC 5322 (``Tue, 13 Mar 2007 10:00:00 +0000``)
_MONTH = rb"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
_ENVELOPE = re.compile(
    rb"From (?:\"[^\"\r\n]*\"\S*|\S+)[ \t]+"                        # the sender (an address, "-", MAILER-DAEMON)
    rb"(?:[A-Za-z]{3},?[ \t]+)?"                                    # a weekday
    rb"(?:" + _MONTH + rb"[ \t]+\d{1,2}|\d{1,2}[ \t]+" + _MONTH + rb")[ \t]+"
    rb"(?:\d{4}[ \t]+\d{1,2}:\d{2}|\d{1,2}:\d{2}(?::\d{2})?(?:[ \t]+(?:[A-Za-z]{1,5}|[+-]\d{4}))?[ \t]+\d{4})")
_CONTENT_LENGTH = re.compile(rb"content-length:[ \t]*(\d{1,12})[ \t]*\r?\n\Z", re.IGNORECASE)
_BLANK = (b"\n", b"\r\n")


def is_envelope(line: bytes) -> bool:
    """Does ``line`` look like an mbox envelope line (``From sender date``)?

    >>> is_envelope(b"From a@b.example  Mon Apr  9 07:14:25 2007\\n"), is_envelope(b"From - Tue, 13 Mar 2007 10:00:00 +0000\\r\\n")
    (True, True)
    >>> is_envelope(b"From MAILER-DAEMON Fri Jul  8 12:08:34 +0200 2011\\n"), is_envelope(b"From the desk of Mr Smith\\n")
    (True, False)
    """
    return _ENVELOPE.match(line) is not None


def split_mbox(lines):
    """``(envelope, message lines, separator)`` for each stored message of an mbox given as an
    iterator of lines (each with its line end). ``envelope`` is None for text before the first
    ``From `` line (kept, never dropped); ``separator`` is the blank line before the next
    envelope or the end (b"" where there is none). Joined, they are the input's bytes exactly.

    >>> box = [b"From a@b Mon Apr  9 07:14:25 2007\\n", b"Subject: x\\n", b"\\n", b"hi\\n", b"\\n",
    ...        b"From the desk of Mr Smith\\n", b"\\n", b"From c@d Mon Apr  9 07:15:00 2007\\n", b"\\n", b"yo\\n"]
    >>> [(e[:9], len(m), s) for e, m, s in split_mbox(iter(box))]
    [(b'From a@b ', 5, b'\\n'), (b'From c@d ', 2, b'')]
    """
    source = iter(lines)
    pending: deque = deque()                 # lines read ahead and given back

    def take():
        return pending.popleft() if pending else next(source, None)

    line = take()
    envelope = None
    if line is not None and line.startswith(b"From "):      # the first line: whatever its shape
        envelope, line = line, take()
    elif line is not None:                   # text before the first "From " line: kept as it is
        preamble: list = []
        while line is not None and not (line.startswith(b"From ") and (not preamble or preamble[-1] in _BLANK)):
            preamble.append(line)
            line = take()
        yield None, preamble, b""
        if line is None:
            return
        envelope, line = line, take()
    if envelope is None:
        return
    while True:
        message: list = []
        length = None                        # the header's Content-Length:, if it has one
        while line is not None:
            message.append(line)
            if line in _BLANK:
                break
            m = _CONTENT_LENGTH.match(line)
            if m is not None:
                length = int(m.group(1))
            line = take()
        if line is not None:
            line = take()                    # the first line of the body
        if length is not None and message[-1] in _BLANK:
            counted = _counted_body(length, line, take, pending)
            if counted is not None:
                body, separator, following = counted
                yield envelope, message + body, separator
                if following is None:
                    return
                envelope, line = following, take()
                continue
            line = take()                    # the count was wrong: the body again, by the envelope rule
        while line is not None and not (message and message[-1] in _BLANK and is_envelope(line)):
            message.append(line)
            line = take()
        separator = message.pop() if message and message[-1] in _BLANK and len(message) > 1 else b""
        yield envelope, message, separator
        if line is None:
            return
        envelope, line = line, take()


def _counted_body(length: int, line, take, pending: deque):
    """``(body lines, separator, next envelope or None)`` when ``length`` bytes of body, from
    ``line`` on, end at the end of the input or before a blank line (or none) and a ``From ``
    line; else None, with every line read given back to ``pending`` (``line`` first)."""
    body: list = []
    size = 0
    while line is not None and size < length:
        body.append(line)
        size += len(line)
        line = take()
    if size == length:
        if line is None:
            if body and body[-1] in _BLANK:
                return body[:-1], body[-1], None
            return body, b"", None
        if line.startswith(b"From "):
            return body, b"", line
        if line in _BLANK:
            after = take()
            if after is None:
                return body, line, None
            if after.startswith(b"From "):
                return body, line, after
            body.append(line)
            line = after
    pending.extendleft(reversed(body + ([line] if line is not None else [])))
    return None


#: a line starting "From " after a blank line, whole (the candidates for an envelope)
_AFTER_BLANK = re.compile(rb"\n\r?\n(From [^\n]*\n)")


def estimate_messages(stream, chunk: int = 1 << 20) -> int:
    """About how many messages :func:`split_mbox` finds in the mbox read from ``stream`` (a
    binary file), without splitting it: the first line if it starts with ``From ``, and every
    envelope-shaped line after a blank line, counted over the bytes in pieces of ``chunk`` (for
    a progress display: a few milliseconds for 50 MB where splitting takes a second). It errs
    only where a ``Content-Length:`` body holds envelope lines; a file with none is one message.

    >>> import io
    >>> box = (b"From a@b Mon Apr  9 07:14:25 2007\\nSubject: x\\n\\nhi\\n\\nFrom the desk of Mr Smith\\n"
    ...        b"\\r\\n\\r\\nFrom c@d Mon Apr  9 07:15:00 2007\\n\\nyo\\n")
    >>> estimate_messages(io.BytesIO(box)), estimate_messages(io.BytesIO(box), chunk=7)
    (2, 2)
    """
    first = stream.read(chunk)
    count = 1 if first.startswith(b"From ") else 0
    carry, data = b"", first
    while data:
        buffer = carry + data
        cut = buffer.rfind(b"\n")
        if cut < 0:
            carry = buffer
        else:
            count += sum(1 for m in _AFTER_BLANK.finditer(buffer, 0, cut + 1) if is_envelope(m.group(1)))
            carry = buffer[max(cut - 2, 0):]
        data = stream.read(chunk)
    if carry:
        count += sum(1 for m in _AFTER_BLANK.finditer(carry + b"\n") if is_envelope(m.group(1)))
    return max(count, 1)
