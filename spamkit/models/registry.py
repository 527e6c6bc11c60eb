"""Model name -> a fresh estimator: the one place the names used by the command line, the
pipeline and online evaluation are turned into classes."""

from __future__ import annotations

from ..common.errors import ConfigError
from .knn import KNNClassifier
from ..common.names import DEFAULT_RATE, MODEL_NAMES, STACK_MODEL
from .logistic import OnlineLogistic
from .complement import ComplementNB
from .naive_bayes import BernoulliNB, MultinomialNB
from .robinson import RobinsonFisher
from .stack import BEST_STACK, FisherNBStack



def make_model(name: str, alpha: float = 1.0, fit_prior: bool = True, fisher: dict | None = None,
               stack: dict | None = None, rate: float = DEFAULT_RATE, complement: dict | None = None, **knn):
    """A fresh estimator by name; ``knn`` takes KNNClassifier's parameters (k, weights, metric, ...),
    ``fisher`` RobinsonFisher's (strength, prior, min_dev, max_clues), ``stack`` FisherNBStack's
    own (logistic, squash; default :data:`~spamkit.models.stack.BEST_STACK`), ``rate``
    OnlineLogistic's learning rate, ``complement`` ComplementNB's document transforms and weight
    normalisation (tf_transform, length_norm, norm; default: weight-normalised counts)."""
    if name == "fisher":
        return RobinsonFisher(**(fisher or {}))
    if name == STACK_MODEL:
        return FisherNBStack(**(fisher or {}), alpha=alpha, **(BEST_STACK if stack is None else stack))
    if name == "logistic":
        return OnlineLogistic(rate=rate)
    if name == "multinomial":
        return MultinomialNB(alpha=alpha, fit_prior=fit_prior)
    if name == "bernoulli":
        return BernoulliNB(alpha=alpha, fit_prior=fit_prior)
    if name == "complement":
        return ComplementNB(alpha=alpha, **({"norm": True} if complement is None else complement))
    if name == "knn":
        return KNNClassifier(**knn)
    raise ConfigError(f"unknown model {name!r}; choose one of {', '.join(MODEL_NAMES)}")
