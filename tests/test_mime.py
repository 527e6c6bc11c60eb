"""The byte-level MIME parser: RFC 2231 by hand, hostile structure, and the stdlib as an oracle.

The oracle: messages built by the standard library's own generator (``email.mime``),
well formed by construction, with nested multiparts, every transfer encoding, many
charsets and RFC 2047/2231 headers. spamkit's parser must find exactly the text the
generator put in, in order.
"""

from __future__ import annotations

import base64
import email.policy
import quopri
import time
from email.header import Header
from email.mime.application import MIMEApplication
from email.mime.message import MIMEMessage
from email.mime.multipart import MIMEMultipart
from email.mime.nonmultipart import MIMENonMultipart

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spamkit.parse.message import MAX_DEPTH, MAX_PARTS, parse_message
from spamkit.parse import mime
from spamkit.parse.mime import parameters, parse_part, split_multipart

from hostile import CRASHERS, big_html, nested_multipart, unclosed_html


# ----------------------------------------------------------------- RFC 2231 by hand

def test_rfc2231_charset_and_language_are_decoded():
    # RFC 2231 §4: charset'language'percent-encoded value
    assert parameters("text/plain; charset*=utf-8''iso-8859-1") == {"charset": "iso-8859-1"}
    assert parameters("text/plain; charset*=us-ascii'en-us'utf-8") == {"charset": "utf-8"}
    # §3 continuations, sections joined in number order whatever their order in the field
    value = "application/x; title*1=\" world\"; title*0=\"hello\""
    assert parameters(value) == {"title": "hello world"}
    # §4.1 mixed: encoded first section carries the charset for the encoded ones
    value = "application/pdf; name*0*=iso-8859-1''caf%E9; name*1=-menu; name*2*=%2Epdf"
    assert parameters(value) == {"name": "café-menu.pdf"}


def test_rfc2231_filename_reaches_the_attachment_record():
    raw = (b"MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=B\n\n--B\n"
           b"Content-Type: text/plain\n\nsee attached\n--B\n"
           b"Content-Type: application/pdf\nContent-Disposition: attachment;\n"
           b" filename*0*=utf-8''%E2%82%AC; filename*1=100.pdf\nContent-Transfer-Encoding: base64\n\n"
           b"aGVsbG8=\n--B--\n")
    m = parse_message(raw)
    assert m.body.strip() == "see attached"
    assert [(a.filename, a.content_type, a.size) for a in m.attachments] == [("€100.pdf", "application/pdf", 5)]


def test_rfc2231_malformed_values_are_recovered():
    # an unknown charset label and an invalid percent escape: kept as the bytes say (Latin-1)
    assert parameters("text/plain; charset*=%ZZ''%FF%") == {"charset": "\xff%"}
    m = parse_message(b"Content-Type: text/plain; charset*=utf-8''x\n\nhello there\n")
    assert m.body == "hello there\n" and "charset-unknown:x" in m.defects


def test_quoted_boundary_with_semicolon_and_parameter_limits():
    assert parameters('multipart/mixed; boundary="a;b=c"; charset=x') == {"boundary": "a;b=c", "charset": "x"}
    many = "text/plain" + "".join(f"; a{i}=b" for i in range(100_000))
    start = time.process_time()
    params = parameters(many)
    assert len(params) == 64 and time.process_time() - start < 1.0


# ----------------------------------------------------------------- structure

def test_delimiters_follow_rfc2046():
    raw = (b"Content-Type: multipart/mixed; boundary=XY\n\npreamble\n--XYZ not a delimiter\n"
           b"--XY  \t\nContent-Type: text/plain\n\nfirst\n--XY\n\nsecond\r\n--XY--\nepilogue\n")
    root = parse_part(raw, 0, len(raw))
    spans, defects = split_multipart(raw, root, "XY")
    assert [raw[a:b] for a, b in spans] == [b"Content-Type: text/plain\n\nfirst", b"\nsecond"]
    assert defects == []
    spans, defects = split_multipart(raw[:raw.index(b"--XY--")], parse_part(raw, 0, raw.index(b"--XY--")), "XY")
    assert defects == ["mime:CloseBoundaryNotFoundDefect"]


def test_nesting_is_walked_without_recursion_and_cut_at_max_depth():
    raw = nested_multipart(100_000)                 # 6 MB; the standard library recursed on 1,000
    start = time.process_time()
    m = parse_message(raw)
    assert "too-deep" in m.defects and time.process_time() - start < 5
    shallow = parse_message(nested_multipart(MAX_DEPTH - 2))
    assert shallow.body.strip() == "the innermost words" and "too-deep" not in shallow.defects


def test_part_count_is_bounded():
    from hostile import many_parts
    m = parse_message(many_parts(5 * MAX_PARTS))
    assert "too-many-parts" in m.defects
    assert m.body.count("part ") == MAX_PARTS - 1     # the root is the first part visited


@pytest.mark.parametrize("name,raw", CRASHERS, ids=[c[0] for c in CRASHERS])
def test_crashers_parse_quickly(name, raw):
    start = time.process_time()
    parse_message(raw)
    assert time.process_time() - start < 1.0


def test_html_to_text_is_linear():
    # 16x the input must cost well under 16^2/4 = 64x the time (quadratic would be 256x)
    def cost(make, size):
        raw = make(size)
        best = float("inf")
        for _ in range(3):
            start = time.process_time()
            parse_message(raw)
            best = min(best, time.process_time() - start)
        return max(best, 1e-4)

    for make in (big_html, unclosed_html):
        assert cost(make, 1_000_000) / cost(make, 62_500) < 64


# ----------------------------------------------------------------- the stdlib generator as oracle

CHARSETS = ["utf-8", "iso-8859-1", "iso-8859-15", "windows-1251", "koi8-r", "shift_jis", "gb2312", "big5",
            "euc-kr", "iso-8859-7"]
WORDS = st.text(alphabet=st.characters(codec="utf-8", categories=("L", "N")), min_size=1, max_size=12)


@st.composite
def leaf_texts(draw):
    charset = draw(st.sampled_from(CHARSETS))
    words = draw(st.lists(WORDS, min_size=1, max_size=30))
    text = " ".join(words)
    try:
        data = text.encode(charset)
    except UnicodeError:
        charset, data = "utf-8", text.encode("utf-8")
    cte = draw(st.sampled_from(["base64", "quoted-printable", "8bit"]))
    payload = {"base64": lambda: base64.encodebytes(data).decode("ascii"),
               "quoted-printable": lambda: quopri.encodestring(data).decode("ascii"),
               "8bit": lambda: data.decode("ascii", "surrogateescape")}[cte]()
    return text, charset, cte, payload


@st.composite
def trees(draw, depth=0):
    """(stdlib message, [texts in reading order])."""
    kind = draw(st.sampled_from(["leaf", "leaf", "mixed", "message", "attachment"] if depth < 6 else ["leaf"]))
    if kind == "leaf":
        text, charset, cte, payload = draw(leaf_texts())
        part = MIMENonMultipart("text", "plain", charset=charset)
        part["Content-Transfer-Encoding"] = cte
        part.set_payload(payload)
        return part, [text]
    if kind == "attachment":
        part = MIMEApplication(draw(st.binary(max_size=200)), "octet-stream")
        name = draw(WORDS)
        part.add_header("Content-Disposition", "attachment", filename=("utf-8", "", name + ".bin"))
        return part, []
    if kind == "message":
        inner, texts = draw(trees(depth + 1))
        subject = draw(WORDS)
        inner["Subject"] = Header(subject, "utf-8")
        return MIMEMessage(inner), [subject] + texts
    container = MIMEMultipart("mixed")
    texts: list[str] = []
    for _ in range(draw(st.integers(1, 4))):
        child, child_texts = draw(trees(depth + 1))
        container.attach(child)
        texts.extend(child_texts)
    return container, texts


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trees(), WORDS, st.booleans())
def test_generated_messages_give_back_their_text(tree, subject, crlf):
    msg, texts = tree
    msg["Subject"] = Header(subject, "utf-8")                     # RFC 2047 encoded word
    raw = msg.as_bytes(policy=email.policy.compat32.clone(linesep="\r\n" if crlf else "\n"))
    m = parse_message(raw)
    assert m.subject == subject
    assert m.body.split() == " ".join(texts).split()
    assert not {d for d in m.defects if d.startswith(("mime", "no-header", "base64", "charset-mismatch"))}


def test_euc_kr_composed_syllables():
    """A syllable outside KS X 1001 is written in EUC-KR as the filler 0xA4D4 and three jamo
    (KS X 1001 annex 3); CP949 (what 'euc-kr' labels usually mean in mail) has its own code."""
    from spamkit.parse.decoding import decode_bytes
    for codec in ("euc_kr", "cp949"):
        defects = []
        assert decode_bytes("췺 한국어".encode(codec), "euc-kr", defects) == "췺 한국어" and not defects


# ----------------------------------------------------------------- the fast header path

HEADER_LINES = st.sampled_from([
    "Subject: hello", "From: a@example.org", "X-Empty:", "X-Blank: \t", ":no name", "Received: from x",
    " continued", "\tcontinued", "  ", "From a@b Sat Jan 1", "not a field", "Caf\xe9: x", "X: a\rb",
    "X-Long: " + "a" * 70, "Subject: =?utf-8?B?w6k=?=", "", "\r"])


@settings(max_examples=2000, deadline=None)
@given(st.lists(HEADER_LINES, max_size=12), st.sampled_from(["\n", "\r\n"]), st.booleans(),
       st.sampled_from(["", "body\n"]))
def test_fast_header_path_equals_the_line_loop(lines, eol, envelope, body):
    # parse_part reads well-formed blocks with two regular-expression scans; every block must
    # give what the line-by-line loop (the definition, with every defect) gives
    from spamkit.parse.mime import _parse_part_lines
    raw = (eol.join(lines) + eol + eol + body).encode("latin-1")
    for start in (0, min(3, len(raw))):
        fast = parse_part(raw, start, len(raw), envelope=envelope)
        slow = _parse_part_lines(raw, start, len(raw), "text/plain", envelope)
        assert (fast.headers, fast.start, fast.end, fast.defects) == (slow.headers, slow.start, slow.end, slow.defects)
        for stop in (len(raw), len(raw) - 1, len(raw) // 2):
            for limits in ((mime.MAX_FIELD_CHARS, mime.MAX_FIELDS), (40, 3)):
                _compiled_block_is_its_definition(raw, start, stop, *limits)


def _compiled_block_is_its_definition(raw: bytes, start: int, stop: int, max_chars: int, max_fields: int) -> None:
    """speedups.header_block gives what _well_formed_block_python (two regular expressions, its
    definition) gives on raw[start:stop] under these limits."""
    if mime._speedups is None:
        return
    saved = mime.MAX_FIELD_CHARS, mime.MAX_FIELDS
    mime.MAX_FIELD_CHARS, mime.MAX_FIELDS = max_chars, max_fields
    try:
        python = mime._well_formed_block_python(raw, start, stop, "text/plain")
    finally:
        mime.MAX_FIELD_CHARS, mime.MAX_FIELDS = saved
    compiled = mime._speedups.header_block(raw, start, stop, max_chars, max_fields)
    assert compiled is None if python is None else compiled[:2] == (python.headers, python.start)
    if python is not None:                       # the first value of each lower-case name, as get() indexes them
        expected = {}
        for name, value in python.headers:
            expected.setdefault(name.lower(), value)
        assert compiled[2] == expected and list(compiled[2]) == list(expected)


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.sampled_from(["X", "Subject", ":", " ", "\t", "\r", "\n", "\r\n", "a", "\xe9", "From ", "=?x?=",
                                 "\x00", "\x7f"]), max_size=40).map("".join).map(lambda t: t.encode("latin-1")),
       st.integers(0, 5), st.sampled_from([(64 * 1024, 2000), (12, 2), (0, 0)]))
def test_compiled_header_block_is_its_definition_on_any_bytes(raw, start, limits):
    start = min(start, len(raw))
    for stop in (len(raw), len(raw) - 1, start):
        _compiled_block_is_its_definition(raw, start, max(stop, start), *limits)


def test_fast_header_path_keeps_the_limits():
    from spamkit.parse.mime import MAX_FIELD_CHARS, MAX_FIELDS, _parse_part_lines
    for raw in (b"X: " + b"a" * (MAX_FIELD_CHARS + 10) + b"\n\nbody",      # one field past its cut
                b"".join(b"X%d: y\n" % i for i in range(MAX_FIELDS + 5)) + b"\nbody"):
        fast, slow = parse_part(raw, 0, len(raw)), _parse_part_lines(raw, 0, len(raw), "text/plain", False)
        assert (fast.headers, fast.start, fast.defects) == (slow.headers, slow.start, slow.defects)
        assert slow.defects == ["header-truncated"] or len(slow.headers[0][1]) <= MAX_FIELD_CHARS  # cut, as before


@pytest.mark.slow
def test_fast_header_path_equals_the_line_loop_on_every_corpus_message(monkeypatch):
    """On every raw message of the shared corpora: the header blocks read by the fast path equal
    the line loop's, and every parameter list read (speedups.mime_parameters where it applies)
    equals the Python definition's, mime._parameters."""
    import glob
    from spamkit.parse import message, mime
    from spamkit.corpus import Corpus
    from spamkit.parse.mime import _parse_part_lines
    from conftest import corpora_root, shared_corpus
    checked, differ = [0, 0], []
    real_parameters, values, params_differ = mime.parameters, [0], []

    def both_parameters(value):
        got = real_parameters(value)
        values[0] += 1
        expected = mime._parameters(value) if ";" in value else {}
        if got != expected or list(got) != list(expected):
            params_differ.append(value[:200])
        return got

    monkeypatch.setattr(mime, "parameters", both_parameters)

    def both(raw, start, end, default_type="text/plain", envelope=False):
        fast = parse_part(raw, start, end, default_type, envelope)
        slow = _parse_part_lines(raw, start, end, default_type, envelope)
        checked[0] += 1
        checked[1] += not slow.defects
        if (fast.headers, fast.start, fast.end, fast.defects) != (slow.headers, slow.start, slow.end, slow.defects):
            differ.append(raw[start:start + 200])
        return fast

    monkeypatch.setattr(message, "parse_part", both)
    paths = [shared_corpus("trec07p-dev/trec07p-dev.tar.gz"), shared_corpus("csdmc2010/csdmc2010.tar.gz")]
    paths += sorted(map(type(paths[0]), glob.glob(str(corpora_root() / "enron-spam" / "enron*.tar.gz"))))
    for path in paths:
        with Corpus(path) as corpus:
            for msg in corpus:
                message.parse_message(msg.raw, msg.kind)
    assert differ == [] and checked[0] > 14_000 and checked[1] > 0.99 * checked[0]
    assert params_differ == [] and values[0] > 20_000


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["text/plain", ";", " ", "\t", "=", '"', "charset", "*", "0", "1", "'", "%E2%82%AC",
                                 "utf-8", "name", "boundary", "a;b", "\\", "x"]), max_size=30),
       st.integers(min_value=0, max_value=300))
def test_remembered_parameters_are_the_computed_ones_and_each_call_gets_its_own(pieces, pad):
    from spamkit.parse import mime
    value = "".join(pieces) + " " * (pad if pad > 250 else 0)      # some over PARAM_CACHE_CHARS
    expected = mime._parameters(value) if ";" in value else {}
    first = parameters(value)
    assert first == expected
    first["intruder"] = "changed"                                   # a caller's change stays its own
    assert parameters(value) == expected


_PARAMETER_PIECES = st.sampled_from(["text/plain", ";", " ", "\t", "\x1c", "\n", "=", '"', '\\', "charset", "CharSet",
                                     "*", "0", "'", "<", ">", "utf-8", "name", "boundary", "a;b", "x", "\xe9", "\udce9"])


@settings(max_examples=2000, deadline=None)
@given(st.lists(_PARAMETER_PIECES, max_size=40), st.sampled_from([64, 2, 1]))
def test_compiled_parameters_are_their_definition(pieces, max_params):
    """speedups.mime_parameters against mime._parameters (quoted strings closed, unclosed and
    ending in a lone backslash, escapes, angle brackets, white space str.strip() removes, repeated
    names, the limit on segments): the same dict, or None where the value is not ASCII or names
    an RFC 2231 section, which the Python definition then decodes."""
    from spamkit.parse import mime
    from spamkit.parse.mime import _speedups
    if _speedups is None:
        pytest.skip("spamkit.common.speedups is not built")
    from unittest import mock
    value = "".join(pieces)
    got = _speedups.mime_parameters(value, max_params)
    with mock.patch.object(mime, "MAX_PARAMS", max_params):
        expected = mime._parameters(value)
    if not value.isascii() or any("*" in name for name in _segment_names(value, max_params)):
        assert got is None or got == expected
        return
    assert got == expected and list(got) == list(expected)


def _segment_names(value: str, max_params: int) -> list:
    from spamkit.parse import mime
    first = value.find(";")
    return [] if first < 0 else [seg.partition("=")[0] for seg in mime._segments(value, first + 1)][:max_params]


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.tuples(
    st.lists(st.sampled_from(["X", "Subject", " ", "\t", "\x1c", "-", "\udce9", "K", "\u212a"]), max_size=4).map("".join),
    st.lists(st.sampled_from(["a", " ", "  ", "\t", "\r", "\n", "\x0b", "\x1f", "=?", "?=", "=?utf-8?q?caf=C3=A9?=",
                              "=?bad?x?y?=", "\udce9", "\xe9", "\u3000", "\x85", "=", "?"]), max_size=8).map("".join)),
    max_size=6))
def test_compiled_top_headers_are_their_definition(fields):
    """speedups.header_pairs gives what the Python comprehension (name.strip().lower(),
    decode_header_value) gives, defects included and in the same order."""
    from spamkit.parse.message import _speedups
    from spamkit.parse.decoding import decode_header_value
    if _speedups is None:
        return
    defects_py, defects_c = [], []
    python = [(name.strip().lower(), decode_header_value(value, defects_py)) for name, value in fields]
    assert _speedups.header_pairs(list(fields), decode_header_value, defects_c) == python
    assert defects_c == defects_py


@settings(max_examples=1000, deadline=None)
@given(st.binary(max_size=40) | st.lists(st.sampled_from([b"QUJD", b"QQ", b"=", b"==", b"\n", b"\r\n", b" ", b"*",
                                                          b"Q", b"QU", b"QUJ", b"\xff", b"-"]), max_size=20).map(b"".join),
       st.sampled_from(["base64", " BASE64 ", "quoted-printable", "7bit", None]), st.integers(1, 50))
def test_attachment_size_without_decoding_is_the_decoded_length(body, encoding, max_part_bytes):
    from spamkit.parse.decoding import payload_bytes, payload_size
    head = b"Content-Type: application/octet-stream\n" + (b"Content-Transfer-Encoding: %s\n" % encoding.encode()
                                                         if encoding else b"") + b"\n"
    raw = head + body
    part = parse_part(raw, 0, len(raw))
    assert payload_size(raw, part, max_part_bytes) == len(payload_bytes(raw, part, [], max_part_bytes))


@settings(max_examples=1000, deadline=None)
@given(st.binary(max_size=300), st.integers(-320, 320), st.integers(-320, 320))
def test_compiled_base64_count_is_the_translate_definition(data, start, stop):
    """speedups.base64_chars(data, start, stop) counts what len(data[start:stop].translate(None,
    _NOT_BASE64)) keeps, slice bounds clipped as Python clips them."""
    from spamkit.parse.message import _speedups
    from spamkit.parse.decoding import _NOT_BASE64
    if _speedups is None:
        return
    assert _speedups.base64_chars(data, start, stop) == len(data[start:stop].translate(None, _NOT_BASE64))
    assert _speedups.base64_chars(bytearray(data), start, stop) == len(data[start:stop].translate(None, _NOT_BASE64))
    assert _speedups.base64_chars(bytes(range(256)) * 2, 0, 512) == 2 * 64


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from([b"%", b"4", b"f", b"F", b"g", b"a", b" ", b"\xc3", b"%2", b"%41", b"%%"]), max_size=20)
       .map(b"".join) | st.binary(max_size=40))
def test_percent_decoding_is_urllibs(data):
    from urllib.parse import unquote_to_bytes

    from spamkit.parse.mime import percent_decoded

    assert percent_decoded(data) == unquote_to_bytes(data)
