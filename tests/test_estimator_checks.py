"""scikit-learn's own estimator checks on the two-class token models and categorical NB (the other
Naive Bayes and the kNN classes run them in their own test files): every check passes but those an estimator lists, with
the reason, in ``EXPECTED_FAILED_CHECKS``; the test also makes sure each listed one still fails."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.utils.estimator_checks import check_estimator, parametrize_with_checks

from spamkit import models
from spamkit.filterfile import estimators
from spamkit.filterfile.estimators import CategoricalNB, FisherNBStack, OnlineLogistic, RobinsonFisher

#: scikit-learn's checks run on spamkit.filterfile.estimators' classes (the models of spamkit.models that
#: also inherit BaseEstimator): the same code, and what a scikit-learn user imports
ESTIMATORS = [RobinsonFisher(), FisherNBStack(), OnlineLogistic(), CategoricalNB()]


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=lambda est: type(est).EXPECTED_FAILED_CHECKS)
def test_sklearn_estimator_checks(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(estimator)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_the_listed_exceptions_are_real_and_explained(estimator):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(estimator, on_fail=None)
    failed = {r["check_name"] for r in results if r["status"] == "failed"}
    assert failed == set(type(estimator).EXPECTED_FAILED_CHECKS), failed
    assert all(len(why) > 40 for why in type(estimator).EXPECTED_FAILED_CHECKS.values())
    assert len(results) > 50                                 # the checks ran, not a handful of them


def test_every_model_has_a_scikit_learn_base_estimator_of_the_same_arithmetic():
    # each spamkit.models class (and the whole filter) has its BaseEstimator twin, named alike,
    # which scikit-learn's checks no longer warn about, clones with its parameters and gives the
    # model's own probabilities
    from sklearn.base import BaseEstimator, clone
    from sklearn.utils.estimator_checks import check_estimator
    from spamkit.filterfile.config import FilterClassifier

    originals = {name: getattr(models, name) for name in models.__all__ if name != "ProbabilisticClassifier"}
    originals["FilterClassifier"] = FilterClassifier
    assert set(estimators.__all__) == set(originals)
    rng = np.random.default_rng(0)
    X = rng.poisson(0.6, size=(60, 12)).astype(float)
    y = np.where(X[:, 0] + X[:, 1] > X[:, 2] + X[:, 3], "spam", "ham")
    for name, original in originals.items():
        twin = getattr(estimators, name)
        assert issubclass(twin, original) and issubclass(twin, BaseEstimator) and twin.__name__ == name
        assert not issubclass(original, BaseEstimator)       # the models stay free of scikit-learn
        if name in ("FilterClassifier", "KNNRegressor", "CategoricalNB", "GaussianNB"):
            continue                                           # raw messages, numbers, categories, dense
        a = original().fit(X, y)
        b = clone(twin()).fit(X, y)
        np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        check_estimator(estimators.MultinomialNB(), on_fail=None)
    assert not [w for w in seen if "does not inherit" in str(w.message)]


def test_a_whole_filter_is_a_scikit_learn_classifier_of_raw_messages():
    # the filter, tokens to decisions, in scikit-learn's model selection: a grid over models
    # and tokens, cross-validated on real mail, then a pipeline that feeds it raw messages
    from sklearn.base import clone
    from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_val_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer

    from spamkit.filterfile.estimators import FilterClassifier
    from spamkit.corpus import Corpus
    from conftest import SAMPLE

    with Corpus(SAMPLE) as corpus:
        messages = list(corpus)
    raws, labels = [m.raw for m in messages], [m.label for m in messages]
    folds = StratifiedKFold(3, shuffle=True, random_state=0)
    best = FilterClassifier()                                   # spamkit's best filter, 4-grams and all
    assert clone(best).get_params() == best.get_params() and best.get_params()["model"] == "fisher-nb"
    scores = cross_val_score(best, raws, labels, cv=folds)
    assert len(scores) == 3 and scores.min() >= 0.9, scores
    grid = GridSearchCV(FilterClassifier(), {"model": ["fisher-nb", "multinomial"], "tokens": ["mail", "words"]},
                        cv=folds).fit(raws, labels)
    assert set(grid.cv_results_["param_model"]) == {"fisher-nb", "multinomial"} and grid.best_score_ >= 0.9
    fitted = grid.best_estimator_.filter_                        # a SpamFilter: it saves, explains, filters
    assert list(fitted.classes_) == ["ham", "spam"]
    # the same numbers as the filter itself gives
    np.testing.assert_allclose(grid.predict_proba(raws[:5]), fitted.predict_proba(raws[:5]))
    as_bytes = FunctionTransformer(lambda texts: [t.encode("utf-8") for t in texts])
    pipe = make_pipeline(as_bytes, FilterClassifier(model="multinomial", tokens="words"))
    texts = [r.decode("latin-1") for r in raws]
    assert pipe.fit(texts, labels).score(texts, labels) >= 0.95
    with pytest.raises(Exception, match="not fitted yet"):
        FilterClassifier().predict(raws[:1])


def test_declared_tags_reach_scikit_learn_and_a_derived_class_wins():
    """sklearn_tag_settings: each class's settings applied from the base class down (a subclass
    overrides its base, as an override calling super() would), scikit-learn's Tags holding them;
    a tag scikit-learn does not have is refused, not set as a new attribute."""
    from spamkit.models.base import ProbabilisticClassifier
    from spamkit.models.naive_bayes import BernoulliNB, MultinomialNB

    assert BernoulliNB().__sklearn_tags__().classifier_tags.poor_score          # from NaiveBayesParameters
    assert MultinomialNB().__sklearn_tags__().input_tags.positive_only          # its own
    assert not BernoulliNB().__sklearn_tags__().input_tags.positive_only        # not its sibling's

    class Base(ProbabilisticClassifier):
        sklearn_tag_settings = {"input_tags.allow_nan": True, "classifier_tags.poor_score": True}

    class Derived(Base):
        sklearn_tag_settings = {"classifier_tags.poor_score": False}

    tags = Derived().__sklearn_tags__()
    assert tags.input_tags.allow_nan and not tags.classifier_tags.poor_score

    class Misspelt(ProbabilisticClassifier):
        sklearn_tag_settings = {"input_tags.sparce": True}

    with pytest.raises(AttributeError, match="no tag 'input_tags.sparce'"):
        Misspelt().__sklearn_tags__()
