"""Robinson's token probabilities with Fisher's chi-square combining: the mail filters' rule.

Sources
-------
- Gary Robinson, "A Statistical Approach to the Spam Problem", *Linux Journal* 107
  (March 2003): the smoothed per-token spam probability ``f(w)`` with an unknown-word
  strength ``s`` and prior ``x``, and Fisher's method of combining the ``f(w)`` of the
  tokens that deviate from 0.5 into one indicator ``I = (1 + H - S) / 2``.
- SpamBayes, ``spambayes/classifier.py`` (``chi2_spamprob``, ``_getclues``) and
  ``spambayes/chi2.py`` (``chi2Q``): the same rule as deployed, with ``s`` = 0.45, ``x`` = 0.5,
  minimum deviation 0.1 and at most 150 clues per message.
- bogofilter, ``src/fisher.c`` and ``src/robinson.c``: the same rule with a deviation cut-off
  (``min_dev``).
- Fisher, R. A., *Statistical Methods for Research Workers* (1932), §21.1: if p_1..p_n are
  independent uniform p-values, -2 Σ ln p_i is chi-square with 2n degrees of freedom.

The model, for a binary problem (classes ``c0`` and ``c1``; for mail ``ham`` and ``spam``):

    b(w) = docs of c1 containing w / docs of c1          g(w) likewise for c0
    p(w) = b(w) / (b(w) + g(w))                          (class sizes cancelled out)
    f(w) = (s x + n(w) p(w)) / (s + n(w))                n(w) = docs containing w

A token never seen has f = x. The clues of a message are its distinct tokens with
``|f - 1/2| >= min_dev`` (the ``max_clues`` strongest when there are more), and with
n clues

    H = 1 - C⁻¹(-2 Σ ln f, 2n)     S = 1 - C⁻¹(-2 Σ ln (1 - f), 2n)     P(c1) = (1 + S - H) / 2

where C⁻¹(χ², ν) is the chi-square survival function. With no clue, P = 1/2.

The survival function of χ² with 2n degrees of freedom at 2m is the regularised upper
incomplete gamma function Q(n, m) = e^(-m) Σ_{i<n} m^i / i!. For a long spam both
1 - Q and Q of the two sums underflow in floating point, so P would round to exactly 1 for
thousands of messages and a ranking (ROC) would tie them. The posterior is computed in log
space by the scoring core (:func:`spamkit.scoring.fisher_log_probabilities`, over arrays
:func:`spamkit.scoring.arrays.fisher_log_odds`), so the log-odds stay exact and every message
keeps its rank.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..common.compiled import speedups as _compiled
from ..common.errors import ConfigError
from ..common.names import FISHER_MAX_CLUES, FISHER_MIN_DEV, FISHER_PRIOR, FISHER_STRENGTH
from ..scoring import F_CEILING_GAP, F_FLOOR
from ..scoring.arrays import fisher_log_odds
from .base import csr_index_arrays
from .counting import CountingModel

speedups = _compiled()                   # spamkit/common/speedups.c, or None: the NumPy definitions

#: the scikit-learn estimator checks a token-presence model cannot pass, and why
#: (``check_estimator(model, expected_failed_checks=model.EXPECTED_FAILED_CHECKS)`` passes)
PRESENCE_FAILED_CHECKS = {
    "check_decision_proba_consistency": "its data are blobs around (2, 2) and (4, 4), some values negative, and "
                                        "this check does not make them non-negative for a positive_only estimator; "
                                        "a presence model takes counts and refuses negative values",
}


#: scikit-learn tags of the two-class token-presence models (RobinsonFisher, FisherNBStack,
#: OnlineLogistic): no multi-class; counts only (negative values are refused: :func:`presence`);
#: poor_score, since presence of real-valued blob features says little
PRESENCE_TAGS = {"input_tags.positive_only": True, "classifier_tags.multi_class": False,
                 "classifier_tags.poor_score": True}


def presence(X) -> sp.csr_matrix:
    """X as a CSR matrix of 0/1 (token present or not); negative values are refused."""
    if sp.issparse(X):
        X = X if isinstance(X, sp.csr_matrix) else sp.csr_matrix(X)
        if not X.nnz or (X.data == 1).all():
            return X                                  # already 0/1 (a binary vectorizer's output)
        if X.data.min() < 0:
            raise ValueError("Negative values in data passed to a token presence model, which takes counts")
        if not X.data.all():                          # explicit zeros: drop them first
            X = X.copy()
            X.eliminate_zeros()
        # one new matrix (scoring one message built three): ones where X has entries
        return sp.csr_matrix((np.ones_like(X.data), X.indices.copy(), X.indptr.copy()), shape=X.shape)
    X = np.asarray(X)
    if (X < 0).any():
        raise ValueError("Negative values in data passed to a token presence model, which takes counts")
    return sp.csr_matrix((X != 0).astype(np.float64))


class RobinsonFisher(CountingModel):
    """Two-class token filter: Robinson's f(w) and Fisher's chi-square combining.

    Parameters
    ----------
    strength : float
        Robinson's s: how many documents' worth of belief the prior ``prior`` carries.
        SpamBayes uses 0.45, bogofilter 0.0178.
    prior : float
        Robinson's x: f of a token never seen (0.5 = no opinion).
    min_dev : float
        Only tokens with ``|f - 1/2| >= min_dev`` are clues. SpamBayes 0.1; bogofilter 0.375.
    max_clues : int
        At most this many clues per message, the strongest (0: no limit). SpamBayes 150.

    Features are counted by presence (a token repeated in a message counts once), so any
    non-negative matrix works: binary, counts or TF are the same to this model.

    Attributes
    ----------
    classes_ : ndarray of the two class labels, sorted; the second (``"spam"``) is c1.
    class_count_ : ndarray (2,), documents per class.
    feature_count_ : ndarray (2, n_features), documents of each class containing each feature.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1, 1, 0], [1, 0, 0], [0, 0, 1], [0, 1, 1]])
    >>> m = RobinsonFisher().fit(X, ["spam", "spam", "ham", "ham"])
    >>> m.token_probability([0]).round(4).tolist()     # in both spams, no ham: (0.225 + 2) / 2.45
    [0.9082]
    """

    def __init__(self, strength=FISHER_STRENGTH, prior=FISHER_PRIOR, min_dev=FISHER_MIN_DEV, max_clues=FISHER_MAX_CLUES):
        self.strength = strength
        self.prior = prior
        self.min_dev = min_dev
        self.max_clues = max_clues

    sklearn_tag_settings = PRESENCE_TAGS
    #: the scikit-learn checks it cannot pass, and why (tests/test_estimator_checks.py)
    EXPECTED_FAILED_CHECKS = PRESENCE_FAILED_CHECKS

    # ------------------------------------------------------------- parameters

    def check_params(self):
        try:
            s, x, d, k = float(self.strength), float(self.prior), float(self.min_dev), int(self.max_clues)
        except (TypeError, ValueError):
            raise ConfigError("strength, prior and min_dev must be numbers, max_clues an integer") from None
        if not (np.isfinite(s) and s >= 0):
            raise ConfigError(f"strength must be a finite number >= 0, got {self.strength!r}")
        if not 0.0 < x < 1.0:
            raise ConfigError(f"prior must be strictly between 0 and 1, got {self.prior!r}")
        if not 0.0 <= d < 0.5:
            raise ConfigError(f"min_dev must be in [0, 0.5), got {self.min_dev!r}")
        if k < 0:
            raise ConfigError(f"max_clues must be >= 0 (0: no limit), got {self.max_clues!r}")
        return s, x, d, k

    # ------------------------------------------------------------- counting (spamkit.models.counting)

    n_classes_required = 2

    def counted(self, X):
        """Documents, not occurrences: each token counts once per message."""
        return presence(X)

    # ------------------------------------------------------------- evidence

    def token_probability(self, columns) -> np.ndarray:
        """Robinson's f(w) for feature columns: (s x + n p) / (s + n)."""
        self.check_fitted()
        s, x, _, _ = self.check_params()
        cols = np.asarray(columns, dtype=np.int64)
        ham = self.feature_count_[0, cols]
        spam = self.feature_count_[1, cols]
        n_ham, n_spam = self.class_count_
        with np.errstate(divide="ignore", invalid="ignore"):
            b = spam / n_spam if n_spam > 0 else np.zeros_like(spam)
            g = ham / n_ham if n_ham > 0 else np.zeros_like(ham)
            p = np.where(b + g > 0, b / (b + g), x)
        n = ham + spam
        denominator = s + n
        with np.errstate(divide="ignore", invalid="ignore"):
            f = np.where(denominator > 0, (s * x + n * p) / denominator, x)
        return f

    def _clues(self, X):
        """Per non-zero of X: (row, column, f, is_clue)."""
        s, x, min_dev, max_clues = self.check_params()
        rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
        cols = X.indices
        f = self.token_probability(cols)
        dev = np.abs(f - 0.5)
        clue = dev >= min_dev
        if max_clues and X.shape[0]:
            running = np.concatenate([[0], np.cumsum(clue)])
            per_row = running[X.indptr[1:]] - running[X.indptr[:-1]]
            sorted_columns = X.has_sorted_indices
            # keep the max_clues strongest clues of each row (ties: lower column first); only
            # rows with more candidates than that need a choice, each by one stable sort
            for r in np.flatnonzero(per_row > max_clues):
                start, stop = X.indptr[r], X.indptr[r + 1]
                candidates = start + np.flatnonzero(clue[start:stop])
                if not sorted_columns:
                    candidates = candidates[np.argsort(cols[candidates], kind="stable")]
                keep = candidates[np.argsort(-dev[candidates], kind="stable")[:max_clues]]
                clue[candidates] = False
                clue[keep] = True
        return rows, cols, f, clue

    def clue_sums(self, X) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For each row of the presence matrix X: (number of clues, Σ ln f, Σ ln(1 - f)) over its
        clues (f clipped to [1e-300, 1 - 1e-16]), what Fisher combining needs of a message.

        In C (``spamkit.common.speedups.fisher_sums``) when the extension is built: one pass per row
        with the same arithmetic in the same order as :meth:`_clue_sums_python`, which is its
        definition; they agree to the last bits of a logarithm (tests/test_robinson.py). One
        message costs a few microseconds there, against a few dozen NumPy calls here.
        """
        if speedups is not None and self.feature_count_.dtype == np.float64:
            s, x, min_dev, max_clues = self.check_params()
            out = np.empty((X.shape[0], 3))
            ham, spam = np.ascontiguousarray(self.feature_count_[0]), np.ascontiguousarray(self.feature_count_[1])
            speedups.fisher_sums(*csr_index_arrays(X), ham, spam, float(self.class_count_[0]),
                                 float(self.class_count_[1]), s, x, min_dev, max_clues, out.reshape(-1))
            return out[:, 0].astype(np.int64), out[:, 1], out[:, 2]
        return self._clue_sums_python(X)

    def _clue_sums_python(self, X) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`clue_sums` in NumPy."""
        rows, _, f, clue = self._clues(X)
        n_rows = X.shape[0]
        r = rows[clue]
        fc = np.clip(f[clue], F_FLOOR, 1 - F_CEILING_GAP)
        n = np.bincount(r, minlength=n_rows)
        log_f = np.bincount(r, weights=np.log(fc), minlength=n_rows)
        log_1mf = np.bincount(r, weights=np.log1p(-fc), minlength=n_rows)
        return n, log_f, log_1mf

    def joint_log_likelihood(self, X) -> np.ndarray:
        """log P(c | x) of Fisher combining, shape (n, 2): already normalised (rows log-sum to 0)."""
        X = self.counted(self._validate_X(X, reset=False))
        n, log_f, log_1mf = self.clue_sums(X)
        log_c0, log_c1 = fisher_log_odds(log_f, log_1mf, n)
        return np.column_stack([log_c0, log_c1])

    def decision_function(self, X) -> np.ndarray:
        """log P(c1 | x) - log P(c0 | x): exact even where P(c1) rounds to 1."""
        jll = self.joint_log_likelihood(X)
        return jll[:, 1] - jll[:, 0]

    def contributions(self, x) -> tuple[np.ndarray, np.ndarray]:
        """For one row: its features and (ln(1 - f), ln f) of each clue (0 for a non-clue).

        Fisher combining is not additive, but each clue enters the two chi-square sums through
        exactly these logs; their difference, logit f, ranks the clues for an explanation.
        """
        X = self.counted(self._validate_X(x, reset=False))[0]
        _, cols, f, clue = self._clues(X)
        fc = np.clip(f, F_FLOOR, 1 - F_CEILING_GAP)
        contrib = np.vstack([np.where(clue, np.log1p(-fc), 0.0), np.where(clue, np.log(fc), 0.0)])
        return cols, contrib
