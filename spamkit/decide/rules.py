"""The decision rules' numbers from the costs, with the standard library alone: the Bayes
threshold, the unsure band, and the decision layer a learned spam cut applies to, with the
schedule it is re-chosen on.

Takes costs and gives thresholds; :mod:`spamkit.decide.decision` (cost matrices, decisions) and
:mod:`spamkit.decide.thresholds` (cuts chosen from labelled scores) build on it, and pipe mode's
lean route (:mod:`spamkit.mail.lean`, which imports no NumPy) reads it directly, so that both
routes decide by the same numbers.
"""

from __future__ import annotations

from ..common.errors import ConfigError
from ..common.labels import HAM_NAME, SPAM_NAME

UNSURE_NAME = "unsure"


def bayes_threshold(c_fp: float, c_fn: float, c_tp: float = 0.0, c_tn: float = 0.0) -> float:
    """Smallest P(spam) at which "spam" is the cheaper decision.

    Calling spam costs ``(1 - p) c_FP + p c_TP``; calling ham costs ``p c_FN + (1 - p) c_TN``.
    Spam is cheaper iff ``p > t* = (c_FP - c_TN) / ((c_FP - c_TN) + (c_FN - c_TP))``.

    >>> round(bayes_threshold(100, 10), 4)          # the lecture example: 100/110
    0.9091
    """
    num = float(c_fp) - float(c_tn)
    den = num + float(c_fn) - float(c_tp)
    if num < 0 or den <= 0:
        raise ConfigError(f"costs make one decision always cheaper (c_fp={c_fp}, c_fn={c_fn}, c_tp={c_tp}, "
                          f"c_tn={c_tn}); a mistake must cost more than a correct decision")
    return num / den


def unsure_band(c_fp: float, c_fn: float, c_unsure: float) -> tuple[float, float]:
    """The (low, high) P(spam) thresholds of the three-way rule with abstention cost ``c_unsure``.

    Abstaining costs u whatever the class. Ham is cheapest iff p c_FN < u and p c_FN < (1 - p) c_FP;
    spam iff (1 - p) c_FP < u likewise; so ham below u / c_FN, spam above 1 - u / c_FP, unsure
    between. If u >= c_FP c_FN / (c_FP + c_FN) abstaining is never cheapest and the band is empty
    (both thresholds equal the Bayes threshold).

    >>> unsure_band(100, 10, 2)
    (0.2, 0.98)
    """
    c_fp, c_fn, u = float(c_fp), float(c_fn), float(c_unsure)
    if c_fp <= 0 or c_fn <= 0 or u < 0:
        raise ConfigError(f"need c_fp > 0, c_fn > 0 and an unsure cost >= 0, got {c_fp}, {c_fn}, {u}")
    if u >= c_fp * c_fn / (c_fp + c_fn):
        t = bayes_threshold(c_fp, c_fn)
        return t, t
    return u / c_fn, 1.0 - u / c_fp


#: how often :func:`stream_spam_cuts` chooses the cut again (messages), and after how many
#: messages it first does (before: the costs' own cut)
STREAM_CUT_EVERY = 50
STREAM_CUT_AFTER = 200


def spam_cut_layer(costs, classes, decisions) -> tuple[float, float, float, float] | None:
    """``(low, floor, c_fp, c_unsure)`` of a decision layer a learned spam cut applies to, for
    :func:`next_spam_cut`; None for any other. It applies to the ham/spam/unsure cost matrix
    (``costs[decision][class]``) with nothing for a right decision and the same cost to leave
    ham and spam unsure, whose band is not empty: the rule's two prices are then the matrix's.

    >>> spam_cut_layer([[0, 10], [100, 0], [2, 2]], ["ham", "spam"], ["ham", "spam", "unsure"])
    (0.2, 0.98, 100.0, 2.0)
    >>> spam_cut_layer([[0, 10], [100, 0]], ["ham", "spam"], ["ham", "spam"]) is None    # no unsure
    True
    """
    classes, decisions = [str(c) for c in classes], [str(d) for d in decisions]
    if sorted(classes) != [HAM_NAME, SPAM_NAME] or sorted(decisions) != sorted([HAM_NAME, SPAM_NAME, UNSURE_NAME]):
        return None

    def cost(decision, true):
        return float(costs[decisions.index(decision)][classes.index(true)])
    unsure = cost(UNSURE_NAME, SPAM_NAME)
    if cost(HAM_NAME, HAM_NAME) or cost(SPAM_NAME, SPAM_NAME) or cost(UNSURE_NAME, HAM_NAME) != unsure:
        return None
    try:
        low, high = unsure_band(cost(SPAM_NAME, HAM_NAME), cost(HAM_NAME, SPAM_NAME), unsure)
    except ConfigError:
        return None
    return (low, high, cost(SPAM_NAME, HAM_NAME), unsure) if low < high else None
