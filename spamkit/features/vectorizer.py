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

One concern: the vectorizer (vocabulary or hashing, representations, selection by frequency
or information gain, its saved state); counting token lists into a matrix is
:mod:`spamkit.features.counting`.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import scipy.sparse as sp

from ..common import errors
from ..common.errors import ConfigError, check_choice
from ..common.names import REPRESENTATIONS, SELECTIONS
from .counting import column_counts, count_matrix, numbered_here, one_row, renumber_columns, sorted_with_order
from .matrices import information_gain, l2_normalize_rows


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


def _optional_count(value, rule: str):
    """None, or an integer >= 1; otherwise a ConfigError saying ``rule``."""
    if value is not None and (not isinstance(value, (int, np.integer)) or value < 1):
        raise ConfigError(f"{rule}, got {value!r}")
    return value


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

    #: term -> column, made from terms_ when first asked for (annotation only: see vocabulary_)
    _vocabulary: dict | None

    def __init__(self, representation: str = "tf", min_df=1, max_df=1.0, max_features: int | None = None,
                 select: str = "frequency", hashing: int | None = None):
        self.representation = check_choice(representation, REPRESENTATIONS, "representation")
        self.select = check_choice(select, SELECTIONS, "feature selection")
        self.max_features = _optional_count(max_features, "max_features must be a positive integer")
        self.hashing = _optional_count(hashing, "hashing must be a positive number of columns")
        _threshold(min_df, 1, "min_df")
        _threshold(max_df, 1, "max_df")
        self.min_df, self.max_df = min_df, max_df

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
        (:mod:`spamkit.jobs.distributed`, which sums the statistics of partitions) both call it,
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
            ranked = sorted(range(keep.size), key=lambda k: (-s[k], -df[keep[k]], terms[keep[k]]))
            keep = keep[np.array(ranked[: self.max_features], dtype=np.int64)]
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
        by the compiled loop where it was built (``spamkit.common.speedups.hash_columns``, the same
        columns: tests/test_features.py), else by FeatureHasher itself."""
        from ..common.compiled import speedups
        if self.hashing is None:
            raise ConfigError("this Vectorizer has a vocabulary, not hashed columns")
        compiled = speedups()
        if compiled is None:
            return self._feature_hasher_counts(docs)
        n = int(self.hashing)
        blocks: list = []
        ids: list = []
        ptr = [0]

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
        if self.hashing is None:
            raise ConfigError("this Vectorizer has a vocabulary, not hashed columns")
        n_columns = int(self.hashing)
        hasher = FeatureHasher(n_features=n_columns, input_type="string", alternate_sign=False)
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
            blocks.append(hasher.transform(batch) if batch else sp.csr_matrix((0, n_columns)))
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
        vocabulary = self.vocabulary_
        assert vocabulary is not None                # a fitted vectorizer without hashing has one
        if type(docs) is list and len(docs) == 1 and type(docs[0]) is list:
            row = one_row(docs[0], vocabulary)
            if row is not None:
                return row
        return count_matrix(docs, vocabulary, grow=False)

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
