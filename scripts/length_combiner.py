#!/usr/bin/env python3
"""A combiner that knows each message's length: the forms measured on every corpus.

The stack's combiner used to weigh Fisher, NB and the logistic component the same for a
two-word SMS and a 5,000-token newsletter, yet NB on presence features adds one term per token
(sharp on a short text, over-confident on a long one) and Fisher's chi-square combining works
the other way round. Here the combiner (the same L2 logistic regression, C = 1) also sees
ℓ = log(1 + n) - 4, n the message's distinct tokens in the model's features (the terms NB's
sum runs over), clipped to the range the combiner was fitted on, and products of ℓ with
squashed component scores s_j, so that a component's weight can change with the length:

    nb        z = Σ_j w_j s_j + v ℓ + u s_NB ℓ + b       (spamkit's default since it was measured
              here: ``FisherNBStack(length_aware=True)``)
    all       the product with every component's score
    fisher    the product with Fisher's score only
    bias      ℓ alone, no product
    nb-known  as nb, n counting only the tokens with a count in the model that scores the
              message (a token only the held-out fold has is then unknown in the combiner's
              training scores, as a new message's unseen tokens are when it is scored)

Two protocols, each configuration next to the stack without a length (the default before): the TREC online protocol of
``scripts/ablation.py`` on every corpus (trec07p-dev, CSDMC2010, Enron1-6, SMS; (1-ROCA)% and,
at the default three-way decision, ham misfiled), with each configuration's worst regret
(its (1-ROCA)% over the best configuration's, corpus by corpus; below ablation's RESOLUTION a
tie); and the Metsis et al. batches on Enron1-6 (``scripts/reproduce_metsis.py``'s protocol
for spamkit's filters: train on all earlier batches of 100, classify the next at P(spam) > 0.5),
average spam and ham recall. docs/results.md quotes the output and why "nb" was adopted.

    python scripts/length_combiner.py [--corpora ../shared/corpora] [--only trec,sms,...] [--no-metsis]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from spamkit.corpus import Corpus
from spamkit.decide.decision import DEFAULT_BAND
from spamkit.jobs.evaluation import online_model, online_run
from spamkit.features.vectorizer import Vectorizer
from spamkit.parse.message import parse_message
from spamkit.decide.metrics import three_way_rates
from spamkit.models import FisherNBStack
from spamkit.models.robinson import presence
from spamkit.models.stack import BEST_STACK
from spamkit.text import Analyzer

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ablation import CORPORA, DEFAULT_DIR, RESOLUTION, hashed_rows, load

FORMS = ("nb", "all", "fisher", "bias", "nb-known")


class LengthAwareStack(FisherNBStack):
    """The default stack (``length_aware=True``: ℓ of the distinct tokens, clipped to the range
    the combiner was fitted on) with another set of products of ℓ (see the module docstring);
    "nb-known" counts only the tokens the scoring model has counts for."""

    form = "nb"

    def component_scores(self, class_count, feature_count, X, totals=None, logistic=None):
        scores = super().component_scores(class_count, feature_count, X, totals, logistic)
        if self.form == "nb-known":
            X = presence(X)
            seen = feature_count[:, X.indices].sum(axis=0) > 0
            before = np.concatenate([[0], np.cumsum(seen, dtype=np.int64)])
            scores[:, -1] = before[X.indptr[1:]] - before[X.indptr[:-1]]
        return scores

    def _feature_columns(self, scores, side=None) -> list:
        columns = super()._feature_columns(scores, side)            # squashed..., ℓ, ℓ x NB (no side inputs)
        squashed, length = columns[:-2], columns[-2]
        products = {"nb": squashed[1:2], "nb-known": squashed[1:2], "all": squashed, "fisher": squashed[:1],
                    "bias": []}[self.form]
        return [*squashed, length, *(length * column for column in products)]

    def _n_weights(self) -> int:
        return len(self._feature_columns(np.zeros((1, self.score_columns()))))


def make(form: str | None, **params):
    if form is None:
        return FisherNBStack(**{**params, "length_aware": False})
    model = LengthAwareStack(**{**params, "length_aware": True})
    model.form = form
    return model


def online(corpora: Path, names, forms) -> None:
    print("online, immediate feedback (scripts/ablation.py's protocol): (1-ROCA)% and ham misfiled % "
          f"at the default decision (spam above P(spam) {DEFAULT_BAND[1]:g})")
    configs = [None, *forms]
    labels = ["no length", *(f"length-aware, {f}" for f in forms)]
    table = {}
    print(f"{'corpus':<8} " + " ".join(f"{label:>24}" for label in labels))
    for corpus in names:
        messages = load(corpora / CORPORA[corpus])
        rows = hashed_rows(messages, "mail", "binary")
        cells = []
        for form in configs:
            params = online_model("fisher-nb").get_params()
            result = online_run(((i, label, x) for (i, label, _, _), x in zip(messages, rows)), make(form, **params))
            gold = np.array([g == "spam" for g in result.gold])
            p_spam = 1.0 / (1.0 + np.exp(-np.clip(np.asarray(result.scores), -700, 700)))
            rates = three_way_rates(gold, p_spam, *DEFAULT_BAND)
            cells.append((result.measures["roca_pct"], rates["ham_misfiled"]))
        table[corpus] = cells
        print(f"{corpus:<8} " + " ".join(f"{roca:>14.4f} · {ham:>5.3f}" for roca, ham in cells), flush=True)
    def regret(corpus: str, k: int) -> float:
        best = min(cell[0] for cell in table[corpus])
        return max(table[corpus][k][0], RESOLUTION) / max(best, RESOLUTION)
    print(f"{'worst regret':<8} " + " ".join(f"{max(regret(c, k) for c in table):>24.2f}" for k in range(len(configs))))


def metsis(corpora: Path, forms, batch: int = 100) -> None:
    print(f"\nMetsis et al.'s batches on Enron1-6 (batches of {batch}, P(spam) > 0.5): spam recall / ham recall %")
    configs = [None, *forms]
    results = {form: [] for form in configs}
    analyzer = Analyzer.mail()
    for i in range(1, 7):
        with Corpus(corpora / "enron-spam" / f"enron{i}.tar.gz") as corpus:
            msgs = list(corpus)
        y = np.array([m.label == "spam" for m in msgs])
        X = Vectorizer("binary").fit_transform(analyzer(parse_message(m.raw, m.kind)) for m in msgs)
        for form in configs:
            scores = np.empty(len(msgs) - batch)
            for start in range(batch, len(msgs), batch):
                stop = min(start + batch, len(msgs))
                lp = make(form, **BEST_STACK).fit(X[:start], y[:start]).predict_log_proba(X[start:stop])
                scores[start - batch:stop - batch] = lp[:, 1] - lp[:, 0]
            truth, said = y[batch:], scores > 0
            results[form].append((100 * said[truth].mean(), 100 * (~said[~truth]).mean()))
    for form in configs:
        r = np.array(results[form])
        print(f"  {'no length' if form is None else 'length-aware, ' + form:<24} {r[:, 0].mean():6.2f} / "
              f"{r[:, 1].mean():6.2f}   " + "  ".join(f"{a:.2f}/{b:.2f}" for a, b in r))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpora", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--only", default=",".join(CORPORA), help="Comma-separated corpus names (online part).")
    parser.add_argument("--forms", default=",".join(FORMS), help="Comma-separated combiner forms.")
    parser.add_argument("--no-metsis", action="store_true", help="Skip the Metsis batches.")
    args = parser.parse_args()
    started = time.perf_counter()
    forms = [f for f in args.forms.split(",") if f]
    unknown = set(forms) - set(FORMS)
    if unknown:
        parser.error(f"unknown forms: {', '.join(sorted(unknown))} (known: {', '.join(FORMS)})")
    online(args.corpora, [n for n in args.only.split(",") if n], forms)
    if not args.no_metsis:
        metsis(args.corpora, forms)
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
