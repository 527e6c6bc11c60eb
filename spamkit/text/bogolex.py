"""bogofilter's tokens, so that a bogofilter word list means the same thing in spamkit.

A bogofilter user's word list counts, for every token, the spam and ham messages it was seen
in. Those counts are only useful to a filter that cuts messages into the *same* tokens, so
``spamkit import-wordlist`` pairs the imported counts with this lexer
(``Analyzer(lexer="bogofilter")``). It follows the rules of bogofilter 1.2's lexer
(``src/lexer_v3.l`` and ``src/token.c`` of bogofilter; its man page), re-implemented here on
spamkit's MIME parser (:mod:`spamkit.parse.mime`):

- A token is three bytes or more: a letter (or any byte of a non-ASCII character), then
  letters, digits, non-ASCII bytes and ``! ' - . _ ` ~``, ending on a letter, digit,
  non-ASCII byte or ``!`` (measured with ``bogolexer``: the source's character classes
  in ``lexer_v3.l`` are wider than what 1.2.5 does). Case is kept; ``don't``, ``e-mail``,
  ``www.x.com`` and ``ok!!`` are single tokens. Dotted quads of numbers up to 255 and amounts such as ``$100``
  or ``$10.50`` are tokens too; other numbers are not.
- Header fields are tagged: ``subj:`` (Subject), ``from:``, ``to:``, ``rtrn:`` (Return-Path),
  ``rcvd:`` (Received; its ``id ...`` queue identifiers dropped), ``head:`` for every other
  field of the message, name included, and ``mime:`` for the fields of MIME parts.
  Date, Delivery-Date, Message-ID, Resent-Message-ID, In-Reply-To, References and
  MIME-Version give their name alone; a ``boundary=`` parameter gives nothing. RFC 2047
  encoded words are decoded first. A tagged token longer than 30 bytes, tag included, is
  dropped, as is an untagged one over 30 bytes.
- The body: text parts (and the text around the parts of a multipart) after their
  transfer encoding is undone and their charset converted to UTF-8 (no charset: ISO-8859-1);
  other parts give their header fields only. A ``message/rfc822`` part's header fields are
  untagged.
- HTML: comments and tags are dropped, but for the attributes of ``<a>``, ``<img>`` and
  ``<font>`` (``href``, ``http``, the host and path words, with ``%XX`` decoded); ``&#NN;``
  is decoded; a tag that does not break a line (``<b>``, ``</td>``...) between two runs of
  letters joins them (``foo<b>bar`` is ``foobar``, as a reader sees it); script and style
  text count as text.

Measured against bogofilter's own ``bogolexer -p`` on trec07p-dev and CSDMC2010
(``tests/test_bogolex.py``, docs/migrating.md): the token sets agree on most messages
exactly; where they differ it is in corners of bogofilter's HTML state machine.
"""

from __future__ import annotations

import binascii
import codecs
import quopri
import re

from ..parse.decoding import payload_bytes
from ..parse.mime import parse_part, split_multipart

TYPE_CHECKING = False                  # typing's names for the checker only (no import at run time)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["bogofilter_tokens", "MAX_TOKEN_BYTES", "token_bytes", "token_text"]

#: bogofilter's ``max_token_len``: longer tokens (tag included) are dropped
MAX_TOKEN_BYTES = 30
#: encoded bytes of one part read at most
_MAX_PART = 1 << 20

# bogofilter's lexer reads bytes in the C locale: every byte >= 0x80 is a word character, so
# tokens are scanned in the UTF-8 bytes of the text (a CJK character, 3 bytes, is a token)
_FRONT = rb"[A-Za-z\x80-\xff]"
_MID = rb"[A-Za-z0-9\x80-\xff!'\-._`~]"
_BACK = rb"[A-Za-z0-9\x80-\xff!]"
_WORD = _FRONT + _MID + b"+" + _BACK
_OCTET = rb"(?:2(?:[0-4][0-9]|5[0-5])|[01]?[0-9]?[0-9])"
_IP = _OCTET + rb"\." + _OCTET + rb"\." + _OCTET + rb"\." + _OCTET
_MONEY = rb"\$[0-9]+(?:\.[0-9]+)?"
#: one scan finds the kinds of token; where none starts, it moves on a byte
_TOKEN = re.compile(_IP + b"|" + _MONEY + b"|" + _WORD)
#: in header lines also: a queue identifier ("id 4AB1C2D3") is skipped, and a VERP address
#: (list-return-1234-user=host@list) stands for its list: "list-#-user"
_HEADER_TOKEN = re.compile(rb"(?P<id>(?i:id) [<0-9a-zA-Z.-]*>?)|(?P<verp>" + _WORD + rb"-[0-9]+-" + _WORD
                           + rb"(?==" + _WORD + b"@" + _WORD + rb"))|" + _TOKEN.pattern)
_ENCODED_WORD = re.compile(rb"=\?([0-9A-Za-z-]+)\?([bBqQ])\?([^?]*)\?=")
_SPACE_BETWEEN_WORDS = re.compile(rb"(\?=)[ \t\n]+(=\?)")
_BOUNDARY_PARAM = re.compile(rb"(?i)boundary=[ ]*\"?[0-9a-zA-Z'()+_,\-./:=?# ]*[0-9a-zA-Z'()+_,\-./:=?#]\"?")
_NAME_PARAM = re.compile(rb"(?i)(?:file)?name=\"?")
_FIELD_NAME = re.compile(rb"([^\x00-\x20\x7f:]+)[ \t]*:")
#: fields whose first line gives its name only (dates and identifiers: new in every message)
_KEY_ONLY = {b"date", b"delivery-date", b"message-id", b"resent-message-id", b"in-reply-to", b"references",
             b"mime-version"}
_TAGS = {b"to": b"to:", b"cc": b"to:", b"from": b"from:", b"return-path": b"rtrn:", b"subject": b"subj:",
         b"received": b"rcvd:"}

#: HTML: comments, "loose" <!...> declarations and tags
_HTML_PIECE = re.compile(rb"<!--.*?(?:-->|\Z)|<![^>]*(?:>|\Z)|<[^>]*(?:>|\Z)", re.S)
_TAG_NAME = re.compile(rb"<\s*(/?)([A-Za-z0-9]*)")
#: tags after which a reader sees a break (bogofilter's list); the others join the text around them
_BREAK_TAGS = {b"p", b"br", b"li", b"h1", b"h2", b"h3", b"h4", b"h5", b"h6", b"hr", b"title", b"table", b"center",
               b"dd", b"dt", b"iframe", b"img", b"input", b"select", b"td", b"textarea", b"th"}
_BREAK_BOTH = {b"div", b"blockquote", b"pre", b"dir", b"dl", b"fieldset", b"legend", b"form", b"menu", b"ol", b"ul"}
_KEEP_ATTRIBUTES = re.compile(rb"<(?:a|img|font)[ \t\r\n]", re.I)
_NUMERIC_ENTITY = re.compile(rb"&#(?:[xX]([0-9a-fA-F]+)|([0-9]+));")
_URL_ESCAPE = re.compile(rb"%([0-9a-fA-F]{2})")
_BYTE_ESCAPE = re.compile(rb"\\x([0-9a-f]{2})")


def _scan(text: bytes, tag: bytes, out: list, pattern=_TOKEN) -> None:
    """Append the tokens of ``text`` (UTF-8 bytes) with their tag."""
    room = MAX_TOKEN_BYTES - len(tag)
    for m in pattern.finditer(text):
        token = m.group()
        if pattern is _HEADER_TOKEN:
            if m.group("id") is not None:
                continue
            if m.group("verp") is not None:
                first, last = token.find(b"-"), token.rfind(b"-")
                if last - first > 3:
                    token = token[:first] + b"-#" + token[last:]
        if len(token) > room or (len(token) < 3 and token[:1] != b"$"):
            continue
        out.append(token_text(tag + token))


def token_text(token: bytes) -> str:
    """A token's bytes as text: UTF-8, with each byte that is not valid UTF-8 written ``\\xNN``.

    Lossless, since a bogofilter token never holds a backslash (:func:`token_bytes` undoes it).

    >>> token_text(b"caf\\xc3\\xa9"), token_text(b"caf\\xe9")
    ('café', 'caf\\\\xe9')
    """
    return token.decode("utf-8", "backslashreplace")


def token_bytes(token: str) -> bytes:
    """The bytes of a token written by :func:`token_text`.

    >>> token_bytes(token_text(b"caf\\xe9 \\xc3\\xa9"))
    b'caf\\xe9 \\xc3\\xa9'
    """
    return _BYTE_ESCAPE.sub(lambda m: bytes([int(m.group(1), 16)]), token.encode("utf-8"))


def _to_utf8(data: bytes, charset: bytes | str | None = None) -> bytes:
    """Text in UTF-8 as bogofilter sees it: converted from its charset, without one from ISO-8859-1."""
    name = "latin-1"
    if charset:
        if isinstance(charset, bytes):
            charset = charset.decode("ascii", "replace")
        try:
            info = codecs.lookup(charset.strip().strip("\"'").lower())
            if getattr(info, "_is_text_encoding", True):
                name = info.name
        except (LookupError, ValueError):
            pass
    if name in ("utf-8", "ascii") or data.isascii():
        return data                                # bogofilter passes "us-ascii" text on as it is
    return data.decode(name, "replace").encode("utf-8")


def _encoded_words(line: bytes) -> bytes:
    """A header line with its RFC 2047 encoded words replaced by their UTF-8 text."""
    def decode(m):
        charset, encoding, text = m.groups()
        try:
            if encoding in b"bB":
                data = binascii.a2b_base64(text + b"=" * (-len(text) % 4))
            else:
                data = quopri.decodestring(text.replace(b"_", b" "), header=False)
        except (binascii.Error, ValueError):     # a broken word stays as it is
            return m.group()
        return _to_utf8(data, charset)

    return _ENCODED_WORD.sub(decode, _SPACE_BETWEEN_WORDS.sub(rb"\1\2", line))


def _header_block(block: bytes, tag: bytes, out: list) -> None:
    """Tokens of a block of header fields, as bogofilter's lexer reads them.

    ``tag``: ``head:`` for the message's own fields, ``mime:`` for a MIME part's, empty inside
    an attached message. Continuation lines keep their field's tag; the fields that give their
    name alone drop the rest of their first line only (bogofilter's rule is line-based), and an
    encoded word may continue on the next line (RFC 2047 §6.2: the white space between two is
    not text).
    """
    fields: list = []
    for line in block.split(b"\n"):
        line = line.rstrip(b"\r")
        if not line:
            break
        if line[:1] in (b" ", b"\t") and fields:
            fields[-1].append(line)
        else:
            fields.append([line])
    for first, *rest in fields:
        current = tag
        m = _FIELD_NAME.match(first)
        key = m.group(1).lower() if m else b""
        if m is not None and key in _TAGS and tag:
            current = _TAGS[key]
            first = first[m.end():]
        elif m is not None and key in _KEY_ONLY:
            _scan(m.group(1), tag, out)
            first = b""
        _scan(_field_text(b"\n".join([first, *rest])), current, out, _HEADER_TOKEN)


def _field_text(line: bytes) -> bytes:
    """A header line ready for the scan: boundary and (file)name parameters out, 8-bit bytes
    converted, encoded words decoded."""
    return _encoded_words(_to_utf8(_NAME_PARAM.sub(b" ", _BOUNDARY_PARAM.sub(b" ", line))))


def _html(text: bytes, out: list) -> None:
    """Tokens of an HTML part: text between tags, joined across tags that do not break a line;
    the attributes of ``<a>``, ``<img>`` and ``<font>`` with their ``%XX`` escapes decoded."""
    pieces = []
    pos = 0
    for m in _HTML_PIECE.finditer(text):
        pieces.append(text[pos:m.start()])
        piece = m.group()
        pos = m.end()
        if piece.startswith(b"<!"):
            continue
        if _KEEP_ATTRIBUTES.match(piece):
            inner = piece[1:-1] if piece.endswith(b">") else piece[1:]
            attributes = inner.split(None, 1)
            if len(attributes) > 1:
                _scan(_URL_ESCAPE.sub(lambda e: bytes([int(e.group(1), 16)]), attributes[1]), b"", out)
        name = _TAG_NAME.match(piece)
        closing, tag = (name.group(1), name.group(2).lower()) if name else (b"", b"")
        if tag in _BREAK_BOTH or (not closing and tag in _BREAK_TAGS):
            pieces.append(b" ")
    pieces.append(text[pos:])
    _scan(_NUMERIC_ENTITY.sub(_entity, b"".join(pieces)), b"", out)


def _entity(m) -> bytes:
    # a decimal number of more than 3 digits (leading zeros aside) is not printable ASCII; int()
    # would refuse one of more than 4,300 digits (sys.get_int_max_str_digits): ValueError
    decimal = (m.group(2) or b"").lstrip(b"0")
    value = int(m.group(1), 16) if m.group(1) else int(decimal or b"0") if len(decimal) <= 3 else 1000
    return bytes([value]) if 32 < value < 127 else b" "


def bogofilter_tokens(raw: bytes) -> list[str]:
    """The tokens bogofilter 1.2 would count for the message ``raw`` (repeats kept, in order).

    >>> bogofilter_tokens(b"Subject: Cheap meds\\nX-Mailer: Foo 6.0\\n\\nBuy now at www.x.com, $5 off!!")
    ['subj:Cheap', 'subj:meds', 'head:X-Mailer', 'head:Foo', 'Buy', 'now', 'www.x.com', '$5', 'off!!']
    """
    out: list[str] = []
    root = parse_part(raw, 0, len(raw), envelope=True)
    stack: list[tuple[Any, int, Any]] = [(root, 0, b"head:")]     # (part, start, tag) or (None, start, end)
    while stack:
        part, begin, tag = stack.pop()
        if part is None:                           # a multipart's epilogue, after its parts
            _scan(_to_utf8(raw[begin:tag]), b"", out)
            continue
        _header_block(raw[begin:part.start], tag, out)
        ctype = part.content_type
        maintype = ctype.partition("/")[0]
        if maintype == "multipart":
            boundary = part.param("boundary")
            spans = split_multipart(raw, part, boundary.rstrip())[0] if boundary else []
            if spans and boundary:
                # the preamble, before the first delimiter line, is read as text
                delimiter = raw.rfind(b"--" + boundary.rstrip().encode("latin-1", "replace"), part.start,
                                      spans[0][0])
                if delimiter > part.start:
                    _scan(_to_utf8(raw[part.start:delimiter]), b"", out)
                # ... and so is the epilogue, after the closing delimiter line
                close = raw.find(b"\n", raw.find(b"--", spans[-1][1], part.end), part.end)
                if spans[-1][1] < part.end and 0 <= close < part.end - 1:
                    stack.append((None, close + 1, part.end))
                default = "message/rfc822" if ctype == "multipart/digest" else "text/plain"
                stack.extend(reversed([(parse_part(raw, a, b, default), a, b"mime:") for a, b in spans]))
                continue
        if ctype == "message/rfc822":
            stack.append((parse_part(raw, part.start, part.end), part.start, b""))
            continue
        if maintype not in ("text", "multipart"):
            continue                               # images, applications: their fields only
        text = _to_utf8(payload_bytes(raw, part, [], _MAX_PART), part.param("charset"))
        if ctype == "text/html":
            _html(text, out)
        else:
            _scan(text, b"", out)
    return out
