"""mbox bodies with ``From `` lines: each writing convention read as mail clients read it.

The red team's finding (issue "Tried as an attacker..."): an mbox whose bodies held unescaped
``From `` lines (also with CRLF) went from 60 messages to 120, one message's head in Junk and
its tail in Unsure, tags inserted mid-body. Here the same kind of mbox is written in each
convention -- unescaped (mboxo as many programs write it, LF and CRLF), mboxrd (``>From``),
mboxcl2 (``Content-Length:``, bodies unescaped, envelope-shaped lines included) -- and filtered
by the real command line; every message must come out once, whole, with its tags on top.
The messages are split again here by their envelope lines, which the test wrote and knows.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from spamkit.cli import cli
from spamkit.corpus import Corpus
from spamkit.corpus.mboxsplit import is_envelope, split_mbox
from spamkit.parse.markup import split_tags

from conftest import SAMPLE

N = 60
#: body lines that start with "From ": text a person wrote, and (for mboxcl2) what looks like an envelope
PROSE = [b"From the desk of the Director of Sales", b"From here on, prices drop", b"From: not a header here",
         b"From "]
FAKE_ENVELOPE = b"From attacker@example.org Mon Apr  9 07:14:25 2007"


def originals(crlf: bool) -> list[bytes]:
    """N real messages of the sample corpus, each with ``From `` lines after blank lines in its body."""
    paths = sorted((SAMPLE / "spam").iterdir())[:N // 2] + sorted((SAMPLE / "ham").iterdir())[:N // 2]
    out = []
    for i, path in enumerate(paths):
        raw = path.read_bytes().replace(b"\r\n", b"\n")
        raw = raw.rstrip(b"\n") + b"\n\n" + PROSE[i % len(PROSE)] + b"\nand more words after it\n"
        if i % 3 == 0:
            raw += b"\n" + PROSE[(i + 1) % len(PROSE)] + b" " + str(i).encode() + b"\n"
        out.append(raw.replace(b"\n", b"\r\n") if crlf else raw)
    return out


def envelope(i: int, nl: bytes) -> bytes:
    return b"From sender-%d@example.org  Mon Apr  9 07:%02d:25 2007%s" % (i, i % 60, nl)


def write_mbox(path: Path, messages: list[bytes], convention: str, nl: bytes = b"\n") -> None:
    parts = []
    for i, raw in enumerate(messages):
        if convention == "mboxrd":                      # every ^>*From gets one more >
            raw = re.sub(rb"(?m)^(>*From )", rb">\1", raw)
        elif convention == "mboxcl2":                   # the body counted; a line that looks like an envelope too
            head, sep, body = raw.partition(nl + nl)
            body += FAKE_ENVELOPE + nl + b"the end" + nl
            raw = head + nl + b"Content-Length: %d" % len(body) + nl + nl + body
        parts.append(envelope(i, nl) + raw + nl)
    path.write_bytes(b"".join(parts))
    return [part[len(envelope(i, nl)):-len(nl)] for i, part in enumerate(parts)]


def stored(path: Path, nl: bytes) -> dict[int, list[bytes]]:
    """The messages of an mbox this test wrote, split at the envelopes it wrote: number -> copies."""
    if not path.exists():
        return {}
    data = path.read_bytes()
    starts = [(m.start(), int(m.group(1))) for m in re.finditer(rb"(?m)^From sender-(\d+)@example\.org  Mon", data)]
    out: dict = {}
    for k, (at, i) in enumerate(starts):
        end = starts[k + 1][0] if k + 1 < len(starts) else len(data)
        chunk = data[at:end]
        assert chunk.endswith(nl), chunk[-40:]
        out.setdefault(i, []).append(chunk[:-len(nl)] if k + 1 < len(starts) or chunk.endswith(nl + nl) else chunk)
    return out


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("model") / "m.spamkit"
    assert CliRunner().invoke(cli, ["train", str(SAMPLE), "-o", str(path)]).exit_code == 0
    return path


@pytest.mark.parametrize("convention, crlf", [("unescaped", False), ("unescaped", True), ("mboxrd", False),
                                              ("mboxrd", True), ("mboxcl2", False), ("mboxcl2", True)])
def test_each_message_comes_out_once_whole_and_tagged(model, tmp_path, convention, crlf):
    nl = b"\r\n" if crlf else b"\n"
    inbox, junk, review = tmp_path / "inbox", tmp_path / "junk", tmp_path / "unsure"
    stored_messages = write_mbox(inbox, originals(crlf), convention, nl)
    # the corpus reader (training, evaluate) sees N messages too
    with Corpus(inbox) as corpus:
        assert len(list(corpus)) == N
    out = CliRunner().invoke(cli, ["filter", str(model), str(inbox), "--tag", "--move-spam-to", str(junk),
                                   "--move-unsure-to", str(review)])
    assert out.exit_code == 0, out.output
    found: dict = {}
    for box in (inbox, junk, review):
        for i, copies in stored(box, nl).items():
            found.setdefault(i, []).extend(copies)
    assert sorted(found) == list(range(N)), "a message is missing"
    for i, copies in found.items():
        assert len(copies) == 1, f"message {i} is there {len(copies)} times"
        fields, message = split_tags(copies[0])
        assert "x-spam-status" in fields, copies[0][:300]
        assert message == envelope(i, nl) + stored_messages[i], i          # whole, and the tags on top only
        assert copies[0].count(b"X-Spam-Status:") == 1


def test_a_wrong_content_length_is_ignored(tmp_path):
    lines = [envelope(0, b"\n"), b"Subject: a\n", b"Content-Length: 5\n", b"\n", b"one line, longer\n", b"\n",
             envelope(1, b"\n"), b"Subject: b\n", b"Content-Length: 999\n", b"\n", b"x\n"]
    got = list(split_mbox(iter(lines)))
    assert [e for e, _, _ in got] == [envelope(0, b"\n"), envelope(1, b"\n")]
    assert got[0][1][-1] == b"one line, longer\n" and got[0][2] == b"\n" and got[1][1][-1] == b"x\n"


def test_envelope_lines_by_their_shape():
    for line in (b"From a@b.example  Mon Apr  9 07:14:25 2007\n", b"From MAILER-DAEMON Fri Jul  8 12:08:34 2011\n",
                 b"From - Tue, 13 Mar 2007 10:00:00 +0000\r\n", b'From "a b"@c.example Sat Jan  3 01:05:34 1996\n',
                 b"From user@host Thu Apr 01 12:00 PST 2010\n"):
        assert is_envelope(line), line
    for line in PROSE + [b"From a@b\n", b"From here to Mon Apr 9\n", b"From: a@b Mon Apr  9 07:14:25 2007\n"]:
        assert not is_envelope(line), line


LINES = st.lists(st.sampled_from([b"\n", b"\r\n", b"x\n", b"Subject: s\n", b"From a\n", b"From ",
                                  FAKE_ENVELOPE + b"\n", b"Content-Length: 0\n", b"Content-Length: 2\n",
                                  b"Content-Length: 4\n", b"y\r\n", b">From b\n", b"no end"]), max_size=40)


@settings(max_examples=400, deadline=None)
@given(LINES)
def test_splitting_keeps_every_byte(lines):
    # lines as a file gives them: only the last may lack its line end
    lines = [line for k, line in enumerate(lines) if line.endswith(b"\n") or k == len(lines) - 1]
    chunks = list(split_mbox(iter(lines)))
    assert b"".join((e or b"") + b"".join(m) + s for e, m, s in chunks) == b"".join(lines)
    assert all(e is not None for e, _, _ in chunks[1:])
