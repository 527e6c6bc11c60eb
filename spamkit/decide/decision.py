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

One concern: from probabilities to decisions (costs, the Bayes threshold, the unsure band:
their formulas, with the standard library alone for pipe mode, are :mod:`spamkit.decide.rules`);
thresholds chosen from labelled data, the prior correction and a cut learned from a stream
are :mod:`spamkit.decide.thresholds`; the familiarity guard, which turns "spam" into
"unsure" on unfamiliar mail, is :mod:`spamkit.decide.guard`.
"""

from __future__ import annotations

import csv
import enum
from pathlib import Path

import numpy as np

from ..common.errors import ConfigError
from ..common.labels import HAM_NAME, SPAM_NAME
from .rules import UNSURE_NAME, bayes_threshold, unsure_band



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
