"""A filter file's vocabulary made ready for saving: the terms' 64-bit keys, the sorted hash
index pipe mode looks tokens up by, and the ``terms.txt`` member packed a few lines at a time,
in a thread of its own while the model is fitted.

Takes the vectorizer's vocabulary (a list of str); gives :class:`TermIndex` for
:func:`spamkit.filterfile.persist.save_filter`. The key of a term is
:func:`spamkit.filterfile.manifest.term_hash` (BLAKE2b, RFC 7693, 8-byte digest).
"""

from __future__ import annotations

import hashlib
import threading

import numpy as np

from .manifest import MAX_LINE_BYTES, term_hash  # noqa: F401  (term_hash: the definition the doctest compares)
from .ziparchive import pack


def term_keys(terms: list[str]) -> np.ndarray:
    """:func:`spamkit.filterfile.manifest.term_hash` of each term, as uint64: in C where it was built
    (``spamkit.common.speedups.term_keys``, BLAKE2b written from RFC 7693: 0.05 s for 218,969 terms
    against 0.18), else
    hashlib's digests of 4,096 terms at a time joined and read as one array (a Python int per
    term costs twice the time; all the digests at once, 9 MB more at the peak)."""
    from ..common.compiled import speedups
    module = speedups()
    if module is not None and isinstance(terms, list):
        keys = module.term_keys(terms)
        if keys is not None:                           # None: a term with no UTF-8 form (raises below)
            return np.frombuffer(keys, dtype="<u8").astype(np.uint64, copy=False)   # (little-endian: no copy)
    blake2b = hashlib.blake2b
    keys = np.empty(len(terms), dtype=np.uint64)
    for start in range(0, len(terms), 4096):
        digests = b"".join([blake2b(t.encode("utf-8"), digest_size=8).digest() for t in terms[start:start + 4096]])
        keys[start:start + 4096] = np.frombuffer(digests, dtype="<u8")
    return keys


def key_order(keys: np.ndarray) -> np.ndarray:
    """``np.argsort(keys, kind="stable")`` of uint64 keys: by the compiled radix sort where it
    was built (``spamkit.common.speedups.key_order``: 3-4 ms for a vocabulary's 178,480 keys, NumPy's
    stable sort 12), else NumPy's."""
    from ..common.compiled import speedups
    module = speedups()
    if module is not None:
        return np.frombuffer(module.key_order(np.ascontiguousarray(keys, dtype=np.uint64)), dtype=np.int64)
    return np.argsort(keys, kind="stable")


def term_hash_index(terms: list[str]) -> tuple[np.ndarray, np.ndarray] | None:
    """The vocabulary's hash index for pipe mode (:func:`spamkit.filterfile.manifest.term_hash`): the terms'
    64-bit keys sorted, and the column of each; None if two terms share a key.

    >>> keys, columns = term_hash_index(["b", "a"])
    >>> [int(k) for k in keys] == sorted(term_hash(t) for t in "ab"), sorted(columns.tolist())
    (True, [0, 1])
    """
    keys = term_keys(terms)
    order = key_order(keys)
    keys = keys[order]
    if len(keys) > 1 and not (keys[1:] > keys[:-1]).all():
        return None
    return keys, order.astype(np.int64, copy=False)


#: lines joined, encoded, hashed and deflated at a time by :func:`prepare_lines` (never the whole text at once)
LINES_AT_A_TIME = 16384


class PreparedLines:
    """A text member (one entry a line) made ready for :func:`save_filter` beforehand: its
    manifest entry's ``sha256`` and ``count`` and its bytes as they go into the archive
    (:class:`spamkit.filterfile.ziparchive.Packed`)."""

    __slots__ = ("sha256", "count", "packed")

    def __init__(self, sha256: str, count: int, packed):
        self.sha256, self.count, self.packed = sha256, count, packed


def overlong_entry(lines) -> int:
    """Bytes (UTF-8) of the longest entry of ``lines`` that is over :data:`MAX_LINE_BYTES`, the
    longest line a filter file's reader accepts, or 0 when none is. Only entries of more than a
    quarter of that many characters are encoded: a character takes at most 4 bytes.

    >>> overlong_entry(["ab", "é" * 3]), overlong_entry(["x" * 5000, "é" * 2100]), overlong_entry([])
    (0, 5000, 0)
    """
    if max(map(len, lines), default=0) * 4 <= MAX_LINE_BYTES:
        return 0
    return max((size for line in lines if len(line) * 4 > MAX_LINE_BYTES
                for size in (len(line.encode("utf-8", "surrogatepass")),) if size > MAX_LINE_BYTES), default=0)


def prepare_lines(lines: list) -> PreparedLines | None:
    """The text member of ``lines`` (joined by line feeds, UTF-8) made ready, :data:`LINES_AT_A_TIME`
    lines at a time so that the text is never held whole (a vocabulary's is 3.5 MB, its deflated
    form a third of that); None when an entry holds a line break or has no UTF-8 form (then
    saving says so, as without it)."""
    digest = hashlib.sha256()

    def pieces():
        for start in range(0, len(lines), LINES_AT_A_TIME):
            part = lines[start:start + LINES_AT_A_TIME]
            text = "\n".join(part)
            if text.count("\n") != len(part) - 1 or "\r" in text or overlong_entry(part):
                raise ValueError("a line break in an entry, or an entry too long")
            yield (b"\n" if start else b"") + text.encode("utf-8")

    try:
        packed = pack(pieces(), digest=digest)
    except (ValueError, UnicodeError):
        return None
    return PreparedLines(digest.hexdigest(), len(lines), packed)


class TermIndex:
    """What :class:`TermIndexJob` made of a vocabulary for :func:`save_filter`: ``terms`` (the very
    list), its length then, :func:`term_hash_index` of it (``index``) and its ``terms.txt``
    member made ready (``member``, :func:`prepare_lines`). Used while ``terms`` is still the
    vectorizer's vocabulary, of the same length."""

    __slots__ = ("terms", "size", "index", "member")

    def __init__(self, terms: list, size: int, index, member: PreparedLines | None):
        self.terms, self.size, self.index, self.member = terms, size, index, member

    def serves(self, terms) -> bool:
        return terms is self.terms and len(terms) == self.size


class TermIndexJob:
    """:func:`term_hash_index` of a vocabulary and its ``terms.txt`` member (:func:`prepare_lines`)
    in a thread of its own, started as soon as the vocabulary is known (``SpamFilter.fit``, before
    the model is fitted) and joined by :meth:`result`. ``speedups.term_keys`` hashes, and ISA-L
    deflates, without the GIL, so the 0.12-0.19 s of hashing 330,000 terms and the 25-30 ms of
    joining, hashing and deflating trec07p-dev's vocabulary overlap the model's fitting instead
    of following it. The thread ends before :meth:`result` returns: no thread is left alive for
    a later ``fork`` (:mod:`spamkit.common.processes`).
    """

    def __init__(self, terms: list):
        self.terms, self.size = terms, len(terms)
        self._index: tuple[np.ndarray, np.ndarray] | None = None
        self._member: PreparedLines | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="spamkit-term-index", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._index = term_hash_index(self.terms)
            self._member = prepare_lines(self.terms)
        except BaseException as exc:                  # noqa: BLE001 -- raised by result()
            self._error = exc

    def wait(self) -> None:
        """Let the thread end (its result unused)."""
        self._thread.join()

    def result(self) -> TermIndex:
        """The :class:`TermIndex` for :func:`save_filter`'s ``term_index``."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        return TermIndex(self.terms, self.size, self._index, self._member)
