"""A byte-level context model per class: spam filtering by compression (Bratko et al. 2006).

Each class c has a model of text that predicts every symbol s of a message from the symbols
before it, blending the contexts of every length k = 0, 1, ..., K (K = ``order``), from the
shortest up:

    p_c^(-1)(s)     = 1 / 257                                      (256 bytes and the end)
    p_c^(k)(s | h)  = (n_c(h_k s) + β p_c^(k-1)(s | h)) / (n_c(h_k) + β)

where h_k is the last k symbols of the context, n_c(h_k) how often the string h_k occurred in
class c's training texts followed by a symbol, n_c(h_k s) how often it was followed by s (for
k = 0: every symbol of the class, and how many were s; for a context of pads alone, the
start of a text: the class's texts), and β (``beta``) how much the
shorter context's prediction weighs against the counts: a context seen often predicts from its
own counts, one seen rarely or never falls back on the shorter one (a context never seen
passes the shorter prediction on unchanged). This is prediction by partial matching with
blending (Cleary & Witten 1984) under a Dirichlet prior centred on the shorter context's
prediction (MacKay & Peto, "A hierarchical Dirichlet language model", Natural Language
Engineering 1, 1995) -- chosen over PPM's escape counts (which need the number of distinct
symbols seen after each context) because every statistic here is a count that adds: the model
of a set of messages is the sum of its messages' counts, so training folds, learning and
unlearning are exact additions and subtractions, as for spamkit's other counting models.

The message's score is the classes' code lengths compared: the log-likelihood ratio of its
symbols, Σ_i log p_1(s_i | ...) - log p_0(s_i | ...), which is how Bratko, Cormack, Filipič,
Lynam & Zupan ("Spam filtering using statistical data compression models", JMLR 7, 2006)
classify with one PPM or DMC compression model per class; their filters led the TREC 2005 spam
track. :meth:`ByteContextModel.mean_log_ratio` is that ratio per symbol (what a stack's
combiner reads: comparable between short and long messages), :meth:`joint_log_likelihood` the
sum with the class prior (a generative classifier, as over-confident on long texts as Naive
Bayes).

The counts live in one table of 2**bits slots per class, the counts of every string of 1 to
K + 1 symbols, filled through hashed keys (:func:`spamkit.features.bytekeys.context_keys`, which also
defines the symbols: the first ``max_bytes`` bytes and an end-of-text symbol); the count of a
context is the count of its string, since every symbol but the end is followed by another.

Measured (``scripts/context_model.py``, docs/results.md, "A context model per class"): as a side
input of the default stack's combiner (``FisherNBStack(side_inputs=1)``; ``spamkit online
--context-model``), online (1-ROCA)% lower on every corpus but CSDMC2010 (TREC 0.0392 -> 0.0286,
the Enron average 0.145 -> 0.080, SMS 0.37 -> 0.27); under Metsis et al.'s batches, alone, it
ranks as well as the whole default stack (balanced recall 98.66% against 98.58%), and with it
the recalls rise from 98.82 / 98.23 to 99.22 / 98.56.
"""

from __future__ import annotations

import os
import sys

import numpy as np

from ..common import errors
from ..common.compiled import speedups as _compiled
from ..common.errors import ConfigError
from .base import Estimator, ProbabilisticClassifier, check_positive
from .contexttable import SATURATED, pack_table, unpack_table

speedups = _compiled()                   # spamkit/common/speedups.c, or None: NumPy throughout

#: symbols a context can be followed by: 256 bytes and the end of the text
ALPHABET = 257


#: a batch is scored in several threads only from this many texts (fewer: one call, no threads)
PARALLEL_TEXTS = 64


def _threads() -> int:
    """The cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:                                   # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _parts(texts, threads: int) -> list:
    """``threads`` consecutive ``(start, stop)`` ranges of ``texts`` holding about as many bytes
    each, or one range for a batch under :data:`PARALLEL_TEXTS` texts."""
    n = len(texts)
    if threads < 2 or n < PARALLEL_TEXTS:
        return [(0, n)]
    ends = np.cumsum([len(t) + 1 for t in texts])
    cuts = np.searchsorted(ends, ends[-1] * np.arange(1, threads) / threads, side="right")
    bounds = [0, *sorted(set(int(c) for c in cuts if 0 < c < n)), n]
    return list(zip(bounds[:-1], bounds[1:]))


class ByteContextModel(Estimator):
    """Two-class blended context model over hashed byte contexts (see the module docstring).

    Parameters
    ----------
    order : int
        K, the longest context, in symbols. 6: as good as 7 and better than 5 on every corpus in
        ``scripts/context_model.py --online`` (each the best or within 9% of it), one key a
        symbol fewer than 7.
    beta : float
        The weight β of the shorter context's prediction (> 0). 8 was chosen on a first
        prototype on Enron1-6, where it ranked as well as Witten-Bell blending (which needs the
        number of distinct symbols after each context, not a count that adds) and β = 2 a
        little worse; ``scripts/context_model.py --beta`` measures others.
    bits : int
        Each class's table has 2**bits slots (4 bytes each: 2**24, the default, is 128 MB for
        both classes); the keys must have been made with the same ``bits`` and ``order``
        (:func:`spamkit.features.bytekeys.context_keys`). Fewer slots mean more strings sharing one:
        2**22 was up to 20% worse than 2**24 online (Enron2 0.0836 against 0.0783 (1-ROCA)%).

    Attributes
    ----------
    classes_ : ndarray (2,)
    class_count_ : ndarray (2,)
        Texts learned per class.
    symbol_count_ : ndarray (2,)
        Symbols learned per class (the count of the empty context).
    table_ : ndarray (2, 2**bits), uint32
        Per class, the count of every slot (strings of 1 to K + 1 symbols): a view of
        ``slots_``.
    slots_ : ndarray (2**bits, 2), uint32
        The same counts slot-major, as they are stored: row s holds both classes' counts of slot
        s, 8 bytes, so that scoring reads one cache line a slot for the two classes (random reads
        in a table far larger than the cache are what scoring waits for). A count reaching
        2**32 - 1 (over four billion symbols under one string) stays there, learning and
        unlearning alike; below that, learning and unlearning are exact.
    """

    def __init__(self, order=6, beta=8.0, bits=24):
        self.order = order
        self.beta = beta
        self.bits = bits

    def check_params(self) -> float:
        if not (isinstance(self.order, (int, np.integer)) and 0 <= self.order <= 16):
            raise ConfigError(f"the context order must be an integer from 0 to 16, got {self.order!r}")
        if not (isinstance(self.bits, (int, np.integer)) and 8 <= self.bits <= 30):
            raise ConfigError(f"the table size must be 2**bits with bits from 8 to 30, got {self.bits!r}")
        return check_positive(self.beta, "beta")

    # ------------------------------------------------------------- input

    def _check_keys(self, keys):
        # the lazy keys and indptr are looked for on the class: asking the instance would compute
        # them (4 (order + 1) bytes a symbol) where the compiled loops never need them
        for name in ("texts", "order", "bits"):
            if not hasattr(keys, name) or not all(hasattr(type(keys), lazy) for lazy in ("keys", "indptr")):
                raise ConfigError("a context model reads hashed context keys "
                                  "(spamkit.features.bytekeys.context_keys), not a matrix or text")
        if keys.order != self.order or keys.bits != self.bits:
            raise ConfigError(f"keys made with order {keys.order}, bits {keys.bits}; this model has order "
                              f"{self.order}, bits {self.bits}")
        return keys

    #: 0/1 for each label, by position in ``classes_`` (the classifiers' own mapping)
    class_codes = ProbabilisticClassifier.class_codes

    # ------------------------------------------------------------- counting

    def _start(self, classes) -> None:
        self.classes_ = np.unique(np.asarray(classes))
        if len(self.classes_) != 2:
            raise ConfigError(f"a context model is a two-class model; got {len(self.classes_)} class(es) "
                              f"{self.classes_.tolist()}")
        self.class_count_ = np.zeros(2)
        self.symbol_count_ = np.zeros(2)
        self.slots_ = np.zeros((1 << self.bits, 2), dtype=np.uint32)

    @property
    def table_(self) -> np.ndarray:
        """The counts as (2, 2**bits): ``slots_`` seen class by class (a view, not a copy)."""
        try:
            return self.slots_.T
        except AttributeError:
            raise AttributeError("table_") from None

    def counts(self, keys, codes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """What the texts of ``keys`` with class codes ``codes`` (0/1) add: the table (2, 2**bits),
        the texts per class and the symbols per class."""
        codes = np.asarray(codes, dtype=np.int64)
        lengths = np.diff(keys.indptr)
        table = np.zeros((2, 1 << self.bits), dtype=np.int64)
        per_symbol = np.repeat(codes, lengths)
        for c in (0, 1):
            slots = keys.keys[per_symbol == c].ravel()
            if len(slots):
                table[c] += np.bincount(slots, minlength=1 << self.bits)
        texts = np.bincount(codes, minlength=2).astype(np.float64)
        symbols = np.bincount(codes, weights=lengths, minlength=2).astype(np.float64)
        return table, texts, symbols

    def state(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(table, texts per class, symbols per class): what :meth:`counts` adds up to."""
        self.check_fitted()
        return self.table_, self.class_count_, self.symbol_count_

    def _add(self, keys, y, sign: int):
        """Add (``sign`` +1) or subtract (-1) the counts of the texts of ``keys``: slot by slot
        (a few thousand distinct slots a message, not a table of 2**bits)."""
        keys = self._check_keys(keys)
        y = np.asarray(y)
        if len(y) != keys.n_texts:
            raise ConfigError(f"{len(y)} labels for {keys.n_texts} texts")
        codes = self.class_codes(y)                  # type: ignore[misc]  # ProbabilisticClassifier's, shared
        lengths = np.diff(keys.indptr)
        texts = np.bincount(codes, minlength=2).astype(np.float64)
        symbols = np.bincount(codes, weights=lengths, minlength=2).astype(np.float64)
        never_learned = ConfigError("cannot unlearn texts that were never learned (counts would go negative)")
        if sign < 0 and (self.class_count_ < texts).any():
            raise never_learned
        if speedups is not None:
            # in C: each slot of each symbol counted (or uncounted) as the text is read (the same
            # counts: tests/test_context.py), without the keys or their unique values stored; an
            # unlearning that would go below zero is undone there and reported
            if not self._learn_compiled(keys.texts, codes, sign):
                raise never_learned
        else:
            per_symbol = np.repeat(codes, lengths)
            changes = [np.unique(keys.keys[per_symbol == c].ravel(), return_counts=True) for c in (0, 1)]
            counts = [self.slots_[slots, c].astype(np.int64) for c, (slots, _) in enumerate(changes)]
            saturated = [count == SATURATED for count in counts]
            if sign < 0 and any(((count < n) & ~full).any() for count, (_, n), full in zip(counts, changes, saturated)):
                raise never_learned
            for c, ((slots, n), count, full) in enumerate(zip(changes, counts, saturated)):
                # slots are distinct: no repeated index; a saturated count stays, others stop there
                self.slots_[slots, c] = np.where(full, SATURATED, np.minimum(count + sign * n, SATURATED))
        self.class_count_ += sign * texts
        self.symbol_count_ += sign * symbols
        return self

    def _learn_compiled(self, texts, codes, sign: int) -> bool:
        """``speedups.context_learn`` of the texts (False: an unlearning would have gone below zero,
        and nothing changed). A large batch of both classes is counted one class per thread: each
        class has its own column of the table, so the two write different counts, and each count
        ends the same as one after the other. An unlearning refused in one class is undone in
        the other."""
        flat = self.slots_.reshape(-1)
        order, bits = int(self.order), int(self.bits)
        members = [np.flatnonzero(codes == c) for c in (0, 1)]
        if _threads() < 2 or len(texts) < PARALLEL_TEXTS or not all(len(m) for m in members):
            return speedups.context_learn(texts, codes, order, bits, sys.maxsize, flat, sign)
        from concurrent.futures import ThreadPoolExecutor
        parts = [([texts[i] for i in m.tolist()], codes[m]) for m in members]
        with ThreadPoolExecutor(2, thread_name_prefix="spamkit-context") as pool:
            done = [f.result() for f in [pool.submit(speedups.context_learn, part, part_codes, order, bits,
                                                     sys.maxsize, flat, sign) for part, part_codes in parts]]
        if all(done):
            return True
        for ok, (part, part_codes) in zip(done, parts):
            if ok:                                    # put back the class that was unlearned
                speedups.context_learn(part, part_codes, order, bits, sys.maxsize, flat, -sign)
        return False

    def fit(self, keys, y):
        """Count the texts of ``keys`` (labels ``y``, two classes) from an empty table; returns ``self``."""
        self.check_params()
        self._start(y)
        return self._add(keys, y, +1)

    def partial_fit(self, keys, y, classes=None):
        """Add texts to the counts (``classes`` on the first call); returns ``self``."""
        self.check_params()
        if self.first_partial_fit(classes):
            self._start(classes)
        return self._add(keys, y, +1)

    def unlearn(self, keys, y):
        """Subtract texts learned before, exactly (every statistic is a count)."""
        self.check_fitted()
        return self._add(keys, y, -1)

    def check_fitted(self) -> None:
        if not hasattr(self, "table_"):
            raise errors.NotFittedError(f"this {type(self).__name__} is not fitted yet; call fit first")

    def held_out_mean_log_ratio(self, keys, y, folds) -> np.ndarray:
        """Per text, :meth:`mean_log_ratio` under the model of the *other* folds: for each fold,
        its texts are unlearned, scored and learned back (exact: every statistic is a count, so
        the table after is the table before, and the scores are those of a model fitted on the
        other folds alone). ``keys``, ``y``: texts this model has learned; ``folds``: each
        text's fold (e.g. :meth:`spamkit.models.FisherNBStack.fold_assignment`). What a stack's
        combiner is fitted on when the context model is its side input."""
        self.check_fitted()
        keys = self._check_keys(keys)
        y, folds = np.asarray(y), np.asarray(folds)
        if len(y) != keys.n_texts or len(folds) != keys.n_texts:
            raise ConfigError(f"{len(y)} labels and {len(folds)} folds for {keys.n_texts} texts")
        out = np.zeros(keys.n_texts)
        for fold in np.unique(folds).tolist():
            members = np.flatnonzero(folds == fold)
            part = keys.rows(members)
            self.unlearn(part, y[members])
            try:
                out[members] = self.mean_log_ratio(part)
            finally:
                self._add(part, y[members], +1)
        return out

    # ------------------------------------------------------------- files

    def state_arrays(self) -> dict:
        """What a filter file stores: the counts packed (:func:`pack_table`: the slots with a
        count, in slot order, as varints), the texts and symbols per class."""
        self.check_fitted()
        return {"packed": pack_table(self.slots_), "class_count": self.class_count_.copy(),
                "symbol_count": self.symbol_count_.copy()}

    def restore_state(self, classes, arrays: dict) -> "ByteContextModel":
        """The model :meth:`state_arrays` describes (checked: the packed table, non-negative finite
        counts); ``arrays["table"]`` instead of ``"packed"``: the dense slot-major table, as older
        filter files hold it (written before the packed table)."""
        self.check_params()
        texts, symbols = np.asarray(arrays["class_count"]), np.asarray(arrays["symbol_count"])
        if "packed" in arrays:
            packed = np.asarray(arrays["packed"])
            if packed.ndim != 1 or packed.dtype != np.uint8:
                raise ConfigError(f"the packed context table has shape {packed.shape} ({packed.dtype}); "
                                  "it is one row of bytes")
            table = unpack_table(packed, self.bits)
        else:
            table = np.asarray(arrays["table"])
            if table.shape != (1 << self.bits, 2) or table.dtype != np.uint32:
                raise ConfigError(f"the context table has shape {table.shape} ({table.dtype}); bits {self.bits} "
                                  f"make it ({1 << self.bits}, 2) uint32 counts")
        for name, a in (("class_count", texts), ("symbol_count", symbols)):
            if a.shape != (2,) or not np.isfinite(a).all() or (a < 0).any():
                raise ConfigError(f"the context model's {name} must be two non-negative counts")
        if len(classes) != 2:
            raise ConfigError("a context model has two classes")
        self.classes_ = np.asarray(classes)
        self.slots_ = np.ascontiguousarray(table)
        self.class_count_, self.symbol_count_ = texts.astype(np.float64), symbols.astype(np.float64)
        return self

    # ------------------------------------------------------------- prediction

    def symbol_log_probs(self, keys, state=None) -> np.ndarray:
        """log p_c(s_i | context) of every symbol of ``keys`` under each class, shape (symbols, 2);
        ``state`` (table, texts, symbols per class, as :meth:`counts` gives) replaces the
        model's counts (e.g. the whole minus a fold)."""
        keys = self._check_keys(keys)
        beta = self.check_params()
        table, texts, symbols = self.state() if state is None else state
        n = keys.keys.shape[0]
        first = np.zeros(n, dtype=bool)                  # the first symbol of each (non-empty) text
        first[keys.indptr[:-1][np.diff(keys.indptr) > 0]] = True
        previous = np.maximum(np.arange(n) - 1, 0)
        out = np.empty((n, 2))
        for c in (0, 1):
            row = table[c]
            p = np.full(n, 1.0 / ALPHABET)
            for k in range(self.order + 1):
                if k == 0:
                    n_context = np.full(n, float(symbols[c]))
                else:                                    # the string of k symbols before: the previous
                    # symbol's key of length k, or the start of a text (the pads), seen once a text
                    n_context = np.where(first, float(texts[c]), row[keys.keys[previous, k - 1]])
                # a string counted more often than its context: two strings share a slot
                n_pair = np.minimum(row[keys.keys[:, k]], n_context)
                p = (n_pair + beta * p) / (n_context + beta)
            out[:, c] = np.log(p)
        return out

    def log_ratios(self, keys, state=None) -> tuple[np.ndarray, np.ndarray]:
        """Per text: Σ_i log p_1(s_i | ...) - log p_0(s_i | ...), and its number of symbols."""
        keys = self._check_keys(keys)
        table, texts, symbols = self.state() if state is None else state
        store = table.T
        if speedups is not None and store.dtype == np.uint32 and store.flags.c_contiguous:
            # in C, on the slot-major counts (the model's own, or a state held the same way): the
            # same probabilities, summed in the same order (tests/test_context.py)
            out, lengths = np.empty(keys.n_texts), np.empty(keys.n_texts, dtype=np.int64)
            flat, beta = store.reshape(-1), self.check_params()

            def score(a: int, b: int) -> None:
                speedups.context_ratios(keys.texts[a:b], int(self.order), int(self.bits), sys.maxsize, flat,
                                        float(texts[0]), float(texts[1]), float(symbols[0]), float(symbols[1]),
                                        beta, out[a:b], lengths[a:b])

            parts = _parts(keys.texts, _threads())
            if len(parts) == 1:
                score(*parts[0])
            else:
                # the loop releases the GIL and reads the table only: consecutive parts of the batch
                # on the cores this process may use, each text scored as it would be alone (the
                # same numbers whatever the split; the threads end before this returns)
                from concurrent.futures import ThreadPoolExecutor
                with ThreadPoolExecutor(len(parts), thread_name_prefix="spamkit-context") as pool:
                    for done in [pool.submit(score, a, b) for a, b in parts]:
                        done.result()
            return out, lengths
        lp = self.symbol_log_probs(keys, state)
        lengths = np.diff(keys.indptr)
        rows = np.repeat(np.arange(len(lengths)), lengths)
        return np.bincount(rows, weights=lp[:, 1] - lp[:, 0], minlength=len(lengths)), lengths

    def mean_log_ratio(self, keys, state=None) -> np.ndarray:
        """Per text, the log-likelihood ratio per symbol (0 for a text of no symbol)."""
        total, lengths = self.log_ratios(keys, state)
        return total / np.maximum(lengths, 1)

    def joint_log_likelihood(self, keys) -> np.ndarray:
        """log P(c) + Σ_i log p_c(s_i | ...) per text and class, shape (texts, 2)."""
        self.check_fitted()
        lp = self.symbol_log_probs(keys)
        lengths = np.diff(keys.indptr)
        rows = np.repeat(np.arange(len(lengths)), lengths)
        with np.errstate(divide="ignore"):
            prior = np.log(self.class_count_) - np.log(self.class_count_.sum())
        return np.column_stack([np.bincount(rows, weights=lp[:, c], minlength=len(lengths)) + prior[c]
                                for c in (0, 1)])

    def predict_log_proba(self, keys) -> np.ndarray:
        jll = self.joint_log_likelihood(keys)
        top = jll.max(axis=1, keepdims=True)
        return jll - (top + np.log(np.exp(jll - top).sum(axis=1, keepdims=True)))

    def predict_proba(self, keys) -> np.ndarray:
        return np.exp(self.predict_log_proba(keys))

    def predict(self, keys) -> np.ndarray:
        return self.classes_[np.argmax(self.joint_log_likelihood(keys), axis=1)]
