"""Model selection over corpora: configurations compared on the same folds, and kNN's k and
weighting tuned by cross-validation (a configuration's out-of-fold scores: :mod:`spamkit.jobs.folds`).

The fold and matrix-level protocols are :mod:`spamkit.jobs.evaluation`; these jobs read the
corpora, build the features and call them.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from ..corpus import iter_corpora, require_classes
from ..common.errors import CorpusError
from ..features.vectorizer import Vectorizer
from ..common.labels import HAM_NAME, SPAM_NAME
from ..models import KNNClassifier
from ..models.base import finite_log_odds
from ..scoring.arrays import expit
from ..filterfile.spamfilter import SpamFilter
from ..text import Analyzer
from ..filterfile.config import filter_from_config
from .engine import IN_PROCESS, Engine


def k_class_measures(y, classes: list, log_proba: np.ndarray, fold_of: np.ndarray, folds: int) -> dict:
    """Cross-validated measures of a K-class filter: accuracy, macro F1, log loss, the one-vs-rest
    AUC and average precision (per class, macro, weighted, micro), accuracy per fold, and the
    micro-averaged ROC curve (every message's score for every class in one ranking, true for its
    own class; at most 2,000 points) that ``compare --report`` overlays."""
    from ..decide.metrics import multiclass_report
    from ..decide.curves import one_vs_rest, roc_curve
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
                    engine: Engine = IN_PROCESS, status=None, costs=None) -> dict:
    """Cross-validate each configuration on the same stratified folds; measures per configuration.

    ``configs``: (name, settings) pairs; ``corpora_factory()`` opens the corpora afresh for each
    configuration (each pass streams them). The folds depend only on the labels and ``seed``,
    so every configuration is scored on the same split, and per-fold AUC differences are paired.
    ``engine``: where the folds are scored (:meth:`spamkit.jobs.engine.Engine.cross_validated_log_proba`;
    the same result everywhere).
    ``status(done, total, text)`` hears each configuration's folds as they start. ``costs`` (a
    :class:`~spamkit.decide.decision.CostMatrix` over the corpus's classes, any number): each
    configuration's out-of-fold probabilities are also decided by these costs, with the realised
    and the expected cost per message (:meth:`~spamkit.decide.decision.CostMatrix.outcome`).
    """
    from .reports import bootstrap_auc
    from ..decide.metrics import trec_measures
    from ..decide.curves import roc_auc, roc_curve
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
            labels, classes, lp, fold_of = engine.cross_validated_log_proba(spam_filter, corpora, folds, seed,
                                                                            progress, config_status)
        finally:
            for c in corpora:
                c.close()
        if classes != [HAM_NAME, SPAM_NAME]:
            results.append({"name": name, "settings": settings, **k_class_measures(labels, classes, lp, fold_of, folds)})
            if costs is not None:
                results[-1]["costs"] = costs.align(classes).outcome(labels, np.exp(lp))
            continue
        y = labels == SPAM_NAME
        with np.errstate(invalid="ignore"):
            s = finite_log_odds(lp[:, 1] - lp[:, 0])
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
    from ..decide.selection import tune_knn
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
