#!/usr/bin/env python3
"""Where the default decision should cut: ham misfiled and spam caught at several unsure bands,
on every corpus, online, next to bogofilter at its own cut-offs.

The default filter's three-way decision comes from its costs (``spamkit.decide.decision.DEFAULT_COSTS``:
a misfiled ham costs c_FP, a missed spam c_FN, an unsure message u; ham below u / c_FN, spam above
1 - u / c_FP). This script runs the default configuration of ``scripts/ablation.py`` once per
corpus (TREC protocol: classify each message in corpus order, then learn it; features hashed into
2^20 columns), and bogofilter 1.2.5 with its compiled-in defaults on the same messages in the same
order (``--bogofilter``), then reads off, for each candidate band, the ham misfiled and the spam
caught, and whether the band meets the goals against bogofilter on that corpus (ham misfiled at
most bogofilter's + 0.05 points, spam caught at least bogofilter's). Nothing is tuned per corpus:
each row is one band for all of them.

    python scripts/decision_band.py [--corpora DIR] [--only trec,csdmc,...] [--bogofilter]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from spamkit.decide.decision import DEFAULT_COSTS, unsure_band
from spamkit.decide.metrics import three_way_rates

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ablation import CONFIGS, CORPORA, corpus_arguments, hashed_rows, load, online_scores, run_bogofilter
from _bogofilter import ensure_bogofilter

#: (c_FP, c_FN, unsure) candidates: the default first; the spam cut 1 - u / c_FP, the ham cut u / c_FN
CANDIDATES = [(100.0, 10.0, 2.0), (200.0, 10.0, 2.0), (400.0, 10.0, 2.0), (1000.0, 10.0, 2.0),
              (200.0, 20.0, 2.0), (400.0, 20.0, 2.0)]


def default_scores(messages) -> tuple[np.ndarray, np.ndarray]:
    """(is spam, P(spam) before learning) of the default configuration, online."""
    _, scheme, model, kwargs = CONFIGS[0]
    _, gold, p_spam = online_scores(messages, hashed_rows(messages, scheme, "binary"), model, kwargs)
    return gold, p_spam


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    corpus_arguments(parser)
    args = parser.parse_args()
    names = [n for n in args.only.split(",") if n]
    exe = ensure_bogofilter(not args.no_install) if args.bogofilter else None
    started = time.perf_counter()
    bands = [(costs, unsure_band(*costs)) for costs in CANDIDATES]
    assert CANDIDATES[0] == (DEFAULT_COSTS["c_fp"], DEFAULT_COSTS["c_fn"], DEFAULT_COSTS["c_unsure"])
    met = {costs: 0 for costs in CANDIDATES}
    print(f"{'corpus':<8} {'c_FP/c_FN/u':<14} {'ham <':>6} {'spam >':>7} {'ham misfiled%':>14} {'ham unsure%':>12} "
          f"{'spam caught%':>13} {'goals':>6}")
    for corpus in names:
        messages = load(args.corpora / CORPORA[corpus])
        gold, p_spam = default_scores(messages)
        bogo = run_bogofilter(exe, messages)[1] if exe else None
        for costs, (low, high) in bands:
            r = three_way_rates(gold, p_spam, low, high)
            ok = "?"
            if bogo is not None:
                good = (r["ham_misfiled"] <= bogo["ham_misfiled"] + 0.05 and r["spam_caught"] >= bogo["spam_caught"])
                ok = "yes" if good else "no"
                met[costs] += good
            label = "/".join(f"{c:g}" for c in costs) + (" (default)" if costs == CANDIDATES[0] else "")
            print(f"{corpus:<8} {label:<14} {low:>6.3f} {high:>7.4f} {r['ham_misfiled']:>14.3f} {r['ham_unsure']:>12.2f} "
                  f"{r['spam_caught']:>13.2f} {ok:>6}", flush=True)
        if bogo is not None:
            print(f"{corpus:<8} {'bogofilter':<14} {0.45:>6.3f} {0.99:>7.4f} {bogo['ham_misfiled']:>14.3f} "
                  f"{bogo['ham_unsure']:>12.2f} {bogo['spam_caught']:>13.2f}", flush=True)
        print()
    if exe:
        print("corpora where the band meets both goals against bogofilter:")
        for costs, (low, high) in bands:
            print(f"  {'/'.join(f'{c:g}' for c in costs):<14} ham < {low:.3f}, spam > {high:.4f}: "
                  f"{met[costs]} of {len(names)}")
    print(f"\n({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
