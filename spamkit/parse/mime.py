"""MIME structure from raw bytes: header blocks, parameters, multipart spans — no recursion.

Owns the structural half of mail parsing for :mod:`spamkit.parse.message` (which decodes
the parts and collects the text). A message is one ``bytes`` buffer; a part is a
header list plus a ``(start, end)`` span of that buffer, so nothing is copied until
a leaf's content is decoded, and nesting is walked with an explicit stack by the
caller. Written for hostile input:

* **Bounded work.** Every step is a forward scan: header lines with ``bytes.find``,
  parameters by one regular expression without nested quantifiers over a bounded
  prefix (:data:`MAX_PARAM_CHARS`), delimiter lines with ``bytes.find`` of the
  boundary. A part's span is scanned once by its parent's split and once by its
  own header parse, so a message of n bytes nested d deep costs O(n·d) with d at
  most :data:`spamkit.parse.message.MAX_DEPTH`, and no message costs more than that.
* **Bounded memory.** Spans, not copies; header values of one field are cut at
  :data:`MAX_FIELD_CHARS`; at most :data:`MAX_FIELDS` fields and :data:`MAX_HEADER_CHARS`
  characters of values are kept per header block (``header-truncated`` past either).
* **Never raises** on any bytes.

The behaviour follows RFC 5322 (header fields, folding), RFC 2045/2046 (content
types, parameters, multipart delimiters: a delimiter line is ``--boundary``,
optionally ``--`` for the close delimiter, then optional white space; the line
break before it belongs to it) and RFC 2231 (parameter continuations, charset and
language). Where real mail breaks the rules, it does what the standard library's
``email.feedparser`` (compat32) does, so that a filter trained with the earlier
parser sees the same text, and records the same defect names
(``mime:StartBoundaryNotFoundDefect``, ``mime:CloseBoundaryNotFoundDefect``,
``mime:NoBoundaryInMultipartDefect``, ``mime:FirstHeaderLineIsContinuationDefect``,
``mime:MisplacedEnvelopeHeaderDefect``, ``no-header-separator``).
Source for that behaviour: CPython ``Lib/email/feedparser.py`` and
``Lib/email/message.py`` (read, not copied).
"""

from __future__ import annotations

import functools
import re

from ..common.patterns import LazyPattern
from ..common.compiled import speedups as _compiled

_speedups = _compiled()                # spamkit/common/speedups.c, or None: the Python definitions here

#: header fields kept per header block; the rest of the block is skipped (``header-truncated``)
MAX_FIELDS = 2000
#: characters kept of one field's value (a 2 MB header line is cut here)
MAX_FIELD_CHARS = 64 * 1024
#: characters of field values kept per header block in all (real headers are a few KB)
MAX_HEADER_CHARS = 256 * 1024
#: characters of a Content-Type/Content-Disposition value examined for parameters
MAX_PARAM_CHARS = 16 * 1024
#: parameters read from one field
MAX_PARAMS = 64

# RFC 5322 field name: printable ASCII except ":" (the stdlib also accepts an empty name)
_FIELD = LazyPattern(rb"[\x21-\x39\x3b-\x7e]*:")
# pieces of a parameter list: quoted strings (which may hold ";"; a missing closing quote
# runs to the end), runs of other characters, and the ";" that ends a parameter
_PIECE = LazyPattern(r'"(?:[^"\\]|\\.)*(?:"|$)|[^;"]+|"|;', re.S)
_QUOTED_PAIR = LazyPattern(r"\\(.)", re.S)


class Part:
    """One header block and the span of its body in the message's buffer.

    ``headers`` holds ``(name, value)`` as written: the name without its colon, the
    value with continuation lines joined by a space, both ``str`` decoded from
    ASCII with ``surrogateescape`` (8-bit bytes survive as surrogates, which
    :func:`spamkit.parse.decoding.decode_header_value` detects).
    """

    __slots__ = ("headers", "start", "end", "defects", "default_type", "_ctype", "_params", "_first")

    def __init__(self, headers, start, end, defects, default_type="text/plain", first=None):
        self.headers = headers
        self.start, self.end = start, end
        self.defects = defects
        self.default_type = default_type
        self._ctype = None
        self._params = None
        self._first = first                       # {lower-case name: first value}, or made by get()

    def get(self, name: str, default=None):
        """The first value of field ``name`` (case-insensitive), as the stdlib's ``Message.get``.

        The first value of each name is indexed once, at the first call (or by the C header
        reader, ``speedups.header_block``, as it reads the block): a message's own header block
        holds 20-40 fields and is asked for five or six (the parser's share of ``str.lower``
        calls: 441,130 over trec07p-dev's 5,000 messages when each call scanned the fields)."""
        first = self._first
        if first is None:
            first = self._first = {}
            for key, value in self.headers:
                first.setdefault(key.lower(), value)
        return first.get(name.lower(), default)

    @property
    def content_type(self) -> str:
        """``maintype/subtype`` in lower case; the default type when missing or malformed."""
        if self._ctype is None:
            value = self.get("content-type")
            ctype = value.partition(";")[0].strip().lower() if value is not None else ""
            self._ctype = ctype if ctype.count("/") == 1 else self.default_type
        return self._ctype

    def param(self, name: str, field: str = "content-type") -> str | None:
        """A parameter of ``field``, RFC 2231 continuations and charsets decoded."""
        if field == "content-type":
            if self._params is None:
                self._params = parameters(self.get("content-type") or "")
            return self._params.get(name)
        return parameters(self.get(field) or "").get(name)


def _line_end(raw: bytes, pos: int, end: int) -> tuple[int, int]:
    """(end of the line's content, start of the next line) for the line at ``pos``."""
    nl = raw.find(b"\n", pos, end)
    if nl < 0:
        return end, end
    stop = nl - 1 if nl > pos and raw[nl - 1] == 13 else nl
    return stop, nl + 1


def parse_part(raw: bytes, start: int, end: int, default_type: str = "text/plain",
               envelope: bool = False) -> Part:
    """Parse the header block at ``raw[start:end]``; the body is the rest of the span.

    The block ends at the first empty line, or (``no-header-separator``) at the first
    line that is neither a field nor a continuation, which then starts the body.
    ``envelope``: a leading mbox ``From `` line is skipped (a later one is a defect).

    Nearly every real header block is well formed and small; such a block is read by two
    regular-expression scans in C (:func:`_well_formed_block`), and only the rest goes
    through the line-by-line loop that handles every defect and limit. Both give the same
    :class:`Part` (``tests/test_mime.py`` compares them on every message of the shared
    corpora and on generated blocks).
    """
    if envelope and raw.startswith(b"From ", start):
        _stop, first_line_end = _line_end(raw, start, end)
        fast = _well_formed_block(raw, first_line_end, end, default_type)
    else:
        fast = _well_formed_block(raw, start, end, default_type)
    return fast if fast is not None else _parse_part_lines(raw, start, end, default_type, envelope)


# A well-formed header block (RFC 5322 §2.2): field lines, each followed by its continuation
# lines, then the empty line. No "From " line, no leading continuation, nothing else.
_BLOCK = LazyPattern(rb"(?:[\x21-\x39\x3b-\x7e]*:[^\n]*\n(?:[ \t][^\n]*\n)*)*\r?\n")
# one field of such a block once CRLFs are LFs: name, value after the colon's blanks, continuations
_FIELD_LINES = LazyPattern(r"([\x21-\x39\x3b-\x7e]*):[ \t]*([^\n]*)((?:\n[ \t][^\n]*)*)\n")


def _well_formed_block(raw: bytes, start: int, end: int, default_type: str) -> Part | None:
    """The :class:`Part` of a well-formed header block under every limit, or ``None``.

    Same values as the line loop: a line's content ends before its ``\\n`` and one ``\\r``
    right before it; the first line's value loses its leading blanks; continuation lines are
    kept whole and joined with one space. A block of at most :data:`MAX_FIELD_CHARS`
    characters and :data:`MAX_FIELDS` fields cannot reach any limit, so nothing is cut.

    In C where it was built (``speedups.header_block``: two passes over the block's bytes, a
    third of the time of :func:`_well_formed_block_python`, its definition, which
    ``tests/test_mime.py`` compares it with).
    """
    if _speedups is not None:
        got = _speedups.header_block(raw, start, end, MAX_FIELD_CHARS, MAX_FIELDS)
        return None if got is None else Part(got[0], got[1], end, [], default_type, got[2])
    return _well_formed_block_python(raw, start, end, default_type)


def _well_formed_block_python(raw: bytes, start: int, end: int, default_type: str) -> Part | None:
    """:func:`_well_formed_block` with two regular-expression scans."""
    m = _BLOCK.match(raw, start, min(end, start + MAX_FIELD_CHARS + 2))
    if m is None:
        return None
    body = m.end()
    stop = body - (2 if raw[body - 2:body] == b"\r\n" else 1)
    text = raw[start:stop].decode("ascii", "surrogateescape")
    if "\r" in text:
        text = text.replace("\r\n", "\n")
    fields = _FIELD_LINES.findall(text)
    if len(fields) > MAX_FIELDS:
        return None
    headers = [(name, value + more.replace("\n", " ") if more else value) for name, value, more in fields]
    return Part(headers, body, end, [], default_type)


def _parse_part_lines(raw: bytes, start: int, end: int, default_type: str, envelope: bool) -> Part:
    """:func:`parse_part` line by line, with every defect and limit."""
    headers: list = []
    defects: list[str] = []
    budget = MAX_HEADER_CHARS                        # characters of values still to keep
    pos = start
    first = True
    while pos < end:
        stop, nxt = _line_end(raw, pos, end)
        if stop == pos:                              # the empty line: the body follows
            return Part([(n, _join(v)) for n, v in headers], nxt, end, defects, default_type)
        c = raw[pos]
        if c == 32 or c == 9:                        # a continuation line
            if headers:
                value = headers[-1][1]
                room = min(MAX_FIELD_CHARS - value[0], budget)
                if room > 0:
                    piece = raw[pos:min(stop, pos + room)].decode("ascii", "surrogateescape")
                    value.append(piece)
                    value[0] += len(piece)
                    budget -= len(piece)
            else:
                defects.append("mime:FirstHeaderLineIsContinuationDefect")
        elif raw.startswith(b"From ", pos):
            if not (envelope and first):
                defects.append("mime:MisplacedEnvelopeHeaderDefect")
        else:
            m = _FIELD.match(raw, pos, stop)
            if m is None:                            # body text where a field should be
                defects.append("no-header-separator")
                return Part([(n, _join(v)) for n, v in headers], pos, end, defects, default_type)
            if len(headers) < MAX_FIELDS and budget > 0:
                name = raw[pos:m.end() - 1].decode("ascii", "surrogateescape")
                cut = min(stop, m.end() + min(MAX_FIELD_CHARS, budget))
                value = raw[m.end():cut].decode("ascii", "surrogateescape").lstrip(" \t")
                headers.append((name, [len(value), value]))
                budget -= len(value)
            elif "header-truncated" not in defects:
                defects.append("header-truncated")
        first = False
        pos = nxt
    return Part([(n, _join(v)) for n, v in headers], end, end, defects, default_type)


def _join(value: list) -> str:
    return " ".join(value[1:]) if len(value) > 2 else (value[1] if len(value) > 1 else "")


def split_multipart(raw: bytes, part: Part, boundary: str) -> tuple[list[tuple[int, int]], list[str]]:
    """The spans of the body parts of a multipart ``part``, and the defects found.

    A delimiter line starts with ``--boundary``, then optionally ``--`` (the close
    delimiter), then only spaces or tabs (RFC 2046 §5.1.1). The preamble before the
    first delimiter and the epilogue after the close delimiter are not parts. With
    no delimiter at all there are no parts (``mime:StartBoundaryNotFoundDefect``); a
    missing close delimiter ends the last part at the end of the span
    (``mime:CloseBoundaryNotFoundDefect``).
    """
    sep = b"--" + boundary.encode("utf-8", "surrogateescape")
    start, end = part.start, part.end
    spans: list[tuple[int, int]] = []
    defects: list[str] = []
    pos = start
    open_at = -1                                     # where the current part's content starts
    while True:
        hit = raw.find(sep, pos, end)
        if hit < 0:
            break
        pos = hit + len(sep)
        if hit > start and raw[hit - 1] != 10:      # not at the start of a line
            continue
        close = raw.startswith(b"--", pos, end)
        after = pos + 2 if close else pos
        stop, nxt = _line_end(raw, after, end)
        if raw[after:stop].strip(b" \t"):            # more than white space after it: not a delimiter
            continue
        if open_at >= 0:
            # the line break before the delimiter belongs to the delimiter
            last = hit
            if last > open_at and raw[last - 1] == 10:
                last -= 1
                if last > open_at and raw[last - 1] == 13:
                    last -= 1
            spans.append((open_at, last))
        if close:
            return spans, defects
        open_at = nxt
        pos = nxt
    if open_at < 0:
        defects.append("mime:StartBoundaryNotFoundDefect")
        return [], defects
    spans.append((open_at, end))
    defects.append("mime:CloseBoundaryNotFoundDefect")
    return spans, defects


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] == '"':
        return _QUOTED_PAIR.sub(r"\1", value[1:-1])
    if len(value) >= 2 and value[0] == "<" and value[-1] == ">":
        return value[1:-1]
    return value


#: values up to this long are remembered by :func:`parameters` (the same few Content-Type values
#: recur in every mailbox), at most :data:`PARAM_CACHE` of them, the least recently used dropped
PARAM_CACHE_CHARS = 256
PARAM_CACHE = 4096


def parameters(value: str) -> dict[str, str]:
    """The parameters of a Content-Type or Content-Disposition value, by lower-case name.

    RFC 2231: ``name*=charset'lang'%XX`` is percent-decoded and decoded from its
    charset; ``name*0``, ``name*1*``, ... are joined in section order. The first
    occurrence of a name wins. Linear in the length of ``value`` (which is cut at
    :data:`MAX_PARAM_CHARS`); never raises.

    >>> parameters('text/plain; charset="utf-8"; format=flowed')
    {'charset': 'utf-8', 'format': 'flowed'}
    >>> parameters("text/plain; charset*=us-ascii'en'utf-8")
    {'charset': 'utf-8'}
    >>> parameters("application/pdf; name*0*=utf-8''%E2%82%AC; name*1=.pdf")
    {'name': '€.pdf'}
    >>> parameters('multipart/mixed; boundary="a;b"; x')
    {'boundary': 'a;b'}

    A value of at most :data:`PARAM_CACHE_CHARS` characters is parsed once and remembered
    (a multipart's boundary makes its value unique, but a leaf's ``text/plain;
    charset="us-ascii"`` recurs: of the 11,093 values with a parameter in trec07p-dev's
    messages, 6,942 had been seen before; parsing went from 123 to 118 µs a message,
    ``scripts/profile_stages.py --compare``); each call gets its own dict. An ASCII value
    without RFC 2231 names is parsed in C where it was built (``speedups.mime_parameters``, the
    same dict: ``tests/test_mime.py``), which cut parsing a tenth more.
    """
    if value.find(";") < 0:
        return {}
    if _speedups is not None:
        got = _speedups.mime_parameters(value[:MAX_PARAM_CHARS], MAX_PARAMS)
        if got is not None:                            # None: not ASCII, or RFC 2231 names
            return got
    if len(value) <= PARAM_CACHE_CHARS:
        return dict(_remembered_parameters(value))
    return _parameters(value)


def _parameters(value: str) -> dict[str, str]:
    """:func:`parameters`, computed."""
    value = value[:MAX_PARAM_CHARS]
    first = value.find(";")
    if first < 0:
        return {}
    plain: dict[str, str] = {}
    extended: dict[str, dict[int, tuple[str, bool]]] = {}
    for segment in _segments(value, first + 1):
        name, eq, val = segment.partition("=")
        name = name.strip().lower()
        if not eq or not name:
            continue
        encoded = name.endswith("*")
        if encoded:
            name = name[:-1]
        base, star, number = name.rpartition("*")
        if star and number.isdigit() and len(number) <= 3:
            name, section = base, int(number)
        elif encoded:
            section = 0
        else:
            if name not in plain:
                plain[name] = _unquote(val)
            continue
        extended.setdefault(name, {}).setdefault(section, (_unquote(val), encoded))
    for name, sections in extended.items():
        plain[name] = _join_sections(sections)
    return plain


@functools.lru_cache(maxsize=PARAM_CACHE)
def _remembered_parameters(value: str) -> dict[str, str]:
    """:func:`_parameters` of a short value, kept (read only: :func:`parameters` copies it)."""
    return _parameters(value)


def _segments(value: str, pos: int) -> list[str]:
    """The ``;``-separated segments of ``value`` from ``pos`` (at most :data:`MAX_PARAMS`)."""
    segments: list[str] = []
    current: list[str] = []
    for m in _PIECE.finditer(value, pos):
        piece = m.group(0)
        if piece == ";":
            segments.append("".join(current))
            current = []
            if len(segments) >= MAX_PARAMS:
                return segments
        else:
            current.append(piece)
    segments.append("".join(current))
    return segments


_HEX_DIGITS = frozenset(b"0123456789abcdefABCDEF")


def percent_decoded(data: bytes) -> bytes:
    """``data`` with each ``%XY`` (two hex digits) as the octet it names: RFC 2231 §4's encoded
    parameter values; a ``%`` not followed by two hex digits stays as it is. What
    :func:`urllib.parse.unquote_to_bytes` does (``tests/test_mime.py`` compares the two), without
    importing :mod:`urllib.parse`, which imports :mod:`ipaddress`: ~4 ms of pipe mode's start-up.

    >>> percent_decoded(b"caf%C3%A9 50%25 %zz%4")
    b'caf\xc3\xa9 50% %zz%4'
    """
    if b"%" not in data:
        return data
    pieces = data.split(b"%")
    out = [pieces[0]]
    for piece in pieces[1:]:
        if len(piece) >= 2 and piece[0] in _HEX_DIGITS and piece[1] in _HEX_DIGITS:
            out.append(bytes((int(piece[:2], 16),)))
            out.append(piece[2:])
        else:
            out.append(b"%")
            out.append(piece)
    return b"".join(out)


def _join_sections(sections: dict[int, tuple[str, bool]]) -> str:
    charset = ""
    chunks: list[bytes] = []
    for i, number in enumerate(sorted(sections)):
        text, encoded = sections[number]
        if encoded:
            if i == 0 and text.count("'") >= 2:
                charset, _lang, text = text.split("'", 2)
            chunks.append(percent_decoded(text.encode("utf-8", "surrogateescape")))
        else:
            chunks.append(text.encode("utf-8", "surrogateescape"))
    data = b"".join(chunks)
    for codec in (charset.strip().lower() or "utf-8", "utf-8"):
        try:
            return data.decode(codec)
        except (LookupError, UnicodeError, ValueError):
            continue
    return data.decode("latin-1")
