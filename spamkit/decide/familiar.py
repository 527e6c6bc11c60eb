"""The familiarity guard's rule for one message, with the standard library alone.

A filter's probabilities are calibrated on mail like its training mail; on mail less familiar
than the training mail (a smaller share of its tokens seen in training) they are less to be
trusted, the less the more unfamiliar the message. So a spam decision on such a message must
stand on more evidence: the message's log-odds must clear the costs' spam cut by a margin
that grows from 0, at the familiarity 95% of the training mail reaches (``typical``), to
``margin`` at the familiarity 99% of it reaches (``floor``); below the floor no evidence
suffices (the message is unsure, never spam). The margin is measured in units of the training
mail's own spread (``typical - floor``), so one setting serves filters trained on mail of any
kind.

Both routes that decide a message use these definitions: :class:`spamkit.decide.guard.FamiliarityGuard`
(arrays and filter runs, which add the stream's drift) and pipe mode's lean route
(:mod:`spamkit.mail.lean`, which imports no NumPy). Why these numbers: docs/results.md,
"Train once, judge later mail or mail from elsewhere" (``scripts/shifted_mail.py``).
"""

from __future__ import annotations

import math

#: the log-odds a spam decision must clear above the costs' cut at the floor (the 1st percentile
#: of the training mail's familiarity), falling linearly to 0 at the 5th percentile. 2.5: the
#: smallest of 2, 2.5, 3 and 4 with which the default filter, trained once, misfiles no more of a
#: server's later ham than bogofilter 1.2.5 + 0.05 points on every case of
#: ``scripts/shifted_mail.py`` (at 2: 0.08% of trec06p's last 7,821 against bogofilter's 0.00%)
GUARD_MARGIN = 2.5
#: a stream has drifted when the median familiarity of its last messages lies this many
#: (5th - 1st percentile) spreads below the training mail's 5th percentile
GUARD_DRIFT = 0.25
#: the messages whose median familiarity tells a drifted stream, and how many it needs first
GUARD_WINDOW = 200
GUARD_MIN_WINDOW = 20


def guard_settings(d: dict) -> dict:
    """A guard's settings as a filter file holds them, checked, with every field: ``floor``,
    ``typical``, ``margin``, ``drift``, ``window``, ``min_window``. Files written before the
    margin existed name the typical familiarity ``window_floor`` and have neither margin nor
    drift: they get today's defaults. Raises ValueError for settings no guard can have.

    >>> guard_settings({"floor": 0.6, "window_floor": 0.8, "window": 50, "min_window": 20})["typical"]
    0.8
    """
    if not isinstance(d, dict):
        raise ValueError("the guard's settings are not a table")
    typical = d["typical"] if "typical" in d else d["window_floor"]
    out = {"floor": float(d["floor"]), "typical": float(typical), "margin": float(d.get("margin", GUARD_MARGIN)),
           "drift": float(d.get("drift", GUARD_DRIFT)), "window": d.get("window", GUARD_WINDOW),
           "min_window": d.get("min_window", GUARD_MIN_WINDOW)}
    if not (0.0 <= out["floor"] <= 1.0 and 0.0 <= out["typical"] <= 1.0):
        raise ValueError(f"familiarity floors must be in [0, 1], got {out['floor']} and {out['typical']}")
    if not (0.0 <= out["margin"] <= 50.0 and 0.0 <= out["drift"] <= 50.0):
        raise ValueError(f"need a margin and a drift in [0, 50], got {out['margin']} and {out['drift']}")
    window, min_window = out["window"], out["min_window"]
    if not (type(window) is int and type(min_window) is int and 1 <= min_window <= window <= 1_000_000):
        raise ValueError(f"need 1 <= min_window <= window, got {min_window} and {window}")
    return out


def discount(familiarity: float, floor: float, typical: float, margin: float) -> float | None:
    """The log-odds a spam decision on a message of this familiarity must clear above the costs'
    cut: 0 at or above ``typical``, ``margin`` at ``floor``, linear between; None below the floor
    (no evidence suffices). A familiarity that is not a number asks for nothing (as before the
    margin: it is never below the floor).

    >>> discount(0.9, 0.6, 0.8, 2.0), round(discount(0.7, 0.6, 0.8, 2.0), 12), discount(0.6, 0.6, 0.8, 2.0), discount(0.5, 0.6, 0.8, 2.0)
    (0.0, 1.0, 2.0, None)
    """
    if familiarity < floor:
        return None
    if not familiarity < typical:                  # at or above it, or NaN
        return 0.0
    return margin * (typical - familiarity) / (typical - floor)   # floor <= familiarity < typical


def discounted_p_spam(p_spam: float, extra: float) -> float:
    """P(spam) with ``extra`` log-odds taken away: p / (p + (1 - p) e^extra) (``extra`` is at most
    the margin, so the power cannot overflow).

    >>> round(discounted_p_spam(0.99, math.log(2)), 6)        # odds 99:1 halved to 49.5:1
    0.980198
    """
    return p_spam / (p_spam + (1.0 - p_spam) * math.exp(extra)) if p_spam > 0.0 else 0.0


def discounted_row(row, spam: int, extra: float) -> list[float]:
    """A two-class row of probabilities (``spam``: the spam column) with ``extra`` log-odds taken
    from P(spam) (:func:`discounted_p_spam`), for the costs to decide again: what both routes do
    with the guard's margin.

    >>> [round(p, 6) for p in discounted_row([0.01, 0.99], 1, math.log(2))]
    [0.019802, 0.980198]
    """
    out = [0.0, 0.0]
    out[spam] = discounted_p_spam(float(row[spam]), extra)
    out[1 - spam] = 1.0 - out[spam]
    return out
