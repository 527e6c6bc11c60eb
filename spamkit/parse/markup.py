"""spamkit's own fields in a message: found, and taken out again, so that nothing spamkit wrote
into a message is evidence about it.

Takes raw bytes and gives them back without the fields ``spamkit filter`` prepends
(:func:`split_tags`, which also gives their values) and without the block ``spamkit serve
--spamd`` appends to the header (:func:`strip_markup`); another filter's fields that tagging
renamed (``X-Spam-Prev-Status``, ...) get their names back. :mod:`spamkit.parse.message` strips
a message before it parses it; :mod:`spamkit.mail.tags` writes the fields this reads.
"""

from __future__ import annotations

import re

from ..common.patterns import LazyPattern


#: the header fields ``spamkit filter`` prepends (lower-case names)
SPAMKIT_FIELDS = (b"x-spam-status", b"x-spam-flag", b"x-spam-level", b"x-spam-probability", b"x-spamkit-version",
                  b"x-spamkit-model")
#: fields of these names further down a message (another filter's) are renamed X-Spam-Prev-* when
#: spamkit tags it, so that a recipe matching ``^X-Spam-Status: Yes`` sees spamkit's verdict alone
TAG_RENAMES = (b"x-spam-status", b"x-spam-flag", b"x-spam-level", b"x-spam-probability")
_FIELD_LINE = LazyPattern(rb"([A-Za-z0-9-]+):[ \t]?([^\r\n]*)\r?\n")
_RENAMED_BACK = LazyPattern(rb"(?im)^X-Spam-Prev-(Status|Flag|Level|Probability)(?=[ \t]*:)")


def envelope_end(raw: bytes) -> int:
    """Length of an mbox envelope line (``From sender date``) at the top of ``raw``, else 0.

    >>> envelope_end(b"From a@b Mon Jan  1\\nSubject: x\\n"), envelope_end(b"From: a@b\\n"), envelope_end(b"From ")
    (20, 0, 0)
    """
    if not raw.startswith(b"From "):
        return 0
    nl = raw.find(b"\n")
    return 0 if nl < 0 else nl + 1          # no line end: no envelope line, just text starting "From "


def split_tags(raw: bytes) -> tuple[dict, bytes]:
    """The spamkit fields at the top of ``raw`` (lower-case name -> value) and the message as
    it was before ``spamkit filter`` tagged it: an mbox envelope line (``From sender date``)
    stays first, and another filter's fields that tagging renamed (``X-Spam-Prev-Status``,
    ...: :data:`TAG_RENAMES`) get their names back. The block is spamkit's only if it names
    the filter (``X-Spamkit-Model``); another filter's ``X-Spam-Status`` on top is the message's.

    >>> split_tags(b"X-Spam-Status: Yes, score=0.9\\nX-Spamkit-Model: m@1\\nSubject: hi\\n\\nbody")
    ({'x-spam-status': 'Yes, score=0.9', 'x-spamkit-model': 'm@1'}, b'Subject: hi\\n\\nbody')
    >>> split_tags(b"From a@b Mon\\nX-Spam-Status: No\\nX-Spamkit-Model: m@1\\nSubject: hi\\n\\nbody")[1]
    b'From a@b Mon\\nSubject: hi\\n\\nbody'
    """
    fields: dict = {}
    start = pos = envelope_end(raw)
    while True:
        m = _FIELD_LINE.match(raw, pos)
        if not m or m.group(1).lower() not in SPAMKIT_FIELDS:
            break
        fields[m.group(1).lower().decode("ascii")] = m.group(2).decode("utf-8", "replace")
        pos = m.end()
    if "x-spamkit-model" not in fields:                # not spamkit's block: another filter's fields
        return {}, raw
    rest = raw[pos:] if start == 0 else raw[:start] + raw[pos:]
    if b"-prev-" in rest[:header_end(rest)].lower():
        end = header_end(rest)
        rest = _RENAMED_BACK.sub(lambda m: b"X-Spam-" + m.group(1), rest[:end]) + rest[end:]
    return fields, rest


#: the first field of the block ``spamkit serve --spamd`` writes into a header, SpamAssassin's way
SPAMD_MARK = b"X-Spam-Checker-Version: spamkit"
#: the fields of that block (lower-case names); fields of these names from elsewhere are kept
#: under :data:`PREVIOUS` + the rest of their name
SPAMD_FIELDS = (b"x-spam-checker-version", b"x-spam-flag", b"x-spam-level", b"x-spam-status",
                b"x-spam-report", b"x-spam-probability", b"x-spamkit-model")
PREVIOUS = b"X-Spam-Prev-"


def header_end(raw: bytes) -> int:
    """Where the header block ends: the start of the empty line after it (len(raw) if none).

    >>> header_end(b"A: 1\\nB: 2\\n\\nbody"), header_end(b"A: 1\\r\\n\\r\\nbody"), header_end(b"\\nbody")
    (10, 6, 0)
    """
    if raw[:1] == b"\n" or raw[:2] == b"\r\n":
        return 0                                      # no header at all
    lf = raw.find(b"\n\n")
    # an empty CRLF line before that LF one (a search that ends where it would)
    crlf = raw.find(b"\n\r\n", 0, lf + 2 if lf >= 0 else len(raw))
    if crlf >= 0:
        return crlf + 1
    return lf + 1 if lf >= 0 else len(raw)


def strip_markup(raw: bytes) -> bytes:
    """``raw`` without what spamkit wrote into it: the fields ``spamkit filter`` puts on top
    (:func:`split_tags`) and the block ``spamkit serve --spamd`` appends to the header, whose
    renamed fields (``X-Spam-Prev-Status``, ...) get their names back.

    A message therefore scores, learns and hashes the same before and after spamkit has seen
    it: learning from a Junk folder filled through spamc must not learn spamkit's own verdict.

    >>> processed = b"Subject: a\\nX-Spam-Prev-Status: No\\nX-Spam-Checker-Version: spamkit 1\\nX-Spam-Flag: YES\\n\\nb"
    >>> strip_markup(processed)
    b'Subject: a\\nX-Spam-Status: No\\n\\nb'
    """
    _, raw = split_tags(raw)
    at = raw.find(SPAMD_MARK)
    if at < 0 or (at > 0 and raw[at - 1:at] != b"\n"):
        return raw
    end = header_end(raw)
    if at >= end:
        return raw
    kept, pos, ours = [], at, False
    while pos < end:
        nl = raw.find(b"\n", pos, end)
        line_end = end if nl < 0 else nl + 1
        line = raw[pos:line_end]
        if line[:1] in (b" ", b"\t"):
            if not ours:
                kept.append(line)
        else:
            ours = line.split(b":", 1)[0].strip().lower() in SPAMD_FIELDS
            if not ours:
                kept.append(line)
        pos = line_end
    head = re.sub(rb"(?im)^" + re.escape(PREVIOUS), b"X-Spam-", raw[:at])
    return head + b"".join(kept) + raw[end:]
