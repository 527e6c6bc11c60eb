"""Analyzer: tokens from headers, bodies, URLs and attachments; stop words; stemming; config."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spamkit.common.errors import ConfigError, ResourceMissingError
from spamkit.parse.message import parse_message
from spamkit.text import Analyzer
from spamkit.text.stem import CachedStemmer
from spamkit.text.stopwords import english
from spamkit.text.tokenize import WORD_PATTERN, WORD_PATTERN_MIN2, WORD_PATTERN_MIN2_ASCII, WORD_PATTERN_MIN2_FAST

from conftest import SAMPLE

MAIL = b"""From: "Prize Dept" <claims@lotto.example>
To: you@example.org
Subject: You WON $5000!
Content-Type: multipart/mixed; boundary="b"

--b
Content-Type: text/html

<p>Claim your <b>prize</b> at <a href="http://www.lotto.example/claim">our site</a>, don't wait.</p>
--b
Content-Type: application/octet-stream; name="form.exe"
Content-Disposition: attachment; filename="form.exe"

AAAA
--b--
"""


def test_mail_tokens_by_field():
    tokens = Analyzer()(parse_message(MAIL))
    assert tokens[:7] == ["claim", "your", "prize", "at", "our", "site", "don't"]
    assert "subject:won" in tokens and "subject:$5000" in tokens and "subject:you" in tokens
    assert "from:lotto.example" in tokens and "from:prize" in tokens
    assert "to:example.org" in tokens
    assert "url:lotto.example" in tokens
    assert {"attach:type:application/octet-stream", "attach:ext:exe", "meta:html"} <= set(tokens)
    assert "won" not in tokens             # a Subject word is not a body word


def test_stop_words_then_stemming():
    a = Analyzer(stop_words="english", stemmer="porter")
    # "has" would stem to "ha" and slip past the stop list if stemming came first
    assert a("He has been running the meetings") == ["run", "meet"]


def test_numbers_lengths_ngrams():
    assert Analyzer(numbers="drop")("call 0800 123 now") == ["call", "now"]
    assert Analyzer(numbers="collapse")("call 0800 now") == ["call", "meta:number", "now"]
    assert Analyzer(min_len=3)("a an the cat") == ["the", "cat"]
    assert Analyzer(max_len=5)("short loooooong") == ["short", "meta:long-token"]
    assert Analyzer(ngram_max=2)("free money now") == ["free", "money", "now", "free money", "money now"]


def test_case_and_pattern():
    assert Analyzer(lowercase=False)("Free FREE") == ["Free", "FREE"]
    assert Analyzer()("e-mail me at x.example.com, it's $5,000") == [
        "e-mail", "me", "at", "x.example.com", "it's", "$5,000"]


def test_stemmers_and_cache():
    s = CachedStemmer("porter")
    words = ["connection", "connected", "connecting"] * 100
    assert {s(w) for w in words} == {"connect"}
    assert s.cache_size == 3                       # stemming cost grows with the vocabulary
    assert CachedStemmer("lancaster")("maximum") == "maxim"
    assert CachedStemmer("snowball", "spanish")("corriendo") == "corr"
    with pytest.raises(ConfigError, match="unknown stemmer"):
        CachedStemmer("krovetz")
    with pytest.raises(ConfigError, match="Snowball has no 'klingon'"):
        CachedStemmer("snowball", "klingon")


def test_user_stop_word_file(tmp_path):
    path = tmp_path / "stop.txt"
    path.write_text("# mine\nfoo\nBar\n", encoding="utf-8")
    a = Analyzer(stop_words=str(path))
    assert a("foo bar baz") == ["baz"]
    config = a.get_config()
    assert config["stop_words"] == "custom" and config["stop_word_list"] == ["bar", "foo"]
    path.unlink()                                  # the model keeps the words, not the path
    assert Analyzer.from_config(config)("foo bar baz") == ["baz"]
    with pytest.raises(ResourceMissingError, match="stop-word file not found"):
        Analyzer(stop_words=str(path))


def test_config_round_trip():
    a = Analyzer(stemmer="snowball", language="german", ngram_max=2, headers=("subject",), numbers="drop")
    b = Analyzer.from_config(a.get_config())
    msg = parse_message(MAIL)
    assert a(msg) == b(msg)
    with pytest.raises(ConfigError, match="unknown analyzer settings"):
        Analyzer.from_config({**a.get_config(), "quantum": True})
    # the settings are the constructor's parameters, all saved, compared and shown
    import inspect
    assert list(inspect.signature(Analyzer).parameters) == [*Analyzer.SETTINGS, "_stop_list"]
    assert set(a.get_config()) == set(Analyzer.SETTINGS)                  # no stop words: no list saved
    assert a == b and a != Analyzer() and Analyzer(headers=["Subject"]) == Analyzer(headers=("subject",))
    assert repr(a).startswith("Analyzer(lowercase=True, token_pattern=") and "ngram_max=2" in repr(a)
    assert "_stop_list" not in repr(a)
    with pytest.raises(TypeError):
        hash(a)                                          # mutable: no hash


def test_nltk_needs_no_data_download(monkeypatch):
    import nltk
    monkeypatch.setattr(nltk, "download", lambda *a, **k: pytest.fail("nltk.download called"))
    Analyzer(stop_words="english", stemmer="snowball")("nothing is downloaded here")


# The obvious, slower form of the word pattern: one character at a time.
REFERENCE_WORD = re.compile(r"[$£€¥]?[^\W_](?:[^\W_]|['’.\-](?=[^\W_])|(?<=\d),(?=\d))*")


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab1_.,-'’$£ éß9\n")), max_size=60) | st.text(max_size=60))
def test_word_pattern_equals_reference(text):
    assert re.findall(WORD_PATTERN, text) == REFERENCE_WORD.findall(text)


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab1_.,-'’$£ éß9\n")), max_size=60) | st.text(max_size=60))
def test_two_character_pattern_drops_exactly_the_one_character_words(text):
    expected = [t for t in re.findall(WORD_PATTERN, text) if len(t) >= 2]
    assert re.findall(WORD_PATTERN_MIN2, text) == expected
    assert re.findall(WORD_PATTERN_MIN2_FAST, text) == expected        # possessive form (Python 3.11+)
    ascii_text = text.encode("ascii", "replace").decode("ascii")        # non-ASCII -> "?"
    assert re.findall(WORD_PATTERN_MIN2_ASCII, ascii_text) == \
        [t for t in re.findall(WORD_PATTERN, ascii_text) if len(t) >= 2]


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab1.,-$ xAZé9’_")), max_size=200), st.integers(2, 6),
       st.booleans())
def test_fast_words_equal_the_general_loop(text, max_len, lowercase):
    # the default pattern with min_len 2 takes the fast path; a stop word list of one word
    # that never occurs forces the general loop: both must give the same tokens
    fast = Analyzer(max_len=max_len, lowercase=lowercase)          # ASCII texts and others
    slow = Analyzer(max_len=max_len, lowercase=lowercase, stop_words="none", _stop_list=frozenset({"\x00"}))
    assert fast._regex_min is not None
    assert fast.words(text) == slow.words(text)


STOP = english()


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300), st.sampled_from(["none", "porter", "snowball", "lancaster"]))
def test_token_properties(text, stemmer):
    tokens = Analyzer(stop_words="english", stemmer=stemmer, lowercase=True)(text)
    for t in tokens:
        assert t and t == t.lower() and "\n" not in t
    words = [t for t in Analyzer(stop_words="english")(text) if ":" not in t]
    assert not set(words) & STOP


def test_every_sample_message_has_tokens():
    a = Analyzer()
    for path in sorted(SAMPLE.rglob("*.eml")):
        assert len(a(parse_message(path.read_bytes()))) > 5, path


def test_mail_analyzer_tokens():
    from spamkit.parse.message import parse_message
    from spamkit.text import Analyzer
    raw = (b"Received: from relay.example.net ([192.0.2.77]) by mx.example.org\n"
           b"Received: from host (10.999.1.2) by relay\n"
           b"X-Mailer: Blaster 3\nSubject: Cheap Pills\n\n"
           b"Visit http://shop.example.com/buy-now?id=7 Today\n")
    tokens = Analyzer.mail()(parse_message(raw))
    # every header field is its own token space, case kept
    assert "x-mailer:Blaster" in tokens and "subject:Cheap" in tokens and "Today" in tokens
    assert "header:x-mailer" in tokens and tokens.count("header:received") == 2
    # a Received IPv4 address with its /24 and /16; an impossible address is not one
    assert {"received:ip:192.0.2.77", "received:ip:192.0.2", "received:ip:192.0"} <= set(tokens)
    assert not any(t.startswith("received:ip:10.999") for t in tokens)
    # URL pieces from host and path, lower-cased
    assert {"url:part:shop", "url:part:buy", "url:part:now", "url:part:id"} <= set(tokens)
    assert "url:shop.example.com" in tokens
    # the plain analyzer has none of these
    plain = Analyzer()(parse_message(raw))
    assert not any(t.startswith(("header:", "received:ip:", "url:part:", "x-mailer:Blaster")) for t in plain)


def test_mail_analyzer_config_round_trip():
    from spamkit.text import Analyzer
    a = Analyzer.mail()
    b = Analyzer.from_config(a.get_config())
    assert b == a and b.headers == ("*",) and b.received_ips and b.url_parts and b.header_names


def test_mail_tokens_never_contain_line_breaks():
    # A filter file stores one term per line; a URL in an HTML attribute may hold a line break
    # (trec07p inmail.474 has one), which must not reach a token.
    from spamkit.parse.message import parse_message
    from spamkit.text import Analyzer
    raw = (b"Content-Type: text/html\n\n<a href='http://ex.example/a\n01/b\r\nc d'>x</a>"
           b"<img src=\"http://img.example/\n\">")
    for token in Analyzer.mail()(parse_message(raw)):
        assert token == token.strip() and len(token.splitlines()) == 1, repr(token)


from hypothesis import given, settings, strategies as st  # noqa: E402


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(["http://", "HTTPS://", "www.", "WwW.", "ww.", "://", "x", ".com", " ", "/a",
                                 "é", "\n", "htp:/", "h", "ttp", "s", "S", "\u017f", ":/", "/", "w", "W.", ".",
                                 "<", ")", "'", "\u00a0", "\u2028", "\u3000", "\x1c", "\U0001f600", "HtTpS"]),
                max_size=16).map("".join))
def test_find_urls_equals_the_plain_scan(text):
    """The compiled scan and the Python one give the regular expression's matches: case, the
    long s that re's IGNORECASE takes for "s", Unicode white space, the excluded characters,
    near misses, texts of every string width."""
    from spamkit.text.tokenize import URL_PATTERN, _find_urls_python, find_urls, speedups
    assert _find_urls_python(text) == URL_PATTERN.findall(text)
    assert find_urls(text) == URL_PATTERN.findall(text)
    if speedups is not None:
        assert speedups.find_urls(text) == URL_PATTERN.findall(text)


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab1 9.$-")), max_size=80), st.integers(2, 5),
       st.sampled_from(["keep", "drop", "collapse"]))
def test_header_tokens_are_the_field_words_without_markers(value, max_len, numbers):
    from spamkit.parse.message import Message
    a = Analyzer(max_len=max_len, numbers=numbers, urls=False, meta=False)
    doc = Message(body="", kind="rfc822", size=0, headers=[("subject", value)])
    expected = ["subject:" + t for t in a.words(value) if not t.startswith("meta:")]
    assert a(doc) == expected


def test_skip_headers_drops_fields_new_in_every_message():
    from spamkit.parse.message import parse_message
    from spamkit.text import Analyzer
    m = parse_message(b"Date: Mon, 1 Jan 2024 10:00:00\nMessage-ID: <a1b2@mx.example>\nSubject: hi there\n\nbody")
    every = Analyzer.mail()(m)
    assert "message-id:a1b2" in every and "date:Jan" in every
    skipped = Analyzer.mail(skip_headers=("Date", "Message-ID"))(m)
    assert not any(t.startswith(("date:", "message-id:")) for t in skipped)
    assert "subject:hi" in skipped and "header:date" in skipped          # the field's presence still counts
    back = Analyzer.from_config(Analyzer.mail(skip_headers=("date",)).get_config(), trusted=False)
    assert back.skip_headers == ("date",) and Analyzer.from_config({"headers": ["*"]}).skip_headers == ()


def test_character_ngrams_by_hand():
    a = Analyzer(char_ngrams=4, char_window=9, urls=False, meta=False, headers=())
    # "free free!" -> the first 9 characters "free free": 6 windows, "free" twice, kept once
    assert a("free free!") == ["free", "free", "c4:free", "c4:ree ", "c4:ee f", "c4:e fr", "c4: fre"]
    assert Analyzer(char_ngrams=3).char_grams("ab") == []
    assert Analyzer(char_ngrams=3).char_grams("a\r\n\tb") == ["c3:a b"]      # white space runs: one space
    with pytest.raises(ConfigError, match="char_ngrams"):
        Analyzer(char_ngrams=2)
    with pytest.raises(ConfigError, match="char_window"):
        Analyzer(char_ngrams=4, char_window=0)


def test_character_ngrams_come_from_the_decoded_body():
    plain = b"Subject: x\nContent-Type: text/plain\n\nCheap v1agra here\n"
    encoded = (b"Subject: x\nContent-Type: text/plain\nContent-Transfer-Encoding: base64\n\n"
               + __import__("base64").b64encode(b"Cheap v1agra here\n") + b"\n")
    a = Analyzer.mail(char_ngrams=4)
    grams = [t for t in a(parse_message(plain)) if t.startswith("c4:")]
    assert "c4:1agr" in grams
    assert grams == [t for t in a(parse_message(encoded)) if t.startswith("c4:")]


def test_character_ngram_settings_are_saved():
    a = Analyzer.mail(char_ngrams=5, char_window=100)
    b = Analyzer.from_config(a.get_config(), trusted=False)
    assert (b.char_ngrams, b.char_window) == (5, 100)
    old = a.get_config()
    del old["char_ngrams"], old["char_window"]            # a filter file from before the option
    assert Analyzer.from_config(old).char_ngrams == 0


# ----------------------------------------------------------------- the compiled word scanner

def _regex_words(text: str, max_len: int) -> list[str]:
    """The definition the compiled scanner follows: WORD_PATTERN's matches of two or more characters."""
    return [t if len(t) <= max_len else "meta:long-token" for t in re.findall(WORD_PATTERN, text) if len(t) >= 2]


WORDY = st.sampled_from(list("ab1_.,-'’$£€¥ \n\t9Zé") + ["\u0663", "\u00b2", "\u00bd", "\u212a", "\u0301",
                                                          "\u4e2d", "\U0001f600", "\u00a0", "İ", "ß", ",5"])


@settings(max_examples=3000, deadline=None)
@given(st.lists(WORDY, max_size=60).map("".join) | st.text(max_size=60), st.integers(2, 8))
def test_compiled_words_equal_the_word_pattern(text, max_len):
    from spamkit.text.tokenize import speedups
    if speedups is None:
        pytest.skip("spamkit.common.speedups was not built")
    assert speedups.words(text, max_len, None, "meta:long-token") == _regex_words(text, max_len)
    # a field's tokens: prefixed, markers left out, whatever the prefix's and the text's widths
    for prefix in ("subject:", "x-é:", "x-\u4e2d:"):
        assert speedups.words(text, max_len, prefix, "meta:long-token") == \
            [prefix + t for t in _regex_words(text, max_len) if t != "meta:long-token"]


def test_compiled_words_reuse_recent_words_and_stay_equal_to_the_pattern():
    # the scanner hands back the str object of a word it made lately (a cache of 32,768 slots):
    # in texts of every width (ASCII, Latin-1, two- and four-byte), over many more words than
    # slots, what it returns stays what the pattern finds, and a word met again is one object
    from spamkit.text.tokenize import speedups
    if speedups is None:
        pytest.skip("spamkit.common.speedups was not built")
    rng = np.random.default_rng(3)
    letters = list("abcdefghij") + ["é", "ß", "\u4e2d", "\U0001f600"]
    vocabulary = ["".join(rng.choice(letters, size=int(rng.integers(2, 30)))) for _ in range(60_000)]
    for start in range(0, len(vocabulary), 500):
        words = vocabulary[start:start + 500]
        for text in (" ".join(words), "\u4e2d " + " ".join(words), "\U0001f600 " + " ".join(words)):
            assert speedups.words(text, 40, None, "meta:long-token") == _regex_words(text, 40)
    again = speedups.words("cached word cached", 40, None, "meta:long-token")
    assert again == ["cached", "word", "cached"] and again[0] is again[2]
    wide = speedups.words("\u4e2d cached", 40, None, "meta:long-token")      # the same word in a wider text
    assert wide[-1] == "cached" and type(wide[-1]) is str and wide[-1].isascii()
    # field words ("subject:" + word) are cached too, the prefix part of what a slot is matched by
    for prefix in ("subject:", "x-\u00fc:", "x-\u65e5:", "x-\U0001f600:"):
        for start in range(0, 6_000, 500):
            text = " ".join(vocabulary[start:start + 500])
            assert speedups.words(text, 40, prefix, "meta:long-token") == [prefix + w for w in _regex_words(text, 40)
                                                                           if not w.startswith("meta:")]
        twice = speedups.words("cached word cached", 40, prefix, "meta:long-token")
        assert twice == [prefix + "cached", prefix + "word", prefix + "cached"] and twice[0] is twice[2]
    assert speedups.words("cached", 40, "to:", "m") == ["to:cached"] and speedups.words("cached", 40, None, "m") == ["cached"]
    assert speedups.words("ached", 40, "to:c", "m") == ["to:cached"] and speedups.words("to:cached", 40, None, "m") == ["to", "cached"]


@pytest.mark.slow
def test_compiled_words_equal_the_word_pattern_on_the_corpora():
    from spamkit.corpus import Corpus
    from spamkit.text.tokenize import speedups
    from conftest import shared_corpus
    if speedups is None:
        pytest.skip("spamkit.common.speedups was not built")
    texts = 0
    for relative in ("trec07p-dev/trec07p-dev.tar.gz", "csdmc2010/csdmc2010.tar.gz", "enron-spam/enron1.tar.gz"):
        with Corpus(shared_corpus(relative)) as corpus:
            for msg in corpus:
                m = parse_message(msg.raw, msg.kind)
                for text in (m.body, *(value for _, value in m.headers)):
                    texts += 1
                    assert speedups.words(text, 40, None, "meta:long-token") == _regex_words(text, 40), text[:200]
    assert texts > 100_000


def test_without_the_extension_the_same_tokens_and_scores():
    # SPAMKIT_PURE_PYTHON=1 runs every Python definition instead of spamkit.common.speedups (as an
    # install without a C compiler does): the sample corpus's tokens must be identical and the
    # default filter's probabilities equal to rounding (the logistic steps sum in another order)
    import json
    import os
    import subprocess
    import sys
    script = (
        "import json, sys\n"
        "from spamkit.corpus import Corpus\n"
        "from spamkit import BEST, build_filter\n"
        "from spamkit.text import tokenize\n"
        "f = build_filter(**BEST)\n"
        "with Corpus(sys.argv[1]) as c:\n"
        "    msgs = list(c)\n"
        "f.fit(msgs)\n"
        "json.dump({'compiled': tokenize.speedups is not None, 'tokens': [f.tokens(m) for m in msgs],\n"
        "           'p': f.score(msgs)[0][:, 1].tolist()}, sys.stdout)\n")
    env = {**os.environ, "PYTHONPATH": str(SAMPLE.parents[1])}
    runs = {}
    for pure in ("1", "0"):
        out = subprocess.run([sys.executable, "-c", script, str(SAMPLE)], capture_output=True, text=True,
                             env={**env, "SPAMKIT_PURE_PYTHON": pure}, check=True)
        runs[pure] = json.loads(out.stdout)
    assert not runs["1"]["compiled"]
    assert runs["1"]["tokens"] == runs["0"]["tokens"]
    assert runs["1"]["p"] == pytest.approx(runs["0"]["p"], rel=1e-9, abs=1e-12)


@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(list("0123456789 ab.,\n") + ["٣", "७", "²", "Ⅻ", "𝟗", "١"]), max_size=80),
       cap=st.sampled_from([1, 3, 20]))
def test_compiled_digit_shapes_equal_the_regular_expression(text, cap):
    """spamkit.common.speedups.digit_shapes finds the runs \\d+ finds in a str (Unicode decimal digits,
    not superscripts or numerals), each as shape:dN with N capped."""
    import spamkit.text.kinds as text_module
    if text_module.speedups is None:
        pytest.skip("spamkit.common.speedups was not built")
    got = []
    text_module.digit_shapes(text, got, cap)
    assert got == [f"shape:d{min(len(run), cap)}" for run in re.findall(r"\d+", text)]


def test_digit_prefixes_name_the_kind_of_long_numbers():
    # a run of five or more digits gives its first two digits and its length; shorter runs
    # (dates, times, prices) give none; the setting is saved with the analyzer, and a filter
    # file written before it existed reads as without it
    a = Analyzer(digit_prefixes=True, urls=False, url_parts=False, meta=False, headers=())
    tokens = a("Call 09058094583 now! Or +447797706009, 0800 505060; 12/10/2007 for £1000 ref 1234567890123456789012")
    assert [t for t in tokens if t.startswith("shape:")] == ["shape:09d11", "shape:44d12", "shape:50d6",
                                                             "shape:12d20"]
    assert Analyzer.from_config(a.get_config()).digit_prefixes is True
    old = Analyzer().get_config()
    del old["digit_prefixes"]
    assert Analyzer.from_config(old).digit_prefixes is False
    assert not [t for t in Analyzer(urls=False)("call 09058094583") if t.startswith("shape:")]


@settings(max_examples=300, deadline=None)
@given(fields=st.lists(st.tuples(st.sampled_from(["subject", "from", "received", "x-ünï", "to", "x-日本", "x-\U0001f600"]),
                                 st.text(alphabet=st.sampled_from(list("ab Zé€$1,.-'’\n") + ["ſ", "İ", "ß", "日", "本"]),
                                         max_size=60)), max_size=6),
       max_len=st.sampled_from([3, 40]), lowercase=st.booleans(), container=st.sampled_from([list, tuple]))
def test_every_field_in_one_call_equals_the_field_loop(fields, max_len, lowercase, container):
    """With every header field wanted (the mail analyzer), the field tokens come from one C call
    (spamkit.common.speedups.header_words): each field's words prefixed "name:", markers left out, in
    field order, as the loop over the fields gives them."""
    from spamkit.parse.message import Message
    a = Analyzer(max_len=max_len, headers=("*",), lowercase=lowercase, urls=False, url_parts=False, meta=False,
                 header_names=False, received_ips=False, digit_shapes=False)
    doc = Message(body="", kind="rfc822", size=0, headers=container(fields))
    expected = [f"{name}:{t}" for name, value in fields for t in a.words(value) if not t.startswith("meta:")]
    assert a(doc) == expected


def test_a_parsed_messages_fields_take_the_one_call(monkeypatch):
    """parse_message gives the header fields as a tuple: the mail analyzer reads them in one call."""
    import spamkit.text.analyzer as text_module
    if text_module.speedups is None:
        pytest.skip("spamkit.common.speedups was not built")
    calls = []

    class Spy:
        """The compiled module, counting its header_words calls."""
        def __init__(self, real):
            self.real = real

        def __getattr__(self, name):
            return getattr(self.real, name)

        def header_words(self, *args):
            calls.append(1)
            return self.real.header_words(*args)

    monkeypatch.setattr(text_module, "speedups", Spy(text_module.speedups))
    tokens = Analyzer.mail()(parse_message(b"Subject: cheap pills\nFrom: a@b.example\n\nbody"))
    assert calls == [1] and "subject:cheap" in tokens and "from:b.example" in tokens


@settings(max_examples=300, deadline=None)
@given(urls=st.lists(st.text(alphabet=st.sampled_from(list("aZ09/?#=&.:;,_+%~!@- \t\n\u2003é") + ["İ", "ẞ", "ſ", "Σ"]),
                             max_size=50), max_size=4))
def test_compiled_url_parts_equal_the_regular_expression(urls):
    """spamkit.common.speedups.url_parts against its definition: str.lower() (İ becomes two characters,
    ẞ becomes ß), then re.split on white space and URL punctuation, pieces of 2 to 30 characters."""
    import spamkit.text.kinds as text_module
    if text_module.speedups is None:
        pytest.skip("spamkit.common.speedups was not built")
    got = []
    text_module.url_part_tokens(urls, got)
    assert got == ["url:part:" + p for url in urls for p in text_module._URL_PIECES.split(url.lower())
                   if 2 <= len(p) <= 30]


@settings(max_examples=500, deadline=None)
@given(values=st.lists(st.lists(st.sampled_from(["1", "25", "255", "256", "999", "0", "1234", ".", "..", " ", "a",
                                                "[", "]", "٣", "٢٥", "١٩٢", "𝟗", "²"]), max_size=14).map("".join),
                       max_size=3))
def test_compiled_received_ips_equal_the_regular_expression(values):
    """spamkit.common.speedups.received_ips against its definition, the regular expression with its
    look-behind and look-ahead (Unicode decimal digits included, superscripts not), on generated
    runs of digits and dots: the same quads, prefixes and order."""
    import spamkit.text.kinds as text_module
    if text_module.speedups is None:
        pytest.skip("spamkit.common.speedups was not built")
    got = []
    text_module.received_ip_tokens(values, got)
    expected = []
    for value in values:
        for m in text_module._IPV4.finditer(value):
            o = m.groups()
            if all(int(x) <= 255 for x in o):
                expected += ["received:ip:" + ".".join(o), "received:ip:" + ".".join(o[:3]), "received:ip:" + ".".join(o[:2])]
    assert got == expected


def test_received_ips_by_hand():
    import spamkit.text.kinds as text_module
    cases = {"from a (b [10.0.0.1]) by c (1.2.3.4)": ["10.0.0.1", "1.2.3.4"],
             "1.2.3.4.5 x.1.2.3.4 1.2.3.4x 01.002.255.0": ["1.2.3.4", "01.002.255.0"],   # x is not a digit or dot
             "1234.1.1.1 256.1.1.1 ١٩٢.٠.٢.٧": ["١٩٢.٠.٢.٧"],
             "9.9.9.9.": [], ".9.9.9.9": []}
    for value, quads in cases.items():
        got = []
        text_module.received_ip_tokens([value], got)
        assert got[::3] == ["received:ip:" + q for q in quads], value
        expected = []
        for m in text_module._IPV4.finditer(value):
            o = m.groups()
            if all(int(x) <= 255 for x in o):
                expected += ["received:ip:" + ".".join(o), "received:ip:" + ".".join(o[:3]), "received:ip:" + ".".join(o[:2])]
        assert got == expected, value


@settings(max_examples=2000, deadline=None)
@given(st.lists(st.lists(st.sampled_from(["http", "HTTPS", "x+y", "a1", "1a", "://", ":", "/", "?", "#", "@", "u@",
                                          "www.", "WWW.", ".", "..", "example", "Co", "uk", "192", "0", " ", "\t",
                                          "\x1c", "\n", "-", "é", "\u0130", "\u017f"]),
                         max_size=10).map("".join), max_size=4))
def test_url_host_tokens_equal_url_hosts(urls):
    """The compiled URL reader appends exactly the tokens the analyzer made from url_hosts:
    scheme and user parts in the order the regular expression tries them, dots, "www.",
    dotted numbers, white space; a non-ASCII URL goes to url_hosts itself."""
    from spamkit.text.tokenize import speedups, url_hosts
    if speedups is None:
        return
    expected = ["url:" + h for url in urls for h in url_hosts(url)]
    got = []
    speedups.url_host_tokens(list(urls), url_hosts, got)
    assert got == expected


def test_field_name_tokens_are_one_str_per_name_and_the_memo_is_bounded(monkeypatch):
    """The mail tokens' "header:" + name come from a memo (one str per name, its hash taken once),
    cleared when it reaches its bound: names come from the mail, a stream of new ones must not
    grow it for ever. The tokens are what the concatenation gives either way."""
    import spamkit.text.kinds as text_module
    from spamkit.parse.message import parse_message
    text_module.HEADER_NAME_TOKENS.clear()                  # the one dict the analyzer reads
    monkeypatch.setattr(text_module, "HEADER_NAME_TOKENS_SIZE", 5)
    a = Analyzer.mail()
    for i in range(20):
        raw = b"".join(b"X-F%d-%d: v\n" % (i, j) for j in range(3)) + b"Subject: s\n\nbody words\n"
        msg = parse_message(raw, "rfc822")
        names = [t for t in a(msg) if t.startswith("header:")]
        assert names == ["header:" + name for name, _ in msg.headers]
        assert len(text_module.HEADER_NAME_TOKENS) <= 5
    again = [t for t in a(parse_message(b"Subject: s\n\nx\n", "rfc822")) if t.startswith("header:")]
    assert again == ["header:subject"] and again[0] is text_module.HEADER_NAME_TOKENS["subject"]


def test_compiled_field_names_are_shared_objects_with_their_definition():
    """speedups.header_pairs hands back one str per lower-case field name met lately (a cache),
    and names longer than the cache holds fresh: equal to name.strip().lower() either way."""
    from spamkit.parse.message import _speedups
    from spamkit.parse.decoding import decode_header_value
    if _speedups is None:
        pytest.skip("spamkit.common.speedups was not built")
    long_name = "X-" + "Long" * 20
    fields = [(" Received", "a"), ("RECEIVED", "b"), (long_name, "c"), (long_name.upper(), "d"), ("x-ünï", "e")]
    pairs = _speedups.header_pairs(fields, decode_header_value, [])
    assert pairs == [(n.strip().lower(), v) for n, v in fields]
    assert pairs[0][0] is pairs[1][0]


def test_han_and_kana_text_becomes_character_bigrams_in_body_and_header_fields():
    from spamkit.text.tokenize import cjk_bigrams
    raw = ("Subject: =?GB2312?B?" + __import__("base64").b64encode("优惠发票".encode("gb2312")).decode() + "?=\n"
           "Content-Type: text/plain; charset=GB2312\n\n").encode() + "提供发票服务，欢迎咨询 hello".encode("gb2312")
    tokens = Analyzer.mail()(parse_message(raw))
    # each run of Han characters as its overlapping bigrams; other words as before
    assert tokens[:8] == ["提供", "供发", "发票", "票服", "服务", "欢迎", "迎咨", "咨询"]
    assert "hello" in tokens
    assert {"subject:优惠", "subject:惠发", "subject:发票"} <= set(tokens)
    # a lone character is a one-letter word; kana runs are bigrams too; Latin glued to Han is set apart
    assert cjk_bigrams("中") == "中" and cjk_bigrams("カタカナ") == " カタ タカ カナ "
    assert Analyzer.mail().words("abc中文def") == ["abc", "中文", "def"]
    # the words analyzer of a filter written before the setting existed keeps its tokens
    old = Analyzer.mail().get_config()
    old.pop("cjk_bigrams")
    assert Analyzer.from_config(old).words("提供发票服务") == ["提供发票服务"]
    assert Analyzer.from_config(Analyzer.mail().get_config()).cjk_bigrams
