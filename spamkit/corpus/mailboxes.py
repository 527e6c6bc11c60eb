"""Mailbox formats: mbox files, Maildir and MH folders, folders of ``.eml`` files.

These hold one class each; the class comes from the command line
(``--ham INBOX --spam Junk.mbox``) or from the folder the mailbox sits in.
They are read through :class:`~spamkit.corpus.tree.Tree`, so they work inside
archives too. Writing to mailboxes (filtering) is not done here.

mbox follows the "From " separator convention of RFC 4155 as mail clients read it
(:mod:`spamkit.corpus.mboxsplit`, shared with the mail filter): a message starts at an
envelope line (``From sender date``) at the start of the file or after a blank line, or
where a right ``Content-Length:`` says its body ends; ``From the desk of ...`` in a body is
body text. The envelope line is not part of the message, and is not kept. ``>From `` quoting
is left as stored (mboxo and mboxrd differ on it and a classifier does not care).
"""

from __future__ import annotations

from .base import LabelledMessage, ReadStats, read_or_skip, sniff_date
from .mboxsplit import split_mbox
from .tree import Tree, is_hidden, join, natural_key
from .deferred import ListingTree, Unread


def is_maildir(tree: Tree, rel: str) -> bool:
    """A folder with ``cur/`` and ``new/`` (``tmp/`` is optional in copies)."""
    return tree.is_dir(join(rel, "cur")) and tree.is_dir(join(rel, "new"))


def is_mh(tree: Tree, rel: str) -> bool:
    """A folder whose messages are files named by numbers (``.mh_sequences`` optional)."""
    if not tree.is_dir(rel):
        return False
    entries = tree.entries(rel)
    if any(e.name == ".mh_sequences" for e in entries):
        return True
    files = [e.name for e in entries if not e.is_dir and not is_hidden(e.name)]
    return bool(files) and all(name.isdigit() for name in files)


def looks_like_mbox(head: bytes) -> bool:
    """Does a file start like an mbox (``From sender date``)?"""
    return head.startswith(b"From ") and b"\n" in head[:1024]


def _message(tree: Tree, rel: str, ident: str, raw: bytes, label, source: str, where=None) -> LabelledMessage:
    return LabelledMessage(id=ident, label=label, raw=raw, source=source,
                           kind="rfc822", date=sniff_date(raw), where=where)


def iter_mbox(tree: Tree, rel: str, label: str | None, stats: ReadStats):
    """Yield the messages of mbox file ``rel``, streaming line by line.

    A message is the bytes between its ``From `` line and the blank line before the next:
    one span of the file. Listed without reading (:class:`~spamkit.corpus.deferred.ListingTree`,
    the Dask engine), each message's ``raw`` is an :class:`~spamkit.corpus.deferred.Unread` of
    that span, so a worker reads just its messages.
    """
    display = tree.display(rel)
    listing = isinstance(tree, ListingTree)
    offset = 0                            # bytes of the file before the current chunk
    ordinal = 0
    preamble = None                       # text before the first "From " line, until it is known to be one

    def message(lines, start, size):
        nonlocal ordinal
        raw = Unread(tree.inner, rel, (start, start + size)) if listing else b"".join(lines)
        ordinal += 1                      # 1-based: the n-th message of the file
        msg = _message(tree, rel, f"{rel}#{ordinal}", raw, label, f"{display}#{ordinal}")
        stats.add(msg)
        return msg

    for envelope, lines, separator in split_mbox(tree.open_text_lines(rel)):
        size = sum(map(len, lines))
        start = offset + (len(envelope) if envelope is not None else 0)
        offset = start + size + len(separator)
        if envelope is None:
            preamble = (lines, start, size)
            continue
        if preamble is not None:
            # Text before the first "From " line: not a message by the format, but never dropped silently.
            stats.skip("text before the first 'From ' line")
            preamble = None
        yield message(lines, start, size)
    if preamble is not None:
        yield message(*preamble)          # a file without any "From " line: one message, read as such


def _one_per_file(tree: Tree, paths, label: str | None, stats: ReadStats):
    """The messages of files holding one message each (Maildir, MH), in the order given; an
    unreadable file is counted and skipped (:func:`read_or_skip`)."""
    for path in paths:
        raw = read_or_skip(tree, path, stats)
        if raw is None:
            continue
        msg = _message(tree, path, path, raw, label, tree.display(path), tree.where(path))
        stats.add(msg)
        yield msg


def iter_maildir(tree: Tree, rel: str, label: str | None, stats: ReadStats):
    """Yield the messages of Maildir ``rel``: ``new/`` then ``cur/``, each in name order."""
    for sub in ("new", "cur"):
        folder = join(rel, sub)
        if tree.is_dir(folder):
            yield from _one_per_file(tree, (join(folder, e.name) for e in tree.entries(folder)
                                            if not e.is_dir and not is_hidden(e.name)), label, stats)


def iter_files(tree: Tree, rel: str, label: str | None, stats: ReadStats, kind: str = "rfc822"):
    """Yield each file below ``rel`` (an MH folder, a folder of ``.eml`` files, one file) as a message."""
    if tree.is_file(rel):
        paths = [rel]
    else:
        paths = tree.walk_files(rel)
    for path in paths:
        raw = read_or_skip(tree, path, stats)
        if raw is None:
            continue
        msg = LabelledMessage(id=path, label=label, raw=raw, source=tree.display(path),
                              kind=kind, date=sniff_date(raw) if kind in ("rfc822", "auto") else None,
                              where=tree.where(path))
        stats.add(msg)
        yield msg


def iter_mh(tree: Tree, rel: str, label: str | None, stats: ReadStats):
    """Yield the messages of MH folder ``rel`` in numeric order (sub-folders are other mailboxes)."""
    names = sorted((e.name for e in tree.entries(rel) if not e.is_dir and e.name.isdigit()), key=natural_key)
    yield from _one_per_file(tree, (join(rel, name) for name in names), label, stats)
