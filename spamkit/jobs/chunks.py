"""What a worker process of :class:`spamkit.jobs.engines.ProcessEngine` does with a chunk of
messages: parse and tokenize them, number their terms, make their byte 4-gram slots or their
feature rows, and pack the result for the trip back to the driver (and what the driver does to
unpack it).

Takes chunks of messages as they travel (:func:`on_the_wire`: bytes and kind, or where an
inherited archive spool holds them); gives tokens, :class:`~spamkit.features.numbering.IndexedChunk`
parts, CSR arrays and 4-gram log-odds. A worker's settings (the analyzer, the vectorizer, a
4-gram model) are set once per process by :func:`start_worker`, the pool's initializer.
"""

from __future__ import annotations

import itertools
import os
from typing import Any

from ..corpus.archives import read_where
from ..corpus.base import LabelledMessage
from ..corpus.deferred import Unread
from ..common.compiled import gramloops
from ..features.numbering import IndexedChunk, new_numbering, number_terms
from ..parse.message import defect_families, parse_message

# a worker process's own state, set by start_worker (None in the driver)
_ANALYZER: Any = None
_VECTORIZER: Any = None
#: a trained byte 4-gram model (spamkit.models.bytegrams) whose log-odds the worker makes, or None
_GRAMS: Any = None
#: the training run whose terms this worker numbers, and its numbers (see numbered_chunk)
_SESSION: Any = None
_NUMBERS: Any = {}                    # the numbering of the session (numbering.new_numbering)




def start_worker(analyzer, vectorizer=None, grams=None) -> None:
    """A worker's settings: the analyzer, for scoring the vectorizer, and the byte 4-gram model
    whose scores it then makes too (:func:`rows_chunk`)."""
    global _ANALYZER, _VECTORIZER, _GRAMS
    _ANALYZER = analyzer
    _VECTORIZER = vectorizer
    _GRAMS = grams


def on_the_wire(shared: frozenset = frozenset()):
    """``wire(item)``: what a worker needs of an item to tokenize it. A LabelledMessage travels as
    its bytes and kind (pickling the whole record cost the driver and each worker three times as
    much) or, when it is a member of an archive whose spool the workers inherited (``shared``:
    :func:`spamkit.corpus.archives.open_spools` when they were forked), as where to read it:
    ``((fd, offset, size), kind)``, so that its bytes do not go through a pipe (in turns on
    trec07p-dev + Enron1-6, ``--jobs 2``: 6.11 -> 5.67 s, the CPU of all processes 9.44 -> 8.88 s,
    medians of four)."""
    def wire(item):
        if isinstance(item, LabelledMessage):
            where = item.where
            if where is not None and where[0] in shared:
                return where[1:], item.kind
            raw = item.raw
            return (raw.read() if isinstance(raw, Unread) else raw), item.kind     # (listed: read now)
        return item
    return wire


def message_size(item) -> int:
    """The bytes of raw mail an item stands for (a chunk's share of :data:`spamkit.jobs.engines.CHUNK_BYTES`): its
    ``raw``, or where it lies when it was listed, not read (:meth:`spamkit.corpus.Corpus.located`)."""
    raw = item if isinstance(item, (bytes, bytearray)) else getattr(item, "raw", None)
    if isinstance(raw, Unread):
        where = getattr(item, "where", None)
        return where[3] if where is not None else 0
    return len(raw) if isinstance(raw, (bytes, bytearray)) else 0


def tokens_of(items, grams: tuple | None = None) -> tuple:
    """Each item's tokens and defect families (what every kind of chunk starts from); with
    ``grams`` (n_bytes, bits), also the slots of each message's byte 4-grams
    (:func:`gram_slots_of`), joined, the bytes of each and whether they are packed rows."""
    token_lists, families, slots, sizes = [], [], [], []
    for item in items:
        if isinstance(item, tuple) and isinstance(item[0], tuple):     # where to read it (see on_the_wire)
            item = (read_where(item[0]), item[1])
        if isinstance(item, tuple):
            msg = parse_message(*item)
        else:
            from ..filterfile.sides import parse_item  # NumPy's module: its workers have it
            msg = parse_item(item)
        token_lists.append(_ANALYZER(msg))
        families.append(defect_families(msg) if msg.defects else ())
        if grams is not None:
            slots.append(gram_slots_of(msg.raw, *grams))      # the bytes parsed: without spamkit's tags
            sizes.append(len(slots[-1]))
    if grams is None:
        return token_lists, families
    return token_lists, families, b"".join(slots), sizes, gramloops() is not None


def gram_slots_of(raw, n_bytes: int, bits: int) -> bytes:
    """The slots of a message's byte 4-grams (:func:`spamkit.features.bytekeys.gram_slots`), made here so
    that the driver of a training neither reads the message's bytes nor hashes them: a packed row
    from the compiled loop where it is built (:func:`spamkit.features.bytekeys.pack_slots`: half the
    bytes to send and to hold), else native uint32 bytes from the NumPy definition (which a
    worker then imports)."""
    loops = gramloops()
    if loops is not None:
        return loops.packed_slots(raw, n_bytes, bits)
    from ..features.bytekeys import gram_slots
    return gram_slots(raw, n_bytes, bits).tobytes()


def slot_rows(joined: bytes, sizes: list, packed: bool) -> list:
    """The per-message rows of what :func:`tokens_of` joined (``sizes`` in bytes): packed rows
    (bytes), or uint32 slot arrays (views, not copies)."""
    ends = list(itertools.accumulate(sizes))
    if packed:
        return [joined[end - size:end] for end, size in zip(ends, sizes)]
    import numpy as np
    flat = np.frombuffer(joined, dtype=np.uint32)
    return [flat[(end - size) // 4:end // 4] for end, size in zip(ends, sizes)]


def numbered_chunk(session, items, grams: tuple | None = None) -> tuple:
    """A chunk of training messages as this worker numbers their terms (an
    :class:`~spamkit.features.numbering.IndexedChunk`'s parts): the driver then looks up by name only
    the terms this worker had not sent before, and maps the rest through an array. A new
    ``session`` (another training run on the same pool) starts the numbering again. With
    ``grams`` (n_bytes, bits), also each message's byte 4-gram slots (:func:`tokens_of`)."""
    global _SESSION, _NUMBERS
    if session != _SESSION:
        _SESSION, _NUMBERS = session, new_numbering()
    token_lists, families, *slots = tokens_of(items, grams)
    return (os.getpid(), *number_terms(_NUMBERS, token_lists), families, *slots)


def indexed(done) -> tuple:
    """An :class:`~spamkit.features.numbering.IndexedChunk`, the messages' defect families and, where the
    worker made them, their byte 4-gram slots (one row a message: :func:`slot_rows`; else None)."""
    import numpy as np
    pid, new_terms, ids, counts, sizes, families, *grams = done
    rows = slot_rows(*grams) if grams else None
    return IndexedChunk(pid, new_terms, np.frombuffer(ids, dtype=np.intc), np.frombuffer(counts, dtype=np.intc),
                        np.frombuffer(sizes, dtype=np.int64)), families, rows


def parse_chunk(items) -> list:
    """``(source, kind, defects)`` of each message of a chunk (``spamkit corpus``)."""
    out = []
    for item in items:
        msg = parse_message(item.raw, item.kind)
        out.append((item.source, msg.kind, msg.defects))
    return out


def rows_chunk(items) -> tuple:
    """Feature rows of a chunk, made in the worker (scoring: the vocabulary is fixed): the CSR
    arrays, each message's number of distinct tokens (for the familiarity guard) and its defect
    families; with a byte 4-gram model (:func:`start_worker`), each message's log-odds under it.
    The driver then stacks arrays instead of unpickling and looking up every token, and reads
    no message's bytes for the 4-grams."""
    from ..filterfile.verdicts import distinct_tokens
    if _GRAMS is None:
        token_lists, families = tokens_of(items)
        X = _VECTORIZER.transform(token_lists)
        return (X.data, X.indices, X.indptr, X.shape), distinct_tokens(token_lists), families
    token_lists, families, *grams = tokens_of(items, (int(_GRAMS.n_bytes), int(_GRAMS.bits)))
    scores = _GRAMS.decision_function(slot_rows(*grams))
    X = _VECTORIZER.transform(token_lists)
    return (X.data, X.indices, X.indptr, X.shape), distinct_tokens(token_lists), families, scores


#: joins a chunk's tokens for the trip back (a token holding it makes the chunk travel as lists)
_SEP = "\x00"


def tokenize_chunk(items) -> tuple:
    """The chunk's tokens as one string and the number of tokens of each message, with the
    defect families: one long string pickles and splits in C, where 400 short strings per
    message cost the driver more to unpickle than to count (0.7 s per 5,000 TREC messages)."""
    token_lists, families = tokens_of(items)
    flat = [t for tokens in token_lists for t in tokens]
    joined = _SEP.join(flat)
    if flat and joined.count(_SEP) != len(flat) - 1:          # a token with the separator in it
        return None, token_lists, families
    return joined, [len(tokens) for tokens in token_lists], families


def unpack_chunk(done) -> list:
    """``(tokens, defect families)`` per message from what :func:`tokenize_chunk` sent."""
    joined, sizes, families = done
    if joined is None:
        return list(zip(sizes, families))
    flat = joined.split(_SEP) if sum(sizes) else []
    out, at = [], 0
    for size, family in zip(sizes, families):
        out.append((flat[at:at + size], family))
        at += size
    return out
