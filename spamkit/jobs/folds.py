"""Out-of-fold scores of a filter's configuration on labelled corpora, in this process: what
:meth:`spamkit.jobs.engine.Engine.cross_validated_log_proba` does (messages tokenized here or by
an engine's workers: ``tokenize``)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from ..corpus import require_classes
from ..features.vectorizer import Vectorizer
from ..common.labels import SPAM_NAME
from ..models.base import finite_log_odds
from ..filterfile.spamfilter import SpamFilter
from .rows import labelled_messages


def cross_validated_log_proba(spam_filter: SpamFilter, corpora, folds: int = 5, seed: int = 0, progress=None,
                              status=None, tokenize=None, purpose: str = "cross-validation", ham_spam: bool = False):
    """Out-of-fold class log-probabilities of every message of labelled corpora, any number of
    classes: ``(labels, classes, log_proba (n, K), fold of each message)``.

    Each fold is scored by a filter built like ``spam_filter`` (same analyzer settings,
    vectorizer settings, model parameters and calibration) but trained from scratch on the
    other folds (stratified: every class in every fold's training part), so anything chosen
    on these scores is chosen on data no filter saw. ``spam_filter`` need not be fitted: only
    its configuration is used. ``ham_spam`` refuses other labels (``purpose`` says what for).
    ``status(done, total, text)`` hears the folds as they start (reading is step 0 of
    ``folds + 1``). ``tokenize``: where the messages are tokenized (:meth:`SpamFilter.tokenized`).
    """
    from sklearn.base import clone

    from ..decide.selection import stratified_folds
    labels: list = []
    texts: list | None = [] if spam_filter.reads_bytes else None

    messages = labelled_messages(corpora, spam_filter, labels, texts, progress, purpose, ham_spam)
    tokens = list(spam_filter.tokenized(messages, tokenize))
    y = np.asarray(labels)
    require_classes(Counter(labels), f"the {purpose} corpus")
    classes = sorted(set(map(str, labels)))
    fold_of = stratified_folds(y, folds, seed=seed)
    log_proba = np.full((len(y), len(classes)), -np.inf)
    config = spam_filter.vectorizer.get_config()
    context: Any = None
    keys: Any = None
    if spam_filter.context is not None:
        # one context model of every message; each fold's is it with the fold unlearned (exact)
        context = clone(spam_filter.context)
        keys = spam_filter.context_keys(texts)
        context.fit(keys, y)
    for k in range(folds):
        if status is not None:
            status(k + 1, folds + 1, f"fold {k + 1} of {folds}")
        held = np.flatnonzero(fold_of == k)
        train = np.flatnonzero(fold_of != k)
        vectorizer = Vectorizer(**config)
        # a 4-gram model cannot unlearn exactly: each fold trains its own, in corpus order
        grams = clone(spam_filter.grams) if spam_filter.grams is not None else None
        f = SpamFilter(spam_filter.analyzer, vectorizer, clone(spam_filter.model), calibrate=spam_filter.calibrate,
                       context=context, context_bytes=spam_filter.context_bytes, grams=grams)
        X = (vectorizer.fit_transform([tokens[i] for i in train], y[train]) if config.get("select") == "ig"
             else vectorizer.fit_transform(tokens[i] for i in train))
        if texts is None:
            f.model.fit(X, y[train])
            side = None
        else:
            inner, inner_folds = f.model.fold_assignment(y[train])
            fitted, scored = [], []
            if context is not None:
                held_keys = keys.rows(held)
                context.unlearn(held_keys, y[held])
            try:
                if context is not None:
                    fitted.append(context.held_out_mean_log_ratio(keys.rows(train), y[train], inner_folds)
                                  if inner >= 2 else np.zeros(len(train)))
                    scored.append(context.mean_log_ratio(held_keys))
                if grams is not None:
                    rows = f.gram_rows([texts[i] for i in train])
                    grams.fit(rows, y[train])
                    fitted.append(grams.held_out_scores(rows, y[train]) if inner >= 2
                                  else np.zeros(len(train)))
                    scored.append(grams.decision_function(f.gram_rows([texts[i] for i in held])))
                f.model.fit(X, y[train], side=np.column_stack(fitted))
                side = np.column_stack(scored)
            finally:
                if context is not None:
                    context.partial_fit(held_keys, y[held])
        f.classes_ = f.model.classes_
        if f.calibrate != "none":
            f.calibration = f.fit_calibration(X, y[train])
        lp = f.log_proba(vectorizer.transform(tokens[i] for i in held), side)
        columns = [classes.index(str(c)) for c in f.classes_]       # a class absent from training stays -inf
        log_proba[np.ix_(held, np.asarray(columns, dtype=np.int64))] = lp
    return y, classes, log_proba, fold_of


def cross_validated_log_odds(spam_filter: SpamFilter, corpora, folds: int = 5, seed: int = 0,
                             progress=None, return_folds: bool = False, status=None, tokenize=None,
                             purpose: str = "cross-validation"):
    """Out-of-fold log-odds of spam for every message of labelled ham/spam corpora
    (:func:`cross_validated_log_proba` for two classes): ``(is_spam, log_odds)``, and the fold of
    each message with ``return_folds``."""
    y, classes, lp, fold_of = cross_validated_log_proba(spam_filter, corpora, folds, seed, progress, status,
                                                        tokenize, purpose, ham_spam=True)
    s = classes.index(SPAM_NAME)
    with np.errstate(invalid="ignore"):
        scores = lp[:, s] - lp[:, 1 - s]
    # kNN's log-odds are infinite when every neighbour agrees: keep them finite and ordered
    scores = finite_log_odds(scores)
    if return_folds:
        return y == SPAM_NAME, scores, fold_of
    return y == SPAM_NAME, scores
