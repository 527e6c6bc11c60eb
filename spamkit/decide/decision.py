"""Decisions from probabilities and costs: cost matrices, Bayes thresholds, the unsure band.

Owns the step from class probabilities to a decision. A mail filter's mistakes do not
cost the same (a real message lost in the junk folder is worse than a spam let through),
so the decision for a message is the one with the lowest expected cost
``sum_true p(true | x) * cost[decision, true]`` (Bayes decision rule; the CPSC 340 notes
"Decision theory": with c_FP = 100 and c_FN = 10, P(spam) = 0.6 costs 0.4 * 100 = 40 as
"spam" and 0.6 * 10 = 6 as "ham", so the message is delivered).

A decision may also be "unsure" (abstain): a folder a person reviews. With an abstention
cost u below c_FP c_FN / (c_FP + c_FN), the rule is a band: ham below u / c_FN, spam
above 1 - u / c_FP, unsure between.

One concern over ~450 lines: from probabilities to decisions (costs, thresholds, the
unsure band, the prior correction, threshold choice, the familiarity guard).
"""

from __future__ import annotations

import bisect
import csv
import enum
import math
from collections import deque
from pathlib import Path

import numpy as np

from ..errors import ConfigError
from ..labels import HAM_NAME, SPAM_NAME
from ..scoring.arrays import expit, logit
from .familiar import (GUARD_DRIFT, GUARD_MARGIN, GUARD_MIN_WINDOW, GUARD_WINDOW, discount,
                       guard_settings)

UNSURE_NAME = "unsure"


class Verdict(enum.IntEnum):
    """What a mail filter does with a message: deliver it (ham), file it as spam, or leave it for
    review (unsure). A decision of a cost matrix maps onto it with :meth:`of`; :attr:`label`
    is the word the tags, the summaries and pipe mode use.

    >>> Verdict.of("spam").label, Verdict.of("unsure").label, Verdict.of("newsletter").label
    ('spam', 'unsure', 'ham')
    """

    HAM = 0
    SPAM = 1
    UNSURE = 2

    @classmethod
    def of(cls, decision: str) -> "Verdict":
        """The verdict of a decision: "spam" and "unsure" are themselves; any other class is
        delivered like ham (a mail filter moves only spam and the unsure)."""
        return {SPAM_NAME: cls.SPAM, UNSURE_NAME: cls.UNSURE}.get(str(decision), cls.HAM)

    @property
    def label(self) -> str:
        return self.name.lower()


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


#: the default decision of a spam filter: a misfiled ham costs 100, a missed spam 10 and a
#: message left for review ("unsure") 2 -- the costs of the lecture notes' example (c_FP = 100,
#: c_FN = 10) with an abstention cost of 2. On a calibrated P(spam) that is ham below 0.2, spam
#: above 0.98, unsure between (bogofilter's compiled-in cut-offs are 0.45 and 0.99 on its own
#: spamicity). A lost good message costs ten missed spams: it is lost for good, while a spam in
#: the inbox costs the reader a second.
DEFAULT_COSTS = {"c_fp": 100.0, "c_fn": 10.0, "c_unsure": 2.0}
#: (low, high): the default decision's P(spam) thresholds, from :data:`DEFAULT_COSTS`
DEFAULT_BAND = unsure_band(**DEFAULT_COSTS)


class CostMatrix:
    """``cost[decision, true]`` for K classes, plus optional extra decisions (e.g. "unsure").

    Parameters
    ----------
    costs : array (n_decisions, n_classes)
    classes : sequence of str
        The true classes, in the order of the columns.
    decisions : sequence of str, optional
        The rows; default: the classes (one decision per class), then any extra rows must be named.

    Examples
    --------
    >>> cm = CostMatrix.binary(c_fp=100, c_fn=10)
    >>> cm.expected_costs([[0.4, 0.6]]).tolist()     # P(ham) = 0.4, P(spam) = 0.6
    [[6.0, 40.0]]
    >>> cm.decide([[0.4, 0.6]]).tolist(), cm.decide([[0.05, 0.95]]).tolist()
    (['ham'], ['spam'])
    """

    def __init__(self, costs, classes, decisions=None):
        costs = np.asarray(costs, dtype=np.float64)
        classes = [str(c) for c in classes]
        decisions = [str(d) for d in (decisions if decisions is not None else classes)]
        if costs.ndim != 2 or costs.shape != (len(decisions), len(classes)):
            raise ConfigError(f"cost matrix has shape {costs.shape}, expected ({len(decisions)} decisions, "
                              f"{len(classes)} classes)")
        if not np.all(np.isfinite(costs)):
            raise ConfigError("cost matrix entries must be finite numbers")
        if len(set(classes)) != len(classes) or len(set(decisions)) != len(decisions):
            raise ConfigError("class and decision names must be unique")
        for j, c in enumerate(classes):
            if c in decisions and costs[decisions.index(c), j] > costs[:, j].min():
                raise ConfigError(f"deciding {c!r} for a true {c!r} costs more than another decision; "
                                  "a correct decision must be the cheapest for its class")
        self.costs = costs
        self._rows = costs.tolist()                  # decide_row's copy, as Python floats
        self.classes = classes
        self.decisions = decisions

    @classmethod
    def binary(cls, c_fp: float = 1.0, c_fn: float = 1.0, c_tp: float = 0.0, c_tn: float = 0.0,
               c_unsure: float | None = None) -> "CostMatrix":
        """ham/spam costs: a false positive is ham called spam; ``c_unsure`` adds an "unsure" decision."""
        rows = [[c_tn, c_fn], [c_fp, c_tp]]
        decisions = [HAM_NAME, SPAM_NAME]
        if c_unsure is not None:
            rows.append([c_unsure, c_unsure])
            decisions.append(UNSURE_NAME)
        return cls(rows, [HAM_NAME, SPAM_NAME], decisions)

    @classmethod
    def default(cls) -> "CostMatrix":
        """The default decision of a ham/spam filter (:data:`DEFAULT_COSTS`): fp=100, fn=10, unsure=2.

        >>> CostMatrix.default().decide([[0.85, 0.15], [0.5, 0.5], [0.01, 0.99]]).tolist()
        ['ham', 'unsure', 'spam']
        """
        return cls.binary(**DEFAULT_COSTS)

    @classmethod
    def parse(cls, text: str) -> "CostMatrix":
        """``"fp=100,fn=10"`` (also ``tp=``, ``tn=``, ``unsure=``) for the two-class case.

        >>> CostMatrix.parse("fp=100,fn=10,unsure=2").decisions
        ['ham', 'spam', 'unsure']
        """
        values = {}
        for part in text.split(","):
            if not part.strip():
                continue
            key, sep, value = part.partition("=")
            key = key.strip().lower()
            if not sep or key not in ("fp", "fn", "tp", "tn", "unsure"):
                raise ConfigError(f"cost {part.strip()!r}: expected fp=, fn=, tp=, tn= or unsure= with a number")
            try:
                values[key] = float(value)
            except ValueError:
                raise ConfigError(f"cost {part.strip()!r}: {value!r} is not a number") from None
        if "fp" not in values or "fn" not in values:
            raise ConfigError(f"costs {text!r} must give at least fp= and fn=")
        return cls.binary(values["fp"], values["fn"], values.get("tp", 0.0), values.get("tn", 0.0),
                          values.get("unsure"))

    @classmethod
    def from_file(cls, path) -> "CostMatrix":
        """A CSV/TSV table: a header row naming the true classes, then one row per decision,
        its first cell the decision's name.

        ::

            decision,ham,spam,newsletter
            ham,0,10,2
            spam,100,0,50
            newsletter,20,5,0
        """
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cost file {path}: {exc.strerror or exc}") from None
        dialect = "excel-tab" if "\t" in text.splitlines()[0] else "excel"
        rows = [r for r in csv.reader(text.splitlines(), dialect) if any(cell.strip() for cell in r)]
        if len(rows) < 3:
            raise ConfigError(f"cost file {path}: expected a header and at least two decision rows")
        classes = [c.strip() for c in rows[0][1:]]
        decisions, costs = [], []
        for lineno, row in enumerate(rows[1:], 2):
            if len(row) != len(classes) + 1:
                raise ConfigError(f"cost file {path}:{lineno}: expected {len(classes) + 1} cells, got {len(row)}")
            decisions.append(row[0].strip())
            try:
                costs.append([float(v) for v in row[1:]])
            except ValueError:
                raise ConfigError(f"cost file {path}:{lineno}: every cost must be a number") from None
        return cls(costs, classes, decisions)

    def align(self, model_classes) -> "CostMatrix":
        """The same costs with columns in a model's class order; every model class must be priced."""
        model_classes = [str(c) for c in model_classes]
        missing = set(model_classes) - set(self.classes)
        if missing or len(model_classes) != len(self.classes):
            raise ConfigError(f"the costs name classes {self.classes}, the model has {model_classes}")
        order = [self.classes.index(c) for c in model_classes]
        return CostMatrix(self.costs[:, order], model_classes, self.decisions)

    def expected_costs(self, proba) -> np.ndarray:
        """``E[cost | x, decision d] = sum_c p(c | x) cost[d, c]``; shape (n, n_decisions)."""
        proba = np.atleast_2d(np.asarray(proba, dtype=np.float64))
        if proba.shape[1] != len(self.classes):
            raise ConfigError(f"probabilities have {proba.shape[1]} columns for {len(self.classes)} classes")
        # class by class, each product and each sum rounded once, left to right: the numbers of
        # decide_row and of the lean filter (a matrix product may fuse a multiply and an add,
        # as BLAS kernels do, and differ in the last bit)
        out = proba[:, :1] * self.costs[:, 0]
        for c in range(1, proba.shape[1]):
            out = out + proba[:, c:c + 1] * self.costs[:, c]
        return out

    def decide(self, proba) -> np.ndarray:
        """The cheapest decision per row (a tie goes to the decision listed first)."""
        return np.asarray(self.decisions, dtype=object)[np.argmin(self.expected_costs(proba), axis=1)]

    def decide_row(self, row) -> str:
        """:meth:`decide` for one message's class probabilities (floats in class order) in plain
        Python -- the same arithmetic, the same decision -- for a filter that decides message by
        message (a filter run decides each in mailbox order; NumPy on one row costs ~50 us).

        >>> cm = CostMatrix.binary(c_fp=100, c_fn=10, c_unsure=2)
        >>> cm.decide_row([0.4, 0.6]), cm.decide_row([0.995, 0.005]), cm.decide_row([0.001, 0.999])
        ('unsure', 'ham', 'spam')
        """
        if len(row) != len(self.classes):
            raise ConfigError(f"probabilities have {len(row)} columns for {len(self.classes)} classes")
        best, best_cost = 0, None
        for d, costs in enumerate(self._rows):
            cost = row[0] * costs[0]
            for c in range(1, len(costs)):
                cost = cost + row[c] * costs[c]
            if cost != cost:                       # NaN: np.argmin takes the first NaN
                return self.decisions[d]
            if best_cost is None or cost < best_cost:
                best, best_cost = d, cost
        return self.decisions[best]

    def outcome(self, labels, proba, decisions=None) -> dict:
        """What deciding by these costs did: decisions per (true class, decision), the realised
        cost per message (``cost[decision, true class]``, averaged) and the expected cost per
        message the probabilities promised (``E[cost | x, d]`` of the decision taken, averaged;
        by hand below: all three are called ham, costing 0 + 1 + 1 of a possible
        0.2 + 0.7 + 0.05 expected). ``decisions``:
        as a filter made them (default: the cheapest under ``proba``). Columns of ``proba`` in
        the order of :attr:`classes` (see :meth:`align`).

        >>> cm = CostMatrix.binary(c_fp=10, c_fn=1)
        >>> out = cm.outcome(["ham", "spam", "spam"], [[0.8, 0.2], [0.3, 0.7], [0.95, 0.05]])
        >>> out["decisions"], round(out["cost_per_message"], 4), round(out["expected_cost_per_message"], 4)
        ({'ham': {'ham': 1, 'spam': 0}, 'spam': {'ham': 2, 'spam': 0}}, 0.6667, 0.3167)
        """
        expected = self.expected_costs(proba)
        chosen = np.argmin(expected, axis=1)
        if decisions is None:
            decisions = np.asarray(self.decisions, dtype=object)[chosen]
        rows = [self.decisions.index(str(d)) for d in decisions]
        table = {c: {d: 0 for d in self.decisions} for c in self.classes}
        total = 0.0
        for label, d, r in zip(map(str, labels), decisions, rows):
            table[label][str(d)] += 1
            total += float(self.costs[r, self.classes.index(label)])
        n = max(len(rows), 1)
        return {"matrix": self.as_dict(), "decisions": table, "cost_per_message": total / n,
                "expected_cost_per_message": float(expected[np.arange(len(rows)), rows].sum()) / n}

    def unsure_cost(self) -> float:
        """What an unsure decision costs in a ham/spam matrix, relative to the correct decision,
        averaged over the two classes (equal for both in every matrix ``parse`` makes); 0 where
        unsure is not a decision.

        >>> CostMatrix.parse("fp=100,fn=10,unsure=2").unsure_cost(), CostMatrix.parse("fp=1,fn=1").unsure_cost()
        (2.0, 0.0)
        """
        if "unsure" not in self.decisions:
            return 0.0
        u, h, s = (self.decisions.index(d) for d in ("unsure", HAM_NAME, SPAM_NAME))
        jh, js = self.classes.index(HAM_NAME), self.classes.index(SPAM_NAME)
        return float((self.costs[u, jh] - self.costs[h, jh] + self.costs[u, js] - self.costs[s, js]) / 2)

    def binary_costs(self) -> tuple[float, float]:
        """(c_FP, c_FN) of a ham/spam matrix relative to the correct decisions:
        cost[spam, ham] - cost[ham, ham] and cost[ham, spam] - cost[spam, spam].

        >>> CostMatrix.parse("fp=100,fn=10").binary_costs()
        (100.0, 10.0)
        """
        try:
            h, s = self.decisions.index(HAM_NAME), self.decisions.index(SPAM_NAME)
            jh, js = self.classes.index(HAM_NAME), self.classes.index(SPAM_NAME)
        except ValueError:
            raise ConfigError(f"a ham/spam cost matrix is needed, got classes {self.classes}") from None
        return float(self.costs[s, jh] - self.costs[h, jh]), float(self.costs[h, js] - self.costs[s, js])

    def threshold(self) -> float:
        """The Bayes threshold on P(spam) of a two-class ham/spam matrix (no unsure row)."""
        if self.classes != [HAM_NAME, SPAM_NAME] or self.decisions[:2] != [HAM_NAME, SPAM_NAME]:
            raise ConfigError("a single threshold exists only for ham/spam costs")
        (c_tn, c_fn), (c_fp, c_tp) = self.costs[:2]
        return bayes_threshold(c_fp, c_fn, c_tp, c_tn)

    def band(self) -> tuple[float, float] | None:
        """For ham/spam costs with an "unsure" row of equal costs and free correct decisions: the
        (low, high) P(spam) thresholds of the three-way rule (:func:`unsure_band`); else None.

        >>> CostMatrix.default().band()
        (0.2, 0.98)
        """
        if sorted(self.classes) != [HAM_NAME, SPAM_NAME] or sorted(self.decisions) != [HAM_NAME, SPAM_NAME, UNSURE_NAME]:
            return None
        c = {(d, t): float(self.costs[self.decisions.index(d), self.classes.index(t)])
             for d in self.decisions for t in self.classes}
        if c[UNSURE_NAME, HAM_NAME] != c[UNSURE_NAME, SPAM_NAME] or c[HAM_NAME, HAM_NAME] or c[SPAM_NAME, SPAM_NAME]:
            return None
        return unsure_band(c[SPAM_NAME, HAM_NAME], c[HAM_NAME, SPAM_NAME], c[UNSURE_NAME, HAM_NAME])

    def as_dict(self) -> dict:
        out = {"classes": self.classes, "decisions": self.decisions, "costs": self.costs.tolist()}
        band = self.band()
        if band is not None:
            out["band"] = list(band)
        return out


def verdicts(p_spam, low: float, high: float | None = None) -> np.ndarray:
    """HAM below ``low``, SPAM above ``high``, UNSURE between (``high`` defaults to ``low``).

    A message exactly at a threshold takes the cheaper side's tie rule: at ``high`` it is
    not yet spam (spam needs p > t*), at ``low`` it is not ham.

    >>> [Verdict(v).name for v in verdicts([0.1, 0.5, 0.99], 0.2, 0.98)]
    ['HAM', 'UNSURE', 'SPAM']
    """
    p = np.asarray(p_spam, dtype=np.float64)
    high = low if high is None else high
    if not 0.0 <= low <= high <= 1.0:
        raise ConfigError(f"need 0 <= low <= high <= 1, got low={low}, high={high}")
    out = np.full(p.shape, int(Verdict.UNSURE), dtype=np.int64)
    out[p < low] = Verdict.HAM
    out[p > high] = Verdict.SPAM
    if low == high:
        out[p == low] = Verdict.HAM                # on the threshold both cost the same: deliver
    return out


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


#: how often :func:`stream_spam_cuts` chooses the cut again (messages), and after how many
#: messages it first does (before: the costs' own cut)
STREAM_CUT_EVERY = 50
STREAM_CUT_AFTER = 200


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
            past, past_y = p[:t], y[:t]
            candidates = np.unique(np.concatenate([[floor], past[past > floor]]))
            ham = np.sort(past[~past_y])
            middle = np.sort(past[past > low])
            cost = (c_fp * (len(ham) - np.searchsorted(ham, candidates, "right"))
                    + c_unsure * np.searchsorted(middle, candidates, "right"))
            current = float(candidates[np.argmin(cost)])
        cuts[t] = current
    return cuts


class FamiliarityGuard:
    """Abstain on mail unlike the training mail: a shift the probabilities cannot see.

    A filter's probabilities are calibrated on mail like its training mail. On mail from
    another server, another year or another person they can be confidently wrong: trained on
    CSDMC2010 and run on trec07p-dev, spamkit's filter called 27% of the ham spam at
    P(spam) > 0.98. What gives such mail away is not its score but its tokens: many of them
    are new. The *familiarity* of a message is the share of its distinct tokens the filter saw
    in training. On training mail, measured leave-one-out (a token counts as known if some
    *other* training message has it), it is high and stable: median 0.92 on trec07p-dev and
    0.93 on CSDMC2010 ham; on the other corpus it drops to 0.55-0.68.

    The guard turns a "spam" decision into "unsure" (never into "ham": it protects ham, and
    it never lets through what the filter would otherwise catch as ham) when

    - the message is less familiar than 95% of the training mail (``typical``, the 5th
      percentile of the leave-one-out familiarities) and its log-odds do not clear the costs'
      spam cut by a margin: 0 at ``typical``, ``margin`` at ``floor`` (the 1st percentile),
      linear between (:func:`spamkit.decide.familiar.discount`); below the floor no margin
      suffices. The less familiar the message, the more evidence a spam decision needs --
      rather than one line below which every message is unsure; or
    - the stream has drifted: the median familiarity of the last ``window`` messages (at
      least ``min_window`` of them) lies ``drift`` spreads (``typical - floor``) below
      ``typical``. Later mail of the same server stays above that level and is filtered;
      another server's mail falls below it, where the filter cannot tell its ham from its spam
      (trained on CSDMC2010, trec07p-dev's ham scored as high as its spam), and the stream is
      left unsure. A message below the floor does not enter the window: a burst of messages of
      random tokens (familiarity near 0, the cheapest mail to send) cannot drag the median down
      and turn the spam after it into "unsure".

    The margin, the drift and the window were chosen on eight cases of training once and
    judging later or foreign mail next to bogofilter (docs/results.md, "Train once, judge later
    mail or mail from elsewhere"): with the earlier rule (a floor and a window that gave up at
    the 5th percentile) a filter trained on trec06p's first 3,000 messages caught 28% of its
    last 7,821 messages' spam and left 56% of them unsure; with this one 77% and 23%, no ham
    misfiled, where bogofilter catches 73%.

    The stream is one ``spamkit filter`` run over a user's mailboxes, or one ``classify`` or
    ``evaluate`` run. A message judged alone (:meth:`unfamiliar`) has only the per-message
    rule: pipe mode, and ``spamkit serve``, whose clients must not change each other's verdicts
    through a window they share (a spamd client's 20 messages of random tokens turned
    everyone's spam into "unsure" when the server kept one). ``counts`` say how often each
    rule fired.
    """

    def __init__(self, floor: float, typical: float, margin: float = GUARD_MARGIN, drift: float = GUARD_DRIFT,
                 window: int = GUARD_WINDOW, min_window: int = GUARD_MIN_WINDOW):
        try:
            settings = guard_settings({"floor": floor, "typical": typical, "margin": margin, "drift": drift,
                                       "window": window, "min_window": min_window})
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        self.floor, self.typical = settings["floor"], settings["typical"]
        self.margin, self.drift = settings["margin"], settings["drift"]
        self.window, self.min_window = window, min_window
        #: the familiarity below which the window's median says the stream has drifted
        self.drift_level = self.typical - self.drift * max(self.typical - self.floor, 0.0)
        #: the rule that fired for the last message judged ("unfamiliar", "drift"), or None
        self.last = None
        #: the margin the last message's spam decision did not clear (None: the floor or the drift)
        self.last_margin: float | None = None
        self.last_familiarity = float("nan")
        self.recent: deque = deque(maxlen=window)
        self._sorted: list = []                      # the same values in order: the window's median
        self._nans = 0                               # NaNs in the window (not in _sorted)
        # messages seen, those less familiar than the typical training message, those judged in a
        # drifted stream, and the spam decisions made unsure -- in all and by the rule that made
        # them so (the two add up to the total)
        self.counts = {"messages": 0, "unfamiliar": 0, "drift": 0, "spam_to_unsure": 0,
                       "spam_to_unsure_unfamiliar": 0, "spam_to_unsure_drift": 0}

    @classmethod
    def from_training(cls, familiarity) -> "FamiliarityGuard | None":
        """The guard of a filter whose training messages had these leave-one-out familiarities
        (None with fewer than 20 messages: too few to know what is usual)."""
        f = np.asarray(familiarity, dtype=np.float64)
        f = f[np.isfinite(f)]
        if len(f) < 20:
            return None
        return cls(float(np.quantile(f, 0.01)), float(np.quantile(f, 0.05)))

    def discount(self, familiarity: float) -> float | None:
        """The log-odds a spam decision on a message of this familiarity must clear above the
        costs' cut (:func:`spamkit.decide.familiar.discount`; None: below the floor)."""
        return discount(float(familiarity), self.floor, self.typical, self.margin)

    def observe(self, familiarity) -> np.ndarray:
        """For messages in the order they are judged: True where a spam decision must become
        unsure whatever its log-odds (below the floor, or in a drifted stream).

        >>> g = FamiliarityGuard(0.5, 0.7, drift=0.5, window=4, min_window=2)   # drift below 0.6
        >>> g.observe([0.9, 0.4, 0.95]).tolist()      # 0.4: below the floor, and kept out of the window
        [False, True, False]
        >>> g.observe([0.1, 0.0, 0.2, 0.9]).tolist()  # a burst below the floor: the median stays 0.9
        [True, True, True, False]
        >>> g.observe([0.55, 0.55, 0.55]).tolist()    # mail 55% known: the median of the last 4 falls to 0.55
        [False, False, True]
        >>> g.counts
        {'messages': 10, 'unfamiliar': 7, 'drift': 1, 'spam_to_unsure': 0, 'spam_to_unsure_unfamiliar': 0, 'spam_to_unsure_drift': 0}
        """
        return np.asarray([self.observe_one(value) for value in np.asarray(familiarity, dtype=np.float64).ravel()],
                          dtype=bool)

    def observe_one(self, value: float) -> bool:
        """:meth:`observe` for one message (plain Python: a filter run calls it per message).
        The window's median is kept in a sorted list (``bisect``): the middle value, or the mean
        of the two middle ones, exactly as ``np.median`` gives it."""
        value = float(value)
        self._count(value)
        if value < self.floor:                         # judged alone, and kept out of the window
            self.last = "unfamiliar"
            return True
        if len(self.recent) == self.recent.maxlen:
            old = self.recent[0]
            if math.isnan(old):
                self._nans -= 1
            else:
                del self._sorted[bisect.bisect_left(self._sorted, old)]
        self.recent.append(value)
        if math.isnan(value):
            self._nans += 1                            # np.median of a window with a NaN is NaN: no drift
        else:
            bisect.insort(self._sorted, value)
        n = len(self._sorted)
        if len(self.recent) >= self.min_window and not self._nans:
            median = self._sorted[n // 2] if n % 2 else (self._sorted[n // 2 - 1] + self._sorted[n // 2]) / 2
            if median < self.drift_level:
                self.counts["drift"] += 1
                self.last = "drift"
                return True
        return False

    def _count(self, value: float) -> None:
        self.counts["messages"] += 1
        self.counts["unfamiliar"] += value < self.typical
        self.last, self.last_margin, self.last_familiarity = None, None, value

    def unfamiliar(self, value: float) -> bool:
        """Whether a message judged alone (no stream: pipe mode, a server's request) is too
        unfamiliar to be called spam whatever its log-odds: its familiarity below the floor.
        The stream is neither read nor changed (the counts are)."""
        value = float(value)
        self._count(value)
        below = value < self.floor
        self.last = "unfamiliar" if below else None
        return below

    def why(self, rule: str | None = None) -> str:
        """Why the guard turned a spam decision into "unsure", for people: the ``rule`` (default:
        :attr:`last`, with the last message's numbers)."""
        rule = self.last if rule is None else rule
        if rule == "unfamiliar" and self.last_margin is not None and rule == self.last:
            return (f"unfamiliar: {self.last_familiarity:.0%} of its tokens were seen in training, fewer than in "
                    f"95% of the training mail ({self.typical:.0%}), so spam needs {self.last_margin:.2f} more "
                    "log-odds than the costs ask, and it had less")
        if rule == "unfamiliar":
            return (f"unfamiliar: under {self.floor:.0%} of its tokens were seen in training (fewer than in 99% "
                    "of the training mail)")
        if rule == "drift":
            return (f"drift: the mail before it in this run is unlike the training mail (the median share of known "
                    f"tokens of the last {self.window} messages under {self.drift_level:.0%})")
        raise ConfigError(f"no guard rule {rule!r}")

    def apply_one(self, decision: str, familiarity: float, alone: bool = False, redecide=None) -> str:
        """:meth:`apply` for one message; ``alone``: judged by :meth:`unfamiliar`, outside the stream.
        ``redecide(extra)``: the decision on the message's probabilities with ``extra`` log-odds
        taken from P(spam) (:func:`spamkit.decide.familiar.discounted_p_spam`); without it only the
        floor and the drift apply."""
        flagged = self.unfamiliar(familiarity) if alone else self.observe_one(familiarity)
        if decision != SPAM_NAME:
            return decision
        if not flagged and redecide is not None:
            extra = self.discount(familiarity)
            if extra and redecide(extra) != SPAM_NAME:
                flagged, self.last, self.last_margin = True, "unfamiliar", extra
        if flagged:
            self.counts["spam_to_unsure"] += 1
            self.counts[f"spam_to_unsure_{self.last}"] += 1
            return UNSURE_NAME
        return decision

    def reset(self) -> "FamiliarityGuard":
        """Forget the stream (a new run begins): empty window, counts at 0."""
        self.recent.clear()
        self._sorted.clear()
        self._nans = 0
        self.counts = {k: 0 for k in self.counts}
        return self

    def apply(self, decisions, familiarity, redecide=None) -> np.ndarray:
        """``decisions`` with "spam" turned into "unsure" where the guard says so, the messages
        taken as a stream in order; ``redecide(i, extra)``: message ``i``'s decision with ``extra``
        log-odds taken from its P(spam) (see :meth:`apply_one`)."""
        decisions = np.asarray(decisions, dtype=object).copy()
        for i, value in enumerate(np.asarray(familiarity, dtype=np.float64).ravel()):
            decisions[i] = self.apply_one(decisions[i], value,
                                          redecide=None if redecide is None else (lambda extra, i=i: redecide(i, extra)))
        return decisions

    def as_dict(self) -> dict:
        return {"floor": self.floor, "typical": self.typical, "margin": self.margin, "drift": self.drift,
                "window": self.window, "min_window": self.min_window}

    @classmethod
    def from_dict(cls, d: dict) -> "FamiliarityGuard":
        """The guard a filter file describes (files of before the margin: :func:`~spamkit.decide.familiar.guard_settings`)."""
        try:
            return cls(**guard_settings(d))
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
