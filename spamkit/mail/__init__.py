"""Filtering mailboxes in place: tag each message with its verdict, move spam, lose nothing.

Owns writing to mailboxes; reading labelled corpora stays in :mod:`spamkit.corpus`, the
verdicts come from a :class:`~spamkit.filterfile.spamfilter.SpamFilter` and its decision layer.
One module per concern: :mod:`~spamkit.mail.tags` (the tag format),
:mod:`~spamkit.mail.locks`, :mod:`~spamkit.mail.mailboxes` (which kind a path
is; Maildir and MH behind one interface), :mod:`~spamkit.mail.mbox` (an mbox as
chunks, and the journal), :mod:`~spamkit.mail.run` (the run and its summary),
:mod:`~spamkit.mail.failures` (``FilterError``).

Tags
    The verdict is written as header fields *prepended* to the message, the way trace
    fields (``Received:``) are added, SpamAssassin's way: ``X-Spam-Status: Yes|No|Unsure,
    score=7.5 required=5.0 tests=... p=0.997 model=NAME@HASH``, ``X-Spam-Flag: YES`` (spam),
    ``X-Spam-Level``, ``X-Spam-Probability``, ``X-Spamkit-Version`` and ``X-Spamkit-Model``
    (:mod:`~spamkit.mail.tags`). Everything after them is the original message, byte
    for byte (headers, body, line endings, even a message with no header section at all),
    except another filter's fields of those names, renamed ``X-Spam-Prev-...``;
    :func:`~spamkit.parse.markup.split_tags` undoes both. Re-tagging removes the old spamkit
    fields at the top first; an mbox envelope line stays first. A message whose ``X-Spamkit-Model`` names the same filter
    file (its SHA-256) is not scored again unless forced: its recorded verdict is used.

Never losing a message
    Maildir and MH hold one message per file. Tagging writes the new file beside the old
    one (Maildir ``tmp/``, a hidden name in an MH folder), fsyncs it and renames it over
    the original (POSIX rename is atomic: a reader sees the old or the new file, never half
    of one). Moving is a rename into the destination folder. A SIGKILL at any instant
    therefore leaves every message exactly once, tagged or not. The fsyncs, renames and
    folder fsyncs are done 64 messages at a time, in order, by a thread of their own while
    the next messages are read and judged (:class:`~spamkit.mail.commit.GroupCommit`).
    Before its new version replaces it, a message is hard-linked to a second, hidden name
    beside the temporaries (so the rename does not free the old file); those names are
    removed once the renames are durable, or by the next run's clean-up after a crash --
    a second name of a message, never a copy a mail client would show.

    An mbox is one file, and moving spam to another mbox changes two files, which no
    single system call can do at once. The run writes the new source and the new
    destination to temporary files in their own folders (flushed and fsynced), then commits
    by writing a journal (``.NAME.spamkit-journal``: which temporary file replaces which
    file) atomically, then renames, then deletes the journal. Every run starts by
    recovering: a journal is rolled forward (its renames redone), temporary files without a
    journal are deleted (the run died before committing; the originals are intact). So after
    a kill, the next run (or ``spamkit filter --recover``) restores the exactly-once state.
    While it works on an mbox, a run holds the locks mail clients use: ``fcntl`` on the file
    and a dot-lock ``NAME.lock`` (removed when stale, i.e. when its process is gone).

    MH folders are locked the way MH programs lock them, on ``.mh_sequences``.
    Every folder a run writes is also locked against other spamkit runs (``fcntl`` on a
    ``.spamkit.lock`` file): a second run waits up to ``wait`` seconds, then stops with a
    message naming the lock, so two runs never interleave their writes.
"""

from __future__ import annotations

import importlib
import os  # noqa: F401  (tests replace os.replace here to simulate a failing disk)

#: where each name of the package is defined; imported when first asked for, so that pipe mode,
#: which needs only the tags, does not import the mailbox machinery (and the corpus readers) it
#: never uses: about 20 ms of each delivery's start
_HOME = {
    "SPAMKIT_FIELDS": "..parse.markup", "split_tags": "..parse.markup",
    # exit status of pipe mode (``spamkit filter MODEL -``), as bogofilter's: 0 spam, 1 ham, 2 unsure, 3 error
    "EXIT_ERROR": "..common.passthrough", "EXIT_HAM": "..common.passthrough", "EXIT_SPAM": "..common.passthrough",
    "EXIT_UNSURE": "..common.passthrough",
    "FilterError": ".failures",
    "ensure_destination": ".mailboxes", "mailbox_kind": ".mailboxes",
    "MboxChunk": ".mbox", "commit_mbox": ".mbox", "iter_mbox_chunks": ".mbox", "journal_path": ".mbox",
    "recover_mbox": ".mbox",
    "FilterSummary": ".run", "MailFilter": ".run",
    "STATUS_WORD": ".tags", "VERDICTS": ".tags", "model_id_of": ".tags", "newline_of": ".tags",
    "recorded_verdict": ".tags", "tag": ".tags", "tag_fields": ".tags",
}

__all__ = list(_HOME)


def __getattr__(name: str):
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list:
    return sorted({*globals(), *_HOME})
