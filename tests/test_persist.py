"""Filter files: round trips, no pickle, clear errors for damaged, foreign and newer files."""

from __future__ import annotations

import hashlib
import io
import json
import zipfile

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spamkit.common.errors import CorpusError, ModelFormatError
from spamkit.filterfile.persist import FORMAT_VERSION, load_filter, read_manifest
from spamkit import SpamFilter, build_filter

from conftest import SAMPLE, compiled_expected

MESSAGES = sorted(SAMPLE.rglob("*.eml"))


@pytest.fixture(scope="module")
def trained():
    f = build_filter(stop_words="english", stem="porter", ngrams=2, min_df=2)
    f.fit([p.read_bytes() for p in MESSAGES], y=[p.parent.name for p in MESSAGES])
    return f


@pytest.mark.parametrize("options", [{}, {"model": "bernoulli"}, {"representation": "tfidf"},
                                     {"hashing": 4096}, {"max_features": 50, "select": "ig"}])
def test_round_trip_gives_identical_predictions(tmp_path, options):
    f = build_filter(**options)
    raws = [p.read_bytes() for p in MESSAGES]
    f.fit(raws, y=[p.parent.name for p in MESSAGES])
    f.save(tmp_path / "m.spamkit")
    g = SpamFilter.load(tmp_path / "m.spamkit")
    np.testing.assert_array_equal(f.predict_proba(raws), g.predict_proba(raws))
    assert g.classes_.tolist() == ["ham", "spam"]


def test_file_holds_no_pickle(tmp_path, trained):
    trained.save(tmp_path / "m.spamkit")
    with zipfile.ZipFile(tmp_path / "m.spamkit") as z:
        names = z.namelist()
        assert names[-1] == "manifest.json"     # last: written once every member's checksum is made
        assert all(n == "manifest.json" or n == "terms.txt" or n.endswith(".npy") for n in names)
        for n in names:
            if n.endswith(".npy"):
                np.load(io.BytesIO(z.read(n)), allow_pickle=False)       # would raise on object arrays
        manifest = json.loads(z.read("manifest.json"))
    assert manifest["format_version"] == FORMAT_VERSION
    assert manifest["analyzer"]["stemmer"] == "porter"
    assert "the" in manifest["analyzer"]["stop_word_list"]


def test_truncated_file(tmp_path, trained):
    path = tmp_path / "m.spamkit"
    trained.save(path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ModelFormatError, match="not a spamkit filter file, or truncated"):
        load_filter(path)


def _rewrite(path, change):
    with zipfile.ZipFile(path) as z:
        members = {n: z.read(n) for n in z.namelist()}
    change(members)
    with zipfile.ZipFile(path, "w") as z:
        for n, data in members.items():
            z.writestr(n, data)


def test_altered_member_fails_checksum(tmp_path, trained):
    path = tmp_path / "m.spamkit"
    trained.save(path)

    def flip(members):
        name = next(n for n in members if n.endswith("feature_count_.npy"))
        data = bytearray(members[name])
        data[-1] ^= 0xFF
        members[name] = bytes(data)

    _rewrite(path, flip)
    with pytest.raises(ModelFormatError, match="fails its checksum"):
        load_filter(path)


def test_newer_version_and_foreign_files(tmp_path, trained):
    path = tmp_path / "m.spamkit"
    trained.save(path)

    def bump(members):
        manifest = json.loads(members["manifest.json"])
        manifest["format_version"] = FORMAT_VERSION + 1
        members["manifest.json"] = json.dumps(manifest).encode()

    _rewrite(path, bump)
    with pytest.raises(ModelFormatError, match=f"format version {FORMAT_VERSION + 1} is not supported"):
        read_manifest(path)
    other = tmp_path / "other.zip"
    with zipfile.ZipFile(other, "w") as z:
        z.writestr("hello.txt", "hi")
    with pytest.raises(ModelFormatError, match="no manifest.json"):
        load_filter(other)
    with pytest.raises(ModelFormatError, match="no such filter file"):
        load_filter(tmp_path / "missing.spamkit")
    pickle_file = tmp_path / "model.pkl"
    pickle_file.write_bytes(b"\x80\x04\x95")
    with pytest.raises(ModelFormatError, match="not a spamkit filter file"):
        load_filter(pickle_file)


def test_save_is_atomic_and_keeps_old_file_on_failure(tmp_path, trained, monkeypatch):
    path = tmp_path / "m.spamkit"
    trained.save(path)
    before = path.read_bytes()
    import spamkit.common.durable as durable

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(durable.os, "fsync", boom)
    from spamkit.common.errors import OutputError
    with pytest.raises(OutputError, match=r"cannot write .*m\.spamkit: disk full"):   # names the file
        trained.save(path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["m.spamkit"]       # no temporary left behind


@pytest.mark.parametrize("bad", ["two\nlines", "carriage\rreturn", "\n", "end\n"])
def test_a_term_with_a_line_break_is_refused_not_split(bad, tmp_path):
    # terms.txt holds one term per line; the check is made on the joined text, so it must still
    # see a break anywhere in any term (and not be fooled by an empty term)
    f = SpamFilter().fit([b"Subject: a\n\ncheap pills", b"Subject: b\n\nlunch today"], y=["spam", "ham"])
    f.save(tmp_path / "ok.spamkit")
    f.vectorizer.terms_ = list(f.vectorizer.terms_[:-1]) + [bad]
    with pytest.raises(ModelFormatError, match="line break"):
        f.save(tmp_path / "bad.spamkit")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(max_size=20) | st.text(min_size=120, max_size=400), max_size=30))
def test_the_compiled_term_keys_are_blake2b(terms):
    """speedups.term_keys (BLAKE2b from RFC 7693, in C) against hashlib: terms of one block,
    exactly one, and several (128 bytes of UTF-8 and more), and every kind of character."""
    import hashlib
    from spamkit.common.compiled import speedups
    from spamkit.filterfile.termindex import term_keys
    expected = [int.from_bytes(hashlib.blake2b(t.encode("utf-8"), digest_size=8).digest(), "little") for t in terms]
    if speedups() is not None or compiled_expected():
        assert np.frombuffer(speedups().term_keys(terms), dtype="<u8").tolist() == expected
    assert term_keys(terms).tolist() == expected


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 2 ** 64 - 1) | st.sampled_from([0, 1, 2 ** 11, 2 ** 33, 2 ** 64 - 1]), max_size=300),
       st.integers(0, 60))
def test_the_compiled_key_order_is_a_stable_argsort(keys, shift):
    """speedups.key_order (an LSD radix sort, 11 bits a pass, passes of one digit skipped) against
    np.argsort(kind="stable"): duplicates keep their order; keys that differ only above or
    below some bit (a shift) leave some passes with one digit."""
    from spamkit.common.compiled import speedups
    from spamkit.filterfile.termindex import key_order
    arr = np.array([(k << shift) & (2 ** 64 - 1) for k in keys], dtype=np.uint64)
    expected = np.argsort(arr, kind="stable").tolist()
    if speedups() is not None or compiled_expected():
        assert np.frombuffer(speedups().key_order(arr), dtype=np.int64).tolist() == expected
    assert key_order(arr).tolist() == expected


def test_a_term_without_utf8_is_refused_as_before():
    from spamkit.common.compiled import speedups
    from spamkit.filterfile.termindex import term_keys
    if speedups() is not None:
        assert speedups().term_keys(["a", "\ud800"]) is None and speedups().term_keys(["a", 1]) is None
    with pytest.raises(UnicodeEncodeError):
        term_keys(["a", "\ud800"])


@given(st.lists(st.text(max_size=12), max_size=60), st.sampled_from([1, 3, 16384]))
@settings(max_examples=100, deadline=None)
def test_lines_made_ready_are_the_text_member_save_would_write(lines, at_a_time):
    """prepare_lines (a few lines at a time: never the whole text) against its definition, the
    UTF-8 of the lines joined by line feeds and its SHA-256; None for a line break or a lone
    surrogate in an entry, which saving refuses."""
    import zlib
    from spamkit.filterfile import termindex
    old = termindex.LINES_AT_A_TIME
    termindex.LINES_AT_A_TIME = at_a_time
    try:
        ready = termindex.prepare_lines(lines)
    finally:
        termindex.LINES_AT_A_TIME = old
    if any(("\n" in t or "\r" in t or any(0xD800 <= ord(c) <= 0xDFFF for c in t)) for t in lines):
        assert ready is None
        return
    data = "\n".join(lines).encode("utf-8")
    inflate = zlib.decompressobj(-15)
    got = b"".join(inflate.decompress(part) for part in ready.packed.parts) + inflate.flush()
    assert got == data and ready.packed.size == len(data) and ready.packed.crc == zlib.crc32(data)
    assert ready.sha256 == hashlib.sha256(data).hexdigest() and ready.count == len(lines)


def test_the_term_index_keys_are_term_hash_and_stored_uncompressed(tmp_path):
    from spamkit.filterfile.manifest import term_hash
    from spamkit.filterfile.termindex import term_hash_index

    terms = ["viagra", "ünïcode", "", "x" * 128, "x" * 300, "subject:free"]
    keys, columns = term_hash_index(terms)
    assert [int(k) for k in keys] == sorted(term_hash(t) for t in terms)
    assert [terms[c] for c in columns] == sorted(terms, key=term_hash)
    f = SpamFilter().fit([b"Subject: a\n\ncheap pills", b"Subject: b\n\nlunch today"], y=["spam", "ham"])
    f.save(tmp_path / "m.spamkit")
    with zipfile.ZipFile(tmp_path / "m.spamkit") as z:
        methods = {i.filename: i.compress_type for i in z.infolist()}
    assert methods["arrays/filter.term_hash.npy"] == zipfile.ZIP_STORED
    assert methods["terms.txt"] == zipfile.ZIP_DEFLATED


def test_the_term_index_made_during_fit_is_the_one_save_would_make(tmp_path, monkeypatch):
    # fit hashes the vocabulary in a thread while the model fits; save uses that index while the
    # vocabulary is the one it was made for, and makes it again after the vocabulary grew
    import threading
    from spamkit.filterfile import persist
    f = build_filter(**{"model": "fisher-nb", "tokens": "mail"})
    before = threading.active_count()
    f.fit([p.read_bytes() for p in MESSAGES], y=[p.parent.name for p in MESSAGES])
    assert threading.active_count() == before                       # no thread outlives fit
    ready = f._term_index
    terms, index, size = ready.terms, ready.index, ready.size
    assert terms is f.vectorizer.terms_ and size == len(terms) and ready.serves(f.vectorizer.terms_)
    assert ready.member is not None and ready.member.count == size
    expected = persist.term_hash_index(list(terms))
    assert np.array_equal(index[0], expected[0]) and np.array_equal(index[1], expected[1])
    made = []
    real = persist.term_hash_index
    monkeypatch.setattr(persist, "term_hash_index", lambda t: made.append(len(t)) or real(t))
    f.save(tmp_path / "a.spamkit")
    assert made == []                                               # the index made during fit
    f.vectorizer.terms_.append("a-term-learned-later")                # (the file would not load: no count)
    f.save(tmp_path / "b.spamkit")
    assert made == [size + 1]                                       # made again for the grown list
    f.vectorizer.terms_.pop()
    loaded = SpamFilter.load(tmp_path / "a.spamkit")
    assert loaded.verdict(MESSAGES[0].read_bytes()) == f.verdict(MESSAGES[0].read_bytes())
    with zipfile.ZipFile(tmp_path / "a.spamkit") as z:
        stored = np.load(io.BytesIO(z.read("arrays/filter.term_hash.npy")))
    assert np.array_equal(stored, expected[0])


def test_a_fit_that_fails_leaves_no_thread_behind():
    import threading
    f = build_filter(**{"model": "fisher-nb", "tokens": "mail"})
    before = threading.active_count()
    with pytest.raises(CorpusError, match="at least 2 classes"):
        f.fit([p.read_bytes() for p in MESSAGES[:3]], y=["ham"] * 3)   # one class: the fit refuses
    assert threading.active_count() == before


def test_filter_files_are_deflated_by_isal_and_read_back_by_zipfile(tmp_path, trained, monkeypatch):
    """Filter files are written by spamkit.filterfile.ziparchive (members deflated by ISA-L): zipfile reads
    them, every member's CRC holds, and the filter scores as before; one too large for a zip
    without ZIP64 is written by zipfile instead, to the same members."""
    from isal import isal_zlib
    from spamkit.filterfile import persist, ziparchive

    made = []
    real = ziparchive.deflater
    monkeypatch.setattr(ziparchive, "deflater", lambda *a: made.append(real(*a)) or made[-1])
    raw = [p.read_bytes() for p in MESSAGES[:20]]
    assert trained._term_index.member is not None                  # terms.txt made ready while it was fitted
    contents = {}
    for how in ("isal", "zipfile"):
        if how == "zipfile":
            monkeypatch.setattr(persist, "fits", lambda sizes: False)
        made.clear()
        trained.save(tmp_path / f"{how}.spamkit")
        assert [type(c) for c in made] == ([type(isal_zlib.compressobj(1, isal_zlib.DEFLATED, -15))] * len(made)
                                           if how == "isal" else [])
        assert made or how == "zipfile"
        with zipfile.ZipFile(tmp_path / f"{how}.spamkit") as z:
            assert z.testzip() is None
            methods = {i.filename: i.compress_type for i in z.infolist()}
            contents[how] = {name: z.read(name) for name in z.namelist() if name != "manifest.json"}
        assert methods["arrays/filter.term_hash.npy"] == zipfile.ZIP_STORED
        assert methods["terms.txt"] == methods["manifest.json"] == zipfile.ZIP_DEFLATED
        again = SpamFilter.load(tmp_path / f"{how}.spamkit")
        assert np.array_equal(again.predict_proba(raw), trained.predict_proba(raw))
    assert contents["isal"] == contents["zipfile"]


@given(st.lists(st.tuples(st.text(alphabet="abcé/._", min_size=1, max_size=20), st.binary(max_size=3000),
                          st.booleans()), max_size=8, unique_by=lambda m: m[0]),
       st.lists(st.booleans(), min_size=8, max_size=8))
@settings(max_examples=100, deadline=None)
def test_a_zip_written_member_by_member_is_what_zipfile_reads(members, packed):
    """Members written through ZipWriter.member in pieces, or made ready by pack() and added
    whole (add_packed), deflated or stored: zipfile reads the names, bytes and methods back."""
    from spamkit.filterfile.ziparchive import ZipWriter, pack
    buffer = io.BytesIO()
    with ZipWriter(buffer) as z:
        for (name, data, deflate), ready in zip(members, packed):
            pieces = [data[start:start + 700] for start in range(0, len(data), 700)]   # as np.save writes
            if ready:
                digest = hashlib.sha256()
                z.add_packed(name, pack(pieces, deflate, digest))
                assert digest.digest() == hashlib.sha256(data).digest()
                continue
            with z.member(name, deflate) as out:
                for piece in pieces:
                    out.write(piece)
    with zipfile.ZipFile(buffer) as r:
        assert r.testzip() is None
        assert [(i.filename, r.read(i), i.compress_type == zipfile.ZIP_DEFLATED) for i in r.infolist()] == members
        assert all((i.external_attr >> 16) & 0o777 == 0o600 for i in r.infolist())


def test_a_zip_too_large_for_its_32_bit_fields_is_refused_not_written_wrong():
    from spamkit.filterfile.ziparchive import LIMIT, fits
    assert fits([1 << 20] * 3) and not fits([LIMIT - 10]) and not fits([1 << 31, 1 << 31])
