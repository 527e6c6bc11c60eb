"""Locks: against other spamkit runs (``fcntl`` on a ``.spamkit.lock`` file) and the ones mail
clients take on an mbox (a dot-lock ``NAME.lock`` and ``fcntl`` on the file)."""

from __future__ import annotations

import errno
import fcntl
import os
import time
from contextlib import contextmanager
from pathlib import Path

from ..common.durable import NotAMessageFile, flock_within, open_regular
from .failures import FilterError, describe

@contextmanager
def spamkit_lock(lock_path: Path, wait: float):
    """Exclusive ``fcntl`` lock on ``lock_path`` against other spamkit runs; waits up to ``wait`` s.

    The lock file is removed when the run ends, so no lock file stays behind. Removing a file
    others may be waiting on is safe because a holder checks, once it has the lock, that the
    path still names the file it locked (else the lock is on a removed file: it tries again
    on the new one), and the file is removed while still locked.
    """
    deadline = time.monotonic() + wait

    def busy():
        raise FilterError(f"{lock_path}: another spamkit run is filtering this mailbox "
                          f"(waited {wait:g} s); try again when it has finished")
    while True:
        try:
            # never through a link (a root run would create or lock a file elsewhere), never a FIFO
            fd = open_regular(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        except NotAMessageFile as exc:
            raise FilterError(f"{lock_path}: {(exc.strerror or str(exc)).split(':')[0]}; spamkit's lock file must be a regular "
                              "file (remove it)") from None
        except OSError as exc:
            raise FilterError(describe(exc, str(lock_path))) from None
        try:
            flock_within(fd, max(deadline - time.monotonic(), 0.0), 0.05, busy)
            held = os.fstat(fd)
            try:
                now = os.stat(lock_path)
            except FileNotFoundError:
                now = None
        except BaseException:
            os.close(fd)
            raise
        if now is not None and (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino):
            break
        os.close(fd)                               # the previous holder removed it: lock the new one
    try:
        yield
    finally:
        try:
            os.unlink(lock_path)
        except OSError:
            pass
        os.close(fd)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


_PRIVATE = ".spamkit-"


def _write_pid(path: Path, flags: int) -> None:
    """Create ``path`` (``os.open`` flags) holding this process's pid."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | flags, 0o644)
    try:
        os.write(fd, f"{os.getpid()}\n".encode())
    finally:
        os.close(fd)


def _read_pid(dotlock: Path) -> bytes:
    """The first word of a dot-lock (a pid): a regular file, not through a link, 64 bytes at most."""
    fd = open_regular(dotlock)
    try:
        return os.read(fd, 64).split()[0]
    finally:
        os.close(fd)


def _take_dotlock(dotlock: Path) -> bool:
    """Create ``dotlock`` holding our pid, atomically: False if it exists.

    The pid goes into a private file first, which is then hard-linked to the lock's name (the
    way liblockfile and procmail make dot-locks). Creating the lock with ``O_EXCL`` and writing
    the pid after left a window: a run killed between the two left an empty lock that no one
    can tell is stale, and every later run waited its ``--wait`` out and failed.
    """
    private = Path(f"{dotlock}{_PRIVATE}{os.getpid()}")
    _write_pid(private, os.O_TRUNC)
    try:
        os.link(private, dotlock)
        return True
    except FileExistsError:
        return False
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP):
            raise
    finally:
        os.unlink(private)
    try:                               # a file system without hard links: the window above comes back
        _write_pid(dotlock, os.O_EXCL)
    except FileExistsError:
        return False
    return True


def _remove_dead_private_files(dotlock: Path) -> None:
    """Private lock files of killed runs (a kill between creating one and linking it)."""
    prefix = dotlock.name + _PRIVATE
    try:
        names = [n for n in os.listdir(dotlock.parent) if n.startswith(prefix)]
    except OSError:
        return
    for name in names:
        pid = name[len(prefix):]
        if pid.isdigit() and int(pid) != os.getpid() and not pid_alive(int(pid)):
            try:
                os.unlink(dotlock.parent / name)
            except FileNotFoundError:
                pass


@contextmanager
def mbox_locks(path: Path, wait: float):
    """The locks mail clients take on an mbox: a dot-lock ``PATH.lock`` and ``fcntl`` on the file.

    A dot-lock whose process is gone is removed; one that names no process (another program's)
    counts as stale after five minutes, as procmail and liblockfile count it.
    """
    dotlock = Path(str(path) + ".lock")
    deadline = time.monotonic() + wait
    _remove_dead_private_files(dotlock)
    while True:
        try:
            if _take_dotlock(dotlock):
                break
            try:
                owner = int(_read_pid(dotlock))
            except (OSError, ValueError, IndexError):
                owner = None
            try:
                stale_age = time.time() - dotlock.stat().st_mtime
            except FileNotFoundError:
                continue                             # released meanwhile: try again
            if (owner is not None and not pid_alive(owner)) or (owner is None and stale_age > 300):
                try:
                    dotlock.unlink()                 # left by a process that is gone
                except FileNotFoundError:
                    pass
                continue
            if time.monotonic() >= deadline:
                who = f" (pid {owner})" if owner is not None else ""
                raise FilterError(f"{dotlock}: the mailbox is locked by another program{who}; "
                                  "try again later") from None
            time.sleep(0.05)
        except OSError as exc:
            raise FilterError(describe(exc, str(dotlock))) from None
    try:
        try:
            fd = open_regular(path, os.O_RDONLY) if not os.path.islink(path) else open_regular(os.path.realpath(path))
        except OSError as exc:
            raise FilterError(describe(exc, str(path)) if not isinstance(exc, NotAMessageFile)
                              else f"{path}: {(exc.strerror or str(exc)).split(':')[0]}, not an mbox") from None
        with os.fdopen(fd, "rb") as fh:
            try:
                fcntl.lockf(fh.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
            except OSError:
                raise FilterError(f"{path}: locked by another program (fcntl); try again later") from None
            yield
    finally:
        try:
            dotlock.unlink()
        except FileNotFoundError:
            pass
