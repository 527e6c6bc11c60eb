"""Classify labelled corpora with a trained filter and measure the result."""

from __future__ import annotations

import warnings
from contextlib import contextmanager
from typing import Any

import numpy as np

from ..corpus import Corpus
from ..common.errors import ConfigError, CorpusError, DegenerateDataWarning
from ..common.labels import HAM_NAME, SPAM_NAME
from ..decide.metrics import binary_report, multiclass_report
from ..decide.curves import one_vs_rest
from ..filterfile.spamfilter import SpamFilter
from .engine import IN_PROCESS, Engine


def describe_corpora(corpora) -> list:
    return [{"path": str(c.path), "format": c.format, "container": c.container,
             "per_class": {str(k): v for k, v in c.stats.per_class.items()},
             "skipped": dict(c.stats.skipped), "unreadable": list(c.stats.unreadable)} for c in corpora]


def positive_class(classes, y_true, positive: str | None = None) -> str:
    """The class two-class ROC and precision-recall measures are about: ``positive`` if given,
    else "spam" when it is one of the two, else the rarer class in ``y_true`` (the later name
    in sorted order on a tie).

    >>> positive_class(["ham", "spam"], []), positive_class(["email", "sms"], ["sms", "email", "email"])
    ('spam', 'sms')
    """
    classes = [str(c) for c in classes]
    if positive is not None:
        if str(positive) not in classes:
            raise ConfigError(f"--positive {positive}: not a class of this filter ({', '.join(classes)})")
        if len(classes) != 2:
            raise ConfigError(f"--positive names the class of a two-class evaluation; this filter has "
                              f"{len(classes)} classes, and each gets its own one-vs-rest ROC and PR curves")
        return str(positive)
    if SPAM_NAME in classes:
        return SPAM_NAME
    counts = {c: 0 for c in classes}
    for v in y_true:
        if str(v) in counts:
            counts[str(v)] += 1
    return min(sorted(classes, reverse=True), key=lambda c: counts[c])


def evaluate_predictions(y_true, proba, classes, log_proba=None, positive: str | None = None) -> dict:
    """Measures at the most probable class (threshold 0.5 for two classes) and the AUC.

    With ``log_proba`` the AUC ranks by the log-odds, which stay distinct where P(spam)
    rounds to 0 or 1. Two classes are measured as positive against negative
    (:func:`positive_class`); more get per-class and one-vs-rest measures.
    """
    classes = [str(c) for c in classes]
    y_true = [str(v) for v in y_true]
    y_pred = [classes[i] for i in np.argmax(proba, axis=1)]
    if len(classes) == 2:
        positive = positive_class(classes, y_true, positive)
        s = classes.index(positive)
        other = classes[1 - s]
        scores = None
        if log_proba is not None:
            with np.errstate(invalid="ignore"):
                scores = log_proba[:, s] - log_proba[:, 1 - s]
        return binary_report(y_true, y_pred, proba[:, s], positive, other, ranking=scores)
    if positive is not None:
        positive_class(classes, y_true, positive)              # says why it cannot be
    report = multiclass_report(y_true, y_pred, classes)
    report["one_vs_rest"] = one_vs_rest(y_true, proba, classes)
    return report


@contextmanager
def _ranking_undefined(one_class: bool):
    """Within the block, with messages of one class only, the measures of ranking (AUC and what
    derives from it) are computed as undefined without a warning each: the result says it once
    (``one_class``)."""
    with warnings.catch_warnings():
        if one_class:
            warnings.simplefilter("ignore", DegenerateDataWarning)
        yield


def evaluate_filter(spam_filter: SpamFilter, corpora: list[Corpus], progress=None, detail: bool = False,
                    engine: Engine = IN_PROCESS, positive: str | None = None) -> dict:
    """Classify every message of labelled corpora and measure the result.

    With ``detail`` (two-class ham/spam filters), ``result["report"]`` holds the data of the
    HTML report (:func:`spamkit.jobs.reports.report_data`: curves, bootstrap interval of the AUC,
    reliability bins, the cost curve, the ten most costly mistakes with their explaining tokens).
    ``engine``: where the messages are scored (:meth:`spamkit.jobs.engine.Engine.score`; the same
    result everywhere).
    """
    labels, ids, model_lp, rows_of, familiarity = engine.score(spam_filter, corpora, progress)
    unknown = set(map(str, labels)) - set(map(str, spam_filter.classes_))
    if unknown:
        raise CorpusError(f"the corpus has classes {sorted(unknown)} that the filter was not trained on "
                          f"(it knows {[str(c) for c in spam_filter.classes_]})")
    log_proba = spam_filter.adjust_log_proba(model_lp)
    proba = np.exp(log_proba)
    present = sorted(set(map(str, labels)))
    with _ranking_undefined(len(present) < 2):
        result = evaluate_predictions(labels, proba, spam_filter.classes_, log_proba, positive)
    if len(present) < 2:
        result["one_class"] = present
    if spam_filter.guard is not None:
        spam_filter.guard.reset()                                  # this corpus is a stream of its own
    decisions = spam_filter.decide(proba, familiarity)            # once: the guard reads a stream
    if spam_filter.costs is not None:
        result["costs"] = cost_report(labels, proba, spam_filter, decisions)
    if spam_filter.guard is not None and len(familiarity):
        result["familiarity"] = {"median": float(np.median(familiarity)), **spam_filter.guard.as_dict(),
                                 "guarded": dict(spam_filter.guard.counts)}
    result["corpora"] = describe_corpora(corpora)
    if detail and "spam_recall" not in result:               # K classes (or two not named ham/spam)
        from .reports import k_class_report_data
        result["report"] = k_class_report_data(labels, proba, spam_filter.classes_)
    elif detail:
        from .reports import report_data
        positive = result["positive"]
        s = [str(c) for c in spam_filter.classes_].index(positive)
        with np.errstate(invalid="ignore"):
            log_odds = log_proba[:, s] - log_proba[:, 1 - s]
        is_spam = np.asarray([str(v) == positive for v in labels])
        negative = [str(c) for c in spam_filter.classes_ if str(c) != positive][0]
        # the filter's own decisions, as the positive class, the other one, or unsure
        called = [SPAM_NAME if str(d) == positive else HAM_NAME if str(d) == negative else "unsure"
                  for d in decisions]
        c_fp, c_fn, c_unsure = 1.0, 1.0, 0.0
        if (spam_filter.costs is not None and sorted(spam_filter.costs.classes) == [HAM_NAME, SPAM_NAME]
                and positive == SPAM_NAME):
            c_fp, c_fn = spam_filter.costs.binary_costs()
            c_unsure = spam_filter.costs.unsure_cost()
        p_raw = None
        if spam_filter.calibration is not None:
            p_raw = np.exp(model_lp)[:, [str(c) for c in spam_filter.model.classes_].index(positive)]
        with _ranking_undefined(len(present) < 2):
            data = report_data(is_spam, log_odds, proba[:, s], called, c_fp, c_fn, p_raw=p_raw, c_unsure=c_unsure)
        costly = list(data.pop("costly_mistakes"))
        paid = data.pop("mistake_costs")
        X_costly: Any = rows_of(costly) if costly else None
        data["mistakes"] = [{"id": ids[i], "label": str(labels[i]), "decision": str(decisions[i]),
                             "cost": paid[j], "p_spam": float(proba[i, s]), "log_odds": float(log_odds[i]),
                             "explanation": spam_filter.explain_row(X_costly[j], 5)}
                            for j, i in enumerate(costly)]
        result["report"] = data
    return result


def cost_report(labels, proba, spam_filter: SpamFilter, decisions=None) -> dict:
    """Decisions under the filter's cost matrix: counts per (true class, decision) and mean cost
    (``decisions``: as the filter made them, e.g. with its familiarity guard; default: from ``proba``)."""
    cm = spam_filter.costs
    if cm is None:
        raise ConfigError("a cost report needs the filter's costs (--cost)")
    decisions = spam_filter.decide(proba) if decisions is None else decisions
    out = {**cm.outcome(labels, proba, decisions),
           "threshold": cm.threshold() if cm.decisions == ["ham", "spam"] and cm.classes == ["ham", "spam"]
           else None}
    if spam_filter.threshold is not None:
        # decide() calls spam above the threshold `spamkit threshold --save` chose, not by the costs
        out["saved_threshold"] = float(spam_filter.threshold)
    return out
