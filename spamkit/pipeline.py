"""The :class:`SpamFilter` facade and the compositions that commands call.

Owns no format and no formula: it runs the stages in order (corpus reader ->
``parse_message`` -> ``Analyzer`` -> ``Vectorizer`` -> model) and collects what
they report. ``spamkit.cli`` calls only this module, ``evaluation``,
``persist`` and ``report``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.metadata
import platform
import time
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from . import __version__
from .corpus import Corpus, LabelledMessage, Unread, iter_corpora, require_classes
from .corpus.split import holdout_ids
from .calibration import IsotonicCalibration, PlattScaling, calibration_from_dict
from .decision import UNSURE_NAME, CostMatrix, FamiliarityGuard
from .errors import ConfigError, CorpusError, ModelFormatError, NotFittedError
from .features import REPRESENTATIONS, SELECTIONS, Vectorizer, columns_per_row
from .labels import HAM_NAME, SPAM_NAME
from .message import Message, parse_message
from .metrics import binary_report, multiclass_report
from .models import BernoulliNB, FisherNBStack, KNNClassifier, MultinomialNB, RobinsonFisher
from .models.logistic import DEFAULT_RATE
from .models.registry import MODEL_NAMES, make_model
from .models.stack import BEST_STACK
from .persist import load_filter, save_filter
from .text import Analyzer
from .models.knn import METRICS, WEIGHTS
from .text.stem import SNOWBALL_LANGUAGES, STEMMERS

MODELS = MODEL_NAMES
#: how messages become tokens: "mail" (Analyzer.mail(), every header field, case kept) or
#: "words" (lower-cased words of the body and of a few header fields)
TOKENS = ("mail", "words")
#: how a filter's scores become probabilities: as the model gives them, Platt-scaled or
#: isotonic-regressed on cross-validated log-odds (see spamkit.calibration)
CALIBRATIONS = ("none", "platt", "isotonic")
#: the settings of spamkit's best filter, chosen on trec07p-dev, Enron and SMS (docs/results.md, "Beating bogofilter")
BEST = {"model": "fisher-nb", "tokens": "mail"}
#: the stack's own defaults (a logistic third component, sign-log squashing; see spamkit.models.stack)
STACK = BEST_STACK
__all__ = ["SpamFilter", "CostMatrix", "make_model", "held_out_costs", "build_filter", "make_analyzer", "train_filter", "evaluate_filter", "tune_filter", "online_filter", "survey_corpus",
           "MODELS", "TOKENS", "BEST", "STACK", "DEFAULT_RATE", "CALIBRATIONS", "learn_messages", "stack_for_rate", "cross_validated_log_odds", "compare_configs", "parse_config", "REPRESENTATIONS", "SELECTIONS", "STEMMERS", "SNOWBALL_LANGUAGES", "METRICS", "WEIGHTS"]


def library_versions() -> dict:
    """Versions of the libraries a result depends on, recorded in models and reports."""
    versions = {"spamkit": __version__, "python": platform.python_version()}
    for name in ("numpy", "scipy", "scikit-learn", "nltk", "click"):
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def make_analyzer(tokens: str = "words", **settings) -> Analyzer:
    """The analyzer of a token scheme (:data:`TOKENS`), with Analyzer settings on top."""
    if tokens == "mail":
        return Analyzer.mail(**settings)
    if tokens == "words":
        return Analyzer(**settings)
    raise ConfigError(f"unknown token scheme {tokens!r}; choose one of {', '.join(TOKENS)}")


def build_filter(model: str = "multinomial", alpha: float = 1.0, representation: str | None = None,
                 min_df=1, max_df=1.0, max_features: int | None = None, select: str = "frequency",
                 hashing: int | None = None, stem: str = "none", language: str = "english",
                 stop_words: str = "none", ngrams: int = 1, knn: dict | None = None,
                 tokens: str = "words", fisher: dict | None = None, calibrate: str = "none",
                 stack: dict | None = None, rate: float = DEFAULT_RATE, char_ngrams: int = 0) -> "SpamFilter":
    """An untrained :class:`SpamFilter` from the options ``spamkit train`` offers.

    ``knn``: KNNClassifier parameters for ``model="knn"`` (k, weights, metric, tau, epsilon,
    memory_limit). kNN compares TF vectors by cosine by default (representation "tf").
    ``fisher``: RobinsonFisher parameters for ``model="fisher"``. ``tokens``: "mail" or
    "words" (see :data:`TOKENS`). ``stack``: FisherNBStack's own parameters (default
    :data:`STACK`); ``rate``: the learning rate of ``model="logistic"``. ``char_ngrams``: also
    character n-grams of the body (Analyzer ``char_ngrams``; 0 = off).
    ``build_filter(**BEST)`` is spamkit's best filter.
    """
    estimator = make_model(model, alpha=alpha, fisher=fisher, stack=stack, rate=rate, **(knn or {}))
    default_rep = "binary" if model in ("bernoulli", "fisher", "fisher-nb", "logistic") else "tf"
    vectorizer = Vectorizer(representation or default_rep, min_df=min_df,
                            max_df=max_df, max_features=max_features, select=select, hashing=hashing)
    analyzer = make_analyzer(tokens, stemmer=stem, language=language, stop_words=stop_words, ngram_max=ngrams,
                             char_ngrams=char_ngrams)
    return SpamFilter(analyzer, vectorizer, estimator, calibrate=calibrate)


class SpamFilter:
    """Analyzer + vectorizer + model: raw messages in, class probabilities out.

    Parameters
    ----------
    analyzer : Analyzer, optional
    vectorizer : Vectorizer, optional
        Default: raw counts (``"tf"``) for the multinomial model, ``"binary"`` for Bernoulli.
    model : estimator, optional
        Default: :class:`~spamkit.models.MultinomialNB` with Laplace smoothing.

    Examples
    --------
    >>> f = SpamFilter().fit([b"Subject: cheap pills\\n\\nbuy cheap pills now",
    ...                       b"Subject: lunch\\n\\nlunch at noon?"], y=["spam", "ham"])
    >>> f.classes_.tolist(), bool(f.p_spam([b"Subject: pills\\n\\ncheap"])[0] > 0.5)
    (['ham', 'spam'], True)
    """

    def __init__(self, analyzer: Analyzer | None = None, vectorizer: Vectorizer | None = None, model=None,
                 calibrate: str = "none"):
        if calibrate not in CALIBRATIONS:
            raise ConfigError(f"calibrate must be one of {', '.join(CALIBRATIONS)}, got {calibrate!r}")
        self.calibrate = calibrate
        self.calibration: PlattScaling | IsotonicCalibration | None = None
        self.analyzer = analyzer if analyzer is not None else Analyzer()
        self.model = model if model is not None else MultinomialNB()
        if vectorizer is None:
            vectorizer = Vectorizer("binary" if isinstance(self.model, (BernoulliNB, RobinsonFisher, FisherNBStack))
                                    else "tf")
        self.vectorizer = vectorizer
        self.parse_fallbacks = Counter()
        self.training: dict = {}
        #: message_key -> label of every message ``learn`` added (so none is learned twice)
        self.learned: dict = {}

    # ------------------------------------------------------------------ stages

    def parse(self, item) -> Message:
        """A :class:`Message` from a LabelledMessage, raw bytes, text or a Message."""
        if isinstance(item, Message):
            return item
        if isinstance(item, LabelledMessage):
            msg = parse_message(item.raw, item.kind)
        elif isinstance(item, (bytes, bytearray)):
            msg = parse_message(bytes(item))
        elif isinstance(item, str):
            msg = parse_message(item.encode("utf-8"), kind="text")
        else:
            raise ConfigError(f"cannot classify a {type(item).__name__}; pass messages as bytes, str or "
                              "LabelledMessage")
        if msg.defects:
            self.parse_fallbacks.update({d.split(":", 1)[0] for d in msg.defects})
        return msg

    def tokens(self, item) -> list[str]:
        return self.analyzer(self.parse(item))

    def transform(self, items):
        """The feature matrix of messages (unknown tokens ignored)."""
        self._check_fitted()
        return self.vectorizer.transform(self.tokens(m) for m in items)

    # ------------------------------------------------------------------ training

    def fit(self, items, y=None, progress=None) -> "SpamFilter":
        """Learn from messages in one streaming pass; labels from ``y`` or from each LabelledMessage."""
        labels: list = []
        ids: list = []
        distinct: list = []
        explicit = list(y) if y is not None else None

        def token_stream():
            for i, item in enumerate(items):
                if explicit is not None:
                    label = explicit[i]
                elif isinstance(item, LabelledMessage):
                    label = item.label
                    if label is None:
                        raise CorpusError(f"{item.source}: message has no class; name the class of each "
                                          "mailbox with --ham, --spam or --class")
                else:
                    raise ConfigError("labels are needed: pass y=[...] or LabelledMessage objects")
                labels.append(label)
                ids.append(item.id if isinstance(item, LabelledMessage) else str(i))
                if progress is not None:
                    progress(item)
                tokens = self.tokens(item)
                distinct.append(len(set(tokens)))
                yield tokens

        self.parse_fallbacks = Counter()
        stream = token_stream()
        if self.vectorizer.select == "ig" and self.vectorizer.hashing is None:
            tokens = list(stream)                 # information gain needs the labels with the counts
            X = self.vectorizer.fit_transform(tokens, np.asarray(labels))
        else:
            X = self.vectorizer.fit_transform(stream)
        y_arr = np.asarray(labels)
        require_classes(Counter(y_arr.tolist()), "training data")
        if isinstance(self.model, (RobinsonFisher, FisherNBStack)) and len(set(y_arr.tolist())) != 2:
            raise ConfigError(f"the fisher models separate two classes; the training data has "
                              f"{len(set(y_arr.tolist()))} ({', '.join(sorted(map(str, set(y_arr.tolist()))))}): "
                              "use --model multinomial (or bernoulli, knn) for more")
        self.tuning = None
        if isinstance(self.model, KNNClassifier):
            if self.model.k == "auto":
                self.tuning = self._tune_k(X, y_arr)
            self.model.fit(X, y_arr, ids=ids)
            if self.condense_mode:
                self.condensed = self.model.condense(edit=self.condense_mode == "edit")
        else:
            self.model.fit(X, y_arr)
        self.classes_ = self.model.classes_
        self.calibration = None
        if self.calibrate != "none":
            self.calibration = self._fit_calibration(X, y_arr)
        self._fit_guard(X, np.asarray(distinct, dtype=np.float64))
        return self

    # ------------------------------------------------------------------ familiarity

    #: the familiarity guard (spamkit.decision.FamiliarityGuard) of a ham/spam filter, or None
    guard = None
    #: hashed filters: which columns training saw (vocabulary filters know only what they saw)
    seen_columns = None

    def known_without_self(self, df) -> np.ndarray:
        """1.0 for the columns a training message would find known if it were left out: those
        in at least ``min_df`` + 1 training messages (2 when any token is kept)."""
        min_df = self.vectorizer.min_df if isinstance(self.vectorizer.min_df, (int, np.integer)) else 1
        return (np.asarray(df) >= max(int(min_df), 1) + 1).astype(np.float64)

    def _fit_guard(self, X, distinct: np.ndarray) -> None:
        df = self.vectorizer.df_
        self.fit_guard(df, columns_per_row(X, self.known_without_self(df)), distinct)

    def fit_guard(self, df, known, distinct) -> None:
        """The guard's reference: each training message's leave-one-out familiarity, ``known`` /
        ``distinct`` (its tokens some *other* training message has, over its distinct tokens).

        ``df``: the document frequency of every column (hashed filters remember which columns
        training saw: ``df`` > 0). Only ham/spam filters get a guard.
        """
        self.guard = None
        self.seen_columns = np.asarray(df) > 0 if self.vectorizer.hashing is not None else None
        if sorted(map(str, self.classes_)) != [HAM_NAME, SPAM_NAME]:
            return
        known, distinct = np.asarray(known, dtype=np.float64), np.asarray(distinct, dtype=np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            familiarity = np.where(distinct > 0, known / distinct, 1.0)
        self.guard = FamiliarityGuard.from_training(familiarity)

    def familiarity(self, token_lists, X) -> np.ndarray:
        """The share of each message's distinct tokens that the filter saw in training."""
        distinct = np.fromiter((len(set(t)) for t in token_lists), dtype=np.float64, count=len(token_lists))
        if self.seen_columns is not None:
            known = columns_per_row(X, self.seen_columns)
        else:
            known = np.diff(X.indptr).astype(np.float64)     # a vocabulary has only seen tokens
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.minimum(np.where(distinct > 0, known / distinct, 1.0), 1.0)

    def score(self, items) -> tuple[np.ndarray, np.ndarray]:
        """``(class probabilities, familiarity)`` of messages: what :meth:`decide` needs."""
        self._check_fitted()
        token_lists = [self.tokens(m) for m in items]
        X = self.vectorizer.transform(token_lists)
        return np.exp(self.log_proba(X)), self.familiarity(token_lists, X)

    def _fit_calibration(self, X, y):
        """Platt scaling on out-of-fold log-odds (5-fold stratified cross-validation of the model)."""
        from .evaluation import cross_val_log_odds
        if len(self.classes_) != 2:
            raise ConfigError(f"calibration needs two classes, the training data has {len(self.classes_)}")
        method = IsotonicCalibration if self.calibrate == "isotonic" else PlattScaling
        return method().fit(cross_val_log_odds(self.model, X, y), y == self.classes_[1])

    #: for kNN: None, "condense" (Hart) or "edit" (Wilson editing, then Hart)
    condense_mode = None

    def _tune_k(self, X, y):
        from .evaluation import tune_knn
        params = {p: getattr(self.model, p) for p in ("metric", "tau", "epsilon", "memory_limit", "n_jobs")}
        folds = int(min(5, np.unique(y, return_counts=True)[1].min()))
        result = tune_knn(X, y, folds=max(folds, 2), **params)
        self.model.set_params(k=result.best_k, weights=result.best_weights)
        return result

    def learn(self, items, y) -> "SpamFilter":
        """Add messages to a fitted filter's counts (vocabulary fixed; hashing keeps every token)."""
        self._check_fitted()
        X = self.transform(items)
        self.model.partial_fit(X, np.asarray(y))
        self.saw(X)
        return self

    def saw(self, X) -> None:
        """Record the columns of learned rows as seen (hashed filters; see :meth:`familiarity`)."""
        if self.seen_columns is not None and X.nnz:
            self.seen_columns[X.indices] = True

    # ------------------------------------------------------------------ prediction

    def _check_fitted(self):
        if not hasattr(self, "classes_"):
            raise NotFittedError("this SpamFilter is not trained yet; call fit or load a filter file")

    def predict_proba(self, items) -> np.ndarray:
        """p(class | message), shape (n, n_classes), columns in ``classes_`` order."""
        return np.exp(self.log_proba(self.transform(items)))

    def predict(self, items) -> np.ndarray:
        if self.calibration is None:
            return self.model.predict(self.transform(items))
        return self.classes_[np.argmax(self.log_proba(self.transform(items)), axis=1)]

    def log_proba(self, X) -> np.ndarray:
        """log p(class | message) for rows of a feature matrix, after the calibration and the
        prior correction (:meth:`set_spam_rate`) if any."""
        return self.adjust_log_proba(self.model.predict_log_proba(X))

    def adjust_log_proba(self, lp: np.ndarray) -> np.ndarray:
        """The model's log-probabilities ``lp`` after the calibration and the prior correction (row by row)."""
        if self.calibration is not None:
            with np.errstate(invalid="ignore"):
                log_c0, log_c1 = self.calibration.log_proba(lp[:, 1] - lp[:, 0])
            lp = np.column_stack([log_c0, log_c1])
        if self._prior_shift:
            from scipy.special import log_expit
            s = self.spam_column
            with np.errstate(invalid="ignore"):
                z = lp[:, s] - lp[:, 1 - s] + self._prior_shift
            out = np.empty_like(lp)
            out[:, s], out[:, 1 - s] = log_expit(z), log_expit(-z)
            lp = out
        return lp

    #: log-odds added by the prior correction (0: none)
    _prior_shift = 0.0

    def training_spam_rate(self) -> float:
        """The share of spam the filter's probabilities assume: that of its training data."""
        counts = getattr(self.model, "class_count_", None)
        if counts is not None:
            return float(counts[self.spam_column] / np.sum(counts))
        per_class = self.training.get("per_class", {})
        total = sum(per_class.values())
        if not total or SPAM_NAME not in per_class:
            raise ConfigError("this filter does not record its training spam rate")
        return per_class[SPAM_NAME] / total

    def set_spam_rate(self, rate: float | None) -> "SpamFilter":
        """Correct P(spam) for a deployment spam rate different from the training rate (Bayes' rule:
        the log-odds move by logit(rate) - logit(training rate); :func:`spamkit.decision.correct_prior`).

        Uncalibrated Robinson/Fisher is refused: its indicator ignores the class prior, so there is
        no training prior to replace (calibrate it, or use fisher-nb).
        """
        self._check_fitted()
        if rate is None:
            self._prior_shift = 0.0
            return self
        if not 0.0 < rate < 1.0:
            raise ConfigError(f"the spam rate must be strictly between 0 and 1, got {rate}")
        if isinstance(self.model, RobinsonFisher) and self.calibration is None:
            raise ConfigError("an uncalibrated fisher filter ignores class priors, so its prior cannot be "
                              "corrected; train it with --calibrate platt (or use fisher-nb)")
        train = self.training_spam_rate()
        self._prior_shift = float(np.log(rate / (1 - rate)) - np.log(train / (1 - train)))
        return self

    @property
    def spam_column(self) -> int:
        """Column of ``"spam"`` in ``classes_`` (two-class filters only)."""
        self._check_fitted()
        classes = [str(c) for c in self.classes_]
        if SPAM_NAME not in classes:
            raise ConfigError(f"this filter's classes are {classes}; P(spam) needs a 'spam' class")
        return classes.index(SPAM_NAME)

    def p_spam(self, items) -> np.ndarray:
        """P(spam | message) for each message."""
        return self.predict_proba(items)[:, self.spam_column]

    def explain(self, item, n: int = 10) -> dict:
        """The tokens that pushed a message most towards each class.

        For two classes: each token's share of ``log p(x, spam) - log p(x, ham)``
        (its count times the difference of its per-class log-evidence); positive means
        towards spam. For more classes, the shares of the predicted class against the
        runner-up. Returns ``{"towards": [...], "against": [...], "classes": (a, b)}`` with
        ``(token, share)`` pairs, strongest first.
        """
        self._check_fitted()
        return self.explain_row(self.transform([item]), n)

    def explain_row(self, X, n: int = 10) -> dict:
        """:meth:`explain` for one row of features already computed."""
        if isinstance(self.model, KNNClassifier):
            neighbours = self.model.explain(X, min(n, self.model._fit_X.shape[0]))
            return {"neighbours": [{"id": i, "similarity" if self.model.metric in ("cosine", "jaccard")
                                    else "distance": m, "label": lab, "weight": w}
                                   for i, m, lab, w in neighbours]}
        jll = self.model.joint_log_likelihood(X)[0]
        order = np.argsort(-jll, kind="stable")
        if len(self.classes_) == 2 and SPAM_NAME in [str(c) for c in self.classes_]:
            a = self.spam_column
            b = 1 - a
        else:
            a, b = int(order[0]), int(order[1])
        idx, contrib = self.model.contributions(X)
        share = contrib[a] - contrib[b]
        ranked = np.argsort(-share, kind="stable")
        towards = [(self.vectorizer.term(int(idx[k])), float(share[k])) for k in ranked[:n] if share[k] > 0]
        against = [(self.vectorizer.term(int(idx[k])), float(share[k])) for k in ranked[::-1][:n] if share[k] < 0]
        return {"classes": (str(self.classes_[a]), str(self.classes_[b])), "towards": towards,
                "against": against}

    # ------------------------------------------------------------------ files

    # ------------------------------------------------------------------ decisions

    #: the decision layer: None (the most probable class) or a CostMatrix
    costs: CostMatrix | None = None

    def set_costs(self, costs: CostMatrix | None) -> "SpamFilter":
        """Decide by minimum expected cost from now on (checked against the filter's classes)."""
        self._check_fitted()
        self.costs = costs.align(self.classes_) if costs is not None else None
        return self

    #: a threshold on P(spam) chosen by cross-validation (``spamkit threshold --save``); None: not set
    threshold: float | None = None

    def decide(self, proba, familiarity=None) -> np.ndarray:
        """Decisions for rows of class probabilities: spam above a chosen ``threshold`` if one is set,
        else the cheapest under ``costs``, else the most probable class.

        With ``familiarity`` (:meth:`score`) and a decision layer that can say "unsure", the
        :class:`~spamkit.decision.FamiliarityGuard` turns "spam" into "unsure" for mail unlike
        the training mail (rows are taken as a stream, in order).
        """
        if self.threshold is not None:
            s = self.spam_column
            names = np.asarray([str(c) for c in self.classes_], dtype=object)
            return np.where(np.asarray(proba)[:, s] > self.threshold, names[s], names[1 - s])
        if self.costs is None:
            return np.asarray([str(c) for c in self.classes_], dtype=object)[np.argmax(proba, axis=1)]
        decisions = self.costs.decide(proba)
        if familiarity is not None and self.guard is not None and UNSURE_NAME in self.costs.decisions:
            decisions = self.guard.apply(decisions, familiarity)
        return decisions

    def verdict(self, raw: bytes) -> tuple[str, float]:
        """``(verdict, P(spam))`` of one raw message for a mail filter: verdict is "spam",
        "ham" or "unsure" (the decision layer's "unsure" row), any other class counting as ham."""
        proba, familiarity = self.score([raw])
        decision = str(self.decide(proba, familiarity)[0])
        p_spam = float(proba[0, self.spam_column])
        if decision in ("spam", "unsure"):
            return decision, p_spam
        return "ham", p_spam

    # ------------------------------------------------------------------ files

    def save(self, path) -> None:
        self._check_fitted()
        extra = {"decision": self.costs.as_dict()} if self.costs is not None else {}
        if self.calibration is not None:
            extra["calibration"] = self.calibration.as_dict()
        if self.threshold is not None:
            extra["threshold"] = {"p_spam": float(self.threshold), **getattr(self, "threshold_info", {})}
        if self.guard is not None:
            extra["familiarity"] = self.guard.as_dict()
        # 16-byte digests as rows of uint8 (a bytes dtype would drop trailing zero bytes)
        keys = np.frombuffer(b"".join(sorted(self.learned)), dtype=np.uint8).reshape(-1, 16)
        labels = np.array([str(self.learned[k]) for k in sorted(self.learned)], dtype=str)
        arrays = {"learned_keys": keys, "learned_labels": labels} if self.learned else {}
        if self.seen_columns is not None:
            arrays["seen_columns"] = np.packbits(self.seen_columns)
        save_filter(path, self.analyzer, self.vectorizer, self.model, self.training, extra, arrays)

    @classmethod
    def load(cls, path) -> "SpamFilter":
        analyzer, vectorizer, model, manifest = load_filter(path)
        f = cls(analyzer, vectorizer, model)
        f.classes_ = model.classes_
        f.training = manifest.get("training", {})
        f.manifest = manifest
        learned = manifest.get("filter_arrays", {})
        if "learned_keys" in learned:
            keys = learned["learned_keys"]
            if keys.ndim != 2 or keys.shape[1] != 16 or len(keys) != len(learned.get("learned_labels", [])):
                raise ModelFormatError(f"{path}: damaged list of learned messages")
            f.learned = dict(zip((row.tobytes() for row in keys), learned["learned_labels"].tolist()))
        threshold = manifest.get("extra", {}).get("threshold")
        if threshold:
            try:
                f.threshold = float(threshold["p_spam"])
                f.threshold_info = {k: v for k, v in threshold.items() if k != "p_spam"}
            except (KeyError, TypeError, ValueError):
                raise ModelFormatError(f"{path}: damaged threshold") from None
        calibration = manifest.get("extra", {}).get("calibration")
        if calibration:
            try:
                f.calibration = calibration_from_dict(calibration)
                f.calibrate = calibration["method"]
            except (KeyError, TypeError, ValueError, ConfigError) as exc:
                raise ModelFormatError(f"{path}: damaged calibration ({exc})") from None
        if "seen_columns" in learned:
            bits = learned["seen_columns"]
            if bits.dtype != np.uint8 or bits.ndim != 1 or len(bits) != (model.n_features_in_ + 7) // 8:
                raise ModelFormatError(f"{path}: damaged list of seen columns")
            f.seen_columns = np.unpackbits(bits)[:model.n_features_in_].astype(bool)
        familiar = manifest.get("extra", {}).get("familiarity")
        if familiar:
            try:
                f.guard = FamiliarityGuard.from_dict(familiar)
            except (KeyError, TypeError, ValueError, ConfigError) as exc:
                raise ModelFormatError(f"{path}: damaged familiarity guard ({exc})") from None
        decision = manifest.get("extra", {}).get("decision")
        if decision:
            try:
                f.set_costs(CostMatrix(decision["costs"], decision["classes"], decision["decisions"]))
            except (KeyError, TypeError) as exc:
                raise ModelFormatError(f"{path}: damaged decision layer ({exc})") from None
        return f


# ---------------------------------------------------------------------- corpus-level jobs

@dataclass
class TrainReport:
    """What ``spamkit train`` reports: what was learned from, and the held-out evaluation."""

    n_train: int
    n_test: int
    train_per_class: dict
    test_per_class: dict
    n_features: int
    classes: list
    seconds_train: float
    parse_fallbacks: dict
    split: dict | None = None
    evaluation: dict | None = None
    corpora: list = field(default_factory=list)

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def _records(corpora):
    """First pass: (id, label, date) of every message, nothing parsed."""
    return [(m.id, m.label, m.date) for m in iter_corpora(corpora)]


def describe_corpora(corpora) -> list:
    return [{"path": str(c.path), "format": c.format, "container": c.container,
             "per_class": {str(k): v for k, v in c.stats.per_class.items()},
             "skipped": dict(c.stats.skipped), "unreadable": list(c.stats.unreadable)} for c in corpora]


def evaluate_predictions(y_true, proba, classes, log_proba=None) -> dict:
    """Measures at the most probable class (threshold 0.5 for two classes) and the AUC.

    With ``log_proba`` the AUC ranks by the log-odds, which stay distinct where P(spam)
    rounds to 0 or 1.
    """
    classes = [str(c) for c in classes]
    y_true = [str(v) for v in y_true]
    y_pred = [classes[i] for i in np.argmax(proba, axis=1)]
    if len(classes) == 2 and SPAM_NAME in classes:
        s = classes.index(SPAM_NAME)
        other = classes[1 - s]
        scores = None
        if log_proba is not None:
            with np.errstate(invalid="ignore"):
                scores = log_proba[:, s] - log_proba[:, 1 - s]
        return binary_report(y_true, y_pred, proba[:, s], SPAM_NAME, other, ranking=scores)
    return multiclass_report(y_true, y_pred, classes)


def train_filter(spam_filter: SpamFilter, corpora: list[Corpus], test_fraction: float | None = None,
                 split: str = "auto", seed: int = 0, progress=None, parameters: dict | None = None,
                 fit=None) -> TrainReport:
    """Train on corpora, optionally holding out a test part first and evaluating on it.

    ``fit(spam_filter, messages, progress)`` replaces ``spam_filter.fit`` (the Dask engine,
    :func:`spamkit.distributed.fit_on_cluster`, which gives the same filter).
    """
    test_ids: set = set()
    split_info = None
    if test_fraction:
        records = _records(corpora)
        test_ids = holdout_ids(records, test_fraction, split, seed)
        method = split if split != "auto" else ("chrono" if all(r[2] for r in records) else "random")
        split_info = {"method": method, "test_fraction": test_fraction, "seed": seed}
    held_out: list = []
    train_counts: Counter = Counter()

    def train_stream():
        for msg in iter_corpora(corpora):
            if msg.id in test_ids:
                if isinstance(msg.raw, Unread):          # listed, not read (below): read it here
                    msg = dataclasses.replace(msg, raw=msg.raw.read())
                held_out.append((msg.label, spam_filter.tokens(msg)))
                continue
            train_counts[msg.label] += 1
            yield msg

    started = time.perf_counter()
    if fit is None:
        spam_filter.fit(train_stream(), progress=progress)
    else:
        with contextlib.ExitStack() as listing:
            if getattr(fit, "reads_files", False):        # its workers read the files themselves
                for corpus in corpora:
                    listing.enter_context(corpus.listing())
            fit(spam_filter, train_stream(), progress)
    seconds = time.perf_counter() - started
    evaluation = None
    if held_out:
        X = spam_filter.vectorizer.transform(tokens for _, tokens in held_out)
        log_proba = spam_filter.log_proba(X)
        proba = np.exp(log_proba)
        evaluation = evaluate_predictions([label for label, _ in held_out], proba, spam_filter.classes_,
                                          log_proba)
        spam_filter._held_out = ([label for label, _ in held_out], proba)
    report = TrainReport(
        n_train=sum(train_counts.values()), n_test=len(held_out),
        train_per_class={str(k): v for k, v in sorted(train_counts.items(), key=lambda kv: str(kv[0]))},
        test_per_class={str(k): v for k, v in sorted(Counter(l for l, _ in held_out).items(),
                                                     key=lambda kv: str(kv[0]))},
        n_features=int(spam_filter.vectorizer.n_features_), classes=[str(c) for c in spam_filter.classes_],
        seconds_train=seconds, parse_fallbacks=dict(spam_filter.parse_fallbacks), split=split_info,
        evaluation=evaluation, corpora=describe_corpora(corpora))
    spam_filter.training = {"corpora": report.corpora, "n_messages": report.n_train,
                            "per_class": report.train_per_class, "parse_fallbacks": report.parse_fallbacks,
                            "parameters": parameters or {}, "split": split_info,
                            "held_out_evaluation": evaluation, "versions": library_versions(),
                            "seconds": round(seconds, 3)}
    return report


def score_locally(spam_filter: SpamFilter, corpora: list[Corpus], progress=None):
    """Labels, sources, the model's log-probabilities of every message, ``rows_of(indices)`` and
    each message's familiarity (:meth:`SpamFilter.familiarity`).

    ``rows_of`` gives the feature rows of some of the messages (for explanations). The Dask
    engine's :func:`spamkit.distributed.score_on_cluster` returns the same.
    """
    labels, rows, ids = [], [], []
    for msg in iter_corpora(corpora):
        if msg.label is None:
            raise CorpusError(f"{msg.source}: message has no class; evaluation needs labelled corpora")
        labels.append(msg.label)
        ids.append(msg.source)
        rows.append(spam_filter.tokens(msg))
        if progress is not None:
            progress(msg)
    X = spam_filter.vectorizer.transform(rows)
    return (labels, ids, spam_filter.model.predict_log_proba(X), lambda indices: X[list(indices)],
            spam_filter.familiarity(rows, X))


def evaluate_filter(spam_filter: SpamFilter, corpora: list[Corpus], progress=None, detail: bool = False,
                    score=None) -> dict:
    """Classify every message of labelled corpora and measure the result.

    With ``detail`` (two-class ham/spam filters), ``result["report"]`` holds the data of the
    HTML report (:func:`spamkit.evaluation.report_data`: curves, bootstrap interval of the AUC,
    reliability bins, the cost curve, the ten most costly mistakes with their explaining tokens).
    ``score``: replaces :func:`score_locally` (same signature and result; the Dask engine).
    """
    labels, ids, model_lp, rows_of, familiarity = (score or score_locally)(spam_filter, corpora, progress)
    unknown = set(map(str, labels)) - set(map(str, spam_filter.classes_))
    if unknown:
        raise CorpusError(f"the corpus has classes {sorted(unknown)} that the filter was not trained on "
                          f"(it knows {[str(c) for c in spam_filter.classes_]})")
    log_proba = spam_filter.adjust_log_proba(model_lp)
    proba = np.exp(log_proba)
    result = evaluate_predictions(labels, proba, spam_filter.classes_, log_proba)
    if spam_filter.guard is not None:
        spam_filter.guard.reset()                                  # this corpus is a stream of its own
    decisions = spam_filter.decide(proba, familiarity)            # once: the guard reads a stream
    if spam_filter.costs is not None:
        result["costs"] = cost_report(labels, proba, spam_filter, decisions)
    if spam_filter.guard is not None and len(familiarity):
        result["familiarity"] = {"median": float(np.median(familiarity)), **spam_filter.guard.as_dict(),
                                 "guarded": dict(spam_filter.guard.counts)}
    result["corpora"] = describe_corpora(corpora)
    if detail:
        from .evaluation import report_data
        s = spam_filter.spam_column
        with np.errstate(invalid="ignore"):
            log_odds = log_proba[:, s] - log_proba[:, 1 - s]
        is_spam = np.asarray([str(v) == SPAM_NAME for v in labels])
        called = np.asarray([str(d) == SPAM_NAME for d in decisions])
        c_fp, c_fn = 1.0, 1.0
        if spam_filter.costs is not None and sorted(spam_filter.costs.classes) == [HAM_NAME, SPAM_NAME]:
            c_fp, c_fn = spam_filter.costs.binary_costs()
        p_raw = None
        if spam_filter.calibration is not None:
            p_raw = np.exp(model_lp)[:, list(spam_filter.model.classes_).index(SPAM_NAME)]
        data = report_data(is_spam, log_odds, proba[:, s], called, c_fp, c_fn, p_raw=p_raw)
        costly = list(data.pop("costly_mistakes"))
        X_costly = rows_of(costly) if costly else None
        data["mistakes"] = [{"id": ids[i], "label": str(labels[i]), "p_spam": float(proba[i, s]),
                             "log_odds": float(log_odds[i]), "explanation": spam_filter.explain_row(X_costly[j], 5)}
                            for j, i in enumerate(costly)]
        result["report"] = data
    return result


def held_out_costs(spam_filter: SpamFilter, report: "TrainReport") -> dict:
    """The cost report of the held-out part kept by :func:`train_filter`."""
    labels, proba = spam_filter._held_out
    return cost_report(labels, proba, spam_filter)


def cost_report(labels, proba, spam_filter: SpamFilter, decisions=None) -> dict:
    """Decisions under the filter's cost matrix: counts per (true class, decision) and mean cost
    (``decisions``: as the filter made them, e.g. with its familiarity guard; default: from ``proba``)."""
    cm = spam_filter.costs
    decisions = spam_filter.decide(proba) if decisions is None else decisions
    table = {str(c): {d: 0 for d in cm.decisions} for c in cm.classes}
    total = 0.0
    for label, d in zip(map(str, labels), decisions):
        table[label][d] += 1
        total += cm.costs[cm.decisions.index(d), cm.classes.index(label)]
    return {"matrix": cm.as_dict(), "decisions": table, "cost_per_message": total / max(len(labels), 1),
            "threshold": cm.threshold() if cm.decisions == ["ham", "spam"] and cm.classes == ["ham", "spam"]
            else None}


def tune_filter(corpora, ks, weights, metric: str = "cosine", representation: str = "tf", folds: int = 5,
                seed: int = 0, progress=None, analyzer: Analyzer | None = None):
    """Cross-validate kNN's k and weighting on corpora (features built once, on all of them).

    The vocabulary is learned from every message before the folds are cut; it uses no
    labels, so no class information leaks from the held-out folds.
    """
    from .evaluation import tune_knn
    f = SpamFilter(analyzer, Vectorizer(representation), KNNClassifier())
    labels = []

    def stream():
        for msg in iter_corpora(corpora):
            if msg.label is None:
                raise CorpusError(f"{msg.source}: message has no class; tuning needs labelled corpora")
            labels.append(msg.label)
            if progress is not None:
                progress(msg)
            yield f.tokens(msg)

    X = f.vectorizer.fit_transform(stream())
    y = np.asarray(labels)
    require_classes(Counter(y.tolist()), "tuning data")
    return tune_knn(X, y, ks=ks, weights=weights, folds=folds, seed=seed, metric=metric)


def online_filter(corpora, analyzer: Analyzer | None = None, progress=None, **settings):
    """TREC-style online evaluation over corpora in their order (see :func:`spamkit.evaluation.online_evaluate`)."""
    from .evaluation import online_evaluate
    return online_evaluate(iter_corpora(corpora), analyzer if analyzer is not None else Analyzer(),
                           progress=progress, **settings)


def cross_validated_log_odds(spam_filter: SpamFilter, corpora, folds: int = 5, seed: int = 0,
                             progress=None, return_folds: bool = False):
    """Out-of-fold log-odds of spam for every message of labelled ham/spam corpora.

    Each fold is scored by a filter built like ``spam_filter`` (same analyzer settings,
    vectorizer settings, model parameters and calibration) but trained from scratch on the
    other folds, so a threshold chosen on these scores is chosen on data no filter saw.
    ``spam_filter`` need not be fitted: only its configuration is used. Returns
    ``(is_spam, log_odds)``, and the fold of each message with ``return_folds``.
    """
    from sklearn.base import clone

    from .evaluation import stratified_folds
    tokens, labels = [], []
    for msg in iter_corpora(corpora):
        if msg.label not in (HAM_NAME, SPAM_NAME):
            raise CorpusError(f"{msg.source}: threshold choice needs ham/spam labels, got {msg.label!r}")
        labels.append(msg.label)
        tokens.append(spam_filter.tokens(msg))
        if progress is not None:
            progress(msg)
    y = np.asarray(labels)
    require_classes(Counter(labels), "the threshold corpus")
    fold_of = stratified_folds(y, folds, seed=seed)
    scores = np.zeros(len(y))
    config = spam_filter.vectorizer.get_config()
    for k in range(folds):
        held = np.flatnonzero(fold_of == k)
        train = np.flatnonzero(fold_of != k)
        vectorizer = Vectorizer(**config)
        f = SpamFilter(spam_filter.analyzer, vectorizer, clone(spam_filter.model), calibrate=spam_filter.calibrate)
        X = (vectorizer.fit_transform([tokens[i] for i in train], y[train]) if config.get("select") == "ig"
             else vectorizer.fit_transform(tokens[i] for i in train))
        f.model.fit(X, y[train])
        f.classes_ = f.model.classes_
        if f.calibrate != "none":
            f.calibration = f._fit_calibration(X, y[train])
        lp = f.log_proba(vectorizer.transform(tokens[i] for i in held))
        s = list(f.classes_).index(SPAM_NAME)
        with np.errstate(invalid="ignore"):
            scores[held] = lp[:, s] - lp[:, 1 - s]
    # kNN's log-odds are infinite when every neighbour agrees: keep them finite and ordered
    scores = np.clip(np.nan_to_num(scores, nan=0.0), -700.0, 700.0)
    if return_folds:
        return y == SPAM_NAME, scores, fold_of
    return y == SPAM_NAME, scores


#: the settings ``spamkit cv`` / ``compare`` accept in a --config, and their types
CONFIG_KEYS = {"model": str, "tokens": str, "alpha": float, "representation": str, "min_df": int,
               "max_features": int, "select": str, "hashing": int, "stem": str, "stop_words": str,
               "ngrams": int, "calibrate": str, "strength": float, "prior": float, "min_dev": float,
               "max_clues": int, "k": int, "weights": str, "metric": str, "rate": float, "char_ngrams": int}
_FISHER_KEYS = ("strength", "prior", "min_dev", "max_clues")
_KNN_KEYS = ("k", "weights", "metric")


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
        try:
            settings[key] = CONFIG_KEYS[key](value.strip())
        except ValueError:
            raise ConfigError(f"{key} needs a {CONFIG_KEYS[key].__name__}, got {value!r}") from None
    return settings


def filter_from_config(settings: dict) -> SpamFilter:
    """An untrained filter: :data:`BEST` with ``settings`` on top (see :func:`parse_config`)."""
    merged = {**BEST, **settings}
    kwargs = {k: v for k, v in merged.items() if k not in _FISHER_KEYS + _KNN_KEYS}
    fisher = {k: merged[k] for k in _FISHER_KEYS if k in merged}
    knn = {k: merged[k] for k in _KNN_KEYS if k in merged}
    if fisher:
        kwargs["fisher"] = fisher
    if knn:
        kwargs["knn"] = knn
    if "rate" in merged:
        kwargs["stack"] = stack_for_rate(merged["rate"])
    return build_filter(**kwargs)


def stack_for_rate(rate: float) -> dict:
    """The stack's parameters for a logistic learning rate: :data:`STACK`'s squashing with a logistic
    component at ``rate``, or for 0 the Fisher + NB stack as it was before the component existed."""
    return {**STACK, "logistic": float(rate)} if rate else {"logistic": 0.0, "squash": "clip"}


def compare_configs(configs: list, corpora_factory, folds: int = 5, seed: int = 0, progress=None,
                    cv=None) -> dict:
    """Cross-validate each configuration on the same stratified folds; measures per configuration.

    ``configs``: (name, settings) pairs; ``corpora_factory()`` opens the corpora afresh for each
    configuration (each pass streams them). The folds depend only on the labels and ``seed``,
    so every configuration is scored on the same split, and per-fold AUC differences are paired.
    ``cv``: replaces :func:`cross_validated_log_odds` (same signature and result; the Dask engine).
    """
    from .evaluation import bootstrap_auc
    from .metrics import roc_auc, roc_curve, trec_measures
    results = []
    for name, settings in configs:
        spam_filter = filter_from_config(settings)
        corpora = corpora_factory()
        try:
            y, s, fold_of = (cv or cross_validated_log_odds)(spam_filter, corpora, folds, seed, progress,
                                                             return_folds=True)
        finally:
            for c in corpora:
                c.close()
        per_fold = []
        for k in range(folds):
            m = fold_of == k
            per_fold.append({"auc": float(roc_auc(y[m], s[m])), "accuracy": float(np.mean((s[m] > 0) == y[m]))})
        called = s > 0
        fpr, tpr, _ = roc_curve(y, s)
        keep = np.unique(np.linspace(0, len(fpr) - 1, min(len(fpr), 2000)).astype(int))
        results.append({
            "roc": {"fpr": fpr[keep].tolist(), "tpr": tpr[keep].tolist()},
            "name": name, "settings": settings, "n": int(len(y)),
            "accuracy": float(np.mean(called == y)), "spam_recall": float(np.mean(called[y])),
            "ham_recall": float(np.mean(~called[~y])), **bootstrap_auc(y, s, seed=seed),
            "lam_pct": trec_measures(y, s, 0.0)["lam_pct"], "per_fold": per_fold,
            "auc_fold_mean": float(np.mean([f["auc"] for f in per_fold])),
            "auc_fold_std": float(np.std([f["auc"] for f in per_fold], ddof=1)),
            "accuracy_fold_mean": float(np.mean([f["accuracy"] for f in per_fold])),
            "accuracy_fold_std": float(np.std([f["accuracy"] for f in per_fold], ddof=1))})
    base = results[0]
    for r in results[1:]:
        diffs = [a["auc"] - b["auc"] for a, b in zip(r["per_fold"], base["per_fold"])]
        r["vs_first"] = {"auc_diff_mean": float(np.mean(diffs)), "auc_diff_std": float(np.std(diffs, ddof=1)),
                         "folds_better": int(sum(d > 0 for d in diffs)), "folds_worse": int(sum(d < 0 for d in diffs))}
    return {"folds": folds, "seed": seed, "configs": results}


@dataclass
class LearnReport:
    """What ``spamkit learn`` did."""

    learned: Counter = field(default_factory=Counter)
    forgotten: Counter = field(default_factory=Counter)
    relabelled: int = 0
    already: int = 0
    not_learned_before: int = 0
    correct_skipped: int = 0

    def as_dict(self) -> dict:
        return {"learned": dict(self.learned), "forgotten": dict(self.forgotten), "relabelled": self.relabelled,
                "already_learned": self.already, "not_learned_before": self.not_learned_before,
                "skipped_correct": self.correct_skipped}


def learn_messages(spam_filter: SpamFilter, messages, forget: bool = False, on_error: bool = False,
                   progress=None) -> LearnReport:
    """Add labelled messages to a trained filter's counts, or remove them (``forget``).

    Every learned message is remembered by :func:`~spamkit.message.message_key` (tagged or
    not, a message has one key): learning it again is skipped, learning it with the other
    label first removes its old contribution (a corrected mistake), and ``forget`` removes
    what learning added (exactly for counts; a logistic-regression component takes a step
    back, which is approximate). ``on_error`` learns only messages the filter gets wrong now
    (train on error). Works for the counting models (fisher-nb, fisher, multinomial, bernoulli).
    """
    from .message import message_key
    if not hasattr(spam_filter.model, "unlearn"):
        raise ConfigError(f"{type(spam_filter.model).__name__} cannot learn incrementally; retrain it with "
                          "spamkit train (learn works for fisher-nb, fisher, multinomial and bernoulli)")
    report = LearnReport()
    known = {str(c) for c in spam_filter.classes_}
    for msg in messages:
        if progress is not None:
            progress(msg)
        label = str(msg.label)
        if label not in known:
            raise CorpusError(f"{msg.source}: class {label!r} is not one of the filter's classes {sorted(known)}")
        key = message_key(msg.raw)
        previous = spam_filter.learned.get(key)
        X = spam_filter.transform([msg])
        if forget:
            if previous is None:
                report.not_learned_before += 1
                continue
            spam_filter.model.unlearn(X, np.asarray([previous]))
            del spam_filter.learned[key]
            report.forgotten[previous] += 1
            continue
        if previous == label:
            report.already += 1
            continue
        if on_error and previous is None and str(spam_filter.classes_[np.argmax(spam_filter.log_proba(X)[0])]) == label:
            report.correct_skipped += 1
            continue
        if previous is not None:
            spam_filter.model.unlearn(X, np.asarray([previous]))
            report.relabelled += 1
        spam_filter.model.partial_fit(X, np.asarray([label]))
        spam_filter.saw(X)
        spam_filter.learned[key] = label
        report.learned[label] += 1
    return report


# ---------------------------------------------------------------------- corpus survey

@dataclass
class CorpusSurvey:
    """What ``spamkit corpus`` reports for one corpus."""

    path: str
    format: str
    container: str
    n_messages: int = 0
    n_bytes: int = 0
    per_class: dict = field(default_factory=dict)
    skipped: dict = field(default_factory=dict)
    unreadable: list = field(default_factory=list)     # "FILE: why" of messages that could not be read
    first_date: str | None = None
    last_date: str | None = None
    parsed: bool = False
    n_with_fallback: int = 0
    defects: dict = field(default_factory=dict)         # defect code -> messages showing it
    kinds: dict = field(default_factory=dict)           # rfc822 / enron / text -> count
    seconds: float = 0.0

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def _defect_family(code: str) -> str:
    # "charset-unknown:x-foo" -> "charset-unknown"; "mime:StartBoundaryNotFoundDefect" stays whole.
    return code if code.startswith("mime:") else code.split(":", 1)[0]


def survey_corpus(corpus: Corpus, parse: bool = True, strict: bool = False, progress=None) -> CorpusSurvey:
    """Read every message of ``corpus`` (and parse it, with ``parse``), counting everything.

    ``strict`` makes the first message that needed a parse fallback an error.
    ``progress`` is called with each message read.
    """
    started = time.perf_counter()
    survey = CorpusSurvey(path=str(corpus.path), format=corpus.format, container=corpus.container,
                          parsed=parse)
    defects: Counter = Counter()
    kinds: Counter = Counter()
    for msg in corpus:
        if parse:
            parsed = parse_message(msg.raw, msg.kind)
            kinds[parsed.kind] += 1
            if parsed.defects:
                if strict:
                    raise CorpusError(f"{msg.source}: parse fallback needed ({', '.join(parsed.defects)}); "
                                      "drop --strict to accept it")
                survey.n_with_fallback += 1
                for family in {_defect_family(code) for code in parsed.defects}:
                    defects[family] += 1
        if progress is not None:
            progress(msg)
    stats = corpus.stats
    survey.n_messages = stats.n_messages
    survey.n_bytes = stats.n_bytes
    survey.per_class = {str(k): v for k, v in sorted(stats.per_class.items(), key=lambda kv: str(kv[0]))}
    survey.skipped = dict(stats.skipped)
    survey.unreadable = list(stats.unreadable)
    survey.first_date = stats.first_date.isoformat() if stats.first_date else None
    survey.last_date = stats.last_date.isoformat() if stats.last_date else None
    survey.defects = dict(defects.most_common())
    survey.kinds = dict(kinds.most_common())
    survey.seconds = time.perf_counter() - started
    return survey
