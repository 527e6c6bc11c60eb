"""Email parsing: hand-made messages for each rule, and property tests that it never raises."""

from __future__ import annotations

import base64
import binascii
import random
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spamkit.parse.message import MAX_DEPTH, Message, detect_kind, parse_message
from spamkit.parse.decoding import decode_bytes, decode_header_value

from conftest import SAMPLE


def test_plain_message_headers_and_body():
    raw = (b"From: Alice <alice@example.org>\r\nTo: bob@example.org\r\nSubject: lunch\r\n"
           b"Received: from a.example by b.example\r\n\tfolded part\r\n\r\nSee you at noon.\r\n")
    m = parse_message(raw)
    assert m.kind == "rfc822"
    assert m.subject == "lunch"
    assert m.header("FROM") == "Alice <alice@example.org>"
    assert m.get_all("received") == ["from a.example by b.example folded part"]
    assert m.body.strip() == "See you at noon."
    assert m.defects == ()


def test_a_message_is_an_immutable_record_equal_by_everything_but_its_raw_bytes():
    import pickle

    m = parse_message(b"Subject: lunch\r\nContent-Type: text/plain\r\n\r\nnoon")
    twin = parse_message(b"Subject: lunch\r\nContent-Type: text/plain\r\n\r\nnoon")
    assert m == twin and hash(m) == hash(twin) and len({m, twin}) == 1
    other = m.replace(raw=b"different bytes")
    assert other == m and other.raw == b"different bytes" and m.raw != other.raw     # raw is not compared
    assert m.replace(subject="dinner") != m and m.replace(subject="dinner").body == "noon"
    assert "raw" not in repr(m) and repr(m).startswith("Message(headers=(('subject', 'lunch'),")
    for change in (lambda: setattr(m, "subject", "x"), lambda: delattr(m, "body")):
        try:
            change()
        except AttributeError as exc:
            assert "immutable" in str(exc)
        else:
            raise AssertionError("a field of a Message was changed")
    back = pickle.loads(pickle.dumps(m))
    assert back == m and back.raw == m.raw and back.size == m.size
    try:
        m.replace(colour="red")
    except TypeError as exc:
        assert "colour" in str(exc)
    else:
        raise AssertionError("replace took a field a Message does not have")
    assert Message() == Message(headers=(), subject="", body="", kind="text", size=0) != m


def test_encoded_words_rfc2047():
    # B and Q encodings, the space between adjacent encoded words dropped (RFC 2047 §6.2)
    value = "=?UTF-8?B?" + base64.b64encode("Grüße".encode()).decode() + "?= =?ISO-8859-1?Q?aus_K=F6ln?="
    assert decode_header_value(value, []) == "Grüßeaus Köln"
    assert decode_header_value("plain  text\r\n  folded", []) == "plain text folded"


def test_undecodable_encoded_word_falls_back():
    defects = []
    out = decode_header_value("=?x-klingon?Q?caf=E9?=", defects)
    assert out == "café"                                      # Windows-1252 fallback
    assert "charset-unknown:x-klingon" in defects


def test_base64_and_quoted_printable_bodies():
    b64 = base64.b64encode("Prix spécial".encode("iso-8859-1")).decode()
    raw = ("Subject: x\nContent-Type: text/plain; charset=iso-8859-1\n"
           f"Content-Transfer-Encoding: base64\n\n{b64}\n").encode()
    assert parse_message(raw).body.strip() == "Prix spécial"
    raw = b"Subject: x\nContent-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: quoted-printable\n\ncaf=C3=A9 =\nsoft break\n"
    assert parse_message(raw).body.strip() == "café soft break"


def test_wrong_and_unknown_charsets_fall_back_and_are_recorded():
    raw = "Content-Type: text/plain; charset=utf-8\n\ncafé".encode("latin-1")
    m = parse_message(b"Subject: a\n" + raw)
    assert m.body == "café"
    assert m.defects == ("charset-mismatch:utf-8",)
    m = parse_message(b"Subject: a\nContent-Type: text/plain; charset=base64\n\nhello")
    assert m.body == "hello" and m.defects == ("charset-unknown:base64",)   # a bytes codec, not text
    m = parse_message("Subject: a\n\nna\u00efve".encode("utf-8"))
    assert m.body == "naïve" and m.defects == ("charset-missing",)


def test_charset_aliases_real_mail_uses():
    assert decode_bytes("안녕".encode("cp949"), "ks_c_5601-1987", []) == "안녕"
    assert decode_bytes("你好".encode("gb18030"), "gb2312", []) == "你好"


def test_raw_8bit_header():
    m = parse_message("Subject: r\u00e9sum\u00e9 attached\n\nx".encode("utf-8"))
    assert m.subject == "résumé attached"
    assert "header-8bit" in m.defects


def test_html_only_message_keeps_urls_and_tags():
    raw = (b"Subject: offer\nContent-Type: text/html\n\n<html><body><p>Cheap <b>pi<!-- -->lls</b></p>"
           b"<a href='http://spam.example/buy'>here</a><script>var x=1;</script></body></html>")
    m = parse_message(raw)
    assert " ".join(m.body.split()) == "Cheap pills here"
    assert m.urls == ("http://spam.example/buy",)
    assert m.html_tags[:3] == ("html", "body", "p")


ALTERNATIVE = b"""Subject: alt
Content-Type: multipart/alternative; boundary="B"

--B
Content-Type: text/plain

plain version
--B
Content-Type: text/html

<p>html <a href="http://x.example/">version</a></p>
--B--
"""


def test_multipart_alternative_renders_last_alternative_only():
    m = parse_message(ALTERNATIVE)
    assert " ".join(m.body.split()) == "html version"        # RFC 2046: the last is preferred
    assert "plain version" not in m.body
    assert m.urls == ("http://x.example/",)


def test_attachments_recorded_by_name_and_type_not_bytes():
    blob = base64.b64encode(b"\x00\x01" * 100).decode()
    raw = (f'Subject: a\nContent-Type: multipart/mixed; boundary="Z"\n\n--Z\nContent-Type: text/plain\n\nsee file\n'
           f'--Z\nContent-Type: application/pdf; name="r.pdf"\nContent-Disposition: attachment; filename="r.pdf"\n'
           f"Content-Transfer-Encoding: base64\n\n{blob}\n--Z--\n").encode()
    m = parse_message(raw)
    assert m.body.strip() == "see file"
    assert [(a.filename, a.content_type, a.size) for a in m.attachments] == [("r.pdf", "application/pdf", 200)]


def test_enron_kind_keeps_body_out_of_headers():
    # The Enron files have no blank line after Subject: a mail parser would eat the body.
    raw = b"Subject: dobmeos with hgh\nintroducing\ndoctor - formulated\nhgh\n"
    assert detect_kind(raw) == "enron"
    m = parse_message(raw, kind="enron")
    assert m.subject == "dobmeos with hgh"
    assert m.body.split() == ["introducing", "doctor", "-", "formulated", "hgh"]
    assert parse_message(raw).body == m.body                  # "auto" finds the same


def test_text_kind_has_no_headers():
    m = parse_message(b"Free entry: win a prize now", kind="text")
    assert m.headers == () and m.body == "Free entry: win a prize now"
    assert detect_kind(b"Ok lar... Joking wif u oni...") == "text"
    assert parse_message("£100 prize".encode("cp1252")).body == "£100 prize"


def test_missing_separator_is_recorded_not_fatal():
    m = parse_message(b"From: a@b.example\nSubject: s\nthis line is body\nmore\n", kind="rfc822")
    assert "this line is body" in m.body
    assert "no-header-separator" in m.defects


def test_deep_nesting_is_cut_not_crashing():
    depth = MAX_DEPTH + 20
    parts = [f'Content-Type: multipart/mixed; boundary="b{i}"\n\n--b{i}\n' for i in range(depth)]
    raw = ("Subject: deep\n" + "".join(parts) + "Content-Type: text/plain\n\ninnermost\n"
           + "".join(f"--b{i}--\n" for i in reversed(range(depth)))).encode()
    m = parse_message(raw)
    assert "too-deep" in m.defects
    assert "innermost" not in m.body


def test_huge_part_is_truncated():
    raw = b"Subject: big\n\n" + b"word " * 50_000
    m = parse_message(raw, max_part_bytes=1000)
    assert "part-truncated" in m.defects
    assert len(m.body) == 1000


def test_sample_corpus_every_message_parses_with_text():
    for path in sorted(SAMPLE.rglob("*.eml")):
        m = parse_message(path.read_bytes())
        assert m.kind == "rfc822", path
        assert m.subject, path
        assert m.body.strip(), path


# ------------------------------------------------------------------ properties

def _tokenizer_accepts(m: Message) -> None:
    # What the tokenizer relies on: strings everywhere, headers as (str, str) pairs.
    assert isinstance(m.body, str) and isinstance(m.subject, str)
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in m.headers)
    assert all(isinstance(u, str) for u in m.urls)
    m.body.encode("utf-8")                                   # no lone surrogates
    m.subject.encode("utf-8")
    for _, v in m.headers:
        v.encode("utf-8")


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=3000), st.sampled_from(["auto", "rfc822", "enron", "text"]))
def test_random_bytes_never_raise(raw, kind):
    _tokenizer_accepts(parse_message(raw, kind=kind))


SEEDS = [p.read_bytes() for p in sorted(SAMPLE.rglob("*.eml"))[:60]]
CHARSETS = ["utf-8", "us-ascii", "iso-8859-1", "koi8-r", "shift_jis", "x-bogus", "utf-7", "base64", ""]


@st.composite
def mutated_messages(draw):
    raw = draw(st.sampled_from(SEEDS))
    head, _, body = raw.partition(b"\n\n")
    lines = head.split(b"\n")
    ops = draw(st.lists(st.sampled_from(["truncate", "shuffle", "boundary", "charset", "cte",
                                         "garbage", "drop_sep", "nul"]), max_size=4))
    for op in ops:
        if op == "truncate":
            raw_all = b"\n".join(lines) + b"\n\n" + body
            cut = draw(st.integers(0, len(raw_all)))
            head, _, body = raw_all[:cut].partition(b"\n\n")
            lines = head.split(b"\n")
        elif op == "shuffle":
            random.Random(draw(st.integers(0, 1000))).shuffle(lines)
        elif op == "boundary":
            body = body.replace(b"--", b"-", draw(st.integers(1, 3)))
        elif op == "charset":
            cs = draw(st.sampled_from(CHARSETS)).encode()
            lines = [ln.replace(b"charset=", b"charset=" + cs + b";x=") for ln in lines]
            body = body.replace(b"charset=", b"charset=" + cs + b";x=")
        elif op == "cte":
            lines.append(b"Content-Transfer-Encoding: " + draw(st.sampled_from([b"base64", b"quoted-printable", b"x-uuencode", b"bogus"])))
        elif op == "garbage":
            pos = draw(st.integers(0, len(body)))
            body = body[:pos] + draw(st.binary(min_size=1, max_size=200)) + body[pos:]
        elif op == "drop_sep":
            return b"\n".join(lines) + b"\n" + body
        elif op == "nul":
            body = body.replace(b" ", b"\x00", 5)
    return b"\n".join(lines) + b"\n\n" + body


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_messages())
def test_mutated_real_messages_never_raise(raw):
    _tokenizer_accepts(parse_message(raw))


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=400) | st.text(alphabet="QUJDRA+/=\r\n \t*-_", max_size=400).map(str.encode))
def test_lenient_base64_skips_exactly_the_bytes_outside_the_alphabet(text):
    """RFC 2045 §6.8: a decoder ignores characters outside base64's alphabet. The decoder drops
    them with bytes.translate; its definition is the regular expression below."""
    from spamkit.parse.decoding import _lenient_b64
    clean = re.sub(rb"[^A-Za-z0-9+/]", b"", text)
    defects = []
    expected = clean[:-1] if len(clean) % 4 == 1 else clean
    assert _lenient_b64(text, defects) == binascii.a2b_base64(expected + b"=" * (-len(expected) % 4))
    assert ("base64-invalid" in defects) == (len(clean) % 4 == 1)


def test_ascii_supersets_read_ascii_bytes_as_ascii():
    """decode_bytes decodes ASCII data as ASCII under the codecs of _ASCII_SUPERSETS: each is a
    registry name, and reads every ASCII byte as itself whatever comes before it. ISO-2022-JP
    would read the same bytes as the first 128 characters too, but "ESC $ B" shifts it into
    JIS X 0208 (RFC 1468): it is not a superset, and decodes as itself."""
    import codecs

    from spamkit.parse.decoding import _ASCII_SUPERSETS
    rng = random.Random(5)
    samples = [bytes(range(128)), b"\x1b$B$3$s\x1b(B", b"+AGE-", b"~{<:~}"] + \
              [bytes(rng.randrange(128) for _ in range(rng.randrange(1, 60))) for _ in range(300)]
    for name in _ASCII_SUPERSETS:
        assert codecs.lookup(name).name == name
        for data in samples:
            assert data.decode(name) == data.decode("ascii"), (name, data)
            assert decode_bytes(data, name, []) == data.decode("ascii")
    jis = b"\x1b$B$3$s\x1b(B"                       # "こん" in ISO-2022-JP
    assert decode_bytes(jis, "iso-2022-jp", []) == "こん" != jis.decode("ascii")
    assert decode_bytes(b"+AGE-", "utf-7", []) == "a"
    d = []
    assert decode_bytes("caf\u00e9".encode("cp1252"), "windows-1252", d) == "caf\u00e9" and d == []
