"""Settings to an untrained filter: the one registry of names and spamkit's defaults.

The names a user can choose (models, token schemes, representations, calibrations, kNN
metrics and weights, stemmers), spamkit's best filter (:data:`BEST`, :data:`STACK`), and
the functions that build a :class:`~spamkit.spamfilter.SpamFilter` from them:
:func:`build_filter` (the options of ``spamkit train``) and :func:`filter_from_config`
(the ``KEY=VALUE`` settings of ``spamkit cv`` / ``compare``). Model classes by name are
:mod:`spamkit.models.registry`.
"""

from __future__ import annotations

from .errors import ConfigError
from .models.base import ClassifierMixin, Estimator
from .features import Vectorizer
from .models.registry import make_model
from .names import (CALIBRATIONS, COMPLEMENT_KEYS, DEFAULT_RATE, METRICS, MODEL_DEFAULTS, MODEL_NAMES, REPRESENTATIONS,
                    SELECTIONS, TOKENS, WEIGHTS, model_default)
from .models.bytegrams import GRAM_BITS, GRAM_BYTES, GRAM_RATE, ByteGramLogistic
from .models.stack import BEST_STACK, accurate_center
from .spamfilter import SpamFilter
from .text import analyzer_for, make_analyzer
from .text.stem import SNOWBALL_LANGUAGES, STEMMERS

__all__ = ["MODELS", "TOKENS", "BEST", "CONTEXT", "GRAMS", "KNN_BEST", "MODEL_DEFAULTS", "STACK", "DEFAULT_RATE", "CALIBRATIONS", "REPRESENTATIONS", "SELECTIONS",
           "STEMMERS", "SNOWBALL_LANGUAGES", "METRICS", "WEIGHTS", "CONFIG_KEYS", "make_analyzer", "build_filter",
           "parse_config", "filter_from_config", "stack_for_rate", "model_default"]

MODELS = MODEL_NAMES




#: the settings of spamkit's best filter, chosen on trec07p-dev, Enron and SMS (docs/results.md, "Beating bogofilter"),
#: with the byte 4-gram regression as a side input, chosen on long streams as well (spamkit.names.MODEL_DEFAULTS)
BEST = {"model": "fisher-nb", "tokens": "mail", **({"grams": {}} if MODEL_DEFAULTS["fisher-nb"]["grams"] else {})}

#: what asking for kNN gives unless told otherwise: cosine kNN on TF-IDF of words, k = 15, softmax
#: weights (tau 0.1). ``python scripts/knn_defaults.py`` (first half of each corpus stored, second
#: half ranked, Enron1-6, trec07p-dev, CSDMC2010): mean ROC AUC 0.9873, worst 0.9768, against
#: 0.9345 / 0.8836 for the earlier default (mail tokens, TF, k = 5, uniform) and 0.9831 / 0.9563
#: for the same on mail tokens (docs/results.md, "k-nearest neighbours on Enron-spam").
KNN_BEST = {"k": 15, "weights": "softmax", "tau": 0.1}
#: the stack's own defaults (a logistic third component, sign-log squashing; see spamkit.models.stack)
STACK = BEST_STACK

#: the context model of the accurate configuration (``spamkit train --context-model``): order 6,
#: beta 8, 2**24 slots a class, the first 3,000 bytes of each raw message -- the variant with the
#: smallest worst regret over trec07p-dev, CSDMC2010, Enron1-6 and SMS online
#: (``scripts/context_model.py --online``; docs/results.md, "A context model per class")
CONTEXT = {"order": 6, "beta": 8.0, "bits": 24, "max_bytes": 3000}
#: the byte 4-gram model (``spamkit train --byte-grams``; spamkit.models.bytegrams): the TREC 2007
#: winner's rate and table, 3,500 bytes of each raw message
GRAMS = {"n_bytes": GRAM_BYTES, "bits": GRAM_BITS, "rate": GRAM_RATE}


def build_filter(model: str = "multinomial", alpha: float | None = None, representation: str | None = None,
                 min_df=None, max_df=1.0, max_features: int | None = None, select: str = "frequency",
                 hashing: int | None = None, stem: str = "none", language: str = "english",
                 stop_words: str = "none", ngrams: int = 1, knn: dict | None = None,
                 tokens: str = "words", fisher: dict | None = None, calibrate: str = "none",
                 stack: dict | None = None, rate: float = DEFAULT_RATE, char_ngrams: int = 0,
                 tf_transform: bool | None = None, length_norm: bool | None = None,
                 weight_norm: bool | None = None, digit_prefixes: bool = False,
                 context: dict | None = None, grams: dict | None = None) -> "SpamFilter":
    """An untrained :class:`SpamFilter` from the options ``spamkit train`` offers.

    ``knn``: KNNClassifier parameters for ``model="knn"`` (k, weights, metric, tau, epsilon,
    memory_limit). kNN compares TF vectors by cosine by default (representation "tf").
    ``fisher``: RobinsonFisher parameters for ``model="fisher"``. ``tokens``: "mail" or
    "words" (see :data:`TOKENS`). ``stack``: FisherNBStack's own parameters (default
    :data:`STACK`); ``rate``: the learning rate of ``model="logistic"``. ``char_ngrams``: also
    character n-grams of the body (Analyzer ``char_ngrams``; 0 = off). ``digit_prefixes``: also
    the first two digits and the length of each long digit run (Analyzer ``digit_prefixes``).
    ``tf_transform``,
    ``length_norm``, ``weight_norm``: complement NB's transforms (Rennie et al. 2003).
    ``alpha``, ``min_df`` and those left ``None`` take the model's own best values
    (:data:`MODEL_DEFAULTS`), else alpha 1 and min_df 1. ``context``: with ``model="fisher-nb"``,
    also a byte context model per class as the stack's side input (the accurate configuration:
    :class:`~spamkit.models.context.ByteContextModel`'s ``order``, ``beta``, ``bits`` and
    ``max_bytes``, the bytes of each message it reads; ``{}``: its defaults, :data:`CONTEXT`).
    ``grams``: with ``model="fisher-nb"``, also the byte 4-gram logistic regression as a side
    input (:class:`~spamkit.models.bytegrams.ByteGramLogistic`'s ``n_bytes``, ``bits``, ``rate``;
    ``{}``: :data:`GRAMS`).
    ``build_filter(**BEST)`` is spamkit's best filter.
    """
    if model == "knn":
        knn = {**KNN_BEST, **(knn or {})}
    alpha = model_default(model, "alpha", alpha, 1.0)
    min_df = model_default(model, "min_df", min_df, 1)
    complement = None
    if model == "complement":
        given = {"tf_transform": tf_transform, "length_norm": length_norm, "weight_norm": weight_norm}
        complement = {COMPLEMENT_KEYS[k]: bool(model_default(model, k, v, k == "weight_norm")) for k, v in given.items()}
    estimator = make_model(model, alpha=alpha, fisher=fisher, stack=stack, rate=rate, complement=complement,
                           **(knn or {}))
    default_rep = ("binary" if model in ("bernoulli", "fisher", "fisher-nb", "logistic")
                   else MODEL_DEFAULTS.get(model, {}).get("representation", "tf"))
    vectorizer = Vectorizer(representation or default_rep, min_df=min_df,
                            max_df=max_df, max_features=max_features, select=select, hashing=hashing)
    analyzer = analyzer_for(tokens, stem, language, stop_words, ngrams, char_ngrams, digit_prefixes)
    if context is None and grams is None:
        return SpamFilter(analyzer, vectorizer, estimator, calibrate=calibrate)
    if model != "fisher-nb":
        what = "a context model" if context is not None else "a byte 4-gram model"
        raise ConfigError(f"{what} is a side input of the fisher-nb stack, not of {model!r}")
    side = {}
    if context is not None:
        settings = {**CONTEXT, **context}
        unknown = set(settings) - set(CONTEXT)
        if unknown:
            raise ConfigError(f"unknown context model setting(s) {sorted(unknown)}; use {', '.join(CONTEXT)}")
        from .models.context import ByteContextModel
        side.update(context=ByteContextModel(**{k: settings[k] for k in ("order", "beta", "bits")}),
                    context_bytes=settings["max_bytes"])
    if grams is not None:
        settings = {**GRAMS, **grams}
        unknown = set(settings) - set(GRAMS)
        if unknown:
            raise ConfigError(f"unknown 4-gram model setting(s) {sorted(unknown)}; use {', '.join(GRAMS)}")
        side["grams"] = ByteGramLogistic(**settings)
    estimator.side_inputs = len(side) - ("context_bytes" in side)
    estimator.combiner_center = accurate_center(estimator)
    return SpamFilter(analyzer, vectorizer, estimator, calibrate=calibrate, **side)


def stack_for_rate(rate: float) -> dict:
    """The stack's parameters for a logistic learning rate: :data:`STACK`'s squashing with a logistic
    component at ``rate``, or for 0 the Fisher + NB stack as it was before the component existed."""
    return {**STACK, "logistic": float(rate)} if rate else {"logistic": 0.0, "squash": "clip"}


#: the settings ``spamkit cv`` / ``compare`` accept in a --config, and their types
CONFIG_KEYS = {"model": str, "tokens": str, "alpha": float, "representation": str, "min_df": int,
               "max_features": int, "select": str, "hashing": int, "stem": str, "stop_words": str,
               "ngrams": int, "calibrate": str, "strength": float, "prior": float, "min_dev": float,
               "max_clues": int, "k": int, "weights": str, "metric": str, "p": float, "rate": float,
               "char_ngrams": int, "tf_transform": "bool", "length_norm": "bool", "weight_norm": "bool",
               "digit_prefixes": "bool", "context": "bool", "context_bytes": int, "context_bits": int,
               "grams": "bool", "grams_bytes": int}
_FISHER_KEYS = ("strength", "prior", "min_dev", "max_clues")
_KNN_KEYS = ("k", "weights", "metric", "p")


def parse_config(text: str) -> dict:
    """``model=fisher,min_dev=0.3`` -> build_filter keyword arguments (on top of :data:`BEST`).

    >>> parse_config("model=multinomial,tokens=words,alpha=0.5")
    {'model': 'multinomial', 'tokens': 'words', 'alpha': 0.5}
    """
    settings: dict = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = part.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or key not in CONFIG_KEYS:
            raise ConfigError(f"bad setting {part!r}; use KEY=VALUE with KEY one of {', '.join(CONFIG_KEYS)}")
        kind = CONFIG_KEYS[key]
        if kind == "bool":
            flag = value.strip().lower()
            if flag not in ("true", "false", "yes", "no", "1", "0"):
                raise ConfigError(f"{key} needs true or false, got {value!r}")
            settings[key] = flag in ("true", "yes", "1")
            continue
        try:
            settings[key] = kind(value.strip())
        except ValueError:
            raise ConfigError(f"{key} needs a {kind.__name__}, got {value!r}") from None
    return settings


def filter_from_config(settings: dict) -> SpamFilter:
    """An untrained filter: :data:`BEST` with the model's own best settings (:data:`MODEL_DEFAULTS`)
    and then ``settings`` on top (see :func:`parse_config`)."""
    model = settings.get("model", BEST["model"])
    merged = {**BEST, **MODEL_DEFAULTS.get(model, {}), **settings}
    merged["grams"] = settings.get("grams", bool(model_default(model, "grams", None, False)))
    kwargs = {k: v for k, v in merged.items() if k not in _FISHER_KEYS + _KNN_KEYS}
    fisher = {k: merged[k] for k in _FISHER_KEYS if k in merged}
    knn = {k: merged[k] for k in _KNN_KEYS if k in merged}
    if fisher:
        kwargs["fisher"] = fisher
    if knn:
        kwargs["knn"] = knn
    if "rate" in merged:
        kwargs["stack"] = stack_for_rate(merged["rate"])
    context = kwargs.pop("context", False)
    given = {key: kwargs.pop(f"context_{key}") for key in ("bytes", "bits") if f"context_{key}" in kwargs}
    if given and not context:
        raise ConfigError("context_bytes and context_bits set the context model: add context=true")
    if context:
        kwargs["context"] = {("max_bytes" if k == "bytes" else k): v for k, v in given.items()}
    grams = kwargs.pop("grams", False)
    grams_bytes = kwargs.pop("grams_bytes", None)
    if grams_bytes is not None and not grams:
        raise ConfigError("grams_bytes sets the byte 4-gram model: add grams=true")
    if grams:
        kwargs["grams"] = {"n_bytes": grams_bytes} if grams_bytes is not None else {}
    return build_filter(**kwargs)


class FilterClassifier(ClassifierMixin, Estimator):
    """A whole filter -- tokens, features, model -- as one scikit-learn classifier over raw
    messages: what :func:`build_filter` makes from these same settings, fitted on ``X`` (a list
    of messages as ``bytes`` or ``str``) and ``y`` (their labels). It is what a
    ``Pipeline``, ``GridSearchCV`` or ``cross_val_score`` takes: ``get_params``/``set_params``
    are the settings (so a grid searches over models, tokens and rates as over any parameter),
    ``predict``, ``predict_proba`` and ``score`` (accuracy) work on raw messages, and
    :attr:`filter_` is the fitted :class:`~spamkit.spamfilter.SpamFilter` (save it, explain
    with it, filter mail with it). The defaults are :data:`BEST`'s, spamkit's best filter
    (``grams="auto"``: the byte 4-gram side input where the model's defaults have it).

    >>> clf = FilterClassifier(model="multinomial", tokens="words")
    >>> texts = ["cheap pills now", "lunch at noon", "pills, cheap offer", "noon meeting"] * 3
    >>> clf.fit(texts, ["spam", "ham", "spam", "ham"] * 3).predict(["cheap offer"]).tolist()
    ['spam']
    """

    def __init__(self, model="fisher-nb", tokens="mail", alpha=None, representation=None, min_df=None,
                 max_df=1.0, max_features=None, select="frequency", hashing=None, stem="none",
                 language="english", stop_words="none", ngrams=1, knn=None, fisher=None, calibrate="none",
                 stack=None, rate=DEFAULT_RATE, char_ngrams=0, context=None, grams="auto"):
        self.model, self.tokens, self.alpha, self.representation = model, tokens, alpha, representation
        self.min_df, self.max_df, self.max_features, self.select = min_df, max_df, max_features, select
        self.hashing, self.stem, self.language, self.stop_words = hashing, stem, language, stop_words
        self.ngrams, self.knn, self.fisher, self.calibrate, self.stack = ngrams, knn, fisher, calibrate, stack
        self.rate, self.char_ngrams, self.context, self.grams = rate, char_ngrams, context, grams

    def fit(self, X, y) -> "FilterClassifier":
        """Build the filter from the settings and train it on the messages ``X`` labelled ``y``."""
        messages = list(X)
        if len(messages) != len(y):
            raise ConfigError(f"{len(messages)} messages but {len(y)} labels")
        settings = self.get_params(deep=False)
        if isinstance(settings["grams"], str) and settings["grams"] == "auto":     # the model's own default
            settings["grams"] = {} if MODEL_DEFAULTS.get(self.model, {}).get("grams") else None
        self.filter_ = build_filter(**settings).fit(messages, list(y))
        self.classes_ = self.filter_.classes_
        return self

    def _fitted(self) -> "SpamFilter":
        if not hasattr(self, "filter_"):
            raise ConfigError("this FilterClassifier is not fitted yet: call fit(messages, labels) first")
        return self.filter_

    def predict_proba(self, X) -> "np.ndarray":
        """P(class | message) for each message, columns in :attr:`classes_`' order."""
        return self._fitted().predict_proba(list(X))

    def predict(self, X) -> "np.ndarray":
        """The most probable class of each message (the filter's costs, if any, are not applied)."""
        proba = self.predict_proba(X)
        return self.classes_[proba.argmax(axis=1)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False           # a list of messages, not a table
        tags.input_tags.string = True
        tags.non_deterministic = False
        return tags
