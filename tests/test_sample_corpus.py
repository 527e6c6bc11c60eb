"""The bundled sample corpus: reproducible from its script, and as varied as the issue asks."""

from __future__ import annotations

import importlib.util
from collections import Counter

from spamkit.parse.message import parse_message

from conftest import REPO, SAMPLE


def _generator():
    spec = importlib.util.spec_from_file_location("make_sample_corpus", REPO / "scripts" / "make_sample_corpus.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_sample_is_what_the_script_writes(tmp_path):
    _generator().generate(tmp_path / "sample")
    fresh = {p.relative_to(tmp_path / "sample"): p.read_bytes() for p in (tmp_path / "sample").rglob("*.eml")}
    committed = {p.relative_to(SAMPLE): p.read_bytes() for p in SAMPLE.rglob("*.eml")}
    assert fresh.keys() == committed.keys()
    assert [k for k in fresh if fresh[k] != committed[k]] == []


def test_sample_has_the_variety_of_real_mail():
    files = sorted(SAMPLE.rglob("*.eml"))
    assert len(files) >= 200
    labels = Counter(p.parent.name for p in files)
    assert labels["ham"] >= 80 and labels["spam"] >= 80
    seen = Counter()
    for p in files:
        raw = p.read_bytes()
        lower = raw.lower()
        m = parse_message(raw)
        seen["alternative"] += b"multipart/alternative" in lower
        seen["html-only"] += b"content-type: text/html" in lower.split(b"\n\n", 1)[0]
        seen["base64"] += b"content-transfer-encoding: base64" in lower
        seen["quoted-printable"] += b"content-transfer-encoding: quoted-printable" in lower
        seen["non-utf8"] += any(cs in lower for cs in (b"iso-8859-1", b"koi8-r", b"shift_jis", b"windows-1252"))
        seen["attachment"] += bool(m.attachments)
        seen["malformed"] += "no-header-separator" in m.defects
        seen["rfc2047"] += b"=?iso-8859-1?b?" in lower
    assert all(seen[k] >= 5 for k in ("alternative", "html-only", "base64", "quoted-printable",
                                      "non-utf8", "attachment", "malformed", "rfc2047")), seen
