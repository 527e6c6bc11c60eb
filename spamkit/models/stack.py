"""Robinson/Fisher and multinomial Naive Bayes over the same token counts, stacked.

The two rules read the same sufficient statistics -- per class, the number of training
messages that contain each token -- and fail differently: Fisher's chi-square combining
ranks long messages well but ignores the class prior and is poorly calibrated on short
ones; multinomial NB on Boolean features (Metsis et al. 2006's best variant) carries the
prior and is sharp on short texts. A logistic regression on the two log-odds, fitted on
held-out scores, combines them (stacked generalisation) and gives calibrated probabilities.

Sources: D. H. Wolpert, "Stacked generalization", *Neural Networks* 5 (1992); K. M. Ting
and I. H. Witten, "Issues in stacked generalization", *JAIR* 10 (1999): the level-1 learner
is fitted on the level-0 models' cross-validated outputs, and a linear (logistic) combiner
of class-probability outputs works best. The components are
:class:`~spamkit.models.robinson.RobinsonFisher` and
:class:`~spamkit.models.naive_bayes.MultinomialNB`; the combiner is an L2-regularised
logistic regression (C = 1; scikit-learn's ``LogisticRegression`` objective, solved exactly by
Newton's method in :func:`~spamkit.models.logistic.fit_l2_logistic`).

Because the counts are additive, the cross-validated scores cost one counting pass: the
model of fold k is the total counts minus the counts of fold k.

Measured (docs/results.md, "Beating bogofilter"): on the Metsis et al. Enron protocol the stack
averaged 98.34% spam recall / 97.60% ham recall (Fisher alone, Platt-calibrated: 98.04 /
97.09); on the SMS split of Almeida et al. 98.51% accuracy, MCC 0.933 (Fisher alone,
calibrated, 98.08 / 0.913); on the trec07p-dev stream, online, (1-ROCA)% 0.069 (Fisher
alone 0.079). Scripts: ``reproduce_metsis.py``, ``reproduce_almeida.py``, ``bench_bogofilter.py``.
"""

from __future__ import annotations

import numpy as np

from ..common.errors import ConfigError
from ..common.names import FISHER_MAX_CLUES, FISHER_MIN_DEV, FISHER_PRIOR, FISHER_STRENGTH
from ..scoring.arrays import fisher_log_odds, log_expit
from .base import check_alpha, csr_index_arrays, finite_log_odds
from .combiner import StackCombiner
from .counting import CountingModel
from .logistic import DEFAULT_RATE, OnlineLogistic
from .robinson import PRESENCE_TAGS, RobinsonFisher, presence, speedups

#: the stack of spamkit's best filter: a third component, online logistic regression at
#: :data:`~spamkit.models.logistic.DEFAULT_RATE`, and sign-log squashed component scores. Chosen
#: on trec07p-dev, CSDMC2010, Enron1-6 and SMS, online (``scripts/ablation.py``): the smallest
#: worst-case regret, and better than Fisher + NB on every corpus.
BEST_STACK = {"logistic": DEFAULT_RATE, "squash": "slog", "length_aware": True}
#: rows scored at a time by the NumPy definitions (bounds the memory of scoring a large matrix;
#: see component_scores)
SCORE_ROWS = 512
#: rows scored at a time by the compiled sums (speedups.fisher_sums, nb_sums), which hold
#: nothing as long as the block's non-zeros: a fold of a training set at once, which they cut
#: into parts for the machine's cores (a block of 512 TREC messages was too small to cut)
COMPILED_SCORE_ROWS = 16384


def fold_of_rows(codes: np.ndarray, n_folds: int) -> np.ndarray:
    """Stratified folds without randomness: the i-th row of each class goes to fold i mod k.

    >>> fold_of_rows(np.array([0, 1, 0, 0, 1, 1, 0]), 2).tolist()
    [0, 0, 1, 0, 1, 0, 1]
    """
    folds = np.empty(len(codes), dtype=np.int64)
    for c in np.unique(codes):
        rows = np.flatnonzero(codes == c)
        folds[rows] = np.arange(len(rows)) % n_folds
    return folds


class FisherNBStack(StackCombiner, CountingModel):
    """Two-class filter: Fisher and multinomial NB log-odds combined by a logistic regression.

    Parameters
    ----------
    strength, prior, min_dev, max_clues
        Robinson/Fisher's parameters (see :class:`~spamkit.models.robinson.RobinsonFisher`).
    alpha : float
        Multinomial NB's additive smoothing.
    folds : int
        Cross-validation folds for the combiner's training scores (fewer when a class has
        fewer messages; with fewer than 2 per class the combiner keeps Fisher alone).
    logistic : float
        Learning rate of a third component, an online logistic regression on the same presence
        features (:class:`~spamkit.models.logistic.OnlineLogistic`); 0: no third component.
    squash : {"clip", "slog"}
        What the combiner sees of each component's log-odds z: z clipped to ±700 ("clip"), or
        sign(z) log(1 + |z|) ("slog"), which keeps every ranking but stops a few saturated
        scores (Fisher's exact log-odds reach hundreds) from deciding the combiner's fit.
    length_aware : bool
        The combiner also sees the message's length, ℓ = log(1 + n) - :data:`spamkit.scoring.LENGTH_CENTRE`
        with n its distinct tokens in the model's features (the terms NB's sum runs over), and
        ℓ times NB's squashed log-odds, so that NB's weight can change with the length: NB on
        presence features is sharp on a short text and over-confident on a long one (its
        log-odds add up one term per token), Fisher's chi-square combining the other way
        round. ℓ is clipped to the range the combiner was fitted on (``length_range_``): a
        message shorter or longer than any it saw gets the weights of the nearest it saw, not
        a linear extrapolation of them (which could turn NB's weight negative for a three-word
        message when the training mail was all letters). Measured on every corpus
        (``scripts/length_combiner.py``, docs/results.md): online (1-ROCA)% SMS 0.74 -> 0.37,
        Enron3 0.181 -> 0.130, Enron5 0.091 -> 0.075, trec07p-dev 0.0424 -> 0.0392, at most 4%
        worse anywhere; Metsis recalls 98.64 / 98.12 -> 98.82 / 98.23; the SMS split of Almeida
        et al. 98.97% -> 99.03% accuracy.
    side_inputs : int
        How many held-out scores from outside the stack its combiner also weighs, after every
        other column (0: none). A byte-level context model's log-likelihood ratio per symbol
        (:class:`~spamkit.models.context.ByteContextModel`) is one: it reads the message's bytes,
        not the token matrix, so the caller computes its scores -- held out by the folds of
        :meth:`fold_assignment` for :meth:`fit`, from the whole model for prediction -- and
        passes them as ``side`` (n, side_inputs). Measured in ``scripts/context_model.py``
        (docs/results.md, "A context model per class").
    combiner_center : sequence of float, optional
        A prior for the combiner: its weights, then its intercept (one more number than the
        combiner has weights). The weights are fitted as the mean of a Gaussian prior centred
        there (``fit_l2_logistic(center=...)``: few scores leave them near it, many outweigh
        it), and a combiner not fitted yet is this one instead of Fisher alone; the combined
        log-odds are scaled by min(1, n / :data:`spamkit.scoring.PRIOR_WARMUP`) while the stack has learned n <
        PRIOR_WARMUP messages. None: centred on 0, Fisher alone until fitted, no scaling. :data:`spamkit.models.combiner.ACCURATE_CENTER` is the measured prior of the
        accurate configuration; with a prior, ``spamkit online`` also refits the combiner every
        10 messages over the first 1,000 (without one, fits on so few messages overfit).

    Attributes
    ----------
    class_count_, feature_count_
        Messages per class; messages of each class containing each feature.
    coef_ : ndarray (2,), (3,), with ``length_aware`` two more, and one per side input, intercept_ : float
        The combiner: log-odds = coef_ · (squash(Fisher, NB[, logistic] log-odds)[, ℓ, ℓ ·
        squash(NB)][, side scores]) + intercept_.
    length_range_ : ndarray (2,)
        With ``length_aware``: the smallest and largest ℓ of the scores the combiner was
        fitted on, to which ℓ is clipped.
    logistic_ : OnlineLogistic or None
        The third component, when ``logistic`` > 0.
    """

    def __init__(self, strength=FISHER_STRENGTH, prior=FISHER_PRIOR, min_dev=FISHER_MIN_DEV, max_clues=FISHER_MAX_CLUES,
                 alpha=1.0, folds=5,
                 logistic=0.0, squash="clip", length_aware=False, side_inputs=0, combiner_center=None):
        self.strength = strength
        self.prior = prior
        self.min_dev = min_dev
        self.max_clues = max_clues
        self.alpha = alpha
        self.folds = folds
        self.logistic = logistic
        self.squash = squash
        self.length_aware = length_aware
        self.side_inputs = side_inputs
        self.combiner_center = combiner_center

    sklearn_tag_settings = PRESENCE_TAGS
    #: the scikit-learn checks it cannot pass, and why: none (it has no decision_function, so the
    #: presence models' one exception is not run; tests/test_estimator_checks.py)
    EXPECTED_FAILED_CHECKS: dict = {}

    # ------------------------------------------------------------- components

    def _fisher(self, class_count, feature_count, totals=None) -> RobinsonFisher:
        f = RobinsonFisher(self.strength, self.prior, self.min_dev, self.max_clues)
        arrays = {"class_count_": class_count, "feature_count_": feature_count}
        if totals is not None:
            arrays["feature_total_"] = totals
        f.restore_state(self.classes_, feature_count.shape[1], arrays, {})
        return f

    def _nb_log_odds(self, class_count, feature_count, X, totals=None) -> np.ndarray:
        """Multinomial NB's log-odds on presence features, from the non-zeros of X only.

        log p(x, c1) - log p(x, c0) = log N_1/N_0 + Σ_j x_j [log θ_1j - log θ_0j],
        θ_cj = (n_cj + α) / (Σ_j' n_cj' + α D): the same numbers as
        :class:`~spamkit.models.naive_bayes.MultinomialNB` (tests check), without building
        its D-long tables, so that scoring one message costs its tokens, not the vocabulary.
        """
        a, d = float(self.alpha), feature_count.shape[1]
        with np.errstate(divide="ignore"):
            log_prior = np.log(class_count) - np.log(class_count.sum())
        totals = feature_count.sum(axis=1) if totals is None else totals
        log_den = np.log(totals + a * d)
        if speedups is not None and feature_count.dtype == np.float64:
            # in C: the same sums, term by term in the same order (tests/test_stack.py)
            out = np.empty(X.shape[0])
            speedups.nb_sums(*csr_index_arrays(X), np.ascontiguousarray(X.data, dtype=np.float64),
                             np.ascontiguousarray(feature_count[0]), np.ascontiguousarray(feature_count[1]), a,
                             float(log_den[0]), float(log_den[1]), out)
            out += log_prior[1] - log_prior[0]
        else:
            cols = X.indices
            rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
            w = (np.log(feature_count[1, cols] + a) - log_den[1]) - (np.log(feature_count[0, cols] + a) - log_den[0])
            out = np.bincount(rows, weights=w * X.data, minlength=X.shape[0]) + (log_prior[1] - log_prior[0])
        with np.errstate(invalid="ignore"):
            return finite_log_odds(out)

    @staticmethod
    def _log_odds(model, X) -> np.ndarray:
        jll = model.joint_log_likelihood(X)
        with np.errstate(invalid="ignore"):
            return finite_log_odds(jll[:, 1] - jll[:, 0])

    def component_scores(self, class_count, feature_count, X, totals=None, logistic=None) -> np.ndarray:
        """(Fisher, NB[, logistic]) log-odds of each row of X under the given counts, shape (n, 2
        or 3), and with ``length_aware`` one more column, each row's number of distinct tokens
        (non-zero columns: what :meth:`combined_log_odds` makes ℓ of). Rows are scored
        :data:`SCORE_ROWS` at a time (:data:`COMPILED_SCORE_ROWS` by the compiled sums): each
        row's scores depend on that row alone, and the NumPy definition of Fisher's clue
        selection holds several arrays as long as the block's non-zeros (23 MB for 1,000 TREC
        messages at once)."""
        block = COMPILED_SCORE_ROWS if speedups is not None and feature_count.dtype == np.float64 else SCORE_ROWS
        if X.shape[0] > block:
            return np.vstack([self.component_scores(class_count, feature_count, X[i:i + block], totals, logistic)
                              for i in range(0, X.shape[0], block)])
        X = presence(X)                      # (a presence matrix already: checked, not copied)
        out = np.empty((X.shape[0], (2 if logistic is None else 3) + bool(self.length_aware)))
        # Fisher's log-odds from its clue sums: what RobinsonFisher.decision_function computes,
        # without validating X again and stacking columns only to subtract them
        n, log_f, log_1mf = self._fisher(class_count, feature_count, totals).clue_sums(X)
        log_c0, log_c1 = fisher_log_odds(log_f, log_1mf, n)
        with np.errstate(invalid="ignore"):
            out[:, 0] = finite_log_odds(log_c1 - log_c0)
        out[:, 1] = self._nb_log_odds(class_count, feature_count, X, totals)
        if logistic is not None:
            out[:, 2] = logistic.decision_function(X)
        if self.length_aware:
            out[:, -1] = np.diff(X.indptr)               # presence(X) holds no explicit zeros
        return out

    def component_log_odds(self, X) -> np.ndarray:
        """(Fisher, NB[, logistic]) log-odds of each row, shape (n, 2 or 3), from the full model
        (and with ``length_aware`` the distinct tokens: :meth:`component_scores`)."""
        X = self.counted(self._validate_X(X, reset=False))
        return self.component_scores(self.class_count_, self.feature_count_, X, self.feature_total_, self.logistic_)

    def _new_logistic(self):
        return OnlineLogistic(rate=self.logistic) if self.logistic else None

    # ------------------------------------------------------------- fitting (counts: spamkit.models.counting)

    n_classes_required = 2
    takes_sample_weight = False

    def counted(self, X):
        return presence(X)

    def _start_counts(self, classes, n_features: int) -> None:
        super()._start_counts(classes, n_features)
        self._start_combiner()
        self.logistic_ = self._new_logistic()

    def check_params(self):
        RobinsonFisher(self.strength, self.prior, self.min_dev, self.max_clues).check_params()
        if check_alpha(self.alpha) <= 0:
            raise ConfigError("alpha must be > 0 for the stacked model (its NB needs smoothing)")
        if not (isinstance(self.folds, (int, np.integer)) and self.folds >= 2):
            raise ConfigError(f"folds must be an integer >= 2, got {self.folds!r}")
        if self.squash not in ("clip", "slog"):
            raise ConfigError(f"squash must be 'clip' or 'slog', got {self.squash!r}")
        if not isinstance(self.length_aware, (bool, np.bool_)):
            raise ConfigError(f"length_aware must be True or False, got {self.length_aware!r}")
        if self.logistic:
            OnlineLogistic(rate=self.logistic).check_params()
        if not (isinstance(self.side_inputs, (int, np.integer)) and not isinstance(self.side_inputs, bool)
                and 0 <= self.side_inputs <= 16):
            raise ConfigError(f"side_inputs must be an integer from 0 to 16, got {self.side_inputs!r}")
        self._center()

    def fold_assignment(self, y) -> tuple[int, np.ndarray]:
        """(k, the fold of each message) that :meth:`fit` scores the combiner's training messages
        by: stratified (:func:`fold_of_rows`), k = ``folds`` or fewer when a class has fewer
        messages; k < 2 means no combiner is fitted (Fisher alone). Side scores for :meth:`fit`
        must be held out by these folds."""
        y = np.asarray(y)
        classes, codes = np.unique(y, return_inverse=True)
        if len(classes) != 2:
            raise ConfigError(f"{'Only binary classification is supported: ' if len(classes) > 2 else ''}the "
                              f"stack is a two-class model; got {len(classes)} class(es)")
        k = int(min(self.folds, np.bincount(codes, minlength=2).min()))
        return k, (fold_of_rows(codes, k) if k >= 2 else np.zeros(len(codes), dtype=np.int64))

    def fit(self, X, y, side=None):
        """Count, then fit the combiner on cross-validated component scores (and, with side inputs,
        the held-out ``side`` scores of every message: :meth:`fold_assignment`); returns ``self``."""
        self.check_params()
        X, y = self._validate_Xy(X, y, reset=True)
        self._side_columns(side, X.shape[0])              # refused before anything is counted
        self._start_counts(y, X.shape[1])                 # the classes are checked before the values
        X = self.counted(X)
        codes = self.class_codes(y)
        ones = np.ones(len(codes))
        self.add_counts(*self.count_rows(X, codes, ones))
        labels = self.classes_[codes]
        k, folds = self.fold_assignment(self.classes_[codes])
        if k >= 2:
            scores = np.zeros((X.shape[0], self.score_columns()))
            for fold in range(k):
                held = folds == fold
                rows = X[held]                           # the fold's rows, copied once
                cc, fc = self.count_rows(rows, codes[held], ones[held])
                # the other folds' counts; the fold's own are let go before anything else is made
                # (training trec07p-dev and Enron1: its peak was the fit's, 3.5 MB more with them)
                rest_class, rest_feature = self.class_count_ - cc, self.feature_count_ - fc
                del cc, fc
                logistic = self._new_logistic()
                if logistic is not None:                 # the other folds, in their order (a held row
                    # weighs 0: its step is skipped, and X is not copied without it)
                    logistic.partial_fit(X, labels, classes=self.classes_, sample_weight=(~held).astype(np.float64))
                scores[held] = self.component_scores(rest_class, rest_feature, rows, logistic=logistic)
                del rows, rest_feature, logistic
            self.fit_combiner(scores, codes == 1, side)
        if self.logistic_ is not None:
            self.logistic_.partial_fit(X, labels, classes=self.classes_)
        return self

    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """Add a batch to the counts (``classes`` on the first call) and, with a logistic component,
        take its gradient steps; the combiner is kept."""
        super().partial_fit(X, y, classes=classes, sample_weight=sample_weight)
        if self.logistic_ is not None:
            self.logistic_.partial_fit(X, y, classes=self.classes_)
        return self

    def unlearn(self, X, y, sample_weight=None):
        """Subtract messages learned before (exactly, but for a logistic component: approximately);
        refuses when a count would go negative."""
        super().unlearn(X, y, sample_weight=sample_weight)
        if self.logistic_ is not None:                   # approximate (see OnlineLogistic.unlearn)
            self.logistic_.unlearn(X, y)
        return self

    @property
    def exact_unlearning(self) -> bool:
        """Counts subtract exactly; a logistic component's gradient steps do not."""
        return not self.logistic

    # ------------------------------------------------------------- prediction

    def joint_log_likelihood(self, X, side=None) -> np.ndarray:
        """log P(c | x) of the combiner, shape (n, 2) (already normalised); ``side``: the messages'
        side scores, when the stack has side inputs."""
        z = self.combined_log_odds(self.component_log_odds(X), side)
        out = np.empty((len(z), 2))
        out[:, 0], out[:, 1] = log_expit(-z), log_expit(z)
        return out

    def predict_log_proba(self, X, side=None) -> np.ndarray:
        """log P(c | x) = (log σ(-z), log σ(z)) of the combiner's log-odds z: normalised as they
        are (σ(-z) + σ(z) = 1), so the log-sum-exp of the general method is skipped."""
        return self.joint_log_likelihood(X, side)

    def contributions(self, x):
        """The Fisher component's clues (see :meth:`RobinsonFisher.contributions`)."""
        self.check_fitted()
        return self._fisher(self.class_count_, self.feature_count_).contributions(x)

    # ------------------------------------------------------------- persistence (spamkit.filterfile.persist)

    def state_arrays(self) -> tuple[dict, dict]:
        arrays = {**super().state_arrays()[0], "combiner_": np.array([*self.coef_, self.intercept_])}
        if self.combiner_anchor_ is not None and self.combiner_precision_ is not None:
            arrays["combiner_anchor_"] = np.asarray(self.combiner_anchor_, dtype=np.float64)
            arrays["combiner_precision_"] = np.asarray(self.combiner_precision_, dtype=np.float64)
        if self.length_aware:
            arrays["length_range_"] = np.asarray(self.length_range_, dtype=np.float64)
        if self.logistic_ is not None:
            arrays.update({f"logistic_{k}": v for k, v in self.logistic_.state_arrays()[0].items()})
        return arrays, {}

    def restore_state(self, classes, n_features: int, arrays: dict, texts: dict) -> None:
        super().restore_state(classes, n_features, arrays, texts)
        combiner = np.asarray(arrays["combiner_"], dtype=np.float64)
        m = self._n_weights()
        if combiner.shape != (m + 1,):
            raise ValueError(f"the combiner has shape {combiner.shape}, expected ({m + 1},)")
        if not np.isfinite(combiner).all():
            raise ValueError("the combiner's weights are not finite")
        self.coef_, self.intercept_ = combiner[:m].copy(), float(combiner[m])
        self.combiner_anchor_ = self.combiner_precision_ = None
        if "combiner_anchor_" in arrays or "combiner_precision_" in arrays:
            anchor = np.asarray(arrays.get("combiner_anchor_", np.zeros(0)), dtype=np.float64)
            precision = np.asarray(arrays.get("combiner_precision_", np.zeros(0)), dtype=np.float64)
            if anchor.shape != (m + 1,) or precision.shape != (m + 1, m + 1) or not (
                    np.isfinite(anchor).all() and np.isfinite(precision).all()):
                raise ValueError(f"the combiner's training fit must be {m + 1} finite numbers and a ({m + 1}, "
                                 f"{m + 1}) finite matrix (combiner_anchor_ {anchor.shape}, combiner_precision_ "
                                 f"{precision.shape})")
            self.combiner_anchor_, self.combiner_precision_ = anchor.copy(), precision.copy()
        if self.length_aware:
            bounds = np.asarray(arrays.get("length_range_", np.zeros(0)), dtype=np.float64)
            if bounds.shape != (2,) or not bounds[0] <= bounds[1]:
                raise ValueError("a length-aware combiner needs its length range, two numbers, the smaller "
                                 f"first (length_range_: {bounds.tolist()})")
            self.length_range_ = bounds.copy()
        self.logistic_ = None
        if self.logistic:
            self.logistic_ = OnlineLogistic(rate=self.logistic)
            self.logistic_.restore_state(classes, n_features, {k[len("logistic_"):]: v for k, v in arrays.items()
                                                               if k.startswith("logistic_")}, {})
