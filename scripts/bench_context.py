#!/usr/bin/env python3
"""The default filter (the stack with the byte 4-gram model), the stack without it
(``--no-byte-grams``) and the accurate configurations (``spamkit train --context-model``, and
without the 4-grams) side by side, through the command line, on every raw-mail corpus:
accuracy on a held-out part and what each command costs, with the ratios to the default.

For each corpus (trec07p-dev, CSDMC2010 and, with ``--enron``, Enron1-6 from their archives):

* ``spamkit compare CORPUS --config best --config grams=false --config context=true,grams=false
  --config context=true`` (5-fold, the same folds):
  the pooled out-of-fold (1-ROCA)%, and spam and ham recall at P(spam) 0.5;
* ``spamkit train CORPUS`` with the default options, with ``--no-byte-grams``, with
  ``--context-model --no-byte-grams`` and with ``--context-model``: training
  messages/s and peak memory, and the filter file's size;
* ``spamkit evaluate FILTER CORPUS`` (every message): messages/s and peak memory;
* ``spamkit filter FILTER -`` (pipe mode, one message; every filter on the lean route, the
  context filters' with the compiled loops): milliseconds, median of ``--pipe`` runs, and the
  largest peak memory of those runs.

The configurations run in the same invocation, one after the other, each command started
fresh, so the ratios (to the default) compare like with like on the machine's current
load. Run from a checkout with spamkit installed::

    python scripts/bench_context.py [--corpora ../shared/corpora] [--enron] [--jobs 2] [--pipe 7]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import compile_package, run_child

CORPORA = {"trec": "trec07p-dev/trec07p-dev.tar.gz", "csdmc": "csdmc2010/csdmc2010.tar.gz",
           **{f"enron{i}": f"enron-spam/enron{i}.tar.gz" for i in range(1, 7)}}
CONFIGS = {"default": [], "nograms": ["--no-byte-grams"], "context": ["--context-model", "--no-byte-grams"],
           "accurate": ["--context-model"]}
#: the same configurations as ``spamkit compare --config`` settings
COMPARED = ["best", "grams=false", "context=true,grams=false", "context=true"]


def spamkit(*args) -> list:
    return [sys.executable, "-m", "spamkit", *map(str, args)]


def cross_validated(corpus: Path, jobs: int) -> dict:
    """Per configuration: pooled out-of-fold (1-ROCA)%, spam and ham recall % at P(spam) 0.5."""
    configs = [arg for config in COMPARED for arg in ("--config", config)]
    done = subprocess.run(spamkit("compare", corpus, *configs, "--json", "-q", "--jobs", jobs),
                          capture_output=True, check=True)
    out = {}
    for config, row in zip(CONFIGS, json.loads(done.stdout)["configs"]):
        out[config] = {"roca": 100 * (1 - row["auc"]), "spam_recall": 100 * row["spam_recall"],
                       "ham_recall": 100 * row["ham_recall"]}
    return out


def one_message(corpus: Path) -> bytes:
    """The first message of a corpus (its raw bytes), for pipe mode."""
    from spamkit.corpus import Corpus
    with Corpus(corpus) as c:
        for msg in c:
            return msg.raw
    raise SystemExit(f"{corpus}: empty")


def measure(name: str, corpus: Path, work: Path, jobs: int, pipe: int) -> dict:
    out = cross_validated(corpus, jobs)
    raw = one_message(corpus)
    message = work / "one.eml"
    message.write_bytes(raw)
    for config, options in CONFIGS.items():
        model = work / f"{name}-{config}.spamkit"
        report = work / f"{name}-{config}.json"
        with open(report, "wb") as fh:
            started = time.perf_counter()
            proc = subprocess.Popen(spamkit("train", corpus, "-o", model, "--json", "-q", "--jobs", jobs, *options),
                                    stdout=fh, stderr=subprocess.PIPE)
            _, status, usage = os.wait4(proc.pid, 0)
            train_s = time.perf_counter() - started
            if os.waitstatus_to_exitcode(status) != 0:
                raise SystemExit(f"train failed: {proc.stderr.read().decode()[-500:]}")
            proc.stderr.close()
        n_all = json.loads(report.read_text())["n_train"]
        eval_s, eval_mb = run_child(spamkit("evaluate", model, corpus, "-q", "--jobs", jobs), ok=(0,))
        times, peaks = [], []
        for _ in range(pipe):
            with open(message, "rb") as fh:
                seconds, peak = run_child(spamkit("filter", model, "-"), stdin=fh, ok=(0, 1, 2))
            times.append(seconds)
            peaks.append(peak)
        out[config] = {**out[config], "train_per_s": n_all / train_s, "train_mb": usage.ru_maxrss / 1024,
                       "eval_per_s": n_all / eval_s, "eval_mb": eval_mb, "file_mb": model.stat().st_size / 1e6,
                       "pipe_ms": 1e3 * statistics.median(times), "pipe_mb": max(peaks)}
        model.unlink()
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpora", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "corpora")
    parser.add_argument("--enron", action="store_true", help="also Enron1-6 from their archives")
    parser.add_argument("--jobs", type=int, default=2, help="--jobs of train and evaluate (default 2)")
    parser.add_argument("--pipe", type=int, default=7, help="pipe-mode runs per filter (the median is printed)")
    args = parser.parse_args()
    compile_package()
    names = ["trec", "csdmc"] + ([f"enron{i}" for i in range(1, 7)] if args.enron else [])
    print(f"5-fold cross-validation (recalls at P(spam) 0.5); train, evaluate: every message, --jobs {args.jobs}; "
          f"pipe mode: median of {args.pipe}")
    print(f"{'corpus':<8} {'filter':<8} {'(1-ROCA)%':>9} {'spam%':>6} {'ham%':>6} {'train/s':>8} {'MB':>5} "
          f"{'eval/s':>7} {'MB':>5} {'file MB':>7} {'pipe ms':>7} {'MB':>5}")
    with tempfile.TemporaryDirectory(prefix="bench-context-") as tmp:
        for name in names:
            result = measure(name, args.corpora / CORPORA[name], Path(tmp), args.jobs, args.pipe)
            for config, r in result.items():
                print(f"{name:<8} {config:<9}{r['roca']:>9.4f} {r['spam_recall']:>6.2f} {r['ham_recall']:>6.2f} "
                      f"{r['train_per_s']:>8.0f} {r['train_mb']:>5.0f} {r['eval_per_s']:>7.0f} {r['eval_mb']:>5.0f} "
                      f"{r['file_mb']:>7.1f} {r['pipe_ms']:>7.0f} {r['pipe_mb']:>5.0f}")
            d = result["default"]
            for config in list(CONFIGS)[1:]:
                c = result[config]
                print(f"{name:<8} {'÷ ' + config[:7]:<9}{c['roca'] / max(d['roca'], 1e-9):>9.2f} {'':>6} {'':>6} "
                      f"{c['train_per_s'] / d['train_per_s']:>8.2f} {c['train_mb'] / d['train_mb']:>5.1f} "
                      f"{c['eval_per_s'] / d['eval_per_s']:>7.2f} {c['eval_mb'] / d['eval_mb']:>5.1f} "
                      f"{c['file_mb'] / d['file_mb']:>7.1f} {c['pipe_ms'] / d['pipe_ms']:>7.1f} "
                      f"{c['pipe_mb'] / d['pipe_mb']:>5.1f}", flush=True)


if __name__ == "__main__":
    main()
