"""Locks: against other spamkit runs (``fcntl`` on a ``.spamkit.lock`` file) and the ones mail
clients take on an mbox (a dot-lock ``NAME.lock`` and ``fcntl`` on the file)."""

from __future__ import annotations

import fcntl
import os
import time
from contextlib import contextmanager
from pathlib import Path

from ..durable import flock_within
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
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
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


@contextmanager
def mbox_locks(path: Path, wait: float):
    """The locks mail clients take on an mbox: a dot-lock ``PATH.lock`` and ``fcntl`` on the file."""
    dotlock = Path(str(path) + ".lock")
    deadline = time.monotonic() + wait
    while True:
        try:
            fd = os.open(dotlock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            os.write(fd, f"{os.getpid()}\n".encode())
            os.close(fd)
            break
        except FileExistsError:
            try:
                owner = int(dotlock.read_text().split()[0])
            except (OSError, ValueError, IndexError):
                owner = None
            stale_age = time.time() - dotlock.stat().st_mtime if dotlock.exists() else 0
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
        with open(path, "rb") as fh:
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
