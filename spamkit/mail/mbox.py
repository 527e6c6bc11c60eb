"""An mbox as chunks (``From `` line, message, blank line), and the journal that makes a rewrite
of two mboxes (a source and a destination) all-or-nothing across a crash."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from ..corpus.mboxsplit import split_mbox
from ..common.durable import fsync_dir, glob_escape, write_durable
from .failures import FilterError

def ends_without_blank_line(path: Path) -> bool:
    """Does a non-empty mbox end without the blank line that must precede the next ``From ``?"""
    size = path.stat().st_size
    if size == 0:
        return False
    with open(path, "rb") as fh:
        fh.seek(max(0, size - 2))
        tail = fh.read()
    return not (tail.endswith(b"\n\n") or tail.endswith(b"\r\n\r\n") or tail == b"\n")


@dataclass
class MboxChunk:
    """One stored message of an mbox: its ``From `` line, the message, the blank line after it.

    ``envelope`` is ``None`` for text before the first ``From `` line (kept, never dropped).
    ``envelope + message + separator`` are the file's bytes exactly.
    """

    envelope: bytes | None
    message: bytes
    separator: bytes

    def raw(self) -> bytes:
        return (self.envelope or b"") + self.message + self.separator


def iter_mbox_chunks(path: Path):
    """The chunks of an mbox, split as mail clients split it (:func:`spamkit.corpus.mboxsplit.split_mbox`:
    a message's right ``Content-Length:``, else an envelope-shaped ``From `` line after a blank
    line), so that a body line starting with ``From `` never cuts a message in two."""
    with open(path, "rb") as fh:
        for envelope, lines, separator in split_mbox(fh):
            yield MboxChunk(envelope, b"".join(lines), separator)


def journal_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.spamkit-journal")


def owner_path(tmp) -> Path:
    return Path(str(tmp) + ".owner")


def commit_mbox(path: Path, renames: dict) -> None:
    """Commit a rewrite of source ``path``: ``renames`` maps each final mbox to its finished temporary file.

    Order: every destination's temporary file gets an ``.owner`` note naming the source's
    journal (so that a recovery started from the destination knows whose it is); then the
    journal is written atomically -- the commit point; then the renames; then the notes and
    the journal are deleted. All temporary files are complete and fsynced before any of this.
    """
    journal = journal_path(path)
    for final, tmp in renames.items():
        if Path(final) != path:
            write_durable(owner_path(tmp), str(journal).encode())
    tmp_journal = journal.with_name(journal.name + ".tmp")
    write_durable(tmp_journal, json.dumps({"renames": renames}).encode())
    os.replace(tmp_journal, journal)                          # the commit point
    fsync_dir(path.parent)
    _roll_forward(journal, renames)


def _roll_forward(journal: Path, renames: dict) -> None:
    for final, tmp in renames.items():
        if os.path.exists(tmp):
            os.replace(tmp, final)
            fsync_dir(Path(final).parent)
    for tmp in renames.values():
        owner = owner_path(tmp)
        if owner.exists():
            owner.unlink()
    os.unlink(journal)
    fsync_dir(journal.parent)


def _recover_journal(journal: Path) -> None:
    try:
        renames = json.loads(journal.read_text())["renames"]
    except (OSError, ValueError, KeyError) as exc:
        raise FilterError(f"{journal}: unreadable journal of an interrupted run ({exc}); "
                          "remove it by hand after checking the mailbox") from None
    _roll_forward(journal, renames)


def recover_mbox(path: Path) -> str | None:
    """Finish or undo an interrupted rewrite touching ``path``; returns what was done, if anything.

    A journal next to ``path`` is rolled forward. A leftover temporary file of ``path`` is
    either a destination's part of another mbox's committed rewrite (its ``.owner`` note names
    that journal, which is then rolled forward) or the remains of a run that died before
    committing, which is deleted: the mailbox itself was never touched.
    """
    done = []
    journal = journal_path(path)
    tmp_journal = journal.with_name(journal.name + ".tmp")
    if tmp_journal.exists():
        tmp_journal.unlink()                                  # died just before the commit point
    if journal.exists():
        _recover_journal(journal)
        done.append("completed an interrupted run")
    discarded = 0
    for tmp in sorted(path.parent.glob(f".{glob_escape(path.name)}.spamkit-new-*")):
        if tmp.name.endswith(".owner") or not tmp.exists():
            continue
        owner = owner_path(tmp)
        if owner.exists():
            source_journal = Path(owner.read_text())
            if source_journal.exists():
                _recover_journal(source_journal)
                done.append(f"completed an interrupted run of {source_journal.name[1:-len('.spamkit-journal')]}")
                continue
            owner.unlink()
        if tmp.exists():
            tmp.unlink()
            discarded += 1
    if discarded:
        done.append(f"discarded {discarded} unfinished file(s) of an interrupted run (the mailbox was intact)")
    return f"{path}: " + "; ".join(done) if done else None
