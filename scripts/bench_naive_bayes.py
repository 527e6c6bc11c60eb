#!/usr/bin/env python3
"""Naive Bayes end to end from raw files: spamkit against a scikit-learn pipeline, one process.

For each corpus (trec07p-dev and Enron1-6 from ../shared/corpora), the first half
of the messages in corpus order trains and the second half is classified:

* spamkit: ``SpamFilter`` (Analyzer -> Vectorizer "tf" -> MultinomialNB), saved to a
  filter file and loaded back;
* scikit-learn: ``CountVectorizer`` + ``MultinomialNB`` in a ``Pipeline`` on the same
  decoded text (Subject and body from spamkit's parser, which both sides use, so the
  comparison is of everything after parsing plus the shared parsing cost), saved with
  pickle (what scikit-learn documents) and loaded back.

Both read the corpus through spamkit's streaming reader and feed the text as a
generator, so neither needs the corpus in memory. Reported per side: training time,
classification throughput (messages/s and MB/s of raw mail, parsing included), peak
traced memory during training (tracemalloc, measured in a second, untimed run since
tracing slows Python down), model load time (best of ``--repeat`` runs for every time), and the AUC on the second half (to show
the two do the same job). Ratios are scikit-learn / spamkit for times and memory
(> 1 means spamkit is better) and spamkit / scikit-learn for throughput.

    python scripts/bench_naive_bayes.py [--corpora ../shared/corpora] [--only trec enron1] [--same-text]

By default spamkit runs its default analyzer, which reads more than the scikit-learn side
(address fields, URL hosts, HTML and attachment markers: the AUC column shows what that
buys); ``--same-text`` gives it exactly the Subject and body words, the same job.

Runs on one core: set OMP_NUM_THREADS=1 and friends before numpy loads.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import gc  # noqa: E402
import pickle  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from sklearn.feature_extraction.text import CountVectorizer  # noqa: E402
from sklearn.naive_bayes import MultinomialNB  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402

from spamkit.corpus import Corpus  # noqa: E402
from spamkit.parse.message import parse_message  # noqa: E402
from spamkit.decide.curves import roc_auc  # noqa: E402
from spamkit import SpamFilter  # noqa: E402
from spamkit.text import Analyzer  # noqa: E402


REPEAT = 2
#: spamkit reads the same fields as the scikit-learn side (Subject and body words only)
SAME_TEXT = False


def split(path: Path):
    """Ids of the first half, and the corpus size; the corpus is re-read for each use."""
    with Corpus(path) as corpus:
        ids = [m.id for m in corpus]
    return set(ids[: len(ids) // 2]), len(ids)


def stream(path: Path, ids: set, inside: bool):
    with Corpus(path) as corpus:
        for m in corpus:
            if (m.id in ids) == inside:
                yield m


def text_of(m) -> str:
    msg = parse_message(m.raw, m.kind)
    return f"{msg.subject}\n{msg.body}"


def spamkit_train(path, train_ids):
    labels = []

    def items():
        for m in stream(path, train_ids, True):
            labels.append(m.label)
            yield m

    analyzer = Analyzer(headers=("subject",), urls=False, meta=False) if SAME_TEXT else None
    return SpamFilter(analyzer=analyzer).fit(items())


def sklearn_train(path, train_ids):
    labels = []

    def texts():
        for m in stream(path, train_ids, True):
            labels.append(m.label)
            yield text_of(m)

    pipe = make_pipeline(CountVectorizer(), MultinomialNB())
    vec, nb = pipe.steps[0][1], pipe.steps[1][1]
    X = vec.fit_transform(texts())               # one streaming pass, as spamkit
    nb.fit(X, labels)
    return pipe


def timed(fn, *args, repeat: int = 1):
    """Result and the best wall time of ``repeat`` runs (the first run also warms caches)."""
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        t = time.perf_counter()
        out = fn(*args)
        best = min(best, time.perf_counter() - t)
    return out, best


def peak_memory(fn, *args) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        fn(*args)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def classify_spamkit(f, msgs):
    p = np.empty(len(msgs))
    for i, m in enumerate(msgs):              # one message at a time, as a mail filter does
        p[i] = f.p_spam([m])[0]
    return p


def classify_sklearn(pipe, msgs):
    col = list(pipe.classes_).index("spam")
    p = np.empty(len(msgs))
    for i, m in enumerate(msgs):
        p[i] = pipe.predict_proba([text_of(m)])[0, col]
    return p


def bench(name: str, path: Path, limit: int):
    train_ids, n = split(path)
    test = list(stream(path, train_ids, False))[:limit]
    mb = sum(len(m.raw) for m in test) / 1e6
    y = np.array([m.label == "spam" for m in test])
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        for side, train, classify in (("spamkit", spamkit_train, classify_spamkit),
                                      ("scikit-learn", sklearn_train, classify_sklearn)):
            model, t_train = timed(train, path, train_ids, repeat=REPEAT)
            mem = peak_memory(train, path, train_ids)
            model_path = Path(tmp) / f"{side}.model"
            if side == "spamkit":
                model.save(model_path)
                loaded, t_load = timed(SpamFilter.load, model_path)
            else:
                model_path.write_bytes(pickle.dumps(model))
                loaded, t_load = timed(lambda p: pickle.loads(p.read_bytes()), model_path)
            p, t_cls = timed(classify, loaded, test, repeat=REPEAT)
            rows[side] = {"train_s": t_train, "mem_mb": mem / 2 ** 20, "msg_s": len(test) / t_cls,
                          "mb_s": mb / t_cls, "load_ms": 1000 * t_load, "auc": roc_auc(y, p),
                          "size_kb": model_path.stat().st_size / 1024}
    s, k = rows["spamkit"], rows["scikit-learn"]
    print(f"{name:<12} {n:>6} | " + " | ".join(
        f"{r['train_s']:7.2f} {r['msg_s']:7.0f} {r['mb_s']:6.2f} {r['mem_mb']:7.1f} {r['load_ms']:7.1f} "
        f"{r['auc']:.4f}" for r in (s, k))
        + f" | {k['train_s'] / s['train_s']:5.2f} {s['msg_s'] / k['msg_s']:5.2f} {k['mem_mb'] / s['mem_mb']:5.2f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpora", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "corpora")
    parser.add_argument("--only", nargs="*", default=None, help="names: trec, enron1 ... enron6")
    parser.add_argument("--limit", type=int, default=2000, help="messages classified one by one per corpus")
    parser.add_argument("--repeat", type=int, default=2, help="timed runs per measurement (best is kept)")
    parser.add_argument("--same-text", action="store_true",
                        help="spamkit tokenizes only what scikit-learn sees (Subject and body words), "
                             "instead of its default analyzer (also From/To/... fields, URL hosts, HTML "
                             "and attachment markers)")
    args = parser.parse_args()
    global REPEAT, SAME_TEXT
    REPEAT = args.repeat
    SAME_TEXT = args.same_text
    print("spamkit analyzer: " + ("Subject and body words only (--same-text)" if SAME_TEXT
                                  else "default (Subject, From, To, ... fields, body, URL hosts, markers)"))
    corpora = [("trec", args.corpora / "trec07p-dev" / "trec07p-dev.tar.gz")]
    corpora += [(f"enron{i}", args.corpora / "enron-spam" / f"enron{i}.tar.gz") for i in range(1, 7)]
    head = "train s   msg/s   MB/s  peakMB  load ms    AUC"
    print(f"{'':<12} {'':>6} | {'spamkit':^{len(head)}} | {'scikit-learn':^{len(head)}} | {'ratios':^17}")
    print(f"{'corpus':<12} {'msgs':>6} | {head} | {head} | train  rate  mem")
    for name, path in corpora:
        if args.only and name not in args.only:
            continue
        if not path.exists():
            print(f"{name:<12} missing: {path}")
            continue
        bench(name, path, args.limit)
    print("\ntrain s: first half, from raw files; msg/s, MB/s: second half classified one message at a time "
          "(parse + features + model); peakMB: tracemalloc peak while training; load ms: model file to "
          "ready filter. ratios: train = sklearn/spamkit time, rate = spamkit/sklearn msg/s, "
          "mem = sklearn/spamkit peak memory (> 1: spamkit better).")


if __name__ == "__main__":
    main()
