#!/usr/bin/env python3
"""The learning rate of the default stack's logistic component, chosen on short and long streams.

For each stream (trec06p's 37,821 messages, trec07p-dev, CSDMC2010, Enron1-6, SMS, and
CCERT 2004-2005's 15,230 Chinese messages judged by their bodies alone as
``scripts/chinese_mail.py`` does) and each candidate rate, the default filter online
(``spamkit.evaluation.online_evaluate``, what ``spamkit online STREAM --rate R`` runs: the TREC
immediate-feedback protocol, corpus order), one stream per process, two at a time; its
(1-ROCA)% over the whole stream and over its first :data:`START` messages (the start of a
stream, where the counting filters are strongest), next to the published peers' on the same
messages in the same order: the byte 4-gram logistic regression alone (TREC 2007's winner,
``spamkit.models.bytegrams``; not on CCERT's bodies, whose headers are gone) and bogofilter
1.2.5 (from ``--scores DIR``, ``scripts/fusion_lab.py NAME --out DIR --bogofilter``; on CCERT
run here on the same bodies). Each rate's ratio to the best peer (values below FLOOR count as
FLOOR; where both are below it the goal is met whatever the ratio: "<fl"), its worst ratio
over the streams and their starts, and the Enron average; the choice is the rate whose worst
ratio is smallest (the rule of the defaults: never much worse than the best published filter
anywhere, at the start of a stream or at its end).

The default filter's stack weighs the byte 4-gram model as a side input (``grams={}``, what
``spamkit online`` runs); ``--no-grams`` measures the stack without it, as the rate was first
chosen. On CCERT's bodies the 4-gram model reads the same bodies (the message with its MIME
header fields only).

    python scripts/rate_choice.py [--rates 0.2,0.1,0.05] [--scores fusion-scores] [--jobs 2] [--no-grams]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from spamkit.bytekeys import gram_rows
from spamkit.corpus import Corpus
from spamkit.decision import DEFAULT_BAND
from spamkit.evaluation import online_evaluate
from spamkit.metrics import roc_auc, three_way_rates
from spamkit.models.bytegrams import ByteGramLogistic
from spamkit.models.stack import BEST_STACK
from spamkit.pipeline import make_analyzer

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bogofilter import ensure_bogofilter, online_spamicities  # noqa: E402  (standard library only)
from chinese_mail import MIME_NAMES, body_only  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared" / "corpora"
STREAMS = {"trec06p": "trec06p/trec06p.tar.gz", "trec": "trec07p-dev/trec07p-dev.tar.gz",
           "csdmc": "csdmc2010/csdmc2010.tar.gz",
           **{f"enron{i}": f"enron-spam/enron{i}.tar.gz" for i in range(1, 7)},
           "sms": "sms-spam-collection/SMSSpamCollection", "ccert": "ccert2004/ccert2004.tar.gz"}
FLOOR = 0.005
#: the start of a stream: its first messages
START = 3000


def roca(y, s) -> float:
    return 100.0 * (1.0 - roc_auc(y, s))


def both(y, s) -> tuple:
    """(1-ROCA)% over the whole stream and over its first START messages."""
    y, s = np.asarray(y), np.asarray(s, dtype=np.float64)
    return roca(y, s), roca(y[:START], s[:START])


def run_stream(name: str, path: Path, rates: list, scores: Path | None, grams: bool = True) -> dict:
    """The peers' and each rate's (whole, start) (1-ROCA)% on one stream, and each rate's
    default decision (ham misfiled, spam caught, % over the whole stream); ``grams``: the stack
    with the byte 4-gram model (the default) or without."""
    with Corpus(path) as corpus:
        messages = list(corpus)
    y = np.array([m.label == "spam" for m in messages])
    peers = {}
    if name == "ccert":
        analyzer = make_analyzer("mail", headers=MIME_NAMES, header_names=False, received_ips=False,
                                 cjk_bigrams=True)
        messages = [dataclasses.replace(m, raw=body_only(m.raw)) for m in messages]
        spamicities = online_spamicities(ensure_bogofilter(install=False), [(m.raw, m.label) for m in messages])
        peers["bogofilter"] = both(y, spamicities)
    else:
        analyzer = make_analyzer("mail")
        model = ByteGramLogistic().fit(gram_rows([m.raw for m in messages]), [m.label for m in messages])
        peers["4-gram LR"] = both(y, model.held_out_)
        saved = scores / f"{name}.npz" if scores is not None else None
        if saved is not None and saved.exists():
            data = np.load(saved)
            if "bogofilter" in data:
                peers["bogofilter"] = both(data["spam"], data["bogofilter"])
    runs = {}
    for rate in rates:
        result = online_evaluate(messages, analyzer, model="fisher-nb", stack={**BEST_STACK, "logistic": rate},
                                 grams={} if grams else None)
        z = np.asarray(result.scores, dtype=np.float64)
        p = 1.0 / (1.0 + np.exp(-np.clip(z, -700, 700)))
        rates_ = three_way_rates(y, p, *DEFAULT_BAND)
        runs[rate] = {"roca": both(y, z), "ham_misfiled": rates_["ham_misfiled"], "spam_caught": rates_["spam_caught"]}
    return {"peers": peers, "runs": runs}


def ratio_text(value: float, best: float) -> tuple:
    """(ratio or None where both are below FLOOR, its text)."""
    if max(value, best) < FLOOR:
        return None, "(<fl)"
    ratio = max(value, FLOOR) / max(best, FLOOR)
    return ratio, f"({ratio:.2f})"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpora", type=Path, default=SHARED)
    ap.add_argument("--rates", default="0.2,0.1,0.07,0.05,0.04,0.03")
    ap.add_argument("--streams", default=",".join(STREAMS))
    ap.add_argument("--scores", type=Path, default=None, help="fusion_lab.py's scores, for bogofilter's")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--no-grams", action="store_true", help="The stack without the byte 4-gram model.")
    args = ap.parse_args(argv)
    rates = [float(r) for r in args.rates.split(",")]
    names = args.streams.split(",")
    with ProcessPoolExecutor(args.jobs) as pool:
        futures = {n: pool.submit(run_stream, n, args.corpora / STREAMS[n], rates, args.scores, not args.no_grams) for n in names}
        results = {n: f.result() for n, f in futures.items()}
    print(f"(1-ROCA)% online over the whole stream, in brackets the ratio to the best peer ('<fl': both below "
          f"{FLOOR}), then the default decision's ham misfiled / spam caught (%); second line: the first {START} messages")
    print(f"{'stream':<9} {'peers':<40} " + " ".join(f"{'rate ' + str(r):>25}" for r in rates))
    worst = {r: (0.0, "") for r in rates}
    for n in names:
        peers, runs = results[n]["peers"], results[n]["runs"]
        for part, label in ((0, n), (1, f"  first {START}")):
            best = min(v[part] for v in peers.values())
            peer_text = ", ".join(f"{k} {v[part]:.4f}" for k, v in peers.items())
            cells = []
            for r in rates:
                value = runs[r]["roca"][part]
                ratio, text = ratio_text(value, best)
                if ratio is not None:
                    worst[r] = max(worst[r], (ratio, label.strip() if part == 0 else f"{n}, first {START}"))
                decision = f" {runs[r]['ham_misfiled']:.2f}/{runs[r]['spam_caught']:.1f}" if part == 0 else ""
                cells.append(f"{value:.4f} {text}{decision}")
            print(f"{label:<9} {peer_text:<40} " + " ".join(f"{c:>25}" for c in cells))
    enron = [n for n in names if n.startswith("enron")]
    if enron:
        print("Enron average: " + ", ".join(
            f"{np.mean([results[n]['runs'][r]['roca'][0] for n in enron]):.4f} ({r})" for r in rates))
    for r in rates:
        print(f"rate {r}: worst ratio to the best peer {worst[r][0]:.3f} ({worst[r][1]})")
    choice = min(rates, key=lambda r: worst[r][0])
    print(f"choice (the smallest worst ratio): {choice}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
