"""Bytes to text the way mail means them: charsets, RFC 2047 encoded words, transfer encodings.

Takes the raw bytes of a header value or a MIME part (and the charset it declares) and gives
text, never raising: an unknown or wrong charset falls back to UTF-8, then Windows-1252, broken
base64 is decoded as far as it goes, and each fallback is recorded in the caller's ``defects``
list, which :class:`~spamkit.parse.message.Message` keeps. :mod:`spamkit.parse.message` walks the
MIME structure and calls these for each header field and leaf part.

Sources: RFC 2045 (transfer encodings, §6.8 on junk in base64), RFC 2047 (encoded words),
RFC 2231 (language suffixes), the WHATWG Encoding Standard (the charset labels real mail uses).
"""

from __future__ import annotations

import binascii
import codecs
import quopri

from ..common.patterns import LazyPattern
from ..common.compiled import speedups as _compiled
from .mime import Part

_speedups = _compiled()                # spamkit/common/speedups.c, or None

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

_ENCODED_WORD = LazyPattern(r"=\?([^?\s]+)\?([bBqQ])\?([^?\s]*)\?=")
_SPACE_BETWEEN_WORDS = LazyPattern(r"(\?=)\s+(=\?)")
_SURROGATE = LazyPattern("[\udc80-\udcff]")


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
