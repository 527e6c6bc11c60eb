"""Bytes to hashed context keys: the features of byte-level context models.

A context model (:class:`~spamkit.models.context.ByteContextModel`) predicts each symbol of a
text from the ``order`` symbols before it, blending the predictions of every context length
0, 1, ..., ``order``. What it counts, per class, is how often each string of up to
``order`` + 1 symbols occurred: the count of a context is the count of that string, and the
count of a symbol after a context the count of the string one longer. This module turns texts
into the table slots of those counts, so that the model never sees bytes (the module map:
features -> models):

- the symbols of a text are its first ``max_bytes`` bytes (0-255), then an end-of-text
  symbol :data:`END` (256), so that a short text and a long one that starts like it differ;
- before the first byte, the text is padded with :data:`PAD` (257), which is never a
  symbol: "the start of a text" is a context of its own;
- row i of a text's keys belongs to its i-th symbol s_i; column k (0..``order``) is the slot
  of the string of k + 1 symbols ending with s_i (the pads included), hashed with its length
  (strings of different lengths never share a key by construction, only by chance) to a slot
  in ``[0, 2**bits)``.

The context of length k before s_i is the string of k symbols ending with s_(i-1): its slot is
row i - 1, column k - 1 (and before the first symbol, the pads alone, whose count is the
number of texts). Every symbol is preceded by one, and every symbol but the end is followed by
one, so the count of a string used as a context is exactly how often it was followed by
something (:mod:`spamkit.models.context` relies on it).

Different strings may share a slot (hashing, as scikit-learn's ``FeatureHasher`` and the TREC
2007 Waterloo filter's hashed byte 4-grams do); scripts/context_model.py measures what the
table's size costs.

Sources: J. G. Cleary and I. H. Witten, "Data compression using adaptive coding and partial
string matching", IEEE Trans. Communications 32 (1984) (prediction by partial matching: the
contexts of every length up to an order); A. Bratko, G. V. Cormack, B. Filipič, T. R. Lynam
and B. Zupan, "Spam filtering using statistical data compression models", JMLR 7 (2006)
(one such model per class, a message classified by the model that compresses it best).
"""

from __future__ import annotations

import numpy as np

from ..common.compiled import gramloops
from ..common.errors import ConfigError
from ..common.names import GRAM_BITS, GRAM_BYTES

TYPE_CHECKING = False                  # typing's names for the checker only
if TYPE_CHECKING:
    from collections.abc import Sequence

#: the end-of-text symbol, predicted after a text's last byte
END = 256
#: what the context holds before a text's first byte (never predicted)
PAD = 257
#: odd 64-bit multipliers of the hash (the golden ratio's, and FNV-1's 64-bit prime)
_MIX = np.uint64(0x9E3779B97F4A7C15)
_STEP = np.uint64(0x100000001B3)


class ContextKeys:
    """The texts of a batch (bytes, each already cut at ``max_bytes``) with the order and table
    size of their keys. ``keys`` (int32, one row per symbol, ``order`` + 1 slots: see the module
    docstring) and ``indptr`` (the symbols of text t are rows ``indptr[t]:indptr[t + 1]``) are
    computed when first asked for: the compiled loops of ``spamkit.common.speedups`` compute the same
    slots as they read the texts and never need them stored (4 (order + 1) bytes a symbol)."""

    __slots__ = ("texts", "order", "bits", "_keys", "_indptr")

    def __init__(self, texts: Sequence[bytes], order: int, bits: int):
        self.texts, self.order, self.bits = tuple(texts), order, bits
        self._keys: np.ndarray | None = None
        self._indptr: np.ndarray | None = None

    @property
    def n_texts(self) -> int:
        return len(self.texts)

    @property
    def indptr(self) -> np.ndarray:
        if self._indptr is None:
            self._indptr = np.concatenate([[0], np.cumsum([len(t) + 1 for t in self.texts])]).astype(np.int64)
        return self._indptr

    @property
    def keys(self) -> np.ndarray:
        if self._keys is None:
            self._keys = _slots(self.texts, self.order, self.bits, self.indptr)
        return self._keys

    def rows(self, which) -> "ContextKeys":
        """The keys of the texts ``which`` (indices, or a boolean mask), in that order."""
        which = np.asarray(which)
        if which.dtype == bool:
            which = np.flatnonzero(which)
        return ContextKeys([self.texts[i] for i in which.tolist()], self.order, self.bits)


def check_shape(order, bits, max_bytes) -> None:
    """Refuse settings the keys cannot be made with, naming the setting."""
    if not (isinstance(order, (int, np.integer)) and 0 <= order <= 16):
        raise ConfigError(f"the context order must be an integer from 0 to 16, got {order!r}")
    if not (isinstance(bits, (int, np.integer)) and 8 <= bits <= 30):
        raise ConfigError(f"the table size must be 2**bits with bits from 8 to 30, got {bits!r}")
    if not (isinstance(max_bytes, (int, np.integer)) and max_bytes >= 1):
        raise ConfigError(f"max_bytes must be an integer >= 1, got {max_bytes!r}")


def context_keys(texts, order: int = 6, bits: int = 24, max_bytes: int = 3000) -> ContextKeys:
    """The hashed keys of ``texts`` (``bytes`` each; ``str`` is encoded as UTF-8).

    >>> k = context_keys([b"ab"], order=1, bits=16)
    >>> k.keys.shape, k.indptr.tolist()     # a, b and the end; strings of 1 and 2 symbols
    ((3, 2), [0, 3])
    """
    check_shape(order, bits, max_bytes)
    cut = []
    for text in texts:
        cut.append(bytes(_as_bytes(text, "a context model")[:max_bytes]))
    return ContextKeys(cut, order, bits)


def _slots(texts, order: int, bits: int, indptr: np.ndarray) -> np.ndarray:
    """The slots of every symbol of ``texts`` (see the module docstring), shape (symbols, order + 1)."""
    keys = np.empty((int(indptr[-1]), order + 1), dtype=np.int32)
    if not texts:
        return keys
    lengths = np.diff(indptr)
    pad = np.full(order, PAD, dtype=np.uint64)
    symbols = np.concatenate([part for text in texts for part in
                              (pad, np.frombuffer(text, dtype=np.uint8).astype(np.uint64),
                               np.array([END], dtype=np.uint64))])
    # where each symbol sits in `symbols` (each text is preceded by its `order` pads)
    starts = np.cumsum(np.concatenate([[0], lengths[:-1] + order])) + order
    at = np.repeat(starts - indptr[:-1], lengths) + np.arange(indptr[-1], dtype=np.int64)
    shift = np.uint64(64 - bits)
    h = symbols[at] + np.uint64(1)
    with np.errstate(over="ignore"):
        for k in range(order + 1):
            if k:                                 # one symbol further back
                h = (h * _STEP) ^ (symbols[at - k] + np.uint64(1))
            keys[:, k] = ((((h + np.uint64(k + 1) * _MIX) * _STEP) ^ np.uint64(k)) * _MIX >> shift).astype(np.int32)
    return keys


#: Knuth's multiplicative constant (2**32 / golden ratio): spreads byte n-grams over a table's top bits
_GRAM_MULTIPLIER = np.uint32(2654435761)


def gram_slots(text, n_bytes: int = GRAM_BYTES, bits: int = GRAM_BITS) -> np.ndarray:
    """The distinct table slots of the byte 4-grams of ``text[:n_bytes]``, sorted (uint32).

    The features of the TREC 2007 Waterloo filter (G. V. Cormack, "University of Waterloo
    participation in the TREC 2007 spam track"; J. Goodman and W. Yih, "Online discriminative
    spam filter training", CEAS 2006): every string of four consecutive bytes of the raw
    message, headers included, present or not (binary), hashed into 2**bits slots. A 4-gram is
    the 32-bit number of its bytes; its slot the top ``bits`` bits of that number times
    :data:`_GRAM_MULTIPLIER` modulo 2**32 (a multiplicative hash; the paper does not say which
    hash it used). A text shorter than 4 bytes has no 4-gram. The compiled loop
    (``spamkit.features.gramloops.slots``: one pass, a radix sort) gives the same array where it is built.

    >>> gram_slots(b"abcdab", bits=8).size          # abcd, bcda, cdab
    3
    >>> gram_slots(b"abcabcabc", bits=8).size       # abca, bcab, cabc: each counted once
    3
    """
    text = _as_bytes(text, "a byte 4-gram model")
    loops = gramloops()
    if loops is not None:
        return np.frombuffer(loops.slots(text, n_bytes, bits), dtype=np.uint32)
    data = bytes(text[:n_bytes])
    if len(data) < 4:
        return np.zeros(0, dtype=np.uint32)
    # every 4-gram as a big-endian 32-bit number: a view of the bytes one byte apart, no copy
    grams = np.ndarray((len(data) - 3,), dtype=">u4", buffer=data, strides=(1,)).astype(np.uint32)
    with np.errstate(over="ignore"):
        slots = np.sort((grams * _GRAM_MULTIPLIER) >> np.uint32(32 - bits))
    return slots[np.concatenate(([True], slots[1:] != slots[:-1]))]


def gram_rows(texts, n_bytes: int = GRAM_BYTES, bits: int = GRAM_BITS) -> list:
    """:func:`gram_slots` of each text: the rows a :class:`~spamkit.models.bytegrams.ByteGramLogistic` reads."""
    return [gram_slots(text, n_bytes, bits) for text in texts]


def pack_slots(slots) -> bytes:
    """A packed row: the distinct ascending ``slots`` as native uint16 gaps (the first slot's
    from 0), a gap of 0xFFFF or more written as the word 0xFFFF and then its low and high 16
    bits. Half the bytes of uint32 slots (gaps in 2**18 slots average about 150): what a
    training holds of each message until the stack's combiner is fitted. The compiled loops
    make (``gramloops.packed_slots``) and read such rows; this is their definition. (LEB128
    varints took a third of the bytes but made the loops four times slower: their branch is
    taken for every other slot, this one's almost never.)

    >>> unpack_slots(pack_slots([5, 300, 70_000, 70_001])).tolist()
    [5, 300, 70000, 70001]
    >>> len(pack_slots([5, 300, 70_000, 70_001]))           # words: 5, 295, escape + 2, 1
    12
    """
    words: list[int] = []
    previous = 0
    for slot in (int(s) for s in slots):
        if slot < previous or slot >= 1 << 32 or (words and slot == previous):
            raise ConfigError("a packed row holds distinct ascending slots below 2**32")
        gap, previous = slot - previous, slot
        words.extend((0xFFFF, gap & 0xFFFF, gap >> 16) if gap >= 0xFFFF else (gap,))
    return np.array(words, dtype=np.uint16).tobytes()


def unpack_slots(row: bytes) -> np.ndarray:
    """The slots of a packed row (:func:`pack_slots`), uint32; a malformed row is refused."""
    if len(row) % 2:
        raise ConfigError("not a packed row of slots (half a word)")
    w = np.frombuffer(row, dtype=np.uint16)
    gaps = w.astype(np.uint64)
    keep = np.ones(w.size, dtype=bool)
    inside = -1                                 # the last word of the escape being read
    for e in np.flatnonzero(w == 0xFFFF).tolist():
        if e <= inside:
            continue                            # a word of an escape's gap, not an escape
        if e + 2 >= w.size:
            raise ConfigError("not a packed row of slots (an escape cut short)")
        gaps[e] = int(w[e + 1]) | int(w[e + 2]) << 16
        keep[e + 1:e + 3] = False
        inside = e + 2
    slots = np.cumsum(gaps[keep])
    if slots.size and slots[-1] >= 1 << 32:
        raise ConfigError("not a packed row of slots (a slot past 2**32 - 1)")
    return slots.astype(np.uint32)


def packed_gram_rows(texts, n_bytes: int = GRAM_BYTES, bits: int = GRAM_BITS) -> list:
    """:func:`gram_rows` as packed rows (:func:`pack_slots`) where the compiled loops are built,
    which read them as they read arrays; else the arrays themselves."""
    loops = gramloops()
    if loops is None:
        return gram_rows(texts, n_bytes, bits)
    return [loops.packed_slots(_as_bytes(text, "a byte 4-gram model"), n_bytes, bits) for text in texts]


def _as_bytes(text, what: str):
    """``text`` as bytes (a str encoded as UTF-8, lone surrogates kept); else refused, naming ``what`` reads it."""
    if isinstance(text, str):
        return text.encode("utf-8", "surrogateescape")
    if not isinstance(text, (bytes, bytearray, memoryview)):
        raise ConfigError(f"{what} reads bytes or str, got {type(text).__name__}")
    return text
