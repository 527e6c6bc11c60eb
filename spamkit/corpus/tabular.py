"""Tables of (label, text): TSV like the SMS Spam Collection, and CSV.

TSV: one message per line, ``label<TAB>text`` (Almeida et al.'s SMS Spam
Collection). CSV: a header row naming a label column (``label``, ``class``,
``category``, ``type``, ``v1``) and a text column (``text``, ``message``,
``sms``, ``body``, ``email``, ``v2``), or two unnamed columns label, text.
Lines are decoded as UTF-8; a line that is not UTF-8 is decoded as
Windows-1252 and counted in ``stats.skipped`` under "decoded as cp1252"
(the message is kept: nothing is dropped because of its encoding).
"""

from __future__ import annotations

import csv
import io

from ..common.errors import CorpusError
from ..common.labels import BINARY_CLASSES, normalise_label
from .base import LabelledMessage, ReadStats
from .tree import Tree

LABEL_COLUMNS = ("label", "class", "category", "type", "v1", "target", "spam")
TEXT_COLUMNS = ("text", "message", "sms", "body", "email", "content", "v2", "msg")


def _decode(line: bytes, stats: ReadStats) -> str:
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError:
        stats.skip("line decoded as cp1252 (not UTF-8); kept")
        return line.decode("cp1252", "replace")


def _check_label(raw_label: str, classes, where: str) -> str:
    label = normalise_label(raw_label)
    if classes is not None and label not in classes:
        allowed = ", ".join(sorted(classes))
        raise CorpusError(f"{where}: unknown label {raw_label!r}; expected one of {allowed} "
                          "(name other classes with --classes)")
    return label


def iter_tsv(tree: Tree, rel: str, stats: ReadStats, classes=BINARY_CLASSES):
    """Yield one message per ``label<TAB>text`` line of ``rel``; blank lines are counted and skipped."""
    display = tree.display(rel)
    classes = set(classes) if classes is not None else None
    for lineno, line in enumerate(tree.open_text_lines(rel), 1):
        text = _decode(line, stats).rstrip("\r\n")
        if not text.strip():
            stats.skip("blank line")
            continue
        if "\t" not in text:
            raise CorpusError(f"{display}:{lineno}: expected '<label><TAB><text>', got {text[:60]!r}")
        raw_label, body = text.split("\t", 1)
        label = _check_label(raw_label, classes, f"{display}:{lineno}")
        msg = LabelledMessage(id=f"{rel}:{lineno}", label=label, raw=body.encode("utf-8"),
                              source=f"{display}:{lineno}", kind="text")
        stats.add(msg)
        yield msg


def _columns(header: list[str]) -> tuple[int, int] | None:
    names = [h.strip().lower() for h in header]
    label = next((names.index(c) for c in LABEL_COLUMNS if c in names), None)
    text = next((names.index(c) for c in TEXT_COLUMNS if c in names), None)
    if label is None or text is None:
        return None
    return label, text


def iter_csv(tree: Tree, rel: str, stats: ReadStats, classes=BINARY_CLASSES):
    """Yield one message per CSV record of ``rel`` (quoted fields may span lines)."""
    display = tree.display(rel)
    classes = set(classes) if classes is not None else None
    lines = (_decode(line, stats) for line in tree.open_text_lines(rel))
    reader = csv.reader(lines)
    try:
        first = next(reader)
    except StopIteration:
        return
    except csv.Error as exc:
        raise CorpusError(f"{display}:1: not a CSV file: {exc}") from exc
    columns = _columns(first)
    pending = []
    if columns is None:
        if len(first) < 2:
            raise CorpusError(f"{display}:1: expected a header naming a label and a text column, "
                              f"or rows '<label>,<text>', got {first!r}")
        columns = (0, 1)
        pending = [first]
    li, ti = columns

    def rows():
        yield from pending
        yield from reader

    try:
        for row in rows():
            lineno = reader.line_num
            if not row or not any(cell.strip() for cell in row):
                stats.skip("blank line")
                continue
            if len(row) <= max(li, ti):
                raise CorpusError(f"{display}:{lineno}: expected at least {max(li, ti) + 1} columns, "
                                  f"got {len(row)}")
            label = _check_label(row[li], classes, f"{display}:{lineno}")
            msg = LabelledMessage(id=f"{rel}:{lineno}", label=label, raw=row[ti].encode("utf-8"),
                                  source=f"{display}:{lineno}", kind="text")
            stats.add(msg)
            yield msg
    except csv.Error as exc:
        raise CorpusError(f"{display}:{reader.line_num}: malformed CSV: {exc}") from exc


def sniff_table(head: bytes) -> str | None:
    """``"tsv"``, ``"csv"`` or ``None`` from the first bytes of a file."""
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        text = head.decode("cp1252", "replace")
    lines = [ln for ln in text.splitlines()[:20] if ln.strip()]
    if len(lines) > 1:
        lines = lines[:-1]          # the last line may be cut short
    if not lines:
        return None
    if all("\t" in ln and 0 < ln.index("\t") <= 20 for ln in lines):
        return "tsv"
    try:
        rows = list(csv.reader(io.StringIO("\n".join(lines))))
    except csv.Error:
        return None
    if rows and _columns(rows[0]) is not None:
        return "csv"
    return None
