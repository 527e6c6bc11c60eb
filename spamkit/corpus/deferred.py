"""Trees that stand in for another tree: reads deferred to where the file lies.

Takes an open :class:`~spamkit.corpus.tree.Tree` and gives a tree whose ``read`` returns
:class:`Unread` placeholders (empty bytes that know the file) instead of the bytes: a listing
of a corpus that ships paths, not messages (:class:`ListingTree`, the Dask engine's
partitions), or one whose members a forked process reads where they lie (:class:`LocatedTree`,
``spamkit train`` with worker processes).
"""

from __future__ import annotations

from ..common.errors import CorpusError
from .tree import Tree


class Unread(bytes):
    """A message file not read yet: empty bytes that know where the file is.

    :meth:`spamkit.corpus.Corpus.listing` yields messages with these as ``raw``, so a
    corpus can be cut into partitions by file without reading it (the Dask engine ships
    the paths and its workers read the files).
    """

    tree: Tree
    rel: str
    span: tuple[int, int] | None

    def __new__(cls, tree: Tree, rel: str, span: tuple[int, int] | None = None):
        obj = super().__new__(cls, b"")
        obj.tree, obj.rel, obj.span = tree, rel, span
        return obj

    def read(self) -> bytes:
        """The message: the whole file, or bytes ``span = (start, end)`` of it (a message of an mbox)."""
        if self.span is None:
            return self.tree.read(self.rel)
        return self.tree.read_span(self.rel, *self.span)

    def __reduce__(self):                     # never ship the open tree: only the empty bytes
        return (bytes, (b"",))


class WrappedTree(Tree):
    """A tree that is another tree (``inner``) but for what a subclass changes."""

    def __init__(self, tree: Tree):
        self.inner = tree
        self.container = tree.container

    def read(self, rel: str) -> bytes:
        return self.inner.read(rel)

    def entries(self, rel: str = ""):
        return self.inner.entries(rel)

    def kind_of(self, rel: str):
        return self.inner.kind_of(rel)

    def display(self, rel: str) -> str:
        return self.inner.display(rel)

    def where(self, rel: str) -> tuple | None:
        return self.inner.where(rel)

    def open_text_lines(self, rel: str):
        return self.inner.open_text_lines(rel)

    def local_path(self, rel: str):
        return self.inner.local_path(rel)

    def close(self) -> None:
        self.inner.close()


class ListingTree(WrappedTree):
    """A tree whose :meth:`read` returns :class:`Unread` placeholders; everything else is the real tree's."""

    def read(self, rel: str) -> bytes:
        if self.inner.kind_of(rel) != "file":
            raise CorpusError(f"{self.inner.display(rel)}: no such file")
        return Unread(self.inner, rel)


class LocatedTree(WrappedTree):
    """A tree whose :meth:`read` returns an :class:`Unread` placeholder for a file that a process
    forked from this one reads where it lies (:meth:`Tree.where` is not None: a member of an
    archive whose whole spool is here), and the file's bytes for any other -- read, or counted
    as unreadable, as without it. ``spamkit train`` with worker processes reads the corpus so:
    the workers read the messages, this process only lists them."""

    def read(self, rel: str) -> bytes:
        if self.inner.where(rel) is not None:
            return Unread(self.inner, rel)
        return self.inner.read(rel)
