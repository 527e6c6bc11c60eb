#!/usr/bin/env python3
"""Train, then learn all the mail that comes (``spamkit learn --all-mail``), then filter later mail.

A filter trained on one set of mail (A) learns the mail that follows (B), every message with its
label, as a server that is told each message's class does; then it filters later mail (C). Two
ways of learning B are compared: plain ``spamkit learn`` (the counts grow, the stack's combiner
stays the training one) and ``spamkit learn --all-mail`` (each message scored before it is
learned, the combiner refitted on those scores with the training fit as its prior, the spam cut
re-chosen: ``spamkit.jobs.learn.learn_messages(judge=True)``). bogofilter 1.2.5 (compiled-in
defaults, ``-C``; spam >= 0.99, unsure >= 0.45) is trained on A and B and classifies C.

Printed per case: for --all-mail, its decisions on B as it learned them (each message decided
with the combiner and the cut it had then); and for each filter on C: the ROC AUC, and at its
own decision (spamkit: each message alone, as pipe mode and the servers judge it, familiarity
guard and learned cut included) the ham misfiled, the spam caught and the messages unsure (%).

    python scripts/learn_all_mail.py [--corpora ../shared/corpora] [--cases a,b] [--no-bogofilter]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bogofilter import ensure_bogofilter
from shifted_mail import bogofilter_scores, load, rates

from spamkit.decide.curves import roc_auc
from spamkit.decide.decision import DEFAULT_BAND, CostMatrix
from spamkit.decide.metrics import three_way_rates
from spamkit.decide.thresholds import stream_spam_cuts
from spamkit.filterfile.config import BEST, build_filter
from spamkit.jobs.learn import learn_messages

#: case -> (trained on, learned, judged later): each a corpus and a slice of it
CASES = {
    "csdmc->trec07p-dev": (("csdmc", 0, None), ("trec07p-dev", 0, 2500), ("trec07p-dev", 2500, None)),
    "trec06p->trec07p-dev": (("trec06p", 0, None), ("trec07p-dev", 0, 2500), ("trec07p-dev", 2500, None)),
    "trec07p-dev->csdmc": (("trec07p-dev", 0, None), ("csdmc", 0, 1000), ("csdmc", 1000, None)),
    "trec07p-dev 1-1000": (("trec07p-dev", 0, 1000), ("trec07p-dev", 1000, 3000), ("trec07p-dev", 3000, None)),
    "trec06p 1-3000": (("trec06p", 0, 3000), ("trec06p", 3000, 15000), ("trec06p", 15000, 20000)),
}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpora", type=Path, default=Path(os.environ.get("SPAMKIT_CORPORA", "../shared/corpora")))
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--no-bogofilter", action="store_true")
    args = ap.parse_args(argv)
    exe = None if args.no_bogofilter else ensure_bogofilter(install=False)
    cache: dict = {}

    def part(spec):
        name, start, stop = spec
        if name not in cache:
            cache[name] = load(args.corpora, name)
        return cache[name][start:stop]

    print(f"{'case':<22}{'filter':<34}{'AUC':>8}{'ham misfiled%':>14}{'spam caught%':>13}{'unsure%':>9}")
    for case in args.cases.split(","):
        started = time.perf_counter()
        trained, learned, later = (part(spec) for spec in CASES[case])
        y = np.array([m.label == "spam" for m in later])
        for judge in (False, True):
            f = build_filter(**BEST).fit(trained)
            f.set_costs(CostMatrix.default())
            report = learn_messages(f, learned, judge=judge)
            name = "spamkit learn --all-mail" if judge else "spamkit learn"
            if judge:
                yb, pb = np.array(f.judged[1]), np.array(f.judged[0])
                r = three_way_rates(yb, pb, DEFAULT_BAND[0], stream_spam_cuts(yb, pb))
                print(f"{case:<22}{'  as it learned B':<34}{roc_auc(yb, pb):>8.4f}{r['ham_misfiled']:>14.2f}"
                      f"{r['spam_caught']:>13.2f}{_unsure(r):>9.2f}   ({report.refits} refits, spam cut "
                      f"{f.learned_spam_cut() or DEFAULT_BAND[1]:.6f})")
            proba, familiarity = f.score(later)
            p = proba[:, f.spam_column]
            decisions = [f.verdict_from(row, fam, alone=True)[0] for row, fam in zip(proba, familiarity)]
            r = rates(y, decisions)
            print(f"{case:<22}{name + ', later mail':<34}{roc_auc(y, p):>8.4f}{r['ham_misfiled']:>14.2f}"
                  f"{r['spam_caught']:>13.2f}{r['unsure']:>9.2f}", flush=True)
        if exe is not None:
            s = bogofilter_scores(exe, trained + learned, later)
            r = rates(y, np.where(s >= 0.99, "spam", np.where(s >= 0.45, "unsure", "ham")))
            print(f"{case:<22}{'bogofilter 1.2.5, later mail':<34}{roc_auc(y, s):>8.4f}{r['ham_misfiled']:>14.2f}"
                  f"{r['spam_caught']:>13.2f}{r['unsure']:>9.2f}", flush=True)
        print(f"{'':<22}(A {len(trained)}, B {len(learned)}, C {len(later)} messages; "
              f"{time.perf_counter() - started:.0f} s)", flush=True)
    return 0


def _unsure(r: dict) -> float:
    """The share of all messages unsure, from three_way_rates' per-class shares."""
    n_ham, n_spam = r["n_ham"], r["n_spam"]
    return (r["ham_unsure"] * n_ham + r["spam_unsure"] * n_spam) / (n_ham + n_spam)


if __name__ == "__main__":
    sys.exit(main())
