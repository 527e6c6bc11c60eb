"""Counting token lists into a CSR matrix, in one pass: the vocabulary's columns found (a dict, or
the compiled table of a fixed vocabulary), the workers' numbered chunks mapped to columns, rows
appended a chunk at a time, the vocabulary sorted and the columns renumbered after. What
:class:`spamkit.features.vectorizer.Vectorizer` (and the Dask engine's counting) builds its
matrices with; :mod:`spamkit.features.numbering` is the worker's side.
"""

from __future__ import annotations

import threading
from typing import Any
from array import array
from functools import partial

import numpy as np
import scipy.sparse as sp

from ..common.errors import ConfigError
from .numbering import IndexedChunk, new_numbering, number_terms


#: documents whose token ids are gathered before duplicates are summed (bounds the extra memory)
CHUNK_DOCS = 256


def sort_order(terms: list) -> np.ndarray:
    """The positions of ``terms`` in sorted order (int64): ``sorted(range(len(terms)),
    key=terms.__getitem__)``, which is the definition, or the compiled sort
    (``spamkit.common.speedups.sort_terms``: the terms' UTF-8 bytes compared with ``memcmp``, the
    order Python compares ``str`` in; about twice as quick on a mail vocabulary).

    >>> sort_order(["b", "a", "ab"]).tolist()
    [1, 2, 0]
    """
    from ..common.compiled import speedups
    module = speedups()
    if module is not None and isinstance(terms, list):
        order = module.sort_terms(terms)
        if order is not None:                          # None: a term with no UTF-8 form
            return np.frombuffer(order, dtype=np.int64)
    return np.fromiter(sorted(range(len(terms)), key=terms.__getitem__), dtype=np.int64, count=len(terms))


def sorted_with_order(terms: list) -> tuple[np.ndarray, list]:
    """``(sort_order(terms), the terms in that order)``, the second made with the first by the
    compiled sort (``spamkit.common.speedups.sort_terms(terms, True)``) where it can.

    >>> order, in_order = sorted_with_order(["b", "a", "ab"])
    >>> order.tolist(), in_order
    ([1, 2, 0], ['a', 'ab', 'b'])
    """
    from ..common.compiled import speedups
    module = speedups()
    if module is not None and isinstance(terms, list):
        got = module.sort_terms(terms, True)
        if got is not None:                            # None: a term with no UTF-8 form
            return np.frombuffer(got[0], dtype=np.int64), got[1]
    order = sort_order(terms)
    return order, [terms[j] for j in order.tolist()]


#: entries of a matrix counted at a time by :func:`column_counts` without its compiled loop
COUNT_SLICE = 1 << 20


def column_counts(indices: np.ndarray, n_cols: int) -> np.ndarray:
    """How many entries of ``indices`` name each of ``n_cols`` columns (int64): a CSR matrix's
    document frequencies. ``np.bincount(indices, minlength=n_cols)`` is the definition; it first
    copies int32 indices as int64 (18 MB for trec07p-dev and Enron1's counts, the peak of
    training), which the compiled loop (``spamkit.common.speedups.column_counts``) does not, and the
    fallback only :data:`COUNT_SLICE` entries at a time.

    >>> column_counts(np.array([2, 0, 2], dtype=np.int32), 4).tolist()
    [1, 0, 2, 0]
    """
    from ..common.compiled import speedups
    module = speedups()
    if module is not None and indices.dtype in (np.int32, np.int64) and indices.flags.c_contiguous:
        return np.frombuffer(module.column_counts(indices, int(n_cols)), dtype=np.int64).copy()
    counts = np.zeros(n_cols, dtype=np.int64)
    for start in range(0, len(indices), COUNT_SLICE):
        counts += np.bincount(indices[start:start + COUNT_SLICE], minlength=n_cols)
    return counts


def renumber_columns(counts: sp.csr_matrix, new_col: np.ndarray) -> None:
    """In place: column ``j`` of ``counts`` becomes ``new_col[j]`` (every one >= 0, a row's columns
    stay distinct) and each row's entries are sorted by their new columns -- the definition is
    ``counts.indices[:] = new_col[counts.indices]`` then ``counts.sort_indices()``, which is what
    runs where the compiled loop (``spamkit.common.speedups.renumber_rows``, a radix sort of each row)
    was not built or the arrays are not of its types (int32 columns, float64 values)."""
    from ..common.compiled import speedups
    module = speedups()
    if (module is not None and counts.indices.dtype == np.int32 and counts.data.dtype == np.float64
            and counts.indptr.dtype in (np.int32, np.int64) and new_col.dtype == np.int32):
        module.renumber_rows(counts.indptr, counts.indices, counts.data, new_col)
        counts.has_sorted_indices = True
        return
    # a slice at a time (np.take into its own input would copy it whole)
    for start in range(0, counts.nnz, 1 << 16):
        part = counts.indices[start:start + (1 << 16)]
        part[:] = new_col[part]
    counts.has_sorted_indices = False
    counts.sort_indices()


def _known_columns(index: dict):
    """``known(tokens, out)``: appends to the list ``out`` the column of each token of ``tokens``
    that ``index`` holds, in order -- ``out += [j for j in map(index.get, tokens) if j is not
    None]``, which is its definition, or the compiled loop (``spamkit.common.speedups.known_columns``,
    about twice as quick on a 20 KB message) where it was built and ``index`` is a dict."""
    from ..common.compiled import speedups
    module = speedups()
    if module is not None and isinstance(index, dict):
        return partial(module.known_columns, index)
    get = index.get

    def known(tokens, out: list) -> None:
        out += [j for j in map(get, tokens) if j is not None]
    return known


#: a vocabulary gets its compiled lookup table (:func:`_frozen_table`) once this many tokens per
#: term have been looked up in it: building one costs about as much as two lookups per term
FROZEN_AFTER = 2
#: vocabularies whose tables are kept, the least recently made dropped first
FROZEN_KEPT = 4
_FROZEN: dict = {}            # id(index) -> [index, its size, tokens looked up so far, table or None/False]
_FROZEN_LOCK = threading.Lock()


def _frozen_table(index, n_tokens: int):
    """The compiled lookup table of a fixed vocabulary dict (``speedups.frozen_index``), or None.

    Scoring looks each token up in the vocabulary, a dict of a few hundred thousand strings
    whose lookups are cache misses; the table holds hash, key and column together and
    gives the same columns (``tests/test_features.py``). It is made once ``index`` has had
    :data:`FROZEN_AFTER` lookups per term (``n_tokens`` are about to be made), so a message
    scored once (pipe mode, ``classify``) never pays for it, and dropped for a dict of
    another size (a vocabulary dict is never changed in place once made: a
    :class:`~spamkit.features.vectorizer.Vectorizer` makes a new one when its terms change)."""
    if type(index) is not dict:
        return None
    from ..common.compiled import speedups
    module = speedups()
    if module is None:
        return None
    with _FROZEN_LOCK:                      # the Dask engine's threads share this process
        entry = _FROZEN.get(id(index))
        if entry is None or entry[0] is not index or entry[1] != len(index):
            entry = _FROZEN[id(index)] = [index, len(index), 0, None]
            while len(_FROZEN) > FROZEN_KEPT:
                del _FROZEN[next(iter(_FROZEN))]
        if entry[3] is None:
            entry[2] += n_tokens
            if entry[2] < FROZEN_AFTER * len(index):
                return None
            entry[3] = module.frozen_index(index) or False       # False: it cannot be (not str -> int)
        return entry[3] or None


def _compiled_frozen_counts():
    """``speedups.frozen_counts``, or a function that always says None where it was not built."""
    from ..common.compiled import speedups
    module = speedups()
    return module.frozen_counts if module is not None else (lambda table, tokens: None)


def _grow_columns():
    """``grow_columns(index, terms)``: the bytes of ``array("i", [index.setdefault(t, len(index))
    for t in terms])`` -- each term's column, a new term getting the next one, which is the
    definition -- in C (``spamkit.common.speedups.grow_columns``, under half the Python loop's time),
    or None where it was not built."""
    from ..common.compiled import speedups
    module = speedups()
    return module.grow_columns if module is not None else None


def count_matrix(docs, index: dict, grow: bool, sort: bool = True, terms_out: list | None = None):
    """CSR counts of ``docs`` under ``index`` (token -> column); with ``grow`` new tokens get columns.

    ``terms_out``: a list that, for :class:`IndexedChunk` documents, receives the vocabulary in
    column order *instead of* ``index`` (which stays empty): the columns are then numbered in a
    compiled table (``speedups.Numbering.columns``: the same columns; a third of the dict's
    time, its slots asked for ahead and no Python int per column), and the caller wanting only
    the terms in order (:meth:`~spamkit.features.vectorizer.Vectorizer.fit_transform`) is spared a dict of them.

    ``sort=False``: the rows of :class:`IndexedChunk` documents keep their columns in the order
    the chunk gave them (a caller that renumbers the columns sorts afterwards anyway).

    With ``grow``, ``index`` is a ``defaultdict`` whose factory is its own ``__len__``: looking
    a new token up gives it the next free column, so the ids of a document come from one
    ``map`` over the tokens, without a Python-level step per token (the same device as
    scikit-learn's ``CountVectorizer._count_vocab``).

    Token ids of up to :data:`CHUNK_DOCS` documents are gathered, made 32-bit integers, then
    scipy sums the duplicates of that chunk in C; each chunk's non-zeros are appended to
    the result. Memory: the non-zeros, plus the raw ids of one chunk.

    ``docs`` may instead be :class:`IndexedChunk` objects (several documents each, numbered by
    worker processes): the same columns, in the same order, and the same matrix.
    """
    out_indptr = array("q", [0])
    out_indices = array("i")
    out_data = array("i")      # counts within one document: exact 32-bit integers, half a float64
    chunk_ids: list = []      # a list takes a map's items faster than an array("i")
    chunk_ptr = [0]
    tables: dict = {}         # IndexedChunk: each worker's term numbers -> columns
    lookup = index.__getitem__
    known: Any = _known_columns(index) if not grow else None
    frozen_counts: Any = _compiled_frozen_counts() if not grow else None
    grow_columns: Any = _grow_columns() if grow else None
    if grow and getattr(index, "default_factory", None) != index.__len__:
        raise ValueError("a growing index must be a defaultdict whose factory is its __len__")
    vocab: Any = None             # IndexedChunk with terms_out: the compiled numbering of the terms
    here = False                  # chunks numbered by numbered_here: their numbers are the columns

    def n_columns() -> int:
        return len(terms_out) if here and terms_out is not None else len(vocab) if vocab is not None else len(index)

    def append(block: sp.csr_matrix) -> None:
        """Append a block's rows (no duplicates; indices sorted unless the caller said sort=False)."""
        base = out_indptr[-1]
        out_indptr.frombytes((block.indptr[1:].astype(np.int64) + base).tobytes())
        out_indices.frombytes(block.indices.astype(np.int32).tobytes())
        out_data.frombytes(block.data.astype(np.int32).tobytes())

    def chunk_block() -> sp.csr_matrix:
        """The gathered documents' counts, canonical; the gathering starts again."""
        ids = np.fromiter(chunk_ids, dtype=np.int32, count=len(chunk_ids))
        shape = (len(chunk_ptr) - 1, max(len(index), 1))
        if shape[0] == 1:
            # one document (a message scored alone): its distinct columns, sorted, and how often
            # each occurs -- the matrix sum_duplicates makes, at a third of scipy's cost
            columns, counts = np.unique(ids, return_counts=True)
            block = sp.csr_matrix((counts.astype(np.float64), columns.astype(np.int32),
                                   np.array([0, len(columns)], dtype=np.int32)), shape=shape)
            block.has_canonical_format = True
        else:
            block = sp.csr_matrix((np.ones(len(ids)), ids, np.asarray(chunk_ptr, dtype=np.int64)), shape=shape)
            block.sum_duplicates()                    # also sorts the indices of each row
        chunk_ids.clear()
        chunk_ptr[1:] = []
        return block

    def flush():
        if len(chunk_ptr) > 1:
            append(chunk_block())

    def worker_columns(chunk: IndexedChunk):
        """The columns of a worker's chunk: its new terms looked up (or added), its numbers mapped."""
        nonlocal vocab
        mapping = tables.setdefault(chunk.source, array("i"))     # the worker's numbers -> columns
        if vocab is None and terms_out is not None and grow_columns is not None and not index:
            from ..common.compiled import speedups
            vocab = speedups().Numbering()
        if vocab is not None:                                      # the worker's new terms, in its order
            mapping.frombytes(vocab.columns(chunk.new_terms if type(chunk.new_terms) is list
                                            else list(chunk.new_terms)))
        elif grow_columns is not None and type(chunk.new_terms) is list:
            mapping.frombytes(grow_columns(index, chunk.new_terms))
        else:
            mapping.extend(map(lookup, chunk.new_terms))
        return np.frombuffer(mapping, dtype=np.int32)[chunk.ids] if len(chunk.ids) else chunk.ids

    def add_indexed(chunk: IndexedChunk) -> None:
        nonlocal here
        if not grow:
            raise ConfigError("numbered chunks are for learning a vocabulary (grow=True)")
        if chunk.source is NUMBERED_HERE and terms_out is not None and (here or (not tables and not index)):
            # one numbering of every document, in corpus order (numbered_here): its numbers are
            # the columns and its new terms the vocabulary's next ones, without a second table
            here = True
            terms_out.extend(chunk.new_terms)
            columns = chunk.ids
        elif here:
            raise ConfigError("chunks numbered here and by workers cannot be mixed")
        else:
            columns = worker_columns(chunk)
        if not sort:
            # the rows as they come: one entry per term and row, columns in the chunk's order
            base = out_indptr[-1]
            out_indptr.frombytes((np.cumsum(chunk.sizes, dtype=np.int64) + base).tobytes())
            out_indices.frombytes(np.ascontiguousarray(columns, dtype=np.int32).tobytes())
            out_data.frombytes(np.ascontiguousarray(chunk.counts, dtype=np.int32).tobytes())
            return
        ptr = np.zeros(len(chunk.sizes) + 1, dtype=np.int64)
        np.cumsum(chunk.sizes, out=ptr[1:])
        block = sp.csr_matrix((chunk.counts.astype(np.float64), columns, ptr),
                              shape=(len(chunk.sizes), max(n_columns(), 1)))
        block.sort_indices()                       # one entry per term and row already: sorted, it is canonical
        append(block)

    numbered = None                                # the first document decides: chunks or token lists
    for tokens in docs:
        if isinstance(tokens, str):
            raise ConfigError("a document must be a list of tokens, got a str; tokenize it first")
        if numbered is None:
            numbered = isinstance(tokens, IndexedChunk)
        elif numbered != isinstance(tokens, IndexedChunk):
            raise ConfigError("numbered chunks and token lists cannot be mixed")
        if numbered:
            add_indexed(tokens)
            continue
        if grow:
            chunk_ids += map(lookup, tokens)
        else:
            table = _frozen_table(index, len(tokens)) if type(tokens) is list else None
            got = frozen_counts(table, tokens) if table is not None else None
            if got is not None:
                # the row, distinct columns ascending and their counts: what the chunk's
                # sum_duplicates would make of it, appended after the rows gathered before it
                flush()
                out_indices.frombytes(got[0])
                out_data.frombytes(got[1])
                out_indptr.append(len(out_indices))
                continue
            known(tokens, chunk_ids)
        chunk_ptr.append(len(chunk_ids))
        if len(chunk_ptr) > CHUNK_DOCS:
            flush()
    if len(out_indptr) == 1 and len(chunk_ptr) > 1 and len(index):
        # one chunk in all (one message, a small batch): its block is the result as it is
        block = chunk_block()
        if block.indices.dtype == np.int32 and block.indptr.dtype == np.int32:
            return block
        append(block)
    flush()
    n_docs = len(out_indptr) - 1
    indptr = np.frombuffer(out_indptr, dtype=np.int64)
    if len(out_indices) < 2 ** 31 - 1:
        indptr = indptr.astype(np.int32)        # same index type as `indices`: scipy then copies neither
    # float64 only now that the stream (and whatever its reader holds) is finished
    data = np.frombuffer(out_data, dtype=np.int32).astype(np.float64)
    out_data = array("i")                            # the int32 copy let go: no longer needed
    if vocab is not None and terms_out is not None:             # (a vocab is made only for a terms_out)
        terms_out.extend(vocab.terms())
    return sp.csr_matrix((data,
                          np.frombuffer(out_indices, dtype=np.int32) if len(out_indices) else np.zeros(0, np.int32),
                          indptr),
                         shape=(n_docs, n_columns()))


#: token lists numbered at a time by :func:`numbered_here`
NUMBER_BATCH = 256


def numbered_here(docs, batch: int = NUMBER_BATCH):
    """``docs`` (token lists) as :class:`IndexedChunk` objects of up to ``batch`` documents, their
    terms numbered in this process by the compiled table (``speedups.Numbering``), as a worker
    process numbers its chunks: what :func:`count_matrix` makes of them is the same matrix, with
    the same columns in the same order, as of the token lists themselves, without a Python
    lookup per token and a sort of every chunk's duplicates (training in one process,
    ``--jobs 1``: the counting loop was a fifth of a run). The documents as they are where the
    extension was not built, or when the first one is not a list of tokens (the count then says
    what is wrong with it)."""
    docs = iter(docs)
    first = next(docs, None)
    if first is None:
        return
    numbers = new_numbering()
    if isinstance(numbers, dict) or not isinstance(first, list):
        yield first
        yield from docs
        return
    chunk = [first]
    for tokens in docs:
        if len(chunk) >= batch:
            yield _numbered(numbers, chunk)
            chunk = []
        if isinstance(tokens, (str, IndexedChunk)):
            raise ConfigError("a document must be a list of tokens, got a str; tokenize it first"
                              if isinstance(tokens, str) else "numbered chunks and token lists cannot be mixed")
        chunk.append(tokens if type(tokens) is list else list(tokens))
    yield _numbered(numbers, chunk)


#: the source of the chunks numbered_here makes: one numbering of every document, in order
NUMBERED_HERE = "numbered here"


def _numbered(numbers, chunk: list) -> IndexedChunk:
    new_terms, ids, counts, sizes = number_terms(numbers, chunk)
    return IndexedChunk(NUMBERED_HERE, new_terms, np.frombuffer(ids, dtype=np.intc), np.frombuffer(counts, dtype=np.intc),
                        np.frombuffer(sizes, dtype=np.int64))


def one_row(tokens: list, index: dict):
    """The counts of one token list under a fixed vocabulary: ``count_matrix([tokens], index,
    grow=False)``, the same matrix (data, indices, index pointer, their types, canonical), made
    by one compiled call (``speedups.known_counts``: the lookups, the sort and the counting)
    where the general loop spent about as long again on NumPy's ``unique`` and its own set-up
    for a message scored alone (spamd, ``spamkit filter``, pipe mode's full path), or
    ``speedups.frozen_counts`` once the vocabulary has its compiled table (:func:`_frozen_table`);
    None where it does not apply (not built, an index that is not a dict, a token that is not a
    ``str``), for the general loop."""
    from ..common.compiled import speedups
    module = speedups()
    if module is None or type(index) is not dict or not index:
        return None
    table = _frozen_table(index, len(tokens))
    if table is not None:
        got = module.frozen_counts(table, tokens)
        counts = np.frombuffer(got[1], dtype=np.int32).astype(np.float64) if got is not None else None
    else:
        got = module.known_counts(index, tokens)
        counts = np.frombuffer(got[1], dtype=np.float64) if got is not None else None
    if got is None:
        return None
    columns = np.frombuffer(got[0], dtype=np.int32)
    block = sp.csr_matrix((counts, columns, np.array([0, len(columns)], dtype=np.int32)), shape=(1, len(index)))
    block.has_canonical_format = True
    return block
