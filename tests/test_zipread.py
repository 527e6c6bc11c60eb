"""spamkit's zip reader (spamkit.filterfile.zipread) against Python's zipfile, the oracle: the
same members and bytes from the archives zipfile writes (stored, deflated, empty, ZIP64), read
whole or in pieces, from memory or from a file; and on damaged archives, an ArchiveError that
says what is wrong, never another exception and never wrong bytes."""

from __future__ import annotations

import io
import random
import zipfile
import zlib

import pytest

from spamkit.filterfile.zipread import Archive, ArchiveError, Encrypted, UnknownMethod


def archive_bytes(members: dict[str, tuple[bytes, int]], **kwargs) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", **kwargs) as z:
        for name, (data, method) in members.items():
            z.writestr(name, data, compress_type=method)
    return buffer.getvalue()


def contents(rng: random.Random) -> dict[str, tuple[bytes, int]]:
    words = [rng.randbytes(rng.randrange(1, 9)) for _ in range(50)]
    members = {}
    for i in range(rng.randrange(1, 8)):
        size = rng.choice([0, 1, 100, 5_000, 300_000])
        data = b"".join(rng.choice(words) for _ in range(size // 4))[:size] if rng.random() < 0.7 else rng.randbytes(size)
        members[f"arrays/m{i}.npy" if i else "manifest.json"] = (data, rng.choice([zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED]))
    return members


def read_all(archive: Archive, name: str, piece: int) -> bytes:
    with archive.open(name) as reader:
        out = []
        while True:
            chunk = reader.read(piece)
            if not chunk:
                return b"".join(out)
            assert len(chunk) <= piece
            out.append(bytes(chunk))


@pytest.mark.parametrize("seed", range(12))
def test_every_member_reads_back_as_zipfile_reads_it(seed, tmp_path):
    rng = random.Random(seed)
    members = contents(rng)
    data = archive_bytes(members)
    path = tmp_path / "a.zip"
    path.write_bytes(data)
    with zipfile.ZipFile(path) as oracle:
        expected = {info.filename: (oracle.read(info), info.file_size, info.compress_type, info.CRC)
                    for info in oracle.infolist()}
    for source in (data, bytearray(data), memoryview(data), open(path, "rb")):
        with Archive(source, owns_file=True) as archive:
            assert archive.namelist() == list(expected)
            for info in archive.infolist():
                want, size, method, crc = expected[info.filename]
                assert (info.file_size, info.compress_type, info.CRC) == (size, method, crc)
                assert bytes(archive.read(info.filename)) == want
                assert read_all(archive, info.filename, rng.choice([1, 7, 4096, 1 << 20])) == want


def test_zip64_records_and_extra_fields_are_read(monkeypatch):
    # zipfile writes ZIP64 past 2 GiB; with its limit lowered it writes them for small members
    # too: ZIP64 extra fields for sizes and offsets, the ZIP64 end record and its locator
    members = {f"m{i}": (bytes([i]) * (300 + 50 * i), zipfile.ZIP_DEFLATED if i % 2 else zipfile.ZIP_STORED)
               for i in range(6)}
    monkeypatch.setattr(zipfile, "ZIP64_LIMIT", 200)
    monkeypatch.setattr(zipfile, "ZIP_FILECOUNT_LIMIT", 3)
    data = archive_bytes(members)
    monkeypatch.undo()
    assert b"PK\x06\x06" in data and b"PK\x06\x07" in data                 # the ZIP64 records are there
    archive = Archive(data)
    assert {name: bytes(archive.read(name)) for name in archive.namelist()} == {n: d for n, (d, _) in members.items()}


def test_a_stored_member_read_from_memory_is_a_view_not_a_copy():
    data = archive_bytes({"big": (b"x" * 100_000, zipfile.ZIP_STORED)})
    piece = Archive(data).read("big")
    assert isinstance(piece, memoryview) and piece.obj is data and len(piece) == 100_000


def test_what_a_filter_file_never_holds_is_refused_by_name():
    data = bytearray(archive_bytes({"a": (b"hello", zipfile.ZIP_STORED), "b": (b"world" * 9, zipfile.ZIP_DEFLATED)}))
    central = data.find(b"PK\x01\x02")
    encrypted = bytearray(data)
    encrypted[central + 8] |= 1
    with pytest.raises(Encrypted, match="member a is encrypted"):
        Archive(bytes(encrypted)).read("a")
    unknown = bytearray(data)
    unknown[central + 10] = 14                                              # LZMA
    with pytest.raises(UnknownMethod, match="member a is compressed by method 14"):
        Archive(bytes(unknown)).read("a")
    twice = bytearray(data)
    second = twice.find(b"PK\x01\x02", central + 4)
    twice[second + 46] = ord("a")                                           # "b" renamed "a"
    with pytest.raises(ArchiveError, match="listed twice"):
        Archive(bytes(twice))
    overlapping = bytearray(data)
    overlapping[second + 20:second + 24] = (10**6).to_bytes(4, "little")   # b's packed size past the directory
    with pytest.raises(ArchiveError, match="overlaps"):
        Archive(bytes(overlapping)).read("b")
    for junk in (b"", b"PK", b"not a zip file at all" * 10):
        with pytest.raises(ArchiveError, match="no end of central directory"):
            Archive(junk)


def test_damaged_archives_give_an_archive_error_or_the_right_bytes():
    rng = random.Random(7)
    members = {"manifest.json": (b'{"format": "spamkit-filter"}' * 20, zipfile.ZIP_DEFLATED),
               "arrays/a.npy": (rng.randbytes(3000), zipfile.ZIP_STORED),
               "terms.txt": (b"\n".join(b"term%d" % i for i in range(800)), zipfile.ZIP_DEFLATED)}
    data = archive_bytes(members)
    damaged = [data[:cut] for cut in range(0, len(data), 37)]
    for _ in range(400):
        flipped = bytearray(data)
        for _ in range(rng.randrange(1, 4)):
            flipped[rng.randrange(len(flipped))] ^= 1 << rng.randrange(8)
        damaged.append(bytes(flipped))
    outcomes = {"refused": 0, "read": 0}
    for blob in damaged:
        try:
            archive = Archive(blob)
            got = {name: bytes(archive.read(name)) for name in archive.namelist()}
        except ArchiveError:
            outcomes["refused"] += 1
            continue
        outcomes["read"] += 1
        # what is read is what was written: a flip the CRC-32 cannot see is in no member's bytes
        for name, value in got.items():
            assert name in members and value == members[name][0] or zlib.crc32(value) == archive.getinfo(name).CRC
    assert outcomes["refused"] > 0 and outcomes["refused"] + outcomes["read"] == len(damaged)
