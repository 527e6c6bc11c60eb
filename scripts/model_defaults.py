#!/usr/bin/env python3
"""What do ``--model multinomial``, ``bernoulli`` and ``complement`` give by default? Candidates on every corpus.

spamkit's rule for defaults (issue "Good mail first"): a default is chosen on every corpus we
have and must never be much worse anywhere. Each candidate configuration of each Naive Bayes
model runs on

- the raw-mail and Enron corpora (Enron1-6, trec07p-dev, CSDMC2010) and the SMS Spam
  Collection: trained on the first half in arrival order, tested on the second half;
- 20 Newsgroups, the standard bydate split (train on 20news-bydate-train, test on -test);

each with both token schemes (``mail``, the default for raw mail, and ``words``). It prints the
test error (100 - accuracy, %) of every configuration on every corpus, its regret on each corpus
(error / the best error any candidate of the same model reached there) and, per model, the
configuration with the smallest worst-case regret, then the smallest mean regret.

    python scripts/model_defaults.py [--corpora ../shared/corpora] [--models complement,multinomial,bernoulli]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from spamkit.corpus import Corpus
from spamkit.features.vectorizer import Vectorizer
from spamkit.parse.message import parse_message
from spamkit.filterfile.config import make_analyzer
from spamkit.models import BernoulliNB, ComplementNB, MultinomialNB

#: model -> {name: (settings, a function making the estimator)}; min_df is a vectorizer setting
CANDIDATES = {
    "multinomial": {
        "alpha 1 (Laplace), min_df 1 (old default)": (1, lambda: MultinomialNB(alpha=1.0)),
        "alpha 1, min_df 2": (2, lambda: MultinomialNB(alpha=1.0)),
        "alpha 0.1, min_df 1": (1, lambda: MultinomialNB(alpha=0.1)),
        "alpha 0.01, min_df 1": (1, lambda: MultinomialNB(alpha=0.01)),
        "alpha 0.1, min_df 2": (2, lambda: MultinomialNB(alpha=0.1)),
    },
    "bernoulli": {
        "alpha 1, min_df 1 (old default)": (1, lambda: BernoulliNB(alpha=1.0)),
        "alpha 1, min_df 2": (2, lambda: BernoulliNB(alpha=1.0)),
        "alpha 1, min_df 3": (3, lambda: BernoulliNB(alpha=1.0)),
        "alpha 0.1, min_df 2": (2, lambda: BernoulliNB(alpha=0.1)),
    },
    "complement": {
        "alpha 1, weight-normalised, counts (old default)": (1, lambda: ComplementNB(alpha=1.0, norm=True)),
        "alpha 1, counts": (1, lambda: ComplementNB(alpha=1.0)),
        "alpha 0.1, log TF + length norm": (1, lambda: ComplementNB(alpha=0.1, tf_transform=True, length_norm=True)),
        "alpha 0.3, log TF + length norm": (1, lambda: ComplementNB(alpha=0.3, tf_transform=True, length_norm=True)),
        "alpha 1, log TF + length norm": (1, lambda: ComplementNB(alpha=1.0, tf_transform=True, length_norm=True)),
        "alpha 0.1, log TF + length norm, weight-normalised": (
            1, lambda: ComplementNB(alpha=0.1, tf_transform=True, length_norm=True, norm=True)),
    },
}
TOKEN_SCHEMES = ("mail", "words")


def halves(path: Path):
    with Corpus(path) as corpus:
        msgs = list(corpus)
    return msgs[:len(msgs) // 2], msgs[len(msgs) // 2:]


def bydate(archive: Path):
    out = []
    for split in ("train", "test"):
        with Corpus(f"{archive}!20news-bydate-{split}", classes=None) as corpus:
            out.append(list(corpus))
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpora", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "corpora")
    parser.add_argument("--models", default=",".join(CANDIDATES))
    args = parser.parse_args()
    models = [m for m in args.models.split(",") if m]
    root = args.corpora
    corpora = {f"enron{i}": (halves, root / f"enron-spam/enron{i}.tar.gz") for i in range(1, 7)}
    corpora.update({"trec07p-dev": (halves, root / "trec07p-dev/trec07p-dev.tar.gz"),
                    "csdmc2010": (halves, root / "csdmc2010/csdmc2010.tar.gz"),
                    "sms": (halves, root / "sms-spam-collection/SMSSpamCollection"),
                    "20news": (bydate, root / "20news/20news-bydate.tar.gz")})
    errors: dict = {}                                  # (model, config, tokens) -> {corpus: error %}
    started = time.perf_counter()
    for corpus_name, (read, path) in corpora.items():
        train, test = read(path)
        y_train = np.array([m.label for m in train])
        y_test = np.array([m.label for m in test])
        for tokens in TOKEN_SCHEMES:
            analyzer = make_analyzer(tokens)
            docs_train = [analyzer(parse_message(m.raw, m.kind)) for m in train]
            docs_test = [analyzer(parse_message(m.raw, m.kind)) for m in test]
            matrices = {}
            for model in models:
                for config, (min_df, make) in CANDIDATES[model].items():
                    if min_df not in matrices:
                        v = Vectorizer("tf", min_df=min_df)
                        matrices[min_df] = (v.fit_transform(docs_train), v.transform(docs_test))
                    X_train, X_test = matrices[min_df]
                    if model == "bernoulli":
                        X_train, X_test = X_train.sign(), X_test.sign()
                    predicted = make().fit(X_train, y_train).predict(X_test)
                    errors.setdefault((model, config, tokens), {})[corpus_name] = \
                        100.0 * float(np.mean(predicted != y_test))
        print(f"{corpus_name}: done ({time.perf_counter() - started:.0f} s)", flush=True)
    names = list(corpora)
    for model in models:
        rows = {key: value for key, value in errors.items() if key[0] == model}
        best = {c: max(min(r[c] for r in rows.values()), 0.01) for c in names}
        print(f"\n{model}: test error % on each corpus (regret = error / best error of any {model} candidate)")
        print(f"{'configuration':<58} {'tokens':<6} " + " ".join(f"{c[:7]:>7}" for c in names)
              + f" {'worst':>6} {'mean':>6}")
        scored = []
        for (_m, config, tokens), r in rows.items():
            regret = [r[c] / best[c] for c in names]
            scored.append((max(regret), float(np.mean(regret)), config, tokens))
            print(f"{config[:58]:<58} {tokens:<6} " + " ".join(f"{r[c]:7.2f}" for c in names)
                  + f" {max(regret):6.2f} {np.mean(regret):6.2f}")
        worst, mean, config, tokens = min(scored)
        print(f"smallest worst-case regret: {config}, {tokens} tokens (worst {worst:.2f}, mean {mean:.2f})")
    print(f"\n({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
