#!/usr/bin/env python3
"""Train once, filter later or foreign mail: spamkit's default decision next to bogofilter's.

The way most people use a filter: train it on the mail they have, then let it judge mail that
comes later, or from elsewhere. For each case (training mail -> mail judged) the default filter
(``spamkit train``'s defaults) is trained on the first set and scores the second, and bogofilter
1.2.5 (compiled-in defaults, ``-C``; its cut-offs spam >= 0.99, unsure >= 0.45) is trained on the
same messages and classifies the same. Printed: the ROC AUC of each, and at each one's own
three-way decision the ham misfiled as spam, the spam caught and the messages left unsure (%).
spamkit's decision is printed under several rules of its familiarity guard
(``spamkit.decide.guard.FamiliarityGuard``): as a mailbox run judges a stream, as each message
alone, and with no guard.

Cases: trec06p -> trec07p-dev and CSDMC2010; CSDMC2010 -> trec07p-dev; trec07p-dev -> CSDMC2010;
and within one corpus, its first 2,000 messages -> the rest (trec07p-dev, trec06p's first 10,000),
and trec06p's first 3,000 -> its messages 15,001-20,000 and its last 7,821 (mail months later).
With ``--save DIR`` each case's scores, familiarities and labels are kept (``CASE.npz``) for
other decision rules to be compared on. ``--margins 2,2.5,3,4`` also prints each message alone
decided under the guard with each of those margins (``spamkit.decide.familiar.GUARD_MARGIN`` was
chosen so: the smallest that misfiles no more ham than bogofilter + 0.05 points on every case
of later mail of the same server).

``--training-cut``: also the decisions with the spam cut a deployed filter could learn from its
training mail (``spamkit.decide.thresholds.spam_cut`` on the 5-fold out-of-fold P(spam) of the
training messages: the cost rule of the stream's cut, "A cut learned from the stream"), a
"spam" under it made "unsure".

``--accurate``: the accurate configuration (``--context-model``: the default's byte 4-grams and a
context model per class) instead of the default.

    python scripts/shifted_mail.py [--corpora ../shared/corpora] [--cases a,b] [--save DIR] [--no-bogofilter]
        [--accurate] [--margins M,M,...] [--training-cut]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bogofilter import ensure_bogofilter, trained_wordlist

from spamkit.filterfile.config import BEST, build_filter
from spamkit.corpus import Corpus
from spamkit.decide.decision import DEFAULT_BAND, CostMatrix
from spamkit.decide.guard import FamiliarityGuard
from spamkit.decide.curves import roc_auc
from spamkit.decide.thresholds import spam_cut
from spamkit.jobs.folds import cross_validated_log_odds

PATHS = {"trec07p-dev": "trec07p-dev/trec07p-dev.tar.gz", "csdmc": "csdmc2010/csdmc2010.tar.gz",
         "trec06p": "trec06p/trec06p.tar.gz"}
#: case -> (training corpus, its slice; judged corpus, its slice)
CASES = {
    "trec06p->trec07p-dev": ("trec06p", slice(None), "trec07p-dev", slice(None)),
    "trec06p->csdmc": ("trec06p", slice(None), "csdmc", slice(None)),
    "csdmc->trec07p-dev": ("csdmc", slice(None), "trec07p-dev", slice(None)),
    "trec07p-dev->csdmc": ("trec07p-dev", slice(None), "csdmc", slice(None)),
    "trec07p-dev first 2000->rest": ("trec07p-dev", slice(0, 2000), "trec07p-dev", slice(2000, None)),
    "trec06p first 2000->next 8000": ("trec06p", slice(0, 2000), "trec06p", slice(2000, 10000)),
    # later mail, months later: where the guard's earlier window gave up on the spam
    "trec06p first 3000->15000-20000": ("trec06p", slice(0, 3000), "trec06p", slice(15000, 20000)),
    "trec06p first 3000->last 7821": ("trec06p", slice(0, 3000), "trec06p", slice(30000, None)),
}


def load(corpora: Path, name: str) -> list:
    with Corpus(corpora / PATHS[name]) as corpus:
        return list(corpus)


def rates(is_spam, decisions) -> dict:
    d = np.asarray(decisions)
    ham, spam = ~is_spam, is_spam
    return {"ham_misfiled": 100 * float((d[ham] == "spam").mean()), "spam_caught": 100 * float((d[spam] == "spam").mean()),
            "unsure": 100 * float((d == "unsure").mean())}


def bogofilter_scores(exe: str, train, judged) -> np.ndarray:
    with tempfile.TemporaryDirectory(prefix="bogo-shift-") as tmp:
        wordlist = trained_wordlist(exe, tmp, train)
        out = []
        for m in judged:
            done = subprocess.run([exe, "-C", "-d", wordlist, "-TT"], input=m.raw, capture_output=True)
            out.append(float(done.stdout.decode().split()[-1]))
    return np.asarray(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpora", type=Path, default=Path(os.environ.get("SPAMKIT_CORPORA", "../shared/corpora")))
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--save", type=Path, default=None)
    ap.add_argument("--no-bogofilter", action="store_true")
    ap.add_argument("--accurate", action="store_true", help="the accurate configuration, not the default")
    ap.add_argument("--margins", default="", help="also each message alone under the guard with these margins")
    ap.add_argument("--training-cut", action="store_true", help="also with the spam cut learned on the training mail")
    args = ap.parse_args(argv)
    exe = None if args.no_bogofilter else ensure_bogofilter(install=False)
    cache: dict = {}
    print(f"{'case':<34}{'filter / rule':<28}{'AUC':>8}{'ham misfiled%':>14}{'spam caught%':>13}{'unsure%':>9}")
    for case in args.cases.split(","):
        a, sa, b, sb = CASES[case]
        for name in (a, b):
            if name not in cache:
                cache[name] = load(args.corpora, name)
        train, judged = cache[a][sa], cache[b][sb]
        started = time.perf_counter()
        f = build_filter(**{**BEST, **({"context": {}} if args.accurate else {})}).fit(train)
        f.set_costs(CostMatrix.default())
        proba, familiarity = f.score(judged)
        y = np.array([m.label == "spam" for m in judged])
        p = proba[:, f.spam_column]
        auc = roc_auc(y, p)
        guard = f.guard
        stream = f.decide(proba, familiarity)
        alone = np.array([f.verdict_from(row, fam, alone=True)[0] for row, fam in zip(proba, familiarity)])
        plain = f.costs.decide(proba)
        rows = [("spamkit, a stream", stream), ("spamkit, each alone", alone), ("spamkit, no guard", plain)]
        for margin in [float(m) for m in args.margins.split(",") if m.strip()]:
            f.guard = FamiliarityGuard.from_dict({**guard.as_dict(), "margin": margin})
            rows.append((f"spamkit, alone, margin {margin:g}",
                         np.array([f.verdict_from(row, fam, alone=True)[0] for row, fam in zip(proba, familiarity)])))
        f.guard = guard
        if args.training_cut:
            is_spam, log_odds = cross_validated_log_odds(build_filter(**BEST), [train], folds=5)
            cut = spam_cut(is_spam, 1.0 / (1.0 + np.exp(-log_odds)))
            for label, decisions in rows[:2]:
                rows.append((f"{label.removeprefix('spamkit, ')}, cut {cut:.4f}",
                             np.where((decisions == "spam") & (p < cut), "unsure", decisions)))
        for label, decisions in rows:
            r = rates(y, decisions)
            print(f"{case:<34}{label:<28}{auc:>8.4f}{r['ham_misfiled']:>14.2f}{r['spam_caught']:>13.2f}"
                  f"{r['unsure']:>9.2f}", flush=True)
        if args.save is not None:
            args.save.mkdir(parents=True, exist_ok=True)
            np.savez(args.save / f"{case.replace(' ', '_').replace(',', '')}.npz", p_spam=p, familiarity=familiarity,
                     spam=y, floor=guard.floor, window_floor=guard.typical, band=np.array(DEFAULT_BAND))
        if exe is not None:
            s = bogofilter_scores(exe, train, judged)
            d = np.where(s >= 0.99, "spam", np.where(s >= 0.45, "unsure", "ham"))
            r = rates(y, d)
            print(f"{case:<34}{'bogofilter 1.2.5':<28}{roc_auc(y, s):>8.4f}{r['ham_misfiled']:>14.2f}"
                  f"{r['spam_caught']:>13.2f}{r['unsure']:>9.2f}", flush=True)
        print(f"{'':<34}({time.perf_counter() - started:.0f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
