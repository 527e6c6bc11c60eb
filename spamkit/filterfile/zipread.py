"""A filter file's zip archive, read with ``zlib`` alone: the container both routes open (the
full loader, :func:`spamkit.filterfile.persist.load_filter`, and pipe mode's fast path,
:mod:`spamkit.mail.lean`) through :func:`spamkit.filterfile.manifest.open_zip`.

:mod:`zipfile` reads any zip archive, and importing it imports ``shutil``, ``threading``,
``bz2``, ``lzma``, ``struct``, ``importlib.util`` and ``pathlib``: about 10 ms of every one-shot
``spamkit filter MODEL -`` on the project's machine, for a file of a dozen members. This module
reads what a filter file is made of -- members stored or deflated, and the ZIP64 records with
which :mod:`zipfile` writes a file past 4 GiB -- and refuses by name what a filter file never
holds: encrypted members, other compression methods, archives split over several disks,
members whose bytes overlap another's or the central directory, a name listed twice. Over a
file's bytes held in memory (``Archive(data)``), a stored member is read as a view of them, not
copied. A member's CRC-32 is checked when it has been read to its end, unless the caller checks
a stronger digest of it (``check_crc=False``: the manifest's SHA-256 of each member).

Source: PKWARE, "APPNOTE.TXT - .ZIP File Format Specification", version 6.3.10: 4.3.7 (local
file header), 4.3.12 (central directory file header), 4.3.14-4.3.16 (ZIP64 end of central
directory record and locator, end of central directory record), 4.4.4 (general purpose bit
flag: bit 0 encrypted, bit 11 UTF-8 names), 4.5.3 (ZIP64 extended information extra field).

>>> import io, zipfile
>>> buffer = io.BytesIO()
>>> with zipfile.ZipFile(buffer, "w") as z:
...     z.writestr("a.txt", b"spam " * 100, compress_type=zipfile.ZIP_DEFLATED)
...     z.writestr("b.txt", b"eggs")
>>> archive = Archive(buffer.getvalue())
>>> [(m.filename, m.file_size, m.compress_type) for m in archive.infolist()]
[('a.txt', 500, 8), ('b.txt', 4, 0)]
>>> archive.read("a.txt") == b"spam " * 100, bytes(archive.read("b.txt"))
(True, b'eggs')
>>> Archive(buffer.getvalue()[:-1])
Traceback (most recent call last):
spamkit.filterfile.zipread.ArchiveError: no end of central directory record (not a zip archive, or truncated)
"""

from __future__ import annotations

import zlib

TYPE_CHECKING = False                  # typing's names for the checker only (pipe mode's start-up)
if TYPE_CHECKING:
    from typing import BinaryIO

#: compression methods read here (APPNOTE 4.4.5)
STORED, DEFLATED = 0, 8
_EOCD, _EOCD64, _LOCATOR64 = b"PK\x05\x06", b"PK\x06\x06", b"PK\x06\x07"
_CENTRAL, _LOCAL = b"PK\x01\x02", b"PK\x03\x04"
#: the end record's fixed part, and its longest comment
_EOCD_BYTES, _MAX_COMMENT = 22, 0xFFFF
_FULL16, _FULL32 = 0xFFFF, 0xFFFFFFFF


class ArchiveError(ValueError):
    """The bytes are not a zip archive, or not one this reader reads (the message says why)."""


class Encrypted(ArchiveError):
    """An encrypted member (a filter file's never are)."""


class UnknownMethod(ArchiveError):
    """A member compressed by a method other than stored or deflated."""


def _u(data, at: int, size: int) -> int:
    return int.from_bytes(data[at:at + size], "little")


class Member:
    """One member as the central directory describes it (the names are :class:`zipfile.ZipInfo`'s)."""

    __slots__ = ("filename", "file_size", "compress_size", "compress_type", "CRC", "header_offset", "flag_bits",
                 "raw_name", "room")

    def __init__(self, filename: str, raw_name: bytes, file_size: int, compress_size: int, compress_type: int,
                 crc: int, header_offset: int, flag_bits: int):
        self.filename, self.raw_name = filename, raw_name
        self.file_size, self.compress_size, self.compress_type = file_size, compress_size, compress_type
        self.CRC, self.header_offset, self.flag_bits = crc, header_offset, flag_bits
        #: where the next member (or the central directory) starts: this member's bytes end before it
        self.room = 0

    def __repr__(self) -> str:
        return f"<Member {self.filename} {self.file_size} bytes>"


class Archive:
    """A zip archive read from ``source``: its bytes (``bytes``, ``bytearray`` or ``memoryview``)
    or a seekable binary file, which the archive reads from until :meth:`close` (and closes then
    when ``owns_file``). Raises :class:`ArchiveError` for anything it does not read."""

    def __init__(self, source: bytes | bytearray | memoryview | BinaryIO, owns_file: bool = False):
        self._file: BinaryIO | None = None
        self._data: memoryview | None = None
        if isinstance(source, (bytes, bytearray, memoryview)):
            self._data = memoryview(source).cast("B")
            self.size = len(self._data)
        else:
            self._file = source
            self.size = source.seek(0, 2)
        self._owns = owns_file and self._file is not None
        self._members: dict[str, Member] = {}
        try:
            self._read_directory()
        except BaseException:
            self.close()
            raise

    # -------------------------------------------------------------- reading bytes

    def _at(self, offset: int, size: int):
        """Up to ``size`` bytes from ``offset`` (a view of the bytes in memory, no copy)."""
        if self._data is not None:
            return self._data[offset:offset + size]
        if self._file is None:
            raise ArchiveError("the archive is closed")
        self._file.seek(offset)
        return self._file.read(size)

    def exactly(self, offset: int, size: int, what: str):
        """``size`` bytes from ``offset``; :class:`ArchiveError` naming ``what`` if the file ends first."""
        piece = self._at(offset, size)
        if len(piece) != size:
            raise ArchiveError(f"{what} runs past the end of the file (truncated)")
        return piece

    # -------------------------------------------------------------- the directory

    def _read_directory(self) -> None:
        tail_start = max(0, self.size - _EOCD_BYTES - _MAX_COMMENT)
        tail = bytes(self._at(tail_start, self.size - tail_start))
        at = tail.rfind(_EOCD)
        # the record whose comment ends where the file does (a comment may hold the signature too)
        while at >= 0 and not (len(tail) - at >= _EOCD_BYTES and at + _EOCD_BYTES + _u(tail, at + 20, 2) == len(tail)):
            at = tail.rfind(_EOCD, 0, at)
        if at < 0:
            raise ArchiveError("no end of central directory record (not a zip archive, or truncated)")
        record = tail[at:at + _EOCD_BYTES]
        end = tail_start + at
        disk, directory_disk = _u(record, 4, 2), _u(record, 6, 2)
        on_disk, count, directory_size, directory_at = (_u(record, 8, 2), _u(record, 10, 2), _u(record, 12, 4),
                                                        _u(record, 16, 4))
        locator = bytes(self._at(end - 20, 20)) if end >= 20 else b""
        if locator[:4] == _LOCATOR64:          # a ZIP64 end record (zipfile writes one past its limits)
            record_at = _u(locator, 8, 8)
            if _u(locator, 16, 4) > 1:
                raise ArchiveError("the archive is split over several disks")
            if record_at + 56 > end - 20:
                raise ArchiveError("the ZIP64 end record is not before its locator")
            record64 = self.exactly(record_at, 56, "the ZIP64 end record")
            if bytes(record64[:4]) != _EOCD64:
                raise ArchiveError("no ZIP64 end record where its locator says")
            disk, directory_disk = _u(record64, 16, 4), _u(record64, 20, 4)
            on_disk, count, directory_size, directory_at = (_u(record64, 24, 8), _u(record64, 32, 8),
                                                            _u(record64, 40, 8), _u(record64, 48, 8))
            end = record_at
        elif _FULL16 in (disk, directory_disk, on_disk, count) or _FULL32 in (directory_size, directory_at):
            raise ArchiveError("the end record needs a ZIP64 record, and there is none")
        if disk or directory_disk or on_disk != count:
            raise ArchiveError("the archive is split over several disks")
        if directory_at + directory_size != end:
            raise ArchiveError("the central directory is not where the end record says")
        directory = bytes(self.exactly(directory_at, directory_size, "the central directory"))
        if count > directory_size // 46:
            raise ArchiveError(f"the end record lists {count} members; the central directory has room for fewer")
        pos = 0
        for _ in range(count):
            if directory[pos:pos + 4] != _CENTRAL or pos + 46 > len(directory):
                raise ArchiveError("the central directory is damaged")
            flags, method = _u(directory, pos + 8, 2), _u(directory, pos + 10, 2)
            crc, packed, size = _u(directory, pos + 16, 4), _u(directory, pos + 20, 4), _u(directory, pos + 24, 4)
            name_len, extra_len, comment_len = (_u(directory, pos + 28, 2), _u(directory, pos + 30, 2),
                                                _u(directory, pos + 32, 2))
            start_disk, offset = _u(directory, pos + 34, 2), _u(directory, pos + 42, 4)
            raw_name = directory[pos + 46:pos + 46 + name_len]
            extra = directory[pos + 46 + name_len:pos + 46 + name_len + extra_len]
            pos += 46 + name_len + extra_len + comment_len
            if pos > len(directory):
                raise ArchiveError("the central directory is damaged")
            if _FULL32 in (size, packed, offset) or start_disk == _FULL16:
                size, packed, offset, start_disk = _zip64_fields(extra, size, packed, offset, start_disk)
            if start_disk:
                raise ArchiveError("the archive is split over several disks")
            name = raw_name.decode("ascii" if raw_name.isascii() else "utf-8" if flags & 0x800 else "cp437",
                                   "replace")
            if name in self._members:
                raise ArchiveError(f"member {name} is listed twice")
            self._members[name] = Member(name, raw_name, size, packed, method, crc, offset, flags)
        if pos != len(directory):
            raise ArchiveError("the central directory holds more than its members")
        ordered = sorted(self._members.values(), key=lambda m: m.header_offset)
        for member, following in zip(ordered, ordered[1:] + [None]):
            member.room = following.header_offset if following is not None else directory_at

    # -------------------------------------------------------------- zipfile's reading methods

    def getinfo(self, name: str) -> Member:
        """The member called ``name`` (``KeyError`` if there is none)."""
        return self._members[name]

    def infolist(self) -> list[Member]:
        return list(self._members.values())

    def namelist(self) -> list[str]:
        return list(self._members)

    def open(self, member: Member | str, check_crc: bool = True) -> MemberReader:
        """A reader of one member's bytes, uncompressed."""
        if isinstance(member, str):
            member = self.getinfo(member)
        if member.flag_bits & 0x1:
            raise Encrypted(f"member {member.filename} is encrypted")
        if member.compress_type not in (STORED, DEFLATED):
            raise UnknownMethod(f"member {member.filename} is compressed by method {member.compress_type}")
        header = self.exactly(member.header_offset, 30, f"member {member.filename}'s header")
        if bytes(header[:4]) != _LOCAL:
            raise ArchiveError(f"no header where the directory says member {member.filename} starts")
        name_len, extra_len = _u(header, 26, 2), _u(header, 28, 2)
        if bytes(self.exactly(member.header_offset + 30, name_len, "a member's name")) != member.raw_name:
            raise ArchiveError(f"member {member.filename} has another name in its own header")
        start = member.header_offset + 30 + name_len + extra_len
        if start + member.compress_size > member.room:
            raise ArchiveError(f"member {member.filename} overlaps the next member or the directory")
        if member.compress_type == STORED and member.compress_size != member.file_size:
            raise ArchiveError(f"stored member {member.filename} has two sizes")
        return MemberReader(self, member, start, check_crc)

    def read(self, name: str, check_crc: bool = True):
        """A member's whole bytes (a view of the archive's, for a stored member read from memory)."""
        with self.open(name, check_crc) as reader:
            return reader.read()

    def close(self) -> None:
        if self._owns and self._file is not None:
            self._file.close()
        self._file = None

    def __enter__(self) -> Archive:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _zip64_fields(extra, size: int, packed: int, offset: int, disk: int) -> tuple[int, int, int, int]:
    """The 64-bit values of a ZIP64 extra field (id 1) for the fields its entry left full
    (APPNOTE 4.5.3: in the order size, compressed size, offset, disk, each only if needed)."""
    at = 0
    while at + 4 <= len(extra):
        kind, length = _u(extra, at, 2), _u(extra, at + 2, 2)
        body = extra[at + 4:at + 4 + length]
        if len(body) != length:
            break
        if kind == 1:
            values, pos = [], 0
            for value, width in ((size, 8), (packed, 8), (offset, 8), (disk, 4)):
                full = _FULL32 if width == 8 else _FULL16
                if value == full:
                    if pos + width > length:
                        raise ArchiveError("a ZIP64 extra field is too short")
                    value = _u(body, pos, width)
                    pos += width
                values.append(value)
            return values[0], values[1], values[2], values[3]
        at += 4 + length
    raise ArchiveError("a member's sizes need a ZIP64 extra field, and it has none")


class MemberReader:
    """One member's uncompressed bytes, read in pieces (:meth:`read`); the length and the CRC-32
    are checked when the last byte has been read."""

    #: the compressed bytes taken from the archive at a time
    CHUNK = 1 << 20

    def __init__(self, archive: Archive, member: Member, start: int, check_crc: bool):
        self._archive, self._member = archive, member
        self._at, self._left = start, member.compress_size
        self._inflate = zlib.decompressobj(-15) if member.compress_type == DEFLATED else None
        self._out = 0
        self._crc = 0 if check_crc else None
        self._done = member.file_size == 0 and member.compress_size == 0

    def _take(self, size: int):
        piece = self._archive.exactly(self._at, size, f"member {self._member.filename}")
        self._at += size
        self._left -= size
        return piece

    def _hand_out(self, piece):
        self._out += len(piece)
        if self._out > self._member.file_size:
            raise ArchiveError(f"member {self._member.filename} is longer than the zip directory says")
        if self._crc is not None:
            self._crc = zlib.crc32(piece, self._crc)
        if self._out == self._member.file_size:
            self._finish()
        return piece

    def _finish(self) -> None:
        name = self._member.filename
        inflate = self._inflate
        if inflate is not None:
            while not inflate.eof:                   # the stream's end may follow the last byte out
                tail = inflate.unconsumed_tail
                if not tail and not self._left:
                    raise ArchiveError(f"member {name} is cut short")
                try:
                    more = inflate.decompress(tail or self._take(min(self.CHUNK, self._left)), 1)
                except zlib.error as exc:
                    raise ArchiveError(f"member {name} is damaged ({exc})") from None
                if more:
                    raise ArchiveError(f"member {name} holds more data than the zip directory says")
            if self._left or inflate.unconsumed_tail or inflate.unused_data:
                raise ArchiveError(f"member {name} holds more data than the zip directory says")
        if self._crc is not None and self._crc != self._member.CRC:
            raise ArchiveError(f"member {name} fails its CRC-32 (the file is damaged)")
        self._done = True

    def read(self, size: int = -1):
        """Up to ``size`` bytes (all that is left for a negative ``size``); empty at the end."""
        left_out = self._member.file_size - self._out
        if size < 0 or size > left_out:
            size = left_out
        if size <= 0:
            if not self._done:
                self._finish()
            return b""
        inflate = self._inflate
        if inflate is None:                          # stored: the bytes themselves
            return self._hand_out(self._take(size))
        pieces, have = [], 0
        while have < size:
            if inflate.eof:
                raise ArchiveError(f"member {self._member.filename} is shorter than the zip directory says")
            tail = inflate.unconsumed_tail
            if not tail and not self._left:
                raise ArchiveError(f"member {self._member.filename} is cut short")
            try:
                data = inflate.decompress(tail or self._take(min(self.CHUNK, self._left)), size - have)
            except zlib.error as exc:
                raise ArchiveError(f"member {self._member.filename} is damaged ({exc})") from None
            if data:
                pieces.append(data)
                have += len(data)
        data = pieces[0] if len(pieces) == 1 else b"".join(pieces)
        return self._hand_out(data)

    def __enter__(self) -> MemberReader:
        return self

    def __exit__(self, *exc) -> None:
        pass
