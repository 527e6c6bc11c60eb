"""Corpora whose class is the name of a folder: generic class folders and SpamAssassin.

Generic layout: ``CORPUS/<class>/...``, one sub-folder per class (``ham/``,
``spam/``, or any class names). A class folder may hold files (one message
each, searched recursively), a Maildir, or an MH folder. Each file is read as
``kind="auto"``: the parser decides between raw mail, an Enron-style
``Subject:`` line, and plain text.

SpamAssassin public corpus: ``easy_ham/``, ``easy_ham_2/``, ``hard_ham/``,
``spam/``, ``spam_2/`` holding raw mail; the ``cmds`` file in each is a shell
script, not a message, and is ignored.
"""

from __future__ import annotations

from ..common.errors import CorpusError
from ..common.labels import normalise_label
from .base import ReadStats
from .mailboxes import is_maildir, is_mh, iter_files, iter_maildir, iter_mh
from .tree import Tree, is_hidden, join

SPAMASSASSIN_FOLDERS = ("easy_ham", "easy_ham_2", "hard_ham", "spam", "spam_2")


def class_folders(tree: Tree, rel: str) -> list[str]:
    """The non-hidden sub-folders of ``rel``, each a class."""
    return [e.name for e in tree.entries(rel) if e.is_dir and not is_hidden(e.name)]


def is_spamassassin(tree: Tree, rel: str) -> bool:
    names = set(class_folders(tree, rel)) if tree.is_dir(rel) else set()
    return bool(names) and names <= set(SPAMASSASSIN_FOLDERS) and bool(names & {"easy_ham", "hard_ham", "spam_2", "easy_ham_2"})


def iter_class_folder(tree: Tree, rel: str, label: str | None, stats: ReadStats, kind: str = "auto"):
    """Yield the messages of one class folder, whatever mailbox shape it has."""
    if is_maildir(tree, rel):
        yield from iter_maildir(tree, rel, label, stats)
    elif is_mh(tree, rel):
        yield from iter_mh(tree, rel, label, stats)
    else:
        yield from iter_files(tree, rel, label, stats, kind=kind)


def iter_folders(tree: Tree, rel: str, stats: ReadStats):
    """Yield every class folder's messages, class by class in name order."""
    classes = class_folders(tree, rel)
    if not classes:
        raise CorpusError(f"{tree.display(rel)}: no class sub-folders (expected e.g. ham/ and spam/)")
    for name in classes:
        yield from iter_class_folder(tree, join(rel, name), normalise_label(name), stats)


def iter_spamassassin(tree: Tree, rel: str, stats: ReadStats):
    """Yield the SpamAssassin public corpus folders' messages (raw mail)."""
    for name in class_folders(tree, rel):
        if name not in SPAMASSASSIN_FOLDERS:
            continue
        yield from iter_files(tree, join(rel, name), normalise_label(name), stats, kind="rfc822")
