"""Thresholds chosen from data and priors corrected: the decisions' numbers where the costs
alone do not fix them.

Takes class probabilities (with labels, where a threshold is chosen) and gives thresholds:
the deployment's spam rate folded into every log-odds (:func:`prior_shift`,
:func:`correct_prior`), the threshold that minimises the realised cost on labelled messages
with every tied optimum (:func:`choose_thresholds`), and the spam cut a stream teaches as it
is judged (:func:`stream_spam_cuts`). The decision rule these feed is
:mod:`spamkit.decide.decision`.
"""

from __future__ import annotations

import numpy as np

from ..common.errors import ConfigError
from ..scoring.arrays import expit, logit
from .decision import DEFAULT_BAND, DEFAULT_COSTS, bayes_threshold
from .rules import STREAM_CUT_AFTER, STREAM_CUT_EVERY


def prior_shift(train_spam_rate: float, deploy_spam_rate: float) -> float:
    """What a deployment spam rate different from the training rate adds to every log-odds of spam.

    Bayes' rule with new priors leaves the likelihoods p(x | c) alone, so the posterior
    log-odds move by ``logit(deploy) - logit(train)``; :func:`correct_prior` and
    :meth:`spamkit.filterfile.spamfilter.SpamFilter.set_spam_rate` both use this one number.

    >>> round(prior_shift(0.5, 0.2), 6)
    -1.386294
    """
    for name, rate in (("training", train_spam_rate), ("deployment", deploy_spam_rate)):
        if not 0.0 < rate < 1.0:
            raise ConfigError(f"the {name} spam rate must be strictly between 0 and 1, got {rate}")
    return float(np.log(deploy_spam_rate / (1 - deploy_spam_rate)) - np.log(train_spam_rate / (1 - train_spam_rate)))


def correct_prior(p_spam, train_spam_rate: float, deploy_spam_rate: float) -> np.ndarray:
    """P(spam | x) re-weighted for a deployment spam rate different from the training rate.

    Bayes' rule with new priors: p' = p pi'/pi / (p pi'/pi + (1 - p)(1 - pi')/(1 - pi)),
    i.e. logit p' = logit p + :func:`prior_shift` (the likelihoods p(x | c) are unchanged;
    only the priors move).

    >>> round(float(correct_prior(0.5, 0.5, 0.2)), 12)
    0.2
    """
    shift = prior_shift(train_spam_rate, deploy_spam_rate)
    with np.errstate(divide="ignore"):
        return expit(logit(np.asarray(p_spam, dtype=np.float64)) + shift)


def realised_cost(y_spam, p_spam, threshold: float, c_fp: float, c_fn: float) -> float:
    """Mean cost per message of calling spam above ``threshold`` (0/1 labels, 1 = spam)."""
    y = np.asarray(y_spam).astype(bool)
    pred = np.asarray(p_spam) > threshold
    return float((c_fp * np.sum(pred & ~y) + c_fn * np.sum(~pred & y)) / len(y))


def choose_thresholds(y_spam, p_spam, c_fp: float, c_fn: float) -> dict:
    """Thresholds minimising the realised cost on labelled data, with every tied optimum.

    Naive Bayes probabilities are poorly calibrated, so the Bayes threshold t* may not be
    the cheapest in practice. Candidates are the midpoints between consecutive distinct
    scores (and the ends); each is evaluated exactly. Returns the cost curve too.
    """
    y = np.asarray(y_spam).astype(bool)
    p = np.asarray(p_spam, dtype=np.float64)
    if len(y) == 0:
        raise ConfigError("no messages to choose a threshold on")
    s = np.unique(p)
    cands = np.concatenate([[-np.inf], (s[:-1] + s[1:]) / 2.0, [np.inf]]) if len(s) > 1 else np.array([-np.inf, np.inf])
    order = np.argsort(p, kind="stable")
    ps, ys = p[order], y[order]
    # messages with score > t are called spam: count by binary search on the sorted scores
    above = len(p) - np.searchsorted(ps, cands, side="right")
    spam_above = np.concatenate([[0], np.cumsum(ys[::-1])])[above]
    ham_above = above - spam_above
    fn = y.sum() - spam_above
    costs = (c_fp * ham_above + c_fn * fn) / len(y)
    best = costs.min()
    optimal = cands[np.isclose(costs, best, rtol=0, atol=1e-12)]
    return {"thresholds": cands, "costs": costs, "best_cost": float(best),
            "optimal": [float(t) for t in optimal], "bayes_threshold": bayes_threshold(c_fp, c_fn)}


def stream_spam_cuts(is_spam, p_spam, low: float = DEFAULT_BAND[0], floor: float = DEFAULT_BAND[1],
                     c_fp: float = DEFAULT_COSTS["c_fp"], c_unsure: float = DEFAULT_COSTS["c_unsure"],
                     every: int = STREAM_CUT_EVERY, after: int = STREAM_CUT_AFTER) -> np.ndarray:
    """The spam cut each message of a stream is decided with, chosen on the messages before it.

    A filter's probabilities are least calibrated at the top of the scale, and differently on
    every stream: above the costs' own cut (``floor``, 0.98 for the default costs) one stream
    holds 0.5% of its ham, another 0.1% (docs/results.md, "A cut learned from the stream"). So
    the cut is chosen where the stream shows it: every ``every`` messages, once ``after`` have
    been judged and labelled, the cut c >= ``floor`` (the scores of earlier messages are the
    candidates) that minimises what the earlier messages would have cost decided by it -- c_fp
    for each ham above c, c_unsure for each message between ``low`` and c (a spam above c costs
    nothing; below ``low`` nothing depends on c) -- the lowest such cut on a tie. It only ever
    rises above the costs' cut: it trades spam caught for ham kept where the stream's own ham
    says so. Each cut depends on the messages before it alone, so an online evaluation can
    decide with it.

    >>> # after 4 messages, one ham at 0.995 among spam: a cut at 0.995 leaves it and the two spam
    >>> # below it unsure (2 each: 6), cheaper than misfiling it (100) or a cut at 0.999 (8)
    >>> stream_spam_cuts([1, 0, 1, 1, 1, 1], [0.99, 0.995, 0.985, 0.999, 0.9999, 0.997], every=1, after=4).tolist()
    [0.98, 0.98, 0.98, 0.98, 0.995, 0.995]
    """
    y = np.asarray(is_spam, dtype=bool)
    p = np.asarray(p_spam, dtype=np.float64)
    cuts = np.full(len(p), float(floor))
    current = float(floor)
    for t in range(len(p)):
        if t >= after and (t - after) % every == 0:
            current = spam_cut(y[:t], p[:t], low, floor, c_fp, c_unsure)
        cuts[t] = current
    return cuts


def spam_cut(is_spam, p_spam, low: float = DEFAULT_BAND[0], floor: float = DEFAULT_BAND[1],
             c_fp: float = DEFAULT_COSTS["c_fp"], c_unsure: float = DEFAULT_COSTS["c_unsure"]) -> float:
    """The spam cut c >= ``floor`` that would have cost least on these labelled messages: c_fp
    for each ham above c, c_unsure for each message between ``low`` and c (the lowest such cut
    on a tie; the candidates are ``floor`` and the scores above it). What
    :func:`stream_spam_cuts` chooses at each step from the messages before it.

    >>> spam_cut([1, 0, 1, 1], [0.99, 0.995, 0.985, 0.999])   # the ham at 0.995: 2 x 3 unsure < 100
    0.995
    >>> spam_cut([1, 0, 1, 1], [0.99, 0.5, 0.985, 0.999])     # no ham above the floor
    0.98
    """
    y = np.asarray(is_spam, dtype=bool)
    p = np.asarray(p_spam, dtype=np.float64)
    candidates = np.unique(np.concatenate([[floor], p[p > floor]]))
    ham = np.sort(p[~y])
    middle = np.sort(p[p > low])
    cost = (c_fp * (len(ham) - np.searchsorted(ham, candidates, "right"))
            + c_unsure * np.searchsorted(middle, candidates, "right"))
    return float(candidates[np.argmin(cost)])


def next_spam_cut(is_spam, p_spam, low: float = DEFAULT_BAND[0], floor: float = DEFAULT_BAND[1],
                  c_fp: float = DEFAULT_COSTS["c_fp"], c_unsure: float = DEFAULT_COSTS["c_unsure"],
                  every: int = STREAM_CUT_EVERY, after: int = STREAM_CUT_AFTER) -> float:
    """The spam cut :func:`stream_spam_cuts` gives the message after these judged messages: what a
    deployed filter decides its next message with, once it has been told the label of every
    message it scored (``spamkit learn --all-mail``). The costs' own cut (``floor``) until
    ``after`` messages are judged, then :func:`spam_cut` on the messages up to the last re-choice.

    >>> y, p = [1, 0, 1, 1, 1, 1], [0.99, 0.995, 0.985, 0.999, 0.9999, 0.997]
    >>> [next_spam_cut(y[:n], p[:n], every=1, after=4) for n in range(6)]
    [0.98, 0.98, 0.98, 0.98, 0.995, 0.995]
    """
    n = len(p_spam)
    if n < after:
        return float(floor)
    last = after + ((n - after) // every) * every
    return spam_cut(np.asarray(is_spam)[:last], np.asarray(p_spam)[:last], low, floor, c_fp, c_unsure)

