"""The scoring core: every formula that turns a filter's counts and weights into a message's
log-odds, defined once, with the standard library alone.

It takes numbers (counts, weights, sums over a message's clues) and gives log-probabilities;
it knows nothing of mail, tokens, matrices or files. Two kinds of caller use it:

- pipe mode's lean route (:mod:`spamkit.mail.lean`) scores one message with these definitions as
  they are, without importing NumPy;
- the models (:mod:`spamkit.models`) score whole matrices: they call
  :func:`fisher_log_probabilities_into` for the chi-square tails of every row at once (the
  compiled loop ``spamkit.scoring.chisquare``, this module's definition in C, where it is built;
  else the definition row by row), and their NumPy array forms of Robinson's f(w), naive Bayes
  and the combiner are tested against the one-message definitions here
  (``tests/test_scoring.py``).

The constants both routes must share (the clips of log-odds, the combiner's length centre and
warm-up) are defined here and nowhere else.

Sources
-------
- G. Robinson, "A Statistical Approach to the Spam Problem", *Linux Journal* 107 (2003):
  f(w) = (s x + n p) / (s + n), and Fisher's combining of the clues' f into
  P(spam) = (1 + H - S) / 2 with H, S chi-square tails of -2 Σ ln f and -2 Σ ln (1 - f).
- R. A. Fisher, *Statistical Methods for Research Workers* (1932), §21.1.
- M. Abramowitz and I. Stegun, *Handbook of Mathematical Functions* (1964), 26.4.21: the
  chi-square survival function with 2n degrees of freedom at 2m is the finite Poisson sum
  Q(n, m) = e^-m Σ_{i<n} m^i / i!; its complement P(n, m) = e^-m Σ_{i>=n} m^i / i!.
- A. McCallum and K. Nigam, "A Comparison of Event Models for Naive Bayes Text
  Classification" (AAAI-98 workshop): the multinomial model with Laplace smoothing.
- J. Platt, "Probabilistic Outputs for Support Vector Machines" (1999): P = 1 / (1 + e^-(a s + b)).
"""

from __future__ import annotations

import math
from bisect import bisect_right

from ..common.compiled import chisquare as _compiled_chisquare

#: every model's log-odds are clipped to ±this (far beyond any decision; exp() stays finite)
LOG_ODDS_LIMIT = 700.0
#: the stack's logistic component's score is clipped to ±this
LOGISTIC_LIMIT = 35.0
#: a calibration reads scores clipped to ±this
CALIBRATION_LIMIT = 700.0
#: the stack's length input is ℓ = log(1 + distinct columns) - LENGTH_CENTRE
LENGTH_CENTRE = 4.0
#: a stack with a combiner prior scales its log-odds by min(1, messages learned / PRIOR_WARMUP)
PRIOR_WARMUP = 50
#: f is kept in [F_FLOOR, 1 - F_CEILING_GAP] before its logs are taken (ln 0 is not a number)
F_FLOOR = 1e-300
F_CEILING_GAP = 1e-16

_LOG2 = math.log(2.0)
#: series terms this far below the largest (e^-45 of it) are beneath a double's precision
_NEGLIGIBLE = math.exp(-45.0)
#: the most terms of P's series summed past n (they fall when m < n; the sum has converged long before)
_TAIL_TERMS = 100_000

#: not loaded yet (:func:`compiled_tails` loads it)
_UNLOADED = object()
#: spamkit/scoring/chisquare.c, or None (the definitions below), once :func:`compiled_tails` has run
_chisquare: object = _UNLOADED


def compiled_tails():
    """The compiled chi-square tails (``spamkit.scoring.chisquare``), or None where they are not
    in use: loaded on the first call, not at import, for one-shot pipe mode scores one message
    by the definitions and would pay the extension's loading (~1-2 ms) for nothing."""
    global _chisquare
    if _chisquare is _UNLOADED:
        _chisquare = _compiled_chisquare()
    return _chisquare


# ---------------------------------------------------------------- logistic and clips

def log_expit(z: float) -> float:
    """log(1 / (1 + e^-z)) without overflow.

    >>> log_expit(0.0) == -math.log(2.0)
    True
    """
    return -math.log1p(math.exp(-z)) if z >= 0 else z - math.log1p(math.exp(z))


def clip(z: float, limit: float) -> float:
    """z kept within ±limit."""
    return -limit if z < -limit else limit if z > limit else z


def finite_log_odds(z: float) -> float:
    """NaN to 0, the rest clipped to ±:data:`LOG_ODDS_LIMIT`."""
    return 0.0 if z != z else clip(z, LOG_ODDS_LIMIT)


def normalised(log_c0: float, log_c1: float) -> tuple[float, float]:
    """Two log-likelihoods normalised to log-probabilities that log-sum to 0."""
    top = max(log_c0, log_c1)
    if top in (math.inf, -math.inf) or top != top:
        top = 0.0
    norm = top + math.log(math.exp(log_c0 - top) + math.exp(log_c1 - top))
    return log_c0 - norm, log_c1 - norm


def two_class_log_proba(z: float) -> tuple[float, float]:
    """(log P(c0), log P(c1)) of the log-odds z = log P(c1) - log P(c0)."""
    return log_expit(-z), log_expit(z)


def _log_add(a: float, b: float) -> float:
    top = max(a, b)
    if top == -math.inf:
        return top
    return top + math.log1p(math.exp(min(a, b) - top))


# ---------------------------------------------------------------- the chi-square tails

def log_gamma_q_and_p(n: int, m: float) -> tuple[float, float]:
    """(log Q(n, m), log P(n, m)) for an integer n >= 1 and m >= 0, each exact where it is tiny.

    Q(n, m) = e^-m Σ_{i<n} m^i / i! is the chi-square survival function with 2n degrees of
    freedom at 2m, P = 1 - Q its distribution function. The terms m^i / i! rise while i < m
    and fall after, so Q's sum is taken outward from its largest term, relative to it (each
    next term from the last times m / i or i / m), until the terms fall below e^-45 of it. When Q < 1/2,
    log P = log(1 - Q); otherwise m < n (the median of a gamma(n) variable lies below n), P's
    terms fall from i = n on, P is summed the same way and log Q = log(1 - P). Whichever is
    small is thus a sum of positive terms in log space: no cancellation and no underflow, so a
    spam a thousand nats sure keeps its rank.

    >>> log_gamma_q_and_p(1, 2000.0)[0]                   # Q(1, m) = e^-m
    -2000.0
    >>> round(log_gamma_q_and_p(1, 1e-300)[1], 4)          # P(1, m) = 1 - e^-m ≈ m
    -690.7755
    """
    if not m > 0.0:
        return 0.0, -math.inf
    if m == math.inf:
        return -math.inf, 0.0
    log_m = math.log(m)
    mode = min(n - 1, int(m))
    top = mode * log_m - math.lgamma(mode + 1.0)
    total, term = 1.0, 1.0
    for i in range(mode, 0, -1):                           # down: term_{i-1} = term_i i / m
        term *= i / m
        if term < _NEGLIGIBLE:
            break
        total += term
    term = 1.0
    for i in range(mode + 1, n):                           # up: term_i = term_{i-1} m / i
        term *= m / i
        if term < _NEGLIGIBLE:
            break
        total += term
    log_q = -m + top + math.log(total)
    if log_q < -_LOG2:
        return log_q, math.log1p(-math.exp(log_q))
    first = n * log_m - math.lgamma(n + 1.0)
    total, term = 1.0, 1.0
    for i in range(n + 1, n + _TAIL_TERMS):
        term *= m / i
        if term < _NEGLIGIBLE:
            break
        total += term
    log_p = -m + first + math.log(total)
    return math.log1p(-math.exp(log_p)), log_p


def log_gamma_q(n: int, m: float) -> float:
    """log Q(n, m), the log survival function of χ²(2n) at 2m (:func:`log_gamma_q_and_p`)."""
    return log_gamma_q_and_p(n, m)[0]


def log_gamma_p(n: int, m: float) -> float:
    """log P(n, m) = log(1 - Q(n, m)), the log distribution function of χ²(2n) at 2m."""
    return log_gamma_q_and_p(n, m)[1]


def fisher_log_probabilities(log_f: float, log_1mf: float, n: int) -> tuple[float, float]:
    """(log P(c0), log P(c1)) of Fisher combining over n clues with Σ ln f and Σ ln (1 - f).

    With m_h = -Σ ln f and m_s = -Σ ln (1 - f): H = 1 - Q(n, m_h), S = 1 - Q(n, m_s), and
    P(c1) = (1 + S - H) / 2 = (Q(n, m_h) + P(n, m_s)) / 2, P(c0) = (P(n, m_h) + Q(n, m_s)) / 2.
    No clue (n = 0): one half each.

    >>> [round(math.exp(v), 6) for v in fisher_log_probabilities(math.log(0.72), math.log(0.02), 2)]
    [0.070859, 0.929141]
    """
    if n <= 0:
        return -_LOG2, -_LOG2
    q_h, p_h = log_gamma_q_and_p(n, -log_f)
    q_s, p_s = log_gamma_q_and_p(n, -log_1mf)
    return _log_add(p_h, q_s) - _LOG2, _log_add(q_h, p_s) - _LOG2


def fisher_log_probabilities_into(n, log_f, log_1mf, out_c0, out_c1) -> None:
    """:func:`fisher_log_probabilities` of every row: ``n`` (int64), ``log_f``, ``log_1mf`` and
    the outputs (float64, written) are buffers of one length (NumPy arrays or ``array.array``).

    The compiled loop (``spamkit.scoring.chisquare.fisher_tails``: the same steps in C) where it
    is built; otherwise the definition, row by row.
    """
    compiled = compiled_tails()
    if compiled is not None:
        compiled.fisher_tails(n, log_f, log_1mf, out_c0, out_c1)
        return
    counts, hams, spams = memoryview(n).tolist(), memoryview(log_f).tolist(), memoryview(log_1mf).tolist()
    if not len(counts) == len(hams) == len(spams) == len(out_c0) == len(out_c1):
        raise ValueError("fisher_tails: the sums and the outputs differ in length")
    for k, (count, h, s) in enumerate(zip(counts, hams, spams)):
        out_c0[k], out_c1[k] = fisher_log_probabilities(h, s, count)


# ---------------------------------------------------------------- Robinson/Fisher: one message

def robinson_f(ham: float, spam: float, n_ham: float, n_spam: float, strength: float, prior: float) -> float:
    """Robinson's f(w) of a token in ``ham`` ham and ``spam`` spam documents of ``n_ham`` and
    ``n_spam``: (s x + n p) / (s + n) with p = b / (b + g), b = spam / n_spam, g = ham / n_ham,
    n = ham + spam; x where nothing is known.

    >>> round(robinson_f(0, 2, 2, 2, 0.45, 0.5), 4)          # in both spams, no ham: (0.225 + 2) / 2.45
    0.9082
    """
    b = spam / n_spam if n_spam > 0 else 0.0
    g = ham / n_ham if n_ham > 0 else 0.0
    p = b / (b + g) if b + g > 0 else prior
    n = ham + spam
    return (strength * prior + n * p) / (strength + n) if strength + n > 0 else prior


def fisher_clue_sums(columns, ham_counts, spam_counts, n_ham: float, n_spam: float, strength: float,
                     prior: float, min_dev: float, max_clues: int) -> tuple[int, float, float]:
    """(number of clues, Σ ln f, Σ ln (1 - f)) of one message's distinct ``columns`` (ascending):
    a column is a clue when |f - 1/2| >= min_dev; with more than ``max_clues`` (0: no limit),
    the strongest, ties to the lower column. f is kept in [1e-300, 1 - 1e-16] for its logs."""
    clues = []
    for j in columns:
        f = robinson_f(ham_counts[j], spam_counts[j], n_ham, n_spam, strength, prior)
        dev = abs(f - 0.5)
        if dev >= min_dev:
            clues.append((-dev, j, f))
    if max_clues and len(clues) > max_clues:
        clues = sorted(clues)[:max_clues]
    log_f = log_1mf = 0.0
    for _, _, f in clues:
        f = min(max(f, F_FLOOR), 1 - F_CEILING_GAP)
        log_f += math.log(f)
        log_1mf += math.log1p(-f)
    return len(clues), log_f, log_1mf


# ---------------------------------------------------------------- naive Bayes: one message

def nb_log_odds(columns, ham_counts, spam_counts, class_count, totals, alpha: float, n_features: int) -> float:
    """Multinomial naive Bayes' log-odds of a message given as its distinct ``columns`` (presence):
    log P(c1) / P(c0) + Σ_j [log (N_1j + α) / (N_1 + α d) - log (N_0j + α) / (N_0 + α d)], with
    N_cj the documents of class c holding term j, N_c = Σ_j N_cj (``totals``), d the vocabulary's
    size; NaN as 0 and clipped to ±:data:`LOG_ODDS_LIMIT`.

    >>> round(nb_log_odds([0], [1.0, 0.0], [3.0, 1.0], (2.0, 2.0), (1.0, 4.0), 1.0, 2), 6)
    0.0
    """
    c0, c1 = class_count
    total = c0 + c1
    log_prior = [math.log(c) - math.log(total) if c > 0 else -math.inf for c in (c0, c1)]
    den0 = math.log(totals[0] + alpha * n_features)
    den1 = math.log(totals[1] + alpha * n_features)
    z = 0.0
    for j in columns:
        z += (math.log(spam_counts[j] + alpha) - den1) - (math.log(ham_counts[j] + alpha) - den0)
    z += log_prior[1] - log_prior[0]
    return finite_log_odds(z)


# ---------------------------------------------------------------- the stack's combiner: one message

def squash(score: float, kind: str) -> float:
    """What the combiner sees of a component's log-odds: clipped to ±:data:`LOG_ODDS_LIMIT`,
    then, for ``"slog"``, sign(z) log(1 + |z|)."""
    score = clip(score, LOG_ODDS_LIMIT)
    if kind == "slog":
        return math.copysign(math.log1p(abs(score)), score) if score else 0.0
    return score


def length_input(n_columns: int, length_range) -> float:
    """The combiner's length input ℓ = log(1 + distinct columns) - :data:`LENGTH_CENTRE`, kept in
    the range it was fitted on."""
    length = math.log1p(n_columns) - LENGTH_CENTRE
    return min(max(length, length_range[0]), length_range[1])


def combined_log_odds(components, coef, intercept: float, squash_kind: str = "clip", length=None,
                      side=(), warmup: float = 1.0) -> float:
    """The stack's combined log-odds of one message: ``coef`` · (the squashed component log-odds
    [, ℓ, ℓ × the second squashed component] [, the side scores, NaN as 0 and clipped]) +
    ``intercept``, times ``warmup`` (a combiner prior's warm-up, :data:`PRIOR_WARMUP`).

    >>> combined_log_odds([2.0, -1.0], [0.5, 1.0], 0.25)
    0.25
    """
    features = [squash(score, squash_kind) for score in components]
    if length is not None:
        features += [length, length * features[1]]
    for value in side:
        features.append(0.0 if value != value else clip(value, LOG_ODDS_LIMIT))
    z = 0.0
    for weight, feature in zip(coef, features):
        z += weight * feature
    return (z + intercept) * warmup


# ---------------------------------------------------------------- calibration: one score

def platt_log_proba(score: float, a: float, b: float) -> tuple[float, float]:
    """(log P(c0), log P(c1)) of Platt scaling: P(c1) = 1 / (1 + e^-(a s + b)), s clipped to
    ±:data:`CALIBRATION_LIMIT`."""
    return two_class_log_proba(a * clip(score, CALIBRATION_LIMIT) + b)


def interpolate(x: float, xs, ps) -> float:
    """``numpy.interp`` for one point: linear between the table's points, flat beyond its ends."""
    if x <= xs[0]:
        return float(ps[0])
    if x >= xs[-1]:
        return float(ps[-1])
    i = bisect_right(xs, x)
    x0, x1, p0, p1 = xs[i - 1], xs[i], ps[i - 1], ps[i]
    return float(p0) if x1 == x0 else float(p0 + (x - x0) * (p1 - p0) / (x1 - x0))


def isotonic_log_proba(score: float, xs, ps, n_fitted: int) -> tuple[float, float]:
    """(log P(c0), log P(c1)) of an isotonic calibration (steps ``xs`` -> ``ps`` fitted on
    ``n_fitted`` scores), P kept within [1 / (n + 2), 1 - 1 / (n + 2)] (Laplace's rule of
    succession: no certainty from n examples)."""
    eps = 1.0 / (n_fitted + 2)
    p = min(max(interpolate(clip(score, CALIBRATION_LIMIT), xs, ps), eps), 1 - eps)
    return math.log1p(-p), math.log(p)
