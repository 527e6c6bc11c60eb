"""Turning text into tokens: the word pattern, URL hosts, and namespaced synthetic tokens.

Owns the low-level rules; :class:`spamkit.text.Analyzer` combines them with
stop words, stemming, header fields and n-grams.
"""

from __future__ import annotations

import re
import sys

from ..common.patterns import LazyPattern
from ..common.compiled import speedups as _compiled

speedups = _compiled()                   # spamkit/common/speedups.c, or None: the Python definitions

#: A word: letters or digits, with inner apostrophes, hyphens and dots kept
#: ("don't", "e-mail", "example.com", "3.50"), commas between digits ("5,000"), and an
#: optional leading currency sign ("$5,000" is one token: spam talks about money).
#: Underscores are not word characters here. Written as runs of letters and digits joined by
#: one separator, which the regex engine matches about 30% faster than the character-by-character
#: form (tests/test_text.py checks that the two agree).
WORD_PATTERN = r"[$£€¥]?[^\W_]+(?:(?:['’.\-]|(?<=\d),(?=\d))[^\W_]+)*"

#: the token patterns a filter file may name (:func:`spamkit.filterfile.persist.load_filter` refuses any
#: other unless the file is trusted: a pattern such as ``(a|aa)+$`` backtracks for ever)
NAMED_PATTERNS = {"words": WORD_PATTERN}

_JOIN = r"(?:(?:['’.\-]|(?<=\d),(?=\d))[^\W_]+)"
#: :data:`WORD_PATTERN` restricted to matches of two or more characters (the default
#: ``min_len``), so the regex engine drops one-character words instead of a Python filter. A
#: one-character match of WORD_PATTERN is a single letter or digit with no currency sign and
#: no joined part; the three branches are exactly the other matches (a currency sign; a run of
#: two or more; one character followed by joined parts), with the same greedy extent, and the
#: scan resumes at the same place after a dropped word. tests/test_text.py checks that
#: ``findall`` of this pattern equals WORD_PATTERN's matches of length >= 2.
WORD_PATTERN_MIN2 = rf"[$£€¥][^\W_]+{_JOIN}*|[^\W_]{{2,}}{_JOIN}*|[^\W_]{_JOIN}+"


def _possessive_min2() -> str | None:
    """:data:`WORD_PATTERN_MIN2` with possessive quantifiers (Python 3.11+), or None.

    Nothing after a run of letters or digits can start with one (a joiner is punctuation), so
    giving back characters never helps a match: possessive runs find the same words, and the
    engine skips the bookkeeping for backtracking (about 13% faster on Enron bodies).
    tests/test_text.py checks both patterns find the same words.
    """
    if sys.version_info < (3, 11):    # possessive quantifiers came with Python 3.11
        return None
    join = r"(?:(?:['’.\-]|(?<=\d),(?=\d))[^\W_]++)"
    return rf"[^\W_]{{2,}}+{join}*+|[$£€¥][^\W_]++{join}*+|[^\W_]{join}++"


#: the pattern :class:`spamkit.text.Analyzer` runs for the default words of two or more characters
WORD_PATTERN_MIN2_FAST = _possessive_min2() or WORD_PATTERN_MIN2

#: The same for texts that are pure ASCII (``str.isascii()``, checked in C): there a letter or
#: digit (``[^\W_]``) is exactly ``[A-Za-z0-9]``, and a range class is much cheaper for the
#: regex engine than a Unicode category test: about a third faster on Enron bodies, where 98%
#: of the texts are ASCII. tests/test_text.py checks it against WORD_PATTERN_MIN2 on ASCII text.
WORD_PATTERN_MIN2_ASCII = WORD_PATTERN_MIN2_FAST.replace("[^\\W_]", "[A-Za-z0-9]")

URL_PATTERN = LazyPattern(r"(?:https?://|www\.)[^\s<>\"'()\[\]{}]+", re.IGNORECASE)
_HOST = LazyPattern(r"^(?:[a-z][a-z0-9+.\-]*://)?(?:[^@/?#]*@)?([^/?#:\s]+)", re.IGNORECASE)
_DIGITS = LazyPattern(r"^[$£€¥]?[\d.,'’\-]+$")


def find_urls(text: str) -> list[str]:
    """``URL_PATTERN.findall(text)``, which is its definition.

    In C where it was built (``speedups.find_urls``: one forward scan, 1.5 µs for an average
    trec07p-dev body against 17 µs here). Here, two substring searches skip the scan when no
    URL can be there (every match holds "://" or a case-insensitive "www."): on Enron1 they
    cost a tenth of the regular-expression scan, which was a quarter of all tokenizing time.
    tests/test_text.py checks both equal the plain findall.

    >>> find_urls("see WWW.Example.com or http://x.example/a"), find_urls("no links here")
    (['WWW.Example.com', 'http://x.example/a'], [])
    """
    if speedups is not None:
        return speedups.find_urls(text)
    return _find_urls_python(text)


def _find_urls_python(text: str) -> list[str]:
    """:func:`find_urls` without the compiled scan."""
    if "://" in text or "www." in text.lower():
        return URL_PATTERN.findall(text)
    return []


def url_hosts(url: str) -> list[str]:
    """The host of a URL and its registrable-looking parent domain (the last two labels).

    >>> url_hosts("http://www.Shop.Example.com/buy?x=1")
    ['shop.example.com', 'example.com']
    >>> url_hosts("www.example.org/path")
    ['example.org']
    >>> url_hosts("http://192.0.2.7/a")
    ['192.0.2.7']
    """
    m = _HOST.match(url.strip())
    if not m:
        return []
    host = m.group(1).lower().strip(".")
    if host.startswith("www."):
        host = host[4:]
    if not host:
        return []
    labels = host.split(".")
    if len(labels) > 2 and not all(label.isdigit() for label in labels):
        return [host, ".".join(labels[-2:])]
    return [host]


def is_number(token: str) -> bool:
    """A token made of digits (and separators, a currency sign).

    >>> is_number("2007"), is_number("$5,000"), is_number("mp3")
    (True, True, False)
    """
    return bool(_DIGITS.match(token))


#: a run of two or more characters of the scripts written without spaces between words: kana
#: (Hiragana, Katakana) and Han ideographs (CJK Unified, Extension A, Compatibility)
_CJK_RUN = LazyPattern("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]{2,}")


def _bigrams(match) -> str:
    run = match.group()
    return " " + " ".join([run[i:i + 2] for i in range(len(run) - 1)]) + " "


def cjk_bigrams(text: str) -> str:
    """``text`` with each run of Han or kana characters written as its overlapping character
    bigrams, set apart by spaces, so that the word pattern finds them as words.

    Chinese and Japanese are written without spaces: the word pattern alone would make a whole
    clause one token, seen once. Overlapping bigrams are the usual answer of search engines and
    filters that do not segment words (H.-P. Luk and K. L. Kwok, "A comparison of Chinese
    document indexing strategies and retrieval models", ACM TALIP 1(3), 2002: bigrams retrieve
    about as well as a dictionary segmenter; Lucene's CJKBigramFilter). A character standing
    alone stays as it is (one letter: below the words' minimum length of two).

    >>> cjk_bigrams("发票服务 ok")
    ' 发票 票服 服务  ok'
    >>> cjk_bigrams("plain ASCII is returned as it is")
    'plain ASCII is returned as it is'
    """
    if text.isascii():
        return text
    return _CJK_RUN.sub(_bigrams, text)
