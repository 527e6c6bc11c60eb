"""The stacked Fisher + multinomial NB filter: components against independent models, combiner against scikit-learn."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.linear_model import LogisticRegression
from sklearn.naive_bayes import MultinomialNB as SkMultinomialNB

from spamkit.common.errors import ConfigError
from spamkit.models import FisherNBStack, RobinsonFisher
from spamkit.models.stack import fold_of_rows


def _data(seed=0, n=120, d=40):
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.4, "spam", "ham")
    rates = np.where(y[:, None] == "spam", rng.random(d) * 0.5, rng.random(d) * 0.5)
    X = (rng.random((n, d)) < rates).astype(float)
    X[:, :5] += (y[:, None] == "spam") * (rng.random((n, 5)) < 0.5)      # a few informative tokens
    return sp.csr_matrix(np.minimum(X, 1)), y


def test_components_equal_the_separate_models():
    X, y = _data()
    stack = FisherNBStack().fit(X, y)
    comps = stack.component_log_odds(X)
    fisher = RobinsonFisher().fit(X, y)
    jll = fisher.joint_log_likelihood(X)
    np.testing.assert_allclose(comps[:, 0], jll[:, 1] - jll[:, 0], rtol=1e-10, atol=1e-10)
    sk = SkMultinomialNB(alpha=1.0).fit(X, y)                    # the oracle of the NB component
    sk_jll = sk.predict_joint_log_proba(X)
    np.testing.assert_allclose(comps[:, 1], sk_jll[:, 1] - sk_jll[:, 0], rtol=1e-9, atol=1e-9)


def test_combiner_is_a_logistic_regression_on_out_of_fold_scores():
    X, y = _data(1)
    stack = FisherNBStack(folds=4).fit(X, y)
    codes = (y == "spam").astype(int)
    folds = fold_of_rows(codes, 4)
    scores = np.zeros((len(y), 2))
    for k in range(4):                                           # independent: refit each fold from scratch
        held = folds == k
        f = RobinsonFisher().fit(X[~held], y[~held])
        jf = f.joint_log_likelihood(X[held])
        nb = SkMultinomialNB(alpha=1.0).fit(X[~held], y[~held])
        jn = nb.predict_joint_log_proba(X[held])
        scores[held] = np.column_stack([jf[:, 1] - jf[:, 0], jn[:, 1] - jn[:, 0]])
    lr = LogisticRegression(C=1.0, tol=1e-12, max_iter=10000).fit(scores, codes == 1)   # solved exactly
    np.testing.assert_allclose(stack.coef_, lr.coef_[0], rtol=1e-6, atol=1e-7)
    assert stack.intercept_ == pytest.approx(lr.intercept_[0], rel=1e-6, abs=1e-7)
    z = stack.component_log_odds(X) @ stack.coef_ + stack.intercept_
    np.testing.assert_allclose(stack.predict_proba(X)[:, 1], 1 / (1 + np.exp(-z)))


def test_partial_fit_adds_counts_and_keeps_the_combiner():
    X, y = _data(2)
    stack = FisherNBStack().fit(X[:80], y[:80])
    coef = stack.coef_.copy()
    stack.partial_fit(X[80:], y[80:])
    whole = FisherNBStack().fit(X, y)
    np.testing.assert_array_equal(stack.feature_count_, whole.feature_count_)
    np.testing.assert_array_equal(stack.coef_, coef)
    online = FisherNBStack().partial_fit(X[:1], y[:1], classes=["ham", "spam"])
    assert online.coef_.tolist() == [1.0, 0.0] and online.intercept_ == 0.0     # Fisher alone until refitted


def test_best_filter_round_trip(tmp_path):
    from conftest import SAMPLE
    from spamkit.corpus import Corpus
    from spamkit import BEST, SpamFilter, build_filter
    with Corpus(SAMPLE) as c:
        msgs = list(c)
    f = build_filter(**BEST).fit(msgs[::2])
    assert isinstance(f.model, FisherNBStack) and f.calibration is None
    f.save(tmp_path / "best.spamkit")
    g = SpamFilter.load(tmp_path / "best.spamkit")
    np.testing.assert_allclose(g.p_spam(msgs[1::2]), f.p_spam(msgs[1::2]))
    np.testing.assert_array_equal(g.model.coef_, f.model.coef_)
    assert f.explain(msgs[1])["towards"] or f.explain(msgs[1])["against"]


def test_parameters_checked():
    X, y = _data()
    with pytest.raises(ConfigError, match="alpha"):
        FisherNBStack(alpha=0).fit(X, y)
    with pytest.raises(ConfigError, match="folds"):
        FisherNBStack(folds=1).fit(X, y)
    with pytest.raises(ValueError, match="two-class"):
        FisherNBStack().fit(X[:3], ["a", "b", "c"])


def test_the_logistic_component_is_an_online_logistic_regression_on_the_same_rows():
    from spamkit.models import OnlineLogistic
    X, y = _data(3)
    stack = FisherNBStack(folds=3, logistic=0.05, squash="slog").fit(X, y)
    alone = OnlineLogistic(rate=0.05).fit(X, y)
    comps = stack.component_log_odds(X)
    assert comps.shape == (len(y), 3)
    np.testing.assert_allclose(comps[:, 2], alone.decision_function(X), rtol=1e-12)
    # the combiner's training scores: each fold scored by a regression of the other folds, in order
    codes = (y == "spam").astype(int)
    folds = fold_of_rows(codes, 3)
    held_scores = np.zeros(len(y))
    for f in range(3):
        held = folds == f
        held_scores[held] = OnlineLogistic(rate=0.05).fit(X[~held], y[~held]).decision_function(X[held])
    fisher_nb = FisherNBStack(folds=3).fit(X, y)                 # same Fisher/NB folds
    two = np.zeros((len(y), 2))
    for f in range(3):
        held = folds == f
        part = FisherNBStack(folds=3).fit(X[~held], y[~held])
        two[held] = part.component_log_odds(X[held])[:, :2]
    inputs = np.column_stack([two, held_scores])
    slog = np.sign(inputs) * np.log1p(np.abs(inputs))
    oracle = LogisticRegression(C=1.0, tol=1e-12, max_iter=10000).fit(slog, codes == 1)
    np.testing.assert_allclose(stack.coef_, oracle.coef_[0], rtol=1e-5, atol=1e-6)
    assert stack.intercept_ == pytest.approx(float(oracle.intercept_[0]), rel=1e-5, abs=1e-6)
    z = stack.combined_log_odds(comps)
    np.testing.assert_allclose(z, np.log1p(np.abs(comps)) * np.sign(comps) @ stack.coef_ + stack.intercept_)
    assert fisher_nb.coef_.shape == (2,) and not stack.exact_unlearning and fisher_nb.exact_unlearning


def test_online_stack_steps_its_logistic_component_with_each_message():
    from spamkit.models import OnlineLogistic
    X, y = _data(4, n=60)
    stack = FisherNBStack(logistic=0.1)
    alone = OnlineLogistic(rate=0.1)
    for i in range(len(y)):
        stack.partial_fit(X[i], y[i:i + 1], classes=["ham", "spam"])
        alone.partial_fit(X[i], y[i:i + 1], classes=["ham", "spam"])
    np.testing.assert_allclose(stack.logistic_.coef_, alone.coef_)
    np.testing.assert_allclose(stack.component_log_odds(X)[:, 2], alone.decision_function(X))


def test_a_stack_with_a_logistic_component_round_trips_and_an_old_file_still_loads(tmp_path):
    from spamkit.features.vectorizer import Vectorizer
    from spamkit.filterfile.persist import load_filter, save_filter
    from spamkit.text import Analyzer
    X, y = _data(5)
    docs = [[f"t{j}" for j in np.flatnonzero(X[i].toarray()[0])] for i in range(len(y))]
    vec = Vectorizer("binary").fit(docs)
    Xv = vec.transform(docs)
    for stack in (FisherNBStack(logistic=0.05, squash="slog", length_aware=True).fit(Xv, y),
                  FisherNBStack(logistic=0.05, squash="slog").fit(Xv, y), FisherNBStack().fit(Xv, y)):
        save_filter(tmp_path / "f.spamkit", Analyzer(), vec, stack)
        _, _, back, manifest = load_filter(tmp_path / "f.spamkit")
        np.testing.assert_allclose(back.predict_proba(Xv), stack.predict_proba(Xv), rtol=1e-12)
        assert back.logistic == stack.logistic and back.squash == stack.squash
        assert back.length_aware is stack.length_aware and back.coef_.shape == stack.coef_.shape
    # a file written before the logistic component existed has no such parameters: it loads as Fisher + NB
    import json
    import zipfile
    with zipfile.ZipFile(tmp_path / "f.spamkit") as z:
        members = {n: z.read(n) for n in z.namelist()}
    name = next(n for n in members if n.endswith(".json"))
    manifest = json.loads(members[name])
    del manifest["model"]["params"]["logistic"], manifest["model"]["params"]["squash"]
    del manifest["model"]["params"]["length_aware"]
    members[name] = json.dumps(manifest).encode()
    with zipfile.ZipFile(tmp_path / "old.spamkit", "w") as z:
        for n, data in members.items():
            z.writestr(n, data)
    _, _, old, _ = load_filter(tmp_path / "old.spamkit")
    assert old.logistic == 0.0 and old.logistic_ is None and old.length_aware is False
    np.testing.assert_allclose(old.predict_proba(Xv), stack.predict_proba(Xv), rtol=1e-12)


def test_the_length_column_counts_the_distinct_tokens_by_hand():
    # rows: tokens {0, 1, 3}, {2}, {1 (twice), 4} and an explicit zero in the second row, which is
    # no token: 3, 1 and 2 distinct tokens -- whether the model has counts for them or not (NB's
    # sum runs over every one of them)
    X = sp.csr_matrix((np.array([1.0, 1.0, 1.0, 1.0, 0.0, 2.0, 1.0]), np.array([0, 1, 3, 2, 4, 1, 4]),
                       np.array([0, 3, 5, 7])), shape=(3, 5))
    counts = np.array([[3.0, 0.0, 1.0, 2.0, 0.0], [1.0, 0.0, 0.0, 5.0, 2.0]])
    stack = FisherNBStack(length_aware=True, squash="slog")
    stack.classes_ = np.array(["ham", "spam"])
    scores = stack.component_scores(np.array([4.0, 6.0]), counts, X)
    assert scores.shape == (3, 3) and scores[:, 2].tolist() == [3.0, 1.0, 2.0]
    # the combiner's features before any fit (no clipping yet): squashed Fisher and NB,
    # l = log(1 + n) - 4, l x squashed NB
    features = stack.combiner_features(scores)
    length = np.log([4.0, 2.0, 3.0]) - 4.0
    nb = np.sign(scores[:, 1]) * np.log1p(np.abs(scores[:, 1]))
    np.testing.assert_allclose(features, np.column_stack([np.sign(scores[:, 0]) * np.log1p(np.abs(scores[:, 0])),
                                                          nb, length, length * nb]), rtol=1e-15)


def test_the_length_aware_combiner_is_a_logistic_regression_on_out_of_fold_scores_and_lengths():
    X, y = _data(6, n=160)
    stack = FisherNBStack(folds=4, squash="slog", length_aware=True).fit(X, y)
    codes = (y == "spam").astype(int)
    folds = fold_of_rows(codes, 4)
    features = np.zeros((len(y), 4))
    for k in range(4):                                           # independent: refit each fold from scratch
        held = folds == k
        jf = RobinsonFisher().fit(X[~held], y[~held]).joint_log_likelihood(X[held])
        jn = SkMultinomialNB(alpha=1.0).fit(X[~held], y[~held]).predict_joint_log_proba(X[held])
        n_tokens = np.asarray((X[held] > 0).sum(axis=1)).ravel()    # distinct tokens of each message
        slog = lambda z: np.sign(z) * np.log1p(np.abs(np.clip(z, -700, 700)))      # noqa: E731
        f, nb, length = slog(jf[:, 1] - jf[:, 0]), slog(jn[:, 1] - jn[:, 0]), np.log1p(n_tokens) - 4.0
        features[held] = np.column_stack([f, nb, length, length * nb])
    lr = LogisticRegression(C=1.0, tol=1e-12, max_iter=10000).fit(features, codes == 1)   # solved exactly
    np.testing.assert_allclose(stack.coef_, lr.coef_[0], rtol=1e-6, atol=1e-7)
    assert stack.intercept_ == pytest.approx(lr.intercept_[0], rel=1e-6, abs=1e-7)
    # and a message scores the same alone as in a batch
    batch = stack.predict_log_proba(X)
    alone = np.vstack([stack.predict_log_proba(X[i]) for i in range(len(y))])
    assert np.array_equal(batch, alone)


def test_the_length_is_clipped_to_the_range_the_combiner_was_fitted_on(tmp_path):
    # a message shorter or longer than any the combiner saw gets the weights of the nearest it saw
    stack = FisherNBStack(squash="slog", length_aware=True)
    stack.classes_ = np.array(["ham", "spam"])
    stack._start_counts(np.array(["ham", "spam"]), 3)
    rng = np.random.default_rng(3)
    n_tokens = rng.integers(20, 200, size=60).astype(float)       # training messages of 20-199 distinct tokens
    scores = np.column_stack([rng.normal(size=60), rng.normal(size=60), n_tokens])
    stack.fit_combiner(scores, rng.random(60) < 0.5)
    assert stack.length_range_.tolist() == [np.log1p(n_tokens.min()) - 4.0, np.log1p(n_tokens.max()) - 4.0]
    short, long_, inside = [[0.5, -0.5, 2.0]], [[0.5, -0.5, 5000.0]], [[0.5, -0.5, 100.0]]
    assert stack.combiner_features(short)[0, 2] == stack.length_range_[0]
    assert stack.combiner_features(long_)[0, 2] == stack.length_range_[1]
    assert stack.combiner_features(inside)[0, 2] == np.log1p(100.0) - 4.0
    assert stack.combined_log_odds(short)[0] == stack.combined_log_odds([[0.5, -0.5, n_tokens.min()]])[0]


def test_a_length_aware_file_without_its_range_is_refused(tmp_path):
    import json
    import zipfile
    from spamkit.common.errors import ModelFormatError
    from spamkit.features.vectorizer import Vectorizer
    from spamkit.filterfile.persist import load_filter, save_filter
    from spamkit.text import Analyzer
    X, y = _data(7)
    docs = [[f"t{j}" for j in np.flatnonzero(X[i].toarray()[0])] for i in range(len(y))]
    vec = Vectorizer("binary").fit(docs)
    stack = FisherNBStack(squash="slog", length_aware=True).fit(vec.transform(docs), y)
    save_filter(tmp_path / "f.spamkit", Analyzer(), vec, stack)
    back = load_filter(tmp_path / "f.spamkit")[2]
    assert np.array_equal(back.length_range_, stack.length_range_) and back.length_range_[0] < back.length_range_[1]
    with zipfile.ZipFile(tmp_path / "f.spamkit") as z:
        members = {n: z.read(n) for n in z.namelist()}
    manifest = json.loads(members["manifest.json"])
    for damage in ("missing", "reversed"):
        changed = dict(members)
        meta = dict(manifest, arrays=dict(manifest["arrays"]))
        if damage == "missing":
            del changed[meta["arrays"].pop("model.length_range_")["file"]]
        else:
            import hashlib
            import io
            buf = io.BytesIO()
            np.save(buf, stack.length_range_[::-1].copy())
            entry = dict(meta["arrays"]["model.length_range_"])
            changed[entry["file"]] = buf.getvalue()
            entry["sha256"] = hashlib.sha256(buf.getvalue()).hexdigest()
            meta["arrays"]["model.length_range_"] = entry
        changed["manifest.json"] = json.dumps(meta).encode()
        with zipfile.ZipFile(tmp_path / f"{damage}.spamkit", "w") as z:
            for n, data in changed.items():
                z.writestr(n, data)
        # missing: the model says so; reversed: the value rule both routes share (spamkit.filterfile.manifest)
        problem = "length range" if damage == "missing" else "length_range_ is not two numbers, the smaller first"
        with pytest.raises(ModelFormatError, match=problem):
            load_filter(tmp_path / f"{damage}.spamkit")


def test_length_aware_must_be_a_bool():
    with pytest.raises(ConfigError, match="length_aware"):
        FisherNBStack(length_aware="yes").fit(*_data())


def test_scoring_in_blocks_of_rows_changes_nothing(monkeypatch):
    # rows are scored SCORE_ROWS (compiled: COMPILED_SCORE_ROWS) at a time (memory); each row's
    # scores depend on it alone, so the blocks give the very same numbers as one pass, in fit (the
    # combiner's training scores) and after
    from spamkit.models import stack as module
    X, y = _data(4, n=150)
    one_pass = FisherNBStack(folds=3, logistic=0.1, squash="slog").fit(X, y)
    monkeypatch.setattr(module, "SCORE_ROWS", 7)
    monkeypatch.setattr(module, "COMPILED_SCORE_ROWS", 7)
    blocked = FisherNBStack(folds=3, logistic=0.1, squash="slog").fit(X, y)
    assert np.array_equal(one_pass.coef_, blocked.coef_) and one_pass.intercept_ == blocked.intercept_
    assert np.array_equal(one_pass.predict_log_proba(X), blocked.predict_log_proba(X))
    monkeypatch.setattr(module, "SCORE_ROWS", 10 ** 6)
    monkeypatch.setattr(module, "COMPILED_SCORE_ROWS", 10 ** 6)
    assert np.array_equal(one_pass.predict_log_proba(X), blocked.predict_log_proba(X))


def test_compiled_component_scores_equal_the_numpy_definitions(monkeypatch):
    """Fisher's clue sums and NB's log-odds in C (spamkit.common.speedups.fisher_sums, nb_sums) against
    their NumPy definitions, on count data (a token several times in a message) with int32 and
    int64 column indices: the same numbers to the last bits of a logarithm; and a message scores
    bit for bit the same alone as in a batch."""
    from spamkit.models import robinson, stack
    if stack.speedups is None:
        pytest.skip("spamkit.common.speedups was not built")
    X, y = _data(seed=4)
    model = FisherNBStack(logistic=0.2, squash="slog", length_aware=True).fit(X, y)
    rng = np.random.default_rng(9)
    Q = sp.csr_matrix(rng.poisson(0.4, size=(30, X.shape[1])).astype(float))
    Q.data[::7] = 0.0                                   # explicit zeros: no token either
    for indices_type in (np.int32, np.int64):
        Q.indices = Q.indices.astype(indices_type)
        compiled = model.component_log_odds(Q)
        alone = np.vstack([model.component_log_odds(Q[i]) for i in range(Q.shape[0])])
        assert np.array_equal(alone, compiled)
        with monkeypatch.context() as m:
            m.setattr(stack, "speedups", None)
            m.setattr(robinson, "speedups", None)
            numpy_scores = model.component_log_odds(Q)
        np.testing.assert_allclose(compiled, numpy_scores, rtol=1e-12, atol=1e-12)
        # the length column counts each row's tokens, explicit zeros left out
        assert compiled[:, -1].tolist() == [float(np.count_nonzero(Q[i].data)) for i in range(Q.shape[0])]
    # rows of few tokens: alone, each column's logarithms are taken per entry; in a batch that
    # holds many entries per column, once per column (the folds of a training run): the same bits
    dense = np.zeros((60, X.shape[1]))
    for i in range(60):
        dense[i, rng.choice(X.shape[1], size=int(rng.integers(0, 6)), replace=False)] = rng.integers(1, 4)
    sparse_rows = sp.csr_matrix(dense)
    assert all(sparse_rows[i].nnz < X.shape[1] / 4 for i in range(60)) and sparse_rows.nnz >= X.shape[1] / 4
    batch = model.component_log_odds(sparse_rows)
    assert np.array_equal(batch, np.vstack([model.component_log_odds(sparse_rows[i]) for i in range(60)]))
    with pytest.raises(ValueError, match="do not fit"):
        stack.speedups.nb_sums(np.array([0, 1]), np.array([0], dtype=np.int32), np.array([1.0, 2.0]), np.zeros(2),
                               np.zeros(2), 1.0, 0.0, 0.0, np.zeros(1))


def test_side_inputs_are_more_columns_of_the_combiner():
    # a stack with one side input (what scripts/context_model.py passes: a context model's held-out
    # scores) fits its combiner on [the default's columns, the side score]: scikit-learn's logistic
    # regression on the same columns, refitted fold by fold from scratch, is the oracle
    X, y = _data(7, n=160)
    rng = np.random.default_rng(7)
    side = np.where(y == "spam", 1.0, -1.0) * rng.random(len(y)) + rng.normal(0, 0.5, len(y))
    stack = FisherNBStack(folds=4, squash="slog", length_aware=True, side_inputs=1)
    k, folds = stack.fold_assignment(y)
    codes = (y == "spam").astype(int)
    assert k == 4 and np.array_equal(folds, fold_of_rows(codes, 4))
    stack.fit(X, y, side=side)
    features = np.zeros((len(y), 5))
    for f in range(4):
        held = folds == f
        jf = RobinsonFisher().fit(X[~held], y[~held]).joint_log_likelihood(X[held])
        jn = SkMultinomialNB(alpha=1.0).fit(X[~held], y[~held]).predict_joint_log_proba(X[held])
        slog = lambda z: np.sign(z) * np.log1p(np.abs(np.clip(z, -700, 700)))      # noqa: E731
        f_, nb = slog(jf[:, 1] - jf[:, 0]), slog(jn[:, 1] - jn[:, 0])
        length = np.log1p(np.asarray((X[held] > 0).sum(axis=1)).ravel()) - 4.0
        features[held] = np.column_stack([f_, nb, length, length * nb, side[held]])
    # Newton's method on scikit-learn's side too (lbfgs stops 1e-7 short on this fifth column)
    lr = LogisticRegression(C=1.0, tol=1e-12, max_iter=10000, solver="newton-cholesky").fit(features, codes == 1)
    np.testing.assert_allclose(stack.coef_, lr.coef_[0], rtol=1e-6, atol=1e-7)
    assert stack.intercept_ == pytest.approx(lr.intercept_[0], rel=1e-6, abs=1e-7)
    assert stack.coef_[-1] > 0                                    # the side score says spam when > 0
    # predicting: the whole model's columns and the messages' side scores
    z = stack.combined_log_odds(stack.component_log_odds(X), side)
    lp = stack.predict_log_proba(X, side=side)
    np.testing.assert_allclose(lp[:, 1] - lp[:, 0], z, rtol=1e-12, atol=1e-12)
    # without side inputs, the same stack is the default's to the bit
    plain = FisherNBStack(folds=4, squash="slog", length_aware=True).fit(X, y)
    again = FisherNBStack(folds=4, squash="slog", length_aware=True, side_inputs=0).fit(X, y)
    assert np.array_equal(plain.coef_, again.coef_) and len(plain.coef_) == 4


def test_side_scores_are_asked_for_and_checked():
    from spamkit.common.errors import ModelFormatError
    from spamkit.features.vectorizer import Vectorizer
    from spamkit.filterfile.persist import save_filter
    from spamkit.filterfile.spamfilter import SpamFilter
    from spamkit.text import Analyzer
    X, y = _data(8)
    with pytest.raises(ConfigError, match="pass them as side="):
        FisherNBStack(side_inputs=1).fit(X, y)
    with pytest.raises(ConfigError, match="120 rows of 2"):
        FisherNBStack(side_inputs=2).fit(X, y, side=np.zeros(120))
    with pytest.raises(ConfigError, match="no side inputs"):
        FisherNBStack().fit(X, y, side=np.zeros(120))
    with pytest.raises(ConfigError, match="side_inputs must be"):
        FisherNBStack(side_inputs=-1).fit(X, y)
    stack = FisherNBStack(side_inputs=1).fit(X, y, side=np.zeros(120))
    with pytest.raises(ConfigError, match="pass them as side="):
        stack.predict_proba(X)
    with pytest.raises(ModelFormatError, match="side inputs cannot be saved"):
        save_filter("unused.spamkit", Analyzer(), Vectorizer(), stack)
    with pytest.raises(ConfigError, match="side inputs"):
        SpamFilter(model=FisherNBStack(side_inputs=1)).fit([b"Subject: a\n\nb"], ["spam"])


def test_a_combiner_prior_is_the_unfitted_combiner_and_the_centre_of_the_fit():
    from spamkit.models.logistic import fit_l2_logistic
    from spamkit.models.combiner import ACCURATE_CENTER, accurate_center
    from spamkit.models.stack import BEST_STACK as BEST
    rng = np.random.default_rng(3)
    X = sp.csr_matrix((rng.random((60, 30)) < 0.2).astype(float))
    y = np.where(X[:, :5].sum(axis=1).A.ravel() > 1, "spam", "ham")
    center = (1.0, 0.5, 0.8, 2.0)                       # Fisher, NB, logistic weights, intercept
    stack = FisherNBStack(logistic=0.2, squash="slog", combiner_center=center)
    stack.partial_fit(X[:1], y[:1], classes=["ham", "spam"])
    assert stack.coef_.tolist() == [1.0, 0.5, 0.8] and stack.intercept_ == 2.0     # before any fit
    stack = FisherNBStack(logistic=0.2, squash="slog", combiner_center=center).fit(X, y)
    plain = FisherNBStack(logistic=0.2, squash="slog").fit(X, y)
    scores = plain.component_log_odds(X)                # the same held-out scores feed both fits
    k, folds = plain.fold_assignment(y)
    assert k == 5
    # the fit is fit_l2_logistic with the prior's weights as centre, on the stack's own features
    held = np.zeros((60, 3))
    for fold in range(k):
        other = FisherNBStack(logistic=0.2, squash="slog").partial_fit(X[folds != fold], y[folds != fold],
                                                                       classes=["ham", "spam"])
        held[folds == fold] = other.component_log_odds(X[folds == fold])
    w, b = fit_l2_logistic(stack.combiner_features(held), y == "spam", C=1.0, center=center[:-1])
    assert np.allclose(stack.coef_, w, atol=1e-9) and stack.intercept_ == pytest.approx(b, abs=1e-9)
    assert not np.allclose(stack.coef_, plain.coef_)
    assert scores.shape == (60, 3)
    # while it has learned fewer than PRIOR_WARMUP messages, a stack with a prior is that much less sure
    from spamkit.scoring import PRIOR_WARMUP
    young = FisherNBStack(logistic=0.2, squash="slog", combiner_center=center).partial_fit(X[:10], y[:10],
                                                                                         classes=["ham", "spam"])
    features = young.combiner_features(young.component_log_odds(X[10:20]))
    full = features @ np.asarray(center[:-1]) + center[-1]
    assert np.allclose(young.combined_log_odds(young.component_log_odds(X[10:20])), full * 10 / PRIOR_WARMUP)
    with pytest.raises(ConfigError, match="combiner_center must be 4 finite numbers"):
        FisherNBStack(logistic=0.2, combiner_center=(1.0, 2.0)).check_params()
    # the measured prior belongs to the accurate layout only
    assert accurate_center(FisherNBStack(**BEST, side_inputs=2)) == ACCURATE_CENTER
    assert accurate_center(FisherNBStack(**BEST, side_inputs=1)) is None
    assert len(ACCURATE_CENTER) == len(FisherNBStack(**BEST, side_inputs=2).unfitted_combiner()["combiner_"])
