#!/usr/bin/env python3
"""Combiners compared on the saved online scores of every input (``scripts/fusion_lab.py``).

Each combiner is a logistic regression over the inputs' log-odds (Lynam & Cormack, "On-line
spam filter fusion", SIGIR 2006), refitted on the scores the messages got before they were
learned, as ``spamkit online`` does (every 100 messages); they differ in what they weigh and,
with side inputs, in a prior on the weights or not (``FisherNBStack.combiner_center``, which the
accurate configuration uses) with refits every 10 messages over the first 1,000. The prior of each stream is the average of
the weights fitted on the *other* streams (leave one corpus out), so no stream is scored with
weights it helped choose; ``--centers`` prints the averages over every stream (what the code
uses).

For each stream: each input alone, then each combiner, with (1-ROCA)% over the whole stream
and over each window of the learning curve (``spamkit.decide.metrics.learning_curve``), and against
the best single input *of that window*: the worst ratio (values below FLOOR count as FLOOR: a
few message pairs), and how many windows are more than 10% worse and, of those, how many
significantly (a paired bootstrap of the window's messages: the combiner worse than that input
in at least 95% of 400 resamples; :func:`spamkit.decide.metrics.window_comparison`).

Where the saved scores hold bogofilter's (``fusion_lab.py --bogofilter``), each combiner is also
put against the published peers on the same stream, bogofilter 1.2.5 and the 4-gram regression
alone: its (1-ROCA)% over the best peer's (values below FLOOR count as FLOOR), and at the default
three-way decision (ham below P(spam) 0.2, spam above 0.98) the ham misfiled and the spam caught
next to bogofilter's at its own cut-offs (0.45, 0.99). The summary ranks the combiners by their
worst ratio over the streams, the rule the defaults are chosen by.

    python scripts/fusion_lab.py NAME --out fusion-scores [--bogofilter]    # once per stream
    python scripts/fusion.py [--scores fusion-scores] [--streams trec,csdmc,...] [--centers]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from spamkit.decide.decision import DEFAULT_BAND
from spamkit.jobs.evaluation import COMBINER_REFIT, EARLY_MESSAGES, EARLY_REFIT
from spamkit.decide.metrics import learning_curve, three_way_rates, window_comparison
from spamkit.decide.curves import roc_auc
from spamkit.models.logistic import fit_l2_logistic
from spamkit.models.stack import FisherNBStack
from spamkit.scoring import PRIOR_WARMUP

FLOOR = 0.005
STREAMS = "trec,trec06p,csdmc,enron1,enron2,enron3,enron4,enron5,enron6,sms"
LAYOUTS = {"default (F, NB, LR)": (), "+context": ("context",), "+grams": ("grams",),
           "+context+grams": ("context", "grams")}


def roca(y, s) -> float:
    return 100.0 * (1.0 - roc_auc(y, s))


def features(data: dict, side: tuple) -> np.ndarray:
    """The combiner's columns of every message (as FisherNBStack.combiner_features makes them)."""
    comps = np.nan_to_num(data["components"], nan=0.0)
    cols = [np.nan_to_num(data[name], nan=0.0) for name in side]
    stack = FisherNBStack(squash="slog", length_aware=True, side_inputs=len(cols))
    return stack.combiner_features(comps, np.column_stack(cols) if cols else None)


def refits(n: int, early: bool) -> list:
    """After how many messages the combiner is refitted (and the stream's end)."""
    points = set(range(COMBINER_REFIT, n, COMBINER_REFIT))
    if early:
        points |= set(range(EARLY_REFIT, min(n, EARLY_MESSAGES), EARLY_REFIT))
    return sorted(points) + [n]


def online_fusion(F: np.ndarray, y: np.ndarray, center=None) -> np.ndarray:
    """Scores of a combiner refitted on the rows before: Fisher alone (or the prior ``center``,
    weights then intercept) until the first fit; with a prior, the i-th message's log-odds
    scaled by min(1, i / PRIOR_WARMUP) (i messages learned before it), as the stack does."""
    n = len(y)
    out = np.zeros(n)
    coef, b = (None, 0.0) if center is None else (np.asarray(center[:-1]), float(center[-1]))
    start = 0
    for end in refits(n, center is not None):
        out[start:end] = F[start:end, 0] if coef is None else F[start:end] @ coef + b
        if y[:end].any() and not y[:end].all():
            coef, b = fit_l2_logistic(F[:end], y[:end], C=1.0, center=None if center is None else center[:-1])
        start = end
    if center is not None:
        out *= np.minimum(1.0, np.arange(n) / PRIOR_WARMUP)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scores", type=Path, default=Path("fusion-scores"))
    ap.add_argument("--streams", default=STREAMS)
    ap.add_argument("--centers", action="store_true", help="print each layout's prior from every stream and stop")
    args = ap.parse_args(argv)
    names = [n for n in args.streams.split(",") if (args.scores / f"{n}.npz").exists()]
    data = {n: dict(np.load(args.scores / f"{n}.npz")) for n in names}
    fitted = {}
    for layout, side in LAYOUTS.items():
        for n in names:
            w, b = fit_l2_logistic(features(data[n], side), data[n]["spam"], C=1.0)
            fitted[layout, n] = np.append(w, b)
    if args.centers:
        for layout in LAYOUTS:
            center = np.mean([fitted[layout, n] for n in names], axis=0)
            print(f"{layout:<22} {tuple(round(float(v), 3) for v in center)}")
        return 0
    summary: dict = {}
    for name in names:
        d = data[name]
        y = d["spam"]
        comps = d["components"]
        inputs = {"fisher": comps[:, 0], "nb": comps[:, 1], "logistic": comps[:, 2], "context": d["context"],
                  "grams": d["grams"]}
        inputs = {k: np.nan_to_num(v, nan=0.0) for k, v in inputs.items()}
        print(f"\n{name}: {len(y)} messages; (1-ROCA)% of the whole stream, then of each window of the learning curve")
        for k, v in inputs.items():
            curve = " ".join(f"{p['roca_pct']:.3f}" if p["roca_pct"] is not None else "-"
                             for p in learning_curve(y, v))
            print(f"  {k:<26}{roca(y, v):9.4f}   {curve}")
        peers = {"4-gram LR": inputs["grams"], **({"bogofilter": d["bogofilter"]} if "bogofilter" in d else {})}
        best_peer = min(roca(y, v) for v in peers.values())
        bogo = (three_way_rates(y, d["bogofilter"], 0.45, 0.99) if "bogofilter" in d else None)
        if bogo is not None:
            print(f"  {'bogofilter 1.2.5':<26}{roca(y, d['bogofilter']):9.4f}   at its cut-offs: ham misfiled "
                  f"{bogo['ham_misfiled']:.3f}%, spam caught {bogo['spam_caught']:.2f}%")
        runs = {label: (side, None) for label, side in LAYOUTS.items()}
        for layout, side in LAYOUTS.items():
            if side:
                center = np.mean([fitted[layout, n] for n in names if n != name], axis=0)
                runs[f"{layout}, prior"] = (side, center)
        for label, (side, prior) in runs.items():
            s = online_fusion(features(d, side), y, prior)
            used = {k: inputs[k] for k in ("fisher", "nb", "logistic", *side)}
            rows = window_comparison(y, s, used, floor=FLOOR)
            worst = max(r["ratio"] for r in rows)
            over = sum(r["ratio"] > 1.1 for r in rows)
            significant = sum(r["significantly_worse"] for r in rows)
            print(f"  {label:<26}{roca(y, s):9.4f}   " + " ".join(f"{r['fused']:.3f}" for r in rows)
                  + f"   worst {worst:.2f}, {over} windows > 1.1, {significant} significantly", flush=True)
            ratio = max(roca(y, s), FLOOR) / max(best_peer, FLOOR)
            rates = three_way_rates(y, 1.0 / (1.0 + np.exp(-np.clip(s, -700, 700))), *DEFAULT_BAND)
            goals = bogo is None or (rates["ham_misfiled"] <= bogo["ham_misfiled"] + 0.05
                                     and rates["spam_caught"] >= bogo["spam_caught"])
            print(f"  {'':<26}÷ best peer {ratio:.2f}; default decision: ham misfiled {rates['ham_misfiled']:.3f}%, "
                  f"spam caught {rates['spam_caught']:.2f}%" + ("" if bogo is None else
                                                                f" (against bogofilter: {'met' if goals else 'NOT met'})"))
            summary.setdefault(label, []).append((name, ratio, goals))
    print("\nworst (1-ROCA)% ratio to the best peer over the streams (the choice minimises it), and the streams where "
          "the default decision misfiles more ham than bogofilter + 0.05 points or catches less spam:")
    for label, rows in sorted(summary.items(), key=lambda kv: max(r for _, r, _ in kv[1])):
        worst = max(rows, key=lambda r: r[1])
        missed = [n for n, _, ok in rows if not ok]
        print(f"  {label:<26} worst {worst[1]:.2f} ({worst[0]}); decision goals missed on: {', '.join(missed) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
