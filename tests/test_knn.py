"""kNN: hand-worked cases, scikit-learn as oracle, blocked == unblocked, condensing, files, CLI."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.neighbors import KNeighborsClassifier, KNeighborsRegressor
from sklearn.utils.estimator_checks import parametrize_with_checks

from spamkit.filterfile import estimators
from spamkit.cli import cli
from spamkit.corpus import Corpus
from spamkit.common.errors import ConfigError, NotFittedError
from spamkit.decide.selection import stratified_folds, tune_knn
from spamkit.models import KNNClassifier, KNNRegressor
from spamkit.models.neighbours import parse_memory
from spamkit import SpamFilter, build_filter

from conftest import SAMPLE

# ------------------------------------------------------------------ hand-worked


def test_cosine_by_hand():
    # query (1, 0): cos with (1, 1) = 1/sqrt(2); with (0, 1) = 0; with (2, 0) = 1
    knn = KNNClassifier(k=3).fit([[1, 1], [0, 1], [2, 0]], ["a", "b", "a"])
    idx, sim = knn.kneighbors([[1, 0]])
    assert idx.tolist() == [[2, 0, 1]]
    assert sim[0] == pytest.approx([1.0, 1 / math.sqrt(2), 0.0])


def test_distance_weighted_vote_from_the_notes():
    # "Nearest Neighbors and Naive Bayes": weights 0.9, 0.8 for +1 and 0.4, 0.35, 0.3 for -1 give
    # sign(0.9 + 0.8 - 0.4 - 0.35 - 0.3) = sign(0.65) = +1, while the plain vote says -1 (3 to 2).
    # 1-D points at distance 1/w from the query, inverse weights 1/d with epsilon = 0.
    w = [0.9, 0.8, 0.4, 0.35, 0.3]
    X = [[1 / wi] for wi in w]
    y = ["+", "+", "-", "-", "-"]
    inverse = KNNClassifier(k=5, metric="euclidean", weights="inverse", epsilon=0.0).fit(X, y)
    assert inverse.predict([[0.0]]).tolist() == ["+"]
    assert inverse.classes_.tolist() == ["+", "-"]
    assert inverse.predict_proba([[0.0]])[0] == pytest.approx([1.7 / 2.75, 1.05 / 2.75])
    uniform = KNNClassifier(k=5, metric="euclidean").fit(X, y)
    assert uniform.predict([[0.0]]).tolist() == ["-"]
    assert uniform.predict_proba([[0.0]])[0] == pytest.approx([2 / 5, 3 / 5])


def test_softmax_weights_by_hand():
    # similarities 1 and 0 with tau = 0.5: weights e^2 and e^0
    knn = KNNClassifier(k=2, weights="softmax", tau=0.5).fit([[1, 0], [0, 1]], ["a", "b"])
    p = knn.predict_proba([[1, 0]])[0]
    assert p == pytest.approx([math.e ** 2 / (math.e ** 2 + 1), 1 / (math.e ** 2 + 1)])


def test_manhattan_and_jaccard_by_hand():
    knn = KNNClassifier(k=2, metric="manhattan").fit([[0, 0], [3, 4]], [0, 1])
    idx, dist = knn.kneighbors([[1, 1]])
    assert idx.tolist() == [[0, 1]] and dist[0].tolist() == [2.0, 5.0]
    # Jaccard on presence: {a, b} vs {b, c} = 1/3; vs {a, b, c} = 2/3
    jac = KNNClassifier(k=2, metric="jaccard").fit([[0, 5, 1], [1, 2, 1]], [0, 1])
    idx, sim = jac.kneighbors([[3, 1, 0]])
    assert idx.tolist() == [[1, 0]] and sim[0] == pytest.approx([2 / 3, 1 / 3])


def test_ties_are_deterministic():
    # Two training rows identical to the query: the lower index comes first.
    X = [[1, 0], [0, 1], [1, 0], [1, 0]]
    knn = KNNClassifier(k=2).fit(X, ["b", "a", "a", "b"])
    idx, _ = knn.kneighbors([[2, 0]])
    assert idx.tolist() == [[0, 2]]
    # Vote 1-1 between a and b: the class first in classes_ wins, as argmax(predict_proba) says.
    assert knn.predict_proba([[2, 0]]).tolist() == [[0.5, 0.5]]
    assert knn.predict([[2, 0]]).tolist() == ["a"]


def test_regressor_weighted_mean():
    r = KNNRegressor(k=2, metric="euclidean", weights="inverse", epsilon=0.0).fit([[0.0], [1.0], [4.0]], [0, 10, 40])
    # query 0.25: neighbours at distance 0.25 (t=0) and 0.75 (t=10): weights 4 and 4/3
    assert r.predict([[0.25]])[0] == pytest.approx((4 * 0 + 4 / 3 * 10) / (4 + 4 / 3))


# ------------------------------------------------------------------ oracles


def _untied_sparse(seed, n, m, d=300):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.05, format="csr", random_state=rng)
    X.data = rng.random(X.nnz) + 0.1                 # continuous values: no exact ties
    Q = sp.random(m, d, density=0.05, format="csr", random_state=rng)
    Q.data = rng.random(Q.nnz) + 0.1
    return X, rng.integers(0, 2, n), Q


@pytest.mark.parametrize("ours, theirs", [("uniform", "uniform"), ("inverse", "distance")])
def test_agrees_with_sklearn_cosine(ours, theirs):
    X, y, Q = _untied_sparse(0, 400, 150)
    a = KNNClassifier(k=7, weights=ours, epsilon=0.0).fit(X, y)
    b = KNeighborsClassifier(7, metric="cosine", algorithm="brute", weights=theirs).fit(X, y)
    idx, sim = a.kneighbors(Q)
    dist, idx_b = b.kneighbors(Q)
    np.testing.assert_array_equal(idx, idx_b)
    np.testing.assert_allclose(1 - sim, dist, atol=1e-12)
    np.testing.assert_allclose(a.predict_proba(Q), b.predict_proba(Q), atol=1e-12)


@pytest.mark.parametrize("metric", ["euclidean", "manhattan"])
def test_agrees_with_sklearn_lp(metric):
    X, y, Q = _untied_sparse(1, 300, 80)
    a = KNNClassifier(k=5, metric=metric).fit(X, y)
    b = KNeighborsClassifier(5, metric=metric, algorithm="brute").fit(X, y)
    idx, dist = a.kneighbors(Q)
    dist_b, idx_b = b.kneighbors(Q)
    np.testing.assert_array_equal(idx, idx_b)
    np.testing.assert_allclose(dist, dist_b, atol=1e-9)


def test_regressor_agrees_with_sklearn():
    X, _, Q = _untied_sparse(2, 300, 60)
    t = np.random.default_rng(0).normal(size=300)
    for w, skw in (("uniform", "uniform"), ("inverse", "distance")):
        a = KNNRegressor(k=6, weights=w, epsilon=0.0).fit(X, t)
        b = KNeighborsRegressor(6, metric="cosine", algorithm="brute", weights=skw).fit(X, t)
        np.testing.assert_allclose(a.predict(Q), b.predict(Q), atol=1e-12)


# ------------------------------------------------------------------ blocked search


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 40), st.integers(0, 10_000), st.sampled_from(["cosine", "euclidean", "jaccard"]),
       st.integers(1, 3))
def test_blocked_equals_unblocked(k_raw, seed, metric, threads):
    rng = np.random.default_rng(seed)
    n = 40
    X = sp.random(n, 12, density=0.3, format="csr", random_state=rng)
    X.data = np.ceil(X.data * 3)                     # small integers: many exact ties
    Q = sp.random(17, 12, density=0.3, format="csr", random_state=rng)
    Q.data = np.ceil(Q.data * 3)
    y = rng.integers(0, 3, n)
    k = min(k_raw, n)                                # includes k == n
    whole = KNNClassifier(k=k, metric=metric, n_jobs=1).fit(X, y)
    idx0, s0 = whole.kneighbors(Q)
    tiny = KNNClassifier(k=k, metric=metric, n_jobs=threads, memory_limit=2 ** 16).fit(X, y)
    # force blocks smaller than k and than the training set
    tiny._block_sizes = lambda nq, nt, kk: (3, max(kk, 5))
    idx1, s1 = tiny.kneighbors(Q)
    np.testing.assert_array_equal(idx0, idx1)
    np.testing.assert_array_equal(s0, s1)
    # and the order is the documented one: nearer first, then lower index
    for row_i, row_s in zip(idx0, s0):
        keyed = list(zip([-v if metric != "euclidean" else v for v in row_s], row_i))
        assert keyed == sorted(keyed)
    np.testing.assert_allclose(whole.predict_proba(Q), tiny.predict_proba(Q))


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 25), st.integers(0, 10_000), st.integers(1, 2))
def test_cosine_pruning_keeps_the_exact_top_k(k, seed, threads):
    # Many exact duplicates (ties) and frequent terms (a dense part): the candidate bound
    # must keep every member of the top k, so pruning changes nothing against rescoring
    # every pair with the same arithmetic.
    rng = np.random.default_rng(seed)
    base = sp.random(150, 60, density=0.15, format="csr", random_state=rng)
    base.data = np.ceil(base.data * 3)
    X = sp.vstack([base, base[rng.integers(0, 150, 250)]]).tolil()
    X[:, :3] = rng.integers(1, 3, (400, 3))           # in every row: dense columns
    X = X.tocsr()
    Q = sp.vstack([X[rng.integers(0, 400, 20)], sp.random(20, 60, density=0.2, random_state=rng)]).tocsr()
    y = rng.integers(0, 2, 400)
    knn = KNNClassifier(k=k, n_jobs=threads).fit(X, y)
    index = knn.index_
    assert len(index.dense_cols) >= 3 and 400 // index.GROUP >= k      # the group bound is used
    idx, sim = knn.kneighbors(Q)
    index._candidates = lambda A, kk: np.nonzero(np.ones(A.shape, dtype=bool))
    idx_all, sim_all = knn.kneighbors(Q)
    np.testing.assert_array_equal(idx, idx_all)
    np.testing.assert_array_equal(sim, sim_all)
    # and the similarities are the cosines
    Xn = X.toarray() / np.linalg.norm(X.toarray(), axis=1, keepdims=True)
    Qd = Q.toarray()
    Qn = Qd / np.maximum(np.linalg.norm(Qd, axis=1, keepdims=True), 1e-300)
    np.testing.assert_allclose(sim, np.take_along_axis(Qn @ Xn.T, idx, axis=1), atol=1e-12)


def test_memory_limit_bounds_blocks():
    knn = KNNClassifier(k=5, memory_limit="1M", n_jobs=1).fit(sp.random(5000, 50, density=0.1, format="csr"),
                                                              np.arange(5000) % 2)
    qb, tb = knn._block_sizes(2000, 5000, 5)
    assert qb * tb * 24 <= 2 ** 20
    assert parse_memory("1.5G") == int(1.5 * 2 ** 30)
    with pytest.raises(ConfigError, match="not a size"):
        parse_memory("lots")


# ------------------------------------------------------------------ condensing


@pytest.mark.parametrize("metric,p", [("minkowski", 3.0), ("chebyshev", 2.0), ("hamming", 2.0), ("manhattan", 2.0)])
def test_condensing_with_the_other_distances(metric, p):
    rng = np.random.default_rng(6)
    X = (rng.random((80, 12)) < np.where(np.arange(80)[:, None] < 40, 0.2, 0.7)) * rng.integers(1, 4, (80, 12))
    y = np.repeat([0, 1], 40)
    full = KNNClassifier(k=1, metric=metric, p=p).fit(X, y)
    condensed = KNNClassifier(k=1, metric=metric, p=p).fit(X, y)
    info = condensed.condense()
    assert info["n_after"] < info["n_before"]
    np.testing.assert_array_equal(condensed.predict(X), full.predict(X))


def test_condensed_set_classifies_training_as_full_set():
    rng = np.random.default_rng(5)
    X = np.vstack([rng.normal(0, 1, (60, 2)), rng.normal(3, 1, (60, 2))]) + 10
    y = np.repeat([0, 1], 60)
    full = KNNClassifier(k=1, metric="euclidean").fit(X, y)
    condensed = KNNClassifier(k=1, metric="euclidean").fit(X, y)
    info = condensed.condense()
    assert info["n_after"] < info["n_before"] == 120
    # 1-NN on the full set classifies each training row as itself; the condensed set agrees
    np.testing.assert_array_equal(condensed.predict(X), full.predict(X))
    # Wilson editing first: the rows the full 3-NN (leave-one-out) gets wrong are dropped; the
    # condensed set then classifies every retained row as the full 3-NN does (correctly).
    edited = KNNClassifier(k=3, metric="euclidean").fit(X, y)
    info = edited.condense(edit=True)
    assert info["n_edited"] > 0 and info["n_after"] < 120 - info["n_edited"]
    kept = edited.retained_rows_
    full3 = KNNClassifier(k=4, metric="euclidean").fit(X, y)
    idx, _ = full3.kneighbors(X[kept])
    loo_votes = np.array([np.bincount(y[row[row != i]][:3], minlength=2) for row, i in zip(idx, kept)])
    np.testing.assert_array_equal(loo_votes.argmax(axis=1), y[kept])       # kept rows: full kNN right
    edited.set_params(k=1)
    np.testing.assert_array_equal(edited.predict(X[kept]), y[kept])


# ------------------------------------------------------------------ contracts, tuning, files


def test_contract_and_errors():
    with pytest.raises(NotFittedError):
        KNNClassifier().predict([[1, 0]])
    two = KNNClassifier(k=3).fit([[1, 0], [0, 1]], [0, 1])
    with pytest.raises(ConfigError, match="larger than the 2 stored"):
        two.kneighbors([[1, 0]])
    assert two.predict_proba([[1, 0]]).tolist() == [[0.5, 0.5]]      # fewer rows than k: all vote
    with pytest.raises(ConfigError, match="unknown metric"):
        KNNClassifier(metric="mahalanobis").fit([[1, 0]], [0])     # (hamming is one of the metrics now)
    with pytest.raises(ConfigError, match="p .the Minkowski exponent. must be"):
        KNNClassifier(metric="minkowski", p=0.5).fit([[1, 0]], [0])


# on the BaseEstimator twins (spamkit.filterfile.estimators: the same code, what scikit-learn users import)
@parametrize_with_checks([estimators.KNNClassifier(k=3), estimators.KNNRegressor(k=3)])
def test_sklearn_estimator_checks(estimator, check):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(estimator)


def test_tune_picks_lowest_error_and_folds_are_stratified():
    folds = stratified_folds(np.repeat([0, 1], [30, 10]), 5, seed=1)
    assert [np.sum((folds == f) & (np.arange(40) >= 30)) for f in range(5)] == [2] * 5
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(0, 1, (50, 3)), rng.normal(2.5, 1, (50, 3))]) + 5
    y = np.repeat([0, 1], 50)
    result = tune_knn(X, y, ks=[1, 5, 15], weights=["uniform", "inverse"], folds=5, metric="euclidean")
    best = min(result.errors[w][i] for w in result.weights for i in range(3))
    assert result.best_error == best
    # each error is a real cross-validation error: recompute one by hand
    fold_of = stratified_folds(y, 5, 0)
    wrong = 0
    for f in range(5):
        m = KNNClassifier(k=5, metric="euclidean").fit(X[fold_of != f], y[fold_of != f])
        wrong += np.sum(m.predict(X[fold_of == f]) != y[fold_of == f])
    per_fold = [np.mean(KNNClassifier(k=5, metric="euclidean").fit(X[fold_of != f], y[fold_of != f])
                        .predict(X[fold_of == f]) != y[fold_of == f]) for f in range(5)]
    assert result.errors["uniform"][1] == pytest.approx(np.mean(per_fold))


def test_knn_filter_round_trip(tmp_path):
    files = sorted(SAMPLE.rglob("*.eml"))
    f = build_filter(model="knn", knn={"k": 3, "weights": "inverse"})
    from spamkit.corpus import Corpus
    with Corpus(SAMPLE) as corpus:
        f.fit(corpus)
    f.save(tmp_path / "k.spamkit")
    g = SpamFilter.load(tmp_path / "k.spamkit")
    raws = [p.read_bytes() for p in files[:30]]
    np.testing.assert_array_equal(f.predict_proba(raws), g.predict_proba(raws))
    ex = g.explain(raws[0], 3)["neighbours"]
    assert ex[0]["id"] == "ham/0001.eml" and ex[0]["similarity"] == pytest.approx(1.0)


def test_cli_knn(tmp_path):
    runner = CliRunner()
    model = tmp_path / "k.spamkit"
    result = runner.invoke(cli, ["train", str(SAMPLE), "--model", "knn", "--k", "5", "--weights", "inverse",
                                 "--test-fraction", "0.3", "-o", str(model)])
    assert result.exit_code == 0, result.output
    assert "held-out evaluation: 72 messages" in result.output
    msg = sorted((SAMPLE / "spam").iterdir())[0]
    result = runner.invoke(cli, ["classify", str(model), str(msg), "--explain", "2"])
    assert result.exit_code == 0 and result.output.count("  neighbour ") == 2
    result = runner.invoke(cli, ["tune", str(SAMPLE), "--k", "1,3", "--folds", "3"])
    assert result.exit_code == 0 and "best: k=" in result.output
    result = runner.invoke(cli, ["train", str(SAMPLE), "--model", "knn", "--k", "zero", "-o", str(model)])
    assert result.exit_code == 2 and "positive integer or 'auto'" in result.output


def test_asking_for_knn_gives_the_best_measured_knn(tmp_path):
    # scripts/knn_defaults.py: words, TF-IDF, k = 15, softmax has the best worst-case AUC on the mail corpora
    from spamkit.filterfile.config import KNN_BEST, filter_from_config, parse_config
    from spamkit.filterfile.manifest import read_manifest
    model = tmp_path / "knn.spamkit"
    result = CliRunner().invoke(cli, ["train", str(SAMPLE), "--model", "knn", "-o", str(model)])
    assert result.exit_code == 0, result.output
    manifest = read_manifest(model)
    params = manifest["model"]["params"]
    assert (params["k"], params["weights"], params["tau"]) == (15, "softmax", 0.1) == tuple(KNN_BEST.values())
    assert manifest["vectorizer"]["representation"] == "tfidf"
    assert manifest["analyzer"]["headers"] != ["*"]                   # words, not the mail tokens
    f = filter_from_config(parse_config("model=knn"))
    assert (f.model.k, f.model.weights, f.vectorizer.representation) == (15, "softmax", "tfidf")
    assert f.analyzer.get_config()["headers"] == manifest["analyzer"]["headers"]
    # what the user names still wins
    g = filter_from_config(parse_config("model=knn,k=3,tokens=mail,representation=tf"))
    assert (g.model.k, g.vectorizer.representation, g.analyzer.get_config()["headers"]) == (3, "tf", ["*"])


# ------------------------------------------------------------------ the notes' other distances

def test_minkowski_chebyshev_and_hamming_by_hand():
    # two stored points x1 = (0, 0, 0), x2 = (2, 1, 1) and the query q = (3, 1, 0), by hand:
    #   L1:    |q - x2| = 1 + 0 + 1 = 2,          |q - x1| = 3 + 1 + 0 = 4
    #   L3:    (1 + 0 + 1)^(1/3) = 1.2599,        (27 + 1 + 0)^(1/3) = 3.0366
    #   L-inf: max(1, 0, 1) = 1,                  max(3, 1, 0) = 3
    X = [[0.0, 0.0, 0.0], [2.0, 1.0, 1.0]]
    q = [[3.0, 1.0, 0.0]]
    for metric, p, expected in (("minkowski", 3.0, [1.2599, 3.0366]), ("chebyshev", 2.0, [1.0, 3.0]),
                                ("minkowski", float("inf"), [1.0, 3.0]), ("minkowski", 1.0, [2.0, 4.0])):
        knn = KNNClassifier(k=2, metric=metric, p=p).fit(X, ["a", "b"])
        idx, dist = knn.kneighbors(q)
        assert idx.tolist() == [[1, 0]] and dist.round(4).tolist() == [expected], (metric, p)
    # Hamming on presence (the notes' count of positions that differ): {a,b} vs {b,c} differ in a and c
    knn = KNNClassifier(k=1, metric="hamming").fit([[1, 1, 0, 0], [0, 0, 0, 1]], ["x", "y"])
    idx, dist = knn.kneighbors([[0, 3, 1, 0]])
    assert idx.tolist() == [[0]] and dist.tolist() == [[2.0]]


@pytest.mark.parametrize("metric,p", [("minkowski", 3.0), ("minkowski", 1.5), ("chebyshev", 2.0), ("hamming", 2.0)])
def test_the_other_distances_match_scikit_learn(metric, p):
    rng = np.random.default_rng(3)
    X = sp.random(120, 30, density=0.2, random_state=4, format="csr") * 5
    Q = sp.random(40, 30, density=0.2, random_state=5, format="csr") * 5
    y = rng.choice(["a", "b", "c"], 120)
    ours = KNNClassifier(k=4, metric=metric, p=p).fit(X, y)
    if metric == "hamming":                         # scikit-learn's hamming is the share of positions
        theirs = KNeighborsClassifier(4, metric="hamming", algorithm="brute").fit((X != 0).toarray(), y)
        d_ours = ours.kneighbors(Q)[1] / 30
        d_theirs = theirs.kneighbors((Q != 0).toarray())[0]
    else:
        theirs = KNeighborsClassifier(4, metric=metric, p=p, algorithm="brute").fit(X.toarray(), y)
        d_ours, d_theirs = ours.kneighbors(Q)[1], theirs.kneighbors(Q.toarray())[0]
    np.testing.assert_allclose(d_ours, d_theirs, rtol=1e-12, atol=1e-12)


def test_minkowski_p_travels_through_the_filter_file(tmp_path):
    from spamkit.filterfile.manifest import read_manifest
    model = tmp_path / "m3.spamkit"
    result = CliRunner().invoke(cli, ["train", str(SAMPLE), "--model", "knn", "--metric", "minkowski", "--p", "3",
                                      "-o", str(model)])
    assert result.exit_code == 0, result.output
    assert read_manifest(model)["model"]["params"]["p"] == 3.0
    assert CliRunner().invoke(cli, ["evaluate", str(model), str(SAMPLE)]).exit_code == 0


def test_the_weighted_distance_and_standardising_by_hand():
    # stored a = (1, 0), b = (0, 2); query q = (0, 0). Unweighted Euclidean: a at 1, b at 2.
    # Weights w = (9, 1): a at sqrt(9 * 1) = 3, b at sqrt(1 * 4) = 2, so b is now nearest;
    # Manhattan 9 and 2; Chebyshev max(9 * 1) = 9 and 2.
    X, y, q = [[1.0, 0.0], [0.0, 2.0]], ["a", "b"], [[0.0, 0.0]]
    for metric, expected in (("euclidean", [2.0, 3.0]), ("manhattan", [2.0, 9.0]), ("chebyshev", [2.0, 9.0])):
        idx, dist = KNNClassifier(k=2, metric=metric, feature_weights=[9.0, 1.0]).fit(X, y).kneighbors(q)
        assert idx.tolist() == [[1, 0]] and dist.round(12).tolist() == [expected], metric
    # weighted Hamming: {f0, f1} against {f1, f2} differ in f0 and f2: 1 + 3 with w = (1, 5, 3)
    knn = KNNClassifier(k=1, metric="hamming", feature_weights=[1.0, 5.0, 3.0]).fit([[1, 1, 0]], ["x"])
    assert knn.kneighbors([[0, 1, 1]])[1].round(12).tolist() == [[4.0]]
    # standardising: columns (0, 2, 0, 2) and (0, 0, 10, 10) have standard deviations 1 and 5, so
    # q = (0, 4) becomes (0, 0.8): (0, 0) at 0.8, (0, 10) -> (0, 2) at 1.2 (unscaled, (2, 0) was second)
    X = [[0.0, 0.0], [2.0, 0.0], [0.0, 10.0], [2.0, 10.0]]
    plain = KNNClassifier(k=2, metric="euclidean").fit(X, list("abcd")).kneighbors([[0.0, 4.0]])
    scaled = KNNClassifier(k=2, metric="euclidean", standardize=True).fit(X, list("abcd")).kneighbors([[0.0, 4.0]])
    assert plain[0].tolist() == [[0, 1]] and scaled[0].tolist() == [[0, 2]]
    assert scaled[1].round(12).tolist() == [[0.8, 1.2]]


@pytest.mark.parametrize("p", [1.0, 2.0, 3.0])
def test_weighted_minkowski_matches_scikit_learn(p):
    rng = np.random.default_rng(8)
    X, Q = rng.normal(size=(60, 5)), rng.normal(size=(20, 5))
    w = rng.random(5) * 3
    y = rng.choice(["a", "b"], 60)
    ours = KNNClassifier(k=5, metric="minkowski", p=p, feature_weights=w).fit(X, y)
    theirs = KNeighborsClassifier(5, metric="minkowski", p=p, metric_params={"w": w}, algorithm="brute").fit(X, y)
    np.testing.assert_allclose(ours.kneighbors(Q)[1], theirs.kneighbors(Q)[0], rtol=1e-10, atol=1e-12)


def test_standardised_knn_survives_its_filter_file(tmp_path):
    f = build_filter(model="knn", knn={"metric": "euclidean", "standardize": True})
    with Corpus(SAMPLE) as corpus:
        msgs = list(corpus)
    f.fit(msgs[::2])
    assert f.model.scale_ is not None
    path = tmp_path / "std.spamkit"
    f.save(path)
    g = SpamFilter.load(path)
    np.testing.assert_array_equal(g.model.scale_, f.model.scale_)
    np.testing.assert_allclose(g.p_spam(msgs[1::2]), f.p_spam(msgs[1::2]), rtol=1e-12)
    with pytest.raises(ConfigError, match="jaccard"):
        KNNClassifier(metric="jaccard", standardize=True).fit([[1, 0]], [0])
