"""The analyzer's token kinds beyond words: the shapes of numbers, the pieces of URLs, the relays'
addresses, the field names; and the one UTF-8 form every token is given.

Takes text (or a parsed message's field values) and appends tokens to a list the analyzer
(:class:`spamkit.text.analyzer.Analyzer`) is building; each kind runs in C
(``spamkit.common.speedups``) where it was built, and ``tests/test_text.py`` compares the two.
"""

from __future__ import annotations

from ..common.patterns import LazyPattern
from .tokenize import speedups

_IPV4 = LazyPattern(r"(?<![\d.])(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})(?![\d.])")
_DIGIT_RUN = LazyPattern(r"\d+")
_URL_PIECES = LazyPattern(r"[\s/?#=&.:;,_+%~!@\-]+")


def digit_shapes(text: str, out: list, cap: int = 20) -> None:
    """Appends ``shape:dN`` to ``out`` for each run of decimal digits of ``text``, N its length
    (at most ``cap``): how long the numbers of a message are, not what they are. In C
    (``spamkit.common.speedups.digit_shapes``, tests/test_text.py compares) when it was built.

    >>> out = []; digit_shapes("call 0800 123456 now, ref 7", out); out
    ['shape:d4', 'shape:d6', 'shape:d1']
    """
    if speedups is not None:
        speedups.digit_shapes(text, cap, out)
        return
    out.extend(f"shape:d{min(len(run), cap)}" for run in _DIGIT_RUN.findall(text))


def digit_prefixes(text: str, out: list, cap: int = 20, shortest: int = 5) -> None:
    """Appends ``shape:PPdN`` to ``out`` for each run of at least ``shortest`` decimal digits of
    ``text``: PP its first two digits, N its length (at most ``cap``). Where ``shape:dN`` says
    only how long a number is, these say what kind of number it is, by the prefix the numbering
    plans give its kind: premium-rate, freephone and mobile telephone numbers (in the United
    Kingdom's plan 09, 08 and 07, Ofcom's National Telephone Numbering Plan), a country code
    (+44, +1), an account or a card number.

    >>> out = []; digit_prefixes("call 09058094583 or 0800 505060, ref 7", out); out
    ['shape:09d11', 'shape:50d6']
    """
    out.extend(f"shape:{run[:2]}d{min(len(run), cap)}" for run in _DIGIT_RUN.findall(text) if len(run) >= shortest)


def url_part_tokens(urls: list, out: list) -> None:
    """Appends ``url:part:P`` to ``out`` for each piece P of 2 to 30 characters of each URL, lower
    case, cut at white space and URL punctuation: the words of a link's path and query, which a
    spammer changes less than its host. In C (``spamkit.common.speedups.url_parts``, tests/test_text.py
    compares) when it was built.

    >>> out = []; url_part_tokens(["http://X.example/Buy-Now?id=42&a=b"], out); out
    ['url:part:http', 'url:part:example', 'url:part:buy', 'url:part:now', 'url:part:id', 'url:part:42']
    """
    if speedups is not None:
        speedups.url_parts(urls, out)
        return
    for url in urls:
        out.extend("url:part:" + p for p in _URL_PIECES.split(url.lower()) if 2 <= len(p) <= 30)


def received_ip_tokens(values: list, out: list) -> None:
    """Appends, for each dotted quad of the ``Received:`` field values whose numbers are all at
    most 255, ``received:ip:A.B.C.D`` and its /24 and /16 prefixes ``received:ip:A.B.C`` and
    ``received:ip:A.B`` to ``out``: the relays a message passed through, and their networks.
    In C (``spamkit.common.speedups.received_ips``, tests/test_text.py compares) when it was built.

    >>> out = []; received_ip_tokens(["from x ([192.0.2.7]) by mx; 1.2.3.4.5 and 300.1.1.1"], out); out
    ['received:ip:192.0.2.7', 'received:ip:192.0.2', 'received:ip:192.0']
    """
    if speedups is not None:
        speedups.received_ips(values, out)
        return
    for value in values:
        for m in _IPV4.finditer(value):
            octets = m.groups()
            if all(int(o) <= 255 for o in octets):
                out.extend(("received:ip:" + ".".join(octets), "received:ip:" + ".".join(octets[:3]),
                            "received:ip:" + ".".join(octets[:2])))


def encodable(tokens: list) -> list:
    """``tokens``, each with a UTF-8 form: a lone surrogate (an 8-bit byte of a header that the
    MIME reader keeps as one, in a content type or a file name that no decoder saw) becomes the
    byte it stood for, read as UTF-8, U+FFFD where that is not UTF-8. Filter files store terms,
    and pipe mode hashes them, as UTF-8: a token without that form failed both (one byte in a
    ``Content-Type:`` let the message through pipe mode untagged, and stopped training).
    The check costs one join of the tokens; nearly every message passes it unchanged.

    >>> encodable(["attach:type:\\udcfftext/html", "ok", "caf\\udcc3\\udca9"])
    ['attach:type:\\ufffdtext/html', 'ok', 'café']
    """
    joined = "".join(tokens)
    if joined.isascii():
        return tokens
    try:
        joined.encode("utf-8")
        return tokens
    except UnicodeEncodeError:
        pass
    return [token if token.isascii() else mended(token) for token in tokens]


def mended(token: str) -> str:
    """``token`` with a UTF-8 form (:func:`encodable`'s rule for one token)."""
    try:
        token.encode("utf-8")
        return token
    except UnicodeEncodeError:
        pass
    try:
        data = token.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:                       # a surrogate no byte stands for
        data = token.encode("utf-8", "surrogatepass")
    return data.decode("utf-8", "replace")


#: "header:" + a field name, one str per name (its hash taken once: the numbering looks every
#: token up), for the mail tokens' field names; bounded, for the names come from the mail
HEADER_NAME_TOKENS: dict = {}
HEADER_NAME_TOKENS_SIZE = 4096


def header_name_token(name: str) -> str:
    """``"header:" + name``, one shared str per field name (bounded: see above)."""
    if len(HEADER_NAME_TOKENS) >= HEADER_NAME_TOKENS_SIZE:
        HEADER_NAME_TOKENS.clear()
    token = HEADER_NAME_TOKENS[name] = "header:" + name
    return token
