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

import binascii
import codecs
import quopri
import re
from dataclasses import dataclass, field

from ..common.compiled import speedups as _compiled
from .htmltext import html_to_text
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
#: the fallback when a charset is missing, unknown or wrong: Windows-1252 is a superset of
#: ISO-8859-1 for printable characters and is what mislabelled Western mail nearly always is
#: (WHATWG Encoding Standard maps "iso-8859-1" and "us-ascii" labels to it for this reason).
FALLBACK_CHARSET = "cp1252"

# Charset labels seen in real mail that Python's codec registry does not know,
# or knows by a narrower name than the mail meant (WHATWG Encoding Standard, §4.2).
_CHARSET_ALIASES = {
    "ks_c_5601-1987": "cp949", "ks_c_5601": "cp949", "ksc5601": "cp949", "euc-kr": "cp949",
    "x-gbk": "gbk", "gb2312": "gb18030", "gbk": "gb18030", "x-euc-tw": "big5", "big5": "big5hkscs",
    "iso-8859-8-i": "iso-8859-8", "iso-8859-6-i": "iso-8859-6", "windows-874": "cp874",
    "x-sjis": "shift_jis", "shift-jis": "shift_jis", "sjis": "shift_jis", "x-mac-roman": "mac_roman",
    "macintosh": "mac_roman", "unicode-1-1-utf-7": "utf-7", "x-unicode20utf8": "utf-8",
    "utf8": "utf-8", "iso-8859-1": "cp1252", "latin1": "cp1252", "us-ascii": "cp1252",
    "ascii": "cp1252", "ansi_x3.4-1968": "cp1252", "iso-8859-9": "cp1254", "tis-620": "cp874",
    "x-user-defined": "cp1252", "default": "cp1252", "iso-2022-jp": "iso2022_jp_ext",
}

#: codecs (by their registry names) that read every ASCII byte as that one character, whatever
#: comes before it -- no shift states (ISO-2022 and UTF-7 read ASCII bytes as escapes and
#: base64, and are not here): ASCII data decodes under them as ASCII, which CPython does
#: several times faster than through a code page's table (tests/test_message.py checks each)
_ASCII_SUPERSETS = frozenset({
    "ascii", "utf-8", "iso8859-1", "cp1250", "cp1251", "cp1252", "cp1253", "cp1254", "cp1255", "cp1256",
    "cp1257", "cp1258", "cp874", "iso8859-2", "iso8859-3", "iso8859-4", "iso8859-5", "iso8859-6", "iso8859-7",
    "iso8859-8", "iso8859-9", "iso8859-10", "iso8859-11", "iso8859-13", "iso8859-14", "iso8859-15",
    "iso8859-16", "koi8-r", "koi8-u", "gb2312", "gbk", "gb18030", "big5", "big5hkscs", "euc_jp", "euc_kr",
    "cp949", "cp950", "cp932", "shift_jis", "tis-620", "mac-roman", "cp437", "cp850", "cp866"})

#: charset label -> codec name (or None), as _codec finds it; cleared when it grows past
#: _CODEC_MEMO_SIZE (labels come from the mail: a hostile stream must not grow it for ever)
_codec_memo: dict = {}
_CODEC_MEMO_SIZE = 1024

#: EUC-KR's Hangul filler, which starts an 8-byte composed syllable
_HANGUL_FILLER = b"\xa4\xd4"

_ENCODED_WORD = re.compile(r"=\?([^?\s]+)\?([bBqQ])\?([^?\s]*)\?=")
_SPACE_BETWEEN_WORDS = re.compile(r"(\?=)\s+(=\?)")
_SURROGATE = re.compile("[\udc80-\udcff]")
_HEADER_LINE = re.compile(rb"^[\x21-\x39\x3b-\x7e]+[ \t]*:")
_SUBJECT_LINE = re.compile(rb"^subject:[ \t]?", re.IGNORECASE)


@dataclass(frozen=True)
class Attachment:
    """A MIME part that is not body text: recorded by name and type, its bytes not kept."""

    filename: str
    content_type: str
    size: int


@dataclass(frozen=True)
class Message:
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
    """

    headers: tuple = ()
    subject: str = ""
    body: str = ""
    urls: tuple = ()
    html_tags: tuple = ()
    attachments: tuple = ()
    defects: tuple = ()
    kind: str = "text"
    size: int = 0
    raw: bytes = field(default=b"", repr=False, compare=False)

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


# --------------------------------------------------------------------------- text decoding

def _codec(charset: str):
    """The text codec for a charset label, or ``None`` when there is none."""
    try:
        return _codec_memo[charset]
    except KeyError:
        pass
    if len(_codec_memo) >= _CODEC_MEMO_SIZE:
        _codec_memo.clear()
    name = _codec_memo[charset] = _find_codec(charset)
    return name


def _find_codec(charset: str):
    """:func:`_codec`'s lookup."""
    label = charset.strip().strip('"\'').lower()
    label = _CHARSET_ALIASES.get(label, label)
    try:
        info = codecs.lookup(label)
    except (LookupError, ValueError):
        return None
    # codecs.lookup also finds bytes-to-bytes codecs ("base64", "hex", "zip"): not text.
    if not getattr(info, "_is_text_encoding", True):
        return None
    return info.name


def decode_bytes(data: bytes, charset: str | None, defects: list[str]) -> str:
    """Decode ``data`` with its declared ``charset``, falling back and recording it.

    Order: the declared charset (through a table of aliases real mail uses),
    then UTF-8, then Windows-1252 with replacement characters (never fails).

    Examples
    --------
    >>> d = []
    >>> decode_bytes("café".encode("latin-1"), "utf-8", d), d
    ('café', ['charset-mismatch:utf-8'])
    >>> d = []
    >>> decode_bytes(b"plain", None, d), d
    ('plain', [])
    """
    if charset:
        name = _codec(charset)
        if name is None:
            defects.append(f"charset-unknown:{charset.strip()[:40].lower()}")
        else:
            if name in _ASCII_SUPERSETS and data.isascii():
                return data.decode("ascii")
            if name == "cp949" and _HANGUL_FILLER in data:
                # EUC-KR writes a syllable outside KS X 1001 as the filler 0xA4D4 and three jamo
                # (KS X 1001 annex 3); CP949 has a code for every syllable and reads those as
                # four separate characters, so such text is decoded as EUC-KR proper.
                try:
                    return data.decode("euc_kr")
                except UnicodeDecodeError:
                    pass
            try:
                return data.decode(name)
            except (UnicodeDecodeError, UnicodeError, LookupError):
                defects.append(f"charset-mismatch:{charset.strip()[:40].lower()}")
    elif not data.isascii():
        defects.append("charset-missing")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode(FALLBACK_CHARSET, "replace")


#: every byte outside base64's alphabet: what a lenient decoder skips
_NOT_BASE64 = bytes(b for b in range(256)
                    if not (chr(b).isascii() and (chr(b).isalnum() or chr(b) in "+/")))


def _lenient_b64(text: bytes, defects: list[str]) -> bytes:
    """base64 that tolerates junk characters and bad padding (RFC 2045 §6.8 says ignore them)."""
    clean = text.translate(None, _NOT_BASE64)
    if len(clean) % 4 == 1:
        clean = clean[:-1]
        defects.append("base64-invalid")
    clean += b"=" * (-len(clean) % 4)
    try:
        return binascii.a2b_base64(clean)
    except binascii.Error:
        defects.append("base64-invalid")
        return b""


def _decode_encoded_word(charset: str, encoding: str, text: str, defects: list[str]) -> str:
    # RFC 2047 §4: "B" is base64; "Q" is quoted-printable with "_" for space.
    charset = charset.split("*", 1)[0]          # RFC 2231 language suffix: "utf-8*en"
    data = text.encode("utf-8", "surrogateescape")
    if encoding in "bB":
        raw = _lenient_b64(data, defects)
    else:
        raw = quopri.decodestring(data.replace(b"_", b" "), header=False)
    return decode_bytes(raw, charset, defects)


def decode_header_value(value: str, defects: list[str]) -> str:
    """Decode a raw header value: encoded words (RFC 2047) and raw 8-bit bytes.

    White space between adjacent encoded words is dropped (RFC 2047 §6.2);
    folding white space is collapsed to single spaces.

    Examples
    --------
    >>> decode_header_value("=?utf-8?B?Q2Fmw6k=?= =?iso-8859-1?Q?_cr=E8me?= ok", [])
    'Café crème ok'
    """
    if not value.isascii() and _SURROGATE.search(value):
        # The parser keeps undecodable bytes as surrogates: an unencoded 8-bit header.
        defects.append("header-8bit")
        value = decode_bytes(value.encode("utf-8", "surrogateescape"), None, [])
    if "=?" in value:
        value = _SPACE_BETWEEN_WORDS.sub(r"\1\2", value)
        before = len(defects)
        value = _ENCODED_WORD.sub(
            lambda m: _decode_encoded_word(m.group(1), m.group(2), m.group(3), defects), value)
        if len(defects) > before:
            defects.append("header-encoded-word")
    return " ".join(value.split())


# --------------------------------------------------------------------------- MIME

def payload_bytes(raw: bytes, part: Part, defects: list[str], max_part_bytes: int) -> bytes:
    """The decoded content of a leaf part, its encoded form cut at ``max_part_bytes``."""
    data = raw[part.start:min(part.end, part.start + max_part_bytes)]
    if part.end - part.start > max_part_bytes:
        defects.append("part-truncated")
    cte = (part.get("content-transfer-encoding") or "").strip().lower()
    if cte == "base64":
        return _lenient_b64(data, defects)
    if cte == "quoted-printable":
        return quopri.decodestring(data)
    if cte in ("x-uuencode", "uuencode", "x-uue", "uue"):
        try:
            return binascii.a2b_uu(data.split(b"\n", 1)[-1].split(b"\nend", 1)[0]) if data else b""
        except binascii.Error:
            defects.append("uuencode-invalid")
            return data
    return data


def payload_size(raw: bytes, part: Part, max_part_bytes: int) -> int:
    """``len(payload_bytes(raw, part, [], max_part_bytes))``, its definition, without decoding
    base64: :func:`_lenient_b64` decodes the characters of base64's alphabet that are left once
    everything else (line breaks, junk, "=") is dropped, a lone last one dropped too, so n of
    them make 3 bytes of every 4 and one fewer than the rest, for any bytes (a test compares).
    The size of an attachment is all that is kept of it; decoding it was 5% of parsing."""
    if (part.get("content-transfer-encoding") or "").strip().lower() != "base64":
        return len(payload_bytes(raw, part, [], max_part_bytes))
    stop = min(part.end, part.start + max_part_bytes)
    n = (_speedups.base64_chars(raw, part.start, stop) if _speedups is not None
         else len(raw[part.start:stop].translate(None, _NOT_BASE64)))
    if n % 4 == 1:
        n -= 1
    return 3 * (n // 4) + max(0, n % 4 - 1)


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


# --------------------------------------------------------------------------- spamkit's own fields

#: the header fields ``spamkit filter`` prepends (lower-case names)
SPAMKIT_FIELDS = (b"x-spam-status", b"x-spam-flag", b"x-spam-level", b"x-spam-probability", b"x-spamkit-version",
                  b"x-spamkit-model")
#: fields of these names further down a message (another filter's) are renamed X-Spam-Prev-* when
#: spamkit tags it, so that a recipe matching ``^X-Spam-Status: Yes`` sees spamkit's verdict alone
TAG_RENAMES = (b"x-spam-status", b"x-spam-flag", b"x-spam-level", b"x-spam-probability")
_FIELD_LINE = re.compile(rb"([A-Za-z0-9-]+):[ \t]?([^\r\n]*)\r?\n")
_RENAMED_BACK = re.compile(rb"(?im)^X-Spam-Prev-(Status|Flag|Level|Probability)(?=[ \t]*:)")


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
