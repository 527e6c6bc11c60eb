"""Train a filter on corpora, optionally holding out a part and evaluating on it."""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.metadata
import platform
import time
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from .. import __version__
from ..corpus import Corpus, Unread, iter_corpora
from ..common.errors import ConfigError, CorpusError
from ..corpus.split import holdout_ids
from ..filterfile.spamfilter import SpamFilter
from .engine import IN_PROCESS, Engine
from .evaluate import cost_report, describe_corpora, evaluate_predictions


def library_versions() -> dict:
    """Versions of the libraries a result depends on, recorded in models and reports."""
    versions: dict[str, str | None] = {"spamkit": __version__, "python": platform.python_version()}
    for name in ("numpy", "scipy", "scikit-learn", "nltk", "click"):
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return versions


@dataclass
class TrainReport:
    """What ``spamkit train`` reports: what was learned from, and the held-out evaluation."""

    n_train: int
    n_test: int
    train_per_class: dict
    test_per_class: dict
    n_features: int
    classes: list
    seconds_train: float
    parse_fallbacks: dict
    split: dict | None = None
    evaluation: dict | None = None
    corpora: list = field(default_factory=list)

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def _records(corpora):
    """First pass: (id, label, date) of every message, nothing parsed."""
    return [(m.id, m.label, m.date) for m in iter_corpora(corpora)]


def check_split(records, test_ids: set, method: str, test_fraction: float) -> None:
    """Refuse, before any training, a hold-out that leaves a class out of the training part or
    out of the held-out part, saying why and what to do instead."""
    train = Counter(str(label) for ident, label, _ in records if ident not in test_ids)
    held = Counter(str(label) for ident, label, _ in records if ident in test_ids)
    classes = sorted(set(train) | set(held))
    missing_train = [c for c in classes if not train[c]]
    missing_held = [c for c in classes if not held[c]]
    if not (missing_train or missing_held):
        return
    how = {"chrono": f"the latest {test_fraction:.0%} of the messages by date",
           "order": f"the last {test_fraction:.0%} of the messages in corpus order"}.get(
        method, f"{test_fraction:.0%} of the messages")
    where = (f"no {', '.join(missing_train)} to train on" if missing_train
             else f"no {', '.join(missing_held)} to test on")
    raise CorpusError(f"holding out {how} (--split {method}) leaves {where} (training part: "
                      f"{dict(sorted(train.items()))}; held out: {dict(sorted(held.items()))}); use --split random "
                      "(stratified: every class in both parts) or another --test-fraction")


def train_filter(spam_filter: SpamFilter, corpora: list[Corpus], test_fraction: float | None = None,
                 split: str = "auto", seed: int = 0, progress=None, parameters: dict | None = None,
                 engine: Engine = IN_PROCESS) -> TrainReport:
    """Train on corpora, optionally holding out a test part first and evaluating on it.

    ``engine``: where the filter is trained (:meth:`spamkit.jobs.engine.Engine.fit`: here, with
    worker processes or on a cluster; the same filter).
    """
    test_ids: set = set()
    split_info = None
    if test_fraction:
        records = _records(corpora)
        test_ids = holdout_ids(records, test_fraction, split, seed)
        method = split if split != "auto" else ("chrono" if all(r[2] for r in records) else "random")
        split_info = {"method": method, "test_fraction": test_fraction, "seed": seed}
        check_split(records, test_ids, method, test_fraction)
    held_out: list = []
    train_counts: Counter = Counter()

    def train_stream():
        for msg in iter_corpora(corpora):
            if msg.id in test_ids:
                if isinstance(msg.raw, Unread):          # listed, not read (below): read it here
                    msg = dataclasses.replace(msg, raw=msg.raw.read())
                held_out.append((msg.label, spam_filter.tokens(msg),
                                 spam_filter.side_text(msg) if spam_filter.reads_bytes else None))
                continue
            train_counts[msg.label] += 1
            yield msg

    started = time.perf_counter()
    with contextlib.ExitStack() as listing:
        if engine.reads_files:                            # its workers read the files themselves
            for corpus in corpora:
                listing.enter_context(corpus.listing())
        elif engine.reads_located and not spam_filter.driver_reads_bytes(engine):
            # its workers read the messages that lie where they can (a context model reads each
            # message's bytes here; the workers make the byte 4-grams' slots); this process lists
            # those: reading and copying trec07p-dev's 40 MB here was a third of this process's
            # work while the workers parsed and tokenized
            for corpus in corpora:
                listing.enter_context(corpus.located())
        engine.fit(spam_filter, train_stream(), progress)
    seconds = time.perf_counter() - started
    evaluation = None
    if held_out:
        X = spam_filter.vectorizer.transform(tokens for _, tokens, _ in held_out)
        side = spam_filter.side_scores([text for _, _, text in held_out]) if spam_filter.reads_bytes else None
        log_proba = spam_filter.log_proba(X, side)
        proba = np.exp(log_proba)
        evaluation = evaluate_predictions([label for label, _, _ in held_out], proba, spam_filter.classes_,
                                          log_proba)
        spam_filter.held_out_scores = ([label for label, _, _ in held_out], proba)
    report = TrainReport(
        n_train=sum(train_counts.values()), n_test=len(held_out),
        train_per_class={str(k): v for k, v in sorted(train_counts.items(), key=lambda kv: str(kv[0]))},
        test_per_class={str(k): v for k, v in sorted(Counter(h[0] for h in held_out).items(),
                                                     key=lambda kv: str(kv[0]))},
        n_features=int(spam_filter.vectorizer.n_features_), classes=[str(c) for c in spam_filter.classes_],
        seconds_train=seconds, parse_fallbacks=dict(spam_filter.parse_fallbacks), split=split_info,
        evaluation=evaluation, corpora=describe_corpora(corpora))
    spam_filter.training = {"corpora": report.corpora, "n_messages": report.n_train,
                            "per_class": report.train_per_class, "parse_fallbacks": report.parse_fallbacks,
                            "parameters": parameters or {}, "split": split_info,
                            "held_out_evaluation": evaluation, "versions": library_versions(),
                            "seconds": round(seconds, 3)}
    return report


def held_out_costs(spam_filter: SpamFilter, report: "TrainReport") -> dict:
    """The cost report of the held-out part kept by :func:`train_filter`."""
    if spam_filter.held_out_scores is None:
        raise ConfigError("this filter kept no held-out messages (train it with --test-fraction)")
    labels, proba = spam_filter.held_out_scores
    return cost_report(labels, proba, spam_filter)
