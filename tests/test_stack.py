"""The stacked Fisher + multinomial NB filter: components against independent models, combiner against scikit-learn."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.linear_model import LogisticRegression
from sklearn.naive_bayes import MultinomialNB as SkMultinomialNB

from spamkit.errors import ConfigError
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
    lr = LogisticRegression(C=1.0, max_iter=1000).fit(scores, codes == 1)
    np.testing.assert_allclose(stack.coef_, lr.coef_[0], rtol=1e-4, atol=1e-5)
    assert stack.intercept_ == pytest.approx(lr.intercept_[0], rel=1e-4, abs=1e-5)
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
    from spamkit.pipeline import BEST, SpamFilter, build_filter
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
