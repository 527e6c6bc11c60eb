"""What goes wrong when writing mailboxes, in words that say whether anything was lost."""

from __future__ import annotations

import errno

from ..common.errors import SpamkitError


class FilterError(SpamkitError):
    """A mailbox could not be filtered (busy, unreadable, not writable, full disk)."""


def describe(exc: OSError, what: str) -> str:
    if exc.errno == errno.ENOSPC:
        return f"{what}: no space left on the device; nothing was lost, the mailbox is as it was"
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return f"{what}: not writable ({exc.strerror}); nothing was lost, the mailbox is as it was"
    return f"{what}: {exc.strerror or exc}"
