#!/usr/bin/env python3
"""TREC 2007's winning method, re-implemented as published, next to spamkit's default on the same streams.

The method (issue "Beat the best published spam filters..."; G. V. Cormack, "University of
Waterloo Participation in the TREC 2007 Spam Track", TREC 2007, and Goodman & Yih, "Online
discriminative spam filter training", CEAS 2006): an online logistic regression whose
features are the *distinct* byte 4-grams of the first ``--bytes`` bytes of the raw message,
headers included (binary features, no normalisation), hashed into 2**``--bits`` weights; each
message is scored, then learned with one gradient step of rate ``--rate`` whatever the score
(not only on errors). The score is the log-odds w·x.

Streams are the raw-mail corpora in TREC layout (index order = delivery order); immediate
feedback. Reported: (1-ROCA)%, 100 (1 - AUC) over the whole stream, by ``spamkit.decide.curves.roc_auc``,
and with ``--spamkit`` the same for ``spamkit online`` (the default filter) on the same stream
in the same run, from its TREC result file. This is a reference for choosing defaults, not a
spamkit model (yet): the issue asks for it as one.

    python scripts/waterloo_logistic.py [--corpora ../shared/corpora] [--streams trec07p-dev,csdmc2010]
        [--bytes 2500] [--bits 22] [--rate 0.002] [--spamkit]

The hashing is this script's own (a multiplicative hash of the 32-bit 4-gram, its top bits);
the paper's hash is not specified beyond "hashed", so figures may differ slightly from theirs.
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

from spamkit.corpus import Corpus
from spamkit.decide.curves import roc_auc

STREAMS = {"trec07p-dev": "trec07p-dev/trec07p-dev.tar.gz", "csdmc2010": "csdmc2010/csdmc2010.tar.gz",
           "trec06p": "trec06p/trec06p.tar.gz", **{f"enron{i}": f"enron-spam/enron{i}.tar.gz" for i in range(1, 7)}}
#: Knuth's multiplicative constant (2**32 / golden ratio): spreads 4-grams over the table's top bits
_MULTIPLIER = np.uint32(2654435761)


def fourgram_slots(raw: bytes, n_bytes: int, bits: int) -> np.ndarray:
    """The distinct table slots of the byte 4-grams of ``raw[:n_bytes]``.

    >>> fourgram_slots(b"abcdab", 100, 8).size       # abcd, bcda, cdab: three 4-grams
    3
    """
    data = np.frombuffer(raw[:n_bytes], dtype=np.uint8).astype(np.uint32)
    if data.size < 4:
        return np.zeros(0, dtype=np.int64)
    grams = (data[:-3] << 24) | (data[1:-2] << 16) | (data[2:-1] << 8) | data[3:]
    return np.unique((grams * _MULTIPLIER) >> np.uint32(32 - bits)).astype(np.int64)


def run_stream(messages, n_bytes: int, bits: int, rate: float) -> tuple[np.ndarray, np.ndarray]:
    """Online: score each message (log-odds), then learn it. Returns (scores, labels 1 = spam)."""
    w = np.zeros(1 << bits)
    scores, labels = [], []
    for msg in messages:
        slots = fourgram_slots(msg.raw, n_bytes, bits)
        z = float(w[slots].sum())
        y = 1.0 if msg.label == "spam" else 0.0
        p = 1.0 / (1.0 + np.exp(-z)) if z > -700 else 0.0
        w[slots] += rate * (y - p)                    # one gradient step of the log-loss, binary features
        scores.append(z)
        labels.append(y)
    return np.asarray(scores), np.asarray(labels)


def spamkit_default(corpus: Path) -> float:
    """(1-ROCA)% of ``spamkit online`` (the default filter) on the same stream, from its TREC file."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "results.txt"
        subprocess.run([sys.executable, "-m", "spamkit", "online", str(corpus), "-o", str(out)], check=True,
                       capture_output=True)
        rows = [line.split() for line in out.read_text().splitlines() if line.strip()]
    scores = np.array([float(r[2]) for r in rows])
    labels = np.array([1.0 if r[3] == "spam" else 0.0 for r in rows])
    return 100 * (1 - roc_auc(labels, scores))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpora", type=Path, default=Path(os.environ.get("SPAMKIT_CORPORA", "../shared/corpora")))
    ap.add_argument("--streams", default="trec07p-dev,csdmc2010")
    ap.add_argument("--bytes", type=int, default=2500)
    ap.add_argument("--bits", type=int, default=22)
    ap.add_argument("--rate", type=float, default=0.002)
    ap.add_argument("--spamkit", action="store_true", help="also run spamkit online (the default) on each stream")
    args = ap.parse_args(argv)
    print(f"byte 4-gram online logistic regression: first {args.bytes} bytes, 2**{args.bits} weights, "
          f"rate {args.rate}, every message learned")
    print(f"{'stream':<14}{'messages':>9}{'4-gram LR':>12}{'spamkit':>10}{'seconds':>9}")
    for name in args.streams.split(","):
        path = args.corpora / STREAMS[name]
        if not path.exists():
            sys.exit(f"waterloo_logistic: {path} not found (use --corpora)")
        started = time.perf_counter()
        with Corpus(path) as corpus:
            scores, labels = run_stream(corpus, args.bytes, args.bits, args.rate)
        ours = 100 * (1 - roc_auc(labels, scores))
        seconds = time.perf_counter() - started
        default = f"{spamkit_default(path):10.4f}" if args.spamkit else f"{'-':>10}"
        print(f"{name:<14}{len(labels):>9}{ours:>12.4f}{default}{seconds:>9.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
