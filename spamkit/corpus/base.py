"""What every corpus reader yields, and the counts it keeps while reading."""

from __future__ import annotations

import datetime as _dt
import email.utils
import re
from collections import Counter
from dataclasses import dataclass, field

from ..common.errors import CorpusError

#: how ``spamkit.parse.message.parse_message`` should read ``raw``:
#: "rfc822" (headers, blank line, body), "enron" (a ``Subject:`` line, then the
#: body with no blank line), "text" (no headers at all: an SMS, a TSV cell),
#: "auto" (decide from the content).
KINDS = ("rfc822", "enron", "text", "auto")


@dataclass(frozen=True)
class LabelledMessage:
    """One message of a corpus, as stored: nothing is decoded yet.

    Attributes
    ----------
    id : str
        Unique within the corpus and stable across runs (a relative path, a
        TSV line number, an mbox ordinal).
    label : str or None
        Class name (``"ham"``, ``"spam"``, or any other class); ``None`` for an
        unlabelled mailbox read without ``--ham``/``--spam``/``--class``.
    raw : bytes
        The message exactly as stored.
    source : str
        Where a person finds it: a path, ``archive.tar.gz!member``, or ``file.tsv:17``.
    kind : str
        One of :data:`KINDS`.
    date : datetime.date or None
        When it arrived, where the corpus says (Enron file names, a Date header).
    where : tuple or None
        Where a process forked from this one reads ``raw`` again without it being sent:
        ``(spool, file descriptor, offset, size)`` of a member of an open archive
        (:meth:`spamkit.corpus.tree.Tree.where`), else None. Not part of the message's identity.
    """

    id: str
    label: str | None
    raw: bytes
    source: str
    kind: str = "auto"
    date: _dt.date | None = None
    where: tuple | None = field(default=None, compare=False, repr=False)


@dataclass
class ReadStats:
    """Counts a reader keeps: nothing it skips goes uncounted."""

    n_messages: int = 0
    n_bytes: int = 0
    per_class: Counter = field(default_factory=Counter)
    skipped: Counter = field(default_factory=Counter)     # reason -> count
    #: the messages that could not be read: "FILE: why" (the first 100; ``skipped`` counts all)
    unreadable: list = field(default_factory=list)
    first_date: _dt.date | None = None
    last_date: _dt.date | None = None

    def add(self, msg: LabelledMessage) -> None:
        self.n_messages += 1
        self.n_bytes += len(msg.raw)
        self.per_class[msg.label] += 1
        if msg.date is not None:
            if self.first_date is None or msg.date < self.first_date:
                self.first_date = msg.date
            if self.last_date is None or msg.date > self.last_date:
                self.last_date = msg.date

    def skip(self, reason: str) -> None:
        self.skipped[reason] += 1


def read_or_skip(tree, rel: str, stats: ReadStats) -> bytes | None:
    """A message file's bytes, or ``None`` when it cannot be read (a dangling link, a folder
    where a file should be, no permission): counted as ``unreadable`` with its name, so that
    one bad file never stops a run over thousands."""
    try:
        return tree.read(rel)
    except CorpusError as exc:
        stats.skip("unreadable")
        if len(stats.unreadable) < 100:
            stats.unreadable.append(str(exc))
        return None


_DATE_LINE = re.compile(rb"^date:[ \t]*(.*(?:\r?\n[ \t].*)*)", re.IGNORECASE | re.MULTILINE)
# the same field from where its line starts (sniff_date finds that line with bytes.find)
_DATE_FIELD = re.compile(rb"date:[ \t]*(.*(?:\r?\n[ \t].*)*)", re.IGNORECASE)

# The date as nearly every mailer writes it (RFC 5322 §3.3: "Sun, 8 Apr 2007 13:07:21 +0200",
# maybe with a zone comment), read without the general parser -- which gives the same date for
# it (tests/test_corpus.py) and was most of the time spent reading a TREC corpus.
_COMMON_DATE = re.compile(rb"[ \t]*(?:[A-Za-z]{3},[ \t]*)?(\d{1,2})[ \t]+([A-Za-z]{3})[ \t]+(\d{4})[ \t]+"
                          rb"(\d{1,2}):(\d{2})(?::(\d{2}))?[ \t]+[+-](\d{2})(\d{2})(?:[ \t]+\([^()\r\n]*\))?[ \t]*\r?")
_MONTHS = {name: number for number, name in enumerate(
    (b"jan", b"feb", b"mar", b"apr", b"may", b"jun", b"jul", b"aug", b"sep", b"oct", b"nov", b"dec"), 1)}


def _header_end(raw: bytes, limit: int) -> int:
    """Where ``\\r?\\n\\r?\\n`` first matches within ``raw[:limit]`` (else ``limit``), by two
    ``bytes.find`` calls: a regular-expression search with no literal prefix was a tenth of
    reading a TREC corpus. The earliest line feed followed by an empty line, less the carriage
    return before it."""
    lf = raw.find(b"\n\n", 0, limit)
    # a "\n\r\n" only counts before that (one ending at its second line feed included): the
    # search stops there rather than running to the limit through every LF-only message
    crlf = raw.find(b"\n\r\n", 0, lf + 1 if lf >= 0 else limit)
    found = [i for i in (lf, crlf) if i >= 0]
    if not found:
        return limit
    at = min(found)
    return at - 1 if at > 0 and raw[at - 1] == 13 else at


def _date_field(raw: bytes, end: int):
    """The match of the first line of ``raw[:end]`` that starts with "date:" in any case: what
    ``_DATE_LINE.search(raw, 0, end)`` gives, its definition, found by ``bytes.find`` in a
    lower-cased copy of the block (a bytes pattern ignores the case of ASCII letters alone, the
    ones ``bytes.lower`` changes); the search was a third of reading a TREC corpus in the
    process that reads it (tests/test_corpus.py compares the two)."""
    low = raw[:end].lower()
    if low.startswith(b"date:"):
        return _DATE_FIELD.match(raw, 0, end)
    at = low.find(b"\ndate:")
    return _DATE_FIELD.match(raw, at + 1, end) if at >= 0 else None


def sniff_date(raw: bytes) -> _dt.date | None:
    """The date of a raw mail's ``Date:`` header, or ``None``; never raises.

    Only the header block is searched (RFC 5322 §3.3 date syntax, parsed by
    :func:`email.utils.parsedate_to_datetime`).

    Examples
    --------
    >>> sniff_date(b"From: a@b\\nDate: Sun, 8 Apr 2007 13:07:21 +0200\\n\\nhi")
    datetime.date(2007, 4, 8)
    >>> sniff_date(b"no headers here") is None
    True
    >>> sniff_date(b"") is None          # a message listed, not read
    True
    """
    if not raw:                                  # (a message listed, not read: an empty Unread)
        return None
    match = _date_field(raw, _header_end(raw, 65536))               # the header block, searched
    if not match:
        return None
    common = _COMMON_DATE.fullmatch(match.group(1))
    if common is not None:
        day, month, year, hour, minute, second, tz_hours, tz_minutes = common.groups()
        number = _MONTHS.get(month.lower())
        if (number is not None and int(year) >= 1000 and int(hour) < 24 and int(minute) < 60
                and int(second or 0) < 60 and int(tz_hours) < 24 and int(tz_minutes) < 60):
            try:
                return _dt.date(int(year), number, int(day))
            except ValueError:                       # 31 Feb: the full parser gives up too
                return None
    text = match.group(1).decode("ascii", "replace")
    try:
        return email.utils.parsedate_to_datetime(text).date()
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
