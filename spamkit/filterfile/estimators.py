"""spamkit's estimators as scikit-learn's own: each class here is the model of the same name in
:mod:`spamkit.models` (or :class:`~spamkit.filterfile.config.FilterClassifier`, the whole filter)
that also inherits :class:`sklearn.base.BaseEstimator`.

The classes of :mod:`spamkit.models` already keep scikit-learn's estimator contract
(``get_params``/``set_params``, ``fit``/``predict_proba``, tags; scikit-learn's
``check_estimator`` passes but for the checks each lists, with the reason, in its
``EXPECTED_FAILED_CHECKS``) without importing scikit-learn, which costs every command about half a
second and 60 MB. What they cannot be without it is an instance of ``BaseEstimator``, which
scikit-learn's checks warn about and which gives its HTML display in notebooks, its
version-stamped pickles and its metadata routing. Importing this module imports scikit-learn;
the commands never do. The same arithmetic, the same parameters, the same results::

    >>> from spamkit.filterfile.estimators import MultinomialNB
    >>> from sklearn.base import BaseEstimator, clone
    >>> isinstance(MultinomialNB(alpha=0.5), BaseEstimator), clone(MultinomialNB(alpha=0.5)).alpha
    (True, 0.5)
"""

from __future__ import annotations

from sklearn.base import BaseEstimator

from .. import models
from . import config

__all__ = ["BernoulliNB", "CategoricalNB", "ComplementNB", "FilterClassifier", "FisherNBStack", "GaussianNB",
           "KNNClassifier", "KNNRegressor", "MultinomialNB", "OnlineLogistic", "RobinsonFisher"]


class BernoulliNB(models.BernoulliNB, BaseEstimator):
    """:class:`spamkit.models.BernoulliNB` as a scikit-learn ``BaseEstimator``."""


class CategoricalNB(models.CategoricalNB, BaseEstimator):
    """:class:`spamkit.models.CategoricalNB` as a scikit-learn ``BaseEstimator``."""


class ComplementNB(models.ComplementNB, BaseEstimator):
    """:class:`spamkit.models.ComplementNB` as a scikit-learn ``BaseEstimator``."""


class FisherNBStack(models.FisherNBStack, BaseEstimator):
    """:class:`spamkit.models.FisherNBStack` as a scikit-learn ``BaseEstimator``."""


class GaussianNB(models.GaussianNB, BaseEstimator):
    """:class:`spamkit.models.GaussianNB` as a scikit-learn ``BaseEstimator``."""


class KNNClassifier(models.KNNClassifier, BaseEstimator):
    """:class:`spamkit.models.KNNClassifier` as a scikit-learn ``BaseEstimator``."""


class KNNRegressor(models.KNNRegressor, BaseEstimator):
    """:class:`spamkit.models.KNNRegressor` as a scikit-learn ``BaseEstimator``."""


class MultinomialNB(models.MultinomialNB, BaseEstimator):
    """:class:`spamkit.models.MultinomialNB` as a scikit-learn ``BaseEstimator``."""


class OnlineLogistic(models.OnlineLogistic, BaseEstimator):
    """:class:`spamkit.models.OnlineLogistic` as a scikit-learn ``BaseEstimator``."""


class RobinsonFisher(models.RobinsonFisher, BaseEstimator):
    """:class:`spamkit.models.RobinsonFisher` as a scikit-learn ``BaseEstimator``."""


class FilterClassifier(config.FilterClassifier, BaseEstimator):
    """:class:`spamkit.filterfile.config.FilterClassifier` as a scikit-learn ``BaseEstimator``."""
