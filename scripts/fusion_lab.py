#!/usr/bin/env python3
"""Every input a fusion could weigh, scored online on one stream, saved for offline study.

For each message of a corpus, in order, the scores it got *before it was learned* (the TREC
immediate-feedback protocol) from: the default stack's components (Fisher, multinomial NB and
online logistic regression log-odds, and the message's distinct tokens), the byte context
model's log-likelihood ratio per symbol (spamkit.models.context), and the byte 4-gram logistic
regression (spamkit.models.bytegrams). Saved as ``OUT/NAME.npz`` (``components``, ``context``,
``grams``, ``spam``), so that combiners can be compared on the same numbers in seconds
(``scripts/fusion.py``). With ``--bogofilter``, also bogofilter 1.2.5's spamicity of each message
before it learned it (``bogofilter``; compiled-in defaults, the same protocol): the peer the
fusion is measured against with the 4-gram regression.

    python scripts/fusion_lab.py NAME [--corpora DIR] [--out DIR] [--bogofilter]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ablation import CORPORA, DEFAULT_DIR, hashed_rows, load

from spamkit.features.bytekeys import context_keys, gram_rows
from spamkit.models.bytegrams import ByteGramLogistic
from spamkit.models.context import ByteContextModel
from spamkit.models.registry import make_model

STREAMS = {**CORPORA, "trec06p": "trec06p/trec06p.tar.gz", "ccert": "ccert2004/ccert2004.tar.gz"}
CONTEXT_BYTES = 3000


def collect(messages, rows) -> dict:
    stack = make_model("fisher-nb")
    context = ByteContextModel()
    grams = ByteGramLogistic()
    comps, ctx, grm, spam = [], [], [], []
    fitted = False
    for (_ident, label, raw, _), x in zip(messages, rows):
        keys = context_keys([raw], context.order, context.bits, CONTEXT_BYTES)
        slots = gram_rows([raw], grams.n_bytes, grams.bits)
        if fitted:
            comps.append(stack.component_log_odds(x)[0])
            ctx.append(float(context.mean_log_ratio(keys)[0]))
            grm.append(float(grams.decision_function(slots)[0]))
        else:
            comps.append(np.full(4, np.nan))
            ctx.append(np.nan)
            grm.append(np.nan)
        y = label == "spam"
        spam.append(y)
        stack.partial_fit(x, [label], classes=["ham", "spam"])
        context.partial_fit(keys, [y], classes=[False, True])
        grams.partial_fit(slots, [label], classes=["ham", "spam"])
        fitted = bool(stack.class_count_.min() > 0)
    return {"components": np.array(comps), "context": np.array(ctx), "grams": np.array(grm),
            "spam": np.array(spam)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("name", choices=sorted(STREAMS))
    ap.add_argument("--corpora", type=Path, default=DEFAULT_DIR)
    ap.add_argument("--out", type=Path, default=Path("fusion-scores"))
    ap.add_argument("--bogofilter", action="store_true", help="also bogofilter's online spamicities")
    args = ap.parse_args(argv)
    started = time.perf_counter()
    messages = load(args.corpora / STREAMS[args.name])
    rows = hashed_rows(messages, "mail", "binary")
    data = collect(messages, rows)
    if args.bogofilter:
        from _bogofilter import ensure_bogofilter, online_spamicities
        data["bogofilter"] = np.asarray(online_spamicities(ensure_bogofilter(install=False),
                                                           [(raw, label) for _, label, raw, _ in messages]))
    args.out.mkdir(parents=True, exist_ok=True)
    np.savez(args.out / f"{args.name}.npz", **data)
    print(f"{args.name}: {len(messages)} messages, {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
