"""Raw mail to :class:`Message`: decoded header fields and the visible text of the body.

Owns parsing: RFC 5322 headers (RFC 2047 encoded words, raw 8-bit bytes),
MIME structure (RFC 2045-2049: multiparts, base64, quoted-printable,
charsets), HTML to text (via :mod:`spamkit.htmltext`), attachments recorded
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

The structure is parsed by the standard library's :mod:`email` feed parser
with the ``compat32`` policy, which recovers from malformed input rather than
raising (the newer ``email.policy.default`` header parser raises on some
malformed addresses). Header values are then decoded here, word by word.
"""

from __future__ import annotations

import binascii
import codecs
import email
import email.parser
import quopri
import re
from dataclasses import dataclass, field
from email.message import Message as _EmailMessage
from email.policy import Compat32

from .htmltext import html_to_text

#: encoded payload bytes read from one MIME part; the rest is cut (``part-truncated``)
MAX_PART_BYTES = 1 << 20
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
        ``part-truncated``, ``too-deep``, ``too-many-parts``,
        ``no-header-separator``, ``mime:<email-package defect>``.
    kind : str
        How the input was read: ``rfc822``, ``enron`` or ``text``.
    size : int
        Length of the raw input in bytes.
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


def _lenient_b64(text: bytes, defects: list[str]) -> bytes:
    """base64 that tolerates junk characters and bad padding (RFC 2045 §6.8 says ignore them)."""
    clean = re.sub(rb"[^A-Za-z0-9+/]", b"", text)
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
    if _SURROGATE.search(value):
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

class _RawHeaders(Compat32):
    """compat32, but header values come back exactly as stored (decoded by us)."""

    def header_fetch_parse(self, name, value):
        return value


_POLICY = _RawHeaders()


def _payload_bytes(part: _EmailMessage, defects: list[str], max_part_bytes: int) -> bytes:
    """The decoded content of a leaf part, its encoded form cut at ``max_part_bytes``."""
    # The stored payload, not get_payload(): for 8-bit text, compat32's get_payload()
    # re-decodes the raw bytes with the declared charset and errors="replace", so a
    # charset lie could no longer be detected and recovered here.
    payload = part._payload
    if isinstance(payload, list):           # a message/* part parsed as a container
        return b""
    if payload is None:
        return b""
    if isinstance(payload, str):
        data = payload.encode("utf-8", "surrogateescape")
    else:
        data = bytes(payload)
    if len(data) > max_part_bytes:
        data = data[:max_part_bytes]
        defects.append("part-truncated")
    cte = str(part.get("content-transfer-encoding", "")).strip().lower()
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


def _content_type(part: _EmailMessage) -> str:
    ctype = part.get_content_type()
    return ctype if isinstance(ctype, str) else "text/plain"


def _param(part: _EmailMessage, getter, defects: list[str]) -> str:
    """A MIME parameter (charset, filename) as text; malformed RFC 2231 values are recovered."""
    try:
        value = getter()
    except (ValueError, LookupError, UnicodeError, TypeError, IndexError, AttributeError):
        defects.append("mime-parameter")
        return ""
    if value is None:
        return ""
    if isinstance(value, tuple):            # RFC 2231 (charset, language, value)
        value = value[2] if len(value) == 3 else str(value[-1])
    return decode_header_value(str(value), defects)


class _Walker:
    """Collects body text, URLs, tags and attachments from a parsed MIME tree."""

    def __init__(self, max_part_bytes: int):
        self.max_part_bytes = max_part_bytes
        self.texts: list[str] = []
        self.urls: list[str] = []
        self.tags: list[str] = []
        self.attachments: list[Attachment] = []
        self.defects: list[str] = []
        self.n_parts = 0

    def collect_defects(self, part: _EmailMessage) -> None:
        for defect in getattr(part, "defects", ()):
            name = type(defect).__name__
            code = "no-header-separator" if name == "MissingHeaderBodySeparatorDefect" else f"mime:{name}"
            self.defects.append(code)

    def walk(self, root: _EmailMessage) -> None:
        # Iterative, depth-limited: a hostile message may nest thousands of multiparts.
        stack = [(root, 0, True)]
        while stack:
            part, depth, render = stack.pop()
            self.n_parts += 1
            if self.n_parts > MAX_PARTS:
                self.defects.append("too-many-parts")
                return
            self.collect_defects(part)
            if part.is_multipart():
                if depth >= MAX_DEPTH:
                    self.defects.append("too-deep")
                    continue
                children = [c for c in part.get_payload() if isinstance(c, _EmailMessage)]
                ctype = _content_type(part)
                if ctype == "multipart/alternative" and render:
                    chosen = self._preferred_alternative(children)
                    items = [(c, depth + 1, c is chosen) for c in children]
                else:
                    items = [(c, depth + 1, render) for c in children]
                if ctype == "message/rfc822" and children:
                    inner = children[0]
                    subject = inner.get("subject")
                    if subject:
                        self.texts.append(decode_header_value(str(subject), self.defects))
                stack.extend(reversed(items))
            else:
                self.leaf(part, render)

    @staticmethod
    def _preferred_alternative(children):
        # RFC 2046 §5.1.4: alternatives are in increasing order of preference.
        for child in reversed(children):
            ctype = _content_type(child)
            if ctype in ("text/html", "text/plain") or child.is_multipart():
                return child
        return children[-1] if children else None

    def leaf(self, part: _EmailMessage, render: bool) -> None:
        ctype = _content_type(part)
        filename = _param(part, part.get_filename, self.defects)
        disposition = str(part.get("content-disposition", "")).split(";", 1)[0].strip().lower()
        is_text = ctype.startswith("text/") and ctype not in ("text/x-vcard", "text/calendar")
        if filename or disposition == "attachment" or not is_text:
            data = _payload_bytes(part, [], self.max_part_bytes) if not is_text else None
            size = len(data) if data is not None else len(str(part.get_payload() or ""))
            self.attachments.append(Attachment(filename, ctype, size))
            if not is_text:
                return
        data = _payload_bytes(part, self.defects, self.max_part_bytes)
        charset = _param(part, part.get_content_charset, self.defects) or None
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
    raw = bytes(raw)
    if kind == "auto":
        kind = detect_kind(raw)
    defects: list[str] = []
    if kind == "text":
        return Message(body=decode_bytes(raw, None, []), kind="text", size=len(raw))
    if kind == "enron":
        subject_bytes, body = _split_enron(raw)
        subject = decode_bytes(subject_bytes, None, []).strip()
        return Message(headers=(("subject", subject),) if subject_bytes else (), subject=subject,
                       body=decode_bytes(body, None, []), kind="enron", size=len(raw))
    msg = email.message_from_bytes(raw, policy=_POLICY)
    headers = []
    for name, value in msg.items():
        headers.append((str(name).strip().lower(), decode_header_value(str(value), defects)))
    walker = _Walker(max_part_bytes)
    walker.walk(msg)
    defects.extend(walker.defects)
    subject = next((v for k, v in headers if k == "subject"), "")
    return Message(headers=tuple(headers), subject=subject, body="\n".join(walker.texts),
                   urls=tuple(walker.urls), html_tags=tuple(walker.tags),
                   attachments=tuple(walker.attachments), defects=tuple(defects),
                   kind="rfc822", size=len(raw))


# --------------------------------------------------------------------------- spamkit's own fields

#: the header fields ``spamkit filter`` prepends (lower-case names)
SPAMKIT_FIELDS = (b"x-spam-status", b"x-spam-probability", b"x-spamkit-version", b"x-spamkit-model")
_FIELD_LINE = re.compile(rb"([A-Za-z0-9-]+):[ \t]?([^\r\n]*)\r?\n")


def split_tags(raw: bytes) -> tuple[dict, bytes]:
    """The spamkit fields at the top of ``raw`` (lower-case name -> value) and the rest.

    >>> split_tags(b"X-Spam-Status: Yes, score=0.9\\nX-Spamkit-Model: m@1\\nSubject: hi\\n\\nbody")
    ({'x-spam-status': 'Yes, score=0.9', 'x-spamkit-model': 'm@1'}, b'Subject: hi\\n\\nbody')
    """
    fields: dict = {}
    pos = 0
    while True:
        m = _FIELD_LINE.match(raw, pos)
        if not m or m.group(1).lower() not in SPAMKIT_FIELDS:
            return fields, raw[pos:]
        fields[m.group(1).lower().decode("ascii")] = m.group(2).decode("utf-8", "replace")
        pos = m.end()


def message_key(raw: bytes) -> bytes:
    """A 16-byte identity of a message: SHA-256 of its bytes without spamkit's fields on top.

    A message and the same message tagged by ``spamkit filter`` have the same key, so
    ``spamkit learn`` recognises a message it has learned before, tagged or not.

    >>> message_key(b"X-Spam-Status: Yes\\nSubject: a\\n\\nb") == message_key(b"Subject: a\\n\\nb")
    True
    """
    import hashlib
    return hashlib.sha256(split_tags(raw)[1]).digest()[:16]
