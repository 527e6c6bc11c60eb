"""The :class:`SpamFilter`: one trained filter as one object.

Analyzer + vectorizer + model, with what a deployed filter carries on top: the calibration
of its scores, the decision layer (cost matrix, unsure band), the familiarity guard, the
messages ``spamkit learn`` added, and its filter file (:meth:`SpamFilter.save`,
:meth:`SpamFilter.load`). It runs the stages in order (``parse_message`` -> ``Analyzer`` ->
``Vectorizer`` -> model -> decision) and owns no format and no formula: each lives in its
stage's module. Corpus-level jobs (train, evaluate, cross-validate, learn) are in
:mod:`spamkit.jobs`; turning settings into an untrained filter is :mod:`spamkit.filterfile.config`.

One concern: every operation on a trained filter (scoring, explaining, deciding, guarding,
saving) needs the same state, so they stay on one class; what the filter carries beside its
model is written and read back by :mod:`spamkit.filterfile.carried`.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from ..features.bytekeys import context_keys
from ..decide.calibration import CALIBRATIONS, IsotonicCalibration, PlattScaling
from ..corpus import LabelledMessage, require_classes
from ..common import errors
from ..common.errors import ConfigError, CorpusError, ModelFormatError, WorkerError
from ..features.counting import numbered_here
from ..features.numbering import IndexedChunk
from ..features.vectorizer import Vectorizer
from ..parse.message import Message, defect_families
from ..models import BernoulliNB, FisherNBStack, KNNClassifier, MultinomialNB, RobinsonFisher
from ..models.bytegrams import ByteGramLogistic
from ..models.context import ByteContextModel
from .sides import CONTEXT_BYTES, parse_item
from .verdicts import Decisions
from .carried import carried_state, restore_carried
from .persist import load_filter, save_filter
from .termindex import TermIndex, TermIndexJob
from ..scoring.arrays import log_expit
from ..text import Analyzer

__all__ = ["SpamFilter"]


class SpamFilter(Decisions):
    """Analyzer + vectorizer + model: raw messages in, class probabilities out.

    Its methods are in three modules: this one (reading messages, training, scoring, its file),
    :mod:`spamkit.filterfile.sides` (the byte-level side models, :class:`SideModels`) and
    :mod:`spamkit.filterfile.verdicts` (costs, thresholds, the guard, verdicts and explanations,
    :class:`Decisions`), which it inherits.

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
            side = self.fit_side(texts, y_arr, gram_rows)
            if gram_rows is not None:
                gram_rows.clear()                  # read once: let go before the stack is fitted
            self.model.fit(X, y_arr, side=side)
        else:
            self.model.fit(X, y_arr)
        self.classes_ = self.model.classes_
        self.calibration = None
        if self.calibrate != "none":
            self.calibration = self.fit_calibration(X, y_arr)
        self._fit_guard(X, np.asarray(distinct, dtype=np.float64))

    # ------------------------------------------------------------------ what training leaves

    #: ``(terms, term_hash_index(terms), len(terms))`` made during :meth:`fit`, for :meth:`save`
    _term_index: TermIndex | None = None
    #: a loaded filter's manifest (:meth:`load`), or None
    manifest: dict | None = None
    #: ``(labels, class probabilities)`` of the messages ``spamkit train --test-fraction`` held
    #: out, for the cost report (:func:`spamkit.jobs.train.train_filter`), or None
    held_out_scores: tuple[list, np.ndarray] | None = None

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

    # ------------------------------------------------------------------ files

    def save(self, path) -> None:
        """The filter file: the model's arrays and settings, and what the filter carries beside
        them (:func:`spamkit.filterfile.carried.carried_state`)."""
        self.check_fitted()
        extra, arrays = carried_state(self)
        save_filter(path, self.analyzer, self.vectorizer, self.model, self.training, extra, arrays,
                    term_index=self._term_index, side_model=self.reads_bytes)

    @classmethod
    def load(cls, path) -> "SpamFilter":
        """The filter a file holds, every part checked (a damaged one raises ModelFormatError
        naming the file and the part)."""
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
        restore_carried(f, path, manifest, learned)
        return f
