"""Scores to calibrated probabilities: Platt scaling of a filter's log-odds.

Owns one step of the flow "model -> scores -> decisions": a model's score (its
log-odds) ranks messages, but is not always a probability one may put into a
cost computation. Robinson/Fisher's indicator in particular ignores the class
prior by design and is far from calibrated on short messages. A decision that
minimises expected cost (:mod:`spamkit.decide.decision`) needs P(spam | x) itself, so
a filter can learn the map from score to probability on held-out scores.

Sources: J. Platt, "Probabilistic outputs for support vector machines and
comparisons to regularized likelihood methods" (1999): P(c1 | s) = σ(a s + b),
fitted by maximum likelihood against the smoothed targets t+ = (N+ + 1)/(N+ + 2)
and t- = 1/(N- + 2), which keep a separable set from driving a to infinity;
H.-T. Lin, C.-J. Lin and R. Weng, "A note on Platt's probabilistic outputs for
support vector machines" (2007): the numerically stable form of the loss used here.
scikit-learn's ``sklearn/calibration.py`` (``_sigmoid_calibration``) fits the same
model (with the opposite sign of ``a``, ``b``) and is the oracle of the tests.
"""

from __future__ import annotations

import numpy as np

from ..common.errors import ConfigError
from ..common.names import CALIBRATIONS  # noqa: F401  (the calibrations' names)
from ..scoring import CALIBRATION_LIMIT as SCORE_LIMIT
from ..scoring.arrays import expit, log_expit

#: scores are clipped to SCORE_LIMIT (the scoring core's CALIBRATION_LIMIT, 700) before calibration
#: (kNN's log-odds can be infinite)



class PlattScaling:
    """P(c1 | score) = σ(a · score + b), fitted on held-out scores.

    Examples
    --------
    >>> import numpy as np
    >>> p = PlattScaling().fit(np.array([-2.0, -1.0, 1.0, 2.0]), np.array([1, 0, 0, 1]))
    >>> round(p.a_, 3), round(p.b_, 3)                 # no information in the score: a = 0
    (0.0, 0.0)
    """

    def __init__(self, balanced: bool = False):
        self.balanced = balanced

    def fit(self, scores, y) -> "PlattScaling":
        """Fit (a, b) on held-out scores and their labels (True for c1).

        ``balanced``: weigh each class by N / (2 N_c), as if the classes were equally frequent;
        the probabilities are then those of a stream with P(c1) = 1/2, to be corrected to the
        deployment rate (:func:`spamkit.decide.thresholds.correct_prior`). A corpus's class mix is often
        an artefact of how it was assembled (Enron-spam mixes ham and spam 3:1 and 1:3 on purpose).
        """
        s = np.clip(np.asarray(scores, dtype=np.float64), -SCORE_LIMIT, SCORE_LIMIT)
        y = np.asarray(y).astype(bool)
        if s.shape != y.shape or s.ndim != 1:
            raise ConfigError(f"calibration needs one score per label, got {s.shape} and {y.shape}")
        if np.isnan(s).any():
            raise ConfigError("calibration scores contain NaN")
        n_pos, n_neg = int(y.sum()), int((~y).sum())
        if n_pos == 0 or n_neg == 0:
            raise ConfigError("calibration needs held-out scores of both classes")
        t = np.where(y, (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0))
        w = np.where(y, len(y) / (2.0 * n_pos), len(y) / (2.0 * n_neg)) if self.balanced else np.ones(len(y))
        # Centre and scale the scores for the optimiser; (a, b) are mapped back afterwards.
        centre = float(np.mean(s))
        scale = float(np.std(s)) or 1.0
        z = (s - centre) / scale

        def loss(theta):
            u = theta[0] * z + theta[1]
            # -[t log σ(u) + (1 - t) log σ(-u)], stable for any u
            value = -np.sum(w * (t * log_expit(u) + (1 - t) * log_expit(-u)))
            r = w * (expit(u) - t)
            return value, np.array([np.sum(r * z), np.sum(r)])

        prior = 0.0 if self.balanced else np.log((n_pos + 1.0) / (n_neg + 1.0))
        from scipy.optimize import minimize  # fitting only: applying a calibration needs no SciPy optimiser

        result = minimize(loss, np.array([0.0, prior]), jac=True, method="L-BFGS-B")
        a_z, b_z = result.x
        self.a_ = float(a_z / scale)
        self.b_ = float(b_z - a_z * centre / scale)
        self.n_ = (n_neg, n_pos)
        return self

    def log_proba(self, scores) -> tuple[np.ndarray, np.ndarray]:
        """(log P(c0 | s), log P(c1 | s)) for each score."""
        s = np.clip(np.asarray(scores, dtype=np.float64), -SCORE_LIMIT, SCORE_LIMIT)
        u = self.a_ * s + self.b_
        return log_expit(-u), log_expit(u)

    def as_dict(self) -> dict:
        return {"method": "platt", "a": self.a_, "b": self.b_, "n": list(self.n_), "balanced": bool(self.balanced)}

    @classmethod
    def from_dict(cls, d: dict) -> "PlattScaling":
        if d.get("method") != "platt":
            raise ConfigError(f"unknown calibration method {d.get('method')!r}")
        p = cls(balanced=bool(d.get("balanced", False)))
        p.a_, p.b_ = float(d["a"]), float(d["b"])
        n_neg, n_pos = (int(v) for v in d.get("n", (0, 0)))
        p.n_ = (n_neg, n_pos)
        if not (np.isfinite(p.a_) and np.isfinite(p.b_)):
            raise ConfigError("calibration parameters are not finite")
        return p


class IsotonicCalibration:
    """P(c1 | s) as a non-decreasing step-free function of the score: isotonic regression.

    Pool-adjacent-violators (Ayer et al. 1955; Zadrozny & Elkan, "Transforming classifier
    scores into accurate multiclass probability estimates", KDD 2002) on held-out
    (score, label) pairs, equal scores pooled first; between the pooled blocks the map is
    linear in the score, outside them constant (scikit-learn's ``IsotonicRegression`` with
    ``out_of_bounds="clip"`` gives the same values and is the test oracle). Probabilities
    are kept within [1/(n+2), (n+1)/(n+2)] so that log-odds stay finite. Unlike Platt's
    two parameters, the map can follow any monotone miscalibration, but it has flat parts:
    scores in one block become ties.
    """

    def fit(self, scores, y) -> "IsotonicCalibration":
        s = np.clip(np.asarray(scores, dtype=np.float64), -SCORE_LIMIT, SCORE_LIMIT)
        y = np.asarray(y).astype(np.float64)
        if s.shape != y.shape or s.ndim != 1:
            raise ConfigError(f"calibration needs one score per label, got {s.shape} and {y.shape}")
        if np.isnan(s).any():
            raise ConfigError("calibration scores contain NaN")
        if y.min() == y.max():
            raise ConfigError("calibration needs held-out scores of both classes")
        xs, inverse = np.unique(s, return_inverse=True)
        weight = np.bincount(inverse).astype(np.float64)
        mean = np.bincount(inverse, weights=y) / weight
        # pool adjacent violators on the distinct scores
        values, weights, starts = [], [], []
        for i in range(len(xs)):
            values.append(mean[i])
            weights.append(weight[i])
            starts.append(i)
            while len(values) > 1 and values[-2] > values[-1]:
                w = weights[-2] + weights[-1]
                v = (values[-2] * weights[-2] + values[-1] * weights[-1]) / w
                values[-2:], weights[-2:] = [v], [w]
                starts.pop()
        ends = starts[1:] + [len(xs)]
        # each block is flat from its lowest to its highest score; linear between blocks
        self.x_ = np.array([x for a, b in zip(starts, ends) for x in (xs[a], xs[b - 1])])
        self.p_ = np.array([v for v in values for _ in (0, 1)])
        self.n_ = int(len(y))
        return self

    def proba(self, scores) -> np.ndarray:
        s = np.clip(np.asarray(scores, dtype=np.float64), -SCORE_LIMIT, SCORE_LIMIT)
        return np.interp(s, self.x_, self.p_)

    def log_proba(self, scores) -> tuple[np.ndarray, np.ndarray]:
        """(log P(c0 | s), log P(c1 | s)), kept away from 0 and 1 by 1/(n+2)."""
        eps = 1.0 / (self.n_ + 2)
        p = np.clip(self.proba(scores), eps, 1 - eps)
        return np.log1p(-p), np.log(p)

    def as_dict(self) -> dict:
        return {"method": "isotonic", "x": self.x_.tolist(), "p": self.p_.tolist(), "n": self.n_}

    @classmethod
    def from_dict(cls, d: dict) -> "IsotonicCalibration":
        c = cls()
        c.x_ = np.asarray(d["x"], dtype=np.float64)
        c.p_ = np.asarray(d["p"], dtype=np.float64)
        c.n_ = int(d["n"])
        if (c.x_.shape != c.p_.shape or c.x_.ndim != 1 or not len(c.x_) or np.any(np.diff(c.x_) < 0)
                or np.any(np.diff(c.p_) < -1e-12) or not np.all((c.p_ >= 0) & (c.p_ <= 1))):
            raise ConfigError("isotonic calibration table is damaged")
        return c


def calibration_from_dict(d: dict):
    """The calibration stored in a filter file (Platt or isotonic)."""
    method = d.get("method")
    if method == "platt":
        return PlattScaling.from_dict(d)
    if method == "isotonic":
        return IsotonicCalibration.from_dict(d)
    raise ConfigError(f"unknown calibration method {method!r}")
