"""Add labelled messages to a trained filter, or take them out again (``spamkit learn``)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from ..common.errors import ConfigError, CorpusError
from ..filterfile.spamfilter import SpamFilter


@dataclass
class LearnReport:
    """What ``spamkit learn`` did."""

    learned: Counter = field(default_factory=Counter)
    forgotten: Counter = field(default_factory=Counter)
    relabelled: int = 0
    already: int = 0
    not_learned_before: int = 0
    correct_skipped: int = 0

    def as_dict(self) -> dict:
        return {"learned": dict(self.learned), "forgotten": dict(self.forgotten), "relabelled": self.relabelled,
                "already_learned": self.already, "not_learned_before": self.not_learned_before,
                "skipped_correct": self.correct_skipped}


def learn_messages(spam_filter: SpamFilter, messages, forget: bool = False, on_error: bool = False,
                   progress=None, on_message=None) -> LearnReport:
    """Add labelled messages to a trained filter's counts, or remove them (``forget``).

    Every learned message is remembered by :func:`~spamkit.parse.message.message_key` (tagged or
    not, a message has one key): learning it again is skipped, learning it with the other
    label first removes its old contribution (a corrected mistake), and ``forget`` removes
    what learning added (exactly for counts; a logistic-regression component takes a step
    back, which is approximate). ``on_error`` learns only messages the filter gets wrong now
    (train on error). Works for the counting models (fisher-nb, fisher, multinomial, bernoulli).
    ``on_message(source, what)`` hears what was done with each message.
    """
    from ..parse.message import message_key
    if not hasattr(spam_filter.model, "unlearn"):
        raise ConfigError(f"{type(spam_filter.model).__name__} cannot learn incrementally; retrain it with "
                          "spamkit train (learn works for fisher-nb, fisher, multinomial and bernoulli)")
    report = LearnReport()

    def tell(msg, what: str) -> None:
        if on_message is not None:
            on_message(msg.source, what)

    known = {str(c) for c in spam_filter.classes_}
    for msg in messages:
        if progress is not None:
            progress(msg)
        label = str(msg.label)
        if label not in known:
            raise CorpusError(f"{msg.source}: class {label!r} is not one of the filter's classes {sorted(known)}")
        key = message_key(msg.raw)
        previous = spam_filter.learned.get(key)
        token_lists, texts = spam_filter.read([msg])
        X = spam_filter.vectorizer.transform(token_lists)

        def add(label, X=X, texts=texts):
            spam_filter.model.partial_fit(X, np.asarray([label]))
            if texts is not None:                 # a filter's side models learn the message's bytes
                spam_filter.learn_side(texts, [label])

        def remove(label, X=X, texts=texts):
            spam_filter.model.unlearn(X, np.asarray([label]))
            if texts is not None:
                spam_filter.unlearn_side(texts, [label])

        if forget:
            if previous is None:
                report.not_learned_before += 1
                tell(msg, "never learned: nothing to forget")
                continue
            remove(previous)
            del spam_filter.learned[key]
            report.forgotten[previous] += 1
            tell(msg, f"forgotten (was learned as {previous})")
            continue
        if previous == label:
            report.already += 1
            tell(msg, f"already learned as {label}")
            continue
        if on_error and previous is None and str(spam_filter.classes_[np.argmax(
                spam_filter.log_proba(X, spam_filter.side_scores(texts) if texts is not None else None)[0])]) == label:
            report.correct_skipped += 1
            tell(msg, f"already classified {label}: not learned")
            continue
        if previous is not None:
            remove(previous)
            report.relabelled += 1
        add(label)
        spam_filter.saw(X)
        spam_filter.learned[key] = label
        report.learned[label] += 1
        tell(msg, f"learned as {label}" + (f" (moved from {previous})" if previous is not None else ""))
    return report
