"""HTML to text: the compiled scanner against its pure-Python definition, and the rules by hand.

``spamkit.parse.htmltext.html_to_text`` runs the C scanner of ``spamkit.common.speedups`` when the
extension was built (``pip install`` builds it where a C compiler is present; CI requires
it) and ``_html_to_text_python`` otherwise. The two must agree exactly — text, URLs and tag
names — on every HTML part of the shared raw-mail corpora, on the hostile markup of
``tests/hostile.py`` and on generated markup made of the characters the rules treat
specially (quotes, ``=``, ``<!--``, Unicode white space, the letters whose case folding
is not ASCII's).

After changing ``spamkit/common/speedups.c``, run these tests (and tests/test_text.py's compiled-word
tests) once against a build with AddressSanitizer and UBSan::

    gcc -shared -fPIC -g -O1 -fsanitize=address,undefined -I"$(python -c 'import sysconfig;
        print(sysconfig.get_paths()["include"])')" spamkit/common/speedups.c -o spamkit/speedups$(python -c
        'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
    LD_PRELOAD=$(gcc -print-file-name=libasan.so) ASAN_OPTIONS=detect_leaks=0 pytest tests/test_htmltext.py
"""

from __future__ import annotations


import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spamkit.parse import htmltext
from spamkit.parse.htmltext import _html_to_text_python, html_to_text

from conftest import compiled_expected, shared_corpus
from hostile import big_html, unclosed_html

compiled = pytest.mark.skipif(htmltext.speedups is None and not compiled_expected(),
                              reason="spamkit.common.speedups was not built (no C compiler at install time)")


def test_the_extension_is_built_under_ci():
    # .ci/run installs with a C compiler present, so the fast path is the one tested there
    if compiled_expected():
        assert htmltext.speedups is not None


@pytest.mark.parametrize("scan", [html_to_text, _html_to_text_python])
def test_rules_by_hand(scan):
    # comments vanish without a gap; block tags break lines; script is raw text to its end tag
    text, urls, tags = scan('<P>vi<!-- x -->agra</P><div>a<scRipt>if (a<b) {"</div>"}</SCRIPT >b</div>')
    assert text == "\nviagra\n\nab\n" and tags == ["p", "div", "script"]
    # an unclosed quote does not run past ">": the tag ends there, and the value keeps its text
    text, urls, tags = scan('<a href="http://x.example>click</a> <img src=\'y.png\' alt=B&amp;W>')
    assert urls == ["http://x.example", "y.png"] and text == "click  B&W " and tags == ["a", "img"]
    # references decoded across an inline tag; a "<" that starts nothing is text
    assert scan("&am<b>p;1 < 2 &lt; 3")[0] == "&1 < 2 < 3"
    # hidden elements: <template> content is parsed (its tags count) but not shown
    assert scan("a<template><i>b</i></template>c<xml/>d") == ("acd", [], ["template", "i", "xml"])
    # urls: fragments, cid: and data: are not links; first attribute of a name wins
    assert scan('<a href="#top" href="http://z.example"><img src="cid:1"><form action=" /go ">')[1] == ["/go"]


@compiled
@pytest.mark.parametrize("html", [
    "", "<", "<!", "<!-", "<!--", "<!-->", "<!---->x", "<!-- a --!>b", "<?php x", "</>", "</ a>", "<a", "<a ",
    "<a b=", "<a b='", '<a b="c', "<a\x0bb>x</a\x0b>", "<A HREF = 'u'>", "<a href=\u00a0'u' >", "<br/>",
    "<script/>x", "<script>x", "<style>x</style\x1c>y", "<ſcript>x</ſcript>y", "<\u212aBD>x", "<DİV>x",
    "<img alt=\"\" src=x>", "<img ALT=a&lt;b>", "<td background=\"bg.gif\">", "<a hre\u212a=x>",
    "<a bac\u212aground=x>", "<a =x>", "x" * 5 + "<b " + "c" * 10 + "=" * 5000 + ">y",
])
def test_compiled_equals_python_on_edge_cases(html):
    assert html_to_text(html) == _html_to_text_python(html)


SPECIAL = st.sampled_from(["<", ">", "=", '"', "'", "/", "!", "?", "-", "&", ";", " ", "\t", "\n", "\x00",
                           "\x0b", "\x1c", "\xa0", "\u2003", "a", "B", "ſ", "\u212a", "İ", "ı", "é", "€",
                           "\U0001f600", "amp", "lt", "#65", "#x41", "<!--", "-->", "--!>", "<!DOCTYPE",
                           "<p", "</p", "<br", "<img", " alt", " src", " href", "<a", "</a", "<script",
                           "</script", "<style", "</style", "<template", "</template", "<xml", "<td",
                           " background", "cid:", "data:", "#", "http://x.example/"])


@compiled
@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(SPECIAL, max_size=60).map("".join))
def test_compiled_equals_python_on_generated_markup(html):
    assert html_to_text(html) == _html_to_text_python(html)


@compiled
def test_compiled_equals_python_on_hostile_markup():
    for raw in (big_html(300_000), unclosed_html(100_000)):
        html = raw.split(b"\n\n", 1)[1].decode("utf-8")
        assert html_to_text(html) == _html_to_text_python(html)


@compiled
@pytest.mark.slow
def test_compiled_equals_python_on_every_html_part_of_the_corpora(monkeypatch):
    from spamkit.parse import message
    from spamkit.corpus import Corpus
    seen = []
    monkeypatch.setattr(message, "html_to_text", lambda html: seen.append(html) or html_to_text(html))
    for relative in ("trec07p-dev/trec07p-dev.tar.gz", "csdmc2010/csdmc2010.tar.gz"):
        with Corpus(shared_corpus(relative)) as corpus:
            for msg in corpus:
                message.parse_message(msg.raw, msg.kind)
    assert len(seen) > 3000                            # 3,873 HTML parts when this was written
    differ = [html[:200] for html in seen if html_to_text(html) != _html_to_text_python(html)]
    assert differ == []


ATTR_PIECES = st.sampled_from([" ", "\t", "\n", "\xa0", "\u2003", "=", '"', "'", ">", "/", "&amp;", "&#65;", "&", "a",
                               "B", "İ", "ſ", "\u212a", "é", "href", "HREF", "src", "alt", "ALT", "data", "x",
                               "cid:", "data:", "#", " http://x.example/?q=1", "background"])


@compiled
@settings(max_examples=3000, deadline=None)
@given(st.lists(ATTR_PIECES, max_size=40).map("".join))
def test_compiled_attributes_equal_python(text):
    """spamkit.common.speedups.tag_attrs against _tag_attrs (the regular expression's reading of a tag's
    attributes), on generated attribute text, and past MAX_ATTRIBUTES attributes."""
    assert htmltext.html_tools()[1](text) == htmltext._tag_attrs(text)


@compiled
def test_compiled_attributes_stop_where_python_does():
    many = " ".join(f"a{i}=v{i}" for i in range(htmltext.MAX_ATTRIBUTES + 5)) + " href=http://late.example/ alt=x"
    assert htmltext.html_tools()[1](many) == htmltext._tag_attrs(many) == ([], None)
    first = ' HREF="http://one.example/" href=http://two.example/ alt="a &amp; b" src=\'cid:x\' data=" #y"'
    assert htmltext.html_tools()[1](first) == htmltext._tag_attrs(first) == (["http://one.example/"], "a & b")


@compiled
@pytest.mark.parametrize("text, expected", [
    ("no reference", "no reference"),
    ("&amp;&lt;&GT;&AMP", "&<>&"),                      # names with and without ";" (legacy ones)
    ("a&ampb &notin &notin; &notit;", "a&b ¬in ∉ ¬it;"),  # the longest name that is a prefix
    ("&frac34x &fraction", "¾x &fraction"),             # "frac34" is legacy; "fraction" no prefix name
    ("&#65;&#x42;&#X43&#0068", "ABCD"),                  # numeric, ";" optional, leading zeros
    ("&#0;&#13;&#128;&#x9F;", "\ufffd\r\u20ac\u0178"),   # the invalid charrefs table (Windows-1252)
    ("&#xD800;&#1114112;&#99999999999999999999;", "\ufffd" * 3),   # surrogates and beyond U+10FFFF
    ("[&#1;&#xB;&#xFFFE;&#x10FFFF;]", "[]"),             # invalid code points are dropped
    ("&;&#;&#x;&x &#xg", "&;&#;&#x;&x &#xg"),            # no reference: left as it is
    ("&abcdefghijklmnopqrstuvwxyz0123456789;x", "&abcdefghijklmnopqrstuvwxyz0123456789;x"),  # 32 + more
    ("&nbsp\r&lt\u00e9 \u20ac&gt;\U0001F600", "\xa0\r<\u00e9 \u20ac>\U0001F600"),
    ("x&&lt;&amp;&#", "x&<&&#"),
])
def test_compiled_unescape_by_hand(text, expected):
    """speedups.html_unescape: the standard library's rules (html._replace_charref) worked by hand."""
    import html
    assert htmltext.html_tools()[0](text) == expected == html.unescape(text) == htmltext.unescape(text)
    assert htmltext.html_tools()[0] is not htmltext.unescape or htmltext.speedups is None


UNESCAPE_PIECES = st.sampled_from(["&", "#", ";", "x", "X", "0", "1", "9", "65", "x41", "fffe", "D800", "a", "F",
                                   "amp", "lt", "gt", "not", "notin", "frac34", "nbsp", "AMP", "copy", "z" * 31,
                                   " ", "\t", "\n", "\r", "\f", "<", "é", "€", "\U0001f600", "\x00", "=", "?"])


@compiled
@settings(max_examples=5000, deadline=None)
@given(st.lists(UNESCAPE_PIECES, max_size=40).map("".join))
def test_compiled_unescape_equals_the_standard_library(text):
    import html
    assert htmltext.html_tools()[0](text) == html.unescape(text) == htmltext.unescape(text)


def test_a_reference_too_long_for_int_is_u_fffd_not_an_error():
    """html.unescape raises ValueError on a decimal reference of more than 4,300 digits (CPython's
    limit on int() from a string); one such HTML part stopped parse_message, and with it a
    training run. Any number of 8 digits or more is past U+10FFFF: U+FFFD, as for shorter ones."""
    import html
    import sys
    long_ref = "&#" + "9" * 5000 + ";"
    if hasattr(sys, "get_int_max_str_digits"):       # CPython 3.10.7 and later limit int()
        with pytest.raises(ValueError):
            html.unescape(long_ref)
    assert htmltext.unescape("a" + long_ref + "b&#" + "0" * 5000 + "65;") == "a\ufffdbA"
    assert htmltext.unescape("&#12345678;&#x110000;&#1114111;") == html.unescape("&#12345678;&#x110000;&#1114111;")
    from spamkit.parse.message import parse_message
    raw = b"Content-Type: text/html\n\n<p title='&#" + b"7" * 5000 + b";'>x &#" + b"9" * 5000 + b"; y</p>\n"
    assert parse_message(raw, "rfc822").body.split() == ["x", "\ufffd", "y"]
    for scan in (html_to_text, _html_to_text_python):
        assert scan("<p>" + long_ref + "</p>")[0] == "\n\ufffd\n"


@compiled
def test_compiled_unescape_is_linear_on_hostile_references():
    for text in ("&" * 200_000, "&abcdefghij" * 50_000, "&#" + "9" * 300_000 + ";", "&x" * 100_000,
                 "&#" + "0" * 300_000 + "65", "&#x" + "f" * 300_000):
        assert htmltext.html_tools()[0](text) == htmltext.unescape(text)
