#!/usr/bin/env python3
"""Where the time of reading raw mail goes, stage by stage, per message.

On one corpus, in one process: reading the messages from the corpus (archive decompression,
the archive's index and the corpus reader), parsing them (``parse_message``), and tokenizing
the parsed messages with the default filter's analyzer (``Analyzer.mail()``), each timed
separately over every message, best of ``--repeat`` rounds. With ``--compare DIR`` the same
is timed in a subprocess with ``DIR`` (another checkout of spamkit, built in place) first on
``sys.path``, round by round in turns with this one, so that a machine whose speed drifts
slows both alike. Nothing is asserted; the numbers are for docs/results.md.

    python scripts/profile_stages.py [--corpus ../shared/corpora/trec07p-dev/trec07p-dev.tar.gz]
                                     [--repeat 3] [--compare ../other-checkout]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

DEFAULT_CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpora" / "trec07p-dev" / "trec07p-dev.tar.gz"


def one_round(corpus_path: str) -> dict:
    """Seconds of each stage over the whole corpus, and the message count."""
    from spamkit.corpus import Corpus
    from spamkit.parse.message import parse_message
    from spamkit.text import Analyzer
    started = time.perf_counter()
    with Corpus(corpus_path) as corpus:
        items = [(m.raw, m.kind) for m in corpus]
    read = time.perf_counter() - started
    started = time.perf_counter()
    messages = [parse_message(raw, kind) for raw, kind in items]
    parse = time.perf_counter() - started
    analyzer = Analyzer.mail()
    started = time.perf_counter()
    for m in messages:
        analyzer(m)
    tokens = time.perf_counter() - started
    import spamkit
    return {"n": len(items), "read": read, "parse": parse, "tokenize": tokens, "package": spamkit.__file__}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--compare", type=Path, default=None,
                        help="Another spamkit checkout (built in place) to time in turns with this one.")
    parser.add_argument("--one-round", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one_round:
        print(json.dumps(one_round(str(args.corpus))))
        return
    here = Path(__file__).resolve().parents[1]
    checkouts = [("this checkout", here)] + ([("--compare", args.compare.resolve())] if args.compare else [])
    best: dict = {name: None for name, _ in checkouts}
    for _ in range(args.repeat):
        for name, root in checkouts:
            env = {**os.environ, "PYTHONPATH": str(root)}
            out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--one-round", "--corpus",
                                  str(args.corpus)], env=env, cwd=root, capture_output=True, text=True, check=True)
            result = json.loads(out.stdout)
            package = Path(result.pop("package")).resolve()
            if root not in package.parents:
                raise SystemExit(f"{name}: imported spamkit from {package}, not from {root}")
            if best[name] is None:
                best[name] = result
            else:
                best[name] = {k: min(v, result[k]) for k, v in best[name].items()}
    print(f"{args.corpus.name}: ms per message, best of {args.repeat}")
    print(f"{'checkout':<16} {'read':>8} {'parse':>8} {'tokenize':>9}")
    for name, _ in checkouts:
        r = best[name]
        print(f"{name:<16} " + " ".join(f"{1000 * r[k] / r['n']:>8.3f}" for k in ("read", "parse"))
              + f" {1000 * r['tokenize'] / r['n']:>9.3f}")


if __name__ == "__main__":
    main()
