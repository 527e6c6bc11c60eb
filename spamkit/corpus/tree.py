"""Read-only file trees: a directory on disk, or a tar/zip archive, seen the same way.

Every corpus layout (class folders, Enron-spam, TREC, SpamAssassin, Maildir,
MH, ...) is read through a :class:`Tree`, so each layout works unchanged from
an unpacked folder or straight from a ``.tar.gz``/``.tar.bz2``/``.tar.xz``/
``.zip`` archive.

A compressed tar stream cannot seek backwards without decompressing again
from the start, so :class:`ArchiveTree` first has it decompressed, in chunks, to an
anonymous temporary file in the system temporary folder (a spool:
:mod:`spamkit.corpus.archives`, which also tells archives apart and indexes a plain tar by its
headers); members are then read one at a time in any order. Memory stays flat (the
temporary file costs disk, about the unpacked size, and is deleted on close); reading a
layout in its natural order (Enron's arrival numbers, TREC's index order) does not depend on
the order of the members inside the archive.

One concern: folders and tar/zip archives behind one tree interface, with bounded reads and
the checks hostile archives need.
"""

from __future__ import annotations

import io
import lzma
import os
import re
import tarfile
import zipfile
from typing import IO, Any
from dataclasses import dataclass
from pathlib import Path

from ..common.errors import CorpusError
from .archives import ARCHIVE_OPENERS, Spool, archive_kind, claim_ahead, compression_of, file_head, split_member
from .tarindex import plain_tar_index

_NUMBER = re.compile(r"(\d+)")


def natural_key(name: str) -> list:
    """Sort key under which ``msg2`` comes before ``msg10``.

    ``re.split`` on runs of decimal digits puts the text at the even positions (possibly
    empty) and the digit runs at the odd ones, so two keys compare position by position,
    text with text and number with number: a digit run by its value, then as written
    (``a09`` before ``a9``); a name that starts with digits starts with an empty text, which
    comes before any other. A run is whatever ``\\d`` matches, so ``int()`` reads it (a
    character ``str.isdigit()`` accepts but ``int()`` refuses, "²", stays text).

    Examples
    --------
    >>> sorted(["b10", "b2", "a"], key=natural_key)
    ['a', 'b2', 'b10']
    >>> natural_key("a09.txt")
    ['a', (9, '09'), '.txt']
    """
    parts = _NUMBER.split(name)
    parts[1::2] = [(int(run), run) for run in parts[1::2]]
    return parts


def is_hidden(name: str) -> bool:
    """Names a corpus walk never treats as messages (``.DS_Store``, ``.mh_sequences``)."""
    return name.startswith(".") or name in {"__MACOSX", "Thumbs.db", "desktop.ini"}


@dataclass(frozen=True)
class Entry:
    """One name in a folder of a tree."""

    name: str
    is_dir: bool
    size: int


class Tree:
    """A read-only tree of folders and files addressed by POSIX relative paths.

    ``""`` is the root. Subclasses implement :meth:`entries`, :meth:`read`,
    :meth:`kind_of` and :meth:`display`.
    """

    #: how the tree is stored: "dir", "tar", "tar.gz", "tar.bz2", "tar.xz", "zip"
    container = "dir"

    def entries(self, rel: str = "") -> list[Entry]:
        """The entries of folder ``rel``, in natural name order."""
        raise NotImplementedError

    def kind_of(self, rel: str) -> str | None:
        """``"dir"``, ``"file"`` or ``None`` if ``rel`` does not exist."""
        raise NotImplementedError

    def read(self, rel: str) -> bytes:
        """The whole content of file ``rel``."""
        raise NotImplementedError

    def read_span(self, rel: str, start: int, end: int) -> bytes:
        """Bytes ``start:end`` of file ``rel`` (one message of an mbox)."""
        return self.read(rel)[start:end]

    def where(self, rel: str) -> tuple | None:
        """Where a process forked from this one can read file ``rel`` again by itself:
        ``(spool serial, file descriptor, offset, size)`` (a member of an archive,
        :meth:`ArchiveTree.where`), or None (read it here and send it)."""
        return None

    def display(self, rel: str) -> str:
        """A path a person can find: ``/x/enron1/ham/1.txt`` or ``/x/e.tar.gz!enron1/ham/1.txt``."""
        raise NotImplementedError

    def open_text_lines(self, rel: str):
        """Iterate over the lines (bytes, with endings) of file ``rel``, streaming."""
        raise NotImplementedError

    def local_path(self, rel: str) -> Path | None:
        """The file on disk, when the tree is a plain directory."""
        return None

    def close(self) -> None:
        """Release file handles and temporary files."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def is_dir(self, rel: str) -> bool:
        return self.kind_of(rel) == "dir"

    def is_file(self, rel: str) -> bool:
        return self.kind_of(rel) == "file"

    def walk_files(self, rel: str = "", skip=("cmds",)) -> list[str]:
        """All files below ``rel``, depth first, each folder in natural order.

        Hidden names and the names in ``skip`` (the SpamAssassin corpus keeps a
        ``cmds`` script beside its messages) are not messages and are left out.
        """
        out: list[str] = []
        stack = [rel]
        while stack:
            folder = stack.pop()
            subdirs = []
            for entry in self.entries(folder):
                if is_hidden(entry.name) or entry.name in skip:
                    continue
                child = join(folder, entry.name)
                if entry.is_dir:
                    subdirs.append(child)
                else:
                    out.append(child)
            stack.extend(reversed(subdirs))
        return out


def join(folder: str, name: str) -> str:
    """Join relative POSIX paths, ``""`` being the root."""
    return f"{folder}/{name}" if folder else name


class DirTree(Tree):
    """A folder on disk."""

    container = "dir"

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)

    def _path(self, rel: str) -> Path:
        return self.root / rel if rel else self.root

    def entries(self, rel: str = "") -> list[Entry]:
        path = self._path(rel)
        try:
            with os.scandir(path) as it:
                found = []
                for e in it:
                    try:
                        is_dir = e.is_dir()
                        size = 0 if is_dir else e.stat().st_size
                    except OSError:          # dangling link: list it as an empty file
                        is_dir, size = False, 0
                    found.append(Entry(e.name, is_dir, size))
        except OSError as exc:
            raise CorpusError(f"{path}: cannot list folder: {exc.strerror or exc}") from exc
        return sorted(found, key=lambda e: natural_key(e.name))

    def kind_of(self, rel: str) -> str | None:
        path = self._path(rel)
        if path.is_dir():
            return "dir"
        if path.exists():
            return "file"
        return None

    def read(self, rel: str) -> bytes:
        path = self._path(rel)
        try:
            return path.read_bytes()
        except OSError as exc:
            raise CorpusError(f"{path}: cannot read: {exc.strerror or exc}") from exc

    def read_span(self, rel: str, start: int, end: int) -> bytes:
        path = self._path(rel)
        try:
            with open(path, "rb") as fh:
                fh.seek(start)
                return fh.read(end - start)
        except OSError as exc:
            raise CorpusError(f"{path}: cannot read: {exc.strerror or exc}") from exc

    def open_text_lines(self, rel: str):
        path = self._path(rel)
        try:
            fh = open(path, "rb")
        except OSError as exc:
            raise CorpusError(f"{path}: cannot read: {exc.strerror or exc}") from exc
        with fh:
            yield from fh

    def display(self, rel: str) -> str:
        return str(self._path(rel))

    def local_path(self, rel: str) -> Path | None:
        return self._path(rel)


class ArchiveTree(Tree):
    """A tar or zip archive, read member by member without unpacking it to a folder."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        kind = archive_kind(self.path)
        if kind is None:
            compressed = compression_of(file_head(self.path) or b"")
            if compressed is not None:                   # compressed, but its start does not decompress
                raise CorpusError(f"{self.path}: damaged {compressed[0]} file: its beginning cannot be decompressed")
            raise CorpusError(f"{self.path}: not a tar or zip archive")
        self.container = kind
        self._spool: Spool | None = None
        self._zip: zipfile.ZipFile | None = None
        self._tar: tarfile.TarFile | None = None
        #: each member's handle: a ZipInfo, a TarInfo, or (offset, size) in a plain tar's spool
        self._files: dict[str, Any] = {}
        self._dirs: dict[str, dict[str, Entry]] = {"": {}}
        self._listed: set = {""}                    # folders whose parents _add has listed
        self._sorted: dict[str, list[Entry]] = {}    # entries() of each folder asked for
        try:
            if kind == "zip":
                self._zip = zipfile.ZipFile(self.path)
                for info in self._zip.infolist():
                    self._add(info.filename, info.is_dir(), info.file_size, info)
            else:
                opener = ARCHIVE_OPENERS[kind]
                fh = self._spool = claim_ahead(self.path) or Spool(self.path, opener)
                index = plain_tar_index(fh)
                fh.finish()                             # the whole archive decompressed, or why not
                if index is not None:                   # every member a plain one: read by offset
                    for name, is_dir, size, offset in index:
                        self._add(name, is_dir, size, (offset, size))
                else:                                   # anything else: the standard library's reader
                    fh.seek(0)
                    self._tar = tarfile.open(fileobj=fh, mode="r:")   # type: ignore[call-overload]  # a Spool reads, seeks and tells
                    for member in self._tar.getmembers():
                        if member.isdir() or member.isfile():
                            self._add(member.name, member.isdir(), member.size, member)
        except (OSError, EOFError, tarfile.TarError, zipfile.BadZipFile, lzma.LZMAError) as exc:
            self.close()
            raise CorpusError(f"{self.path}: damaged {kind} archive: {exc}") from exc

    def where(self, rel: str) -> tuple | None:
        """``(spool serial, file descriptor, offset, size)`` of a member read by offset from a
        spool that holds the whole archive (a decompressed archive's temporary file, or the
        ``.tar`` itself): a worker process forked while it is open reads the member there
        instead of being sent its bytes (``spamkit.jobs.engines``). None for anything else."""
        handle = self._files.get(rel)
        spool = self._spool
        if isinstance(handle, tuple) and spool is not None and spool.complete:
            return spool.serial, spool.file.fileno(), handle[0], handle[1]
        return None

    def _member(self, rel: str, handle, start: int = 0, end: int | None = None) -> bytes:
        """Bytes ``start:end`` of a tar member indexed by offset (see :func:`plain_tar_index`)."""
        offset, size = handle
        end = size if end is None else min(end, size)
        start = min(max(start, 0), end)
        assert self._spool is not None               # offsets are indexed only in a spool
        data = self._spool.read_at(offset + start, end - start)
        if len(data) != end - start:
            raise CorpusError(f"{self.display(rel)}: cannot read member: the archive ends inside it")
        return data

    def _add(self, name: str, is_dir: bool, size: int, handle) -> None:
        # the path's components without empty or "." ones (PurePosixPath(name).parts less its
        # root, but a leading "//" is a root here too, as "///" is): a third of the cost of indexing
        parts = [p for p in name.split("/") if p not in ("", ".")]
        if not parts or ".." in parts:
            return                                  # never follow paths out of the archive
        rel = "/".join(parts)
        parent = "/".join(parts[:-1])
        if parent not in self._listed:              # its implied parent folders (once per folder)
            for depth in range(len(parts) - 1):
                self._dirs.setdefault("/".join(parts[:depth]), {})[parts[depth]] = Entry(parts[depth], True, 0)
                self._dirs.setdefault("/".join(parts[:depth + 1]), {})
            self._listed.add(parent)
        if rel in self._dirs:
            self._listed.clear()                    # a member named as a listed folder took its entry
        self._dirs[parent][parts[-1]] = Entry(parts[-1], is_dir, size)
        if is_dir:
            self._dirs.setdefault(rel, {})
        else:
            self._files[rel] = handle

    def entries(self, rel: str = "") -> list[Entry]:
        if rel not in self._dirs:
            raise CorpusError(f"{self.display(rel)}: no such folder in the archive")
        listing = self._sorted.get(rel)                # an archive does not change: sorted once
        if listing is None:
            listing = self._sorted[rel] = sorted(self._dirs[rel].values(), key=lambda e: natural_key(e.name))
        return list(listing)

    def kind_of(self, rel: str) -> str | None:
        if rel in self._dirs:
            return "dir"
        if rel in self._files:
            return "file"
        return None

    def read(self, rel: str) -> bytes:
        handle = self._files.get(rel)
        if handle is None:
            raise CorpusError(f"{self.display(rel)}: no such file in the archive")
        if isinstance(handle, tuple):
            return self._member(rel, handle)
        try:
            if self._zip is not None:
                return self._zip.read(handle)
            assert self._tar is not None                 # a member is in the zip or in the tar
            fh = self._tar.extractfile(handle)
            return fh.read() if fh is not None else b""
        except (OSError, EOFError, tarfile.TarError, zipfile.BadZipFile, lzma.LZMAError) as exc:
            raise CorpusError(f"{self.display(rel)}: cannot read member: {exc}") from exc

    def read_span(self, rel: str, start: int, end: int) -> bytes:
        handle = self._files.get(rel)
        if handle is None:
            raise CorpusError(f"{self.display(rel)}: no such file in the archive")
        if isinstance(handle, tuple):
            return self._member(rel, handle, start, end)
        try:
            fh: IO[bytes] | None
            if self._zip is not None:
                fh = self._zip.open(handle)
            else:
                assert self._tar is not None             # a member is in the zip or in the tar
                fh = self._tar.extractfile(handle)
            if fh is None:                               # a tar member that is not a file
                return b""
            with fh:
                fh.seek(start)
                return fh.read(end - start)
        except (OSError, EOFError, tarfile.TarError, zipfile.BadZipFile, lzma.LZMAError) as exc:
            raise CorpusError(f"{self.display(rel)}: cannot read member: {exc}") from exc

    def open_text_lines(self, rel: str):
        handle = self._files.get(rel)
        if handle is None:
            raise CorpusError(f"{self.display(rel)}: no such file in the archive")
        fh: IO[bytes] | None
        if isinstance(handle, tuple):
            fh = io.BytesIO(self._member(rel, handle))
        elif self._zip is not None:
            fh = self._zip.open(handle)
        else:
            assert self._tar is not None
            fh = self._tar.extractfile(handle)
        if fh is None:                                   # a tar member that is not a file
            return
        with fh:
            yield from fh

    def display(self, rel: str) -> str:
        return f"{self.path}!{rel}" if rel else str(self.path)

    def close(self) -> None:
        for attr in ("_zip", "_tar"):
            obj = getattr(self, attr, None)
            if obj is not None:
                obj.close()
                setattr(self, attr, None)
        if self._spool is not None:
            self._spool.close()
            self._spool = None


def tree_address(tree: Tree) -> tuple[str, str]:
    """(``"dir"`` or ``"archive"``, absolute path): enough for another process to open the same tree."""
    if isinstance(tree, DirTree):
        return "dir", str(tree.root.resolve())
    if isinstance(tree, ArchiveTree):
        return "archive", str(tree.path.resolve())
    raise CorpusError(f"{tree!r}: this tree cannot be reopened elsewhere")


def reopen_tree(address: tuple[str, str]) -> Tree:
    """The tree of :func:`tree_address`, opened again (in a worker process, say)."""
    kind, path = address
    return DirTree(path) if kind == "dir" else ArchiveTree(path)


def open_tree(path: str | os.PathLike) -> tuple[Tree, str]:
    """Open ``path`` as a tree; returns ``(tree, rel)`` where ``rel`` addresses ``path`` in it.

    A folder is its own tree (``rel == ""``); an archive is a tree of its
    members, and ``ARCHIVE!FOLDER`` (or ``ARCHIVE!FILE``) addresses one folder or file inside
    it, read straight from the archive (20 Newsgroups' ``…tar.gz!20news-bydate-train``); any
    other file is addressed inside the tree of its folder.
    """
    inside = split_member(path)
    if inside is not None:
        archive, member = inside
        if not os.access(archive, os.R_OK):
            raise CorpusError(f"{archive}: permission denied")
        tree = ArchiveTree(archive)
        if tree.kind_of(member) is None:
            tree.close()
            raise CorpusError(f"{path}: the archive has no folder or file {member!r}")
        return tree, member
    path = Path(path)
    if not path.exists():
        raise CorpusError(f"{path}: no such file or folder")
    if path.is_dir():
        return DirTree(path), ""
    if not os.access(path, os.R_OK):
        raise CorpusError(f"{path}: permission denied")
    if archive_kind(path) is not None:
        return ArchiveTree(path), ""
    return DirTree(path.parent), path.name
