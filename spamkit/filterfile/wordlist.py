"""bogofilter word lists in and out: ``spamkit import-wordlist`` and ``spamkit export-wordlist``.

A bogofilter user's years of training live in its word list, a Berkeley DB file
(``~/.bogofilter/wordlist.db``). bogofilter's own ``bogoutil -d wordlist.db`` writes it as
text, one record per line (bogoutil(1); bogofilter's ``src/bogoutil.c``)::

    TOKEN SPAM_COUNT HAM_COUNT [DATE]

where the counts are the spam and ham messages the token was registered in, and a few
records whose token starts with a dot are bookkeeping: ``.MSG_COUNT`` holds the numbers of
spam and ham messages registered, ``.ROBX`` (when ``bogoutil -R`` has stored one) the
unknown-token probability times 1,000,000, ``.ENCODING`` 2 for UTF-8 tokens, and
``.WORDLIST_VERSION``. ``bogoutil -l wordlist.db`` reads the same text back.

Imported, the counts become a Robinson/Fisher filter (:class:`~spamkit.models.RobinsonFisher`)
with bogofilter's compiled-in parameters (robs 0.0178, robx 0.52, min_dev 0.375, every clue;
bogofilter(1), "robx", "robs", "min-dev") and its three-way cut-offs (ham below 0.45, spam
from 0.99, unsure between), over bogofilter's tokens (:mod:`spamkit.text.bogolex`), so the
imported filter scores mail as bogofilter did. It is an ordinary counting filter from then on:
``spamkit learn`` adds to it, ``spamkit train --tokens bogofilter`` builds one from mail.
"""

from __future__ import annotations

import array
import gc
from contextlib import contextmanager
from itertools import repeat
from operator import getitem
import io  # noqa: F401 (the doctests read word lists from memory)
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..decide.decision import CostMatrix
from ..common.errors import ConfigError, CorpusError
from ..features.counting import sorted_with_order
from ..features.vectorizer import Vectorizer
from ..common.labels import HAM_NAME, SPAM_NAME
from .manifest import MAX_LINE_BYTES
from ..models import FisherNBStack, RobinsonFisher
from ..models.counting import CountingModel
from .spamfilter import SpamFilter
from ..text import Analyzer
from ..text.bogolex import token_bytes, token_text

__all__ = ["BOGOFILTER", "Wordlist", "read_wordlist", "wordlist_filter", "write_wordlist"]

#: bogofilter 1.2's compiled-in parameters (bogofilter(1); ``src/globals.c``)
BOGOFILTER = {"robs": 0.0178, "robx": 0.52, "min_dev": 0.375, "ham_cutoff": 0.45, "spam_cutoff": 0.99}
#: the wordlist version bogofilter 1.2 writes (``.WORDLIST_VERSION``)
_WORDLIST_VERSION = 20040500
#: TOKEN SPAM HAM [DATE]; bogofilter keeps a token's own trailing blanks ("Cherian " from a From line)
_RECORD = re.compile(rb"^(\S.*?) (\d+) (\d+)(?: (\d+))?\r?$")
#: the first bytes of a Berkeley DB file (btree magic 0x053162 at offset 12, either byte order)
_BDB_MAGIC = (b"\x62\x31\x05\x00", b"\x00\x05\x31\x62")


@dataclass
class Wordlist:
    """The counts of a bogofilter word list.

    ``tokens`` with their ``spam`` and ``ham`` message counts, the numbers of messages
    registered (``n_spam``, ``n_ham``), and ``robx`` when the list stores one.
    """

    tokens: list = field(default_factory=list)
    spam: np.ndarray | None = None
    ham: np.ndarray | None = None
    n_spam: int = 0
    n_ham: int = 0
    robx: float | None = None
    skipped: int = 0


def _open_text(source):
    if source in ("-", None):
        import sys
        return sys.stdin.buffer, "standard input"
    path = Path(source)
    if path.is_dir():
        raise CorpusError(f"{path}: a folder; give the dump of its word list: "
                          f"bogoutil -d {path / 'wordlist.db'} > wordlist.txt")
    try:
        with path.open("rb") as stream:
            head = stream.read(16)
    except OSError as exc:
        raise CorpusError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if head[12:16] in _BDB_MAGIC or head.startswith(b"SQLite format 3"):
        raise CorpusError(f"{path}: a bogofilter database file, not its text dump; write the dump first: "
                          f"bogoutil -d {path} > wordlist.txt")
    return path.open("rb"), str(path)


#: lines of a word list read and checked at a time
BLOCK_LINES = 4096


def _line_blocks(stream):
    """The lines of ``stream`` (without their line feeds), :data:`BLOCK_LINES` at a time."""
    block: list = []
    for line in stream:
        block.append(line[:-1] if line.endswith(b"\n") else line)
        if len(block) == BLOCK_LINES:
            yield block
            block = []
    if block:
        yield block


def _record(line: bytes):
    """``(token bytes, spam, ham)`` of one record line (without its line feed), or None when it is
    not one. The same as matching :data:`_RECORD` (the shortest token that two or three counts
    follow), with ``rsplit`` instead of the regular expression: a third of the time."""
    if line.endswith(b"\r"):
        line = line[:-1]
    parts = line.rsplit(b" ", 3)
    if len(parts) == 4 and parts[1].isdigit() and parts[2].isdigit() and parts[3].isdigit() and parts[0][:1].strip():
        if b"\r" not in parts[0]:
            return parts[0], parts[1], parts[2]
    parts = line.rsplit(b" ", 2)
    if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit() and parts[0][:1].strip() and b"\r" not in parts[0]:
        return parts[0], parts[1], parts[2]
    m = _RECORD.match(line)                    # what rsplit cannot tell (a \v or \f before a count)
    return None if m is None else (m.group(1), m.group(2), m.group(3))


def read_wordlist(source) -> Wordlist:
    """Read ``bogoutil -d`` output from a file path or ``"-"`` (standard input).

    Lines that are not records are refused with their line number; a token listed twice has
    its counts added (``bogoutil -l`` merges the same way); a token longer than a filter file's
    line (:data:`spamkit.filterfile.manifest.MAX_LINE_BYTES`, 4,096 bytes: bogofilter's own are at most 30)
    is left out and counted in ``skipped``. Tokens keep the order of their first record.

    >>> w = read_wordlist(io.BytesIO(b".MSG_COUNT 2 3 20070409\\nviagra 2 0 20070409\\nlunch 0 3\\n"))
    >>> w.tokens, w.spam.tolist(), w.ham.tolist(), w.n_spam, w.n_ham
    (['viagra', 'lunch'], [2, 0], [0, 3], 2, 3)
    """
    stream, name = (source, "input") if hasattr(source, "read") else _open_text(source)
    tokens: list = []
    spam = array.array("q")
    ham = array.array("q")
    out = Wordlist()
    seen_count = False

    def one(number: int, line: bytes) -> None:
        """A line that is not a plain ``TOKEN SPAM HAM DATE`` record: the bookkeeping, three fields,
        trailing blanks, a carriage return, or what is not a record at all."""
        nonlocal seen_count
        record = _record(line)
        if record is None:
            if not line.strip():
                return
            raise CorpusError(f"{name}, line {number}: not a word-list record (TOKEN SPAM HAM [DATE]): "
                              f"{line[:60]!r}")
        raw_token, s, h = record
        if max(len(s), len(h)) > 18:    # past int64 (and int()'s 4,300 digits)
            raise CorpusError(f"{name}, line {number}: a count of more than 18 digits: {line[:60]!r}")
        if raw_token.startswith(b"."):
            if raw_token == b".MSG_COUNT":
                out.n_spam, out.n_ham, seen_count = int(s), int(h), True
            elif raw_token == b".ROBX":
                out.robx = int(s) / 1_000_000.0
            return
        if len(raw_token) > MAX_LINE_BYTES // 4 and len(token_text(raw_token).encode("utf-8")) > MAX_LINE_BYTES:
            out.skipped += 1
            return
        tokens.append(token_text(raw_token))
        spam.append(int(s))
        ham.append(int(h))

    try:
        with _collector_paused():
            _read_blocks(stream, one, tokens, spam, ham)
    finally:
        if stream is not source and name != "standard input":
            stream.close()
    if not seen_count:
        raise CorpusError(f"{name}: no .MSG_COUNT record: is this the output of bogoutil -d?")
    if not tokens:
        raise CorpusError(f"{name}: the word list holds no token"
                          + (f" shorter than {MAX_LINE_BYTES} bytes ({out.skipped} left out)" if out.skipped else ""))
    out.tokens, out.spam, out.ham = _merged(tokens, np.frombuffer(spam, dtype=np.int64),
                                            np.frombuffer(ham, dtype=np.int64), name)
    over = int(np.sum(out.spam > out.n_spam) + np.sum(out.ham > out.n_ham))
    if out.n_spam == 0 or out.n_ham == 0 or over:
        raise CorpusError(f"{name}: counts do not add up: {out.n_spam} spam and {out.n_ham} ham messages "
                          f"registered{f', and {over} token counts above them' if over else ''}; a filter needs "
                          "both classes, each token in at most as many messages as were registered")
    return out


def _read_blocks(stream, one, tokens: list, spam: array.array, ham: array.array) -> None:
    """The records of ``stream`` into ``tokens``, ``spam`` and ``ham``: a block of plain
    ``TOKEN SPAM HAM DATE`` records (all but a few lines of a dump) in bulk, one ``rsplit`` a line
    then each check over the whole block; a block with any other line through ``one(number,
    line)``, line by line."""
    number = 0
    for lines in _line_blocks(stream):
        parts = list(map(bytes.rsplit, lines, repeat(b" "), repeat(3)))
        plain = set(map(len, parts)) == {4}
        if plain:
            raw, s, h, d = zip(*parts)
            plain = (b"".join(s + h + d).isdigit() and min(map(len, s + h + d)) > 0
                     and max(map(len, s + h)) <= 18 and max(map(len, raw)) <= MAX_LINE_BYTES // 4
                     and b"".join(map(getitem, raw, repeat(slice(0, 1)))).isalnum() and b"\r" not in b"".join(raw))
        if plain:
            tokens.extend(map(bytes.decode, raw, repeat("utf-8"), repeat("backslashreplace")))
            spam.extend(map(int, s))
            ham.extend(map(int, h))
        else:
            for i, line in enumerate(lines, number + 1):
                one(i, line)
        number += len(lines)


@contextmanager
def _collector_paused():
    """The cyclic garbage collector off for a while: reading a word list makes no cycles, and each
    full collection walked the growing list of tokens (10 million tokens: 37 s with it, 17 s without)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _merged(tokens: list, spam: np.ndarray, ham: np.ndarray, name: str) -> tuple[list, np.ndarray, np.ndarray]:
    """The tokens listed more than once taken together, their counts added, in the order of each
    token's first record. By sorting (the compiled sort of the vocabulary) rather than a dict of
    every token: a 10-million-token list took 2.3 GB with the dict.

    >>> t, s, h = _merged(["b", "a", "b"], np.array([1, 2, 3]), np.array([0, 1, 1]), "x")
    >>> t, s.tolist(), h.tolist()
    (['b', 'a'], [4, 2], [1, 1])
    """
    from operator import eq
    order, in_order = sorted_with_order(tokens)
    same = np.fromiter(map(eq, in_order[1:], in_order[:-1]), dtype=bool, count=max(len(tokens) - 1, 0))
    if not same.any():
        return tokens, spam.copy(), ham.copy()
    del in_order
    starts = np.flatnonzero(np.concatenate(([True], ~same)))
    first = order[starts]                              # a stable sort: each group's first record
    sums = []
    for counts in (spam, ham):
        total = np.add.reduceat(counts[order].astype(np.float64), starts)
        if total.max(initial=0) >= 2.0 ** 62:
            raise CorpusError(f"{name}: counts do not add up: a token listed more than once has counts "
                              f"that add up past {2 ** 62}")
        sums.append(np.add.reduceat(counts[order], starts))
    keep = np.argsort(first, kind="stable")
    return [tokens[j] for j in first[keep].tolist()], sums[0][keep], sums[1][keep]


def wordlist_filter(wordlist: Wordlist, robs: float | None = None, robx: float | None = None,
                    min_dev: float | None = None, ham_cutoff: float | None = None,
                    spam_cutoff: float | None = None, source: str = "") -> SpamFilter:
    """A spamkit filter that scores mail as bogofilter would with this word list.

    Parameters left ``None`` take bogofilter's compiled-in values (:data:`BOGOFILTER`; robx from
    the word list when it stores one). The decision is bogofilter's: ham below ``ham_cutoff``,
    spam from ``spam_cutoff``, unsure between -- expressed as the cost matrix whose unsure band
    is exactly those cut-offs (abstaining costs 1, a missed spam 1/ham_cutoff, a misfiled ham
    1/(1 - spam_cutoff)).
    """
    robs = BOGOFILTER["robs"] if robs is None else robs
    robx = (wordlist.robx if wordlist.robx is not None else BOGOFILTER["robx"]) if robx is None else robx
    min_dev = BOGOFILTER["min_dev"] if min_dev is None else min_dev
    ham_cutoff = BOGOFILTER["ham_cutoff"] if ham_cutoff is None else ham_cutoff
    spam_cutoff = BOGOFILTER["spam_cutoff"] if spam_cutoff is None else spam_cutoff
    if not 0.0 < ham_cutoff <= spam_cutoff < 1.0:
        raise CorpusError(f"need 0 < ham cut-off <= spam cut-off < 1, got {ham_cutoff} and {spam_cutoff}")
    # the columns in alphabetical order of their tokens, as fitting a vectorizer on them would
    # number them (Vectorizer.select_terms), without the vocabulary's dict
    order, terms = sorted_with_order(wordlist.tokens)
    n = len(terms)
    vectorizer = Vectorizer.restore(Vectorizer("binary").get_config(), terms,
                                    {"df": np.ones(n, dtype=np.int64), "n_docs": np.array([1])})
    vectorizer.terms_ = terms                          # (restore copies the list)
    counts = np.empty((2, n))
    if wordlist.ham is None or wordlist.spam is None:
        raise ConfigError("the word list has no message counts")
    counts[0] = wordlist.ham[order]
    counts[1] = wordlist.spam[order]
    model = RobinsonFisher(strength=robs, prior=robx, min_dev=min_dev, max_clues=0)
    model.check_params()
    model.restore_state(np.array([HAM_NAME, SPAM_NAME]), n,
                        {"class_count_": np.array([wordlist.n_ham, wordlist.n_spam], dtype=np.float64),
                         "feature_count_": counts}, {})
    spam_filter = SpamFilter(analyzer=Analyzer(lexer="bogofilter"), vectorizer=vectorizer, model=model)
    spam_filter.classes_ = model.classes_
    c_fn = 1.0 / ham_cutoff
    c_fp = 1.0 / (1.0 - spam_cutoff)
    spam_filter.set_costs(CostMatrix.binary(c_fp=c_fp, c_fn=c_fn, c_unsure=1.0)
                          if spam_cutoff > ham_cutoff else CostMatrix.binary(c_fp=spam_cutoff, c_fn=1 - spam_cutoff))
    source = source or "a bogofilter word list"
    spam_filter.training = {
        "corpora": [{"path": source, "format": "bogofilter word list", "container": "bogoutil -d text"}],
        "n_messages": int(wordlist.n_ham + wordlist.n_spam),
        "per_class": {HAM_NAME: int(wordlist.n_ham), SPAM_NAME: int(wordlist.n_spam)},
        "imported": {"from": source, "tokens": len(wordlist.tokens), "skipped": wordlist.skipped,
                     "parameters": {"robs": robs, "robx": robx, "min_dev": min_dev,
                                    "ham_cutoff": ham_cutoff, "spam_cutoff": spam_cutoff}}}
    return spam_filter


def write_wordlist(spam_filter: SpamFilter, stream, date: int | None = None) -> int:
    """Write a ham/spam counting filter's counts as ``bogoutil -d`` text (for ``bogoutil -l``).

    Counting filters over token presence only (Robinson/Fisher, the stack: each token counted
    once per message, as bogofilter counts); returns the number of tokens written. A token
    seen in no message (a column of a vocabulary fitted elsewhere) is left out.
    """
    model = spam_filter.model
    if not isinstance(model, (RobinsonFisher, FisherNBStack)) or not isinstance(model, CountingModel):
        raise CorpusError(f"a {type(model).__name__} filter has no bogofilter word list: only the fisher and "
                          "fisher-nb models count tokens per message as bogofilter does")
    classes = [str(c) for c in model.classes_]
    if classes != [HAM_NAME, SPAM_NAME]:
        raise CorpusError(f"a word list has ham and spam counts; this filter's classes are {classes}")
    terms = spam_filter.vectorizer.terms_
    if terms is None:
        raise CorpusError("a hashed filter has no tokens to write (its columns are hash buckets)")
    date = int(time.strftime("%Y%m%d")) if date is None else int(date)
    ham, spam = model.feature_count_
    n_ham, n_spam = model.class_count_
    stream.write(f".ENCODING 2 0 {date}\n".encode())
    stream.write(f".MSG_COUNT {int(n_spam)} {int(n_ham)} {date}\n".encode())
    stream.write(f".WORDLIST_VERSION {_WORDLIST_VERSION} 0 {date}\n".encode())
    written = 0
    for token, s, h in zip(terms, spam.astype(np.int64).tolist(), ham.astype(np.int64).tolist()):
        if s == 0 and h == 0:
            continue
        stream.write(token_bytes(token) + f" {s} {h} {date}\n".encode())
        written += 1
    return written
