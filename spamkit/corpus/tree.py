"""Read-only file trees: a directory on disk, or a tar/zip archive, seen the same way.

Every corpus layout (class folders, Enron-spam, TREC, SpamAssassin, Maildir,
MH, ...) is read through a :class:`Tree`, so each layout works unchanged from
an unpacked folder or straight from a ``.tar.gz``/``.tar.bz2``/``.tar.xz``/
``.zip`` archive.

A compressed tar stream cannot seek backwards without decompressing again
from the start, so :class:`ArchiveTree` first decompresses it, in chunks, to an
anonymous temporary file in the system temporary folder; members are then read
one at a time in any order. Memory stays flat (the temporary file costs disk,
about the unpacked size, and is deleted on close); reading a layout in its
natural order (Enron's arrival numbers, TREC's index order) does not depend on
the order of the members inside the archive.

One concern over ~440 lines: folders and tar/zip archives behind one tree interface,
with bounded reads and the checks hostile archives need.
"""

from __future__ import annotations

import bz2
import gzip
import io
import itertools
import lzma
import os
import re
import signal
import tarfile
import tempfile
import threading
import zipfile
import zlib
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ..errors import CorpusError

_NUMBER = re.compile(r"(\d+)")


def natural_key(name: str) -> list:
    """Sort key under which ``msg2`` comes before ``msg10``.

    ``re.split`` on runs of decimal digits puts the text at the even positions (possibly
    empty) and the digit runs at the odd ones, so two keys compare position by position,
    text with text and number with number: a digit run by its value, then as written
    (``a09`` before ``a9``); a name that starts with digits starts with an empty text, which
    comes before any other. A run is whatever ``\\d`` matches, so ``int()`` reads it (a
    character ``str.isdigit()`` accepts but ``int()`` refuses, "²", stays text).

    Examples
    --------
    >>> sorted(["b10", "b2", "a"], key=natural_key)
    ['a', 'b2', 'b10']
    >>> natural_key("a09.txt")
    ['a', (9, '09'), '.txt']
    """
    parts = _NUMBER.split(name)
    parts[1::2] = [(int(run), run) for run in parts[1::2]]
    return parts


def is_hidden(name: str) -> bool:
    """Names a corpus walk never treats as messages (``.DS_Store``, ``.mh_sequences``)."""
    return name.startswith(".") or name in {"__MACOSX", "Thumbs.db", "desktop.ini"}


@dataclass(frozen=True)
class Entry:
    """One name in a folder of a tree."""

    name: str
    is_dir: bool
    size: int


class Tree:
    """A read-only tree of folders and files addressed by POSIX relative paths.

    ``""`` is the root. Subclasses implement :meth:`entries`, :meth:`read`,
    :meth:`kind_of` and :meth:`display`.
    """

    #: how the tree is stored: "dir", "tar", "tar.gz", "tar.bz2", "tar.xz", "zip"
    container = "dir"

    def entries(self, rel: str = "") -> list[Entry]:
        """The entries of folder ``rel``, in natural name order."""
        raise NotImplementedError

    def kind_of(self, rel: str) -> str | None:
        """``"dir"``, ``"file"`` or ``None`` if ``rel`` does not exist."""
        raise NotImplementedError

    def read(self, rel: str) -> bytes:
        """The whole content of file ``rel``."""
        raise NotImplementedError

    def read_span(self, rel: str, start: int, end: int) -> bytes:
        """Bytes ``start:end`` of file ``rel`` (one message of an mbox)."""
        return self.read(rel)[start:end]

    def where(self, rel: str) -> tuple | None:
        """Where a process forked from this one can read file ``rel`` again by itself:
        ``(spool serial, file descriptor, offset, size)`` (a member of an archive,
        :meth:`ArchiveTree.where`), or None (read it here and send it)."""
        return None

    def display(self, rel: str) -> str:
        """A path a person can find: ``/x/enron1/ham/1.txt`` or ``/x/e.tar.gz!enron1/ham/1.txt``."""
        raise NotImplementedError

    def open_text_lines(self, rel: str):
        """Iterate over the lines (bytes, with endings) of file ``rel``, streaming."""
        raise NotImplementedError

    def local_path(self, rel: str) -> Path | None:
        """The file on disk, when the tree is a plain directory."""
        return None

    def close(self) -> None:
        """Release file handles and temporary files."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def is_dir(self, rel: str) -> bool:
        return self.kind_of(rel) == "dir"

    def is_file(self, rel: str) -> bool:
        return self.kind_of(rel) == "file"

    def walk_files(self, rel: str = "", skip=("cmds",)) -> list[str]:
        """All files below ``rel``, depth first, each folder in natural order.

        Hidden names and the names in ``skip`` (the SpamAssassin corpus keeps a
        ``cmds`` script beside its messages) are not messages and are left out.
        """
        out: list[str] = []
        stack = [rel]
        while stack:
            folder = stack.pop()
            subdirs = []
            for entry in self.entries(folder):
                if is_hidden(entry.name) or entry.name in skip:
                    continue
                child = join(folder, entry.name)
                if entry.is_dir:
                    subdirs.append(child)
                else:
                    out.append(child)
            stack.extend(reversed(subdirs))
        return out


def join(folder: str, name: str) -> str:
    """Join relative POSIX paths, ``""`` being the root."""
    return f"{folder}/{name}" if folder else name


class DirTree(Tree):
    """A folder on disk."""

    container = "dir"

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)

    def _path(self, rel: str) -> Path:
        return self.root / rel if rel else self.root

    def entries(self, rel: str = "") -> list[Entry]:
        path = self._path(rel)
        try:
            with os.scandir(path) as it:
                found = []
                for e in it:
                    try:
                        is_dir = e.is_dir()
                        size = 0 if is_dir else e.stat().st_size
                    except OSError:          # dangling link: list it as an empty file
                        is_dir, size = False, 0
                    found.append(Entry(e.name, is_dir, size))
        except OSError as exc:
            raise CorpusError(f"{path}: cannot list folder: {exc.strerror or exc}") from exc
        return sorted(found, key=lambda e: natural_key(e.name))

    def kind_of(self, rel: str) -> str | None:
        path = self._path(rel)
        if path.is_dir():
            return "dir"
        if path.exists():
            return "file"
        return None

    def read(self, rel: str) -> bytes:
        path = self._path(rel)
        try:
            return path.read_bytes()
        except OSError as exc:
            raise CorpusError(f"{path}: cannot read: {exc.strerror or exc}") from exc

    def read_span(self, rel: str, start: int, end: int) -> bytes:
        path = self._path(rel)
        try:
            with open(path, "rb") as fh:
                fh.seek(start)
                return fh.read(end - start)
        except OSError as exc:
            raise CorpusError(f"{path}: cannot read: {exc.strerror or exc}") from exc

    def open_text_lines(self, rel: str):
        path = self._path(rel)
        try:
            fh = open(path, "rb")
        except OSError as exc:
            raise CorpusError(f"{path}: cannot read: {exc.strerror or exc}") from exc
        with fh:
            yield from fh

    def display(self, rel: str) -> str:
        return str(self._path(rel))

    def local_path(self, rel: str) -> Path | None:
        return self._path(rel)


def gzip_open(path, mode: str = "rb"):
    """A gzip file opened for reading with Intel's ISA-L (the ``isal`` package: the same bytes,
    errors of the same classes, decompressed 2.1x as fast as :mod:`gzip` on trec07p-dev, 0.144
    -> 0.067 s), or with :mod:`gzip` where ``isal`` is not installed."""
    try:
        from isal import igzip
    except ImportError:                                      # pragma: no cover - isal is a dependency
        return gzip.open(path, mode)
    return igzip.open(path, mode)


#: (magic number, suffix, the standard library's opener: sniffing the first block reads a cut
#: archive's beginning where isal's reader already stops, so that it is found damaged, not unknown)
_MAGIC = [(b"\x1f\x8b", "gz", gzip.open), (b"BZh", "bz2", bz2.open),
          (b"\xfd7zXZ\x00", "xz", lzma.open)]


def _head(path: Path) -> bytes | None:
    """The first bytes of a file (enough for every magic number), or None if it cannot be read."""
    try:
        with open(path, "rb") as fh:
            return fh.read(6)
    except OSError:
        return None


def _compression(head: bytes):
    """``(suffix, opener)`` of the compression whose magic number ``head`` starts with, or None."""
    return next(((suffix, opener) for magic, suffix, opener in _MAGIC if head.startswith(magic)), None)


def archive_kind(path: str | os.PathLike) -> str | None:
    """``"tar"``, ``"tar.gz"``, ``"tar.bz2"``, ``"tar.xz"``, ``"zip"``, or ``None``.

    Decided by content (magic numbers), not by the file name.
    """
    path = Path(path)
    head = _head(path)
    if head is None:
        return None
    if head.startswith(b"PK\x03\x04") or head.startswith(b"PK\x05\x06"):
        return "zip" if zipfile.is_zipfile(path) else None
    compressed = _compression(head)
    if compressed is not None:
        suffix, opener = compressed
        try:
            with opener(path, "rb") as fh:
                block = fh.read(512)
        except (OSError, EOFError, lzma.LZMAError):
            return None
        except zlib.error:
            return f"tar.{suffix}"      # compressed data damaged from its start: opening it says so
        return f"tar.{suffix}" if _looks_like_tar(block) else None
    try:
        return "tar" if tarfile.is_tarfile(path) else None
    except OSError:
        return None


def _looks_like_tar(block: bytes) -> bool:
    """POSIX ustar and GNU tar headers carry "ustar" at offset 257; an archive of no members is
    its end marker alone, blocks of zeros (``tar -czf e.tar.gz -T /dev/null``), which no
    message is."""
    return (len(block) >= 262 and block[257:262] == b"ustar") or (len(block) == 512 and not block.strip(b"\0"))


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


def _compiled(name: str):
    """``spamkit.speedups.<name>`` where the module was built, else None."""
    from ..compiled import speedups
    return getattr(speedups(), name, None)


_TAR_HEADERS = _compiled("tar_headers")


#: reads a :class:`Spool` makes without letting go of the GIL, at most (bytes)
HELD_READ = 256 * 1024


_PREAD_HELD = _compiled("pread_held")


_SPOOL_SERIALS = itertools.count(1)
#: the serials of the open spools that hold their whole archive
_COMPLETE_SPOOLS: set = set()
#: the serials of the open spools
_OPEN_SPOOLS: set = set()


def open_spools() -> frozenset:
    """The serials of the spools open now: a process forked now holds their file descriptors, so
    it can read a member there once :meth:`ArchiveTree.where` gives its location (which it does
    once the whole archive is there). ``spamkit train`` forks its workers before it opens the
    corpora, while their archives decompress (:func:`decompressing_ahead`)."""
    return frozenset(_OPEN_SPOOLS)


def complete_spools() -> frozenset:
    """The serials of the open spools that hold their whole archive: a process forked now reads
    their members through the same file descriptors (:meth:`ArchiveTree.where`)."""
    return frozenset(_COMPLETE_SPOOLS)


def read_where(where: tuple) -> bytes:
    """The bytes a :meth:`Tree.where` location names (``(fd, offset, size)``, its serial
    dropped), read in a process forked while that spool was open; raises OSError if fewer
    bytes come back than it promised."""
    fd, offset, size = where
    data = os.pread(fd, size, offset)
    while len(data) < size:
        more = os.pread(fd, size - len(data), offset + len(data))
        if not more:
            raise OSError(f"file descriptor {fd} ends {size - len(data)} bytes short of a message")
        data += more
    return data


#: decompress archives in a child process where this process may fork (see Spool._start_child)
DECOMPRESS_IN_CHILD = True


def _may_fork() -> bool:
    """Is forking safe here: a platform with ``fork``, and no other thread in this process (a
    child forked beside other threads can hang on a lock one of them held)."""
    return hasattr(os, "fork") and threading.active_count() == 1


class Spool:
    """A tar archive's bytes, read by offset: the file itself (``.tar``), or a temporary file
    that a child process (where this process may fork: :meth:`_start_child`) or else a
    background thread fills with the decompressed archive (``.tar.gz``, ``.tar.bz2``,
    ``.tar.xz``) while the reader already indexes the headers that have arrived. In a child,
    the decompression does not share the interpreter's lock with the command's imports
    (``spamkit train`` on trec07p-dev with two jobs, 7 rounds in turns: 3.63 -> 3.36 s, medians;
    on trec07p-dev and Enron1-6, where seven children start at once, 9.52 and 9.59 s).

    The decompressors release the GIL while they work, so decompressing and indexing overlap
    (listing trec07p-dev: 0.205 -> 0.19 s with gzip, 0.092 s with isal's reader, whose 0.067 s of
    decompression then covers the indexing). A read waits for its bytes; an error of the
    decompression (a damaged or cut archive) is raised by the read that needs bytes it could not
    give, or by :meth:`finish`. Also a minimal binary file (``read``, ``seek``, ``tell``) for
    :func:`plain_tar_index` and :mod:`tarfile`.
    """

    def __init__(self, path: Path, opener=None):
        self.serial = next(_SPOOL_SERIALS)
        self._cond = threading.Condition()
        self._error: BaseException | None = None
        self._stop = False
        self._pos = 0
        self._thread = None
        self._child = self._progress = None                 # the decompressing child process and its pipe
        if opener is None:
            self.file = open(path, "rb")
            _OPEN_SPOOLS.add(self.serial)
            self._ready, self._done = os.fstat(self.file.fileno()).st_size, True
            return
        self.file = tempfile.TemporaryFile(prefix="spamkit-")
        _OPEN_SPOOLS.add(self.serial)
        self._ready, self._done = 0, False
        if DECOMPRESS_IN_CHILD and _may_fork() and self._start_child(opener, path):
            return
        self._thread = threading.Thread(target=self._fill, args=(opener, path), name="spamkit-decompress",
                                        daemon=True)
        self._thread.start()

    def _decompress(self, opener, path, report) -> None:
        """Decompress into the spool's file, ``report(bytes so far)`` after each block; raises
        what stopped it (damaged deflate data as an ``OSError``, as the corpus reports it)."""
        fd, total = self.file.fileno(), 0
        try:
            with opener(path, "rb") as src:
                while not self._stop:
                    block = src.read(1 << 20)
                    if not block:
                        break
                    view = memoryview(block)
                    while view:
                        view = view[os.write(fd, view):]
                    total += len(block)
                    report(total)
        except (OSError, EOFError, lzma.LZMAError):         # a damaged or cut archive, as the readers say it
            raise
        except Exception as exc:                             # noqa: BLE001
            # damaged deflate data: zlib.error from gzip's reader, IsalError from ISA-L's, neither
            # an OSError, which is what the corpus reports as a damaged archive
            raise OSError(f"damaged compressed data ({type(exc).__name__}: {exc})") from None

    def _fill(self, opener, path) -> None:
        """The thread's work (when this process may not fork: other threads are running)."""
        def report(total: int) -> None:
            with self._cond:
                self._ready = total
                self._cond.notify_all()
        try:
            self._decompress(opener, path, report)
        except BaseException as exc:                         # noqa: BLE001 -- raised where it is read
            self._error = exc
        finally:
            with self._cond:
                self._done = True
                self._cond.notify_all()

    def _start_child(self, opener, path) -> bool:
        """Decompress in a child process (forked now, while this process has one thread): a
        thread would share the interpreter's lock with the command's imports, and waited for it
        most of the time (trec07p-dev's archive: 0.15 s alone, 0.77 s beside a busy main thread).
        The child writes into the same temporary file and tells how far it got through a pipe:
        ``R`` and the byte count after each block, then ``X`` and the pickled exception if one
        stopped it; it ends with ``os._exit`` (no ``atexit`` handler of this process runs twice).
        False if no process could be forked (the caller starts the thread)."""
        read_end, write_end = os.pipe()
        try:
            pid = os.fork()
        except OSError:                                      # no process to spare: a thread, then
            os.close(read_end)
            os.close(write_end)
            return False
        if pid == 0:                                         # the child
            status = 0
            try:
                os.close(read_end)
                self._decompress(opener, path, lambda total: os.write(write_end, b"R" + total.to_bytes(8, "little")))
            except BaseException as exc:                     # noqa: BLE001 -- told to the parent
                import pickle
                try:
                    payload = pickle.dumps(exc)
                except Exception:                            # noqa: BLE001 -- an exception that does not pickle
                    payload = pickle.dumps(OSError(f"{type(exc).__name__}: {exc}"))
                os.write(write_end, b"X" + len(payload).to_bytes(8, "little") + payload)
                status = 1
            finally:
                os._exit(status)
        os.close(write_end)
        self._child, self._progress, self._pending = pid, read_end, b""
        return True

    def _pump(self) -> None:
        """Read what the child said (blocking until it says something or ends)."""
        data = os.read(self._progress, 1 << 16)
        if not data:                                         # the child is gone
            self._reap()
            self._done = True
            return
        buf = self._pending + data
        while len(buf) >= 9:
            if buf[:1] == b"R":
                self._ready = int.from_bytes(buf[1:9], "little")
                buf = buf[9:]
                continue
            size = int.from_bytes(buf[1:9], "little")
            if len(buf) < 9 + size:
                break
            import pickle
            self._error = pickle.loads(buf[9:9 + size])      # from our own child: trusted
            buf = buf[9 + size:]
        self._pending = buf

    def _reap(self) -> None:
        if self._child is None:
            return
        _, status = os.waitpid(self._child, 0)
        self._child = None
        os.close(self._progress)
        if status != 0 and self._error is None:
            self._error = OSError(f"decompressing stopped (child process status {status})")

    def _wait(self, end: int | None) -> None:
        """Until the first ``end`` bytes are there (None: all of them), or no more will come."""
        with self._cond:
            while not self._done and (end is None or self._ready < end):
                if self._child is not None:
                    self._pump()
                else:
                    self._cond.wait()
            if self._error is not None and (end is None or self._ready < end):
                raise self._error

    def finish(self) -> None:
        """Wait for the whole archive and for the thread to end (a process with no other thread
        starts its workers by ``fork``: :mod:`spamkit.processes`); raise what stopped the
        decompression."""
        self._wait(None)
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        _COMPLETE_SPOOLS.add(self.serial)

    def read_at(self, offset: int, n: int) -> bytes:
        """Up to ``n`` bytes at ``offset`` (fewer only at the end of the archive).

        A read of at most :data:`HELD_READ` bytes keeps the GIL (``speedups.pread_held``): members
        are read one by one, and a thread that lets go of the GIL for each waits to get it back
        from the threads that hand work to worker processes (``spamkit train --jobs 2``).
        """
        self._wait(offset + n)
        if n <= HELD_READ and _PREAD_HELD is not None:
            return _PREAD_HELD(self.file.fileno(), n, offset)
        return os.pread(self.file.fileno(), n, offset)

    def read(self, n: int = -1) -> bytes:
        if n is None or n < 0:
            self.finish()
            n = max(self._ready - self._pos, 0)
        data = self.read_at(self._pos, n)
        self._pos += len(data)
        return data

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if whence == io.SEEK_END:
            self.finish()
            offset += self._ready
        elif whence == io.SEEK_CUR:
            offset += self._pos
        self._pos = max(offset, 0)
        return self._pos

    def tell(self) -> int:
        return self._pos

    @property
    def complete(self) -> bool:
        """Is the whole archive here (decompressed, or a plain file), for good?"""
        return self.serial in _COMPLETE_SPOOLS

    def close(self) -> None:
        _COMPLETE_SPOOLS.discard(self.serial)
        _OPEN_SPOOLS.discard(self.serial)
        self._stop = True
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        with self._cond:
            if self._child is not None:
                try:
                    os.kill(self._child, signal.SIGKILL)     # an archive not read to its end
                except ProcessLookupError:
                    pass
                self._error = self._error or OSError("closed")
                self._reap()
                self._done = True
        self.file.close()


_OPENERS = {"tar": None, "tar.gz": gzip_open, "tar.bz2": bz2.open, "tar.xz": lzma.open}
_AHEAD: dict = {}                                  # archive (resolved path) -> its Spool, decompressing
_AHEAD_LOCK = threading.Lock()


def _ahead_key(path) -> Path | None:
    try:
        return Path(path).resolve()
    except (OSError, RuntimeError):
        return None


def _claim_ahead(path) -> Spool | None:
    """The Spool :func:`decompressing_ahead` started for ``path``, handed over once, or None."""
    key = _ahead_key(path)
    with _AHEAD_LOCK:
        return _AHEAD.pop(key, None) if key is not None else None


@contextmanager
def decompressing_ahead(paths):
    """Within the block, the compressed tar archives among ``paths`` are already being
    decompressed, all at once, when :class:`ArchiveTree` opens them one after another (and a
    plain ``.tar`` is already open: a worker process forked meanwhile holds its spool too,
    :func:`open_spools`).

    Opening an archive indexes its members while a thread decompresses it (:class:`Spool`);
    one archive at a time, the decompression of the next waited for the indexing of this one.
    Started together, the decompressors (which let go of the GIL) run on the other cores
    while the archives are indexed in turn: opening trec07p-dev and Enron1-6 0.40 -> 0.33 s
    here (the headers read in C), and with :func:`spamkit.cli.params.archives_ahead` the
    decompression also overlaps the command's imports. An archive the block does not open is closed at its end (its
    thread stopped, its temporary file gone); nothing else changes -- a damaged archive
    raises when it is opened, as before.
    """
    started = []
    for path in paths:
        inside = split_member(path)
        path = Path(inside[0] if inside is not None else path)
        try:
            kind = archive_kind(path) if path.is_file() else None
        except OSError:
            kind = None
        key = _ahead_key(path)
        if kind not in _OPENERS or key is None:       # (a plain .tar: opened only, its spool the file)
            continue
        with _AHEAD_LOCK:
            if key in _AHEAD:
                continue
            try:
                _AHEAD[key] = Spool(path, _OPENERS[kind])
            except OSError:                          # opening it says why, as without the block
                continue
        started.append(key)
    try:
        yield
    finally:
        for key in started:
            with _AHEAD_LOCK:
                spool = _AHEAD.pop(key, None)
            if spool is not None:
                spool.close()


class ArchiveTree(Tree):
    """A tar or zip archive, read member by member without unpacking it to a folder."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        kind = archive_kind(self.path)
        if kind is None:
            compressed = _compression(_head(self.path) or b"")
            if compressed is not None:                   # compressed, but its start does not decompress
                raise CorpusError(f"{self.path}: damaged {compressed[0]} file: its beginning cannot be decompressed")
            raise CorpusError(f"{self.path}: not a tar or zip archive")
        self.container = kind
        self._spool = None
        self._files: dict[str, object] = {}
        self._dirs: dict[str, dict[str, Entry]] = {"": {}}
        self._listed: set = {""}                    # folders whose parents _add has listed
        self._sorted: dict[str, list[Entry]] = {}    # entries() of each folder asked for
        try:
            if kind == "zip":
                self._zip = zipfile.ZipFile(self.path)
                for info in self._zip.infolist():
                    self._add(info.filename, info.is_dir(), info.file_size, info)
            else:
                self._zip = None
                self._tar = None
                opener = _OPENERS[kind]
                fh = self._spool = _claim_ahead(self.path) or Spool(self.path, opener)
                index = plain_tar_index(fh)
                fh.finish()                             # the whole archive decompressed, or why not
                if index is not None:                   # every member a plain one: read by offset
                    for name, is_dir, size, offset in index:
                        self._add(name, is_dir, size, (offset, size))
                else:                                   # anything else: the standard library's reader
                    fh.seek(0)
                    self._tar = tarfile.open(fileobj=fh, mode="r:")
                    for member in self._tar.getmembers():
                        if member.isdir() or member.isfile():
                            self._add(member.name, member.isdir(), member.size, member)
        except (OSError, EOFError, tarfile.TarError, zipfile.BadZipFile, lzma.LZMAError) as exc:
            self.close()
            raise CorpusError(f"{self.path}: damaged {kind} archive: {exc}") from exc

    _tar = None

    def where(self, rel: str) -> tuple | None:
        """``(spool serial, file descriptor, offset, size)`` of a member read by offset from a
        spool that holds the whole archive (a decompressed archive's temporary file, or the
        ``.tar`` itself): a worker process forked while it is open reads the member there
        instead of being sent its bytes (``spamkit.jobs.engines``). None for anything else."""
        handle = self._files.get(rel)
        spool = self._spool
        if isinstance(handle, tuple) and spool is not None and spool.complete:
            return spool.serial, spool.file.fileno(), handle[0], handle[1]
        return None

    def _member(self, rel: str, handle, start: int = 0, end: int | None = None) -> bytes:
        """Bytes ``start:end`` of a tar member indexed by offset (see :func:`plain_tar_index`)."""
        offset, size = handle
        end = size if end is None else min(end, size)
        start = min(max(start, 0), end)
        data = self._spool.read_at(offset + start, end - start)
        if len(data) != end - start:
            raise CorpusError(f"{self.display(rel)}: cannot read member: the archive ends inside it")
        return data

    def _add(self, name: str, is_dir: bool, size: int, handle) -> None:
        # the path's components without empty or "." ones (PurePosixPath(name).parts less its
        # root, but a leading "//" is a root here too, as "///" is): a third of the cost of indexing
        parts = [p for p in name.split("/") if p not in ("", ".")]
        if not parts or ".." in parts:
            return                                  # never follow paths out of the archive
        rel = "/".join(parts)
        parent = "/".join(parts[:-1])
        if parent not in self._listed:              # its implied parent folders (once per folder)
            for depth in range(len(parts) - 1):
                self._dirs.setdefault("/".join(parts[:depth]), {})[parts[depth]] = Entry(parts[depth], True, 0)
                self._dirs.setdefault("/".join(parts[:depth + 1]), {})
            self._listed.add(parent)
        if rel in self._dirs:
            self._listed.clear()                    # a member named as a listed folder took its entry
        self._dirs[parent][parts[-1]] = Entry(parts[-1], is_dir, size)
        if is_dir:
            self._dirs.setdefault(rel, {})
        else:
            self._files[rel] = handle

    def entries(self, rel: str = "") -> list[Entry]:
        if rel not in self._dirs:
            raise CorpusError(f"{self.display(rel)}: no such folder in the archive")
        listing = self._sorted.get(rel)                # an archive does not change: sorted once
        if listing is None:
            listing = self._sorted[rel] = sorted(self._dirs[rel].values(), key=lambda e: natural_key(e.name))
        return list(listing)

    def kind_of(self, rel: str) -> str | None:
        if rel in self._dirs:
            return "dir"
        if rel in self._files:
            return "file"
        return None

    def read(self, rel: str) -> bytes:
        handle = self._files.get(rel)
        if handle is None:
            raise CorpusError(f"{self.display(rel)}: no such file in the archive")
        if isinstance(handle, tuple):
            return self._member(rel, handle)
        try:
            if self._zip is not None:
                return self._zip.read(handle)
            fh = self._tar.extractfile(handle)
            return fh.read() if fh is not None else b""
        except (OSError, EOFError, tarfile.TarError, zipfile.BadZipFile, lzma.LZMAError) as exc:
            raise CorpusError(f"{self.display(rel)}: cannot read member: {exc}") from exc

    def read_span(self, rel: str, start: int, end: int) -> bytes:
        handle = self._files.get(rel)
        if handle is None:
            raise CorpusError(f"{self.display(rel)}: no such file in the archive")
        if isinstance(handle, tuple):
            return self._member(rel, handle, start, end)
        try:
            fh = self._zip.open(handle) if self._zip is not None else self._tar.extractfile(handle)
            with fh:
                fh.seek(start)
                return fh.read(end - start)
        except (OSError, EOFError, tarfile.TarError, zipfile.BadZipFile, lzma.LZMAError) as exc:
            raise CorpusError(f"{self.display(rel)}: cannot read member: {exc}") from exc

    def open_text_lines(self, rel: str):
        handle = self._files.get(rel)
        if handle is None:
            raise CorpusError(f"{self.display(rel)}: no such file in the archive")
        if isinstance(handle, tuple):
            fh = io.BytesIO(self._member(rel, handle))
        elif self._zip is not None:
            fh = self._zip.open(handle)
        else:
            fh = self._tar.extractfile(handle)
        with fh:
            yield from fh

    def display(self, rel: str) -> str:
        return f"{self.path}!{rel}" if rel else str(self.path)

    def close(self) -> None:
        for attr in ("_zip", "_tar"):
            obj = getattr(self, attr, None)
            if obj is not None:
                obj.close()
                setattr(self, attr, None)
        if self._spool is not None:
            self._spool.close()
            self._spool = None


def tree_address(tree: Tree) -> tuple[str, str]:
    """(``"dir"`` or ``"archive"``, absolute path): enough for another process to open the same tree."""
    if isinstance(tree, DirTree):
        return "dir", str(tree.root.resolve())
    if isinstance(tree, ArchiveTree):
        return "archive", str(tree.path.resolve())
    raise CorpusError(f"{tree!r}: this tree cannot be reopened elsewhere")


def reopen_tree(address: tuple[str, str]) -> Tree:
    """The tree of :func:`tree_address`, opened again (in a worker process, say)."""
    kind, path = address
    return DirTree(path) if kind == "dir" else ArchiveTree(path)


class Unread(bytes):
    """A message file not read yet: empty bytes that know where the file is.

    :meth:`spamkit.corpus.Corpus.listing` yields messages with these as ``raw``, so a
    corpus can be cut into partitions by file without reading it (the Dask engine ships
    the paths and its workers read the files).
    """

    def __new__(cls, tree: Tree, rel: str, span: tuple[int, int] | None = None):
        obj = super().__new__(cls, b"")
        obj.tree, obj.rel, obj.span = tree, rel, span
        return obj

    def read(self) -> bytes:
        """The message: the whole file, or bytes ``span = (start, end)`` of it (a message of an mbox)."""
        if self.span is None:
            return self.tree.read(self.rel)
        return self.tree.read_span(self.rel, *self.span)

    def __reduce__(self):                     # never ship the open tree: only the empty bytes
        return (bytes, (b"",))


class WrappedTree(Tree):
    """A tree that is another tree (``inner``) but for what a subclass changes."""

    def __init__(self, tree: Tree):
        self.inner = tree
        self.container = tree.container

    def read(self, rel: str) -> bytes:
        return self.inner.read(rel)

    def entries(self, rel: str = ""):
        return self.inner.entries(rel)

    def kind_of(self, rel: str):
        return self.inner.kind_of(rel)

    def display(self, rel: str) -> str:
        return self.inner.display(rel)

    def where(self, rel: str) -> tuple | None:
        return self.inner.where(rel)

    def open_text_lines(self, rel: str):
        return self.inner.open_text_lines(rel)

    def local_path(self, rel: str):
        return self.inner.local_path(rel)

    def close(self) -> None:
        self.inner.close()


class ListingTree(WrappedTree):
    """A tree whose :meth:`read` returns :class:`Unread` placeholders; everything else is the real tree's."""

    def read(self, rel: str) -> bytes:
        if self.inner.kind_of(rel) != "file":
            raise CorpusError(f"{self.inner.display(rel)}: no such file")
        return Unread(self.inner, rel)


class LocatedTree(WrappedTree):
    """A tree whose :meth:`read` returns an :class:`Unread` placeholder for a file that a process
    forked from this one reads where it lies (:meth:`Tree.where` is not None: a member of an
    archive whose whole spool is here), and the file's bytes for any other -- read, or counted
    as unreadable, as without it. ``spamkit train`` with worker processes reads the corpus so:
    the workers read the messages, this process only lists them."""

    def read(self, rel: str) -> bytes:
        if self.inner.where(rel) is not None:
            return Unread(self.inner, rel)
        return self.inner.read(rel)


#: separates an archive from a folder or file inside it: ``20news-bydate.tar.gz!20news-bydate-train``
MEMBER_SEPARATOR = "!"


def split_member(path) -> tuple[Path, str] | None:
    """``(archive, member)`` for ``ARCHIVE!MEMBER`` when ARCHIVE is an existing archive file, else None.

    >>> split_member("corpus.tar.gz!train/ham") is None      # (no such archive here)
    True
    """
    text = str(path)
    head, sep, member = text.partition(MEMBER_SEPARATOR)
    if not sep or not member or not os.path.isfile(head) or archive_kind(Path(head)) is None:
        return None
    return Path(head), member.strip("/")


def open_tree(path: str | os.PathLike) -> tuple[Tree, str]:
    """Open ``path`` as a tree; returns ``(tree, rel)`` where ``rel`` addresses ``path`` in it.

    A folder is its own tree (``rel == ""``); an archive is a tree of its
    members, and ``ARCHIVE!FOLDER`` (or ``ARCHIVE!FILE``) addresses one folder or file inside
    it, read straight from the archive (20 Newsgroups' ``…tar.gz!20news-bydate-train``); any
    other file is addressed inside the tree of its folder.
    """
    inside = split_member(path)
    if inside is not None:
        archive, member = inside
        if not os.access(archive, os.R_OK):
            raise CorpusError(f"{archive}: permission denied")
        tree = ArchiveTree(archive)
        if tree.kind_of(member) is None:
            tree.close()
            raise CorpusError(f"{path}: the archive has no folder or file {member!r}")
        return tree, member
    path = Path(path)
    if not path.exists():
        raise CorpusError(f"{path}: no such file or folder")
    if path.is_dir():
        return DirTree(path), ""
    if not os.access(path, os.R_OK):
        raise CorpusError(f"{path}: permission denied")
    if archive_kind(path) is not None:
        return ArchiveTree(path), ""
    return DirTree(path.parent), path.name
