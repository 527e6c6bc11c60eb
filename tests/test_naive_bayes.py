"""Naive Bayes: the lecture notes' hand-worked numbers, scikit-learn as oracle, properties, contracts."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
import sklearn.naive_bayes as sk
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from pytest import approx
from scipy.sparse import csr_matrix
from sklearn.utils.estimator_checks import parametrize_with_checks

from spamkit.filterfile import estimators
from spamkit.common.errors import ConfigError, DegenerateDataWarning, NotFittedError
from spamkit.common.labels import HAM, SPAM
from spamkit.models import BernoulliNB, GaussianNB, MultinomialNB

# ------------------------------------------------------------------ hand-worked

# The course's ten examples (CPSC 340, "Naive Bayes"): two binary features.
X_TABLE = [[0, 1], [1, 1], [0, 0], [1, 1], [1, 1], [0, 0],    # y = 1
           [1, 0], [1, 0], [1, 1], [1, 0]]                    # y = 0
Y_TABLE = [1, 1, 1, 1, 1, 1, 0, 0, 0, 0]


def test_bernoulli_mle_reproduces_table():
    nb = BernoulliNB(alpha=0.0).fit(csr_matrix(X_TABLE), Y_TABLE)
    joint = np.exp(nb.joint_log_likelihood(csr_matrix([[1, 1]])))[0]
    #        p(y=0) p(x1|0) p(x2|0)      p(y=1) p(x1|1) p(x2|1)
    assert joint == approx([4 / 10 * 4 / 4 * 1 / 4, 6 / 10 * 3 / 6 * 4 / 6])   # = [0.1, 0.2]
    assert nb.predict_proba(csr_matrix([[1, 1]]))[0, SPAM] == approx(0.2 / 0.3)


def test_bernoulli_laplace_on_table():
    nb = BernoulliNB(alpha=1.0).fit(csr_matrix(X_TABLE), Y_TABLE)
    spam = 6 / 10 * (3 + 1) / (6 + 2) * (4 + 1) / (6 + 2)
    ham = 4 / 10 * (4 + 1) / (4 + 2) * (1 + 1) / (4 + 2)
    assert nb.predict_proba(csr_matrix([[1, 1]]))[0, SPAM] == approx(spam / (spam + ham))
    # (count + 1) / (n + 2) for a binary feature: x1 is on in 3 of the 6 spam
    assert np.exp(nb.feature_log_prob_[SPAM, 0]) == approx((3 + 1) / (6 + 2))


def test_bernoulli_counts_absent_features():
    # x = [0, 0]: the absent terms decide. p(y=0) p(¬x1|0) p(¬x2|0) = 0.4 * 0 * 3/4 = 0;
    # p(y=1) (1 - 3/6)(1 - 4/6) = 0.6 * 1/2 * 1/3 = 0.1
    nb = BernoulliNB(alpha=0.0).fit(X_TABLE, Y_TABLE)
    joint = np.exp(nb.joint_log_likelihood([[0, 0]]))[0]
    assert joint == approx([0.0, 0.1])
    assert nb.predict_proba([[0, 0]])[0].tolist() == [0.0, 1.0]


def test_laplace_for_k_values_multinomial():
    # (count + alpha) / (n + alpha K): class 0 has counts [3, 1, 0] over K = 3 values
    nb = MultinomialNB(alpha=0.5).fit([[3, 1, 0]], [0])
    assert np.exp(nb.feature_log_prob_[0]) == approx([(3 + 0.5) / (4 + 1.5), (1 + 0.5) / (4 + 1.5),
                                                      (0 + 0.5) / (4 + 1.5)])


# Play tennis (Mitchell 1997, Table 3.2; worked in the Italian notes, "Approccio probabilistico").
TENNIS = [("sunny", "hot", "high", "weak", "no"), ("sunny", "hot", "high", "strong", "no"),
          ("overcast", "hot", "high", "weak", "yes"), ("rain", "mild", "high", "weak", "yes"),
          ("rain", "cool", "normal", "weak", "yes"), ("rain", "cool", "normal", "strong", "no"),
          ("overcast", "cool", "normal", "strong", "yes"), ("sunny", "mild", "high", "weak", "no"),
          ("sunny", "cool", "normal", "weak", "yes"), ("rain", "mild", "normal", "weak", "yes"),
          ("sunny", "mild", "normal", "strong", "yes"), ("overcast", "mild", "high", "strong", "yes"),
          ("overcast", "hot", "normal", "weak", "yes"), ("rain", "mild", "high", "strong", "no")]


def test_play_tennis_from_the_notes():
    values = sorted({(k, row[k]) for row in TENNIS for k in range(4)})
    col = {v: j for j, v in enumerate(values)}

    def one_hot(row):
        x = np.zeros(len(values))
        for k in range(4):
            x[col[(k, row[k])]] = 1
        return x

    X = np.array([one_hot(r) for r in TENNIS])
    y = [r[4] for r in TENNIS]
    nb = MultinomialNB(alpha=0.0).fit(X, y)
    assert list(nb.classes_) == ["no", "yes"]
    query = one_hot(("sunny", "cool", "high", "strong"))
    # Every one-hot row has exactly 4 ones, so the multinomial p[c, j] = count / (4 N_c): the
    # categorical model's count / N_c divided by 4, for each of the 4 features: a factor 4^-4.
    joint = np.exp(nb.joint_log_likelihood([query]))[0] * 4 ** 4
    yes = 9 / 14 * 2 / 9 * 3 / 9 * 3 / 9 * 3 / 9       # = 0.0053 in the notes
    no = 5 / 14 * 3 / 5 * 1 / 5 * 4 / 5 * 3 / 5         # = 0.0206
    assert joint == approx([no, yes])
    assert round(yes, 4) == 0.0053 and round(no, 4) == 0.0206
    assert nb.predict([query])[0] == "no"


def test_chinese_tokyo_japan():
    # Manning et al., IIR Example 13.1: multinomial with add-one smoothing.
    # columns: chinese beijing shanghai macao tokyo japan
    X = csr_matrix([[2, 1, 0, 0, 0, 0], [2, 0, 1, 0, 0, 0], [1, 0, 0, 1, 0, 0], [1, 0, 0, 0, 1, 1]])
    nb = MultinomialNB(alpha=1.0).fit(X, ["c", "c", "c", "j"])
    assert np.exp(nb.feature_log_prob_[0, [0, 4, 5]]) == approx([6 / 14, 1 / 14, 1 / 14])
    assert np.exp(nb.feature_log_prob_[1, [0, 4, 5]]) == approx([2 / 9, 2 / 9, 2 / 9])
    joint = np.exp(nb.joint_log_likelihood(csr_matrix([[3, 0, 0, 0, 1, 1]])))[0]
    assert joint == approx([3 / 4 * (3 / 7) ** 3 * 1 / 14 * 1 / 14, 1 / 4 * (2 / 9) ** 3 * 2 / 9 * 2 / 9])


def test_gaussian_from_the_notes():
    # mean 73, std 6.2: p(66) = exp(-(66 - 73)^2 / (2 * 6.2^2)) / (sqrt(2 pi) 6.2) = 0.034
    nb = GaussianNB(var_smoothing=0.0).fit([[73 - 6.2], [73 + 6.2], [0.0], [2.0]], [0, 0, 1, 1])
    assert nb.theta_[0, 0] == approx(73) and np.sqrt(nb.var_[0, 0]) == approx(6.2)
    density = np.exp(nb.joint_log_likelihood([[66.0]])[0, 0] - np.log(2 / 4))
    assert density == approx(np.exp(-49 / (2 * 6.2 ** 2)) / (np.sqrt(2 * np.pi) * 6.2))
    assert round(density, 3) == 0.034


def test_fixed_and_uniform_priors():
    nb = MultinomialNB(fit_prior=False).fit([[1, 0], [1, 0], [0, 1]], [0, 0, 1])
    assert np.exp(nb.class_log_prior_) == approx([0.5, 0.5])
    nb = MultinomialNB(class_prior=[0.9, 0.1]).fit([[1, 0], [0, 1]], [0, 1])
    assert np.exp(nb.class_log_prior_) == approx([0.9, 0.1])
    with pytest.raises(ConfigError, match="class_prior"):
        MultinomialNB(class_prior=[0.5, 0.6]).fit([[1, 0], [0, 1]], [0, 1])


def test_long_messages_do_not_underflow():
    rng = np.random.default_rng(0)
    X = sp.random(40, 300, density=0.2, format="csr", random_state=1) * 50
    X.data = np.ceil(X.data)
    y = rng.integers(0, 2, 40)
    nb = MultinomialNB().fit(X, y)
    long_doc = csr_matrix(np.full((1, 300), 40.0))          # 12,000 tokens
    p = nb.predict_proba(long_doc)
    assert np.all(np.isfinite(p)) and p.sum() == approx(1.0)
    assert np.exp(nb.joint_log_likelihood(long_doc)).max() == 0.0   # the joint itself underflows


def test_zero_likelihood_everywhere_is_reported_not_hidden():
    nb = MultinomialNB(alpha=0.0).fit([[1, 0, 0], [0, 1, 0]], [0, 1])
    with pytest.warns(DegenerateDataWarning, match="zero likelihood"):
        p = nb.predict_proba([[0, 0, 1]])
    assert np.isnan(p).all()


# ------------------------------------------------------------------ oracle: scikit-learn

@pytest.fixture(scope="module")
def random_counts():
    rng = np.random.default_rng(42)
    X = sp.random(200, 60, density=0.1, format="csr", random_state=rng, dtype=np.float64)
    X.data = np.ceil(X.data * 5)
    y = rng.integers(0, 2, 200)
    return X, y


@pytest.mark.parametrize("alpha", [0.5, 1.0, 2.0])
@pytest.mark.parametrize("ours, theirs", [(BernoulliNB, sk.BernoulliNB), (MultinomialNB, sk.MultinomialNB)],
                         ids=["bernoulli", "multinomial"])
@pytest.mark.parametrize("fit_prior", [True, False])
def test_agrees_with_sklearn(ours, theirs, alpha, fit_prior, random_counts):
    X, y = random_counts
    expected = theirs(alpha=alpha, force_alpha=True, fit_prior=fit_prior).fit(X, y)
    got = ours(alpha=alpha, fit_prior=fit_prior).fit(X, y)
    assert list(got.classes_) == list(expected.classes_) == [HAM, SPAM]
    np.testing.assert_allclose(got.predict_proba(X), expected.predict_proba(X), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(got.feature_log_prob_, expected.feature_log_prob_, rtol=1e-12)
    np.testing.assert_array_equal(got.predict(X), expected.predict(X))


def test_multiclass_agrees_with_sklearn(random_counts):
    X, _ = random_counts
    y = np.array(["a", "b", "c", "d"])[np.arange(X.shape[0]) % 4]
    for ours, theirs in ((MultinomialNB, sk.MultinomialNB), (BernoulliNB, sk.BernoulliNB)):
        np.testing.assert_allclose(ours().fit(X, y).predict_proba(X),
                                   theirs().fit(X, y).predict_proba(X), rtol=1e-9)


def test_gaussian_agrees_with_sklearn():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(120, 5)) + np.repeat(np.arange(3), 40)[:, None]
    y = np.repeat(np.arange(3), 40)
    np.testing.assert_allclose(GaussianNB().fit(X, y).predict_proba(X),
                               sk.GaussianNB().fit(X, y).predict_proba(X), rtol=1e-7, atol=1e-12)
    ours, theirs = GaussianNB(), sk.GaussianNB()
    for chunk in np.array_split(np.random.default_rng(0).permutation(120), 4):
        ours.partial_fit(X[chunk], y[chunk], classes=[0, 1, 2])
        theirs.partial_fit(X[chunk], y[chunk], classes=[0, 1, 2])
    np.testing.assert_allclose(ours.theta_, theirs.theta_, rtol=1e-10)
    np.testing.assert_allclose(ours.var_ + ours.epsilon_, theirs.var_, rtol=1e-7)


# ------------------------------------------------------------------ properties

count_matrices = arrays(np.int64, st.tuples(st.integers(2, 25), st.integers(1, 12)),
                        elements=st.integers(0, 6))


@settings(max_examples=60, deadline=None)
@given(count_matrices, st.data(), st.sampled_from([MultinomialNB, BernoulliNB]),
       st.floats(0.1, 3.0))
def test_properties(counts, data, model, alpha):
    y = np.array(data.draw(st.lists(st.integers(0, 1), min_size=counts.shape[0], max_size=counts.shape[0])))
    if len(set(y)) < 2:
        y[0], y[1] = 0, 1
    X = csr_matrix(counts.astype(np.float64))
    nb = model(alpha=alpha).fit(X, y)
    p = nb.predict_proba(X)
    np.testing.assert_allclose(p.sum(axis=1), 1.0)                       # rows sum to one
    perm = np.random.default_rng(0).permutation(X.shape[0])
    np.testing.assert_allclose(model(alpha=alpha).fit(X[perm], y[perm]).predict_proba(X), p,
                               rtol=1e-12)                               # training order does not matter
    np.testing.assert_allclose(nb.predict_proba(X[perm]), p[perm])       # nor prediction order
    chunked = model(alpha=alpha)
    for part in np.array_split(np.arange(X.shape[0]), min(3, X.shape[0])):
        chunked.partial_fit(X[part], y[part], classes=[0, 1])
    np.testing.assert_array_equal(chunked.feature_count_, nb.feature_count_)   # integers: exact
    np.testing.assert_allclose(chunked.predict_proba(X), p, rtol=1e-12)


# ------------------------------------------------------------------ contracts

CLASSIFIERS = [MultinomialNB, BernoulliNB, GaussianNB]


@pytest.mark.parametrize("model", CLASSIFIERS)
def test_contract(model, random_counts):
    X, y = random_counts
    Xd = X.toarray()
    with pytest.raises(NotFittedError):
        model().predict(Xd)
    est = model()
    assert est.fit(Xd, y) is est
    first = est.predict_proba(Xd)
    assert first.shape == (X.shape[0], 2)
    np.testing.assert_allclose(first.sum(axis=1), 1.0)
    np.testing.assert_allclose(est.fit(Xd, y).predict_proba(Xd), first)       # refit is idempotent
    with pytest.raises(ValueError, match="features"):
        est.predict(Xd[:, :-1])
    if model is not GaussianNB:
        np.testing.assert_allclose(model().fit(X, y).predict_proba(X), first)  # CSR == dense


def test_partial_fit_needs_classes_and_rejects_new_labels():
    nb = MultinomialNB()
    with pytest.raises(ConfigError, match="needs classes"):
        nb.partial_fit([[1, 0]], [0])
    nb.partial_fit([[1, 0]], [0], classes=[0, 1])
    with pytest.raises(ConfigError, match="label 2 is not one of the classes"):
        nb.partial_fit([[1, 0]], [2])


def test_bad_parameters():
    with pytest.raises(ConfigError, match="alpha"):
        MultinomialNB(alpha=-1).fit([[1]], [0])
    with pytest.raises(ValueError, match="Negative values"):
        MultinomialNB().fit([[-1.0]], [0])


def test_contributions_sum_to_joint_log_likelihood(random_counts):
    X, y = random_counts
    for model in (MultinomialNB, BernoulliNB):
        nb = model().fit(X, y)
        row = X[3]
        idx, contrib = nb.contributions(row)
        assert list(idx) == list(row.indices)
        b = nb.joint_log_likelihood(csr_matrix((1, X.shape[1])))[0]      # the empty message: b_c
        np.testing.assert_allclose(b + contrib.sum(axis=1), nb.joint_log_likelihood(row)[0])


# on the BaseEstimator twins (spamkit.filterfile.estimators: the same code, what scikit-learn users import)
@parametrize_with_checks([estimators.MultinomialNB(), estimators.BernoulliNB(), estimators.GaussianNB()])
def test_sklearn_estimator_checks(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(estimator)


def test_scikit_learn_takes_our_estimators_without_us_importing_it():
    # spamkit's Estimator implements scikit-learn's contract itself (so that loading a filter
    # does not import scikit-learn); scikit-learn's own tools must still see an estimator
    from sklearn.base import clone, is_classifier, is_regressor
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import make_pipeline

    from spamkit.models import FisherNBStack, KNNClassifier, KNNRegressor, RobinsonFisher

    nb = MultinomialNB(alpha=0.5)
    twin = clone(nb)
    assert twin is not nb and twin.get_params() == {"alpha": 0.5, "class_prior": None, "fit_prior": True}
    assert repr(nb) == "MultinomialNB(alpha=0.5)" and repr(MultinomialNB()) == "MultinomialNB()"
    assert all(is_classifier(m) for m in (nb, KNNClassifier(), RobinsonFisher(), FisherNBStack()))
    assert is_regressor(KNNRegressor()) and not is_classifier(KNNRegressor())
    with pytest.raises(ValueError, match="Invalid parameter 'beta' for estimator MultinomialNB"):
        nb.set_params(beta=1)

    texts = ["cheap pills now", "cheap cheap offer", "pills offer now", "lunch at noon",
             "meeting at noon", "lunch meeting notes"] * 3
    y = ["spam"] * 3 + ["ham"] * 3
    y = y * 3
    pipe = make_pipeline(CountVectorizer(), MultinomialNB())
    pipe.set_params(multinomialnb__alpha=0.25)                       # nested through the pipeline
    assert pipe.get_params()["multinomialnb__alpha"] == 0.25
    grid = GridSearchCV(pipe, {"multinomialnb__alpha": [0.01, 1.0]}, cv=3).fit(texts, y)
    assert grid.best_score_ == 1.0 and grid.score(["cheap pills", "noon lunch"], ["spam", "ham"]) == 1.0


def test_the_fast_input_path_agrees_with_scikit_learns_validation(random_counts):
    # a float64 CSR matrix skips scikit-learn's validation; anything else goes through it
    X, y = random_counts
    fast = MultinomialNB().fit(X, y)
    slow = MultinomialNB().fit(X.toarray().astype(np.int64), list(y))
    assert fast.n_features_in_ == slow.n_features_in_ == X.shape[1]
    np.testing.assert_array_equal(fast.predict_log_proba(X), slow.predict_log_proba(X.toarray()))
    with pytest.raises(ValueError, match="Unknown label type"):
        MultinomialNB().fit(X, np.linspace(0.0, 1.0, X.shape[0]))     # continuous labels
    with pytest.raises(ValueError, match="features"):
        fast.predict(sp.csr_matrix((1, X.shape[1] + 1)))
    bad = X.copy()
    bad.data[0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        MultinomialNB().fit(bad, y)
