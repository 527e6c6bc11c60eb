"""The combiner of :class:`spamkit.models.stack.FisherNBStack`: what it weighs of its components'
log-odds, and its logistic regression fitted on held-out scores.

Takes rows of component scores (Fisher, NB[, logistic] log-odds, with ``length_aware`` each
message's distinct tokens last) and, with side inputs, the side models' held-out scores; gives
the combined log-odds. The columns: each log-odds squashed (clipped to ±700, or sign-log), with
``length_aware`` ℓ = log(1 + distinct tokens) - :data:`spamkit.scoring.LENGTH_CENTRE` (clipped to
the range it was fitted on) and ℓ times NB's squashed log-odds, then the side scores. The fit is
an L2-regularised logistic regression (C = 1), optionally around a prior
(:data:`ACCURATE_CENTER`), by Newton's method (:func:`spamkit.models.logistic.fit_l2_logistic`).

Source: K. M. Ting and I. H. Witten, "Issues in stacked generalization", *JAIR* 10 (1999): a
linear (logistic) level-1 learner over the level-0 models' cross-validated outputs.
"""

from __future__ import annotations

import numpy as np

from ..common.errors import ConfigError
from ..scoring import LENGTH_CENTRE, PRIOR_WARMUP
from .base import LOG_ODDS_LIMIT
from .logistic import fit_l2_logistic, logistic_precision

#: the combiner's prior of the accurate configuration (BEST_STACK with a context model and byte
#: 4-grams as side inputs, in that order): the weights of the combiner fitted on each whole stream
#: of trec07p-dev, trec06p, CSDMC2010, Enron1-6 and SMS, averaged, then the intercept likewise
#: (``python scripts/fusion.py --centers``). Measured leave-one-corpus-out (each corpus's stream
#: run with the average of the other nine; docs/results.md, "Fusing the published filters"):
#: (1-ROCA)% lower than with no prior on 9 of the 10 streams (CSDMC2010 0.0015 -> 0.0003, Enron3
#: 0.061 -> 0.036), 6% higher on trec07p-dev.
ACCURATE_CENTER = (0.956, -0.048, 0.666, 0.641, -0.001, 3.442, 0.612, 0.507)
#: a stack with a combiner prior scales its log-odds by min(1, n / PRIOR_WARMUP), n the messages
#: it has learned: weights measured on whole streams, applied to components that have seen a few
#: dozen messages, are over-confident (online, without it 1 ham misfiled in the first 100 messages
#: of trec07p-dev and 2 in Enron5's, none with it; and a lower (1-ROCA)% on 7 of 10 streams, at
#: most 4% higher (trec07p-dev): docs/results.md, "Fusing the published filters"). The number,
#: :data:`spamkit.scoring.PRIOR_WARMUP`, is the scoring core's, which pipe mode reads too.


def accurate_center(stack) -> tuple | None:
    """:data:`ACCURATE_CENTER` for a stack laid out as the one it was measured on (a logistic
    component, sign-log squashing, length-aware, two side inputs: a context model's and byte
    4-grams'), else None: a prior measured for other columns would be a prior on nothing."""
    measured = (bool(stack.logistic) and stack.squash == "slog" and bool(stack.length_aware)
                and stack.side_inputs == 2)
    return ACCURATE_CENTER if measured else None


#: ℓ = log(1 + distinct tokens) - LENGTH_CENTRE (:data:`spamkit.scoring.LENGTH_CENTRE`, 4): a
#: message of about 54 distinct tokens has ℓ = 0 (only the combiner's L2 penalty sees where the
#: centre is)
#: ℓ's range before the combiner has been fitted (no message is outside it: ℓ >= -LENGTH_CENTRE)
LENGTH_UNFITTED = (-LENGTH_CENTRE, 64.0)


class StackCombiner:
    """The combiner's part of a stack (a base class of :class:`~spamkit.models.stack.FisherNBStack`).

    It reads the stack's parameters ``logistic``, ``squash``, ``length_aware``, ``side_inputs``
    and ``combiner_center``, and its fitted state ``coef_``, ``intercept_``, ``length_range_``
    and ``class_count_`` (for the prior's warm-up); it sets ``coef_``, ``intercept_`` and
    ``length_range_``.
    """

    # what it reads of the stack (its parameters, then its counts)
    logistic: float
    squash: str
    length_aware: bool
    side_inputs: int
    combiner_center: object
    class_count_: np.ndarray
    # what it fits
    coef_: np.ndarray
    intercept_: float
    length_range_: np.ndarray
    #: the fit of :meth:`fit_combiner` as the prior of :meth:`refit_combiner`: its weights then
    #: intercept, and the Hessian of its objective there (None: a file that did not keep them)
    combiner_anchor_: np.ndarray | None = None
    combiner_precision_: np.ndarray | None = None

    def _squash(self, scores) -> np.ndarray:
        scores = np.asarray(scores, dtype=np.float64)
        clipped = np.minimum(np.maximum(scores, -LOG_ODDS_LIMIT), LOG_ODDS_LIMIT)   # np.clip's numbers
        if self.squash == "slog":
            return np.sign(scores) * np.log1p(np.abs(clipped))
        return clipped

    def combiner_features(self, scores, side=None) -> np.ndarray:
        """What the combiner weighs, from rows of :meth:`component_scores`: the squashed log-odds,
        with ``length_aware`` ℓ = log(1 + distinct tokens) - :data:`LENGTH_CENTRE` (clipped to
        ``length_range_``) and ℓ times NB's squashed log-odds, and the ``side`` scores (clipped
        to ±700) when the stack has side inputs.

        >>> from spamkit.models.stack import FisherNBStack
        >>> stack = FisherNBStack(squash="slog", length_aware=True)
        >>> stack.combiner_features(np.array([[np.e - 1, -(np.e - 1), 0.0]])).round(6).tolist()
        [[1.0, -1.0, -4.0, 4.0]]
        """
        return np.column_stack(self._feature_columns(scores, side))

    def _side_columns(self, side, n: int) -> list:
        """The side scores as columns (checked: one row per message, ``side_inputs`` columns)."""
        m = int(self.side_inputs)
        if not m:
            if side is not None:
                raise ConfigError("this stack has no side inputs (side_inputs=0); it takes no side scores")
            return []
        if side is None:
            raise ConfigError(f"this stack's combiner weighs {m} side input(s) (e.g. a context model's scores): "
                              "pass them as side=")
        side = np.asarray(side, dtype=np.float64).reshape(n, -1) if np.size(side) == n * m else None
        if side is None:
            raise ConfigError(f"side scores must be {n} rows of {m} (one row per message)")
        side = np.minimum(np.maximum(np.where(side != side, 0.0, side), -LOG_ODDS_LIMIT), LOG_ODDS_LIMIT)
        return [side[:, j] for j in range(m)]

    def _feature_columns(self, scores, side=None) -> list:
        """:meth:`combiner_features`, column by column."""
        scores = np.asarray(scores, dtype=np.float64)
        if not self.length_aware:
            squashed = self._squash(scores)
            return [*(squashed[:, j] for j in range(squashed.shape[1])), *self._side_columns(side, len(scores))]
        squashed = self._squash(scores[:, :-1])
        low, high = getattr(self, "length_range_", LENGTH_UNFITTED)
        length = np.minimum(np.maximum(self._length(scores), low), high)
        return [*(squashed[:, j] for j in range(squashed.shape[1])), length, length * squashed[:, 1],
                *self._side_columns(side, len(scores))]

    @staticmethod
    def _length(scores) -> np.ndarray:
        """ℓ of rows of component scores with the distinct-token count last, before clipping."""
        return np.log1p(scores[:, -1]) - LENGTH_CENTRE

    def combined_log_odds(self, scores, side=None) -> np.ndarray:
        """The combiner's log-odds for rows of component scores (as :meth:`component_log_odds` gives)
        and, with side inputs, their ``side`` scores."""
        # a sum per feature, not a matrix product: BLAS may add a one-row product in another
        # order than a many-row one, and a message must score the same alone and in a batch
        columns = self._feature_columns(scores, side)
        z = np.zeros(columns[0].shape[0])
        for weight, column in zip(self.coef_, columns):
            z += weight * column
        z += self.intercept_
        if self.combiner_center is not None:          # a prior: sure only after PRIOR_WARMUP messages
            z *= min(1.0, float(self.class_count_.sum()) / PRIOR_WARMUP)
        return z

    def _n_components(self) -> int:
        return 3 if self.logistic else 2

    def score_columns(self) -> int:
        """Columns of :meth:`component_scores`: the components, and the distinct tokens' count."""
        return self._n_components() + bool(self.length_aware)

    def _n_weights(self) -> int:
        """The combiner's weights (its intercept aside)."""
        return self._n_components() + 2 * bool(self.length_aware) + int(self.side_inputs)

    def unfitted_combiner(self) -> dict:
        """The state arrays (:meth:`restore_state`) of a combiner not fitted yet: its prior
        (``combiner_center``), else Fisher alone."""
        center = self._center()
        coef = np.zeros(self._n_weights() + 1) if center is None else center.copy()   # weights, then intercept
        if center is None:
            coef[0] = 1.0
        return {"combiner_": coef, **({"length_range_": np.array(LENGTH_UNFITTED)} if self.length_aware else {})}

    def _start_combiner(self) -> None:
        """Fisher alone until a combiner is fitted."""
        arrays = self.unfitted_combiner()
        self.coef_, self.intercept_ = arrays["combiner_"][:-1], float(arrays["combiner_"][-1])
        if self.length_aware:
            self.length_range_ = arrays["length_range_"]

    def _center(self) -> np.ndarray | None:
        """The combiner's prior (weights, then intercept) as an array, checked; or None."""
        if self.combiner_center is None:
            return None
        center = np.asarray(self.combiner_center, dtype=np.float64) if not isinstance(
            self.combiner_center, (str, bytes)) else np.zeros(0)
        if center.shape != (self._n_weights() + 1,) or not np.isfinite(center).all():
            raise ConfigError(f"combiner_center must be {self._n_weights() + 1} finite numbers (the combiner's "
                              f"weights, then its intercept), got {self.combiner_center!r}")
        return center

    def fit_combiner(self, scores, is_c1, side=None) -> "StackCombiner":
        """Fit the logistic combiner on held-out component scores (rows of component log-odds).

        :meth:`fit` calls it on cross-validated scores; an online run calls it on the scores the
        filter gave each message before learning it, which are held-out by construction. With
        ``length_aware`` the range of their ℓ becomes ``length_range_``; with side inputs,
        ``side`` holds the messages' held-out side scores.
        """
        is_c1 = np.asarray(is_c1, dtype=bool)
        if is_c1.all() or not is_c1.any():
            raise ConfigError("the combiner needs held-out scores of both classes")
        if self.length_aware:
            length = self._length(np.asarray(scores, dtype=np.float64))
            self.length_range_ = np.array([length.min(), length.max()])
        center = self._center()
        features = self.combiner_features(scores, side)
        self.coef_, self.intercept_ = fit_l2_logistic(features, is_c1, C=1.0,
                                                      center=None if center is None else center[:-1])
        self.combiner_anchor_ = np.append(self.coef_, self.intercept_)
        self.combiner_precision_ = logistic_precision(features, self.coef_, self.intercept_, C=1.0)
        return self

    def refit_combiner(self, scores, is_c1, side=None) -> "StackCombiner":
        """Fit the combiner again on the held-out scores of messages judged since training (each
        scored before it was learned: ``spamkit learn --all-mail``), with the training fit as
        the prior: its weights the mean, the Hessian of its objective the precision
        (:func:`~spamkit.models.logistic.fit_l2_logistic` with ``precision``, the Laplace
        approximation of the training scores' likelihood), so that a few judged messages move it
        little and many as much as their evidence says -- mail from another server, whose
        scores the training combiner over-trusts, most. ``length_range_`` stays the training
        one. A filter file that did not keep the training fit's Hessian (written before it was
        kept) refits around its weights with the fit's own L2 penalty. Measured in
        docs/history.md, "Learning all the mail".
        """
        is_c1 = np.asarray(is_c1, dtype=bool)
        if is_c1.all() or not is_c1.any():
            raise ConfigError("the combiner needs held-out scores of both classes")
        if self.combiner_anchor_ is None or self.combiner_precision_ is None:
            self.combiner_anchor_ = np.append(self.coef_, self.intercept_)
            self.combiner_precision_ = np.diag(np.append(np.ones(self._n_weights()), 0.0))
        features = self.combiner_features(scores, side)
        if not np.isfinite(features).all():
            raise ConfigError("the judged messages' scores are not all finite (a distinct-token count below 0?); "
                              "the combiner was not refitted")
        self.coef_, self.intercept_ = fit_l2_logistic(features, is_c1, center=self.combiner_anchor_,
                                                      precision=self.combiner_precision_)
        return self
