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

import io  # noqa: F401 (the doctests read word lists from memory)
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .decision import CostMatrix
from .errors import CorpusError
from .features import Vectorizer
from .labels import HAM_NAME, SPAM_NAME
from .models import FisherNBStack, RobinsonFisher
from .models.counting import CountingModel
from .spamfilter import SpamFilter
from .text import Analyzer
from .text.bogolex import token_bytes, token_text

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
    spam: np.ndarray = None
    ham: np.ndarray = None
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


def read_wordlist(source) -> Wordlist:
    """Read ``bogoutil -d`` output from a file path or ``"-"`` (standard input).

    Lines that are not records are refused with their line number; a token listed twice has
    its counts added (``bogoutil -l`` merges the same way).

    >>> w = read_wordlist(io.BytesIO(b".MSG_COUNT 2 3 20070409\\nviagra 2 0 20070409\\nlunch 0 3\\n"))
    >>> w.tokens, w.spam.tolist(), w.ham.tolist(), w.n_spam, w.n_ham
    (['viagra', 'lunch'], [2, 0], [0, 3], 2, 3)
    """
    stream, name = (source, "input") if hasattr(source, "read") else _open_text(source)
    index: dict = {}
    spam: list = []
    ham: list = []
    out = Wordlist()
    seen_count = False
    try:
        for number, line in enumerate(stream, 1):
            if not line.strip():
                continue
            m = _RECORD.match(line.rstrip(b"\n"))
            if m is None:
                raise CorpusError(f"{name}, line {number}: not a word-list record (TOKEN SPAM HAM [DATE]): "
                                  f"{line[:60]!r}")
            if max(len(m.group(2)), len(m.group(3))) > 18:    # past int64 (and int()'s 4,300 digits)
                raise CorpusError(f"{name}, line {number}: a count of more than 18 digits: {line[:60]!r}")
            raw_token, s, h = m.group(1), int(m.group(2)), int(m.group(3))
            if raw_token.startswith(b"."):
                if raw_token == b".MSG_COUNT":
                    out.n_spam, out.n_ham, seen_count = s, h, True
                elif raw_token == b".ROBX":
                    out.robx = s / 1_000_000.0
                continue
            token = token_text(raw_token)
            if token in index:
                spam[index[token]] += s
                ham[index[token]] += h
                continue
            index[token] = len(out.tokens)
            out.tokens.append(token)
            spam.append(s)
            ham.append(h)
    finally:
        if stream is not source and name != "standard input":
            stream.close()
    if not seen_count:
        raise CorpusError(f"{name}: no .MSG_COUNT record: is this the output of bogoutil -d?")
    if not out.tokens:
        raise CorpusError(f"{name}: the word list holds no token")
    out.spam = np.asarray(spam, dtype=np.int64)
    out.ham = np.asarray(ham, dtype=np.int64)
    over = int(np.sum(out.spam > out.n_spam) + np.sum(out.ham > out.n_ham))
    if out.n_spam == 0 or out.n_ham == 0 or over:
        raise CorpusError(f"{name}: counts do not add up: {out.n_spam} spam and {out.n_ham} ham messages "
                          f"registered{f', and {over} token counts above them' if over else ''}; a filter needs "
                          "both classes, each token in at most as many messages as were registered")
    return out


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
    vectorizer = Vectorizer("binary")
    vectorizer.fit([wordlist.tokens])
    columns = np.fromiter((vectorizer.vocabulary_[t] for t in wordlist.tokens), dtype=np.int64,
                          count=len(wordlist.tokens))
    n = len(vectorizer.vocabulary_)
    counts = np.zeros((2, n))
    counts[0, columns] = wordlist.ham
    counts[1, columns] = wordlist.spam
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
        "imported": {"from": source, "tokens": len(wordlist.tokens),
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
