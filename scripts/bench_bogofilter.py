#!/usr/bin/env python3
"""spamkit's default filter against bogofilter on the same TREC stream, online, immediate feedback.

spamkit's filter is the one ``spamkit online CORPUS`` runs: the stack (Robinson/Fisher,
multinomial NB, logistic regression on the mail tokens) with the byte 4-gram regression as
its side input, as ``spamkit.filterfile.config.model_default`` says; ``--no-byte-grams`` leaves
the 4-grams out, as the command's flag does.

The TREC spam-track protocol (Cormack & Lynam 2005): messages in index order; each is
classified, then the filter is told its true label and learns it (train on everything).
Both filters see the same raw bytes in the same order in one run, and both are scored by
the same code (``spamkit.decide.metrics.trec_measures``): (1-ROCA)% from each filter's score,
and hm% / sm% / lam% at the score's midpoint (bogofilter spamicity 0.5, spamkit log-odds 0).

bogofilter runs with its compiled-in defaults (``-C``: no configuration file is read), a
fresh word list in a temporary folder, scores printed to 16 digits (``-TT``), and is
trained with ``-s`` / ``-n`` after each message. Before its word list exists it cannot
score (exit status 3); those first messages get 0.5, as spamkit's do before it has seen
both classes. It is a separate process per call, so its messages/s include process start-up.

bogofilter is installed by this script's setup when it is missing (``apt-get install -y
bogofilter``, with sudo when not root); it is never a dependency of spamkit or its tests.

    python scripts/bench_bogofilter.py [--corpus ../shared/corpora/trec07p-dev/trec07p-dev.tar.gz]
                                       [--limit N] [--no-install] [--baselines]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from spamkit.corpus import Corpus
from spamkit.common.names import STACK_MODEL
from spamkit.filterfile.config import model_default
from spamkit.jobs.evaluation import online_evaluate
from spamkit.decide.metrics import trec_measures
from spamkit import make_analyzer

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bogofilter import ensure_bogofilter, online_spamicities  # standard library only

DEFAULT_CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpora" / "trec07p-dev" / "trec07p-dev.tar.gz"


def bogofilter_version(exe: str) -> str:
    out = subprocess.run([exe, "-V"], capture_output=True, text=True)
    first = (out.stdout or out.stderr).strip().splitlines()
    return first[0] if first else "bogofilter"


def run_bogofilter(exe: str, messages) -> tuple[np.ndarray, float]:
    """Online: score with ``-TT``, then register as spam (``-s``) or ham (``-n``)."""
    started = time.perf_counter()
    scores = online_spamicities(exe, ((m.raw, m.label) for m in messages))
    return np.asarray(scores), time.perf_counter() - started


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--limit", type=int, default=None, help="Only the first N messages.")
    parser.add_argument("--no-install", action="store_true", help="Do not apt-get install bogofilter.")
    parser.add_argument("--no-byte-grams", action="store_true",
                        help="spamkit's stack without its byte 4-gram regression (spamkit online --no-byte-grams).")
    parser.add_argument("--baselines", action="store_true",
                        help="Also run spamkit's Fisher alone and multinomial NB, with mail and with word tokens.")
    args = parser.parse_args()
    if not args.corpus.exists():
        sys.exit(f"{args.corpus}: no such corpus (see corpora/README.md for where to get trec07p)")
    with Corpus(args.corpus) as corpus:
        messages = list(corpus)
    if args.limit:
        messages = messages[:args.limit]
    gold = np.array([m.label == "spam" for m in messages])
    print(f"stream: {args.corpus.name}, {len(messages)} messages ({int((~gold).sum())} ham, {int(gold.sum())} spam), "
          "online, immediate feedback, train on everything")

    rows = []
    grams = bool(model_default(STACK_MODEL, "grams", None, False)) and not args.no_byte_grams
    best = online_evaluate(messages, make_analyzer("mail"), model=STACK_MODEL, grams={} if grams else None)
    rows.append((f"spamkit default (fisher-nb{' + 4-grams' if grams else ''})", best.measures,
                 len(messages) / best.seconds))
    if args.baselines:
        for name, model, tokens in (("spamkit fisher alone, mail tokens", "fisher", "mail"),
                                    ("spamkit fisher alone, word tokens", "fisher", "words"),
                                    ("spamkit multinomial NB, mail tokens", "multinomial", "mail"),
                                    ("spamkit multinomial NB, word tokens", "multinomial", "words")):
            r = online_evaluate(messages, make_analyzer(tokens), model=model)
            rows.append((name, r.measures, len(messages) / r.seconds))

    exe = ensure_bogofilter(not args.no_install)
    if exe is None:
        print("bogofilter is not installed and could not be installed (apt-get install bogofilter); "
              "spamkit's figures only:")
    else:
        scores, seconds = run_bogofilter(exe, messages)
        rows.append((f"{bogofilter_version(exe)} (defaults)", trec_measures(gold, scores, 0.5),
                     len(messages) / seconds))

    print(f"\n{'filter':<44} {'(1-ROCA)%':>10} {'hm%':>7} {'sm%':>7} {'lam%':>7} {'msg/s':>8}")
    for name, m, speed in rows:
        print(f"{name:<44} {m['roca_pct']:>10.4f} {m['hm_pct']:>7.2f} {m['sm_pct']:>7.2f} {m['lam_pct']:>7.2f} "
              f"{speed:>8.0f}")
    if exe is not None:
        ours, theirs = rows[0][1]["roca_pct"], rows[-1][1]["roca_pct"]
        verdict = "lower (better)" if ours < theirs else "NOT lower"
        print(f"\nspamkit default / bogofilter (1-ROCA)%: {ours / theirs:.2f}  -> spamkit's area above the ROC "
              f"curve is {verdict} than bogofilter's")


if __name__ == "__main__":
    main()
