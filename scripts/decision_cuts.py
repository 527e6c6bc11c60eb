#!/usr/bin/env python3
"""Can one spam cut meet the decision goals on every stream? The default filter's online
P(spam) next to bogofilter's, read off at several cuts, and the range of cuts each stream allows.

The goals (the issue "Beat the best published spam filters"): at the default decision, online,
ham misfiled at most bogofilter's + 0.05 points and spam caught at least bogofilter's, on every
corpus. The default decision calls spam above 1 - u / c_FP (``spamkit.decide.decision.DEFAULT_BAND``:
0.98) and ham below u / c_FN (0.2). For each stream this prints, at the default cut and at
stricter ones, ham misfiled / spam caught / unsure (%), bogofilter's at its own cut-offs (0.45,
0.99), and the interval of spam cuts that meets both goals there ("none" when no cut does); the
last line intersects the intervals: a cut in it meets the goals everywhere. The "stream cut" column
decides each message with the cut chosen on the messages before it
(:func:`spamkit.decide.thresholds.stream_spam_cuts`), as an online filter can.

Reads saved scores, computes no filter: the default's online log-odds from ``python
scripts/rate_choice.py --rates 0.1 --save DIR`` (``NAME-RATE.npz``), bogofilter 1.2.5's online
spamicities from ``python scripts/fusion_lab.py NAME --out DIR --bogofilter`` (``NAME.npz``), both
over the same messages in the same order (checked by their labels).

    python scripts/decision_cuts.py --saved DIR --bogofilter-scores DIR [--rate 0.1]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from spamkit.decide.decision import DEFAULT_BAND
from spamkit.decide.thresholds import stream_spam_cuts
from spamkit.decide.metrics import three_way_rates

STREAMS = ["trec06p", "trec", "csdmc", *(f"enron{i}" for i in range(1, 7)), "sms", "ccert"]
CUTS = [DEFAULT_BAND[1], 0.99, 0.995, 0.998, 0.999]
#: bogofilter 1.2.5's compiled-in cut-offs: ham below, spam from
BOGOFILTER_BAND = (0.45, 0.99)
#: the allowance over bogofilter's ham misfiled, in points
ALLOWANCE = 0.05


def unsure_pct(r: dict) -> float:
    """Unsure, % of all messages, from :func:`three_way_rates`' per-class shares."""
    n_ham, n_spam = r["n_ham"], r["n_spam"]
    return (r["ham_unsure"] * n_ham + r["spam_unsure"] * n_spam) / max(n_ham + n_spam, 1)


def allowed_cuts(y, p, bogo: dict) -> tuple[float, float] | None:
    """The interval of spam cuts t (spam above t, as :func:`three_way_rates` decides) that meets
    both goals on this stream, or None: the ham goal holds from some cut up, the spam goal up to
    some cut. The ends are scores of the stream's messages (a cut between two is equivalent)."""
    ham, spam = np.sort(p[~y]), np.sort(p[y])
    candidates = np.unique(np.concatenate([p, [DEFAULT_BAND[1]]]))
    ham_pct = 100.0 * (len(ham) - np.searchsorted(ham, candidates, "right")) / max(len(ham), 1)
    caught = 100.0 * (len(spam) - np.searchsorted(spam, candidates, "right")) / max(len(spam), 1)
    ok = (ham_pct <= bogo["ham_misfiled"] + ALLOWANCE + 1e-9) & (caught >= bogo["spam_caught"] - 1e-9)
    if not ok.any():
        return None
    return float(candidates[ok].min()), float(candidates[ok].max())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--saved", type=Path, required=True, help="rate_choice.py --save's folder")
    ap.add_argument("--bogofilter-scores", type=Path, required=True, help="fusion_lab.py --out's folder")
    ap.add_argument("--rate", default="0.1")
    ap.add_argument("--streams", default=",".join(STREAMS))
    args = ap.parse_args(argv)
    print("ham misfiled / spam caught / unsure (%) at each spam cut (ham below "
          f"{DEFAULT_BAND[0]}); bogofilter at {BOGOFILTER_BAND}; the cuts that meet both goals")
    print(f"{'stream':<8} {'bogofilter':>17} " + " ".join(f"{'cut ' + format(c, 'g'):>17}" for c in CUTS)
          + f" {'stream cut':>17}  cuts meeting the goals")
    together = (0.0, 1.0)
    stream_ok = True
    for name in args.streams.split(","):
        ours = args.saved / f"{name}-{args.rate}.npz"
        theirs = args.bogofilter_scores / f"{name}.npz"
        if not ours.exists() or not theirs.exists():
            print(f"{name:<8} (no saved scores: {ours if not ours.exists() else theirs})")
            continue
        data, bogo_data = np.load(ours), np.load(theirs)
        y = data["spam"].astype(bool)
        if not np.array_equal(y, bogo_data["spam"].astype(bool)):
            raise SystemExit(f"{name}: the saved runs are not over the same messages in the same order")
        p = 1.0 / (1.0 + np.exp(-np.clip(data["log_odds"].astype(np.float64), -700, 700)))
        bogo = three_way_rates(y, bogo_data["bogofilter"], *BOGOFILTER_BAND)
        cells = []
        for cut in CUTS:
            r = three_way_rates(y, p, DEFAULT_BAND[0], cut)
            mark = "*" if (r["ham_misfiled"] <= bogo["ham_misfiled"] + ALLOWANCE + 1e-9
                           and r["spam_caught"] >= bogo["spam_caught"] - 1e-9) else " "
            cells.append(f"{r['ham_misfiled']:.2f}/{r['spam_caught']:.1f}/{unsure_pct(r):.1f}{mark}")
        r = three_way_rates(y, p, DEFAULT_BAND[0], stream_spam_cuts(y, p))
        mark = "*" if (r["ham_misfiled"] <= bogo["ham_misfiled"] + ALLOWANCE + 1e-9
                       and r["spam_caught"] >= bogo["spam_caught"] - 1e-9) else " "
        stream_ok = stream_ok and mark == "*"
        cells.append(f"{r['ham_misfiled']:.2f}/{r['spam_caught']:.1f}/{unsure_pct(r):.1f}{mark}")
        allowed = allowed_cuts(y, p, bogo)
        if allowed is None:
            together = None
        elif together is not None:
            together = (max(together[0], allowed[0]), min(together[1], allowed[1]))
        span = "none" if allowed is None else f"{allowed[0]:.6f} to {allowed[1]:.6f}"
        print(f"{name:<8} {bogo['ham_misfiled']:.2f}/{bogo['spam_caught']:.1f}/{unsure_pct(bogo):.1f}".ljust(27)
              + " ".join(f"{c:>17}" for c in cells) + f"  {span}")
    print("(* meets both goals on that stream; stream cut: each message decided with the spam cut chosen on the "
          "stream before it, spamkit.decide.thresholds.stream_spam_cuts)")
    print("the stream cut meets the goals on every stream" if stream_ok else "the stream cut misses the goals somewhere")
    if together is None or together[0] > together[1]:
        print("no single spam cut meets the goals on every stream")
    else:
        print(f"cuts that meet the goals on every stream: {together[0]:.6f} to {together[1]:.6f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
