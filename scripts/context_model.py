#!/usr/bin/env python3
"""A byte-level context model per class (compression-based filtering) next to spamkit's default
filter, alone and as a fourth input of the default stack's combiner, on Enron1-6 under the
protocol of Metsis et al. (2006) that ``reproduce_metsis.py`` reproduces.

Protocol: messages in arrival order, batches of 100; each batch after the first is classified
by filters trained on all earlier batches, at P(spam) > 0.5; counts pooled over all classified
messages. Printed per dataset and on average: spam recall, ham recall, "balanced" (the best
min(spam recall, ham recall) any threshold reaches: how well the scores rank, whatever the
cut) and the ROC AUC, for

- the default filter (``FisherNBStack(**BEST_STACK)`` on ``Analyzer.mail()`` tokens, as in
  ``reproduce_metsis.py``);
- the context model alone (:class:`spamkit.models.context.ByteContextModel` on the first
  ``--max-bytes`` bytes of the Subject, a line break and the body text), scored by its
  log-likelihood ratio per symbol;
- the stack with the context model: the default stack with one side input
  (``FisherNBStack(side_inputs=1)``), whose combiner also weighs the context model's ratio per
  symbol, fitted on out-of-fold scores of the training batches (the stack's own folds,
  ``fold_assignment``; the context model of a fold is the total counts minus the fold's,
  exactly, since every statistic is a count).

With ``--online`` instead, the TREC online protocol (immediate feedback, every message scored
before it is learned) on the corpora named (trec07p-dev, CSDMC2010, Enron1-6, SMS; the
corpora of ``scripts/ablation.py``), the default filter as ``spamkit online`` runs it (hashed
mail tokens, its combiner refitted every 100 messages on the scores messages got before they
were learned) next to the same stack whose combiner also reads a context model's ratio per
symbol, one column per ``--variants`` entry SOURCE:ORDER:MAX_BYTES:BITS: the model of the
Subject and body text ("text") or of the raw message, headers included ("raw"), its order, the
bytes it reads of each message and its table size (2**BITS slots a class). (1-ROCA)% and, at
the default three-way decision, ham misfiled %; each configuration's worst regret.

    python scripts/context_model.py [--corpora ../shared/corpora] [--order 6] [--beta 8]
                                    [--bits 24] [--max-bytes 3000] [--datasets 1 2 3 4 5 6]
    python scripts/context_model.py --online trec,csdmc,enron1,...,sms [--variants raw:7:3000:22,...]

With ``--speed``: what the context model costs a message, next to the default filter's whole
verdict (``SpamFilter.verdict``: parsing, tokens, the stack, the decision) on the same
messages in the same run: trec07p-dev, one message at a time, each scored then learned by
the context model (the raw message, ``--order``, ``--bits``, ``--max-bytes``), then every
message judged by the default filter trained on the corpus; ``--rounds`` times, the ratios
printed.

    python scripts/context_model.py --speed [--rounds 2]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from spamkit.features.bytekeys import context_keys
from spamkit.corpus import Corpus
from spamkit.decide.decision import DEFAULT_BAND
from spamkit.jobs.evaluation import online_model
from spamkit.features.vectorizer import Vectorizer
from spamkit.parse.message import parse_message
from spamkit.decide.metrics import three_way_rates
from spamkit.decide.curves import roc_auc
from spamkit.models import FisherNBStack
from spamkit.models.context import ByteContextModel
from spamkit.models.stack import BEST_STACK
from spamkit.text import Analyzer

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ablation import CORPORA, RESOLUTION, hashed_rows, load

NAMES = ("default filter", "context model alone", "default + context model")


def balanced(truth, scores) -> float:
    """The best min(spam recall, ham recall) of any threshold on ``scores`` (%)."""
    order = np.argsort(-scores, kind="stable")
    t = truth[order]
    spam_caught = np.cumsum(t) / max(t.sum(), 1)                 # calling the top i+1 spam
    ham_kept = 1 - np.cumsum(~t) / max((~t).sum(), 1)
    return 100 * float(np.max(np.minimum(spam_caught, ham_kept)))


def held_out_context(model: ByteContextModel, keys, codes, stack: FisherNBStack) -> np.ndarray:
    """Out-of-fold ratios per symbol of the texts of ``keys`` (all learned by ``model``): each
    fold scored by the counts of the others, by the folds ``stack`` fits its combiner on."""
    k, fold = stack.fold_assignment(codes)
    if k < 2:
        return np.zeros(keys.n_texts)
    # each fold unlearned, scored and learned back: exact, and what SpamFilter.fit does
    return model.held_out_mean_log_ratio(keys, model.classes_[codes], fold)


def dataset(path: Path, order: int, bits: int, max_bytes: int):
    """A dataset in arrival order: (is spam, class codes, the mail tokens' presence matrix, the
    context model's keys of each message's text)."""
    with Corpus(path) as corpus:
        msgs = list(corpus)
    y = np.array([m.label == "spam" for m in msgs])
    parsed = [parse_message(m.raw, m.kind) for m in msgs]
    X = Vectorizer("binary").fit_transform(Analyzer.mail()(p) for p in parsed)
    keys = context_keys([text_of(p) for p in parsed], order=order, bits=bits, max_bytes=max_bytes)
    return y, y.astype(np.int64), X, keys


def run_dataset(path: Path, args) -> dict:
    y, codes, X, keys = dataset(path, args.order, args.bits, args.max_bytes)
    batch = args.batch
    context = ByteContextModel(order=args.order, beta=args.beta, bits=args.bits)
    context.partial_fit(keys.rows(np.arange(batch)), y[:batch], classes=[False, True])
    scores = {name: [] for name in NAMES}
    for start in range(batch, len(y), batch):
        stop = min(start + batch, len(y))
        test = keys.rows(np.arange(start, stop))
        default = FisherNBStack(**BEST_STACK).fit(X[:start], y[:start])
        lp = default.predict_log_proba(X[start:stop])
        scores[NAMES[0]].append(lp[:, 1] - lp[:, 0])
        ratio = context.mean_log_ratio(test)
        scores[NAMES[1]].append(ratio)
        stack = FisherNBStack(**BEST_STACK, side_inputs=1)
        held_out = held_out_context(context, keys.rows(np.arange(start)), codes[:start], stack)
        lp = stack.fit(X[:start], y[:start], side=held_out).predict_log_proba(X[start:stop], side=ratio)
        scores[NAMES[2]].append(lp[:, 1] - lp[:, 0])
        context.partial_fit(test, y[start:stop])
    truth = y[batch:]
    out = {}
    for name, parts in scores.items():
        s = np.concatenate(parts)
        rates = three_way_rates(truth, 1 / (1 + np.exp(-np.clip(s, -700, 700))), *DEFAULT_BAND)
        unsure = (rates["ham_unsure"] * rates["n_ham"] + rates["spam_unsure"] * rates["n_spam"]) / len(truth)
        out[name] = (100 * np.mean(s[truth] > 0), 100 * np.mean(s[~truth] <= 0), balanced(truth, s),
                     roc_auc(truth, s), rates["spam_caught"], rates["ham_misfiled"], unsure)
    return out


def text_of(msg) -> bytes:
    """What the context model reads of a parsed message: its Subject, a line break, its body text."""
    return ((msg.subject or "") + "\n" + (msg.body or "")).encode("utf-8", "surrogateescape")


def parse_variant(spec: str) -> tuple:
    """``SOURCE:ORDER:MAX_BYTES:BITS`` (SOURCE: text or raw) -> (source, order, max_bytes, bits)."""
    try:
        source, order, max_bytes, bits = spec.split(":")
        if source not in ("text", "raw"):
            raise ValueError
        return source, int(order), int(max_bytes), int(bits)
    except ValueError:
        raise SystemExit(f"a context variant is SOURCE:ORDER:MAX_BYTES:BITS with SOURCE text or raw, got {spec!r}") from None


def online_corpus(messages, variants, beta: float) -> list:
    """One online pass: (1-ROCA)% and ham misfiled % of the default filter, then of the stack
    with each context variant as a fifth combiner input."""
    rows = hashed_rows(messages, "mail", "binary")
    stack = online_model("fisher-nb")
    # one stack with a side input per variant, for its combiner only (the counts are the default's)
    sided = [FisherNBStack(**stack.get_params()).set_params(side_inputs=1) for _ in variants]
    contexts = [ByteContextModel(order=order, beta=beta, bits=bits) for _, order, _, bits in variants]
    history, ratios, labels = [], [], []
    refitted = False
    scores = [[] for _ in range(len(variants) + 1)]
    fitted = False
    for (_, label, raw, msg), x in zip(messages, rows):
        is_spam = label == "spam"
        keys = [context_keys([raw if source == "raw" else text_of(msg)], order, bits, max_bytes)
                for source, order, max_bytes, bits in variants]
        if fitted:
            components = stack.component_log_odds(x)
            base = stack.combined_log_odds(components)[0]
            r = [c.mean_log_ratio(k)[0] for c, k in zip(contexts, keys)]
            scores[0].append(base)                  # every score before the message's own refit
            for j, s in enumerate(sided):
                scores[j + 1].append(float(s.combined_log_odds(components, [r[j]])[0]) if refitted else base)
            history.append(components[0])
            ratios.append(r)
            labels.append(is_spam)
            if len(labels) % 100 == 0 and 0 < sum(labels) < len(labels):
                stack.fit_combiner(np.array(history), np.array(labels))
                for j, s in enumerate(sided):
                    s.fit_combiner(np.array(history), np.array(labels), side=np.array(ratios)[:, j])
                refitted = True
        else:
            for s in scores:
                s.append(0.0)
        stack.partial_fit(x, [label], classes=["ham", "spam"])
        for c, k in zip(contexts, keys):
            c.partial_fit(k, [is_spam], classes=[False, True])
        fitted = bool(stack.class_count_.min() > 0)
    gold = np.array([label == "spam" for _, label, _, _ in messages])
    out = []
    for s in scores:
        s = np.asarray(s)
        rates = three_way_rates(gold, 1 / (1 + np.exp(-np.clip(s, -700, 700))), *DEFAULT_BAND)
        out.append((100 * (1 - roc_auc(gold, s)), rates["ham_misfiled"]))
    return out


def online(args) -> None:
    variants = [parse_variant(v) for v in args.variants.split(",")]
    names = ["default filter", *(f"+ {source} {order}/{max_bytes}B/2^{bits}" for source, order, max_bytes, bits in variants)]
    print(f"online, immediate feedback: (1-ROCA)% · ham misfiled % at the default decision; context models "
          f"(source order/first bytes/slots a class), beta {args.beta}")
    print(f"{'corpus':<8} " + " ".join(f"{name:>24}" for name in names))
    table = {}
    for name in args.online.split(","):
        started = time.perf_counter()
        table[name] = cells = online_corpus(load(args.corpora / CORPORA[name]), variants, args.beta)
        print(f"{name:<8} " + " ".join(f"{roca:>14.4f} · {ham:>6.3f}%" for roca, ham in cells)
              + f"  ({time.perf_counter() - started:.0f} s)", flush=True)
    # each configuration's worst regret: its (1-ROCA)% over the best one's, corpus by corpus (below
    # scripts/ablation.py's RESOLUTION a tie)
    regret = [max(max(table[c][k][0], RESOLUTION) / max(min(cell[0] for cell in table[c]), RESOLUTION) for c in table)
              for k in range(len(names))]
    print(f"{'regret':<8} " + " ".join(f"{r:>24.2f}" for r in regret))


def speed(args) -> None:
    from spamkit import BEST, build_filter

    with Corpus(args.corpora / CORPORA["trec"]) as corpus:
        messages = list(corpus)
    default = build_filter(**BEST).fit(messages)
    print(f"trec07p-dev, {len(messages)} messages one at a time; context model: the raw message, order {args.order}, "
          f"2**{args.bits} slots a class, first {args.max_bytes} bytes")
    for _ in range(args.rounds):
        model = ByteContextModel(order=args.order, beta=args.beta, bits=args.bits)
        first = messages[0]
        model.partial_fit(context_keys([first.raw], args.order, args.bits, args.max_bytes), [first.label == "spam"],
                          classes=[False, True])
        scoring = learning = 0.0
        for m in messages[1:]:
            keys = context_keys([m.raw], args.order, args.bits, args.max_bytes)
            a = time.perf_counter()
            model.mean_log_ratio(keys)
            b = time.perf_counter()
            model.partial_fit(keys, [m.label == "spam"])
            learning += time.perf_counter() - b
            scoring += b - a
        a = time.perf_counter()
        for m in messages[1:]:
            default.verdict(m.raw)
        verdict = time.perf_counter() - a
        n = len(messages) - 1
        print(f"context model: scoring {1e3 * scoring / n:.3f} ms, learning {1e3 * learning / n:.3f} ms a message; "
              f"the default filter's verdict {1e3 * verdict / n:.3f} ms; scoring / verdict {scoring / verdict:.2f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpora", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "corpora")
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--order", type=int, default=6)
    parser.add_argument("--beta", type=float, default=8.0)
    parser.add_argument("--bits", type=int, default=24)
    parser.add_argument("--max-bytes", type=int, default=3000)
    parser.add_argument("--datasets", type=int, nargs="+", default=[1, 2, 3, 4, 5, 6])
    parser.add_argument("--online", metavar="CORPORA", help="the online protocol on these corpora instead "
                        f"(comma-separated, of {', '.join(CORPORA)})")
    parser.add_argument("--speed", action="store_true", help="time the context model against the default "
                        "filter's verdict on trec07p-dev instead")
    parser.add_argument("--rounds", type=int, default=2, help="--speed: rounds")
    parser.add_argument("--variants", default="raw:6:3000:24,raw:7:3000:22,text:6:3000:24",
                        help="online: the context models, SOURCE:ORDER:MAX_BYTES:BITS, comma-separated")
    args = parser.parse_args()
    if args.speed:
        return speed(args)
    if args.online:
        return online(args)
    started = time.perf_counter()
    print(f"context model: order {args.order}, beta {args.beta}, 2**{args.bits} slots a class, first "
          f"{args.max_bytes} bytes; batches of {args.batch}")
    print(f"{'dataset':<8} " + " | ".join(f"{name:^34}" for name in NAMES))
    print(f"{'':<8} " + " | ".join(f"{'spam rec':>8} {'ham rec':>8} {'balanced':>8} {'AUC':>7}" for _ in NAMES))
    table = {name: [] for name in NAMES}
    for i in args.datasets:
        path = args.corpora / "enron-spam" / f"enron{i}.tar.gz"
        if not path.exists():
            print(f"enron{i}: missing {path}")
            continue
        res = run_dataset(path, args)
        for name in NAMES:
            table[name].append(res[name])
        print(f"enron{i:<3} " + " | ".join(f"{r[0]:>7.2f}% {r[1]:>7.2f}% {r[2]:>7.2f}% {r[3]:>7.4f}"
                                          for r in (res[n] for n in NAMES)), flush=True)
    means = {name: np.mean(table[name], axis=0) for name in NAMES if table[name]}
    print(f"{'average':<8} " + " | ".join(f"{m[0]:>7.2f}% {m[1]:>7.2f}% {m[2]:>7.2f}% {m[3]:>7.4f}"
                                          for m in means.values()))
    low, high = DEFAULT_BAND
    # (the context model alone scores a log ratio per symbol, not a probability: no band for it)
    banded = [NAMES[0], NAMES[2]]
    print(f"\nat a filter's default decision (ham below P(spam) {low}, spam above {high}, unsure between): "
          "spam caught, ham misfiled as spam, unsure (of all)")
    print(f"{'dataset':<8} " + " | ".join(f"{name:^34}" for name in banded))
    for k, i in enumerate(i for i in args.datasets if table[NAMES[0]] and k_of(args, i) is not None):
        print(f"enron{i:<3} " + " | ".join(f"{table[n][k][4]:>9.2f}% {table[n][k][5]:>9.3f}% {table[n][k][6]:>9.2f}%  "
                                          for n in banded))
    print(f"{'average':<8} " + " | ".join(f"{means[n][4]:>9.2f}% {means[n][5]:>9.3f}% {means[n][6]:>9.2f}%  "
                                          for n in banded))
    print(f"\n({time.perf_counter() - started:.0f} s)")


def k_of(args, i):
    """Dataset i's place among those run (None: its archive is missing)."""
    return i if (args.corpora / "enron-spam" / f"enron{i}.tar.gz").exists() else None


if __name__ == "__main__":
    main()
