"""Durable writes: files and renames that survive a crash (fsync of the file and of its folder).

Shared by the filter files (:mod:`spamkit.persist`) and the mailbox writer
(:mod:`spamkit.mailfilter`); standard library only.
"""

from __future__ import annotations

import os
from pathlib import Path


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


def write_durable(path: Path, data: bytes) -> None:
    """Create ``path`` (which must not exist) with ``data``, flushed and fsynced."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        try:
            os.unlink(path)
        except OSError:
            pass
        raise
    os.close(fd)
