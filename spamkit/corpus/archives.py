"""Archives behind a corpus tree: what kind a file is, and compressed archives decompressed to a
spool file -- ahead of the command line where the console script starts it
(:func:`decompressing_ahead`), in a child process where it may fork (:class:`Spool`) -- whose
members are then read by where they lie (:func:`read_where`); a plain tar's members are found
by their headers in :mod:`spamkit.corpus.tarindex`.

:class:`spamkit.corpus.tree.ArchiveTree` reads archives through this module; the worker
processes of a training read members through :func:`read_where` and :func:`open_spools`.
"""

from __future__ import annotations

import bz2
import gzip
import io
import itertools
import lzma
import os
import signal
import tarfile
import tempfile
import threading
from typing import BinaryIO
import zipfile
import zlib
from contextlib import contextmanager
from pathlib import Path


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


def file_head(path: Path) -> bytes | None:
    """The first bytes of a file (enough for every magic number), or None if it cannot be read."""
    try:
        with open(path, "rb") as fh:
            return fh.read(6)
    except OSError:
        return None


def compression_of(head: bytes):
    """``(suffix, opener)`` of the compression whose magic number ``head`` starts with, or None."""
    return next(((suffix, opener) for magic, suffix, opener in _MAGIC if head.startswith(magic)), None)


def archive_kind(path: str | os.PathLike) -> str | None:
    """``"tar"``, ``"tar.gz"``, ``"tar.bz2"``, ``"tar.xz"``, ``"zip"``, or ``None``.

    Decided by content (magic numbers), not by the file name.
    """
    path = Path(path)
    head = file_head(path)
    if head is None:
        return None
    if head.startswith(b"PK\x03\x04") or head.startswith(b"PK\x05\x06"):
        return "zip" if zipfile.is_zipfile(path) else None
    compressed = compression_of(head)
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


def _compiled(name: str):
    """``spamkit.common.speedups.<name>`` where the module was built, else None."""
    from ..common.compiled import speedups
    return getattr(speedups(), name, None)


#: reads a :class:`Spool` makes without letting go of the GIL, at most (bytes), and the compiled read that does so
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
        self._child: int | None = None
        self._progress: int | None = None                 # the decompressing child process and its pipe
        if opener is None:
            self.file: BinaryIO = open(path, "rb")
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
        assert self._progress is not None                   # a child was started (_start)
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
        if self._progress is not None:
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
        starts its workers by ``fork``: :mod:`spamkit.common.processes`); raise what stopped the
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


ARCHIVE_OPENERS = {"tar": None, "tar.gz": gzip_open, "tar.bz2": bz2.open, "tar.xz": lzma.open}
_AHEAD: dict = {}                                  # archive (resolved path) -> its Spool, decompressing
_AHEAD_LOCK = threading.Lock()


def _ahead_key(path) -> Path | None:
    try:
        return Path(path).resolve()
    except (OSError, RuntimeError):
        return None


def claim_ahead(path) -> Spool | None:
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
        if kind not in ARCHIVE_OPENERS or key is None:       # (a plain .tar: opened only, its spool the file)
            continue
        with _AHEAD_LOCK:
            if key in _AHEAD:
                continue
            try:
                _AHEAD[key] = Spool(path, ARCHIVE_OPENERS[kind])
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
