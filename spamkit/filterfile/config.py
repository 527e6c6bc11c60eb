"""Settings to an untrained filter: the one registry of names and spamkit's defaults.

The names a user can choose (models, token schemes, representations, calibrations, kNN
metrics and weights, stemmers), spamkit's best filter (:data:`BEST`, :data:`STACK`), and
the functions that build a :class:`~spamkit.filterfile.spamfilter.SpamFilter` from them:
:func:`build_filter` (the options of ``spamkit train``) and :func:`filter_from_config`
(the ``KEY=VALUE`` settings of ``spamkit cv`` / ``compare``). Model classes by name are
:mod:`spamkit.models.registry`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from ..common.errors import ConfigError, check_choice
from ..models.base import ClassifierMixin, Estimator
from ..features.vectorizer import Vectorizer
from ..models.registry import make_model
from ..common.names import (CALIBRATIONS, COMPLEMENT_KEYS, DEFAULT_MODEL, DEFAULT_RATE, FISHER_MODEL, METRICS,
                    MODEL_DEFAULTS, MODEL_NAMES, REPRESENTATIONS, SELECTIONS, STACK_MODEL, TOKENS, WEIGHTS,
                    model_default)
from ..models.bytegrams import GRAM_BITS, GRAM_BYTES, GRAM_FOLDS, GRAM_RATE, ByteGramLogistic
from ..models.combiner import accurate_center
from ..models.stack import BEST_STACK
from .spamfilter import SpamFilter
from ..text import analyzer_for, make_analyzer
from ..text.stem import SNOWBALL_LANGUAGES, STEMMERS

if TYPE_CHECKING:                                   # annotations only: the module needs no NumPy itself
    import numpy as np

__all__ = ["MODELS", "TOKENS", "BEST", "CONTEXT", "GRAMS", "KNN_BEST", "MODEL_DEFAULTS", "STACK", "DEFAULT_RATE", "CALIBRATIONS", "REPRESENTATIONS", "SELECTIONS",
           "STEMMERS", "SNOWBALL_LANGUAGES", "METRICS", "WEIGHTS", "CONFIG_KEYS", "make_analyzer", "build_filter",
           "parse_config", "filter_from_config", "stack_for_rate", "model_default", "FilterSettings"]

MODELS = MODEL_NAMES




#: the settings of spamkit's best filter, chosen on trec07p-dev, Enron and SMS (docs/results.md, "Beating bogofilter"),
#: with the byte 4-gram regression as a side input, chosen on long streams as well (spamkit.common.names.MODEL_DEFAULTS)
BEST = {"model": DEFAULT_MODEL, "tokens": "mail", **({"grams": {}} if MODEL_DEFAULTS[DEFAULT_MODEL]["grams"] else {})}

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
#: winner's rate and table, 3,500 bytes of each raw message; its held-out scores for the combiner
#: from 2 folds (spamkit.common.names.GRAM_FOLDS)
GRAMS = {"n_bytes": GRAM_BYTES, "bits": GRAM_BITS, "rate": GRAM_RATE, "folds": GRAM_FOLDS}


def _frozen(value):
    """A settings value as the frozen object keeps it: a mapping read-only, anything else as is."""
    return MappingProxyType(dict(value)) if isinstance(value, (dict, MappingProxyType)) else value


def _plain(value):
    """A settings value as JSON and the models take it: a read-only mapping as a dict."""
    return {k: _plain(v) for k, v in value.items()} if isinstance(value, MappingProxyType) else value


@dataclass(frozen=True)
class FilterSettings:
    """Every choice that makes an untrained filter, as one frozen value: built from the command
    line's options (``spamkit train``), from ``KEY=VALUE`` settings (:meth:`from_config`: ``spamkit
    cv``/``compare``) or from a scikit-learn estimator's parameters
    (:class:`FilterClassifier`); :meth:`build` makes the filter and :meth:`record` is what its
    file keeps of how it was made. A setting left ``None`` takes the model's own best value
    (:data:`MODEL_DEFAULTS`; :meth:`resolved` fills them in).

    ``fisher``: RobinsonFisher's parameters (strength, prior, min_dev, max_clues) for the models
    built on it; ``stack``: FisherNBStack's own (default :func:`stack_for_rate` of ``rate``);
    ``rate``: the logistic learning rate (the stack's component, or ``model="logistic"``);
    ``knn``: KNNClassifier's (over :data:`KNN_BEST`) and ``condense`` ("none", "condense",
    "edit"); ``tf_transform``, ``length_norm``, ``weight_norm``: complement NB's transforms
    (Rennie et al. 2003); ``context``: with ``model="fisher-nb"``, a byte context model per class
    as a side input (``{}``: :data:`CONTEXT`); ``grams``: the byte 4-gram regression as a side
    input (``{}``: :data:`GRAMS`; ``"auto"``: where the model's defaults have it).

    >>> FilterSettings(model="multinomial", tokens="words").resolved().alpha     # MODEL_DEFAULTS
    0.01
    >>> FilterSettings(model="fisher", grams="auto").resolved().grams is None
    True
    """

    model: str = DEFAULT_MODEL
    tokens: str | None = None
    alpha: float | None = None
    representation: str | None = None
    min_df: int | None = None
    max_df: float = 1.0
    max_features: int | None = None
    select: str = "frequency"
    hashing: int | None = None
    stem: str = "none"
    language: str = "english"
    stop_words: str = "none"
    ngrams: int = 1
    char_ngrams: int = 0
    digit_prefixes: bool = False
    calibrate: str | None = None
    fisher: Any = None                      # the mappings below are frozen (MappingProxyType)
    stack: Any = None
    rate: float = DEFAULT_RATE
    knn: Any = None
    condense: str = "none"
    tf_transform: bool | None = None
    length_norm: bool | None = None
    weight_norm: bool | None = None
    context: Any = None
    grams: Any = "auto"                     # "auto", a mapping of settings, or None

    def __post_init__(self):
        for name in ("fisher", "stack", "knn", "context", "grams"):
            object.__setattr__(self, name, _frozen(getattr(self, name)))
        check_choice(self.model, MODEL_NAMES, "model")
        if (self.context is not None or isinstance(self.grams, MappingProxyType)) and self.model != STACK_MODEL:
            what = "a context model" if self.context is not None else "a byte 4-gram model"
            raise ConfigError(f"{what} is a side input of the fisher-nb stack, not of {self.model!r}")
        if self.condense not in ("none", "condense", "edit"):
            raise ConfigError(f"condense must be none, condense or edit, got {self.condense!r}")

    @classmethod
    def from_config(cls, settings: dict) -> "FilterSettings":
        """:data:`BEST` with the model's own best settings (:data:`MODEL_DEFAULTS`) and then the
        ``KEY=VALUE`` ``settings`` on top (see :func:`parse_config`)."""
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
        kwargs["context"] = {("max_bytes" if k == "bytes" else k): v for k, v in given.items()} if context else None
        grams = kwargs.pop("grams", False)
        options = {"grams_bytes": "n_bytes", "grams_folds": "folds"}
        named = [option for option in options if option in kwargs]
        if named and not grams:
            raise ConfigError(f"{' and '.join(named)} {'set' if len(named) > 1 else 'sets'} the byte 4-gram model: "
                              "add grams=true")
        kwargs["grams"] = {options[option]: kwargs.pop(option) for option in named} if grams else None
        return cls(**kwargs)

    def resolved(self) -> "FilterSettings":
        """The same settings with every ``None`` (and ``grams="auto"``) replaced by what it means
        for this model: its tokens, alpha, min_df, representation and calibration, its side
        models' full settings, its stack and kNN parameters, complement NB's transforms."""
        model = self.model
        grams = self.grams
        if isinstance(grams, str) and grams == "auto":
            grams = {} if model_default(model, "grams", None, False) else None
        complement: dict[str, Any] = {}
        if model == "complement":
            given = {"tf_transform": self.tf_transform, "length_norm": self.length_norm,
                     "weight_norm": self.weight_norm}
            complement = {k: bool(model_default(model, k, v, k == "weight_norm")) for k, v in given.items()}
        context = self.context
        if context is not None:
            unknown = set(context) - set(CONTEXT)
            if unknown:
                raise ConfigError(f"unknown context model setting(s) {sorted(unknown)}; use {', '.join(CONTEXT)}")
            context = {**CONTEXT, **context}
        if grams is not None:
            unknown = set(grams) - set(GRAMS)
            if unknown:
                raise ConfigError(f"unknown 4-gram model setting(s) {sorted(unknown)}; use {', '.join(GRAMS)}")
            grams = {**GRAMS, **grams}
        return replace(
            self, tokens=self.tokens or MODEL_DEFAULTS.get(model, {}).get("tokens", "mail"),
            alpha=model_default(model, "alpha", self.alpha, 1.0), min_df=model_default(model, "min_df", self.min_df, 1),
            representation=self.representation or (
                "binary" if model in ("bernoulli", FISHER_MODEL, STACK_MODEL, "logistic")
                else MODEL_DEFAULTS.get(model, {}).get("representation", "tf")),
            calibrate=self.calibrate or ("platt" if model == FISHER_MODEL else "none"),
            stack=stack_for_rate(self.rate) if self.stack is None and model == STACK_MODEL else self.stack,
            knn={**KNN_BEST, **(self.knn or {})} if model == "knn" else None, context=context, grams=grams,
            **complement)

    def build(self) -> SpamFilter:
        """An untrained :class:`~spamkit.filterfile.spamfilter.SpamFilter` of these settings."""
        r = self.resolved()
        if r.tokens is None or r.representation is None or r.calibrate is None or r.alpha is None:
            raise ConfigError(f"settings left unresolved: {r}")     # resolved() sets every one of them
        complement = None
        if r.model == "complement":
            complement = {COMPLEMENT_KEYS[k]: getattr(r, k) for k in ("tf_transform", "length_norm", "weight_norm")}
        estimator = make_model(r.model, alpha=r.alpha, fisher=_plain(r.fisher), stack=_plain(r.stack), rate=r.rate,
                               complement=complement, **(_plain(r.knn) or {}))
        vectorizer = Vectorizer(r.representation, min_df=r.min_df, max_df=r.max_df, max_features=r.max_features,
                                select=r.select, hashing=r.hashing)
        analyzer = analyzer_for(r.tokens, r.stem, r.language, r.stop_words, r.ngrams, r.char_ngrams,
                                r.digit_prefixes)
        side: dict[str, Any] = {}
        if r.context is not None:
            from ..models.context import ByteContextModel
            side.update(context=ByteContextModel(**{k: r.context[k] for k in ("order", "beta", "bits")}),
                        context_bytes=r.context["max_bytes"])
        if r.grams is not None:
            side["grams"] = ByteGramLogistic(**_plain(r.grams))
        if side:
            estimator.side_inputs = len(side) - ("context_bytes" in side)
            estimator.combiner_center = accurate_center(estimator)
        spam_filter = SpamFilter(analyzer, vectorizer, estimator, calibrate=r.calibrate, **side)
        if r.model == "knn" and r.condense != "none":
            spam_filter.condense_mode = r.condense
        return spam_filter

    def record(self) -> dict:
        """What a filter file keeps of how the filter was made (the resolved settings that apply
        to its model, as JSON)."""
        r = self.resolved()
        out: dict[str, Any] = {"model": r.model, "tokens": r.tokens, "calibrate": r.calibrate}
        if r.model in (FISHER_MODEL, STACK_MODEL):
            out["fisher"] = _plain(r.fisher) or {}
        if r.model in (STACK_MODEL, "logistic"):
            out["rate"] = r.rate
        out.update(alpha=r.alpha, representation=r.representation, min_df=r.min_df, max_features=r.max_features,
                   select=r.select, hashing=r.hashing, stem=r.stem, language=r.language, stop_words=r.stop_words,
                   ngrams=r.ngrams)
        if r.char_ngrams:
            out["char_ngrams"] = r.char_ngrams
        if r.digit_prefixes:
            out["digit_prefixes"] = True
        if r.context is not None:
            out["context"] = _plain(r.context)
        if r.grams is not None:
            out["grams"] = _plain(r.grams)
        if r.model == "complement":
            out["complement"] = {k: getattr(r, k) for k in ("tf_transform", "length_norm", "weight_norm")}
        if r.model == "knn":
            out["knn"] = {**_plain(r.knn), "condense": r.condense}
        return out


def build_filter(model: str = "multinomial", alpha: float | None = None, representation: str | None = None,
                 min_df=None, max_df=1.0, max_features: int | None = None, select: str = "frequency",
                 hashing: int | None = None, stem: str = "none", language: str = "english",
                 stop_words: str = "none", ngrams: int = 1, knn: dict | None = None,
                 tokens: str = "words", fisher: dict | None = None, calibrate: str = "none",
                 stack: dict | None = None, rate: float = DEFAULT_RATE, char_ngrams: int = 0,
                 tf_transform: bool | None = None, length_norm: bool | None = None,
                 weight_norm: bool | None = None, digit_prefixes: bool = False,
                 context: dict | None = None, grams: dict | None = None) -> "SpamFilter":
    """An untrained :class:`SpamFilter` of these settings: :meth:`FilterSettings.build` (see there
    for each), with this function's own defaults (multinomial NB on words, no side models).
    ``build_filter(**BEST)`` is spamkit's best filter.
    """
    return FilterSettings(model=model, alpha=alpha, representation=representation, min_df=min_df, max_df=max_df,
                          max_features=max_features, select=select, hashing=hashing, stem=stem, language=language,
                          stop_words=stop_words, ngrams=ngrams, knn=knn, tokens=tokens, fisher=fisher,
                          calibrate=calibrate, stack=stack, rate=rate, char_ngrams=char_ngrams,
                          tf_transform=tf_transform, length_norm=length_norm, weight_norm=weight_norm,
                          digit_prefixes=digit_prefixes, context=context, grams=grams).build()


def stack_for_rate(rate: float) -> dict:
    """The stack's parameters for a logistic learning rate: :data:`STACK`'s squashing with a logistic
    component at ``rate``, or for 0 the Fisher + NB stack as it was before the component existed."""
    return {**STACK, "logistic": float(rate)} if rate else {"logistic": 0.0, "squash": "clip"}


#: the settings ``spamkit cv`` / ``compare`` accept in a --config, and their types
CONFIG_KEYS: dict[str, Any] = {"model": str, "tokens": str, "alpha": float, "representation": str, "min_df": int,
               "max_features": int, "select": str, "hashing": int, "stem": str, "stop_words": str,
               "ngrams": int, "calibrate": str, "strength": float, "prior": float, "min_dev": float,
               "max_clues": int, "k": int, "weights": str, "metric": str, "p": float, "rate": float,
               "char_ngrams": int, "tf_transform": "bool", "length_norm": "bool", "weight_norm": "bool",
               "digit_prefixes": "bool", "context": "bool", "context_bytes": int, "context_bits": int,
               "grams": "bool", "grams_bytes": int, "grams_folds": int}
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
    """An untrained filter of ``KEY=VALUE`` settings (:meth:`FilterSettings.from_config`)."""
    return FilterSettings.from_config(settings).build()


class FilterClassifier(ClassifierMixin, Estimator):
    """A whole filter -- tokens, features, model -- as one scikit-learn classifier over raw
    messages: what :class:`FilterSettings` makes from these same settings (its parameters are
    exactly the settings' fields), fitted on ``X`` (a list
    of messages as ``bytes`` or ``str``) and ``y`` (their labels). It is what a
    ``Pipeline``, ``GridSearchCV`` or ``cross_val_score`` takes: ``get_params``/``set_params``
    are the settings (so a grid searches over models, tokens and rates as over any parameter),
    ``predict``, ``predict_proba`` and ``score`` (accuracy) work on raw messages, and
    :attr:`filter_` is the fitted :class:`~spamkit.filterfile.spamfilter.SpamFilter` (save it, explain
    with it, filter mail with it). The defaults are :data:`BEST`'s, spamkit's best filter
    (``grams="auto"``: the byte 4-gram side input where the model's defaults have it).

    >>> clf = FilterClassifier(model="multinomial", tokens="words")
    >>> texts = ["cheap pills now", "lunch at noon", "pills, cheap offer", "noon meeting"] * 3
    >>> clf.fit(texts, ["spam", "ham", "spam", "ham"] * 3).predict(["cheap offer"]).tolist()
    ['spam']
    """

    def __init__(self, model=DEFAULT_MODEL, tokens="mail", alpha=None, representation=None, min_df=None,
                 max_df=1.0, max_features=None, select="frequency", hashing=None, stem="none",
                 language="english", stop_words="none", ngrams=1, knn=None, fisher=None, calibrate="none",
                 stack=None, rate=DEFAULT_RATE, char_ngrams=0, digit_prefixes=False, condense="none",
                 tf_transform=None, length_norm=None, weight_norm=None, context=None, grams="auto"):
        self.model, self.tokens, self.alpha, self.representation = model, tokens, alpha, representation
        self.min_df, self.max_df, self.max_features, self.select = min_df, max_df, max_features, select
        self.hashing, self.stem, self.language, self.stop_words = hashing, stem, language, stop_words
        self.ngrams, self.knn, self.fisher, self.calibrate, self.stack = ngrams, knn, fisher, calibrate, stack
        self.rate, self.char_ngrams, self.digit_prefixes, self.condense = rate, char_ngrams, digit_prefixes, condense
        self.tf_transform, self.length_norm, self.weight_norm = tf_transform, length_norm, weight_norm
        self.context, self.grams = context, grams

    def fit(self, X, y) -> "FilterClassifier":
        """Build the filter from the settings and train it on the messages ``X`` labelled ``y``."""
        messages = list(X)
        if len(messages) != len(y):
            raise ConfigError(f"{len(messages)} messages but {len(y)} labels")
        self.filter_ = FilterSettings(**self.get_params(deep=False)).build().fit(messages, list(y))
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
