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
from ..spamfilter import SpamFilter
from ..text import Analyzer
from ..config import filter_from_config


def cross_validated_log_odds(spam_filter: SpamFilter, corpora, folds: int = 5, seed: int = 0,
                             progress=None, return_folds: bool = False, status=None, tokenize=None,
                             purpose: str = "cross-validation"):
    """Out-of-fold log-odds of spam for every message of labelled ham/spam corpora.

    Each fold is scored by a filter built like ``spam_filter`` (same analyzer settings,
    vectorizer settings, model parameters and calibration) but trained from scratch on the
    other folds, so a threshold chosen on these scores is chosen on data no filter saw.
    ``spam_filter`` need not be fitted: only its configuration is used. Returns
    ``(is_spam, log_odds)``, and the fold of each message with ``return_folds``.
    ``status(done, total, text)`` hears the folds as they start (reading is step 0 of
    ``folds + 1``). ``tokenize``: where the messages are tokenized (:meth:`SpamFilter.tokenized`).
    """
    from sklearn.base import clone

    from ..selection import stratified_folds
    labels = []

    def labelled():
        for msg in iter_corpora(corpora):
            if msg.label not in (HAM_NAME, SPAM_NAME):
                raise CorpusError(f"{msg.source}: {purpose} needs two classes named ham and spam, got "
                                  f"{msg.label!r} (more classes: spamkit evaluate on a held-out corpus)")
            labels.append(msg.label)
            if progress is not None:
                progress(msg)
            yield msg

    tokens = list(spam_filter.tokenized(labelled(), tokenize))
    y = np.asarray(labels)
    require_classes(Counter(labels), "the threshold corpus")
    fold_of = stratified_folds(y, folds, seed=seed)
    scores = np.zeros(len(y))
    config = spam_filter.vectorizer.get_config()
    for k in range(folds):
        if status is not None:
            status(k + 1, folds + 1, f"fold {k + 1} of {folds}")
        held = np.flatnonzero(fold_of == k)
        train = np.flatnonzero(fold_of != k)
        vectorizer = Vectorizer(**config)
        f = SpamFilter(spam_filter.analyzer, vectorizer, clone(spam_filter.model), calibrate=spam_filter.calibrate)
        X = (vectorizer.fit_transform([tokens[i] for i in train], y[train]) if config.get("select") == "ig"
             else vectorizer.fit_transform(tokens[i] for i in train))
        f.model.fit(X, y[train])
        f.classes_ = f.model.classes_
        if f.calibrate != "none":
            f.calibration = f.fit_calibration(X, y[train])
        lp = f.log_proba(vectorizer.transform(tokens[i] for i in held))
        s = list(f.classes_).index(SPAM_NAME)
        with np.errstate(invalid="ignore"):
            scores[held] = lp[:, s] - lp[:, 1 - s]
    # kNN's log-odds are infinite when every neighbour agrees: keep them finite and ordered
    scores = finite_log_odds(scores)
    if return_folds:
        return y == SPAM_NAME, scores, fold_of
    return y == SPAM_NAME, scores


def compare_configs(configs: list, corpora_factory, folds: int = 5, seed: int = 0, progress=None,
                    engine=None, status=None) -> dict:
    """Cross-validate each configuration on the same stratified folds; measures per configuration.

    ``configs``: (name, settings) pairs; ``corpora_factory()`` opens the corpora afresh for each
    configuration (each pass streams them). The folds depend only on the labels and ``seed``,
    so every configuration is scored on the same split, and per-fold AUC differences are paired.
    ``engine``: None cross-validates in this process (:func:`cross_validated_log_odds`); an engine
    with its ``cross_validated_log_odds`` (same signature and result; the Dask engine).
    ``status(done, total, text)`` hears each configuration's folds as they start.
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
            cv = cross_validated_log_odds if engine is None else engine.cross_validated_log_odds
            y, s, fold_of = cv(spam_filter, corpora, folds, seed, progress, return_folds=True, status=config_status)
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
    base = results[0]
    for r in results[1:]:
        diffs = [a["auc"] - b["auc"] for a, b in zip(r["per_fold"], base["per_fold"])]
        r["vs_first"] = {"auc_diff_mean": float(np.mean(diffs)), "auc_diff_std": float(np.std(diffs, ddof=1)),
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
