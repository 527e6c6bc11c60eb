"""The TREC spam-track layout (TREC 2005-2007 public corpora).

An index file, normally ``full/index``, lists the messages in delivery order,
one per line: ``spam ../data/inmail.1``. The path is relative to the index's
folder. Order is preserved exactly, since online evaluation classifies each
message and then learns it, in this order.
"""

from __future__ import annotations

import posixpath

from ..common.errors import CorpusError
from ..common.labels import normalise_label
from .base import LabelledMessage, ReadStats, read_or_skip, sniff_date
from .tree import Tree, join


def find_trec_index(tree: Tree, rel: str) -> str | None:
    """The index file of a TREC corpus at ``rel`` (the corpus folder, its ``full/`` folder, or the index itself)."""
    if tree.is_file(rel):
        return rel if rel.rsplit("/", 1)[-1] == "index" else None
    for candidate in ("full/index", "index"):
        if tree.is_file(join(rel, candidate)):
            return join(rel, candidate)
    # An archive usually wraps the corpus in one folder (trec07p/full/index).
    if tree.is_dir(rel):
        dirs = [e.name for e in tree.entries(rel) if e.is_dir]
        if len(dirs) == 1 and tree.is_file(join(rel, f"{dirs[0]}/full/index")):
            return join(rel, f"{dirs[0]}/full/index")
    return None


def iter_trec(tree: Tree, rel: str, stats: ReadStats):
    """Yield the messages listed in the TREC index at ``rel``, in index order."""
    index = find_trec_index(tree, rel)
    if index is None:
        raise CorpusError(f"{tree.display(rel)}: not a TREC corpus (no full/index file)")
    base = posixpath.dirname(index)
    for lineno, line in enumerate(tree.open_text_lines(index), 1):
        text = line.decode("utf-8", "replace").strip()
        if not text:
            stats.skip("blank index line")
            continue
        parts = text.split()
        if len(parts) != 2:
            raise CorpusError(f"{tree.display(index)}:{lineno}: expected '<spam|ham> <path>', got {text!r}")
        label, path = parts
        target = posixpath.normpath(posixpath.join(base, path))
        if target.startswith("../") or target == "..":
            raise CorpusError(f"{tree.display(index)}:{lineno}: path {path!r} leaves the corpus")
        if not tree.is_file(target):
            raise CorpusError(f"{tree.display(index)}:{lineno}: message file {path!r} is missing "
                              f"(looked for {tree.display(target)})")
        raw = read_or_skip(tree, target, stats)
        if raw is None:
            continue
        msg = LabelledMessage(id=target, label=normalise_label(label), raw=raw,
                              source=tree.display(target), kind="rfc822", date=sniff_date(raw),
                              where=tree.where(target))
        stats.add(msg)
        yield msg
