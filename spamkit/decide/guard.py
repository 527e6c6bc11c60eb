"""The familiarity guard: "unsure" instead of "spam" for mail unlike the training mail.

:class:`FamiliarityGuard` holds what the training mail's familiarity was (the share of a
message's distinct tokens the filter knew) and, message by message, decides with
:mod:`spamkit.decide.familiar`'s rules -- a margin a spam decision must clear on unfamiliar
mail, "unsure" below the training mail's 1st percentile, and a stream whose recent mail has
drifted -- what the costs' decision becomes. The rules themselves are
:mod:`spamkit.decide.familiar`'s (standard library only: pipe mode's lean route decides with them
too); this is their state over a stream, as a filter file keeps it.
"""

from __future__ import annotations

import bisect
import math
from collections import deque

import numpy as np

from ..common.errors import ConfigError
from ..common.labels import SPAM_NAME
from .decision import UNSURE_NAME
from .familiar import GUARD_DRIFT, GUARD_MARGIN, GUARD_MIN_WINDOW, GUARD_WINDOW, discount, guard_settings


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
        self.last: str | None = None
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
