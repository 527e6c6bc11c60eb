"""Add labelled messages to a trained filter, or take them out again (``spamkit learn``)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from ..common.errors import ConfigError, CorpusError
from ..common.labels import BINARY_CLASSES, SPAM_NAME
from ..decide.thresholds import STREAM_CUT_AFTER, STREAM_CUT_EVERY
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
    #: messages scored before they were learned, for the learned spam cut (``judge``)
    judged: int = 0
    #: times the guard (and a stack's combiner) were refitted on the judged messages
    refits: int = 0

    def as_dict(self) -> dict:
        return {"learned": dict(self.learned), "forgotten": dict(self.forgotten), "relabelled": self.relabelled,
                "already_learned": self.already, "not_learned_before": self.not_learned_before,
                "skipped_correct": self.correct_skipped, "judged": self.judged,
                "refits": self.refits}


def learn_messages(spam_filter: SpamFilter, messages, forget: bool = False, on_error: bool = False,
                   progress=None, on_message=None, judge: bool = False) -> LearnReport:
    """Add labelled messages to a trained filter's counts, or remove them (``forget``).

    Every learned message is remembered by :func:`~spamkit.parse.message.message_key` (tagged or
    not, a message has one key): learning it again is skipped, learning it with the other
    label first removes its old contribution (a corrected mistake), and ``forget`` removes
    what learning added (exactly for counts; a logistic-regression component takes a step
    back, which is approximate). ``on_error`` learns only messages the filter gets wrong now
    (train on error). Works for the counting models (fisher-nb, fisher, multinomial, bernoulli).
    ``on_message(source, what)`` hears what was done with each message.

    ``judge``: the messages are all the mail of a stretch of time, each with its label, not only
    the filter's mistakes: each message not learned before is scored first, and its P(spam),
    label, combiner row and familiarity kept (:meth:`~spamkit.filterfile.verdicts.Decisions.judge`);
    from them the filter refits its combiner and its guard (:func:`refit_when_due`) and
    re-chooses its spam cut as an online evaluation's stream cut does
    (:meth:`~spamkit.filterfile.verdicts.Decisions.learned_spam_cut`). Every judged message is
    learned (not with ``on_error``: a message judged and not learned would be judged again by the
    next run), and a message learned before is not judged again. Corrections alone would be a
    sample of mistakes, every ham among them above the cut.
    """
    from ..parse.message import message_key
    if not hasattr(spam_filter.model, "unlearn"):
        raise ConfigError(f"{type(spam_filter.model).__name__} cannot learn incrementally; retrain it with "
                          "spamkit train (learn works for fisher-nb, fisher, multinomial and bernoulli)")
    if judge and (forget or on_error or sorted(map(str, spam_filter.classes_)) != list(BINARY_CLASSES)):
        raise ConfigError("judging messages (--all-mail) needs a ham/spam filter, and learns every message it "
                          "judges (not with --forget or --on-error)")
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
        if (on_error or judge) and previous is None:
            side = spam_filter.side_scores(texts) if texts is not None else None
            lp = spam_filter.log_proba(X, side)[0]
            if judge:
                spam_filter.judge(float(np.exp(lp[spam_filter.spam_column])), label == SPAM_NAME,
                                  combiner_row(spam_filter.model, X, side),
                                  float(spam_filter.familiarity(token_lists, X)[0]))
                report.judged += 1
                report.refits += refit_when_due(spam_filter)
            if on_error and str(spam_filter.classes_[np.argmax(lp)]) == label:
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


def combiner_row(model, X, side) -> np.ndarray | None:
    """What a stack's combiner weighs of one message (its component scores, then its side
    scores), for :func:`refit_when_due`; None for a model without a combiner."""
    if not hasattr(model, "refit_combiner"):
        return None
    scores = model.component_log_odds(X)[0]
    return np.concatenate([scores, np.asarray(side, dtype=np.float64)[0]]) if side is not None else scores


def refit_when_due(spam_filter: SpamFilter) -> bool:
    """Refit a stack's combiner on the judged messages' rows
    (:meth:`~spamkit.models.combiner.StackCombiner.refit_combiner`) and the familiarity guard on
    their familiarities as well as the training messages'
    (:meth:`~spamkit.filterfile.verdicts.Decisions.refit_guard`), on the schedule the learned spam
    cut is re-chosen on (every :data:`~spamkit.decide.thresholds.STREAM_CUT_EVERY` judged messages
    from :data:`~spamkit.decide.thresholds.STREAM_CUT_AFTER`: however the mail is split between
    runs of ``spamkit learn``, the same messages give the same filter). True if it refitted."""
    judged = spam_filter.judged
    n = len(judged[0]) if judged is not None else 0
    if judged is None or n < STREAM_CUT_AFTER or (n - STREAM_CUT_AFTER) % STREAM_CUT_EVERY:
        return False
    spam_filter.refit_guard()
    if not judged[2] or not hasattr(spam_filter.model, "refit_combiner") or all(judged[1]) or not any(judged[1]):
        return True
    rows = np.vstack(judged[2])
    k = spam_filter.model.score_columns()
    spam_filter.model.refit_combiner(rows[:, :k], np.asarray(judged[1]), rows[:, k:] if rows.shape[1] > k else None)
    return True
