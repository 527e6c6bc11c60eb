#!/usr/bin/env python3
"""Every configuration tried for the best filter, on the trec07p-dev stream, online.

Issue 7 asks which tokens and which combining rule matter, by measurement, with the losing
configurations reported too. This script runs them all on the same stream in the TREC
protocol (classify, then learn, immediate feedback; features hashed into 2^20 columns) and
prints (1-ROCA)% and lam% per configuration, in four groups:

1. tokens: the plain analyzer, then each mail-token option alone, then together (Fisher,
   SpamBayes's parameters);
2. the combining rule: Robinson/Fisher over a grid of s, min_dev and max_clues, and the
   Naive Bayes models, on the mail tokens;
3. word pairs (orthogonal sparse bigrams of the body, window 2, 3, 5), which lose;
4. training regimes: train on everything, on errors, on or near errors.

Messages are parsed once and tokenized once per token configuration, so the whole run
takes a few minutes.

    python scripts/ablation_trec.py [--corpus ../shared/corpora/trec07p-dev/trec07p-dev.tar.gz] [--quick]
"""

from __future__ import annotations

import argparse
import itertools
import time
from pathlib import Path

import numpy as np

from spamkit.corpus import Corpus
from spamkit.features.vectorizer import Vectorizer
from spamkit.parse.message import parse_message
from spamkit.decide.metrics import trec_measures
from spamkit.models import BernoulliNB, FisherNBStack, MultinomialNB, RobinsonFisher
from spamkit.text import ALL_HEADERS, Analyzer

DEFAULT_CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpora" / "trec07p-dev" / "trec07p-dev.tar.gz"
HASHING = 2 ** 20
REFIT = 100


def online(tokens, labels, make_model, regime="all", margin=2.0, representation="binary"):
    """The TREC protocol over pre-tokenized messages (as spamkit.jobs.evaluation.online_evaluate)."""
    vectorizer = Vectorizer.hashed(HASHING, representation)
    model = make_model()
    stacked = isinstance(model, FisherNBStack)
    scores, history, fitted = [], ([], []), False
    for toks, label in zip(tokens, labels):
        x = vectorizer.transform([toks])
        if fitted and stacked:
            comp = model.component_log_odds(x)[0]
            score = float(comp @ model.coef_ + model.intercept_)
            history[0].append(comp)
            history[1].append(label == "spam")
            if len(history[1]) % REFIT == 0 and 0 < sum(history[1]) < len(history[1]):
                model.fit_combiner(np.array(history[0]), np.array(history[1]))
        elif fitted:
            jll = model.joint_log_likelihood(x)[0]
            score = float(jll[1] - jll[0])
        else:
            score = 0.0
        scores.append(score)
        wrong = (score > 0) != (label == "spam")
        if not fitted or regime == "all" or wrong or (regime == "near-error" and abs(score) < margin):
            model.partial_fit(x, [label], classes=["ham", "spam"])
            fitted = bool(model.class_count_.min() > 0)
    gold = np.array([label == "spam" for label in labels])
    return trec_measures(gold, np.array(scores), 0.0)


def osb(words, window):
    """Orthogonal sparse bigrams (Siefkes et al. 2004, crm114): pairs at distance 1..window-1."""
    return [f"{words[i]} {'_' * (k - 1)}{words[i + k]}" for i in range(len(words))
            for k in range(1, window) if i + k < len(words)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--quick", action="store_true", help="A smaller parameter grid.")
    args = parser.parse_args()
    started = time.perf_counter()
    with Corpus(args.corpus) as corpus:
        items = [(m.label, parse_message(m.raw, m.kind)) for m in corpus]
    labels = [label for label, _ in items]
    messages = [msg for _, msg in items]
    print(f"{args.corpus.name}: {len(items)} messages, online, immediate feedback, {HASHING} hashed columns\n")
    print(f"{'group':<10} {'configuration':<62} {'(1-ROCA)%':>10} {'lam%':>7}")

    def report(group, name, m):
        print(f"{group:<10} {name:<62} {m['roca_pct']:>10.4f} {m['lam_pct']:>7.2f}", flush=True)

    fisher = lambda: RobinsonFisher()                                    # noqa: E731 (SpamBayes's defaults)
    token_configs = [
        ("plain: lower-cased body words, 9 header fields", Analyzer()),
        ("+ case kept", Analyzer(lowercase=False)),
        ("+ every header field", Analyzer(headers=ALL_HEADERS)),
        ("+ header names", Analyzer(header_names=True)),
        ("+ Received IPs (/32, /24, /16)", Analyzer(received_ips=True)),
        ("+ URL pieces", Analyzer(url_parts=True)),
        ("+ digit-run shapes", Analyzer(digit_shapes=True)),
        ("mail: all of the above (Analyzer.mail())", Analyzer.mail()),
        ("mail, lower-cased", Analyzer.mail(lowercase=True)),
    ]
    mail_tokens = None
    for name, analyzer in token_configs:
        tokens = [analyzer(msg) for msg in messages]
        if name.startswith("mail: "):
            mail_tokens = tokens
        report("tokens", name, online(tokens, labels, fisher))

    grid = ([0.0178, 0.1, 0.45, 1.0], [0.1, 0.2, 0.3, 0.375, 0.45], [0, 150])
    if args.quick:
        grid = ([0.0178, 0.1, 0.45], [0.1, 0.3, 0.45], [0, 150])
    for s, d, k in itertools.product(*grid):
        mark = "  <- SpamBayes defaults, spamkit's" if (s, d, k) == (0.45, 0.1, 150) else ""
        make = lambda s=s, d=d, k=k: RobinsonFisher(strength=s, min_dev=d, max_clues=k)   # noqa: E731
        report("fisher", f"s={s} min_dev={d} max_clues={k}{mark}", online(mail_tokens, labels, make))
    report("fisher", "s=0.0178 x=0.52 min_dev=0.375 max_clues=0 (bogofilter's)",
           online(mail_tokens, labels, lambda: RobinsonFisher(0.0178, 0.52, 0.375, 0)))
    report("nb", "multinomial NB, alpha=1, presence", online(mail_tokens, labels, MultinomialNB))
    report("nb", "multinomial NB, alpha=0.1, presence", online(mail_tokens, labels, lambda: MultinomialNB(alpha=0.1)))
    report("nb", "multinomial NB, alpha=1, counts", online(mail_tokens, labels, MultinomialNB, representation="tf"))
    report("nb", "Bernoulli NB, alpha=1", online(mail_tokens, labels, BernoulliNB))
    report("stack", "fisher-nb: Fisher + multinomial NB, logistic combiner (best)",
           online(mail_tokens, labels, FisherNBStack))

    body = Analyzer.mail()
    for window in (2, 3, 5):
        tokens = [t + osb(body.words(msg.body)[:1000], window) for t, msg in zip(mail_tokens, messages)]
        report("pairs", f"mail tokens + OSB window {window} (Fisher)", online(tokens, labels, fisher))

    for regime, margin in (("all", 0.0), ("error", 0.0), ("near-error", 2.0), ("near-error", 10.0)):
        name = f"train on {regime}" + (f", margin {margin}" if regime == "near-error" else "")
        report("regime", name + " (Fisher)", online(mail_tokens, labels, fisher, regime=regime, margin=margin))
    print(f"\n({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
