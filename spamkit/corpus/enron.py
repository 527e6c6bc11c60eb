"""The Enron-spam layout (Metsis, Androutsopoulos & Paliouras, CEAS 2006).

``enronN/ham/NNNN.YYYY-MM-DD.owner.ham.txt`` and
``enronN/spam/NNNN.YYYY-MM-DD.GP.spam.txt``. The four-digit number that starts
each name is the message's place in the paper's arrival order (ham and spam
interleaved, numbers unique within one enronN), so messages are yielded in that
order; the date is read from the name.

The files are not mail: the first line is ``Subject: ...`` and the body follows
with no blank line, so a mail parser would read the whole body as header lines.
Messages are therefore yielded with ``kind="enron"``.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections import Counter

from ..common.errors import CorpusError
from .base import LabelledMessage, ReadStats, read_or_skip
from .tree import Tree, is_hidden, join, natural_key

ENRON_NAME = re.compile(r"^(\d+)\.(\d{4})-(\d{2})-(\d{2})\..*\.(ham|spam)\.txt$")


def is_enron_dataset(tree: Tree, rel: str) -> bool:
    """A folder with ``ham/`` and/or ``spam/`` holding Enron-named files."""
    if not tree.is_dir(rel):
        return False
    names = {e.name for e in tree.entries(rel) if e.is_dir}
    if not ({"ham", "spam"} & names):
        return False
    for sub in ("ham", "spam"):
        if sub in names:
            files = [e.name for e in tree.entries(join(rel, sub)) if not e.is_dir and not is_hidden(e.name)]
            if files and ENRON_NAME.match(files[0]):
                return True
    return False


def enron_datasets(tree: Tree, rel: str) -> list[str]:
    """The Enron datasets at ``rel``: itself, or its ``enronN`` sub-folders (or the one folder an archive wraps)."""
    if is_enron_dataset(tree, rel):
        return [rel]
    subs = [join(rel, e.name) for e in tree.entries(rel) if e.is_dir]
    return [s for s in subs if is_enron_dataset(tree, s)]


def parse_enron_name(name: str) -> tuple[int, _dt.date | None, str] | None:
    """``(number, date, label)`` from an Enron file name, or ``None``.

    Examples
    --------
    >>> parse_enron_name("0006.2003-12-18.GP.spam.txt")
    (6, datetime.date(2003, 12, 18), 'spam')
    """
    m = ENRON_NAME.match(name)
    if not m:
        return None
    try:
        date = _dt.date(int(m.group(2)), int(m.group(3)), int(m.group(4)))
    except ValueError:
        date = None
    return int(m.group(1)), date, m.group(5)


def iter_enron(tree: Tree, rel: str, stats: ReadStats):
    """Yield the messages of every Enron dataset at ``rel``, each dataset in arrival order."""
    datasets = enron_datasets(tree, rel)
    if not datasets:
        raise CorpusError(f"{tree.display(rel)}: not an Enron-spam folder (expected ham/ and spam/ "
                          "with files named NNNN.YYYY-MM-DD.*.ham.txt / .spam.txt)")
    for dataset in datasets:
        numbered, others = [], []
        for sub in ("ham", "spam"):
            folder = join(dataset, sub)
            if not tree.is_dir(folder):
                continue
            for path in tree.walk_files(folder):
                name = path.rsplit("/", 1)[-1]
                parsed = parse_enron_name(name)
                if parsed is None:
                    # Not an Enron message name: keep it (never drop mail), label from its folder,
                    # ordered after the numbered ones.
                    others.append((natural_key(name), path, None, sub))
                    continue
                number, date, label = parsed
                numbered.append((number, path, date, sub))
        # arrival order: by number, a number written twice (ham and spam both hold a 0005) by
        # the names' natural order -- the key made only for those, most numbers being unique
        numbers = Counter(item[0] for item in numbered)
        numbered.sort(key=lambda item: (item[0], natural_key(item[1].rsplit("/", 1)[-1]))
                      if numbers[item[0]] > 1 else (item[0],))
        others.sort(key=lambda item: item[0])
        items = [item[1:] for item in numbered] + [item[1:] for item in others]
        for path, date, label in items:
            raw = read_or_skip(tree, path, stats)
            if raw is None:
                continue
            msg = LabelledMessage(id=path, label=label, raw=raw, source=tree.display(path),
                                  kind="enron", date=date, where=tree.where(path))
            stats.add(msg)
            yield msg
