"""A plain tar archive's members found by reading their headers, without :mod:`tarfile`.

Takes a binary file of a tar archive (decompressed: a plain tar, or a spool of a compressed
one) and gives each file's and folder's name, size and data offset, or None when the archive
holds anything but plain members, for :mod:`tarfile` to read; the headers of a block are
scanned in C where ``spamkit.common.speedups`` is built (``tar_headers``, the same entries).
:class:`spamkit.corpus.tree.ArchiveTree` indexes archives with it.
"""

from __future__ import annotations

import tarfile
import zlib

from ..common.compiled import speedups as _speedups


#: tar member types read by offset: regular files (``0``, old ``\0``, contiguous ``7``) and
#: folders; links, devices and FIFOs are skipped, as ``tarfile`` members that are neither
_TAR_FILE_TYPES = (b"0", b"\0", b"7")
_TAR_SKIPPED_TYPES = (b"1", b"2", b"3", b"4", b"6")
#: bytes :func:`plain_tar_index` reads at once
INDEX_BLOCK = 1 << 16


def plain_tar_index(fh) -> list[tuple[str, bool, int, int]] | None:
    """``(name, is folder, size, offset of the data)`` of each file and folder of a tar archive
    made only of plain members (POSIX ustar or GNU headers, names of at most 255 bytes, sizes in
    octal), or None when it holds anything else — a GNU long name, a pax header, a sparse file,
    a size in base-256, a header whose checksum does not add up, an archive cut short — for
    :mod:`tarfile` to read (and to report what is wrong).

    The names are what :class:`tarfile.TarInfo` gives (the ustar prefix joined with "/", a
    folder's trailing slashes removed, bytes decoded as the file system's encoding with
    surrogate escapes); ``tests/test_corpus.py`` compares the two on every archive of the shared
    corpora. Reading 5,000 headers this way costs a tenth of building ``TarInfo`` objects.

    The headers are read from blocks of :data:`INDEX_BLOCK` bytes read in order (a small
    member's header is most often in the block already), and each header's checksum — the sum
    of its bytes — is taken by ``zlib.adler32`` of each half: Adler-32's low word is one plus
    the sum of the bytes modulo 65,521, and 256 bytes sum to at most 65,280, so each half's sum
    is exact (RFC 1950, section 8.2). ``sum(block)`` in Python cost as much as the rest of the
    header's reading.
    """
    encoding = tarfile.ENCODING
    out = []
    offset = 0
    buffer, start = b"", 0                                         # the block read last, and its offset
    scan = _TAR_HEADERS
    while True:
        at = offset - start
        if at + 512 > len(buffer):
            fh.seek(offset)
            buffer, start, at = fh.read(INDEX_BLOCK), offset, 0
        if scan is not None:
            # the canonical headers of this block in C (speedups.tar_headers: the same entries);
            # it stops at the first header it leaves to the lines below, or at the block's end
            found, stop = scan(buffer, at, start, encoding)
            if stop != at:
                out += found
                offset = start + stop
                continue
        view = memoryview(buffer)[at:at + 512]
        if len(view) < 512:
            return None
        block = bytes(view)
        if block.count(0) == 512:                                  # the end-of-archive marker
            return out if offset else None                         # (first: tarfile's "empty file")
        try:
            stored = int(block[148:156].rstrip(b"\0 ").strip() or b"x", 8)
            size = int(block[124:136].rstrip(b"\0 ").strip() or b"0", 8)
        except ValueError:
            return None                                            # base-256 numbers, or no number
        total = (zlib.adler32(view[:256]) & 0xFFFF) + (zlib.adler32(view[256:]) & 0xFFFF) - 2
        unsigned = total - sum(block[148:156]) + 256
        if stored != unsigned or size < 0:
            return None                                            # tarfile accepts signed sums too
        kind = block[156:157]
        name = block[:100].split(b"\0", 1)[0].decode(encoding, "surrogateescape")
        if kind == b"\0" and name.endswith("/"):
            kind = b"5"                                            # an old V7 folder
        if kind == b"5":
            name = name.rstrip("/")
        prefix = block[345:500].split(b"\0", 1)[0].decode(encoding, "surrogateescape")
        if prefix:
            name = prefix + "/" + name
        if kind in _TAR_FILE_TYPES:
            out.append((name, False, size, offset + 512))
            offset += 512 + (size + 511) // 512 * 512
        elif (kind == b"5" or kind in _TAR_SKIPPED_TYPES) and size == 0:
            if kind == b"5":
                out.append((name, True, 0, offset + 512))
            offset += 512
        else:
            return None                                            # L, K, x, g, S, V, M, ...; data on a link


#: the compiled scan of a block's canonical headers, or None (the Python loop alone)
_TAR_HEADERS = getattr(_speedups(), "tar_headers", None)
