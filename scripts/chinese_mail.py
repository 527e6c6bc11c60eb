#!/usr/bin/env python3
"""Chinese mail on its bodies alone: do Chinese words become tokens? spamkit next to bogofilter.

The CCERT corpus (``../shared/corpora/ccert2004``: 15,230 raw Chinese messages, GB2312/GBK
bodies) is easy to rank from its headers (every ham reached the same server), so this script
judges each message by its body alone and the three MIME fields that say how to decode it
(MIME-Version, Content-Type, Content-Transfer-Encoding): spamkit's analyzer reads only those
fields (no other field, no header names, no Received addresses; the message is parsed whole,
so its body is decoded by its charset), and bogofilter is given each message with every other
field removed. Both see the same text. Online, in the corpus's order, immediate feedback (the TREC protocol);
(1-ROCA)% by ``spamkit.decide.curves.roc_auc`` for every filter in the same run:

* spamkit's default filter (the stack with its byte 4-gram regression, which reads the same
  bodies: each message's raw bytes are replaced by the text bogofilter is given), Han text as
  character bigrams (``cjk_bigrams``, the default of ``--tokens mail``);
* the stack without the 4-grams (``--no-byte-grams``), with the bigrams and without them (a run
  of Han characters is one token): what the tokens alone do;
* bogofilter 1.2.5 with its compiled-in defaults (``-C``), learning every message.

    python scripts/chinese_mail.py [--corpora ../shared/corpora] [--limit N] [--no-bogofilter]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bogofilter import ensure_bogofilter, online_spamicities

from spamkit.corpus import Corpus
from spamkit.common.names import STACK_MODEL
from spamkit.jobs.evaluation import online_evaluate
from spamkit.decide.curves import roc_auc
from spamkit.text import make_analyzer

MIME_NAMES = ("mime-version", "content-type", "content-transfer-encoding")
MIME_FIELDS = re.compile(rb"^(" + "|".join(MIME_NAMES).encode() + rb"):", re.IGNORECASE)


def body_only(raw: bytes) -> bytes:
    """The message with its header fields other than the MIME ones removed (folded lines kept with
    their field)."""
    head, sep, body = raw.partition(b"\n\n")
    if not sep:
        head, sep, body = raw.partition(b"\r\n\r\n")
    kept, keep = [], False
    for line in head.splitlines(keepends=True):
        if line[:1] in (b" ", b"\t"):
            if keep:
                kept.append(line)
            continue
        keep = bool(MIME_FIELDS.match(line))
        if keep:
            kept.append(line)
    return b"".join(kept) + b"\n" + body


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpora", type=Path, default=Path(os.environ.get("SPAMKIT_CORPORA", "../shared/corpora")))
    ap.add_argument("--limit", type=int, default=None, help="only the first N messages")
    ap.add_argument("--no-bogofilter", action="store_true")
    args = ap.parse_args(argv)
    with Corpus(args.corpora / "ccert2004" / "ccert2004.tar.gz") as corpus:
        messages = list(corpus)[:args.limit]
    y = np.array([m.label == "spam" for m in messages])
    print(f"ccert2004, bodies alone: {len(messages)} messages ({int(y.sum())} spam), online, immediate feedback")
    print(f"{'filter':<46}{'(1-ROCA)%':>10}{'seconds':>9}")
    bodies = [dataclasses.replace(m, raw=body_only(m.raw)) for m in messages]
    for label, bigrams, grams in (("spamkit default (+ byte 4-grams), Han bigrams", True, True),
                                  ("spamkit, no 4-grams, Han as character bigrams", True, False),
                                  ("spamkit, no 4-grams, a Han run as one token", False, False)):
        analyzer = make_analyzer("mail", headers=MIME_NAMES, header_names=False, received_ips=False,
                                 cjk_bigrams=bigrams)
        started = time.perf_counter()
        result = online_evaluate(bodies, analyzer, model=STACK_MODEL, grams={} if grams else None)
        print(f"{label:<46}{result.measures['roca_pct']:>10.4f}{time.perf_counter() - started:>9.0f}", flush=True)
    if not args.no_bogofilter:
        exe = ensure_bogofilter(install=False)
        started = time.perf_counter()
        scores = online_spamicities(exe, [(m.raw, m.label) for m in bodies])
        print(f"{'bogofilter 1.2.5':<46}{100 * (1 - roc_auc(y, scores)):>10.4f}"
              f"{time.perf_counter() - started:>9.0f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
