"""Durable writes: files and renames that survive a crash (fsync of the file and of its folder).

Shared by the filter files (:mod:`spamkit.filterfile.persist`) and the mailbox writer
(:mod:`spamkit.mail`); standard library only.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import tempfile
import time
from pathlib import Path

from .errors import ConfigError, OutputError


def fsync_dir(path) -> None:
    """fsync a folder so that a rename in it is durable (some file systems cannot: ignored)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


#: file systems whose syncfs(2) commits their journal or transaction and flushes the disk's
#: cache (each implements ``sync_fs``); tmpfs keeps nothing over a power failure either way. On
#: others -- NFS, FUSE before the servers that answer FUSE_SYNCFS, overlays -- a syncfs may not
#: reach the storage that an fsync of each file reaches, so they keep the fsyncs.
SYNCFS_FILESYSTEMS = frozenset({"ext4", "ext3", "xfs", "btrfs", "tmpfs"})


def filesystem_type(path, mountinfo: str = "/proc/self/mountinfo") -> str | None:
    """The type of the file system that holds ``path`` (its ``st_dev`` looked up in
    ``/proc/self/mountinfo``: the third field is the device, the first after " - " the type),
    or None where it cannot be told."""
    try:
        st = os.stat(path)
        device = f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
        with open(mountinfo, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                head, _, after = line.partition(" - ")
                fields = head.split()
                if len(fields) >= 5 and fields[2] == device and after.split():
                    return after.split()[0]
    except OSError:
        return None
    return None


def filesystem_sync(path=None):
    """``syncfs(2)`` as ``sync(fd)`` where it is a durable and honest substitute for many
    fsyncs (for the file system of ``path``, when given), else None.

    ``syncfs(fd)`` writes back every dirty page and the journal of the file system that holds
    ``fd``, and waits for the disk: one journal commit for a whole group of new files and
    renames, where an fsync per file and per folder asks for many (on ext4 each fsync that does
    not share a jbd2 transaction with another is a commit and a cache flush of its own).
    Linux only, and only from 5.8, the first kernel whose ``syncfs`` reports the write-back
    errors of the file system (``errseq`` since the descriptor was opened) rather than always
    succeeding; and only on the file systems of :data:`SYNCFS_FILESYSTEMS`. Elsewhere the
    caller keeps its fsyncs. The price: the call also writes back what other programs have left
    dirty on the same file system.
    (Linux man-pages, syncfs(2), "Since Linux 5.8, syncfs() will now report..."; the kernel
    change "vfs: track per-sb writeback errors and report them to syncfs", Linux 5.8.)
    """
    if not hasattr(os, "uname") or os.uname().sysname != "Linux":
        return None
    try:
        major, minor = (int(part) for part in os.uname().release.split(".")[:2])
    except ValueError:
        return None
    if (major, minor) < (5, 8):
        return None
    if path is not None and filesystem_type(path) not in SYNCFS_FILESYSTEMS:
        return None
    import ctypes                                    # only a filter run that commits a group gets here
    try:
        libc_syncfs = ctypes.CDLL(None, use_errno=True).syncfs
    except (OSError, AttributeError):
        return None
    libc_syncfs.argtypes, libc_syncfs.restype = [ctypes.c_int], ctypes.c_int

    def sync(fd: int) -> None:
        if libc_syncfs(fd) != 0:
            errno = ctypes.get_errno()
            raise OSError(errno, os.strerror(errno))
    return sync


def take_mode(fd: int, like) -> None:
    """Give the open file ``fd`` the permission bits (and, where allowed, the owner) of file ``like``.

    A rewritten message or mailbox replaces the original by a rename, so without this a
    private (0600) message would come back with the writer's default mode, and a
    read-only (0444) mailbox would come back writable.
    """
    try:
        st = os.stat(like)
    except OSError:
        return
    os.fchmod(fd, st.st_mode & 0o7777)
    if (st.st_uid, st.st_gid) != (os.getuid(), os.getgid()):
        try:
            os.fchown(fd, st.st_uid, st.st_gid)
        except PermissionError:
            pass                                  # only root may give a file away; the mode still holds


def write_file(path: Path, data: bytes, like=None) -> int:
    """Create ``path`` (which must not exist) with ``data`` and return its open descriptor,
    written but not yet fsynced (the caller fsyncs and closes it; :func:`write_durable` does
    both at once). On an error nothing is left behind.

    The file is created 0600; ``like`` names a file whose mode and owner it takes
    (:func:`take_mode`), for a file that will replace ``like``.
    """
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        if like is not None:
            take_mode(fd, like)
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
    except BaseException:
        os.close(fd)
        unlink_quietly(path)
        raise
    return fd


#: largest message a mailbox run reads (Maildir, MH): what the IMAP filter and ``spamkit serve``
#: take (``MAX_SIZE``, ``--max-size``); a larger one is counted and left where it is
MAX_MESSAGE_FILE = 16 << 20
#: how a file inside a mailbox is opened: never through a symbolic link (a link to a file
#: outside the mailbox would have its contents read, or be created or truncated by a root
#: process), and never waiting (a FIFO opens at once, and is then refused as not a regular file)
SAFE_OPEN = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class NotAMessageFile(OSError):
    """A mailbox entry that is not read: a symbolic link, a FIFO, a device or a folder, or a
    file over the size limit. Its message says which, and that the entry is left where it is."""


def open_regular(path, flags: int = os.O_RDONLY, mode: int = 0o600) -> int:
    """``os.open(path, flags | SAFE_OPEN)`` of a regular file: a symbolic link, a FIFO, a device
    or a folder raises :class:`NotAMessageFile` (the descriptor closed); the file's descriptor
    is put back into blocking mode."""
    try:
        fd = os.open(path, flags | SAFE_OPEN, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise NotAMessageFile(errno.ELOOP, "a symbolic link: not followed, left where it is", str(path)) from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = ("a FIFO" if stat.S_ISFIFO(st.st_mode) else "a folder" if stat.S_ISDIR(st.st_mode)
                    else "a socket" if stat.S_ISSOCK(st.st_mode) else "a device")
            raise NotAMessageFile(errno.EINVAL, f"{kind}, not a regular file: left where it is", str(path))
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_file(path, limit: int | None = None) -> bytes:
    """The bytes of a message file: ``os.read`` on a descriptor, one read for the whole of a
    regular file (8.7 µs a 4 KB message where ``Path.read_bytes``, which sets up a file object, takes 14.9).
    Opened by :func:`open_regular` (no link followed, no FIFO waited on); a file over ``limit``
    bytes is not read (:class:`NotAMessageFile`: a 2 GB sparse file took 4.2 GB of memory)."""
    fd = open_regular(path)
    try:
        size = os.fstat(fd).st_size
        if limit is not None and size > limit:
            raise NotAMessageFile(errno.EFBIG, f"a message of {size} bytes, over the limit of {limit}: "
                                  "left where it is", str(path))
        data = os.read(fd, size + 1)
        if len(data) == size:                     # all of it (a short read: it shrank, or a 2 GB read cap)
            return data
        parts = [data]                            # or it grew since fstat: read on to the end
        total = len(data)
        while part := os.read(fd, 65536):
            parts.append(part)
            total += len(part)
            if limit is not None and total > limit:
                raise NotAMessageFile(errno.EFBIG, f"a message growing past the limit of {limit} bytes: "
                                      "left where it is", str(path))
        return b"".join(parts)
    finally:
        os.close(fd)


def unlink_quietly(path) -> None:
    """Remove a file if it is there (a temporary that may already have been renamed)."""
    try:
        os.unlink(path)
    except OSError:
        pass


def write_durable(path: Path, data: bytes, like=None) -> None:
    """Create ``path`` (which must not exist) with ``data``, flushed and fsynced (see :func:`write_file`)."""
    fd = write_file(path, data, like)
    try:
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        unlink_quietly(path)
        raise
    os.close(fd)


def glob_escape(name: str) -> str:
    """``name`` as a glob pattern that matches only itself (for finding a file's own temporaries).

    >>> glob_escape("a[1]*.mbox")
    'a[[]1][*].mbox'
    """
    return "".join(f"[{c}]" if c in "*?[" else c for c in name)


def check_writable(path) -> None:
    """Fail now, not after hours of training, if ``path`` cannot be written."""
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise OutputError(f"cannot write {path}: folder {folder} does not exist")
    if path.is_dir():
        raise OutputError(f"cannot write {path}: it is a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputError(f"cannot write {path}: folder {folder} is not writable")


def flock_within(fd: int, wait: float, poll: float, busy) -> None:
    """Take an exclusive ``flock`` on ``fd``, trying every ``poll`` seconds for up to ``wait``;
    then ``busy()`` (which raises the caller's error)."""
    deadline = time.monotonic() + wait
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                busy()
            time.sleep(poll)


@contextlib.contextmanager
def filter_lock(path, wait: float = 60.0):
    """Exclusive ``flock`` on the folder of the filter file ``path`` while it is read, changed
    and written back (``spamkit learn``, a spamd ``TELL``), so that two learners never lose each
    other's messages. Locking the folder, not a lock file, leaves nothing behind; the filter
    file itself cannot carry the lock, since saving replaces it. Waits up to ``wait`` seconds,
    then raises :class:`~spamkit.common.errors.ConfigError` naming the file."""
    folder = os.path.dirname(os.path.abspath(path)) or "."
    fd = os.open(folder, os.O_RDONLY)

    def busy():
        raise ConfigError(f"{path}: another spamkit process is learning into this filter "
                          f"(waited {wait:g} s); try again when it has finished")
    try:
        flock_within(fd, wait, 0.02, busy)
        yield
    finally:
        os.close(fd)


def _stale_temporaries(folder: Path, name: str) -> None:
    """Remove the temporary files of earlier saves of ``name`` whose writing process is gone."""
    for tmp in folder.glob(f".{glob_escape(name)}.spamkit-*.tmp"):
        try:
            pid = int(tmp.name.rsplit(".spamkit-", 1)[1].split("-", 1)[0])
            os.kill(pid, 0)
        except ProcessLookupError:
            tmp.unlink(missing_ok=True)
        except (ValueError, IndexError, PermissionError, OSError):
            continue


def atomic_write(path: Path, data_writer) -> None:
    """Write ``path`` via a temporary file in its folder: flush, fsync, rename (POSIX-atomic).

    The temporary file's name holds the writer's pid, so a later save removes what a
    killed one left; an error names the file and the reason (:class:`OutputError`).
    """
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    tmp = None
    try:
        _stale_temporaries(folder, path.name)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.spamkit-{os.getpid()}-", suffix=".tmp", dir=folder)
        with os.fdopen(fd, "wb") as fh:
            data_writer(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        tmp = None
        fsync_dir(folder)                        # make the rename itself durable
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
