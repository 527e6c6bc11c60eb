"""Online evaluation for any number of classes: each message classified, then learned (the TREC
protocol without the spam-track measures).

Takes labelled messages of K classes and a counting model (multinomial, complement or
Bernoulli NB over hashed features) and gives the K-class measures of the stream's
pre-learning predictions and a learning curve; the two-class protocol with the spam-track
measures is :mod:`spamkit.jobs.evaluation`.
"""

from __future__ import annotations

import time
from collections import deque

import numpy as np

from ..common.errors import ConfigError, CorpusError
from ..decide.curves import one_vs_rest
from ..decide.metrics import multiclass_report
from ..features.vectorizer import Vectorizer
from ..models.registry import make_model
from ..parse.message import parse_message

#: the models an online evaluation of more than two classes runs
ONLINE_K_MODELS = ("multinomial", "complement", "bernoulli")


def online_evaluate_classes(messages, analyzer, model: str = "multinomial", alpha: float = 1.0,
                            hashing: int = 2 ** 20, complement: dict | None = None, progress=None,
                            tokenize=None, points: int = 10, keep_proba: bool = False) -> dict:
    """Classify each message, then learn it, for any number of classes (the TREC protocol
    without the spam-track measures).

    ``messages`` are read first (their labels name the classes the model learns); each is then
    scored by the model as it stands -- the classes not learned yet have no messages, so
    probability 0; before the first message every class gets 1/K -- and learned with one
    ``partial_fit``. The measures are those of the K-class ``evaluate`` on the stream's
    pre-learning predictions (accuracy, macro F1, per-class precision/recall/F1, the confusion
    matrix, one-vs-rest ROC AUC and average precision, log loss) and a learning curve: the
    accuracy over a sliding window (a fifth of the stream, at least 200) at ``points`` steps.
    ``keep_proba``: also return each message's class probabilities before it was learned
    (``"proba"``, rows in stream order, columns in the order of ``"classes"``).
    """
    if model not in ONLINE_K_MODELS:
        raise ConfigError(f"online evaluation of more than two classes supports {', '.join(ONLINE_K_MODELS)}, "
                          f"not {model!r}")
    listed = list(messages)
    if not listed:
        raise CorpusError("no messages to evaluate")
    unlabelled = [m.source for m in listed if m.label is None]
    if unlabelled:
        raise CorpusError(f"{unlabelled[0]}: message has no class (and {len(unlabelled) - 1} more)")
    classes = sorted({str(m.label) for m in listed})
    if len(classes) < 2:
        raise CorpusError(f"online evaluation needs at least 2 classes, found only {classes[0]!r}")
    learner = make_model(model, alpha=alpha, complement=complement)
    vectorizer = Vectorizer.hashed(hashing, "binary" if model == "bernoulli" else "tf")
    ahead: deque = deque()

    def stream():
        for msg in listed:
            ahead.append(msg)
            yield msg

    token_lists = (tokenize(stream()) if tokenize is not None
                   else ((analyzer(parse_message(m.raw, m.kind)), ()) for m in stream()))
    k = len(classes)
    proba = np.empty((len(listed), k))
    learned = np.zeros(k, dtype=bool)
    started = time.perf_counter()
    for i, (tokens, _) in enumerate(token_lists):
        msg = ahead.popleft()
        x = vectorizer.transform([tokens])
        if learned.any():
            with np.errstate(divide="ignore", invalid="ignore"):
                lp = learner.joint_log_likelihood(x)[0]
            lp = np.where(learned, lp, -np.inf)
            lp = lp - np.logaddexp.reduce(lp[learned])
            proba[i] = np.exp(lp)
        else:
            proba[i] = 1.0 / k
        learner.partial_fit(x, [str(msg.label)], classes=classes)
        learned[classes.index(str(msg.label))] = True
        if progress is not None:
            progress(msg)
    seconds = time.perf_counter() - started
    truth = np.asarray([str(m.label) for m in listed], dtype=object)
    pred = np.asarray(classes, dtype=object)[np.argmax(proba, axis=1)]
    report = multiclass_report(truth, pred, classes)
    own = proba[np.arange(len(truth)), [classes.index(v) for v in truth]]
    n = len(truth)
    window = max(200, n // 5)
    curve = []
    for step in range(1, points + 1):
        end = round(step * n / points)
        start = max(0, end - window)
        curve.append({"start": start, "end": end, "accuracy": float(np.mean(pred[start:end] == truth[start:end]))})
    return {"n": n, "classes": classes, "measures": {
                **report, "log_loss": float(-np.mean(np.log(np.maximum(own, 1e-15)))),
                "one_vs_rest": one_vs_rest(truth, proba, classes)},
            "learning_curve": curve, "messages_per_second": n / seconds if seconds > 0 else None,
            **({"proba": proba} if keep_proba else {}),
            "settings": {"model": model, "alpha": alpha, "hashing": hashing, "classes": classes,
                         **({"complement": learner.get_params()} if model == "complement" else {}),
                         "analyzer": {k: v for k, v in analyzer.get_config().items() if k != "stop_word_list"}}}
