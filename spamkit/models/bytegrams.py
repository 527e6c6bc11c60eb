"""Online logistic regression over hashed binary byte 4-grams: the TREC 2007 winner's filter.

The features of a message are the distinct byte 4-grams of its first ``n_bytes`` raw bytes,
headers included, hashed into 2**``bits`` weights (:func:`spamkit.features.bytekeys.gram_slots`); each
feature is 1 if present (binary, no normalisation). The model is a logistic regression

    log-odds(spam | x) = Σ_j w_j x_j            (no intercept: the weights start at 0)

trained online by stochastic gradient descent on the log-loss, one step per message, whatever
the score (not only on mistakes): w_j += rate (y - p) for every feature j of the message, with
y = 1 for spam, p = 1 / (1 + exp(-log-odds)) the probability it was given.

Sources: J. Goodman and W. Yih, "Online discriminative spam filter training", CEAS 2006
(online logistic regression on binary features, one gradient step per message); G. V. Cormack,
"University of Waterloo participation in the TREC 2007 spam track", TREC 2007 (the byte
4-grams of the first 2,500 bytes, binary, hashed, rate 0.002: the best immediate-feedback
filter of TREC 2007's public corpus); D. Sculley and G. Wachman, "Relaxed online SVMs for spam
filtering", SIGIR 2007 (the same features; first 3,000 bytes). The hash is spamkit's own (the
paper does not specify one).

Unlike the counting models, the weights of a message cannot be subtracted again: ``unlearn``
is a gradient step towards the other class (what a correction means to an online learner), and
held-out scores for a stack's combiner come from a model of the other folds for each fold
(:meth:`ByteGramLogistic.held_out_scores`), not from unlearning one fold at a time.

The steps and scores run in the compiled loops of ``spamkit.features.gramloops`` where they are built
(the same steps; a message's weights added in slot order, which differs from NumPy's pairwise sum
in the last bits of a double), in NumPy otherwise.

Measured (``scripts/waterloo_logistic.py``; docs/results.md): alone, online, (1-ROCA)% 0.0568 on
trec07p-dev, 0.0004 on CSDMC2010, 0.0396 on trec06p with 3,500 bytes.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..features.bytekeys import unpack_slots
from ..common.compiled import gramloops
from ..common.errors import ConfigError
from ..common.names import GRAM_BITS, GRAM_BYTES, GRAM_FOLDS, GRAM_RATE
from .base import LOG_ODDS_LIMIT, ClassifierMixin, Estimator
from .stack import fold_of_rows

# the settings' defaults (GRAM_BYTES, GRAM_BITS, GRAM_RATE, GRAM_FOLDS) live in spamkit.common.names, which the
# workers that compute the 4-grams import without NumPy


def _log_odds_to_p(z: float) -> float:
    """The logistic function of a log-odds, without overflow."""
    if z >= 0:
        return 1.0 / (1.0 + np.exp(-z))
    e = np.exp(z)
    return e / (1.0 + e)


class ByteGramLogistic(ClassifierMixin, Estimator):
    """Two-class online logistic regression on the hashed byte 4-grams of raw messages.

    Takes each message as its features, the array of its 4-grams' slots
    (:func:`spamkit.features.bytekeys.gram_slots` with this model's ``n_bytes`` and ``bits``; or the
    same packed, :func:`spamkit.features.bytekeys.packed_gram_rows`), not a feature matrix: a message
    has a few thousand of 2**18 columns, and learning touches only those.

    Parameters
    ----------
    n_bytes : int
        How many bytes of each message are read (:data:`GRAM_BYTES`).
    bits : int
        2**bits weights (:data:`GRAM_BITS`).
    rate : float
        The learning rate of each gradient step (:data:`GRAM_RATE`).
    folds : int
        The folds of :meth:`held_out_scores` (:data:`GRAM_FOLDS`): how the scores a stack's
        combiner weighs this model by are held out. Used in fitting only.

    Attributes
    ----------
    classes_ : ndarray (2,)
        The classes; the second is the positive one (spam).
    weights_ : ndarray (2**bits,) float32
    n_learned_ : int
        Messages learned (each one gradient step).

    >>> from spamkit.features.bytekeys import gram_slots
    >>> rows = lambda texts: [gram_slots(t, 3500, 12) for t in texts]
    >>> m = ByteGramLogistic(bits=12).fit(rows([b"cheap pills now", b"meeting at noon"] * 20), ["spam", "ham"] * 20)
    >>> m.predict(rows([b"cheap pills", b"meeting at ten"])).tolist()
    ['spam', 'ham']
    """

    def __init__(self, n_bytes=GRAM_BYTES, bits=GRAM_BITS, rate=GRAM_RATE, folds=GRAM_FOLDS):
        self.n_bytes = n_bytes
        self.bits = bits
        self.rate = rate
        self.folds = folds

    def check_params(self) -> None:
        if not (isinstance(self.n_bytes, (int, np.integer)) and not isinstance(self.n_bytes, bool) and self.n_bytes >= 4):
            raise ConfigError(f"a byte 4-gram model reads at least 4 bytes of each message, got {self.n_bytes!r}")
        if not (isinstance(self.bits, (int, np.integer)) and not isinstance(self.bits, bool) and 8 <= self.bits <= 30):
            raise ConfigError(f"the 4-gram weights are 2**bits with bits from 8 to 30, got {self.bits!r}")
        if not (isinstance(self.rate, (int, float, np.floating)) and self.rate > 0 and np.isfinite(self.rate)):
            raise ConfigError(f"the 4-gram model's learning rate must be > 0, got {self.rate!r}")
        if not (isinstance(self.folds, (int, np.integer)) and not isinstance(self.folds, bool) and self.folds >= 2):
            raise ConfigError(f"the 4-gram model's held-out scores need folds >= 2, got {self.folds!r}")

    def slots(self, row) -> np.ndarray:
        """A message's features, checked: whole numbers within the table (a packed row,
        :func:`spamkit.features.bytekeys.pack_slots`, is unpacked)."""
        row = unpack_slots(row) if isinstance(row, bytes) else np.asarray(row)
        if row.ndim != 1 or (row.size and (row.dtype.kind not in "iu" or row.min() < 0 or row.max() >> int(self.bits))):
            raise ConfigError(f"a message's 4-gram features are slots from 0 to 2**{self.bits} - 1 "
                              "(spamkit.features.bytekeys.gram_slots)")
        return row

    def _loop_rows(self, texts) -> list:
        """The messages' slot arrays as the compiled loops take them (uint32 arrays, or packed
        rows as they are; their range is checked there, before any step: :meth:`_run_loop`)."""
        return [t if type(t) is bytes or (type(t) is np.ndarray and t.dtype == np.uint32 and t.ndim == 1)
                else self.slots(t).astype(np.uint32) for t in texts]

    def _run_loop(self, loop, *args) -> np.ndarray:
        """A compiled loop's float64 results; a slot outside the table is refused as :meth:`slots` refuses it."""
        try:
            return np.frombuffer(loop(*args), dtype=np.float64)
        except ValueError:
            raise ConfigError(f"a message's 4-gram features are slots from 0 to 2**{self.bits} - 1 "
                              "(spamkit.features.bytekeys.gram_slots)") from None

    def _start(self, classes) -> None:
        classes = np.asarray(classes)
        if classes.shape != (2,) or classes[0] == classes[1]:
            raise ConfigError(f"the byte 4-gram model separates two classes, got {classes.tolist()}")
        self.check_params()
        self.classes_ = classes
        self.weights_ = np.zeros(1 << int(self.bits), dtype=np.float32)
        self.n_learned_ = 0

    def _targets(self, y) -> np.ndarray:
        y = np.asarray(y)
        known = np.isin(y, self.classes_)
        if not known.all():
            raise ConfigError(f"label {y[~known][0]!r} is not one of the model's classes {self.classes_.tolist()}")
        return (y == self.classes_[1]).astype(np.float64)

    def _step(self, slots: np.ndarray, target: float) -> float:
        """Score one message (its log-odds), then take one gradient step on it."""
        w = self.weights_
        z = float(w[slots].sum(dtype=np.float64))
        w[slots] += np.float32(self.rate * (target - _log_odds_to_p(z)))
        self.n_learned_ += 1
        return z

    def fit(self, texts, y) -> "ByteGramLogistic":
        """Learn the messages (their slot arrays) in the given order, one gradient step each, from zero weights.

        Returns ``self``; :attr:`held_out_` holds the log-odds each message got before it was
        learned (the online protocol's scores of the pass)."""
        texts, y = list(texts), np.asarray(y)
        if len(texts) != len(y):
            raise ConfigError(f"{len(texts)} messages but {len(y)} labels")
        classes = np.unique(y)
        if classes.size != 2:
            raise ConfigError(f"the byte 4-gram model separates two classes, got {classes.tolist()}")
        self._start(classes)
        self.held_out_ = self._learn(texts, self._targets(y))
        return self

    def _learn(self, texts, targets) -> np.ndarray:
        loops = gramloops()
        if loops is not None:
            rows = self._loop_rows(texts)
            scores = self._run_loop(loops.steps, self.weights_, rows, np.asarray(targets, dtype=np.float64),
                                    float(self.rate)).copy()
            self.n_learned_ += len(rows)
            return scores
        scores = np.empty(len(texts))
        for i, (text, target) in enumerate(zip(texts, targets)):
            scores[i] = self._step(self.slots(text), float(target))
        return scores

    def held_out_scores(self, texts, y, folds=None) -> np.ndarray:
        """Each message's log-odds under a model of this one's parameters learned, in order, on
        the messages of the other folds: what a stack's combiner fitted on its own
        cross-validated scores (``FisherNBStack.fold_assignment``) must see of this input,
        scores of a model about as trained as the one it will weigh. (The scores of the one
        online pass, :attr:`held_out_`, are those of a model that knew nothing at first:
        weighed by them, a combiner under-trusts the trained model.)

        ``folds``: the fold of each message; by default :attr:`folds` stratified folds
        (:func:`spamkit.models.stack.fold_of_rows`; fewer when a class has fewer messages)."""
        texts, y = list(texts), np.asarray(y)
        if folds is None:
            self.check_params()
            classes, codes = np.unique(y, return_inverse=True)
            smallest = int(np.bincount(codes).min()) if len(classes) == 2 else 0
            if smallest < 2:
                raise ConfigError(f"held-out scores need two classes of 2 messages or more, got "
                                  f"{dict(zip(classes.tolist(), np.bincount(codes).tolist()))}")
            folds = fold_of_rows(codes, min(int(self.folds), smallest))
        folds = np.asarray(folds)
        if not (len(texts) == len(y) == len(folds)):
            raise ConfigError(f"{len(y)} labels and {len(folds)} folds for {len(texts)} messages")
        out = np.empty(len(texts))

        def one_fold(fold):
            rest, members = np.flatnonzero(folds != fold), np.flatnonzero(folds == fold)
            model = ByteGramLogistic(self.n_bytes, self.bits, self.rate).fit([texts[i] for i in rest], y[rest])
            out[members] = model.decision_function([texts[i] for i in members])

        # the folds' models are independent: where the compiled loops run them (without the GIL),
        # two at a time on two threads, the same scores as one after another
        threads = 2 if gramloops() is not None and (os.cpu_count() or 1) > 1 else 1
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(one_fold, np.unique(folds)))
        return out

    def partial_fit(self, texts, y, classes=None) -> "ByteGramLogistic":
        """One gradient step for each message, in order (``classes`` on the first call)."""
        if self.first_partial_fit(classes):             # classes=[negative, positive]
            self._start(np.asarray(classes))
        texts = list(texts)
        self._learn(texts, self._targets(y))
        return self

    def unlearn(self, texts, y) -> "ByteGramLogistic":
        """Take back messages learned with label ``y``: a gradient step towards the other class
        each (weights cannot be subtracted exactly; :mod:`spamkit.models.bytegrams`)."""
        self.check_fitted()
        targets = 1.0 - self._targets(y)
        self._learn(list(texts), targets)
        return self

    def check_fitted(self) -> None:
        if not hasattr(self, "weights_"):
            from ..common.errors import NotFittedError
            raise NotFittedError("this ByteGramLogistic is not trained yet; call fit")

    def decision_function(self, texts) -> np.ndarray:
        """Each message's log-odds of the positive class, within ±LOG_ODDS_LIMIT."""
        self.check_fitted()
        w = self.weights_
        loops = gramloops()
        if loops is not None:
            out = self._run_loop(loops.scores, w, self._loop_rows(texts))
        else:
            out = np.array([float(w[self.slots(t)].sum(dtype=np.float64)) for t in texts], dtype=np.float64)
        return np.clip(out, -LOG_ODDS_LIMIT, LOG_ODDS_LIMIT)

    def predict_log_proba(self, texts) -> np.ndarray:
        z = self.decision_function(texts)
        return np.column_stack([-np.logaddexp(0.0, z), -np.logaddexp(0.0, -z)])

    def predict_proba(self, texts) -> np.ndarray:
        return np.exp(self.predict_log_proba(texts))

    def predict(self, texts) -> np.ndarray:
        return self.classes_[(self.decision_function(texts) > 0).astype(int)]

    # ------------------------------------------------------------------ the filter file

    def state_arrays(self) -> dict:
        """What a filter file stores: the weights (most are 0 and compress to nothing)."""
        self.check_fitted()
        return {"weights": self.weights_, "n_learned": np.array([self.n_learned_], dtype=np.int64)}

    def restore_state(self, classes, arrays: dict) -> "ByteGramLogistic":
        """The model of a filter file's arrays (checked: shape, type, finite)."""
        self.check_params()
        weights = np.asarray(arrays["weights"])
        if weights.shape != (1 << int(self.bits),) or weights.dtype != np.float32:
            raise ConfigError(f"the 4-gram weights must be 2**{self.bits} float32, got {weights.shape} {weights.dtype}")
        if not np.isfinite(weights).all():
            raise ConfigError("the 4-gram weights are not all finite")
        n_learned = np.asarray(arrays["n_learned"]).reshape(-1)
        if n_learned.shape != (1,) or n_learned.dtype.kind not in "iu" or n_learned[0] < 0:
            raise ConfigError("the 4-gram model's count of messages learned is not one whole number >= 0")
        self._start(np.asarray(classes))
        self.weights_ = weights
        self.n_learned_ = int(n_learned[0])
        return self
