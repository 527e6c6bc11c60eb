"""Sparse features: scikit-learn's vectorizers as oracle, information gain by hand and by oracle."""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.feature_extraction import FeatureHasher
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer
from sklearn.metrics import mutual_info_score

from spamkit.common.compiled import speedups
from spamkit.common.errors import ConfigError, NotFittedError
from spamkit.features.vectorizer import Vectorizer
from spamkit.features.matrices import information_gain, l2_normalize_rows

from conftest import compiled_expected, extensions_off, shared_corpus

DOCS = [["free", "money", "free", "now"], ["meeting", "notes", "now"], ["free", "meeting"],
        ["money", "money", "money", "offer"], ["notes", "offer", "now", "free"]]
Y = [1, 0, 0, 1, 1]


def sk_count(**kw):
    return CountVectorizer(analyzer=lambda d: d, **kw)


@pytest.mark.parametrize("kw", [{}, {"min_df": 2}, {"max_df": 0.5}, {"min_df": 2, "max_df": 3}])
def test_tf_and_binary_agree_with_countvectorizer(kw):
    for representation, binary in (("tf", False), ("binary", True)):
        ours = Vectorizer(representation, **kw)
        X = ours.fit_transform(DOCS)
        theirs = sk_count(binary=binary, **kw)
        expected = theirs.fit_transform(DOCS)
        assert ours.terms_ == list(theirs.get_feature_names_out())
        np.testing.assert_array_equal(X.toarray(), expected.toarray())
        new = [["free", "unseen", "now", "now"]]
        np.testing.assert_array_equal(ours.transform(new).toarray(), theirs.transform(new).toarray())


def test_max_features_by_corpus_frequency_like_countvectorizer():
    # corpus counts: money 4, free 4, now 3, notes 2, offer 2, meeting 2 -> ties only below the cut
    docs = DOCS + [["free", "now"]]
    ours = Vectorizer("tf", max_features=3).fit(docs)
    theirs = sk_count(max_features=3).fit(docs)
    assert ours.terms_ == list(theirs.get_feature_names_out()) == ["free", "money", "now"]


def test_tfidf_agrees_with_tfidfvectorizer():
    ours = Vectorizer("tfidf")
    X = ours.fit_transform(DOCS)
    theirs = TfidfVectorizer(analyzer=lambda d: d)
    np.testing.assert_allclose(X.toarray(), theirs.fit_transform(DOCS).toarray(), rtol=1e-12)
    np.testing.assert_allclose(ours.idf_, theirs.idf_, rtol=1e-12)
    # by hand: "free" is in 3 of 5 documents: idf = ln(6/4) + 1
    assert ours.idf_[ours.vocabulary_["free"]] == pytest.approx(math.log(6 / 4) + 1)


def test_tfnorm_rows_sum_to_one_and_unknowns_ignored():
    v = Vectorizer("tfnorm")
    X = v.fit_transform(DOCS)
    np.testing.assert_allclose(np.asarray(X.sum(axis=1)).ravel(), 1.0)
    # first doc: free 2, money 1, now 1 of 4 tokens
    row = X[0].toarray().ravel()
    assert row[v.vocabulary_["free"]] == 0.5 and row[v.vocabulary_["money"]] == 0.25
    assert v.transform([["zzz"]]).nnz == 0


def test_information_gain_by_hand_and_against_mutual_information():
    # Term in 3 of 3 spam and 0 of 2 ham: IG = H(C) = -(0.6 log2 0.6 + 0.4 log2 0.4)
    h = -(0.6 * math.log2(0.6) + 0.4 * math.log2(0.4))
    assert information_gain(np.array([[0, 3]]), np.array([2, 3]))[0] == pytest.approx(h)
    rng = np.random.default_rng(0)
    present = rng.integers(0, 2, size=(300, 20))
    y = rng.integers(0, 3, size=300)
    df = np.stack([present[y == c].sum(axis=0) for c in range(3)], axis=1)
    ig = information_gain(df, np.bincount(y))
    mi = [mutual_info_score(y, present[:, j]) for j in range(20)]          # nats
    np.testing.assert_allclose(ig * math.log(2), mi, rtol=1e-10, atol=1e-15)


def test_select_by_information_gain_keeps_the_discriminating_terms():
    docs = [["spammy", "common", f"rare{i}"] for i in range(10)] + [["hammy", "common"] for _ in range(10)]
    y = [1] * 10 + [0] * 10
    v = Vectorizer("binary", max_features=2, select="ig").fit(docs, y)
    assert v.terms_ == ["hammy", "spammy"]
    with pytest.raises(ConfigError, match="needs the class labels"):
        Vectorizer("binary", max_features=2, select="ig").fit(docs)


def test_hashing_matches_featurehasher():
    v = Vectorizer("tf", hashing=64)
    X = v.fit_transform(DOCS)
    expected = FeatureHasher(64, input_type="string", alternate_sign=False).transform(DOCS)
    np.testing.assert_array_equal(X.toarray(), expected.toarray())
    assert v.terms_ is None and v.term(5) == "#5"


_hashed = pytest.mark.skipif(speedups() is None and not compiled_expected(),
                             reason="spamkit.common.speedups is not in use (not built, or SPAMKIT_PURE_PYTHON=1)")


@_hashed
@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.text(max_size=40).filter(lambda t: not any(0xD800 <= ord(c) <= 0xDFFF for c in t)),
                         max_size=30), max_size=8),
       st.sampled_from([1, 2, 7, 64, 2 ** 20, 2 ** 31 - 1]))
def test_compiled_hashing_gives_featurehashers_columns(docs, n):
    """The compiled MurmurHash3 loop against scikit-learn's FeatureHasher itself (any Unicode,
    repeated tokens, empty documents, widths from 1 to 2**31 - 1)."""
    v = Vectorizer("tf", hashing=n)
    X = v.hash_counts(docs)
    expected = v._feature_hasher_counts(docs)
    assert X.shape == expected.shape and X.dtype == expected.dtype
    assert np.array_equal(X.indptr, expected.indptr) and np.array_equal(X.indices, expected.indices)
    assert np.array_equal(X.data, expected.data)


@_hashed
def test_compiled_hashing_on_mail_tokens():
    from spamkit.corpus import Corpus
    from spamkit import BEST, build_filter
    analyzer = build_filter(**BEST).analyzer              # the mail tokens
    with Corpus(shared_corpus("csdmc2010/csdmc2010.tar.gz")) as corpus:
        docs = [analyzer(m.raw) for m in corpus]
    v = Vectorizer("binary", hashing=2 ** 20)
    X, expected = v.hash_counts(docs), v._feature_hasher_counts(docs)
    assert X.nnz > 100_000 and (X != expected).nnz == 0 and np.array_equal(X.indices, expected.indices)


# terms that share long prefixes (as mail tokens do: "received:ip:...") and every kind of character
_TERMS = st.lists(st.builds(lambda p, t: p + t, st.sampled_from(["", "received:", "received:ip:", "é", "\U0001F600"]),
                            st.text(max_size=10)), max_size=80)


@_hashed
@settings(max_examples=400, deadline=None)
@given(_TERMS)
def test_the_compiled_sort_of_terms_is_sorted(terms):
    """speedups.sort_terms against its definition, sorted() over positions (stable: equal
    terms keep their order)."""
    from spamkit.common import speedups
    from spamkit.features.counting import sort_order
    expected = sorted(range(len(terms)), key=terms.__getitem__)
    order = speedups.sort_terms(terms)
    assert np.frombuffer(order, dtype=np.int64).tolist() == expected
    assert sort_order(terms).tolist() == expected                  # the fallback takes over


_LONG_TERMS = st.lists(st.builds(lambda p, t: p + t, st.sampled_from(["", "received:", "received:ip:1", "received:ip:10",
                                                                     "\x00", "abcdefgh", "abcdefgh\x00"]),
                                 st.text(alphabet="ab\x00é", max_size=12)), min_size=12, max_size=600)


@_hashed
@settings(max_examples=150, deadline=None)
@given(_LONG_TERMS)
def test_the_compiled_sort_of_many_terms_with_shared_prefixes_is_sorted(terms):
    """The multikey quicksort's every path: partitions of equal 8-byte heads sorted again 8 bytes
    further (prefixes of 8 and more bytes), terms that end within a head (NUL bytes, which the
    zero padding imitates), duplicates (stable), and runs too small to partition."""
    from spamkit.common import speedups
    expected = sorted(range(len(terms)), key=terms.__getitem__)
    assert np.frombuffer(speedups.sort_terms(terms), dtype=np.int64).tolist() == expected


def test_the_compiled_sort_orders_prefixes_and_nul_bytes_as_python():
    from spamkit.common import speedups
    terms = ["abc\x00\x00\x00\x00\x00x", "abc", "abc\x00", "ab", "abc\x00\x00\x00\x00\x00", "abc", "",
             "abcdefgh", "abcdefghi", "abcdefgh\x00", "abcdefg"] * 3
    expected = sorted(range(len(terms)), key=terms.__getitem__)
    assert np.frombuffer(speedups.sort_terms(terms), dtype=np.int64).tolist() == expected


@_hashed
@settings(max_examples=200, deadline=None)
@given(_LONG_TERMS)
def test_the_compiled_sort_gives_the_terms_in_order_too(terms):
    """speedups.sort_terms(terms, True): the order sort_terms gives and the terms taken in it (the same
    objects), against their definitions; features.sorted_with_order the same with or without it."""
    from spamkit.common import speedups
    from spamkit.features.counting import sorted_with_order
    expected = sorted(range(len(terms)), key=terms.__getitem__)
    order, in_order = speedups.sort_terms(terms, True)
    assert np.frombuffer(order, dtype=np.int64).tolist() == expected
    assert in_order == [terms[j] for j in expected] and all(a is terms[j] for a, j in zip(in_order, expected))
    got_order, got_terms = sorted_with_order(terms)
    assert got_order.tolist() == expected and got_terms == sorted(terms)
    assert speedups.sort_terms(terms + ["\ud800"], True) is None        # no UTF-8 form: Python sorts
    fallback_order, fallback_terms = sorted_with_order(terms + ["\ud800"])
    assert fallback_terms == sorted(terms + ["\ud800"]) and fallback_order.tolist()[-1] == len(terms)


def _renumbered_by_definition(X: sp.csr_matrix, new_col: np.ndarray) -> sp.csr_matrix:
    Y = X.copy()
    Y.indices[:] = new_col[Y.indices]
    Y.has_sorted_indices = False
    Y.sort_indices()
    return Y


@st.composite
def _rows_and_renumbering(draw):
    """A CSR matrix with distinct columns in each row in any order (as a worker's chunks give
    them), and a permutation of its columns; long rows take the radix path, short ones insertion."""
    n_cols = draw(st.sampled_from([1, 3, 255, 256, 257, 70_000, 2 ** 24 + 5]))
    rows = draw(st.lists(st.lists(st.integers(0, n_cols - 1), max_size=300, unique=True), max_size=12))
    values = [draw(st.lists(st.integers(1, 50), min_size=len(r), max_size=len(r))) for r in rows]
    ptr = np.concatenate([[0], np.cumsum([len(r) for r in rows])]).astype(draw(st.sampled_from([np.int32, np.int64])))
    X = sp.csr_matrix((np.array([v for vs in values for v in vs], dtype=np.float64),
                       np.array([c for r in rows for c in r], dtype=np.int32), ptr), shape=(len(rows), n_cols))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    new_col = rng.permutation(n_cols).astype(np.int32) if n_cols < 100_000 else \
        (np.arange(n_cols, dtype=np.int64)[::-1] % n_cols).astype(np.int32)
    return X, new_col


@_hashed
@settings(max_examples=300, deadline=None)
@given(_rows_and_renumbering())
def test_compiled_renumbering_of_rows_is_its_definition(case):
    """speedups.renumber_rows (a radix sort of each row by its new columns, in place) against
    new_col[indices] then scipy's sort_indices: the same indices, values and pointers."""
    from spamkit.features.counting import renumber_columns
    X, new_col = case
    expected = _renumbered_by_definition(X, new_col)
    got = X.copy()
    speedups().renumber_rows(got.indptr, got.indices, got.data, new_col)
    assert np.array_equal(got.indptr, expected.indptr) and np.array_equal(got.indices, expected.indices)
    assert np.array_equal(got.data, expected.data)
    through = X.copy()
    renumber_columns(through, new_col)
    assert through.has_sorted_indices and np.array_equal(through.indices, expected.indices)
    assert (through != expected).nnz == 0


@_hashed
@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 300), max_size=500), st.integers(0, 60), st.booleans())
def test_compiled_column_counts_are_bincounts(columns, extra, wide):
    """speedups.column_counts (no int64 copy of int32 indices) and features.column_counts with its
    fallback (COUNT_SLICE entries at a time) against np.bincount, int32 and int64 indices; an
    index outside the columns is an error, never a write out of bounds."""
    from spamkit.features import counting as features
    indices = np.array(columns, dtype=np.int64 if wide else np.int32)
    n_cols = (max(columns) + 1 if columns else 0) + extra
    expected = np.bincount(indices, minlength=n_cols)
    assert np.frombuffer(speedups().column_counts(indices, n_cols), dtype=np.int64).tolist() == expected.tolist()
    assert features.column_counts(indices, n_cols).tolist() == expected.tolist()
    old = features.COUNT_SLICE
    features.COUNT_SLICE = 7
    try:
        assert features.column_counts(indices.astype(np.int16), n_cols).tolist() == expected.tolist()   # fallback
    finally:
        features.COUNT_SLICE = old
    if columns:
        with pytest.raises(ValueError):
            speedups().column_counts(indices, max(columns))
        with pytest.raises(ValueError):
            speedups().column_counts(np.array([-1], dtype=indices.dtype), 5)


def test_compiled_renumbering_refuses_what_it_cannot_do():
    """A negative new column, a column outside new_col, a row with a column twice, wrong types:
    errors, never a write out of bounds."""
    from spamkit.common import speedups
    X = sp.csr_matrix((np.ones(3), np.array([2, 0, 1], dtype=np.int32), np.array([0, 3], dtype=np.int32)),
                      shape=(1, 3))
    with pytest.raises(ValueError, match="negative"):
        speedups.renumber_rows(X.indptr, X.indices.copy(), X.data.copy(), np.array([0, -1, 2], dtype=np.int32))
    with pytest.raises(ValueError, match="outside"):
        speedups.renumber_rows(X.indptr, X.indices.copy(), X.data.copy(), np.array([0, 1], dtype=np.int32))
    with pytest.raises(ValueError, match="twice"):
        speedups.renumber_rows(X.indptr, X.indices.copy(), X.data.copy(), np.array([0, 0, 1], dtype=np.int32))
    with pytest.raises(ValueError, match="indptr"):
        speedups.renumber_rows(np.array([0, 4], dtype=np.int32), X.indices.copy(), X.data.copy(),
                               np.arange(3, dtype=np.int32))
    with pytest.raises(TypeError):
        speedups.renumber_rows(X.indptr, X.indices.astype(np.int64), X.data.copy(), np.arange(3, dtype=np.int32))
    with pytest.raises((ValueError, BufferError)):         # read-only data cannot be sorted in place (NumPy says so)
        frozen = X.data.copy()
        frozen.flags.writeable = False
        speedups.renumber_rows(X.indptr, X.indices.copy(), frozen, np.arange(3, dtype=np.int32))


def test_the_compiled_sort_refuses_what_is_not_a_list_of_str():
    from spamkit.common import speedups
    from spamkit.features.counting import sort_order
    assert speedups.sort_terms(["a", b"b"]) is None and speedups.sort_terms([]) == b""
    with_surrogate = ["b", "\ud800", "a"]                 # no UTF-8 form: sorted in Python
    assert speedups.sort_terms(with_surrogate) is None and sort_order(with_surrogate).tolist() == [2, 0, 1]
    with pytest.raises(TypeError):
        speedups.sort_terms(("a", "b"))


@_hashed
@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(max_size=6), max_size=20, unique=True), st.lists(st.text(max_size=6), max_size=60),
       st.booleans())
def test_compiled_vocabulary_lookup_is_its_definition(vocabulary, tokens, default):
    """The compiled lookup of a fixed vocabulary (``transform``) against its Python definition,
    on a dict and on a defaultdict whose factory would number a new token (it must not)."""
    from spamkit.common import speedups
    index = defaultdict(int, zip(vocabulary, range(len(vocabulary)))) if default else dict(
        zip(vocabulary, range(len(vocabulary))))
    before = dict(index)
    out = [-1]
    speedups.known_columns(index, tokens, out)
    assert out == [-1] + [index[t] for t in tokens if t in before] and dict(index) == before
    with pytest.raises(TypeError):
        speedups.known_columns(index, [["unhashable"]], [])
    v = Vectorizer("tf").fit([vocabulary or ["x"], tokens[:3]])
    docs = [tokens, [], tokens[::-1]]
    X = v.transform(docs)
    with extensions_off():
        expected = v.transform(docs)
    assert (X != expected).nnz == 0 and np.array_equal(X.indices, expected.indices) and X.shape == expected.shape


@_hashed
@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(max_size=4), max_size=20, unique=True), st.lists(st.text(max_size=4), max_size=40))
def test_compiled_column_growth_is_its_definition(known, terms):
    """speedups.grow_columns against its definition: each term's column, a new one getting the
    next free column (a term seen twice in the list keeps the column it got first)."""
    from array import array
    from spamkit.common import speedups
    index = {t: i for i, t in enumerate(known)}
    expected_index = dict(index)
    expected = array("i", [expected_index.setdefault(t, len(expected_index)) for t in terms])
    assert speedups.grow_columns(index, terms) == expected.tobytes() and index == expected_index
    with pytest.raises(TypeError):
        speedups.grow_columns(index, [["unhashable"]])
    with pytest.raises(OverflowError):
        speedups.grow_columns({"big": 2 ** 31}, ["big"])


@_hashed
@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.one_of(st.text(max_size=4), st.integers(-3, 3)), max_size=30), max_size=6))
def test_compiled_numbering_of_columns_is_its_definition(batches):
    """speedups.Numbering.columns against its definition, a dict's setdefault(term, len) over
    batches of terms (repeats within and across batches; str and other hashables, which take the
    path one at a time); the terms in the order of their numbers; unhashable terms refused."""
    from array import array
    from spamkit.common import speedups
    table, expected = speedups.Numbering(), {}
    for terms in batches:
        want = array("i", [expected.setdefault(t, len(expected)) for t in terms])
        assert table.columns(terms) == want.tobytes()
    assert table.terms() == list(expected) and len(table) == len(expected)
    with pytest.raises(TypeError):
        table.columns([["unhashable"]])
    with pytest.raises(TypeError):
        table.columns(("a", "b"))


def test_errors():
    with pytest.raises(ConfigError, match="unknown representation"):
        Vectorizer("bm25")
    with pytest.raises(ConfigError, match="list of tokens, got a str"):
        Vectorizer().fit(["free money"])
    with pytest.raises(ConfigError, match="no term is in at least min_df=10"):
        Vectorizer(min_df=10).fit(DOCS)
    with pytest.raises(NotFittedError):
        Vectorizer().transform(DOCS)


def test_l2_rows():
    X = l2_normalize_rows(sp.csr_matrix([[3.0, 4.0], [0.0, 0.0]]))
    np.testing.assert_allclose(X.toarray(), [[0.6, 0.8], [0.0, 0.0]])


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(st.sampled_from("abcdefgh"), max_size=8), min_size=1, max_size=15),
       st.sampled_from(["binary", "tf", "tfidf"]), st.sampled_from([1, 2, 3]), st.sampled_from([1.0, 0.6]))
def test_random_docs_agree_with_sklearn(docs, representation, min_df, max_df):
    kw = {"min_df": min_df, "max_df": max_df}
    if representation == "tfidf":
        theirs = TfidfVectorizer(analyzer=lambda d: d, **kw)
    else:
        theirs = sk_count(binary=representation == "binary", **kw)
    try:
        expected = theirs.fit_transform(docs)
    except ValueError:                      # empty vocabulary: ours must refuse too
        with pytest.raises(ConfigError):
            Vectorizer(representation, **kw).fit_transform(docs)
        return
    ours = Vectorizer(representation, **kw)
    got = ours.fit_transform(docs)
    assert ours.terms_ == list(theirs.get_feature_names_out())
    np.testing.assert_allclose(got.toarray(), expected.toarray(), rtol=1e-12)
    np.testing.assert_allclose(ours.transform(docs).toarray(), theirs.transform(docs).toarray(), rtol=1e-12)


def test_numbered_chunks_give_the_matrix_and_vocabulary_of_the_token_lists():
    # worker processes send training documents in chunks, each worker numbering terms its own
    # way; in corpus order the chunks must give the token lists' vocabulary and matrix
    from collections import Counter, defaultdict
    from spamkit.features.counting import count_matrix
    from spamkit.features.numbering import IndexedChunk
    docs = [["b", "a", "b", "c"], [], ["c", "c", "d"], ["a"], ["e", "a", "d", "e"], ["f"]]
    chunks_of = [("A", [0, 1]), ("B", [2, 3]), ("A", [4]), ("B", [5])]     # which worker read which
    numbering: dict = {}
    chunks = []
    for worker, rows in chunks_of:
        own = numbering.setdefault(worker, {})
        new, ids, counts, sizes = [], [], [], []
        for r in rows:
            tally = Counter(docs[r])
            for term, n in tally.items():
                if term not in own:
                    own[term] = len(own)
                    new.append(term)
                ids.append(own[term])
                counts.append(n)
            sizes.append(len(tally))
        chunks.append(IndexedChunk(worker, new, np.array(ids, dtype=np.intc), np.array(counts, dtype=np.intc),
                                   np.array(sizes, dtype=np.int64)))
    plain, numbered = defaultdict(), defaultdict()
    plain.default_factory, numbered.default_factory = plain.__len__, numbered.__len__
    X = count_matrix(docs, plain, grow=True)
    Y = count_matrix(chunks, numbered, grow=True)
    assert list(plain) == list(numbered) == ["b", "a", "c", "d", "e", "f"]
    assert (X != Y).nnz == 0 and Y.has_sorted_indices
    assert X.toarray().tolist()[4] == [0, 1, 0, 1, 2, 0]
    # unsorted (the rows as the chunks give them: training's path, _limit sorts them), and in
    # Python alone: the same matrix
    for pure in ("0", "1"):
        with extensions_off(pure == "1"):
            again = defaultdict()
            again.default_factory = again.__len__
            Z = count_matrix(chunks, again, grow=True, sort=False)
        assert list(again) == list(plain) and Z.indices.dtype == np.int32
        assert Z.indices[Z.indptr[4]:Z.indptr[5]].tolist() == [4, 1, 3]       # e, a, d: first appearance
        Z.sort_indices()
        assert (X != Z).nnz == 0 and np.array_equal(X.indptr, Z.indptr)
    # the vocabulary given back as a list instead of filling the dict (fit_transform's way: the
    # columns numbered in the compiled table where it was built): the same terms and matrix
    for pure in ("0", "1"):
        with extensions_off(pure == "1"):
            untouched, terms = defaultdict(), []
            untouched.default_factory = untouched.__len__
            W = count_matrix(chunks, untouched, grow=True, sort=False, terms_out=terms)
        assert (terms, list(untouched)) == ((list(plain), []) if pure == "0" else ([], list(plain)))
        assert W.shape == X.shape and W.indices[W.indptr[4]:W.indptr[5]].tolist() == [4, 1, 3]
        W.sort_indices()
        assert (X != W).nnz == 0
    mixed = defaultdict()
    mixed.default_factory = mixed.__len__
    with pytest.raises(ConfigError):
        count_matrix([docs[0], chunks[0]], mixed, grow=True)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.sampled_from(["a", "b", "c", "d", "é", "\u65e5", "x" * 30, "a b"]), max_size=12)
                | st.tuples(st.sampled_from(["a", "b", "z"]), st.sampled_from(["a", "q"])).map(list), max_size=40),
       st.integers(1, 7))
def test_token_lists_numbered_here_give_their_own_matrix_and_vocabulary(docs, batch):
    """Training in one process numbers its token lists in chunks with the compiled table
    (features.numbered_here), as a worker process does: the vocabulary, in its order, and the
    matrix of the token lists themselves, whatever the chunk size (and tuples are token lists too)."""
    from collections import defaultdict
    from spamkit.features.counting import count_matrix, numbered_here
    plain = defaultdict()
    plain.default_factory = plain.__len__
    X = count_matrix(docs, plain, grow=True)
    if not docs:
        assert list(numbered_here(docs, batch)) == []
        return
    untouched, terms = defaultdict(), []
    untouched.default_factory = untouched.__len__
    given_docs = [tuple(d) if i % 3 == 2 else d for i, d in enumerate(docs)]
    Y = count_matrix(numbered_here(given_docs, batch), untouched, grow=True, sort=False, terms_out=terms)
    assert (terms or list(untouched)) == list(plain)
    Y.sort_indices()
    assert Y.shape == X.shape and (X != Y).nnz == 0
    # a str among token lists: refused as numbered_here meets it, or (without the compiled table,
    # which hands the documents on as they are) as count_matrix does
    fresh = defaultdict()
    fresh.default_factory = fresh.__len__
    with pytest.raises(ConfigError, match="tokenize it first"):
        count_matrix(numbered_here([["a"], "a str"], batch), fresh, grow=True)
    from spamkit.features.numbering import IndexedChunk
    worker = IndexedChunk("worker", ["a"], np.array([0], dtype=np.intc), np.array([1], dtype=np.intc),
                          np.array([1], dtype=np.int64))
    mixed, terms = defaultdict(), []
    mixed.default_factory = mixed.__len__
    with pytest.raises(ConfigError, match="cannot be mixed"):
        count_matrix([*numbered_here([["a"]], batch), worker], mixed, grow=True, terms_out=terms)


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 12), st.integers(1, 15), st.floats(0.0, 1.0), st.integers(0, 2 ** 31 - 1))
def test_columns_per_row_counts_the_marked_non_zeros_of_each_row(n_rows, n_cols, density, seed):
    # the definition: a row index and a 0/1 weight per non-zero, summed by row
    from spamkit.features.matrices import columns_per_row

    rng = np.random.default_rng(seed)
    X = sp.random(n_rows, n_cols, density=density, format="csr", random_state=rng)  # empty rows included
    marked = rng.integers(0, 2, n_cols)
    rows = np.repeat(np.arange(n_rows), np.diff(X.indptr))
    expected = np.bincount(rows, weights=marked[X.indices].astype(np.float64), minlength=n_rows)
    for m in (marked, marked.astype(bool), marked.astype(np.float64)):
        got = columns_per_row(X, m)
        assert got.dtype == np.float64
        np.testing.assert_array_equal(got, expected)


def _same_matrix(a, b) -> bool:
    return (a.shape == b.shape and a.indices.dtype == b.indices.dtype and a.indptr.dtype == b.indptr.dtype
            and a.data.dtype == b.data.dtype and np.array_equal(a.indptr, b.indptr)
            and np.array_equal(a.indices, b.indices) and np.array_equal(a.data, b.data)
            and bool(a.has_canonical_format) == bool(b.has_canonical_format))


@_hashed
@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["free", "money", "é", "\U0001F600", "", "url:x", "unknown", "zz"]) |
                st.text(max_size=3), max_size=60))
def test_one_message_row_is_the_general_loops_row(tokens):
    # a message scored alone (spamd, pipe mode) takes features.one_row: the same matrix as
    # count_matrix makes of the one token list, known tokens or none, repeated or not
    from spamkit.features.counting import count_matrix, one_row
    index = {t: j for j, t in enumerate(["free", "money", "é", "\U0001F600", "", "url:x", "a", "b", "ab"])}
    fast = one_row(tokens, index)
    assert fast is not None
    assert _same_matrix(fast, count_matrix([tokens], index, grow=False))
    fast.data[:] = 1.0                                         # writable, as represent() needs


def test_one_message_row_leaves_what_it_cannot_do_to_the_general_loop():
    from spamkit.common import speedups as module
    from spamkit.features.counting import count_matrix, one_row

    class Word(str):
        pass
    index = {"a": 0, "b": 1}
    assert one_row(["a", Word("b")], index) is None             # a token that is not exactly a str
    assert one_row(["a"], {}) is None
    assert module.known_counts({"a": 2 ** 31}, ["a"]) is None    # not a column of a 32-bit index
    assert module.known_counts({"a": "x"}, ["a"]) is None
    with pytest.raises(TypeError):
        module.known_counts({"a": 0}, "a")
    v = Vectorizer("tf").fit([["a", "b", "b"], ["c"]])
    for docs in ([["b", "b", "zz", "a"]], [[Word("b"), "a"]], [["b"], ["a"]], [[]]):
        assert _same_matrix(v.counts(docs), count_matrix(docs, v.vocabulary_, grow=False))


# ----------------------------------------------------------------- the frozen vocabulary table

TOKEN_PIECES = st.sampled_from(["a", "b", "subject:", "url:", "é", "\u3042", "\U0001f600", "1", " ", "x" * 40])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(TOKEN_PIECES, min_size=1, max_size=4).map("".join), max_size=60),
       st.lists(st.lists(TOKEN_PIECES, min_size=1, max_size=4).map("".join), max_size=200))
def test_frozen_table_gives_the_dicts_columns(terms, tokens):
    """speedups.frozen_counts through a table gives what known_counts gives through the dict:
    equal tokens that are other str objects, unknown tokens, repeats, every string width."""
    module = speedups()
    if module is None:
        pytest.skip("spamkit.common.speedups was not built")
    index = {t: j for j, t in enumerate(dict.fromkeys(terms))}
    table = module.frozen_index(index)
    tokens = [t.encode().decode() for t in tokens + terms[:5]]          # other objects, equal values
    cols, counts = module.known_counts(index, tokens)
    got = module.frozen_counts(table, tokens)
    assert got[0] == bytes(cols)
    assert np.frombuffer(got[1], dtype=np.int32).tolist() == np.frombuffer(counts, dtype=np.float64).tolist()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 2 ** 31 - 1), min_size=1, max_size=40, unique=True),
       st.lists(st.integers(0, 39), max_size=60), st.integers(0, 20))
def test_a_rows_columns_are_sorted_and_counted_whatever_their_size(columns, picks, repeats):
    """known_counts and frozen_counts sort a row's columns (insertion sort under 32, a radix
    sort by bytes above, passes skipped where every column shares a byte): the distinct columns
    ascending and their counts, as numpy.unique gives them, for columns anywhere in [0, 2^31)."""
    module = speedups()
    if module is None:
        pytest.skip("spamkit.common.speedups was not built")
    index = {f"t{j}": c for j, c in enumerate(columns)}
    tokens = [f"t{p}" for p in picks if p < len(columns)] + [f"t{j}" for j in range(len(columns))] * repeats
    want, counts = np.unique(np.array([index[t] for t in tokens], dtype=np.int64), return_counts=True)
    cols, dict_counts = module.known_counts(index, tokens)
    assert np.frombuffer(cols, dtype=np.int32).tolist() == want.tolist()
    assert np.frombuffer(dict_counts, dtype=np.float64).tolist() == counts.tolist()
    got = module.frozen_counts(module.frozen_index(index), tokens)
    assert got[0] == bytes(cols)
    assert np.frombuffer(got[1], dtype=np.int32).tolist() == counts.tolist()


def test_frozen_table_refuses_what_the_dict_path_handles_otherwise():
    module = speedups()
    if module is None:
        pytest.skip("spamkit.common.speedups was not built")
    assert module.frozen_index({b"bytes": 0}) is None
    assert module.frozen_index({"a": 1.5}) is None
    assert module.frozen_index({"a": -1}) is None and module.frozen_index({"a": 2 ** 31}) is None
    table = module.frozen_index({"a": 0, "b": 1})
    assert module.frozen_counts(table, ["a", 3]) is None                  # a token that is not a str


def test_count_matrix_and_one_row_are_the_same_with_the_frozen_table(monkeypatch):
    """Vectorizer.transform gives the same matrix (values, index arrays, their types) whether the
    vocabulary's lookups go through the dict or the compiled table, batch and one message."""
    from spamkit.features import counting as features
    from spamkit.corpus import Corpus
    from spamkit.parse.message import parse_message
    from spamkit.text import Analyzer
    from conftest import SAMPLE
    if speedups() is None:
        pytest.skip("spamkit.common.speedups was not built")
    analyzer = Analyzer.mail()
    with Corpus(SAMPLE) as corpus:
        docs = [analyzer(parse_message(m.raw, m.kind)) for m in corpus]
    v = Vectorizer("binary").fit(docs[: len(docs) // 2])
    docs = docs + [tuple(docs[0]), [], ["never-seen"]]                   # a tuple takes the dict path

    def matrices():
        features._FROZEN.clear()
        batch = v.counts(docs)
        rows = [v.counts([d]) for d in docs if type(d) is list]
        return batch, rows

    monkeypatch.setattr(features, "FROZEN_AFTER", 10 ** 9)             # never: the dict
    by_dict = matrices()
    monkeypatch.setattr(features, "FROZEN_AFTER", 0)                   # at once: the table
    by_table = matrices()
    assert any(entry[3] for entry in features._FROZEN.values())
    for a, b in [(by_dict[0], by_table[0])] + list(zip(by_dict[1], by_table[1])):
        assert a.shape == b.shape
        for name in ("data", "indices", "indptr"):
            x, y = getattr(a, name), getattr(b, name)
            assert x.dtype == y.dtype and np.array_equal(x, y), name
