"""Evaluation protocols: online (TREC) evaluation of two classes (any number:
:mod:`spamkit.jobs.online_classes`; the data of the reports is :mod:`spamkit.jobs.reports`). Model selection (folds, cross-validated
scores, kNN tuning, thresholds) is :mod:`spamkit.decide.selection`.

Owns the protocols; the measures come from :mod:`spamkit.decide.metrics`, the models from
:mod:`spamkit.models`.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

import time

from ..features.bytekeys import context_keys, gram_rows
from ..decide.decision import DEFAULT_BAND
from ..decide.thresholds import stream_spam_cuts
from ..common.errors import ConfigError, CorpusError
from ..features.vectorizer import Vectorizer
from ..common.labels import HAM_NAME, SPAM_NAME
from ..parse.message import parse_message, parsed_bytes
from ..decide.metrics import learning_curve, three_way_rates, trec_measures
from ..decide.curves import roc_curve
from ..models import FisherNBStack
from ..models.combiner import accurate_center
from ..models.logistic import DEFAULT_RATE
from ..models.bytegrams import ByteGramLogistic
from ..models.context import ByteContextModel
from ..models.registry import make_model
from ..common.names import FISHER_MODEL, ONLINE_MODELS, REGIMES, STACK_MODEL
from ..scoring.arrays import expit


@dataclass
class OnlineResult:
    """An online run: one score per message, in corpus order, and the summary measures."""

    ids: list = field(default_factory=list)
    gold: list = field(default_factory=list)
    scores: list = field(default_factory=list)        # log-odds log p(x, spam) - log p(x, ham)
    n_learned: int = 0
    seconds: float = 0.0
    measures: dict = field(default_factory=dict)
    settings: dict = field(default_factory=dict)
    #: (1-ROCA)% over a sliding window at ten points of the stream (metrics.learning_curve)
    learning_curve: list = field(default_factory=list)

    def write_trec(self, path) -> None:
        """The TREC spam-track results layout: ``id judgement score gold`` per line, in order.

        judgement is the filter's binary call (spam when the log-odds score is above 0, i.e.
        P(spam) > 0.5); score is the log-odds, so that rankings do not saturate at P = 1.
        """
        with open(path, "w", encoding="utf-8") as out:
            for ident, gold, score in zip(self.ids, self.gold, self.scores):
                judgement = SPAM_NAME if score > 0 else HAM_NAME
                out.write(f"{ident} {judgement} {score:.6f} {gold}\n")

    def report_data(self, max_points: int = 400) -> dict:
        """What the HTML report plots beyond :meth:`as_dict`: the ROC curve of the run's scores
        (at most ``max_points`` corners, always keeping the first and last)."""
        gold = np.array([g == SPAM_NAME for g in self.gold])
        fpr, tpr, _ = roc_curve(gold, np.asarray(self.scores))
        keep = np.unique(np.concatenate([np.linspace(0, len(fpr) - 1, min(max_points, len(fpr))).astype(int),
                                         np.flatnonzero(fpr <= 0.01)[-max_points:]]))
        return {"roc": {"fpr": fpr[keep].tolist(), "tpr": tpr[keep].tolist(),
                        "smallest_fpr": 1.0 / max(int((~gold).sum()), 1)}}

    def as_dict(self) -> dict:
        return {"n": len(self.ids), "n_learned": self.n_learned, "seconds": self.seconds,
                "messages_per_second": len(self.ids) / self.seconds if self.seconds else None,
                "measures": self.measures, "settings": self.settings, "learning_curve": self.learning_curve}






#: the stacked model's combiner is refitted online after every this many messages, on the
#: component scores each message got before it was learned (held-out by construction)
COMBINER_REFIT = 100
#: a stack with a combiner prior (FisherNBStack.combiner_center) is refitted every EARLY_REFIT
#: messages while it has seen fewer than EARLY_MESSAGES: the prior keeps fits on few messages sane
EARLY_REFIT, EARLY_MESSAGES = 10, 1000


def online_evaluate(messages, analyzer, model: str = "multinomial", alpha: float = 1.0,
                    hashing: int = 2 ** 20, delay: int = 0, feedback_fraction: float = 1.0,
                    seed: int = 0, order: str = "corpus", progress=None, fisher: dict | None = None,
                    regime: str = "all", margin: float = 2.0, stack: dict | None = None,
                    rate: float = DEFAULT_RATE, active: int | None = None, active_b: float = 1.0,
                    tokenize=None, context: dict | None = None, grams: dict | None = None) -> OnlineResult:
    """Classify each message in corpus order, then learn it (TREC spam-track protocol).

    ``tokenize(messages)``: parse and tokenize elsewhere, ahead of the learning, which stays
    in order (``(tokens, defect families)`` per message, in order; :class:`spamkit.jobs.engines.ProcessEngine`).

    Parameters
    ----------
    messages : iterable of LabelledMessage
        In delivery order; every one labelled ham or spam.
    analyzer : spamkit.text.Analyzer
    model : {"fisher-nb", "fisher", "logistic", "multinomial", "bernoulli"}
        Learned with ``partial_fit`` one message at a time (never refitted from scratch);
        features are hashed into ``hashing`` columns, so the vocabulary may grow forever.
        For "fisher-nb" the combiner starts as Fisher alone and is refitted every
        :data:`COMBINER_REFIT` messages on all the component scores seen so far.
    fisher : dict
        RobinsonFisher's parameters for ``model="fisher"`` (and the stack's Fisher component).
    stack : dict
        The stack's own parameters for ``model="fisher-nb"`` (``logistic``, ``squash``; default
        :data:`~spamkit.models.stack.BEST_STACK`).
    rate : float
        The learning rate of ``model="logistic"`` (:class:`~spamkit.models.OnlineLogistic`).
    regime : {"all", "error", "near-error"}
        Which messages are learned (of those whose feedback arrives): all, those the filter
        got wrong, or those it got wrong or scored within ``margin`` (log-odds) of 0.
        Measured on trec07p-dev with Fisher on mail tokens (``scripts/ablation_trec.py``): all
        0.079, near-error 0.160 (margin 2) and 0.130 (margin 10), error 0.313 (1-ROCA)%:
        learning everything wins.
    delay : int
        Feedback arrives this many messages later (0: immediately after classification).
    feedback_fraction : float
        Only this share of messages is ever learned (drawn with ``seed``); the rest are
        classified and never taught.
    active, active_b : int, float
        Active learning: the filter asks for at most ``active`` labels, choosing uncertain
        messages (see :func:`online_run`).
    order : {"corpus", "date"}
        "corpus" streams in the corpus's own order (TREC index, Enron arrival numbers, mbox
        order; class folders come class by class). "date" sorts by each message's date, ties
        in corpus order; it holds the whole corpus in memory to do so, and every message needs
        a date.

    context : dict
        With ``model="fisher-nb"``: a byte context model per class
        (:class:`~spamkit.models.context.ByteContextModel`, its parameters ``order``, ``beta``,
        ``bits`` and, for :func:`~spamkit.features.bytekeys.context_keys`, ``max_bytes``; ``{}``: the
        defaults) reads each raw message's first bytes, learns with the stack, and its ratio per
        symbol is a side input of the stack's combiner (``side_inputs=1``), fitted with the
        other columns on the scores messages got before they were learned. Measured on every
        corpus (docs/results.md, "A context model per class"): lower (1-ROCA)% everywhere but
        CSDMC2010 (TREC 0.0392 -> 0.0286, the Enron average 0.145 -> 0.080, SMS 0.37 -> 0.27).
    grams : dict
        With ``model="fisher-nb"``: the byte 4-gram logistic regression
        (:class:`~spamkit.models.bytegrams.ByteGramLogistic`'s ``n_bytes``, ``bits``, ``rate``;
        ``{}``: the defaults) as a side input of the combiner, after the context model's. With
        ``model="grams"`` it is the filter alone (the TREC 2007 winner's method), and the
        message's tokens are not read.

    Until a message of each class has been learned, every score is 0 (P(spam) = 1/2): a
    class never seen has prior 0, and its log-odds would be infinite.
    """
    if model == "grams":
        return _online_grams(messages, grams or {}, order, progress)
    learner = online_model(model, alpha=alpha, fisher=fisher, stack=stack, rate=rate)
    context_model, max_bytes, grams_model = None, None, None
    if grams is not None:
        if model != STACK_MODEL:
            raise ConfigError(f"a byte 4-gram model is a side input of the fisher-nb stack, not of {model!r}")
        grams_model = _grams_model(grams)
    if context is not None:
        if model != STACK_MODEL:
            raise ConfigError(f"a context model is a side input of the fisher-nb stack, not of {model!r}")
        context = dict(context)
        max_bytes = int(context.pop("max_bytes", 3000))
        try:
            context_model = ByteContextModel(**context)
        except TypeError as exc:
            raise ConfigError(f"context model: {exc}") from None
        context_model.check_params()
        context_keys([], context_model.order, context_model.bits, max_bytes)        # checks max_bytes
    if context_model is not None or grams_model is not None:
        learner.set_params(side_inputs=(context_model is not None) + (grams_model is not None))
        learner.set_params(combiner_center=accurate_center(learner))
    vectorizer = Vectorizer.hashed(hashing, "tf" if model == "multinomial" else "binary")
    settings = {"model": model, "alpha": alpha, "hashing": hashing, "order": order,
                **({"fisher": learner.get_params()} if model in (FISHER_MODEL, STACK_MODEL) else {}),
                **({"rate": rate} if model == "logistic" else {}),
                **({"context": {**context_model.get_params(), "max_bytes": max_bytes}} if context_model else {}),
                **({"grams": grams_model.get_params()} if grams_model else {}),
                "analyzer": {k: v for k, v in analyzer.get_config().items() if k != "stop_word_list"}}
    if order == "date":
        listed = list(messages)
        undated = [m.source for m in listed if m.date is None]
        if undated:
            raise CorpusError(f"{len(undated)} messages have no date (first: {undated[0]}); use --order corpus")
        messages = [m for _, m in sorted(enumerate(listed), key=lambda im: (im[1].date, im[0]))]
    elif order != "corpus":
        raise ConfigError(f"order must be 'corpus' or 'date', got {order!r}")

    ahead: deque = deque()                 # messages drawn, waiting for their tokens

    def labelled():
        for msg in messages:
            if msg.label not in (HAM_NAME, SPAM_NAME):
                raise CorpusError(f"{msg.source}: online evaluation needs ham/spam labels, got {msg.label!r}")
            ahead.append(msg)
            yield msg

    token_lists = (tokenize(labelled()) if tokenize is not None
                   else ((analyzer(parse_message(m.raw, m.kind)), ()) for m in labelled()))

    def rows():
        for tokens, _ in token_lists:
            msg = ahead.popleft()
            x = vectorizer.transform([tokens])
            if context_model is None and grams_model is None:
                yield msg.id, msg.label, x
            else:
                yield msg.id, msg.label, x, parsed_bytes(msg.raw, msg.kind)
            if progress is not None:
                progress(msg)

    return online_run(rows(), learner, delay=delay, feedback_fraction=feedback_fraction, seed=seed,
                      regime=regime, margin=margin, settings=settings, active=active, active_b=active_b,
                      context=context_model, context_bytes=max_bytes or 3000, grams=grams_model)


def _grams_model(settings: dict) -> ByteGramLogistic:
    """A new byte 4-gram model of ``settings`` (its parameters), checked."""
    try:
        model = ByteGramLogistic(**settings)
    except TypeError as exc:
        raise ConfigError(f"4-gram model: {exc}") from None
    model.check_params()
    return model


def _online_grams(messages, grams: dict, order: str, progress=None) -> OnlineResult:
    """The TREC protocol for the byte 4-gram logistic regression alone (``model="grams"``): each
    message's raw bytes scored, then learned; no tokens."""
    if order != "corpus":
        raise ConfigError("the 4-gram model alone streams in corpus order")
    model = _grams_model(grams)

    def rows():
        for msg in messages:
            if msg.label not in (HAM_NAME, SPAM_NAME):
                raise CorpusError(f"{msg.source}: online evaluation needs ham/spam labels, got {msg.label!r}")
            yield msg.id, msg.label, None, parsed_bytes(msg.raw, msg.kind)
            if progress is not None:
                progress(msg)

    return online_run(rows(), model, settings={"model": "grams", "grams": model.get_params(), "order": order})


def online_model(model: str, alpha: float = 1.0, fisher: dict | None = None, stack: dict | None = None,
                 rate: float = DEFAULT_RATE):
    """A fresh model of :data:`ONLINE_MODELS` for :func:`online_run` (Naive Bayes with the fitted prior)."""
    if model not in ONLINE_MODELS:
        raise ConfigError(f"online evaluation supports {', '.join(ONLINE_MODELS)}, not {model!r}")
    return make_model(model, alpha=alpha, fisher=fisher, stack=stack, rate=rate)


def online_run(rows, model, delay: int = 0, feedback_fraction: float = 1.0, seed: int = 0,
               regime: str = "all", margin: float = 2.0, settings: dict | None = None,
               active: int | None = None, active_b: float = 1.0, context=None, context_bytes: int = 3000,
               grams=None) -> OnlineResult:
    """The TREC protocol over ``rows`` of ``(id, label, x)`` (x a one-row feature matrix), in order.

    ``context`` (a :class:`~spamkit.models.context.ByteContextModel`, new, reading
    ``context_bytes`` bytes) and ``grams`` (a :class:`~spamkit.models.bytegrams.ByteGramLogistic`,
    new): the side models of a stack with as many side inputs; the rows are then ``(id, label,
    x, raw)``, raw the message's bytes. They score each message before the stack's combiner does
    (the context model's ratio per symbol, the 4-gram model's log-odds: the side scores, in that
    order) and learn whatever the stack learns. ``model`` may also be a ByteGramLogistic alone
    (fitted on no message yet), which reads ``raw`` and no ``x``.

    Each row is scored by ``model`` as it stands, then (when its feedback arrives) learned with
    ``partial_fit``; see :func:`online_evaluate` for the parameters. A stacked model's combiner
    is refitted every :data:`COMBINER_REFIT` messages on the component scores the messages got
    before they were learned. Scripts that compare many models on one stream (``scripts/ablation.py``)
    vectorize the stream once and call this directly.

    ``active``: online active learning with a label quota (the TREC 2007 active-learning task;
    D. Sculley, "Online Active Learning Methods for Fast Label-Efficient Spam Filtering", CEAS
    2007). The filter asks for the label of a message with probability ``b / (b + |z|)``, z the
    log-odds it gave the message (selective sampling: N. Cesa-Bianchi, C. Gentile and L. Zaniboni,
    "Worst-case analysis of selective sampling for linear classification", JMLR 7, 2006), until
    ``active`` labels have been asked for; only asked messages are learned. Uncertain messages
    (z near 0) are almost always asked about, confident ones rarely.
    """
    if regime not in REGIMES:
        raise ConfigError(f"regime must be one of {', '.join(REGIMES)}, got {regime!r}")
    if delay < 0:
        raise ConfigError(f"delay must be >= 0, got {delay}")
    if not 0.0 < feedback_fraction <= 1.0:
        raise ConfigError(f"feedback fraction must be in (0, 1], got {feedback_fraction}")
    if active is not None and (active < 1 or feedback_fraction < 1.0):
        raise ConfigError("active learning needs a quota of at least 1 label and no --feedback-fraction "
                          "(the filter, not chance, chooses what is learned)")
    if not active_b > 0:
        raise ConfigError(f"the active-learning b must be > 0, got {active_b}")
    stacked = isinstance(model, FisherNBStack)
    alone = isinstance(model, ByteGramLogistic)
    side_grams = model if alone else grams          # the model that reads the 4-grams, if any
    n_side = (context is not None) + (grams is not None)
    if n_side and not (stacked and model.side_inputs == n_side):
        raise ConfigError(f"a context model and a 4-gram model are side inputs of a stack with side_inputs={n_side}")
    if stacked and model.side_inputs != n_side:
        raise ConfigError("this stack weighs side inputs: pass the models that score them (context=, grams=)")
    asked = 0
    history_side: list = []
    history_scores: list = []
    history_labels: list = []
    classes = [HAM_NAME, SPAM_NAME]
    rng = np.random.default_rng(seed)
    pending: list = []
    result = OnlineResult(settings={**(settings or {}), "delay": delay, "feedback_fraction": feedback_fraction,
                                    "seed": seed, "regime": regime,
                                    **({"margin": margin} if regime == "near-error" else {}),
                                    **({"active": active, "active_b": active_b} if active is not None else {})})
    fitted = False
    started = time.perf_counter()
    for row in rows:
        ident, label, x = row[:3]
        raw = row[3] if n_side or alone else None
        keys = context_keys([raw], context.order, context.bits, context_bytes) if context is not None else None
        slots = (gram_rows([raw], side_grams.n_bytes, side_grams.bits)
                 if side_grams is not None else None)
        if alone:
            score = float(model.decision_function(slots)[0]) if fitted else 0.0
        elif fitted and stacked:
            components = model.component_log_odds(x)[0]
            side = None
            if n_side:
                side = np.array([[*((context.mean_log_ratio(keys)[0],) if context is not None else ()),
                                  *((grams.decision_function(slots)[0],) if grams is not None else ())]])
                history_side.append(side[0])
            score = float(model.combined_log_odds(components[None, :], side)[0])
            history_scores.append(components)
            history_labels.append(label == SPAM_NAME)
            seen = len(history_labels)
            due = seen % COMBINER_REFIT == 0 or (model.combiner_center is not None and seen < EARLY_MESSAGES
                                                 and seen % EARLY_REFIT == 0)
            if due and 0 < sum(history_labels) < seen:
                model.fit_combiner(np.array(history_scores), np.array(history_labels),
                                   np.array(history_side) if n_side else None)
        elif fitted:
            jll = model.joint_log_likelihood(x)[0]
            score = float(jll[1] - jll[0])
        else:
            score = 0.0
        result.ids.append(ident)
        result.gold.append(label)
        result.scores.append(score)
        if active is not None:
            if asked < active and rng.random() < active_b / (active_b + abs(score)):
                asked += 1
                pending.append((x, label, score, keys, slots))
        elif rng.random() < feedback_fraction:
            pending.append((x, label, score, keys, slots))
        while len(pending) > delay:
            x_learn, label_learn, given, keys_learn, slots_learn = pending.pop(0)
            if not fitted or regime == "all" or (given > 0) != (label_learn == SPAM_NAME) or (
                    regime == "near-error" and abs(given) < margin):
                if alone:
                    model.partial_fit(slots_learn, [label_learn], classes=classes)
                else:
                    model.partial_fit(x_learn, [label_learn], classes=classes)
                if context is not None:
                    context.partial_fit(keys_learn, [label_learn == SPAM_NAME], classes=[False, True])
                if grams is not None:
                    grams.partial_fit(slots_learn, [label_learn], classes=classes)
                result.n_learned += 1
                fitted = alone or bool(model.class_count_.min() > 0)
    result.seconds = time.perf_counter() - started
    if not result.ids:
        raise CorpusError("online evaluation read no message")
    gold = np.array([g == SPAM_NAME for g in result.gold])
    if gold.all() or not gold.any():
        raise CorpusError("online evaluation needs both ham and spam in the stream")
    scores = np.asarray(result.scores)
    result.measures = trec_measures(gold, scores, 0.0)
    # the three-way decision on P(spam) = sigmoid(log-odds) at the costs' own cut: what a filter
    # told only its mistakes decides
    p_spam = expit(scores)
    result.measures["default_decision"] = three_way_rates(gold, p_spam, *DEFAULT_BAND)
    # the same with the spam cut a filter re-chooses on the stream it has judged (only ever above
    # the costs' own): thresholds.stream_spam_cuts; what a filter told every label decides
    # (spamkit learn --all-mail: Decisions.learned_spam_cut)
    result.measures["stream_cut_decision"] = three_way_rates(gold, p_spam, DEFAULT_BAND[0],
                                                             stream_spam_cuts(gold, p_spam))
    result.learning_curve = learning_curve(gold, scores)
    if active is not None:
        result.settings["asked"] = asked
    return result
