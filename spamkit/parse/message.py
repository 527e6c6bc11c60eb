"""Raw mail to :class:`Message`: decoded header fields and the visible text of the body.

Owns parsing: RFC 5322 headers (RFC 2047 encoded words, raw 8-bit bytes),
MIME structure (RFC 2045-2049: multiparts, base64, quoted-printable,
charsets), HTML to text (via :mod:`spamkit.parse.htmltext`), attachments recorded
by name and type. Tokenizing is left to :mod:`spamkit.text`.

The rule is that no input makes :func:`parse_message` raise and no message is
dropped because of its encoding. When mail lies (an unknown or wrong charset,
broken base64, 8-bit bytes in a header, a missing header/body separator), the
parser falls back and records what it did in :attr:`Message.defects`, so that
readers and commands can count fallbacks instead of hiding them.

Three kinds of input go through the same function (see
:data:`spamkit.corpus.base.KINDS`): raw mail (``"rfc822"``), the Enron-spam
files (``"enron"``: a ``Subject:`` line followed by the body with no blank
line; a mail parser would read the body as header lines), and plain text
(``"text"``: an SMS, a TSV cell). ``"auto"`` decides from the content.

The structure is parsed from the bytes by :mod:`spamkit.parse.mime` (header blocks,
RFC 2231 parameters, multipart spans), which follows the standard library's
compat32 feed parser wherever mail breaks the rules but never recurses, never
copies a part before it is needed and does bounded work per input byte. Header
values are then decoded here, word by word.

Bounds, for any input of n bytes: at most :data:`MAX_PARTS` parts are visited and
nesting below :data:`MAX_DEPTH` is not parsed; each leaf decodes at most
:data:`MAX_PART_BYTES` encoded bytes; header fields and parameters are capped in
:mod:`spamkit.parse.mime`; HTML-to-text is linear (:mod:`spamkit.parse.htmltext`). So the work is
O(n · MAX_DEPTH) in the worst case and the memory a small multiple of n.

One concern over ~500 lines: raw bytes to a decoded Message (header fields, RFC 2047,
charsets, transfer encodings, text and HTML parts, attachments, defects counted).
"""

from __future__ import annotations

import re

from ..common.patterns import LazyPattern
from ..common.compiled import speedups as _compiled
from ..common.records import Frozen, set_fields
from .decoding import decode_bytes, decode_header_value, payload_bytes, payload_size
from .htmltext import html_to_text
from .markup import strip_markup
from .mime import Part, parse_part, split_multipart

_speedups = _compiled()                # spamkit/common/speedups.c, or None

#: encoded payload bytes read from one MIME part; the rest is cut (``part-truncated``)
MAX_PART_BYTES = 1 << 20
#: bytes of a message that are parsed at all; the rest is not read (``message-truncated``).
#: The words that decide are up front, and real mail is far smaller (the largest message of
#: trec07p-dev and CSDMC2010 is 260 KB; SpamAssassin's spamc skips messages over 500 KB);
#: the cap keeps the worst case (4 MiB of plain text to scan for words) well under a second.
MAX_MESSAGE_BYTES = 4 << 20
#: MIME nesting depth and number of parts walked; deeper or further parts are skipped and counted
MAX_DEPTH = 32
MAX_PARTS = 500
_HEADER_LINE = LazyPattern(rb"^[\x21-\x39\x3b-\x7e]+[ \t]*:")
_SUBJECT_LINE = LazyPattern(rb"^subject:[ \t]?", re.IGNORECASE)


class Attachment(Frozen):
    """A MIME part that is not body text: recorded by name and type, its bytes not kept."""

    __slots__ = ("filename", "content_type", "size")
    filename: str
    content_type: str
    size: int

    def __init__(self, filename: str, content_type: str, size: int):
        set_fields(self, filename=filename, content_type=content_type, size=size)


class Message(Frozen):
    """A parsed message: what the tokenizer needs and nothing else.

    Attributes
    ----------
    headers : tuple of (name, value)
        Every header field in order, the name lower-cased, the value decoded
        to text with folding white space collapsed.
    subject : str
        The decoded Subject (``""`` if none).
    body : str
        The visible text: text/plain parts as they are, HTML parts as the text a
        reader sees (for ``multipart/alternative``, the last alternative that
        can be rendered, as RFC 2046 §5.1.4 prescribes).
    urls : tuple of str
        URLs from HTML attributes (``href``, ``src``, ...), which are not in ``body``.
    html_tags : tuple of str
        Names of the HTML tags used, in order (evidence for a filter).
    attachments : tuple of Attachment
    defects : tuple of str
        What the parser had to recover from, one code per event:
        ``charset-unknown:X``, ``charset-mismatch:X``, ``charset-missing``,
        ``header-8bit``, ``header-encoded-word``, ``base64-invalid``,
        ``part-truncated``, ``message-truncated``, ``header-truncated``, ``too-deep``, ``too-many-parts``,
        ``no-header-separator``, ``mime:<email-package defect>``.
    kind : str
        How the input was read: ``rfc822``, ``enron`` or ``text``.
    size : int
        Length of the raw input in bytes.
    raw : bytes
        The input as parsed (after spamkit's own tag fields were taken out): what a lexer
        that works on raw mail reads (``Analyzer(lexer="bogofilter")``). Not compared, not shown.

    An immutable record (:class:`~spamkit.common.records.Frozen`: equal when every field but
    ``raw`` is; ``replace`` makes a changed copy).
    """

    __slots__ = ("headers", "subject", "body", "urls", "html_tags", "attachments", "defects", "kind", "size", "raw")
    _hidden = ("raw",)
    headers: tuple
    subject: str
    body: str
    urls: tuple
    html_tags: tuple
    attachments: tuple
    defects: tuple
    kind: str
    size: int
    raw: bytes

    def __init__(self, headers: tuple = (), subject: str = "", body: str = "", urls: tuple = (),
                 html_tags: tuple = (), attachments: tuple = (), defects: tuple = (), kind: str = "text",
                 size: int = 0, raw: bytes = b""):
        set_fields(self, headers=headers, subject=subject, body=body, urls=urls, html_tags=html_tags,
                   attachments=attachments, defects=defects, kind=kind, size=size, raw=raw)

    def header(self, name: str, default: str = "") -> str:
        """The first value of header ``name`` (case-insensitive), or ``default``."""
        name = name.lower()
        for key, value in self.headers:
            if key == name:
                return value
        return default

    def get_all(self, name: str) -> list[str]:
        """Every value of header ``name`` (case-insensitive), in order."""
        name = name.lower()
        return [value for key, value in self.headers if key == name]

    @property
    def used_fallback(self) -> bool:
        """Did parsing have to recover from anything (any defect)?"""
        return bool(self.defects)


# --------------------------------------------------------------------------- MIME

def _param(part: Part, name: str, header: str, defects: list[str]) -> str:
    """A MIME parameter (charset, filename) of field ``header``, as text, encoded words decoded."""
    value = part.param(name, header)
    return decode_header_value(value, defects) if value else ""


class _Walker:
    """Collects body text, URLs, tags and attachments from a message's MIME tree.

    The tree is never built: parts are parsed as the walk reaches them, from an
    explicit stack, so nesting costs no recursion and parts past :data:`MAX_DEPTH`
    or :data:`MAX_PARTS` are never parsed at all.
    """

    def __init__(self, raw: bytes, max_part_bytes: int):
        self.raw = raw
        self.max_part_bytes = max_part_bytes
        self.texts: list[str] = []
        self.urls: list[str] = []
        self.tags: list[str] = []
        self.attachments: list[Attachment] = []
        self.defects: list[str] = []
        self.n_parts = 0

    def children(self, part: Part) -> list[Part] | None:
        """The parsed child parts of a container part, or ``None`` for a leaf."""
        ctype = part.content_type
        maintype = ctype.partition("/")[0]
        if maintype == "multipart":
            boundary = part.param("boundary")
            if boundary is None:
                self.defects.append("mime:NoBoundaryInMultipartDefect")
                return None
            spans, defects = split_multipart(self.raw, part, boundary.rstrip())
            self.defects.extend(defects)
            if not spans:
                return None
            default = "message/rfc822" if ctype == "multipart/digest" else "text/plain"
            return [parse_part(self.raw, a, b, default) for a, b in spans]
        if ctype == "message/delivery-status":
            return []                       # header blocks about a delivery, no text
        if maintype == "message":
            return [parse_part(self.raw, part.start, part.end)]
        return None

    def walk(self, root: Part) -> None:
        stack = [(root, 0, True)]
        while stack:
            part, depth, render = stack.pop()
            self.n_parts += 1
            if self.n_parts > MAX_PARTS:
                self.defects.append("too-many-parts")
                return
            self.defects.extend(part.defects)
            if depth >= MAX_DEPTH and part.content_type.startswith(("multipart/", "message/")):
                self.defects.append("too-deep")
                continue
            children = self.children(part)
            if children is None:
                self.leaf(part, render)
                continue
            ctype = part.content_type
            if ctype == "multipart/alternative" and render:
                chosen = self._preferred_alternative(children)
                items = [(c, depth + 1, c is chosen) for c in children]
            else:
                items = [(c, depth + 1, render) for c in children]
            if ctype == "message/rfc822" and children:
                subject = children[0].get("subject")
                if subject:
                    self.texts.append(decode_header_value(subject, self.defects))
            stack.extend(reversed(items))

    @staticmethod
    def _preferred_alternative(children):
        # RFC 2046 §5.1.4: alternatives are in increasing order of preference.
        for child in reversed(children):
            ctype = child.content_type
            if ctype in ("text/html", "text/plain") or ctype.startswith(("multipart/", "message/")):
                return child
        return children[-1] if children else None

    def leaf(self, part: Part, render: bool) -> None:
        ctype = part.content_type
        filename = _param(part, "filename", "content-disposition", self.defects) or \
            _param(part, "name", "content-type", self.defects)
        disposition = (part.get("content-disposition") or "").split(";", 1)[0].strip().lower()
        is_text = ctype.startswith("text/") and ctype not in ("text/x-vcard", "text/calendar")
        if filename or disposition == "attachment" or not is_text:
            size = payload_size(self.raw, part, self.max_part_bytes) if not is_text else part.end - part.start
            self.attachments.append(Attachment(filename, ctype, size))
            if not is_text:
                return
        data = payload_bytes(self.raw, part, self.defects, self.max_part_bytes)
        charset = _param(part, "charset", "content-type", self.defects) or None
        text = decode_bytes(data, charset, self.defects)
        if ctype == "text/html":
            visible, urls, tags = html_to_text(text)
            self.urls.extend(urls)
            self.tags.extend(tags)
            text = visible
        if render:
            self.texts.append(text)


def _split_enron(raw: bytes) -> tuple[bytes, bytes]:
    """Subject line and body of an Enron-spam file (no blank line between them)."""
    first, _, rest = raw.partition(b"\n")
    if _SUBJECT_LINE.match(first):
        return _SUBJECT_LINE.sub(b"", first, count=1).rstrip(b"\r"), rest
    return b"", raw


def detect_kind(raw: bytes) -> str:
    """``"rfc822"``, ``"enron"`` or ``"text"``, from the first lines of ``raw``.

    Mail has a block of header fields (and continuation lines) ended by a blank
    line. A ``Subject:`` line followed directly by ordinary text is the Enron
    shape. Anything else is plain text.

    Examples
    --------
    >>> detect_kind(b"From: a@b.example\\nSubject: hi\\n\\nbody")
    'rfc822'
    >>> detect_kind(b"Subject: hi\\nthe body starts here\\nand goes on")
    'enron'
    >>> detect_kind(b"Free entry in 2 a wkly comp")
    'text'
    """
    if raw.startswith(b"From "):
        return "rfc822"
    lines = raw[:65536].split(b"\n", 200)
    if not lines or not _HEADER_LINE.match(lines[0]):
        return "text"
    n_fields = 0
    for line in lines[:200]:
        line = line.rstrip(b"\r")
        if not line:
            break                                   # the blank line that ends a header block
        if _HEADER_LINE.match(line):
            n_fields += 1
        elif line[:1] in (b" ", b"\t"):
            continue                                # a folded continuation line
        elif n_fields == 1 and _SUBJECT_LINE.match(lines[0]):
            return "enron"
        else:
            return "rfc822" if n_fields >= 2 else "text"
    return "rfc822"


def top_headers(fields: list, defects: list[str]) -> list:
    """The top header block as a :class:`Message` keeps it: ``(name.strip().lower(),
    decode_header_value(value))``, the definition; in C where it was built
    (``speedups.header_pairs``, which calls :func:`decode_header_value` for every value that is
    not plain ASCII without encoded words, in order, and collapses the white space of the rest
    itself: 24 fields a trec07p-dev message, 10 µs of its parsing).

    >>> top_headers([("Subject", " a\t b "), ("X-Y", "=?utf-8?q?caf=C3=A9?=")], [])
    [('subject', 'a b'), ('x-y', 'café')]
    """
    if _speedups is not None:
        return _speedups.header_pairs(fields, decode_header_value, defects)
    return [(name.strip().lower(), decode_header_value(value, defects)) for name, value in fields]


def defect_families(msg: Message) -> set:
    """The kinds of parse fallback a message needed (``charset-unknown:x-foo`` counts as
    ``charset-unknown``): what ``parse_fallbacks`` counts, one per kind per message."""
    return {d.split(":", 1)[0] for d in msg.defects}


def parse_message(raw: bytes | str, kind: str = "auto", max_part_bytes: int = MAX_PART_BYTES) -> Message:
    """Parse raw input into a :class:`Message`; never raises on any input.

    Parameters
    ----------
    raw : bytes or str
        The message as stored (``str`` is encoded as UTF-8 first).
    kind : {"auto", "rfc822", "enron", "text"}
        How to read it; see the module docstring.
    max_part_bytes : int
        Encoded bytes read from one MIME part.

    Examples
    --------
    >>> m = parse_message(b"Subject: =?utf-8?q?caf=C3=A9?=\\nFrom: A <a@x.example>\\n\\nHello")
    >>> m.subject, m.header("from"), m.body, m.kind
    ('café', 'A <a@x.example>', 'Hello', 'rfc822')
    >>> parse_message(b"Subject: meds\\ncheap meds here", kind="enron").body
    'cheap meds here'
    """
    if isinstance(raw, str):
        raw = raw.encode("utf-8", "surrogatepass")
    defects: list[str] = []
    size = len(raw)
    if size > MAX_MESSAGE_BYTES:
        raw = raw[:MAX_MESSAGE_BYTES]
        defects.append("message-truncated")
    raw = bytes(raw)
    if kind == "auto":
        kind = detect_kind(raw)
    if kind != "text":
        raw = strip_markup(raw)            # spamkit's own verdicts are not evidence
    if kind == "text":
        return Message(body=decode_bytes(raw, None, []), kind="text", defects=tuple(defects), size=size, raw=raw)
    if kind == "enron":
        subject_bytes, body = _split_enron(raw)
        subject = decode_bytes(subject_bytes, None, []).strip()
        return Message(headers=(("subject", subject),) if subject_bytes else (), subject=subject,
                       body=decode_bytes(body, None, []), kind="enron", defects=tuple(defects), size=size,
                       raw=raw)
    root = parse_part(raw, 0, len(raw), envelope=True)
    headers = top_headers(root.headers, defects)
    walker = _Walker(raw, max_part_bytes)
    walker.walk(root)
    defects.extend(walker.defects)
    subject = next((v for k, v in headers if k == "subject"), "")
    return Message(headers=tuple(headers), subject=subject, body="\n".join(walker.texts),
                   urls=tuple(walker.urls), html_tags=tuple(walker.tags),
                   attachments=tuple(walker.attachments), defects=tuple(defects),
                   kind="rfc822", size=size, raw=raw)


def parsed_bytes(raw, kind: str = "auto") -> bytes:
    """The bytes of a message as :func:`parse_message` reads them (its Message's ``raw``): cut at
    ``MAX_MESSAGE_BYTES`` and, unless it is plain text, without what spamkit wrote into it
    (:func:`strip_markup`). What the byte-level side models read (a context model, byte
    4-grams): a tag of an earlier run is not part of the message, and a verdict written into a
    training folder is not evidence.

    >>> parsed_bytes(b"X-Spam-Status: Yes\\nX-Spamkit-Model: m@1\\nSubject: a\\n\\nb")
    b'Subject: a\\n\\nb'
    """
    raw = bytes((raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw)[:MAX_MESSAGE_BYTES])
    if kind == "auto":
        kind = detect_kind(raw)
    return raw if kind == "text" else strip_markup(raw)


def message_key(raw: bytes) -> bytes:
    """A 16-byte identity of a message: SHA-256 of its bytes without spamkit's fields
    (:func:`strip_markup`).

    A message and the same message tagged by ``spamkit filter`` or processed by ``spamkit
    serve --spamd`` have the same key, so ``spamkit learn`` recognises a message it has
    learned before, tagged or not.

    >>> message_key(b"X-Spam-Status: Yes\\nX-Spamkit-Model: m@1\\nSubject: a\\n\\nb") == message_key(b"Subject: a\\n\\nb")
    True
    """
    import hashlib
    return hashlib.sha256(strip_markup(raw)).digest()[:16]
