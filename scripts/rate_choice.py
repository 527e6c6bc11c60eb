#!/usr/bin/env python3
"""The learning rate of the default stack's logistic component, chosen on short and long streams.

For each stream (trec06p's 37,821 messages, trec07p-dev, CSDMC2010, Enron1-6, SMS, and
CCERT 2004-2005's 15,230 Chinese messages judged by their bodies alone as
``scripts/chinese_mail.py`` does) and each candidate rate, the default filter online
(``spamkit.jobs.evaluation.online_evaluate``, what ``spamkit online STREAM --rate R`` runs: the TREC
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
anywhere, at the start of a stream or at its end) -- within the noise: a rate whose own worst
window does not score distinguishably worse than that rate's run on the same messages (a paired
bootstrap of the messages, :func:`noise_aware_choice`) is tied with it, and the tied rate with
the best geometric mean ratio over the whole streams is chosen.

The default filter's stack weighs the byte 4-gram model as a side input (``grams={}``, what
``spamkit online`` runs); ``--no-grams`` measures the stack without it, as the rate was first
chosen. On CCERT's bodies the 4-gram model reads the same bodies (the message with its MIME
header fields only).

    python scripts/rate_choice.py [--rates 0.2,0.1,0.05] [--scores fusion-scores] [--jobs 2] [--no-grams] [--save DIR] [--reuse DIR]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from spamkit.features.bytekeys import gram_rows
from spamkit.corpus import Corpus
from spamkit.decide.decision import DEFAULT_BAND
from spamkit.jobs.evaluation import online_evaluate
from spamkit.jobs.reports import both_class_resamples
from spamkit.decide.metrics import three_way_rates
from spamkit.decide.curves import roc_auc
from spamkit.models.bytegrams import ByteGramLogistic
from spamkit.models.stack import BEST_STACK
from spamkit.common.names import DEFAULT_RATE
from spamkit import make_analyzer

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bogofilter import ensure_bogofilter, online_spamicities  # standard library only
from chinese_mail import MIME_NAMES, body_only

SHARED = Path(__file__).resolve().parents[2] / "shared" / "corpora"
STREAMS = {"trec06p": "trec06p/trec06p.tar.gz", "trec": "trec07p-dev/trec07p-dev.tar.gz",
           "csdmc": "csdmc2010/csdmc2010.tar.gz",
           **{f"enron{i}": f"enron-spam/enron{i}.tar.gz" for i in range(1, 7)},
           "sms": "sms-spam-collection/SMSSpamCollection", "ccert": "ccert2004/ccert2004.tar.gz"}
FLOOR = 0.005
#: the start of a stream: its first messages
START = 3000
#: resamples of the paired bootstrap that tells rates apart (noise_aware_choice)
BOOTSTRAP = 1000
#: how much better (relative) the geometric mean ratio of a tied rate must be to replace the default's
MARGIN = 0.01


def roca(y, s) -> float:
    return 100.0 * (1.0 - roc_auc(y, s))


def both(y, s) -> tuple:
    """(1-ROCA)% over the whole stream and over its first START messages."""
    y, s = np.asarray(y), np.asarray(s, dtype=np.float64)
    return roca(y, s), roca(y[:START], s[:START])


def run_stream(name: str, path: Path, rates: list, scores: Path | None, grams: bool = True,
               save: Path | None = None, reuse: Path | None = None) -> dict:
    """The peers' and each rate's (whole, start) (1-ROCA)% on one stream, and each rate's
    default decision (ham misfiled, spam caught, % over the whole stream); ``grams``: the stack
    with the byte 4-gram model (the default) or without; ``save``: a folder where each rate's
    online log-odds are kept with the labels (``NAME-RATE.npz``: ``spam``, ``log_odds``); ``reuse``:
    such a folder, whose runs are read instead of run again (the same numbers, in seconds)."""
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
        kept = reuse / f"{name}-{rate}.npz" if reuse is not None else None
        if kept is not None and kept.exists():
            data = np.load(kept)
            if not np.array_equal(data["spam"].astype(bool), y):
                raise SystemExit(f"{kept}: saved over other messages than {path}'s")
            z = data["log_odds"].astype(np.float64)
        else:
            result = online_evaluate(messages, analyzer, model="fisher-nb", stack={**BEST_STACK, "logistic": rate},
                                     grams={} if grams else None)
            z = np.asarray(result.scores, dtype=np.float64)
        if save is not None:
            save.mkdir(parents=True, exist_ok=True)
            np.savez(save / f"{name}-{rate}.npz", spam=y, log_odds=z)
        p = 1.0 / (1.0 + np.exp(-np.clip(z, -700, 700)))
        rates_ = three_way_rates(y, p, *DEFAULT_BAND)
        runs[rate] = {"roca": both(y, z), "ham_misfiled": rates_["ham_misfiled"], "spam_caught": rates_["spam_caught"],
                      "z": z.astype(np.float32)}
    return {"peers": peers, "runs": runs, "spam": y}


def paired_difference(y, a, b, n_boot: int = BOOTSTRAP, seed: int = 0) -> tuple[float, float]:
    """The 95% percentile interval of (1-ROCA)%(a) - (1-ROCA)%(b) over messages resampled with
    replacement, the same resample for both (paired: the two runs judged the same messages)."""
    y = np.asarray(y, dtype=bool)
    diffs = [100.0 * (roc_auc(y[i], b[i]) - roc_auc(y[i], a[i])) for i in both_class_resamples(y, n_boot, seed)]
    low, high = np.quantile(diffs, [0.025, 0.975])
    return float(low), float(high)


def noise_aware_choice(results: dict, rates: list, worst: dict) -> tuple[float, list, dict]:
    """The rule: the rate with the smallest worst ratio, r*, unless other rates are not
    distinguishably worse -- on the window where a rate's own worst ratio falls, the paired
    bootstrap interval of its (1-ROCA)% minus r*'s contains 0 -- in which case the tied rate
    with the smallest geometric mean of its ratios over the whole streams is chosen (the
    typical stream breaks a tie the worst case cannot). Returns (choice, the tied rates, each
    rate's interval). A tie the whole streams break by less than :data:`MARGIN` keeps today's
    default rate (a default does not move on noise)."""
    best = min(rates, key=lambda r: worst[r][0])
    intervals, tied = {}, [best]
    for r in rates:
        if r == best or not worst[r][1]:
            continue
        name, part = worst[r][2]
        y = results[name]["spam"]
        window = slice(None) if part == 0 else slice(0, START)
        intervals[r] = paired_difference(y[window], results[name]["runs"][r]["z"][window],
                                         results[name]["runs"][best]["z"][window])
        if intervals[r][0] <= 0.0:
            tied.append(r)

    def typical(r):
        ratios = []
        for _name, res in results.items():
            best_peer = min(v[0] for v in res["peers"].values())
            ratio, _ = ratio_text(res["runs"][r]["roca"][0], best_peer)
            if ratio is not None:
                ratios.append(ratio)
        return float(np.exp(np.mean(np.log(ratios)))) if ratios else 1.0

    means = {r: typical(r) for r in rates}
    choice = min(tied, key=lambda r: means[r])
    if DEFAULT_RATE in tied and means[choice] > (1.0 - MARGIN) * means[DEFAULT_RATE]:
        choice = DEFAULT_RATE        # the typical streams cannot tell them apart either: no change
    return choice, tied, {"intervals": intervals, "typical": means}


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
    ap.add_argument("--save", type=Path, default=None, help="a folder for each run's online log-odds")
    ap.add_argument("--reuse", type=Path, default=None, help="a --save folder: its runs are read, not run again")
    args = ap.parse_args(argv)
    rates = [float(r) for r in args.rates.split(",")]
    names = args.streams.split(",")
    with ProcessPoolExecutor(args.jobs) as pool:
        futures = {n: pool.submit(run_stream, n, args.corpora / STREAMS[n], rates, args.scores, not args.no_grams,
                                 args.save, args.reuse) for n in names}
        results = {n: f.result() for n, f in futures.items()}
    print(f"(1-ROCA)% online over the whole stream, in brackets the ratio to the best peer ('<fl': both below "
          f"{FLOOR}), then the default decision's ham misfiled / spam caught (%); second line: the first {START} messages")
    print(f"{'stream':<9} {'peers':<40} " + " ".join(f"{'rate ' + str(r):>25}" for r in rates))
    worst = {r: (0.0, "", None) for r in rates}
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
                    worst[r] = max(worst[r], (ratio, label.strip() if part == 0 else f"{n}, first {START}", (n, part)))
                decision = f" {runs[r]['ham_misfiled']:.2f}/{runs[r]['spam_caught']:.1f}" if part == 0 else ""
                cells.append(f"{value:.4f} {text}{decision}")
            print(f"{label:<9} {peer_text:<40} " + " ".join(f"{c:>25}" for c in cells))
    enron = [n for n in names if n.startswith("enron")]
    if enron:
        print("Enron average: " + ", ".join(
            f"{np.mean([results[n]['runs'][r]['roca'][0] for n in enron]):.4f} ({r})" for r in rates))
    for r in rates:
        print(f"rate {r}: worst ratio to the best peer {worst[r][0]:.3f} ({worst[r][1]})")
    strict = min(rates, key=lambda r: worst[r][0])
    print(f"the smallest worst ratio: {strict}")
    choice, tied, detail = noise_aware_choice(results, rates, worst)
    for r, (low, high) in detail["intervals"].items():
        print(f"  rate {r} minus rate {strict} on rate {r}'s worst window, (1-ROCA)%: 95% paired bootstrap interval "
              f"{low:+.4f} to {high:+.4f}" + ("  (not distinguishable)" if low <= 0.0 else ""))
    print("geometric mean ratio to the best peer over the whole streams: "
          + ", ".join(f"{detail['typical'][r]:.4f} ({r})" for r in rates))
    print(f"choice (the smallest worst ratio; ties within the noise broken by the whole streams, by at least "
          f"{MARGIN:.0%} against today's {DEFAULT_RATE}): {choice}"
          + (f" (tied: {', '.join(map(str, tied))})" if len(tied) > 1 else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
