"""Token lists to sparse matrices: vocabulary, feature selection, representations, hashing.

Owns the step from ``list[str]`` per document to a ``scipy.sparse`` CSR matrix
of shape ``(n_docs, n_features)``. It never sees raw text (that is
:mod:`spamkit.text`) and never fits a classifier (that is :mod:`spamkit.models`).

Representations (``representation=``):

* ``"binary"``: 1 where the term occurs (Boolean presence);
* ``"tf"``: raw term counts;
* ``"tfnorm"``: counts divided by the document's total count over the
  vocabulary (length-normalised TF, rows sum to 1);
* ``"tfidf"``: counts times ``idf(t) = ln((1 + n) / (1 + df(t))) + 1``, each row
  then scaled to unit Euclidean length (Manning, Raghavan & Schütze,
  *Introduction to Information Retrieval* §6.2-6.3; the smoothed idf is
  scikit-learn's ``TfidfTransformer(smooth_idf=True)`` default, so the two agree).

Building a matrix streams through the documents once: memory grows with the
vocabulary and the non-zeros, not with the text. With ``hashing=N`` there is
no vocabulary at all: a token's column is ``|murmurhash3_32(token, seed=0)| mod N``
(scikit-learn's ``FeatureHasher``), for streams whose vocabulary does not fit.

One concern over ~440 lines: the vectorizer (vocabulary or hashing, representations,
selection by frequency or information gain, its saved state).
"""

from __future__ import annotations

import threading
from array import array
from collections import defaultdict
from functools import partial

import numpy as np
import scipy.sparse as sp

from .. import errors
from ..errors import ConfigError
from ..names import REPRESENTATIONS, SELECTIONS
from .numbering import IndexedChunk, new_numbering, number_terms



def columns_per_row(X, marked) -> np.ndarray:
    """For each row of a CSR matrix, how many of its non-zero columns are marked (``marked``: one
    0/1 or boolean per column).

    >>> columns_per_row(sp.csr_matrix([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]]), [True, True, False]).tolist()
    [1.0, 1.0]
    """
    # rows a block at a time, one byte per non-zero: a row index and a weight per non-zero
    # (16 bytes, or 8 for reduceat's cast of the whole matrix) were the peak of training
    marked = np.asarray(marked, dtype=bool)
    indptr = np.asarray(X.indptr, dtype=np.int64)
    out = np.zeros(X.shape[0])
    nonempty = np.flatnonzero(indptr[1:] > indptr[:-1])
    step = max(1, len(nonempty) * (1 << 16) // max(int(indptr[-1]), 1))     # about 64 Ki non-zeros a block
    for a in range(0, len(nonempty), step):
        rows = nonempty[a:a + step]
        lo, hi = int(indptr[rows[0]]), int(indptr[rows[-1] + 1])
        flags = marked[X.indices[lo:hi]]
        out[rows] = np.add.reduceat(flags, indptr[rows] - lo, dtype=np.int64)
    return out


def information_gain(df_per_class: np.ndarray, class_counts: np.ndarray) -> np.ndarray:
    """Information gain (bits) of each term's presence about the class.

    ``IG(t) = sum_c sum_{e in {t, not t}} P(e, c) log2(P(e, c) / (P(e) P(c)))``,
    the mutual information between "document contains t" and the class, with
    ``0 log 0 = 0`` (Yang & Pedersen 1997; used for attribute selection by
    Metsis, Androutsopoulos & Paliouras 2006).

    Parameters
    ----------
    df_per_class : array (n_features, n_classes)
        Documents of each class containing each term.
    class_counts : array (n_classes,)
        Documents of each class.

    Examples
    --------
    A term in every spam and no ham carries the whole class entropy (1 bit when
    the classes are balanced); a term spread evenly carries nothing:

    >>> information_gain(np.array([[0, 5], [2, 2]]), np.array([5, 5])).round(6).tolist()
    [1.0, 0.0]
    """
    df = np.asarray(df_per_class, dtype=np.float64)
    nc = np.asarray(class_counts, dtype=np.float64)
    n = nc.sum()
    p_c = nc / n                                           # (C,)
    joint_t = df / n                                       # P(t, c)
    joint_not = (nc[None, :] - df) / n                     # P(not t, c)
    p_t = joint_t.sum(axis=1, keepdims=True)               # P(t)
    p_not = 1.0 - p_t
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(joint_t > 0, joint_t * np.log2(joint_t / (p_t * p_c)), 0.0)
        b = np.where(joint_not > 0, joint_not * np.log2(joint_not / (p_not * p_c)), 0.0)
    return np.maximum((a + b).sum(axis=1), 0.0)


def l2_normalize_rows(X: sp.csr_matrix) -> sp.csr_matrix:
    """Scale every row to unit Euclidean length (all-zero rows stay zero); returns a new matrix."""
    X = sp.csr_matrix(X, dtype=np.float64, copy=True)
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    norms[norms == 0] = 1.0
    X.data /= np.repeat(norms, np.diff(X.indptr))
    return X


#: documents whose token ids are gathered before duplicates are summed (bounds the extra memory)
CHUNK_DOCS = 256


def sort_order(terms: list) -> np.ndarray:
    """The positions of ``terms`` in sorted order (int64): ``sorted(range(len(terms)),
    key=terms.__getitem__)``, which is the definition, or the compiled sort
    (``spamkit.speedups.sort_terms``: the terms' UTF-8 bytes compared with ``memcmp``, the
    order Python compares ``str`` in; about twice as quick on a mail vocabulary).

    >>> sort_order(["b", "a", "ab"]).tolist()
    [1, 2, 0]
    """
    from ..compiled import speedups
    module = speedups()
    if module is not None and isinstance(terms, list):
        order = module.sort_terms(terms)
        if order is not None:                          # None: a term with no UTF-8 form
            return np.frombuffer(order, dtype=np.int64)
    return np.fromiter(sorted(range(len(terms)), key=terms.__getitem__), dtype=np.int64, count=len(terms))


def sorted_with_order(terms: list) -> tuple[np.ndarray, list]:
    """``(sort_order(terms), the terms in that order)``, the second made with the first by the
    compiled sort (``spamkit.speedups.sort_terms(terms, True)``) where it can.

    >>> order, in_order = sorted_with_order(["b", "a", "ab"])
    >>> order.tolist(), in_order
    ([1, 2, 0], ['a', 'ab', 'b'])
    """
    from ..compiled import speedups
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
    training), which the compiled loop (``spamkit.speedups.column_counts``) does not, and the
    fallback only :data:`COUNT_SLICE` entries at a time.

    >>> column_counts(np.array([2, 0, 2], dtype=np.int32), 4).tolist()
    [1, 0, 2, 0]
    """
    from ..compiled import speedups
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
    runs where the compiled loop (``spamkit.speedups.renumber_rows``, a radix sort of each row)
    was not built or the arrays are not of its types (int32 columns, float64 values)."""
    from ..compiled import speedups
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
    None]``, which is its definition, or the compiled loop (``spamkit.speedups.known_columns``,
    about twice as quick on a 20 KB message) where it was built and ``index`` is a dict."""
    from ..compiled import speedups
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
    :class:`Vectorizer` makes a new one when its terms change)."""
    if type(index) is not dict:
        return None
    from ..compiled import speedups
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
    from ..compiled import speedups
    module = speedups()
    return module.frozen_counts if module is not None else (lambda table, tokens: None)


def _grow_columns():
    """``grow_columns(index, terms)``: the bytes of ``array("i", [index.setdefault(t, len(index))
    for t in terms])`` -- each term's column, a new term getting the next one, which is the
    definition -- in C (``spamkit.speedups.grow_columns``, under half the Python loop's time),
    or None where it was not built."""
    from ..compiled import speedups
    module = speedups()
    return module.grow_columns if module is not None else None


def count_matrix(docs, index: dict, grow: bool, sort: bool = True, terms_out: list | None = None):
    """CSR counts of ``docs`` under ``index`` (token -> column); with ``grow`` new tokens get columns.

    ``terms_out``: a list that, for :class:`IndexedChunk` documents, receives the vocabulary in
    column order *instead of* ``index`` (which stays empty): the columns are then numbered in a
    compiled table (``speedups.Numbering.columns``: the same columns; a third of the dict's
    time, its slots asked for ahead and no Python int per column), and the caller wanting only
    the terms in order (:meth:`Vectorizer.fit_transform`) is spared a dict of them.

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
    known = _known_columns(index) if not grow else None
    frozen_counts = _compiled_frozen_counts() if not grow else None
    grow_columns = _grow_columns() if grow else None
    if grow and getattr(index, "default_factory", None) != index.__len__:
        raise ValueError("a growing index must be a defaultdict whose factory is its __len__")
    vocab = None                  # IndexedChunk with terms_out: the compiled numbering of the terms
    here = False                  # chunks numbered by numbered_here: their numbers are the columns

    def n_columns() -> int:
        return len(terms_out) if here else len(vocab) if vocab is not None else len(index)

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
            from ..compiled import speedups
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
    out_data = None                                  # the int32 copy is no longer needed
    if vocab is not None:
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
    from ..compiled import speedups
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


def _threshold(value, n_docs: int, name: str) -> float:
    """min_df/max_df: an int is a count of documents, a float in [0, 1] a proportion."""
    if isinstance(value, (bool, np.bool_)):
        raise ConfigError(f"{name} must be a number, got {value!r}")
    if isinstance(value, (int, np.integer)):
        if value < 0:
            raise ConfigError(f"{name} must be >= 0, got {value}")
        return float(value)
    value = float(value)
    if not 0.0 <= value <= 1.0:
        raise ConfigError(f"{name} as a proportion must be in [0, 1], got {value}")
    return value * n_docs


class Vectorizer:
    """Token lists to a CSR matrix in one of :data:`REPRESENTATIONS`.

    Parameters
    ----------
    representation : {"binary", "tf", "tfnorm", "tfidf"}
    min_df, max_df : int or float
        Keep terms in at least ``min_df`` and at most ``max_df`` documents
        (an int counts documents, a float is a proportion of them).
    max_features : int, optional
        Keep at most this many terms, chosen by ``select``.
    select : {"frequency", "ig"}
        ``"frequency"``: the terms with the most occurrences in the corpus
        (scikit-learn's ``CountVectorizer(max_features=...)`` rule);
        ``"ig"``: the highest information gain about the class (needs labels).
        Ties are broken by document frequency, then alphabetically.
    hashing : int, optional
        Use ``hashing`` hashed columns and no vocabulary (min_df, max_df,
        max_features and select do not apply).

    Examples
    --------
    >>> v = Vectorizer("tf")
    >>> X = v.fit_transform([["free", "money", "free"], ["meeting", "notes"]])
    >>> v.terms_, X.toarray().tolist()
    (['free', 'meeting', 'money', 'notes'], [[2.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 1.0]])
    >>> v.transform([["free", "unknown"]]).toarray().tolist()
    [[1.0, 0.0, 0.0, 0.0]]
    """

    def __init__(self, representation: str = "tf", min_df=1, max_df=1.0, max_features: int | None = None,
                 select: str = "frequency", hashing: int | None = None):
        if representation not in REPRESENTATIONS:
            raise ConfigError(f"unknown representation {representation!r}; choose one of "
                              f"{', '.join(REPRESENTATIONS)}")
        if select not in SELECTIONS:
            raise ConfigError(f"unknown feature selection {select!r}; choose one of {', '.join(SELECTIONS)}")
        if max_features is not None and (not isinstance(max_features, (int, np.integer)) or max_features < 1):
            raise ConfigError(f"max_features must be a positive integer, got {max_features!r}")
        if hashing is not None and (not isinstance(hashing, (int, np.integer)) or hashing < 1):
            raise ConfigError(f"hashing must be a positive number of columns, got {hashing!r}")
        self.representation = representation
        self.min_df = min_df
        self.max_df = max_df
        self.max_features = max_features
        self.select = select
        self.hashing = hashing
        _threshold(min_df, 1, "min_df")
        _threshold(max_df, 1, "max_df")

    @property
    def terms_(self) -> list | None:
        """Each column's term (None when hashing); setting it makes :attr:`vocabulary_` anew."""
        return self._terms                           # AttributeError when not fitted

    @terms_.setter
    def terms_(self, value) -> None:
        self._terms = value
        self.__dict__.pop("_vocabulary", None)

    @property
    def vocabulary_(self) -> dict | None:
        """term -> column; made from ``terms_`` when first asked for (training a filter and
        writing its file never need it: 75 ms and a 220,000-entry dict saved); None when hashing."""
        try:
            return self._vocabulary
        except AttributeError:
            pass
        terms = self.terms_                          # AttributeError when not fitted, as before
        self._vocabulary = None if terms is None else {t: j for j, t in enumerate(terms)}
        return self._vocabulary

    @vocabulary_.setter
    def vocabulary_(self, value) -> None:
        self._vocabulary = value

    @classmethod
    def hashed(cls, n_features: int, representation: str = "tf") -> "Vectorizer":
        """A ready hashing vectorizer that needs no fitting (no idf): for streams learned online."""
        if representation == "tfidf":
            raise ConfigError("tfidf needs document frequencies from data; fit it instead")
        v = cls(representation, hashing=n_features)
        v.vocabulary_ = v.terms_ = v.idf_ = None
        v.n_docs_ = 0
        v.df_ = np.zeros(int(n_features), dtype=np.int64)
        v.n_features_ = int(n_features)
        return v

    # ----------------------------------------------------------------- fitting

    def fit(self, docs, y=None) -> "Vectorizer":
        """Learn the vocabulary (and idf) from token lists; returns ``self``."""
        self.fit_transform(docs, y)
        return self

    def fit_transform(self, docs, y=None) -> sp.csr_matrix:
        """Learn from ``docs`` (iterable of token lists) in one pass and return their matrix.

        ``y`` (class labels, aligned with ``docs``) is needed for ``select="ig"``.
        """
        if self.hashing is not None:
            counts = self.hash_counts(docs)
            self.vocabulary_ = None
            self.terms_ = None
        else:
            index: defaultdict[str, int] = defaultdict()
            index.default_factory = index.__len__
            terms: list = []                           # numbered chunks: the vocabulary, in column order
            # numbered by the compiled table, a chunk at a time (the same matrix: numbered_here)
            counts = count_matrix(numbered_here(docs), index, grow=True, sort=False, terms_out=terms)  # _limit sorts the rows
            index.default_factory = None               # from here on, a plain mapping
            counts = self._limit(counts, terms if terms else index, y)
        self.n_docs_ = counts.shape[0]
        if self.n_docs_ == 0:
            raise ConfigError("no documents to learn a vocabulary from")
        self.df_ = column_counts(counts.indices, counts.shape[1])
        if self.representation == "tfidf":
            # idf(t) = ln((1 + n) / (1 + df(t))) + 1   (smoothed: as if one more document held every term)
            self.idf_ = np.log((1.0 + self.n_docs_) / (1.0 + self.df_)) + 1.0
        else:
            self.idf_ = None
        self.n_features_ = counts.shape[1]
        return self.represent(counts)

    def select_columns(self, terms: list, df: np.ndarray, n_docs: int, score) -> np.ndarray:
        """Indices into ``terms`` of the columns kept, in alphabetical order of their terms
        (:meth:`select_terms`, without the terms)."""
        return self.select_terms(terms, df, n_docs, score)[0]

    def select_terms(self, terms: list, df: np.ndarray, n_docs: int, score) -> tuple[np.ndarray, list]:
        """Indices into ``terms`` of the columns kept, in alphabetical order of their terms, and
        those terms in that order.

        min_df/max_df on the document frequencies ``df``; then, past ``max_features``, the
        highest ``score(keep)`` (total count, or information gain), ties by document
        frequency, then alphabetically. Depends only on these per-term statistics, not on
        the order of ``terms``: single-process training and the Dask engine
        (:mod:`spamkit.distributed`, which sums the statistics of partitions) both call it,
        so they keep the same columns.
        """
        low = _threshold(self.min_df, n_docs, "min_df")
        high = _threshold(self.max_df, n_docs, "max_df")
        if len(terms) == 0:
            raise ConfigError(f"the {n_docs} documents hold no token at all: empty vocabulary "
                              "(were they all empty, or all stop words?)")
        keep = np.flatnonzero((df >= low) & (df <= high))
        if keep.size == 0:
            raise ConfigError(f"no term is in at least min_df={self.min_df} and at most max_df={self.max_df} "
                              f"of the {n_docs} documents; lower min_df or raise max_df")
        if self.max_features is not None and keep.size > self.max_features:
            s = score(keep)
            # Highest score first; ties by document frequency, then alphabetically (deterministic).
            order = sorted(range(keep.size), key=lambda k: (-s[k], -df[keep[k]], terms[keep[k]]))
            keep = keep[np.array(order[: self.max_features], dtype=np.int64)]
        # Columns in alphabetical order of their terms, as scikit-learn's vectorizers do.
        kept = terms if keep.size == len(terms) else [terms[j] for j in keep.tolist()]
        order, in_order = sorted_with_order(kept)
        return keep[order], in_order

    def _limit(self, counts: sp.csr_matrix, index, y) -> sp.csr_matrix:
        """Drop columns by min_df/max_df/max_features, renumber the rest alphabetically.
        ``index``: the provisional vocabulary, a term's column its rank in it (a dict in insertion
        order, or the list of the terms).

        Works in place where it can (the provisional ``index`` is emptied and no vocabulary
        dict is made until one is asked for, the matrix's column indices are rewritten rather
        than copied): the vocabulary and the non-zeros are the largest things spamkit holds
        while training.
        """
        n_docs = counts.shape[0]
        df = column_counts(counts.indices, counts.shape[1])
        if self.select == "ig" and y is None:
            raise ConfigError("select='ig' (information gain) needs the class labels y")
        terms = list(index)                 # a new token's column is its insertion rank

        def score(keep):
            if self.select == "ig":
                return self._ig(counts[:, keep], y)
            return np.asarray(counts[:, keep].sum(axis=0)).ravel()

        keep, kept_terms = self.select_terms(terms, df, n_docs, score)
        n_old = counts.shape[1]
        # a term's provisional column is its insertion rank, i.e. its position in `terms`
        new_col = np.full(n_old, -1, dtype=np.int32)
        new_col[keep] = np.arange(len(keep), dtype=np.int32)
        del terms
        index.clear()                                  # the vocabulary is made from terms_ if asked for
        self.terms_ = kept_terms                     # (the vocabulary dict is made if asked for)
        if len(kept_terms) == n_old:
            renumber_columns(counts, new_col)          # in place
            return counts
        mapped = new_col[counts.indices]
        present = mapped >= 0
        kept_before = np.concatenate([[0], np.cumsum(present, dtype=np.int64)])
        indptr = kept_before[counts.indptr]              # kept entries before each row start
        counts = sp.csr_matrix((counts.data[present], mapped[present], indptr), shape=(n_docs, len(kept_terms)))
        counts.has_sorted_indices = False
        counts.sort_indices()
        return counts

    @staticmethod
    def _ig(counts: sp.csr_matrix, y) -> np.ndarray:
        y = np.asarray(y)
        if y.shape[0] != counts.shape[0]:
            raise ConfigError(f"y has {y.shape[0]} labels for {counts.shape[0]} documents")
        classes, codes = np.unique(y, return_inverse=True)
        onehot = sp.csr_matrix((np.ones(len(codes)), (np.arange(len(codes)), codes)),
                               shape=(len(codes), len(classes)))
        present = counts.copy()
        present.data[:] = 1.0
        df_per_class = np.asarray((present.T @ onehot).todense())
        return information_gain(df_per_class, np.bincount(codes))

    def hash_counts(self, docs) -> sp.csr_matrix:
        """Counts of ``docs`` over ``hashing`` columns: each token's column as scikit-learn's
        ``FeatureHasher(alternate_sign=False)`` computes it (MurmurHash3 of its UTF-8 bytes),
        by the compiled loop where it was built (``spamkit.speedups.hash_columns``, the same
        columns: tests/test_features.py), else by FeatureHasher itself."""
        from ..compiled import speedups
        compiled = speedups()
        if compiled is None:
            return self._feature_hasher_counts(docs)
        n = int(self.hashing)
        blocks, ids, ptr = [], [], [0]

        def flush():
            columns = np.frombuffer(bytearray(b"".join(ids)), dtype=np.int32)   # writable: sorted in place
            block = sp.csr_matrix((np.ones(len(columns)), columns, np.asarray(ptr, dtype=np.int64)),
                                  shape=(len(ptr) - 1, n))
            block.sum_duplicates()                # also sorts each row's columns
            blocks.append(block)
            ids.clear()
            ptr[1:] = []

        for tokens in docs:
            if isinstance(tokens, str):
                raise ConfigError("a document must be a list of tokens, got a str; tokenize it first")
            hashed = compiled.hash_columns(tokens, n)
            ids.append(hashed)
            ptr.append(ptr[-1] + len(hashed) // 4)
            if len(ptr) > 2048:
                flush()
        if len(ptr) > 1 or not blocks:
            flush()
        X = blocks[0] if len(blocks) == 1 else sp.vstack(blocks, format="csr")
        X.sort_indices()
        return X

    def _feature_hasher_counts(self, docs) -> sp.csr_matrix:
        from sklearn.feature_extraction import FeatureHasher
        hasher = FeatureHasher(n_features=int(self.hashing), input_type="string", alternate_sign=False)
        blocks = []
        batch = []
        for tokens in docs:
            if isinstance(tokens, str):
                raise ConfigError("a document must be a list of tokens, got a str; tokenize it first")
            batch.append(tokens)
            if len(batch) == 2048:
                blocks.append(hasher.transform(batch))
                batch = []
        if batch or not blocks:
            blocks.append(hasher.transform(batch) if batch else sp.csr_matrix((0, int(self.hashing))))
        X = sp.vstack(blocks, format="csr")
        X.sort_indices()
        return X

    # ----------------------------------------------------------------- transforming

    def check_fitted(self):
        if not hasattr(self, "n_features_"):
            raise errors.NotFittedError("this Vectorizer is not fitted yet; call fit or fit_transform first")

    def counts(self, docs) -> sp.csr_matrix:
        """Raw counts of ``docs`` over the learned columns (unknown tokens are ignored)."""
        self.check_fitted()
        if self.hashing is not None:
            return self.hash_counts(docs)
        if type(docs) is list and len(docs) == 1 and type(docs[0]) is list:
            row = one_row(docs[0], self.vocabulary_)
            if row is not None:
                return row
        return count_matrix(docs, self.vocabulary_, grow=False)

    def transform(self, docs) -> sp.csr_matrix:
        """The matrix of ``docs`` (iterable of token lists) in the learned representation."""
        return self.represent(self.counts(docs))

    def represent(self, counts: sp.csr_matrix) -> sp.csr_matrix:
        # counts is always a fresh matrix made by this class: transform it in place
        X = counts if counts.dtype == np.float64 else counts.astype(np.float64)
        if self.representation == "binary":
            X.data[:] = 1.0
        elif self.representation == "tfnorm":
            sums = np.asarray(X.sum(axis=1)).ravel()
            sums[sums == 0] = 1.0
            X.data /= np.repeat(sums, np.diff(X.indptr))
        elif self.representation == "tfidf":
            X = sp.csr_matrix(X.multiply(self.idf_[None, :]))
            X = l2_normalize_rows(X)
        return X

    # ----------------------------------------------------------------- persistence

    def get_config(self) -> dict:
        return {"representation": self.representation, "min_df": self.min_df, "max_df": self.max_df,
                "max_features": self.max_features, "select": self.select, "hashing": self.hashing}

    def get_arrays(self) -> dict:
        """What a model file stores besides the config: df, idf, document count."""
        self.check_fitted()
        arrays = {"df": self.df_, "n_docs": np.array([self.n_docs_], dtype=np.int64)}
        if self.idf_ is not None:
            arrays["idf"] = self.idf_
        return arrays

    @classmethod
    def restore(cls, config: dict, terms: list[str] | None, arrays: dict) -> "Vectorizer":
        """Rebuild a fitted vectorizer from :meth:`get_config`, its terms and :meth:`get_arrays`."""
        v = cls(**config)
        v.terms_ = list(terms) if terms is not None else None
        v.df_ = np.asarray(arrays["df"], dtype=np.int64)
        v.n_docs_ = int(np.asarray(arrays["n_docs"])[0])
        v.idf_ = np.asarray(arrays["idf"], dtype=np.float64) if "idf" in arrays else None
        v.n_features_ = int(v.hashing) if v.hashing is not None else len(v.terms_)
        if v.df_.shape[0] != v.n_features_:
            raise ConfigError(f"vectorizer has {v.n_features_} columns but {v.df_.shape[0]} document "
                              "frequencies; the model file is inconsistent")
        return v

    def term(self, j: int) -> str:
        """The token of column ``j`` (``#j`` under hashing, where columns have no name)."""
        return self.terms_[j] if self.terms_ is not None else f"#{j}"
