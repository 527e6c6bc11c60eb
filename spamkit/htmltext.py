"""HTML to visible text, keeping the evidence a spam filter wants (links, tag names).

Owns one job for :mod:`spamkit.message`: turn an HTML part into the text a
reader of the mail would see, plus the URLs hidden in attributes (``href``,
``src``, ``action``, ``background``) and the names of the tags used. Uses the
standard library's forgiving :class:`html.parser.HTMLParser`; nothing here
raises on malformed markup.

Comments are dropped without leaving a gap, so a word split by a comment
(``vi<!-- -->agra``, a classic trick) comes back whole; block-level tags
become line breaks so that words in adjacent cells do not run together.
``<script>`` and ``<style>`` contents are not visible text and are skipped.
"""

from __future__ import annotations

from html.parser import HTMLParser

_BLOCK = frozenset("""address article aside blockquote body br center dd div dl dt fieldset
figcaption figure footer form h1 h2 h3 h4 h5 h6 header hr li main nav ol option p pre
section table tbody td tfoot th thead title tr ul""".split())
_INVISIBLE = frozenset({"script", "style", "head", "template", "xml"})
_URL_ATTRS = frozenset({"href", "src", "action", "background", "cite", "longdesc", "data"})
MAX_TAGS = 10_000


class _Extractor(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.text: list[str] = []
        self.urls: list[str] = []
        self.tags: list[str] = []
        self._hidden = 0
        self._in_title = False

    def handle_starttag(self, tag, attrs):
        if len(self.tags) < MAX_TAGS:
            self.tags.append(tag)
        if tag in _INVISIBLE and tag != "head":
            self._hidden += 1
        if tag == "title":
            self._in_title = True
        for name, value in attrs:
            if name in _URL_ATTRS and value:
                value = value.strip()
                if value and not value.startswith(("#", "cid:", "data:")):
                    self.urls.append(value)
        if tag in _BLOCK:
            self.text.append("\n")
        elif tag == "img":
            # alt text is what a reader without images sees
            alt = dict(attrs).get("alt")
            if alt:
                self.text.append(f" {alt} ")

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag in _INVISIBLE and tag != "head":
            self._hidden = max(0, self._hidden - 1)

    def handle_endtag(self, tag):
        if tag in _INVISIBLE and tag != "head":
            self._hidden = max(0, self._hidden - 1)
        if tag == "title":
            self._in_title = False
        if tag in _BLOCK:
            self.text.append("\n")

    def handle_data(self, data):
        if not self._hidden:
            self.text.append(data)


def html_to_text(html: str) -> tuple[str, list[str], list[str]]:
    """Visible text, attribute URLs and tag names of an HTML document.

    Examples
    --------
    >>> text, urls, tags = html_to_text(
    ...     '<p>Buy <b>vi<!-- x -->agra</b> <a href="http://x.example/p?q=1">now</a></p>'
    ...     '<style>p {color: red}</style>')
    >>> " ".join(text.split())
    'Buy viagra now'
    >>> urls, tags
    (['http://x.example/p?q=1'], ['p', 'b', 'a', 'style'])
    """
    parser = _Extractor()
    # HTMLParser is lenient by design; an AssertionError was raised by some
    # Python versions on bogus declarations ("<!\x00"), so that is recovered too.
    try:
        parser.feed(html)
        parser.close()
    except AssertionError:
        parser.text.append(" ")
    return "".join(parser.text), parser.urls, parser.tags
