"""A filter's decisions: from class probabilities to what it says about a message, and why.

Takes the class probabilities and familiarity a
:class:`~spamkit.filterfile.spamfilter.SpamFilter` scores and gives its decisions: a saved
threshold, else the cheapest decision under a cost matrix (with the unsure band and the
familiarity guard, :mod:`spamkit.decide.guard`), else the most probable class; the P(spam) above
which it says spam; a verdict (spam, ham or unsure) for one message, alone or as the next of a
stream; the prior correction for a deployment spam rate; and each decision's explanation (the
tokens, the neighbours, the side models' shares). :class:`Decisions` is one of the classes
:class:`~spamkit.filterfile.spamfilter.SpamFilter` is made of (its methods are the filter's).
The formulas are :mod:`spamkit.decide`'s; this is where a filter applies them.
"""

from __future__ import annotations

from typing import Any, Callable, TypeVar

import numpy as np

from ..common.errors import ConfigError
from ..common.labels import HAM_NAME, SPAM_NAME
from ..decide.decision import UNSURE_NAME, CostMatrix, Verdict
from ..decide.rules import STREAM_CUT_AFTER, spam_cut_layer
from ..decide.thresholds import next_spam_cut, prior_shift
from ..decide.familiar import discounted_row
from ..decide.guard import FamiliarityGuard
from ..features.vectorizer import Vectorizer
from ..features.matrices import columns_per_row
from ..models import KNNClassifier, RobinsonFisher
from .sides import SideModels


#: the filter a method of a part returns (itself)
F = TypeVar("F", bound="Decisions")


def distinct_tokens(token_lists) -> np.ndarray:
    """Each token list's number of distinct tokens."""
    return np.fromiter((len(set(t)) for t in token_lists), dtype=np.float64, count=len(token_lists))


class Decisions(SideModels):
    """The decisions' part of :class:`~spamkit.filterfile.spamfilter.SpamFilter` (its methods take
    the filter as ``self``)."""

    # what the filter has and does that these methods use (spamkit.filterfile.spamfilter.SpamFilter)
    model: Any
    classes_: np.ndarray
    vectorizer: Vectorizer
    calibration: Any
    training: dict
    check_fitted: Callable[[], Any]
    features: Callable[[Any], tuple]
    predict_proba: Callable[[Any], np.ndarray]
    score: Callable[[Any], tuple[np.ndarray, np.ndarray]]

    #: the familiarity guard (spamkit.decide.guard.FamiliarityGuard) of a ham/spam filter, or None
    guard: FamiliarityGuard | None = None
    #: hashed filters: which columns training saw (vocabulary filters know only what they saw)
    seen_columns: np.ndarray | None = None

    #: log-odds added by the prior correction (0: none)
    _prior_shift = 0.0

    def training_spam_rate(self) -> float:
        """The share of spam the filter's probabilities assume: that of its training data."""
        counts = getattr(self.model, "class_count_", None)
        if counts is not None:
            return float(counts[self.spam_column] / np.sum(counts))
        per_class = self.training.get("per_class", {})
        total = sum(per_class.values())
        if not total or SPAM_NAME not in per_class:
            raise ConfigError("this filter does not record its training spam rate")
        return per_class[SPAM_NAME] / total

    def set_spam_rate(self: F, rate: float | None) -> F:
        """Correct P(spam) for a deployment spam rate different from the training rate (Bayes' rule:
        the log-odds move by logit(rate) - logit(training rate): :func:`spamkit.decide.thresholds.prior_shift`).

        Uncalibrated Robinson/Fisher is refused: its indicator ignores the class prior, so there is
        no training prior to replace (calibrate it, or use fisher-nb).
        """
        self.check_fitted()
        if rate is None:
            self._prior_shift = 0.0
            return self
        if isinstance(self.model, RobinsonFisher) and self.calibration is None:
            raise ConfigError("an uncalibrated fisher filter ignores class priors, so its prior cannot be "
                              "corrected; train it with --calibrate platt (or use fisher-nb)")
        self._prior_shift = prior_shift(self.training_spam_rate(), rate)
        return self

    @property
    def spam_column(self) -> int:
        """Column of ``"spam"`` in ``classes_`` (two-class filters only)."""
        self.check_fitted()
        classes = [str(c) for c in self.classes_]
        if SPAM_NAME not in classes:
            raise ConfigError(f"this filter's classes are {classes}; P(spam) needs a 'spam' class")
        return classes.index(SPAM_NAME)

    def p_spam(self, items) -> np.ndarray:
        """P(spam | message) for each message."""
        return self.predict_proba(items)[:, self.spam_column]

    def explain(self, item, n: int = 10) -> dict:
        """The tokens that pushed a message most towards each class.

        For two classes: each token's share of ``log p(x, spam) - log p(x, ham)``
        (its count times the difference of its per-class log-evidence); positive means
        towards spam. For more classes, the shares of the predicted class against the
        runner-up. Returns ``{"towards": [...], "against": [...], "classes": (a, b)}`` with
        ``(token, share)`` pairs, strongest first.
        """
        self.check_fitted()
        X, side = self.features([item])
        return self.explain_row(X, n, side)

    def explain_row(self, X, n: int = 10, side=None) -> dict:
        """:meth:`explain` for one row of features already computed (and its side score, for a
        filter with a context model: then ``"context"`` holds the context model's score, its log-
        likelihood ratio per byte, positive towards spam, and its share of the combiner's log-odds)."""
        if isinstance(self.model, KNNClassifier):
            neighbours = self.model.explain(X, min(n, self.model.rows_.shape[0]))
            return {"neighbours": [{"id": i, "similarity" if self.model.metric in ("cosine", "jaccard")
                                    else "distance": m, "label": lab, "weight": w}
                                   for i, m, lab, w in neighbours]}
        if len(self.classes_) == 2 and SPAM_NAME in [str(c) for c in self.classes_]:
            a = self.spam_column
            b = 1 - a
        else:
            order = np.argsort(-self.model.joint_log_likelihood(X)[0], kind="stable")
            a, b = int(order[0]), int(order[1])
        idx, contrib = self.model.contributions(X)
        share = contrib[a] - contrib[b]
        ranked = np.argsort(-share, kind="stable")
        towards = [(self.vectorizer.term(int(idx[k])), float(share[k])) for k in ranked[:n] if share[k] > 0]
        against = [(self.vectorizer.term(int(idx[k])), float(share[k])) for k in ranked[::-1][:n] if share[k] < 0]
        out: dict[str, Any] = {"classes": (str(self.classes_[a]), str(self.classes_[b])), "towards": towards,
                               "against": against}
        if self.reads_bytes and side is not None:
            scores = np.asarray(side, dtype=np.float64).reshape(-1)
            coef = getattr(self.model, "coef_", None)
            weights = coef[-len(scores):] if coef is not None else np.zeros(len(scores))
            sign = 1.0 if str(self.classes_[a]) == str(self.classes_[1]) else -1.0
            column = 0
            if self.context is not None:
                score, weight = float(scores[0]), float(weights[0])
                out["context"] = {"log_ratio_per_byte": sign * score, "share": sign * weight * score}
                column = 1
            if self.grams is not None:
                score, weight = float(scores[column]), float(weights[column])
                out["grams"] = {"log_odds": sign * score, "share": sign * weight * score}
        return out

    #: the decision layer: None (the most probable class) or a CostMatrix
    costs: CostMatrix | None = None

    def set_costs(self: F, costs: CostMatrix | None) -> F:
        """Decide by minimum expected cost from now on (checked against the filter's classes)."""
        self.check_fitted()
        self.costs = costs.align(self.classes_) if costs is not None else None
        return self

    #: a threshold on P(spam) chosen by cross-validation (``spamkit threshold --save``); None: not set
    threshold: float | None = None

    def decide(self, proba, familiarity=None) -> np.ndarray:
        """Decisions for rows of class probabilities: spam above a chosen ``threshold`` if one is set,
        else the cheapest under ``costs``, else the most probable class.

        With ``familiarity`` (:meth:`score`) and a decision layer that can say "unsure", the
        :class:`~spamkit.decide.guard.FamiliarityGuard` turns "spam" into "unsure" for mail unlike
        the training mail (rows are taken as a stream, in order).
        """
        if self.threshold is not None:
            s = self.spam_column
            names = np.asarray([str(c) for c in self.classes_], dtype=object)
            return np.where(np.asarray(proba)[:, s] > self.threshold, names[s], names[1 - s])
        if self.costs is None:
            return np.asarray([str(c) for c in self.classes_], dtype=object)[np.argmax(proba, axis=1)]
        decisions = self.costs.decide(proba)
        if familiarity is not None and self.guard is not None and UNSURE_NAME in self.costs.decisions:
            rows = np.asarray(proba, dtype=np.float64)
            decisions = self.guard.apply(decisions, familiarity,
                                         redecide=lambda i, extra: self._discounted_decision(rows[i], extra))
        cut = self.learned_spam_cut() if self.judged is not None else None
        if cut is not None:
            p = np.asarray(proba, dtype=np.float64)[:, self.spam_column]
            decisions = np.where((decisions == SPAM_NAME) & (p <= cut), UNSURE_NAME, decisions).astype(object)
        return decisions

    #: ``([P(spam)], [is spam], [row], [familiarity])`` of each message ``spamkit learn --all-mail``
    #: scored before it learned it, in the order learned: the stream the learned spam cut is chosen
    #: on, for a stack the row its combiner is refitted on (component scores, then side scores;
    #: else no rows), and what the guard is refitted on (:meth:`refit_guard`); None: none judged
    judged: tuple[list, list, list, list] | None = None
    #: ``(key, cut)`` of the last :meth:`learned_spam_cut` (a loaded filter's from its file)
    _learned_cut: tuple[tuple, float] | None = None

    def judge(self, p_spam: float, is_spam: bool, row=None, familiarity: float | None = None) -> None:
        """Record what the filter scored a message before it learned it, and its label: one more
        message of the stream :meth:`learned_spam_cut` is chosen on (and, for a stack, its
        combiner's ``row``: :meth:`~spamkit.models.stack.FisherNBStack.component_log_odds`, then
        the side scores; and its ``familiarity`` then, for :meth:`refit_guard`)."""
        if self.judged is None:
            self.judged = ([], [], [], [])
        self.judged[0].append(float(p_spam))
        self.judged[1].append(bool(is_spam))
        if row is not None:
            self.judged[2].append(np.asarray(row, dtype=np.float64))
        if familiarity is not None:
            self.judged[3].append(float(familiarity))

    def cut_layer(self) -> tuple[float, float, float, float] | None:
        """``(low, floor, c_fp, c_unsure)`` of the filter's decision layer if a learned spam cut
        applies to it (:func:`spamkit.decide.rules.spam_cut_layer`) and no threshold is
        saved; else None."""
        if self.threshold is not None or self.costs is None:
            return None
        return spam_cut_layer(self.costs.costs.tolist(), self.costs.classes, self.costs.decisions)

    def learned_spam_cut(self) -> float | None:
        """The spam cut the judged messages teach (:func:`spamkit.decide.thresholds.next_spam_cut`:
        what an online evaluation's stream cut gives the next message, docs/history.md, "A cut
        learned from the stream"): spam needs a P(spam) above it as well as the costs' own cut.
        None until :data:`~spamkit.decide.thresholds.STREAM_CUT_AFTER` messages are judged, or for a
        decision layer it does not apply to (:meth:`cut_layer`)."""
        layer = self.cut_layer()
        if layer is None or self.judged is None or len(self.judged[0]) < STREAM_CUT_AFTER:
            return None
        key = (len(self.judged[0]), layer)
        if self._learned_cut is None or self._learned_cut[0] != key:
            self._learned_cut = (key, next_spam_cut(self.judged[1], self.judged[0], *layer))
        return self._learned_cut[1]

    def keep_learned_cut(self, judged: int, p_spam: float) -> bool:
        """Take the learned spam cut a filter file keeps (chosen after ``judged`` messages), so that
        a loaded filter does not choose it again; False (and nothing taken) if it cannot be this
        filter's: another number of judged messages, a decision layer without one, or a cut
        below the costs' own."""
        layer = self.cut_layer()
        if (self.judged is None or judged != len(self.judged[0]) or judged < STREAM_CUT_AFTER or layer is None
                or not layer[1] <= p_spam <= 1.0):
            return False
        self._learned_cut = ((judged, layer), float(p_spam))
        return True

    def _discounted_decision(self, row, extra: float) -> str:
        """The costs' decision on a row of class probabilities with ``extra`` log-odds taken from
        P(spam) (the familiarity guard's margin: :func:`spamkit.decide.familiar.discounted_row`),
        in plain Python, so that arrays and single rows decide alike."""
        if self.costs is None:
            raise ConfigError("the familiarity guard's margin needs the filter's costs")
        return self.costs.decide_row(discounted_row(row, self.spam_column, extra))

    def spam_threshold(self) -> float:
        """The P(spam) above which :meth:`decide` says spam (before the familiarity guard): the saved
        threshold, else where the cost matrix's cheapest decision turns to spam (the top of the
        unsure band, or the Bayes threshold), else 1/2. Found by bisection on :meth:`decide`, so it
        holds for any two-class decision layer.

        >>> from spamkit.filterfile.spamfilter import SpamFilter
        >>> f = SpamFilter(); f.classes_ = np.array(["ham", "spam"])
        >>> round(f.spam_threshold(), 9), round(f.set_costs(CostMatrix.default()).spam_threshold(), 9)
        (0.5, 0.98)
        """
        s = self.spam_column
        if self.threshold is not None:
            return float(self.threshold)
        low, high = 0.0, 1.0
        for _ in range(50):
            mid = (low + high) / 2
            row = np.zeros((1, 2))
            row[0, s], row[0, 1 - s] = mid, 1 - mid
            if self.decide(row)[0] == SPAM_NAME:
                high = mid
            else:
                low = mid
        return high

    def verdict(self, raw: bytes, alone: bool = True) -> tuple[str, float]:
        """``(verdict, P(spam))`` of one raw message: verdict is "spam", "ham" or "unsure" (the
        decision layer's "unsure" row), any other class counting as ham. Judged ``alone`` (pipe
        mode, the servers): the familiarity guard's floor applies, its stream does not; a filter
        run over a mailbox passes ``alone=False`` (see :meth:`verdict_from`)."""
        proba, familiarity = self.score([raw])
        return self.verdict_from(proba[0], familiarity[0], alone=alone)

    def stream_verdict(self, raw: bytes) -> tuple[str, float]:
        """:meth:`verdict` of the next message of a stream (a filter run over a user's mailboxes):
        the familiarity guard's window sees it."""
        return self.verdict(raw, alone=False)

    def verdict_from(self, proba_row, familiarity: float, alone: bool = False) -> tuple[str, float]:
        """:meth:`verdict` from one message's row of :meth:`score` (its class probabilities and
        familiarity), scored here or elsewhere: a filter run scores messages in batches in worker
        processes and decides here, in mailbox order, so that the familiarity guard sees the
        stream as one process would. A message scores the same alone and in a batch.
        ``alone``: the message is judged by itself, outside the guard's stream
        (:meth:`FamiliarityGuard.unfamiliar`): what a server does for each request, so that no
        client's mail changes another's verdicts.

        :meth:`decide` for one row, in plain Python (the same arithmetic and the same decision,
        ``tests/test_decision.py``; NumPy on one row cost a filter run ~85 us a message)."""
        row = list(map(float, proba_row))
        classes = [str(c) for c in self.classes_]
        s = classes.index(SPAM_NAME) if SPAM_NAME in classes else self.spam_column   # (which says what is wrong)
        if self.threshold is not None:
            decision = classes[s] if row[s] > self.threshold else classes[1 - s]
        elif self.costs is None:
            decision = classes[row.index(max(row))]  # the first of equals, as np.argmax
        else:
            decision = self.costs.decide_row(row)
            if self.guard is not None and UNSURE_NAME in self.costs.decisions:
                decision = self.guard.apply_one(decision, familiarity, alone,
                                                redecide=lambda extra: self._discounted_decision(row, extra))
            if decision == SPAM_NAME and self.judged is not None:
                cut = self.learned_spam_cut()
                if cut is not None and row[s] <= cut:
                    decision = UNSURE_NAME
        return Verdict.of(decision).label, row[s]

    # ------------------------------------------------------------------ familiarity

    def known_without_self(self, df) -> np.ndarray:
        """1.0 for the columns a training message would find known if it were left out: those
        in at least ``min_df`` + 1 training messages (2 when any token is kept)."""
        min_df = self.vectorizer.min_df if isinstance(self.vectorizer.min_df, (int, np.integer)) else 1
        return (np.asarray(df) >= max(int(min_df), 1) + 1).astype(np.float64)

    def _fit_guard(self, X, distinct: np.ndarray) -> None:
        df = self.vectorizer.df_
        self.fit_guard(df, columns_per_row(X, self.known_without_self(df)), distinct)

    def fit_guard(self, df, known, distinct) -> None:
        """The guard's reference: each training message's leave-one-out familiarity, ``known`` /
        ``distinct`` (its tokens some *other* training message has, over its distinct tokens).

        ``df``: the document frequency of every column (hashed filters remember which columns
        training saw: ``df`` > 0). Only ham/spam filters get a guard.
        """
        self.guard = None
        self.seen_columns = np.asarray(df) > 0 if self.vectorizer.hashing is not None else None
        if sorted(map(str, self.classes_)) != [HAM_NAME, SPAM_NAME]:
            return
        known, distinct = np.asarray(known, dtype=np.float64), np.asarray(distinct, dtype=np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            familiarity = np.where(distinct > 0, known / distinct, 1.0)
        self.guard = FamiliarityGuard.from_training(familiarity)
        self.guard_reference = familiarity if self.guard is not None else None

    #: the training messages' leave-one-out familiarities the guard was fitted on (kept in the
    #: file, for :meth:`refit_guard`); None: not kept (a file written before they were)
    guard_reference: np.ndarray | None = None

    def refit_guard(self) -> bool:
        """Fit the guard's floor and typical level again on every message the filter has learned:
        the training messages' leave-one-out familiarities and the judged messages'
        (``spamkit learn --all-mail``: each measured before it was learned), so that mail like the
        mail it was told about since training is familiar; its other settings stay. Mail from
        another server, learned whole, then stops being left unsure for its unfamiliarity
        alone (docs/history.md, "Learning all the mail"). Only where the training
        familiarities are kept (a file of before they were keeps its guard). True if refitted."""
        if self.guard is None or self.guard_reference is None or self.judged is None or not self.judged[3]:
            return False
        fresh = FamiliarityGuard.from_training(np.concatenate([self.guard_reference, self.judged[3]]))
        if fresh is None:
            return False
        self.guard = FamiliarityGuard.from_dict({**self.guard.as_dict(), "floor": fresh.floor,
                                                 "typical": fresh.typical})
        return True

    def familiarity(self, token_lists, X) -> np.ndarray:
        """The share of each message's distinct tokens that the filter saw in training."""
        return self.familiarity_of(distinct_tokens(token_lists), X)

    def familiarity_of(self, distinct, X) -> np.ndarray:
        """:meth:`familiarity` from each message's number of distinct tokens and its row of ``X``."""
        distinct = np.asarray(distinct, dtype=np.float64)
        if self.seen_columns is not None:
            known = columns_per_row(X, self.seen_columns)
        else:
            known = np.diff(X.indptr).astype(np.float64)     # a vocabulary has only seen tokens
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.minimum(np.where(distinct > 0, known / distinct, 1.0), 1.0)
