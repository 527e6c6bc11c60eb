"""Classifiers: matrices in, class probabilities out. They never see text."""

from .base import ProbabilisticClassifier
from .categorical import CategoricalNB
from .complement import ComplementNB
from .knn import KNNClassifier, KNNRegressor
from .logistic import OnlineLogistic
from .naive_bayes import BernoulliNB, GaussianNB, MultinomialNB
from .robinson import RobinsonFisher
from .stack import FisherNBStack

__all__ = ["ProbabilisticClassifier", "CategoricalNB", "ComplementNB", "BernoulliNB", "MultinomialNB", "GaussianNB", "KNNClassifier",
           "KNNRegressor", "RobinsonFisher", "FisherNBStack", "OnlineLogistic"]
