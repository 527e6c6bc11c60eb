"""Corpus readers: labelled messages from every common layout, through one interface.

::

    from spamkit.corpus import Corpus
    with Corpus("enron1.tar.gz") as corpus:
        for msg in corpus:
            print(msg.id, msg.label, len(msg.raw))

A :class:`Corpus` streams :class:`LabelledMessage` objects (id, label, raw
bytes, source, date, and how to parse them) one at a time; nothing is decoded
here (that is :mod:`spamkit.parse.message`'s job) and nothing is held in memory
beyond the current message.

Formats (``format=``; ``"auto"`` detects them from the content):

========  =====================================================  ===========
format    layout                                                 labels from
========  =====================================================  ===========
folders   ``CORPUS/<class>/...`` files, Maildirs or MH folders   folder name
enron     ``enronN/{ham,spam}/NNNN.YYYY-MM-DD.*.txt``            folder name
trec      ``full/index`` lines ``spam ../data/inmail.1``         index
spamassassin ``easy_ham/ hard_ham/ spam/ spam_2/``               folder name
tsv       ``label<TAB>text`` per line (SMS Spam Collection)      first column
csv       header with label and text columns                     label column
mbox      one mbox file                                          ``label=``
maildir   ``cur/ new/ tmp/``                                     ``label=``
mh        numbered files                                         ``label=``
eml       one message file, or a folder of them                  ``label=``
========  =====================================================  ===========

Any of them may also be packed in a ``.tar``, ``.tar.gz``, ``.tar.bz2``,
``.tar.xz`` or ``.zip`` archive, which is read directly.
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

from ..common.errors import CorpusError
from ..common.labels import BINARY_CLASSES, normalise_label
from .base import KINDS, LabelledMessage, ReadStats, sniff_date
from .enron import enron_datasets, iter_enron
from .folders import is_spamassassin, iter_folders, iter_spamassassin
from .mboxsplit import estimate_messages
from .mailboxes import is_maildir, is_mh, iter_files, iter_maildir, iter_mbox, iter_mh, looks_like_mbox
from .tabular import iter_csv, iter_tsv, sniff_table
from .trec import find_trec_index, iter_trec
from .archives import archive_kind
from .tree import ArchiveTree, DirTree, Tree, open_tree, tree_address
from .deferred import ListingTree, LocatedTree, Unread, WrappedTree

__all__ = ["Corpus", "LabelledMessage", "ReadStats", "FORMATS", "LABELLED_FORMATS",
           "MAILBOX_FORMATS", "PATH_FORMATS", "Unread", "KINDS", "detect_format", "iter_corpora", "sniff_date",
           "DirTree", "ArchiveTree", "archive_kind"]

#: formats whose files say each message's class
LABELLED_FORMATS = ("folders", "enron", "trec", "spamassassin", "tsv", "csv")
#: formats whose messages can be named without reading them: one file per message, or a
#: span of an mbox file (:meth:`Corpus.listing`)
PATH_FORMATS = ("enron", "trec", "spamassassin", "maildir", "mh", "eml", "folders", "mbox")
#: formats holding one class, named by the caller
MAILBOX_FORMATS = ("mbox", "maildir", "mh", "eml")
FORMATS = LABELLED_FORMATS + MAILBOX_FORMATS


def _head(tree: Tree, rel: str, n: int = 8192) -> bytes:
    chunks, size = [], 0
    lines = tree.open_text_lines(rel)
    try:
        for line in lines:
            chunks.append(line)
            size += len(line)
            if size >= n:
                break
    finally:
        lines.close()                       # release the file now, not at garbage collection
    return b"".join(chunks)[:n]


def detect_format(tree: Tree, rel: str = "", mailbox_only: bool = False) -> tuple[str, str]:
    """Detect the layout at ``rel``; returns ``(format, rel)``, ``rel`` possibly one folder deeper.

    With ``mailbox_only`` (a class was named for the path) only the one-class
    mailbox formats are considered.
    """
    kind = tree.kind_of(rel)
    if kind is None:
        raise CorpusError(f"{tree.display(rel)}: no such file or folder")
    if kind == "file":
        if not mailbox_only and rel.rsplit("/", 1)[-1] == "index" and find_trec_index(tree, rel):
            return "trec", rel
        head = _head(tree, rel)
        if looks_like_mbox(head):
            return "mbox", rel
        if not mailbox_only:
            table = sniff_table(head)
            if table:
                return table, rel
        return "eml", rel
    if is_maildir(tree, rel):
        return "maildir", rel
    if is_mh(tree, rel):
        return "mh", rel
    if mailbox_only:
        return "eml", rel
    if find_trec_index(tree, rel):
        return "trec", rel
    if enron_datasets(tree, rel):
        return "enron", rel
    if is_spamassassin(tree, rel):
        return "spamassassin", rel
    entries = [e for e in tree.entries(rel) if not e.name.startswith(".")]
    if not entries:
        what = "an archive with no files" if tree.container != "dir" and not rel else "empty folder"
        raise CorpusError(f"{tree.display(rel)}: {what}, no messages")
    dirs = [e for e in entries if e.is_dir]
    files = [e for e in entries if not e.is_dir]
    if len(dirs) == 1 and not files:
        # An archive or a folder that wraps the corpus in one more folder: look inside,
        # unless that folder is itself a class (then this is a one-class corpus).
        inner = f"{rel}/{dirs[0].name}" if rel else dirs[0].name
        if normalise_label(dirs[0].name) not in BINARY_CLASSES:
            fmt, inner_rel = detect_format(tree, inner)
            if fmt in LABELLED_FORMATS:
                return fmt, inner_rel
    if dirs and not files:
        return "folders", rel
    if files and not dirs and len(files) == 1:
        sub = f"{rel}/{files[0].name}" if rel else files[0].name
        return detect_format(tree, sub)
    if dirs:
        return "folders", rel
    return "eml", rel


class Corpus:
    """A corpus on disk, in any supported format; iterate it for :class:`LabelledMessage`.

    Parameters
    ----------
    path : str or path-like
        A folder, an archive, or a file (TSV, CSV, mbox, one message, a TREC index).
    format : str
        One of :data:`FORMATS`, or ``"auto"`` (default) to detect it.
    label : str, optional
        The class of every message, for the one-class mailbox formats
        (``mbox``, ``maildir``, ``mh``, ``eml``); ``None`` leaves them unlabelled.
    classes : sequence of str, optional
        The labels a TSV/CSV may use (default ham and spam); ``None`` accepts any.

    After a full iteration, :attr:`stats` holds the counts of that pass. An
    iteration that finds no message raises :class:`~spamkit.common.errors.CorpusError`.
    """

    def __init__(self, path, format: str = "auto", label: str | None = None,
                 classes=BINARY_CLASSES):
        self.path = Path(path)
        self.requested_format = format
        self.label = normalise_label(label) if label is not None else None
        self.classes = tuple(normalise_label(c) for c in classes) if classes is not None else None
        if format != "auto" and format not in FORMATS:
            raise CorpusError(f"{self.path}: unknown format {format!r}; "
                              f"choose one of auto, {', '.join(FORMATS)}")
        self.tree, rel = open_tree(self.path)
        try:
            if format == "auto":
                self.format, self.rel = detect_format(self.tree, rel, mailbox_only=label is not None)
            else:
                self.format, self.rel = format, rel
            if self.format == "trec" and isinstance(self.tree, DirTree):
                # Index paths climb out of full/ ("../data/inmail.1"): root the tree at the
                # corpus folder whether the user named it, its full/ folder or the index.
                index = self.tree.local_path(find_trec_index(self.tree, self.rel) or self.rel)
                assert index is not None          # a folder tree: every member has a local path
                self.tree = DirTree(index.parent.parent)
                self.rel = f"{index.parent.name}/{index.name}"
            if self.label is not None and self.format in LABELLED_FORMATS:
                raise CorpusError(f"{self.path}: a labelled corpus ({self.format}) carries its own "
                                  "labels; give it without a class (not with --ham/--spam/--class)")
        except BaseException:
            self.tree.close()
            raise
        self.stats = ReadStats()

    @property
    def container(self) -> str:
        """How the corpus is stored: ``dir`` or an archive kind (``tar.gz``, ``zip``, ...)."""
        return "file" if isinstance(self.tree, DirTree) and self.rel else self.tree.container

    @property
    def labelled(self) -> bool:
        """Do the messages carry labels (from the layout or from ``label=``)?"""
        return self.format in LABELLED_FORMATS or self.label is not None

    def _reader(self, stats: ReadStats):
        tree, rel, fmt = self.tree, self.rel, self.format
        if fmt == "folders":
            return iter_folders(tree, rel, stats)
        if fmt == "enron":
            return iter_enron(tree, rel, stats)
        if fmt == "trec":
            return iter_trec(tree, rel, stats)
        if fmt == "spamassassin":
            return iter_spamassassin(tree, rel, stats)
        if fmt == "tsv":
            return iter_tsv(tree, rel, stats, self.classes)
        if fmt == "csv":
            return iter_csv(tree, rel, stats, self.classes)
        if fmt == "mbox":
            return iter_mbox(tree, rel, self.label, stats)
        if fmt == "maildir":
            return iter_maildir(tree, rel, self.label, stats)
        if fmt == "mh":
            return iter_mh(tree, rel, self.label, stats)
        return iter_files(tree, rel, self.label, stats, kind="auto")

    def __iter__(self):
        stats = ReadStats()
        for msg in self._reader(stats):
            yield msg
        self.stats = stats
        if stats.n_messages == 0:
            raise CorpusError(f"{self.path}: no messages found (read as {self.format})")

    def cheap_count(self) -> int | None:
        """How many messages the corpus holds, when that is known without reading them: a
        folder of one file per message (a TREC index, Enron's folders, a Maildir...) or an
        archive of them is listed (an archive's members are listed when it is opened), nothing
        read; None for an mbox or a table (counting them reads them: see
        :meth:`estimated_count`). For a progress display."""
        if self.format not in PATH_FORMATS or self.format == "mbox":
            return None
        stats = self.stats
        try:
            with self.listing():
                return sum(1 for _ in self)
        except (CorpusError, OSError):
            return None
        finally:
            self.stats = stats                         # a count is not a pass over the messages

    def estimated_count(self) -> tuple[int, bool] | None:
        """``(messages, exact)``: :meth:`cheap_count`, or for an mbox file about how many
        messages it holds (:func:`~spamkit.corpus.mboxsplit.estimate_messages`: its bytes
        scanned for envelope lines, ~2 ms a MB, not split); None when neither is known (a
        table, an mbox inside an archive). For a progress display."""
        exact = self.cheap_count()
        if exact is not None:
            return exact, True
        local = self.tree.local_path(self.rel) if self.format == "mbox" and isinstance(self.tree, DirTree) else None
        if local is None:
            return None
        try:
            with open(local, "rb") as fh:
                return estimate_messages(fh), False
        except OSError:
            return None

    @contextmanager
    def listing(self):
        """Within the block, iterating yields messages whose ``raw`` is an unread :class:`Unread`.

        Yields whether that is possible: only for :data:`PATH_FORMATS` (one file per message,
        read in an order that does not depend on the files' contents, or an mbox, whose
        messages are spans of the file, found by scanning its lines); for TSV and CSV the block
        iterates as usual. ``msg.raw.read()`` reads the message; ``msg.raw.rel`` (and
        ``msg.raw.span``) name it in the tree at :attr:`address`. A message's date is None
        (it comes from the content).
        """
        with self._wrapped(ListingTree, PATH_FORMATS) as listed:
            yield listed

    @contextmanager
    def located(self):
        """Within the block, iterating yields a message that a process forked from this one reads
        where it lies (a member of an archive whose spool is complete: ``msg.where``) with an
        :class:`Unread` as its ``raw``, not read here; any other message as usual
        (:class:`~spamkit.corpus.deferred.LocatedTree`). Such a message's date is None (it comes from
        the content), and the corpus's byte count leaves it out. Yields whether that is possible:
        for the formats of one file per message (:data:`PATH_FORMATS` but mbox)."""
        with self._wrapped(LocatedTree, tuple(f for f in PATH_FORMATS if f != "mbox")) as located:
            yield located

    @contextmanager
    def _wrapped(self, kind, formats):
        if self.format not in formats or isinstance(self.tree, WrappedTree):
            yield False
            return
        real = self.tree
        self.tree = kind(real)
        try:
            yield True
        finally:
            self.tree = real

    @property
    def address(self) -> tuple[str, str]:
        """Where another process can open this corpus's tree (:func:`~spamkit.corpus.tree.reopen_tree`)."""
        tree = self.tree.inner if isinstance(self.tree, WrappedTree) else self.tree
        return tree_address(tree)

    def close(self) -> None:
        self.tree.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        label = f", label={self.label!r}" if self.label else ""
        return f"Corpus({str(self.path)!r}, format={self.format!r}{label})"


def iter_corpora(corpora):
    """Chain several corpora; ids get the corpus's file name as a prefix so they stay unique."""
    corpora = list(corpora)
    for corpus in corpora:
        prefix = f"{corpus.path.name}:" if len(corpora) > 1 else ""
        for msg in corpus:
            if prefix:
                msg = LabelledMessage(id=prefix + msg.id, label=msg.label, raw=msg.raw,
                                      source=msg.source, kind=msg.kind, date=msg.date, where=msg.where)
            yield msg


def require_classes(per_class, where: str, minimum: int = 2) -> None:
    """Raise :class:`CorpusError` unless ``per_class`` counts at least ``minimum`` labelled classes."""
    present = [c for c, n in per_class.items() if c is not None and n > 0]
    if None in per_class:
        raise CorpusError(f"{where}: {per_class[None]} messages have no class; name the class of "
                          "each mailbox with --ham, --spam or --class NAME=PATH")
    if len(present) < minimum:
        found = ", ".join(f"{c}: {per_class[c]}" for c in present) or "none"
        raise CorpusError(f"{where}: needs at least {minimum} classes, found {found}")
