"""HTML to visible text, keeping the evidence a spam filter wants (links, tag names).

Owns one job for :mod:`spamkit.parse.message`: turn an HTML part into the text a
reader of the mail would see, plus the URLs hidden in attributes (``href``,
``src``, ``action``, ``background``, ...) and the names of the tags used.

One forward scan with one regular expression whose alternatives each begin with a
different character and have no nested ambiguity, so the work is linear in the
length of the input for any input, however malformed (the standard library's
``html.parser``, used before, rescans unclosed constructs and took 11 s on a
64 KB hostile message). Markup is read as ``html.parser`` reads it (HTML5
tokenizer rules where they matter to the text): comments, declarations and
processing instructions are dropped without leaving a gap, so a word split by a
comment (``vi<!-- -->agra``, a classic trick) comes back whole; ``<script>`` and
``<style>`` are raw text up to their end tag and are not visible; block-level tags
become line breaks so that words in adjacent cells do not run together; character
references are decoded in text and in attribute values; an ``<img>``'s ``alt`` text
is what a reader without images sees. Nothing here raises.
"""

from __future__ import annotations

import re
from functools import partial

from ..common.patterns import LazyPattern
from ..common.compiled import speedups as _compiled

speedups = _compiled()                   # spamkit/common/speedups.c, or None: the Python definitions

_BLOCK = frozenset("""address article aside blockquote body br center dd div dl dt fieldset
figcaption figure footer form h1 h2 h3 h4 h5 h6 header hr li main nav ol option p pre
section table tbody td tfoot th thead title tr ul""".split())
#: elements whose content is not shown ("head" is not one: its <title> is)
_INVISIBLE = frozenset({"script", "style", "template", "xml"})
#: elements whose content is raw text up to their end tag (HTML5 §13.2.5: script data, RAWTEXT)
_RAW_TEXT = {"script": LazyPattern(r"</script(?=[\s/>])|</script\Z", re.I),
             "style": LazyPattern(r"</style(?=[\s/>])|</style\Z", re.I)}
_URL_ATTRS = frozenset({"href", "src", "action", "background", "cite", "longdesc", "data"})
MAX_TAGS = 10_000

# a comment (an unclosed one runs to the end), a declaration or processing instruction,
# a start or end tag (an unclosed one runs to the end) whose attribute values may be quoted
# (a quote is special only right after "=", as in html.parser), or else "<" is text. The
# regex engine keeps a backtracking record per repetition of the attribute group, so the
# group repeats per run of plain characters, not per character, and at most 4,096 times:
# a hostile 1 MB tag would otherwise cost ~150 MB (what is left of it is read as text).
_MARKUP = LazyPattern(r"""
    <!--.*?(?:--!?>|\Z)
  | <[!?][^>]*>?
  | </>
  | <(/?)([A-Za-z][^\t\n\r\f />\x00]*)((?:[^>=]+|=\s*"[^"]*"|=\s*'[^']*'|=){0,4096})(>?)
""", re.S | re.X)
_ATTR = LazyPattern(r"""([^\s"'>/=]+)(?:\s*=\s*("[^"]*"|'[^']*'|[^\s>]*))?""")


#: attributes read from one tag (real tags have a handful; a hostile one has thousands)
MAX_ATTRIBUTES = 64


def _attributes(text: str) -> dict[str, str]:
    """Attribute names (lower case) and values (quotes removed, references decoded); first wins.

    At most :data:`MAX_ATTRIBUTES` are read.
    """
    attrs: dict[str, str] = {}
    for n, m in enumerate(_ATTR.finditer(text)):
        if n >= MAX_ATTRIBUTES:
            break
        name = m.group(1).lower()
        if name in attrs:
            continue
        value = m.group(2) or ""
        if value[:1] in ("'", '"'):
            # a value whose quote is never closed keeps all of its text (it lost its last character once)
            value = value[1:-1] if len(value) > 1 and value[-1] == value[0] else value[1:]
        attrs[name] = unescape(value) if "&" in value else value
    return attrs


def _tag_attrs(attr_text: str) -> tuple[list[str], str | None]:
    """The URLs and the ``alt`` text of a start tag's attribute text (what follows its name)."""
    if "=" not in attr_text:
        return [], None
    attrs = _attributes(attr_text)
    urls = []
    for key, value in attrs.items():
        if key in _URL_ATTRS and value:
            value = value.strip()
            if value and not value.startswith(("#", "cid:", "data:")):
                urls.append(value)
    return urls, attrs.get("alt")


#: a decimal character reference of more than 7 digits, leading zeros aside (10^7 > 0x10FFFF)
_LONG_DECIMAL_REFERENCE = LazyPattern(r"&#0*([1-9][0-9]{7,})")
#: the leading zeros of a decimal reference (all but the digit before the number)
_LEADING_ZEROS = LazyPattern(r"&#0+(?=[0-9])")


def unescape(text: str) -> str:
    """``html.unescape(text)``, but for a decimal reference too long for ``int()`` (CPython
    refuses more than 4,300 digits, sys.get_int_max_str_digits, and ``html.unescape`` then
    raises ValueError -- one hostile HTML part stopped a whole training run): any number of
    8 digits or more is beyond U+10FFFF and becomes U+FFFD, as ``html.unescape`` makes of
    shorter ones (and the HTML standard of any; "numeric character reference end state").

    >>> unescape("&#65;&#" + "9" * 5000 + ";&#" + "0" * 5000 + "66;")
    'A\ufffdB'
    """
    if "&#" in text:
        text = _LONG_DECIMAL_REFERENCE.sub("&#99999999", text)
        if "&#00" in text:                                # zeros no longer than a number's limit
            text = _LEADING_ZEROS.sub("&#", text)
    from html import unescape as stdlib_unescape         # (imported when first needed: ~3 ms of start-up)
    return stdlib_unescape(text)


def _compiled_unescape():
    """``html.unescape`` in C (``spamkit.common.speedups.html_unescape``), handed the standard library's
    own tables, or ``html.unescape`` itself where the extension or those (private) tables are
    missing. tests/test_htmltext.py compares the two on generated text and on every HTML part
    of the shared corpora; the Python one was 4-5% of a worker's parsing of TREC mail."""
    import html
    from html import entities
    charrefs, codepoints = getattr(html, "_invalid_charrefs", None), getattr(html, "_invalid_codepoints", None)
    if speedups is None or not isinstance(charrefs, dict) or not isinstance(codepoints, set):
        return unescape
    speedups.set_html_entities(entities.html5, charrefs, codepoints)
    return speedups.html_unescape


#: what html_tools makes on its first call
_TOOLS: list = []


def html_tools() -> tuple:
    """``(unescape, tag_attrs)`` as the compiled scanner calls them: ``html.unescape`` in C
    (:func:`_compiled_unescape`) and :func:`_tag_attrs` in C (``spamkit.common.speedups.tag_attrs``;
    tests/test_htmltext.py compares each with its Python definition). Made on the first HTML
    part, not at import: the standard library's entity table is ~3 ms of pipe mode's start-up,
    which plain-text mail does not need."""
    if not _TOOLS:
        unescape_text = _compiled_unescape()
        _TOOLS.extend((unescape_text, partial(speedups.tag_attrs, _URL_ATTRS, unescape_text, MAX_ATTRIBUTES)
                       if speedups is not None else _tag_attrs))
    return _TOOLS[0], _TOOLS[1]


def html_to_text(html: str) -> tuple[str, list[str], list[str]]:
    """Visible text, attribute URLs and tag names of an HTML document.

    Runs the compiled scanner (``spamkit.common.speedups``, built with the package where a C
    compiler is present) or else the pure-Python one; the two give identical results
    (``tests/test_htmltext.py`` compares them on every HTML part of the shared corpora and on
    generated and hostile markup).

    Examples
    --------
    >>> text, urls, tags = html_to_text(
    ...     '<p>Buy <b>vi<!-- x -->agra</b> <a href="http://x.example/p?q=1&amp;r=2">now</a></p>'
    ...     '<style>p {color: red} <b>not a tag</b></style>')
    >>> " ".join(text.split())
    'Buy viagra now'
    >>> urls, tags
    (['http://x.example/p?q=1&r=2'], ['p', 'b', 'a', 'style'])
    """
    if speedups is not None:
        unescape_text, tag_attrs = html_tools()
        return speedups.html_to_text(html, _BLOCK, _INVISIBLE, _RAW_TEXT, tag_attrs, unescape_text, MAX_TAGS)
    return _html_to_text_python(html)


def _html_to_text_python(html: str) -> tuple[str, list[str], list[str]]:
    """:func:`html_to_text` in Python: the definition the compiled scanner follows."""
    text: list[str] = []
    data: list[str] = []                  # text since the last tag that was shown or broke a line
    urls: list[str] = []
    tags: list[str] = []
    hidden = 0
    pos = 0
    n = len(html)
    markup = _MARKUP

    def flush():
        if data:
            chunk = "".join(data)
            text.append(unescape(chunk) if "&" in chunk else chunk)
            data.clear()

    while pos < n:
        lt = html.find("<", pos)
        if lt < 0:
            if not hidden:
                data.append(html[pos:])
            break
        if lt > pos and not hidden:
            data.append(html[pos:lt])
        m = markup.match(html, lt)
        if m is None:                     # a "<" that starts no markup is text
            if not hidden:
                data.append("<")
            pos = lt + 1
            continue
        pos = m.end()
        name = m.group(2)
        if name is None:                  # a comment, declaration or processing instruction
            continue
        name = name.lower()
        if m.group(1):                    # an end tag
            if name in _INVISIBLE:
                hidden = max(0, hidden - 1)
            if name in _BLOCK:
                flush()
                text.append("\n")
            continue
        if len(tags) < MAX_TAGS:
            tags.append(name)
        attr_text = m.group(3)
        found, alt = _tag_attrs(attr_text)
        urls.extend(found)
        if name in _BLOCK:
            flush()
            text.append("\n")
        elif name == "img" and alt:
            flush()
            text.append(f" {alt} ")
        if name in _INVISIBLE and not attr_text.rstrip().endswith("/"):
            hidden += 1
            end_tag = _RAW_TEXT.get(name)
            if end_tag is not None:       # raw text: no markup inside, up to the end tag
                closing = end_tag.search(html, pos)
                pos = closing.start() if closing else n
    flush()
    return "".join(text), urls, tags
