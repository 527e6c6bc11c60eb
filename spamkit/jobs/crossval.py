"""Model selection over corpora: cross-validated scores of a configuration, configurations
compared on the same folds, and kNN's k and weighting tuned by cross-validation.

The fold and matrix-level protocols are :mod:`spamkit.evaluation`; these jobs read the
corpora, build the features and call them.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from ..corpus import iter_corpora, require_classes
from ..errors import CorpusError
from ..features import Vectorizer
from ..labels import HAM_NAME, SPAM_NAME
from ..models import KNNClassifier
from ..models.base import finite_log_odds
from ..scoring.arrays import expit
from ..spamfilter import SpamFilter
from ..text import Analyzer
from ..config import filter_from_config


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

    from ..selection import stratified_folds
    labels = []
    texts = [] if spam_filter.reads_bytes else None

    def labelled():
        for msg in iter_corpora(corpora):
            if msg.label is None or (ham_spam and msg.label not in (HAM_NAME, SPAM_NAME)):
                raise CorpusError(f"{msg.source}: {purpose} needs two classes named ham and spam, got "
                                  f"{msg.label!r}" if ham_spam else
                                  f"{msg.source}: message has no class; {purpose} needs labelled corpora")
            labels.append(msg.label)
            if texts is not None:
                texts.append(spam_filter.side_text(msg))
            if progress is not None:
                progress(msg)
            yield msg

    tokens = list(spam_filter.tokenized(labelled(), tokenize))
    y = np.asarray(labels)
    require_classes(Counter(labels), f"the {purpose} corpus")
    classes = sorted(set(map(str, labels)))
    fold_of = stratified_folds(y, folds, seed=seed)
    log_proba = np.full((len(y), len(classes)), -np.inf)
    config = spam_filter.vectorizer.get_config()
    context = keys = None
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
                    fitted.append(grams.held_out_scores(rows, y[train], inner_folds) if inner >= 2
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
        log_proba[np.ix_(held, columns)] = lp
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


def k_class_measures(y, classes: list, log_proba: np.ndarray, fold_of: np.ndarray, folds: int) -> dict:
    """Cross-validated measures of a K-class filter: accuracy, macro F1, log loss, the one-vs-rest
    AUC and average precision (per class, macro, weighted, micro), accuracy per fold, and the
    micro-averaged ROC curve (every message's score for every class in one ranking, true for its
    own class; at most 2,000 points) that ``compare --report`` overlays."""
    from ..metrics import multiclass_report, one_vs_rest, roc_curve
    proba = np.exp(log_proba)
    pred = np.asarray(classes, dtype=object)[np.argmax(log_proba, axis=1)]
    truth = np.asarray([str(v) for v in y], dtype=object)
    report = multiclass_report(truth, pred, classes)
    own = log_proba[np.arange(len(truth)), [classes.index(v) for v in truth]]
    per_fold = [{"accuracy": float(np.mean(pred[fold_of == k] == truth[fold_of == k]))} for k in range(folds)]
    onehot = (truth[:, None] == np.asarray(classes, dtype=object)[None, :]).ravel()
    fpr, tpr, _ = roc_curve(onehot, proba.ravel())
    keep = np.unique(np.linspace(0, len(fpr) - 1, min(len(fpr), 2000)).astype(int))
    return {"n": int(len(truth)), "classes": classes, "micro_roc": {"fpr": fpr[keep].tolist(), "tpr": tpr[keep].tolist()}, "accuracy": report["accuracy"], "macro_f1": report["macro_f1"],
            "log_loss": float(-np.mean(np.maximum(own, np.log(1e-15)))) + 0.0, "per_class": report["per_class"],
            "confusion": report["confusion"], "one_vs_rest": one_vs_rest(truth, proba, classes), "per_fold": per_fold,
            "accuracy_fold_mean": float(np.mean([f["accuracy"] for f in per_fold])),
            "accuracy_fold_std": float(np.std([f["accuracy"] for f in per_fold], ddof=1))}


def compare_configs(configs: list, corpora_factory, folds: int = 5, seed: int = 0, progress=None,
                    engine=None, status=None, costs=None) -> dict:
    """Cross-validate each configuration on the same stratified folds; measures per configuration.

    ``configs``: (name, settings) pairs; ``corpora_factory()`` opens the corpora afresh for each
    configuration (each pass streams them). The folds depend only on the labels and ``seed``,
    so every configuration is scored on the same split, and per-fold AUC differences are paired.
    ``engine``: None cross-validates in this process (:func:`cross_validated_log_odds`); an engine
    with its ``cross_validated_log_odds`` (same signature and result; the Dask engine).
    ``status(done, total, text)`` hears each configuration's folds as they start. ``costs`` (a
    :class:`~spamkit.decision.CostMatrix` over the corpus's classes, any number): each
    configuration's out-of-fold probabilities are also decided by these costs, with the realised
    and the expected cost per message (:meth:`~spamkit.decision.CostMatrix.outcome`).
    """
    from ..evaluation import bootstrap_auc
    from ..metrics import roc_auc, roc_curve, trec_measures
    results = []
    steps = len(configs) * (folds + 1)
    for number, (name, settings) in enumerate(configs):
        def config_status(done, total, text, number=number, name=name):
            if status is not None:
                status(number * (folds + 1) + done, steps,
                       f"{name[:30]} ({number + 1} of {len(configs)}): {text}" if len(configs) > 1 else text)
        spam_filter = filter_from_config(settings)
        corpora = corpora_factory()
        try:
            if engine is None or hasattr(engine, "tokenizer"):      # this process (and its worker processes)
                tokenize = engine.tokenizer(spam_filter.analyzer) if engine is not None else None
                labels, classes, lp, fold_of = cross_validated_log_proba(
                    spam_filter, corpora, folds, seed, progress, config_status, tokenize)
                if classes != [HAM_NAME, SPAM_NAME]:
                    results.append({"name": name, "settings": settings,
                                    **k_class_measures(labels, classes, lp, fold_of, folds)})
                    if costs is not None:
                        results[-1]["costs"] = costs.align(classes).outcome(labels, np.exp(lp))
                    continue
                y = labels == SPAM_NAME
                with np.errstate(invalid="ignore"):
                    s = finite_log_odds(lp[:, 1] - lp[:, 0])
            else:                                                   # the Dask engine: ham and spam
                y, s, fold_of = engine.cross_validated_log_odds(spam_filter, corpora, folds, seed, progress,
                                                                return_folds=True, status=config_status)
        finally:
            for c in corpora:
                c.close()
        per_fold = []
        for k in range(folds):
            m = fold_of == k
            per_fold.append({"auc": float(roc_auc(y[m], s[m])), "accuracy": float(np.mean((s[m] > 0) == y[m]))})
        called = s > 0
        fpr, tpr, _ = roc_curve(y, s)
        keep = np.unique(np.linspace(0, len(fpr) - 1, min(len(fpr), 2000)).astype(int))
        results.append({
            "roc": {"fpr": fpr[keep].tolist(), "tpr": tpr[keep].tolist()},
            "name": name, "settings": settings, "n": int(len(y)),
            "accuracy": float(np.mean(called == y)), "spam_recall": float(np.mean(called[y])),
            "ham_recall": float(np.mean(~called[~y])), **bootstrap_auc(y, s, seed=seed),
            "lam_pct": trec_measures(y, s, 0.0)["lam_pct"], "per_fold": per_fold,
            "auc_fold_mean": float(np.mean([f["auc"] for f in per_fold])),
            "auc_fold_std": float(np.std([f["auc"] for f in per_fold], ddof=1)),
            "accuracy_fold_mean": float(np.mean([f["accuracy"] for f in per_fold])),
            "accuracy_fold_std": float(np.std([f["accuracy"] for f in per_fold], ddof=1))})
        if costs is not None:
            p_spam = expit(s)
            results[-1]["costs"] = costs.align([HAM_NAME, SPAM_NAME]).outcome(
                np.where(y, SPAM_NAME, HAM_NAME), np.column_stack([1.0 - p_spam, p_spam]))
    base = results[0]
    measure = "auc" if "auc" in base else "accuracy"            # K classes: paired accuracy per fold
    for r in results[1:]:
        diffs = [a[measure] - b[measure] for a, b in zip(r["per_fold"], base["per_fold"])]
        r["vs_first"] = {"measure": measure, f"{measure}_diff_mean": float(np.mean(diffs)),
                         f"{measure}_diff_std": float(np.std(diffs, ddof=1)),
                         "folds_better": int(sum(d > 0 for d in diffs)), "folds_worse": int(sum(d < 0 for d in diffs))}
    return {"folds": folds, "seed": seed, "configs": results}


def tune_filter(corpora, ks, weights, metric: str = "cosine", representation: str = "tf", folds: int = 5,
                seed: int = 0, progress=None, analyzer: Analyzer | None = None):
    """Cross-validate kNN's k and weighting on corpora (features built once, on all of them).

    The vocabulary is learned from every message before the folds are cut; it uses no
    labels, so no class information leaks from the held-out folds.
    """
    from ..selection import tune_knn
    f = SpamFilter(analyzer, Vectorizer(representation), KNNClassifier())
    labels = []

    def stream():
        for msg in iter_corpora(corpora):
            if msg.label is None:
                raise CorpusError(f"{msg.source}: message has no class; tuning needs labelled corpora")
            labels.append(msg.label)
            if progress is not None:
                progress(msg)
            yield f.tokens(msg)

    X = f.vectorizer.fit_transform(stream())
    y = np.asarray(labels)
    require_classes(Counter(y.tolist()), "tuning data")
    return tune_knn(X, y, ks=ks, weights=weights, folds=folds, seed=seed, metric=metric)
