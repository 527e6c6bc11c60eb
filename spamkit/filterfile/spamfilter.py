"""The :class:`SpamFilter`: one trained filter as one object.

Analyzer + vectorizer + model, with what a deployed filter carries on top: the calibration
of its scores, the decision layer (cost matrix, unsure band), the familiarity guard, the
messages ``spamkit learn`` added, and its filter file (:meth:`SpamFilter.save`,
:meth:`SpamFilter.load`). It runs the stages in order (``parse_message`` -> ``Analyzer`` ->
``Vectorizer`` -> model -> decision) and owns no format and no formula: each lives in its
stage's module. Corpus-level jobs (train, evaluate, cross-validate, learn) are in
:mod:`spamkit.jobs`; turning settings into an untrained filter is :mod:`spamkit.filterfile.config`.

One concern over ~450 lines: every operation on a trained filter (scoring, explaining,
deciding, guarding, saving) needs the same state, so they stay together.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from ..features.bytekeys import context_keys, packed_gram_rows
from ..decide.calibration import CALIBRATIONS, IsotonicCalibration, PlattScaling, calibration_from_dict
from ..corpus import LabelledMessage, require_classes
from ..decide.decision import UNSURE_NAME, CostMatrix, Verdict, prior_shift
from ..decide.guard import FamiliarityGuard
from ..decide.familiar import discounted_row
from ..common import errors
from ..common.errors import ConfigError, CorpusError, ModelFormatError, WorkerError
from ..features.counting import numbered_here
from ..features.numbering import IndexedChunk
from ..features.vectorizer import Vectorizer, columns_per_row
from ..common.labels import HAM_NAME, SPAM_NAME
from ..parse.message import Message, defect_families, parse_message, parsed_bytes
from ..models import BernoulliNB, FisherNBStack, KNNClassifier, MultinomialNB, RobinsonFisher
from ..models.bytegrams import ByteGramLogistic
from ..models.context import ByteContextModel
from .persist import TermIndex, TermIndexJob, load_filter, save_filter
from ..scoring.arrays import log_expit
from ..text import Analyzer

__all__ = ["SpamFilter"]


def distinct_tokens(token_lists) -> np.ndarray:
    """Each token list's number of distinct tokens."""
    return np.fromiter((len(set(t)) for t in token_lists), dtype=np.float64, count=len(token_lists))


def parse_item(item) -> Message:
    """A :class:`Message` from a LabelledMessage, raw bytes, text or a Message."""
    if isinstance(item, Message):
        return item
    if isinstance(item, LabelledMessage):
        return parse_message(item.raw, item.kind)
    if isinstance(item, (bytes, bytearray)):
        return parse_message(bytes(item))
    if isinstance(item, str):
        return parse_message(item.encode("utf-8"), kind="text")
    raise ConfigError(f"cannot classify a {type(item).__name__}; pass messages as bytes, str or LabelledMessage")


def raw_of(item) -> bytes:
    """The bytes :func:`parse_item` parses: what a context model reads of a message."""
    if isinstance(item, (Message, LabelledMessage)):
        return item.raw
    if isinstance(item, (bytes, bytearray)):
        return bytes(item)
    if isinstance(item, str):
        return item.encode("utf-8")
    raise ConfigError(f"cannot classify a {type(item).__name__}; pass messages as bytes, str or LabelledMessage")


#: the bytes of each message a filter's context model reads by default: the measured best of
#: 1,000 / 1,500 / 3,000 / 5,000 (scripts/context_model.py --online; docs/results.md)
CONTEXT_BYTES = 3000


class SpamFilter:
    """Analyzer + vectorizer + model: raw messages in, class probabilities out.

    Parameters
    ----------
    analyzer : Analyzer, optional
    vectorizer : Vectorizer, optional
        Default: raw counts (``"tf"``) for the multinomial model, ``"binary"`` for Bernoulli.
    model : estimator, optional
        Default: :class:`~spamkit.models.MultinomialNB` with Laplace smoothing.
    context : ByteContextModel, optional
        A byte-level context model per class (:mod:`spamkit.models.context`) over each
        message's first ``context_bytes`` raw bytes, whose per-symbol log-likelihood ratio is
        the side input of the model, a :class:`~spamkit.models.FisherNBStack` with
        ``side_inputs=1``: the accurate configuration (docs/results.md, "A context model per
        class"). Every way of scoring messages (:meth:`score`, :meth:`predict_proba`,
        :meth:`verdict`, the jobs) then reads each message's bytes as well as its tokens; a
        feature matrix alone is not enough (:meth:`log_proba` needs the ``side`` scores,
        :meth:`side_scores`).
    context_bytes : int
        How many bytes of each raw message the context model reads (default :data:`CONTEXT_BYTES`).
    grams : ByteGramLogistic, optional
        An online logistic regression over the hashed byte 4-grams of each raw message
        (:mod:`spamkit.models.bytegrams`, the TREC 2007 winner's filter), whose log-odds is a
        side input of the stack, after the context model's if there is one: the stack then has
        ``side_inputs`` 1 or 2. Measured with the context model on trec06p, trec07p-dev,
        CSDMC2010, Enron1-6 and SMS (``scripts/fusion.py``; docs/results.md, "Fusing the
        published filters").

    Examples
    --------
    >>> f = SpamFilter().fit([b"Subject: cheap pills\\n\\nbuy cheap pills now",
    ...                       b"Subject: lunch\\n\\nlunch at noon?"], y=["spam", "ham"])
    >>> f.classes_.tolist(), bool(f.p_spam([b"Subject: pills\\n\\ncheap"])[0] > 0.5)
    (['ham', 'spam'], True)
    """

    def __init__(self, analyzer: Analyzer | None = None, vectorizer: Vectorizer | None = None, model=None,
                 calibrate: str = "none", context: ByteContextModel | None = None, context_bytes: int = CONTEXT_BYTES,
                 grams: ByteGramLogistic | None = None):
        if calibrate not in CALIBRATIONS:
            raise ConfigError(f"calibrate must be one of {', '.join(CALIBRATIONS)}, got {calibrate!r}")
        side = (context is not None) + (grams is not None)
        if side:
            if not (isinstance(model, FisherNBStack) and model.side_inputs == side):
                raise ConfigError(f"a context model and a 4-gram model are side inputs of the fisher-nb stack "
                                  f"(side_inputs={side} here); this filter's model is {type(model).__name__}"
                                  + (f" with side_inputs={model.side_inputs}" if isinstance(model, FisherNBStack)
                                     else ""))
            if calibrate != "none":
                raise ConfigError("the fisher-nb stack is calibrated by its combiner: a filter with side "
                                  "models (a context model, byte 4-grams) takes no --calibrate")
        if context is not None:
            context.check_params()
            context_keys([], context.order, context.bits, context_bytes)          # checks context_bytes
        if grams is not None:
            grams.check_params()
        if not side and isinstance(model, FisherNBStack) and model.side_inputs:
            raise ConfigError("this stack weighs side inputs: give the filter the models that score "
                              "them (SpamFilter(..., context=ByteContextModel(), grams=ByteGramLogistic()))")
        self.context = context
        self.context_bytes = int(context_bytes)
        self.grams = grams
        self.calibrate = calibrate
        self.calibration: PlattScaling | IsotonicCalibration | None = None
        self.analyzer = analyzer if analyzer is not None else Analyzer()
        #: any model of spamkit.models (their fit and predict differ: the stack takes side scores)
        self.model: Any = model if model is not None else MultinomialNB()
        if vectorizer is None:
            vectorizer = Vectorizer("binary" if isinstance(self.model, (BernoulliNB, RobinsonFisher, FisherNBStack))
                                    else "tf")
        self.vectorizer = vectorizer
        self.parse_fallbacks: Counter = Counter()
        self.training: dict = {}
        #: message_key -> label of every message ``learn`` added (so none is learned twice)
        self.learned: dict = {}
        #: IMAP folders ``learn`` read: ``USER@HOST:PORT/FOLDER`` -> [UIDVALIDITY, highest UID read]
        self.imap_seen: dict = {}

    # ------------------------------------------------------------------ stages

    def parse(self, item) -> Message:
        """A :class:`Message` from a LabelledMessage, raw bytes, text or a Message."""
        msg = parse_item(item)
        if msg.defects:
            self.parse_fallbacks.update(defect_families(msg))
        return msg

    def tokens(self, item) -> list[str]:
        return self.analyzer(self.parse(item))

    def tokenized(self, items, tokenize=None):
        """The token lists of ``items``, in order. ``tokenize(items)`` may do it elsewhere (worker
        processes: :class:`spamkit.jobs.engines.ProcessEngine`): it yields ``(tokens, defect families)``
        per item, in order, and the families are counted here as :meth:`parse` counts them."""
        if tokenize is None:
            yield from map(self.tokens, items)
            return
        for tokens, families in tokenize(items):
            if families:
                self.parse_fallbacks.update(families)
            yield tokens

    def count_fallbacks(self, families_per_message) -> None:
        """Count the defect families of messages parsed elsewhere, as :meth:`parse` counts them."""
        for families in families_per_message:
            if families:
                self.parse_fallbacks.update(families)

    def transform(self, items):
        """The feature matrix of messages (unknown tokens ignored)."""
        self.check_fitted()
        return self.vectorizer.transform(self.tokens(m) for m in items)

    @property
    def reads_bytes(self) -> bool:
        """Whether the filter has side models, which read each message's raw bytes (a context
        model, byte 4-grams) besides its tokens."""
        return self.context is not None or self.grams is not None

    @property
    def side_bytes(self) -> int:
        """How many bytes of each raw message the side models read (the most either reads)."""
        return max(self.context_bytes if self.context is not None else 0,
                   self.grams.n_bytes if self.grams is not None else 0)

    def read(self, items) -> tuple[list, list | None]:
        """Each message's tokens and, with side models, the bytes they read (else None):
        every message parsed once."""
        token_lists: list = []
        texts: list | None = [] if self.reads_bytes else None
        for item in items:
            msg = self.parse(item)
            token_lists.append(self.analyzer(msg))
            if texts is not None:
                texts.append(msg.raw[:self.side_bytes])
        return token_lists, texts

    def side_text(self, item) -> bytes:
        """The bytes of a message (an item as :func:`parse_item` takes it) the side models read:
        the first :attr:`side_bytes` of what the parser reads (:func:`spamkit.parse.message.parsed_bytes`,
        without spamkit's own tags), as :meth:`read` takes them."""
        if isinstance(item, Message):
            return item.raw[:self.side_bytes]
        kind = item.kind if isinstance(item, LabelledMessage) else "text" if isinstance(item, str) else "auto"
        return parsed_bytes(raw_of(item), kind)[:self.side_bytes]

    def context_keys(self, texts):
        """The context model's keys of ``texts`` (:func:`spamkit.features.bytekeys.context_keys`)."""
        return context_keys(texts, self.context.order, self.context.bits, self.context_bytes)

    def gram_rows(self, texts) -> list:
        """The 4-gram model's features of ``texts``, packed where the compiled loops are built
        (:func:`spamkit.features.bytekeys.packed_gram_rows`: a training holds them all until the
        combiner is fitted)."""
        if self.grams is None:
            raise ConfigError("this filter has no byte 4-gram model")
        return packed_gram_rows(texts, self.grams.n_bytes, self.grams.bits)

    def side_scores(self, texts) -> np.ndarray | None:
        """The stack's side inputs of messages from the bytes ``texts`` (:meth:`read`): the context
        model's log-likelihood ratio per symbol, then the 4-gram model's log-odds, shape (n,
        side models); None for a filter without side models."""
        if not self.reads_bytes:
            return None
        columns = []
        if self.context is not None:
            columns.append(self.context.mean_log_ratio(self.context_keys(texts)))
        if self.grams is not None:
            columns.append(self.grams.decision_function(self.gram_rows(texts)))
        return np.column_stack(columns)

    def learn_side(self, texts, y) -> None:
        """The side models learn messages' bytes (labels ``y``)."""
        if self.context is not None:
            self.context.partial_fit(self.context_keys(texts), np.asarray(y))
        if self.grams is not None:
            self.grams.partial_fit(self.gram_rows(texts), np.asarray(y), classes=self.classes_)

    def unlearn_side(self, texts, y) -> None:
        """The side models take back messages learned with labels ``y`` (exactly for the context
        model's counts; a step towards the other class for the 4-gram model)."""
        if self.context is not None:
            self.context.unlearn(self.context_keys(texts), np.asarray(y))
        if self.grams is not None:
            self.grams.unlearn(self.gram_rows(texts), np.asarray(y))

    def features(self, items) -> tuple:
        """``(X, side)``: the feature matrix of messages and their side scores (:meth:`side_scores`)."""
        self.check_fitted()
        token_lists, texts = self.read(items)
        return self.vectorizer.transform(token_lists), self.side_scores(texts)

    # ------------------------------------------------------------------ training

    def fit(self, items, y=None, progress=None, tokenize=None, count=None) -> "SpamFilter":
        """Learn from messages in one streaming pass; labels from ``y`` or from each LabelledMessage.

        ``tokenize``: see :meth:`tokenized` (the same tokens in the same order, so the same filter).
        ``count(items)``: like ``tokenize`` but yields chunks of messages as
        ``(IndexedChunk, defect families of each)`` (:class:`~spamkit.features.numbering.IndexedChunk`),
        used where the vectorizer counts a vocabulary (the same matrix and vocabulary, so again
        the same filter).
        """
        labels: list = []
        ids: list = []
        distinct: list = []
        counting = count is not None and self.vectorizer.hashing is None and self.vectorizer.select != "ig"
        # the byte 4-grams' slots made by count's workers (spamkit.jobs.engines.ProcessEngine.counter):
        # then this process needs no message's bytes (a context model reads them here)
        rows: list | None = ([] if counting and self.grams is not None and self.context is None
                             and getattr(count, "gram_rows", False) else None)
        texts: list | None = [] if self.reads_bytes and rows is None else None
        explicit = list(y) if y is not None else None

        def labelled():
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
                if texts is not None:
                    texts.append(self.side_text(item))
                if progress is not None:
                    progress(item)
                yield item

        def token_stream():
            if counting:
                for chunk, families, *slots in count(labelled()):
                    self.count_fallbacks(families)
                    distinct.extend(chunk.sizes.tolist())
                    if rows is not None:
                        if not slots or slots[0] is None:
                            raise WorkerError("the workers sent no byte 4-grams for a filter that needs them")
                        rows.extend(slots[0])
                    yield chunk
                return
            if self.vectorizer.hashing is None and self.vectorizer.select != "ig":
                # numbered here a chunk at a time (features.numbered_here: what fit_transform
                # would do with the lists), each message's distinct tokens the numbering's count
                # of them instead of a set of its tokens (15 µs a TREC message)
                for chunk in numbered_here(self.tokenized(labelled(), tokenize)):
                    if isinstance(chunk, IndexedChunk):
                        distinct.extend(chunk.sizes.tolist())
                    else:                                   # no compiled table: the lists as they are
                        distinct.append(len(set(chunk)))
                    yield chunk
                return
            for tokens in self.tokenized(labelled(), tokenize):
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
        # the file's hash index of the vocabulary, made while the model is fitted (a thread that
        # hashes without the GIL; joined below, so no thread outlives fit)
        index_job = TermIndexJob(self.vectorizer.terms_) if self.vectorizer.terms_ is not None else None
        try:
            self._fit_model(X, y_arr, ids, distinct, texts, rows)
        except BaseException:
            if index_job is not None:
                index_job.wait()
            raise
        self._term_index = index_job.result() if index_job is not None else None
        return self

    def _fit_model(self, X, y_arr, ids, distinct, texts=None, gram_rows=None) -> None:
        """The model, its calibration and the familiarity guard, on the training matrix (and with
        side models, the bytes they read of each message: ``texts``, or the byte 4-grams' slots
        of each, made elsewhere: ``gram_rows``)."""
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
        elif self.reads_bytes:
            self.model.fit(X, y_arr, side=self.fit_side(texts, y_arr, gram_rows))
        else:
            self.model.fit(X, y_arr)
        self.classes_ = self.model.classes_
        self.calibration = None
        if self.calibrate != "none":
            self.calibration = self.fit_calibration(X, y_arr)
        self._fit_guard(X, np.asarray(distinct, dtype=np.float64))

    def driver_reads_bytes(self, engine) -> bool:
        """Whether training with ``engine`` reads each message's bytes in this process: for side
        models, unless the engine's workers make the byte 4-grams' slots and there is no context
        model (:meth:`spamkit.jobs.engine.Engine.makes_gram_rows`)."""
        return self.reads_bytes and not engine.makes_gram_rows(self)

    def fit_side(self, texts, y, gram_rows=None) -> np.ndarray:
        """Fit the side models on the bytes ``texts`` of the training messages (labels ``y``; or,
        for the byte 4-gram model, on their slots ``gram_rows`` made elsewhere) and return what
        the stack's combiner is fitted on, shape (n, side models): each message's side scores
        held out by the stack's own folds (:meth:`ByteContextModel.held_out_mean_log_ratio`,
        :meth:`ByteGramLogistic.held_out_scores`)."""
        columns = []
        k, folds = self.model.fold_assignment(y) if isinstance(self.model, FisherNBStack) else (0, None)
        if self.context is not None:
            keys = self.context_keys(texts)
            self.context.fit(keys, y)
            columns.append(self.context.held_out_mean_log_ratio(keys, y, folds) if k >= 2 else np.zeros(len(texts)))
        if self.grams is not None:
            rows = self.gram_rows(texts) if gram_rows is None else gram_rows
            if len(rows) != len(y):
                raise ConfigError(f"{len(rows)} messages' byte 4-grams for {len(y)} labels")
            self.grams.fit(rows, y)
            columns.append(self.grams.held_out_scores(rows, y, folds) if k >= 2 else np.zeros(len(texts)))
        return np.column_stack(columns)

    # ------------------------------------------------------------------ familiarity

    #: the familiarity guard (spamkit.decide.guard.FamiliarityGuard) of a ham/spam filter, or None
    guard = None
    #: hashed filters: which columns training saw (vocabulary filters know only what they saw)
    seen_columns = None
    #: ``(terms, term_hash_index(terms), len(terms))`` made during :meth:`fit`, for :meth:`save`
    _term_index: TermIndex | None = None
    #: a loaded filter's manifest (:meth:`load`), or None
    manifest: dict | None = None
    #: ``(labels, class probabilities)`` of the messages ``spamkit train --test-fraction`` held
    #: out, for the cost report (:func:`spamkit.jobs.train.train_filter`), or None
    held_out_scores: tuple[list, np.ndarray] | None = None

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
        return self.familiarity_of(distinct_tokens(token_lists), X)

    def familiarity_of(self, distinct, X) -> np.ndarray:
        """:meth:`familiarity` from each message's number of distinct tokens and its row of ``X``."""
        distinct = np.asarray(distinct, dtype=np.float64)
        if self.seen_columns is not None:
            known = columns_per_row(X, self.seen_columns)
        else:
            known = np.diff(X.indptr).astype(np.float64)     # a vocabulary has only seen tokens
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.minimum(np.where(distinct > 0, known / distinct, 1.0), 1.0)

    def score(self, items) -> tuple[np.ndarray, np.ndarray]:
        """``(class probabilities, familiarity)`` of messages: what :meth:`decide` needs."""
        self.check_fitted()
        token_lists, texts = self.read(items)
        X = self.vectorizer.transform(token_lists)
        return np.exp(self.log_proba(X, self.side_scores(texts))), self.familiarity(token_lists, X)

    def fit_calibration(self, X, y):
        """Platt scaling on out-of-fold log-odds (5-fold stratified cross-validation of the model)."""
        from ..decide.selection import out_of_fold_log_odds
        if self.reads_bytes:
            raise ConfigError("a filter with side models is calibrated by its stack's combiner")
        if len(self.classes_) != 2:
            raise ConfigError(f"calibration needs two classes, the training data has {len(self.classes_)}")
        method = IsotonicCalibration if self.calibrate == "isotonic" else PlattScaling
        return method().fit(out_of_fold_log_odds(self.model, X, y), y == self.classes_[1])

    #: for kNN: None, "condense" (Hart) or "edit" (Wilson editing, then Hart)
    condense_mode: str | None = None
    #: how a chosen cut was chosen (``spamkit cv --choose-threshold``), kept with it in the file
    threshold_info: dict = {}

    def _tune_k(self, X, y):
        from ..decide.selection import tune_knn
        params = {p: getattr(self.model, p) for p in ("metric", "tau", "epsilon", "memory_limit", "n_jobs")}
        folds = int(min(5, np.unique(y, return_counts=True)[1].min()))
        result = tune_knn(X, y, folds=max(folds, 2), **params)
        self.model.set_params(k=result.best_k, weights=result.best_weights)
        return result

    def learn(self, items, y) -> "SpamFilter":
        """Add messages to a fitted filter's counts (vocabulary fixed; hashing keeps every token;
        a context model learns their bytes)."""
        self.check_fitted()
        items = list(items)
        token_lists, texts = self.read(items)
        X = self.vectorizer.transform(token_lists)
        self.model.partial_fit(X, np.asarray(y))
        if texts is not None:
            self.learn_side(texts, y)
        self.saw(X)
        return self

    def saw(self, X) -> None:
        """Record the columns of learned rows as seen (hashed filters; see :meth:`familiarity`)."""
        if self.seen_columns is not None and X.nnz:
            self.seen_columns[X.indices] = True

    # ------------------------------------------------------------------ learning on a copy

    #: what learning a message changes (:meth:`learn`, :meth:`learn_side`, the guard's window,
    #: the hashed columns seen): :meth:`learning_copy` copies these and shares the rest
    LEARNING_STATE = ("model", "context", "grams", "guard", "seen_columns")

    def learning_copy(self) -> "SpamFilter":
        """A filter that can learn without changing this one: its own copies of what learning
        changes (:data:`LEARNING_STATE`, the learned messages' keys), the vocabulary, analyzer
        and decision layer shared -- what a server needs to learn a user's messages over a site
        filter (a few MB where loading the file again costs its whole size)."""
        import copy
        twin = copy.copy(self)
        for name in self.LEARNING_STATE:
            if getattr(self, name, None) is not None:
                setattr(twin, name, copy.deepcopy(getattr(self, name)))
        twin.learned = dict(self.learned)
        return twin

    # ------------------------------------------------------------------ prediction

    def check_fitted(self):
        if not hasattr(self, "classes_"):
            raise errors.NotFittedError("this SpamFilter is not trained yet; call fit or load a filter file")

    def predict_proba(self, items) -> np.ndarray:
        """p(class | message), shape (n, n_classes), columns in ``classes_`` order."""
        return np.exp(self.log_proba(*self.features(items)))

    def predict(self, items) -> np.ndarray:
        if self.calibration is None and not self.reads_bytes:
            return self.model.predict(self.transform(items))
        return self.classes_[np.argmax(self.log_proba(*self.features(items)), axis=1)]

    def log_proba(self, X, side=None) -> np.ndarray:
        """log p(class | message) for rows of a feature matrix (and, with a context model, the
        messages' ``side`` scores: :meth:`side_scores`), after the calibration and the prior
        correction (:meth:`set_spam_rate`) if any."""
        return self.adjust_log_proba(self.model_log_proba(X, side))

    def model_log_proba(self, X, side=None) -> np.ndarray:
        """The model's log p(class | message), before calibration and prior correction."""
        if not self.reads_bytes:
            return self.model.predict_log_proba(X)
        if side is None:
            raise ConfigError("this filter's stack also weighs its side models, which read each message's "
                              "bytes: score messages (score, predict_proba), or pass side=side_scores(texts)")
        return self.model.predict_log_proba(X, side=side)

    def adjust_log_proba(self, lp: np.ndarray) -> np.ndarray:
        """The model's log-probabilities ``lp`` after the calibration and the prior correction (row by row)."""
        if self.calibration is not None:
            with np.errstate(invalid="ignore"):
                log_c0, log_c1 = self.calibration.log_proba(lp[:, 1] - lp[:, 0])
            lp = np.column_stack([log_c0, log_c1])
        if self._prior_shift:
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
        the log-odds move by logit(rate) - logit(training rate): :func:`spamkit.decide.decision.prior_shift`).

        Uncalibrated Robinson/Fisher is refused: its indicator ignores the class prior, so there is
        no training prior to replace (calibrate it, or use fisher-nb).
        """
        self.check_fitted()
        if rate is None:
            self._prior_shift = 0.0
            return self
        if isinstance(self.model, RobinsonFisher) and self.calibration is None:
            raise ConfigError("an uncalibrated fisher filter ignores class priors, so its prior cannot be "
                              "corrected; train it with --calibrate platt (or use fisher-nb)")
        self._prior_shift = prior_shift(self.training_spam_rate(), rate)
        return self

    @property
    def spam_column(self) -> int:
        """Column of ``"spam"`` in ``classes_`` (two-class filters only)."""
        self.check_fitted()
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
        self.check_fitted()
        X, side = self.features([item])
        return self.explain_row(X, n, side)

    def explain_row(self, X, n: int = 10, side=None) -> dict:
        """:meth:`explain` for one row of features already computed (and its side score, for a
        filter with a context model: then ``"context"`` holds the context model's score, its log-
        likelihood ratio per byte, positive towards spam, and its share of the combiner's log-odds)."""
        if isinstance(self.model, KNNClassifier):
            neighbours = self.model.explain(X, min(n, self.model.rows_.shape[0]))
            return {"neighbours": [{"id": i, "similarity" if self.model.metric in ("cosine", "jaccard")
                                    else "distance": m, "label": lab, "weight": w}
                                   for i, m, lab, w in neighbours]}
        if len(self.classes_) == 2 and SPAM_NAME in [str(c) for c in self.classes_]:
            a = self.spam_column
            b = 1 - a
        else:
            order = np.argsort(-self.model.joint_log_likelihood(X)[0], kind="stable")
            a, b = int(order[0]), int(order[1])
        idx, contrib = self.model.contributions(X)
        share = contrib[a] - contrib[b]
        ranked = np.argsort(-share, kind="stable")
        towards = [(self.vectorizer.term(int(idx[k])), float(share[k])) for k in ranked[:n] if share[k] > 0]
        against = [(self.vectorizer.term(int(idx[k])), float(share[k])) for k in ranked[::-1][:n] if share[k] < 0]
        out: dict[str, Any] = {"classes": (str(self.classes_[a]), str(self.classes_[b])), "towards": towards,
                               "against": against}
        if self.reads_bytes and side is not None:
            scores = np.asarray(side, dtype=np.float64).reshape(-1)
            coef = getattr(self.model, "coef_", None)
            weights = coef[-len(scores):] if coef is not None else np.zeros(len(scores))
            sign = 1.0 if str(self.classes_[a]) == str(self.classes_[1]) else -1.0
            column = 0
            if self.context is not None:
                score, weight = float(scores[0]), float(weights[0])
                out["context"] = {"log_ratio_per_byte": sign * score, "share": sign * weight * score}
                column = 1
            if self.grams is not None:
                score, weight = float(scores[column]), float(weights[column])
                out["grams"] = {"log_odds": sign * score, "share": sign * weight * score}
        return out

    # ------------------------------------------------------------------ files

    # ------------------------------------------------------------------ decisions

    #: the decision layer: None (the most probable class) or a CostMatrix
    costs: CostMatrix | None = None

    def set_costs(self, costs: CostMatrix | None) -> "SpamFilter":
        """Decide by minimum expected cost from now on (checked against the filter's classes)."""
        self.check_fitted()
        self.costs = costs.align(self.classes_) if costs is not None else None
        return self

    #: a threshold on P(spam) chosen by cross-validation (``spamkit threshold --save``); None: not set
    threshold: float | None = None

    def decide(self, proba, familiarity=None) -> np.ndarray:
        """Decisions for rows of class probabilities: spam above a chosen ``threshold`` if one is set,
        else the cheapest under ``costs``, else the most probable class.

        With ``familiarity`` (:meth:`score`) and a decision layer that can say "unsure", the
        :class:`~spamkit.decide.guard.FamiliarityGuard` turns "spam" into "unsure" for mail unlike
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
            rows = np.asarray(proba, dtype=np.float64)
            decisions = self.guard.apply(decisions, familiarity,
                                         redecide=lambda i, extra: self._discounted_decision(rows[i], extra))
        return decisions

    def _discounted_decision(self, row, extra: float) -> str:
        """The costs' decision on a row of class probabilities with ``extra`` log-odds taken from
        P(spam) (the familiarity guard's margin: :func:`spamkit.decide.familiar.discounted_row`),
        in plain Python, so that arrays and single rows decide alike."""
        if self.costs is None:
            raise ConfigError("the familiarity guard's margin needs the filter's costs")
        return self.costs.decide_row(discounted_row(row, self.spam_column, extra))

    def spam_threshold(self) -> float:
        """The P(spam) above which :meth:`decide` says spam (before the familiarity guard): the saved
        threshold, else where the cost matrix's cheapest decision turns to spam (the top of the
        unsure band, or the Bayes threshold), else 1/2. Found by bisection on :meth:`decide`, so it
        holds for any two-class decision layer.

        >>> f = SpamFilter(); f.classes_ = np.array(["ham", "spam"])
        >>> round(f.spam_threshold(), 9), round(f.set_costs(CostMatrix.default()).spam_threshold(), 9)
        (0.5, 0.98)
        """
        s = self.spam_column
        if self.threshold is not None:
            return float(self.threshold)
        low, high = 0.0, 1.0
        for _ in range(50):
            mid = (low + high) / 2
            row = np.zeros((1, 2))
            row[0, s], row[0, 1 - s] = mid, 1 - mid
            if self.decide(row)[0] == SPAM_NAME:
                high = mid
            else:
                low = mid
        return high

    def verdict(self, raw: bytes, alone: bool = True) -> tuple[str, float]:
        """``(verdict, P(spam))`` of one raw message: verdict is "spam", "ham" or "unsure" (the
        decision layer's "unsure" row), any other class counting as ham. Judged ``alone`` (pipe
        mode, the servers): the familiarity guard's floor applies, its stream does not; a filter
        run over a mailbox passes ``alone=False`` (see :meth:`verdict_from`)."""
        proba, familiarity = self.score([raw])
        return self.verdict_from(proba[0], familiarity[0], alone=alone)

    def stream_verdict(self, raw: bytes) -> tuple[str, float]:
        """:meth:`verdict` of the next message of a stream (a filter run over a user's mailboxes):
        the familiarity guard's window sees it."""
        return self.verdict(raw, alone=False)

    def verdict_from(self, proba_row, familiarity: float, alone: bool = False) -> tuple[str, float]:
        """:meth:`verdict` from one message's row of :meth:`score` (its class probabilities and
        familiarity), scored here or elsewhere: a filter run scores messages in batches in worker
        processes and decides here, in mailbox order, so that the familiarity guard sees the
        stream as one process would. A message scores the same alone and in a batch.
        ``alone``: the message is judged by itself, outside the guard's stream
        (:meth:`FamiliarityGuard.unfamiliar`): what a server does for each request, so that no
        client's mail changes another's verdicts.

        :meth:`decide` for one row, in plain Python (the same arithmetic and the same decision,
        ``tests/test_decision.py``; NumPy on one row cost a filter run ~85 us a message)."""
        row = list(map(float, proba_row))
        classes = [str(c) for c in self.classes_]
        s = classes.index(SPAM_NAME) if SPAM_NAME in classes else self.spam_column   # (which says what is wrong)
        if self.threshold is not None:
            decision = classes[s] if row[s] > self.threshold else classes[1 - s]
        elif self.costs is None:
            decision = classes[row.index(max(row))]  # the first of equals, as np.argmax
        else:
            decision = self.costs.decide_row(row)
            if self.guard is not None and UNSURE_NAME in self.costs.decisions:
                decision = self.guard.apply_one(decision, familiarity, alone,
                                                redecide=lambda extra: self._discounted_decision(row, extra))
        return Verdict.of(decision).label, row[s]

    # ------------------------------------------------------------------ files

    def save(self, path) -> None:
        self.check_fitted()
        extra = {"decision": self.costs.as_dict()} if self.costs is not None else {}
        if self.calibration is not None:
            extra["calibration"] = self.calibration.as_dict()
        if self.threshold is not None:
            extra["threshold"] = {"p_spam": float(self.threshold), **self.threshold_info}
        if self.guard is not None:
            extra["familiarity"] = self.guard.as_dict()
        if self.imap_seen:
            extra["imap_seen"] = {k: [int(v[0]), int(v[1])] for k, v in self.imap_seen.items()}
        # 16-byte digests as rows of uint8 (a bytes dtype would drop trailing zero bytes)
        keys = np.frombuffer(b"".join(sorted(self.learned)), dtype=np.uint8).reshape(-1, 16)
        labels = np.array([str(self.learned[k]) for k in sorted(self.learned)], dtype=str)
        arrays = {"learned_keys": keys, "learned_labels": labels} if self.learned else {}
        if self.seen_columns is not None:
            arrays["seen_columns"] = np.packbits(self.seen_columns)
        if self.context is not None:
            extra["context"] = {**self.context.get_params(), "max_bytes": self.context_bytes}
            arrays.update({f"context_{k}": v for k, v in self.context.state_arrays().items()})
        if self.grams is not None:
            extra["grams"] = self.grams.get_params()
            arrays.update({f"grams_{k}": v for k, v in self.grams.state_arrays().items()})
        save_filter(path, self.analyzer, self.vectorizer, self.model, self.training, extra, arrays,
                    term_index=self._term_index, side_model=self.reads_bytes)

    @staticmethod
    def _load_context(path, manifest, model, arrays) -> tuple:
        """``(context model, bytes it reads)`` of a filter file, or ``(None, CONTEXT_BYTES)``;
        a stack with side inputs needs one, and nothing else may have one."""
        spec = manifest.get("extra", {}).get("context")
        if spec is None:
            return None, CONTEXT_BYTES
        try:
            params = {k: spec[k] for k in ("order", "beta", "bits")}
            context = ByteContextModel(**params)
            table = "packed" if "context_packed" in arrays else "table"      # dense: older files
            context.restore_state(model.classes_, {k: arrays[f"context_{k}"] for k in
                                                   (table, "class_count", "symbol_count")})
            context_bytes = spec["max_bytes"]
            context_keys([], context.order, context.bits, context_bytes)
        except (KeyError, TypeError, ValueError, ConfigError) as exc:
            raise ModelFormatError(f"{path}: damaged context model ({exc})") from None
        return context, context_bytes

    @staticmethod
    def _load_grams(path, manifest, model, arrays) -> ByteGramLogistic | None:
        """The 4-gram model of a filter file, or None; one needs a side input of the stack."""
        spec = manifest.get("extra", {}).get("grams")
        if spec is None:
            return None
        try:
            grams = ByteGramLogistic(**{k: spec[k] for k in ("n_bytes", "bits", "rate")})
            grams.restore_state(model.classes_, {k: arrays[f"grams_{k}"] for k in ("weights", "n_learned")})
        except (KeyError, TypeError, ValueError, IndexError, ConfigError) as exc:
            raise ModelFormatError(f"{path}: damaged 4-gram model ({exc})") from None
        return grams

    @classmethod
    def load(cls, path) -> "SpamFilter":
        analyzer, vectorizer, model, manifest = load_filter(path)
        learned = manifest.get("filter_arrays", {})
        extra = manifest.get("extra", {})
        side, present = getattr(model, "side_inputs", 0), ("context" in extra) + ("grams" in extra)
        if side != present:
            raise ModelFormatError(f"{path}: the stack weighs {side} side input(s) but the file has {present} side "
                                   f"model(s) (a context model: {'yes' if 'context' in extra else 'no'}, a 4-gram "
                                   f"model: {'yes' if 'grams' in extra else 'no'})")
        context, context_bytes = cls._load_context(path, manifest, model, learned)
        grams = cls._load_grams(path, manifest, model, learned)
        f = cls(analyzer, vectorizer, model, context=context, context_bytes=context_bytes, grams=grams)
        f.classes_ = model.classes_
        f.training = manifest.get("training", {})
        f.manifest = manifest
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
        seen = manifest.get("extra", {}).get("imap_seen") or {}
        if not (isinstance(seen, dict) and all(isinstance(k, str) and isinstance(v, list) and len(v) == 2
                                               and all(isinstance(x, int) and x >= 0 for x in v)
                                               for k, v in seen.items())):
            raise ModelFormatError(f"{path}: damaged list of IMAP folders learned from")
        f.imap_seen = {k: list(v) for k, v in seen.items()}
        decision = manifest.get("extra", {}).get("decision")
        if decision:
            try:
                f.set_costs(CostMatrix(decision["costs"], decision["classes"], decision["decisions"]))
            except (KeyError, TypeError) as exc:
                raise ModelFormatError(f"{path}: damaged decision layer ({exc})") from None
        return f
