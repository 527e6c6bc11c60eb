#!/usr/bin/env python3
"""Combiners compared on the saved online scores of every input (``scripts/fusion_lab.py``).

Each combiner is a logistic regression over the inputs' log-odds (Lynam & Cormack, "On-line
spam filter fusion", SIGIR 2006), refitted every REFIT messages on the scores the messages got
before they were learned, as ``spamkit online`` does; they differ in what they weigh and in how
much the old messages count. For each stream the script prints (1-ROCA)% over the whole stream
and, over the windows of the learning curve (``spamkit.metrics.learning_curve``), the worst
ratio of the combiner's (1-ROCA)% to the best single input's in that window (values below
FLOOR count as FLOOR: a few message pairs).

    python scripts/fusion_lab.py NAME --out fusion-scores     # once per stream
    python scripts/fusion.py [--scores fusion-scores] [--streams trec,csdmc,...] [--half-life N]

``--half-life N`` adds the accurate combiner with old messages weighted down (a message N
messages back counts half), to see whether a combiner that forgets follows the best input.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from spamkit.metrics import learning_curve, roc_auc
from spamkit.models.logistic import fit_l2_logistic
from spamkit.models.stack import FisherNBStack

REFIT = 100
FLOOR = 0.005


def roca(y, s) -> float:
    return 100.0 * (1.0 - roc_auc(y, s))


def slog(z):
    z = np.clip(np.nan_to_num(z, nan=0.0), -700, 700)
    return np.sign(z) * np.log1p(np.abs(z))


def features(data: dict, side: tuple, squash_side: bool) -> np.ndarray:
    comps = np.nan_to_num(data["components"], nan=0.0)
    cols = []
    for name in side:
        v = np.nan_to_num(data[name], nan=0.0)
        cols.append(slog(v) if squash_side else np.clip(v, -700, 700))
    stack = FisherNBStack(squash="slog", length_aware=True, side_inputs=len(cols))
    return stack.combiner_features(comps, np.column_stack(cols) if cols else None)


def online_fusion(F: np.ndarray, y: np.ndarray, half_life: float | None = None, C: float = 1.0) -> np.ndarray:
    """Scores of a combiner refitted every REFIT messages on the rows before (Fisher alone before the first fit)."""
    n = len(y)
    out = np.zeros(n)
    coef, b = None, 0.0
    start = 0
    for end in list(range(REFIT, n, REFIT)) + [n]:
        block = slice(start, end)
        out[block] = F[block, 0] if coef is None else F[block] @ coef + b
        hist = y[:end]
        if hist.any() and not hist.all():
            w = None if half_life is None else 0.5 ** ((end - 1 - np.arange(end)) / half_life)
            coef, b = fit_l2_logistic(F[:end], hist, C=C, sample_weight=w)
        start = end
    return out


def windows(y, s) -> list:
    return [p["roca_pct"] for p in learning_curve(y, s)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scores", type=Path, default=Path("fusion-scores"))
    ap.add_argument("--streams", default="trec,trec06p,csdmc,enron1,enron2,enron3,enron4,enron5,enron6,sms")
    ap.add_argument("--half-life", type=float, action="append", default=[])
    args = ap.parse_args(argv)
    configs = {
        "default (F, NB, LR)": ((), False, None),
        "+context": (("context",), False, None),
        "+grams": (("grams",), False, None),
        "+context+grams": (("context", "grams"), False, None),
        **{f"+context+grams h{h:g}": (("context", "grams"), False, h) for h in args.half_life},
    }
    for name in args.streams.split(","):
        path = args.scores / f"{name}.npz"
        if not path.exists():
            continue
        data = dict(np.load(path))
        y = data["spam"]
        comps = data["components"]
        inputs = {"fisher": comps[:, 0], "nb": comps[:, 1], "logistic": comps[:, 2],
                  "context": data["context"], "grams": data["grams"]}
        inputs = {k: np.nan_to_num(v, nan=0.0) for k, v in inputs.items()}
        print(f"\n{name}: {len(y)} messages; (1-ROCA)% of the whole stream, then of each window of the "
              "learning curve")
        curves = {k: windows(y, v) for k, v in inputs.items()}
        for k, v in inputs.items():
            print(f"  {k:<28}{roca(y, v):9.4f}   " + " ".join(f"{c:.3f}" if c is not None else "-" for c in curves[k]))
        for label, (side, squash, half) in configs.items():
            s = online_fusion(features(data, side, squash), y, half)
            curve = windows(y, s)
            used = ["fisher", "nb", "logistic", *side]
            worst = 0.0
            for i, c in enumerate(curve):
                best = min(curves[k][i] for k in used if curves[k][i] is not None)
                worst = max(worst, max(c, FLOOR) / max(best, FLOOR))
            print(f"  {label:<28}{roca(y, s):9.4f}   " + " ".join(f"{c:.3f}" for c in curve)
                  + f"   worst/best-input {worst:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
