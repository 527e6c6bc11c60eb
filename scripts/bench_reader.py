#!/usr/bin/env python3
"""Reader + parser throughput on real corpora, next to a standard-library reference.

For each corpus, in one process on the same machine:

* spamkit: ``Corpus`` (auto-detected layout, read from the archive) and
  ``parse_message`` on every message;
* reference: ``tarfile`` streaming the same archive and the standard library's
  ``email`` package with ``policy.default`` (the modern API), extracting every
  text part with ``get_content()``; its failures are counted, not hidden.

Prints messages/s and MB/s (MB = 10^6 bytes of raw message) for both, their
ratio, and how many messages each could not turn into text. The best of
``--repeat`` runs is reported for each side.

    python scripts/bench_reader.py [--corpora ../shared/corpora] [--repeat 3]
"""

from __future__ import annotations

import argparse
import email
import email.policy
import tarfile
import time
from pathlib import Path

from spamkit.corpus import Corpus
from spamkit.parse.message import parse_message


def run_spamkit(path: Path):
    n = nbytes = fallbacks = 0
    started = time.perf_counter()
    with Corpus(path) as corpus:
        for msg in corpus:
            m = parse_message(msg.raw, msg.kind)
            n += 1
            nbytes += len(msg.raw)
            fallbacks += bool(m.defects)
    return n, nbytes, time.perf_counter() - started, 0, fallbacks


def _reference_text(raw: bytes) -> str:
    msg = email.message_from_bytes(raw, policy=email.policy.default)
    texts = []
    for part in msg.walk():
        if part.get_content_maintype() == "text" and not part.is_attachment():
            texts.append(part.get_content())
    return "\n".join(texts)


def run_reference(path: Path, enron: bool):
    n = nbytes = failures = 0
    started = time.perf_counter()
    with tarfile.open(path, "r|*") as tar:
        for member in tar:
            if not member.isfile():
                continue
            name = member.name
            if enron and not name.endswith((".ham.txt", ".spam.txt")):
                continue
            if not enron and "/data/inmail." not in name:
                continue
            raw = tar.extractfile(member).read()
            n += 1
            nbytes += len(raw)
            try:
                if enron:       # the reference cannot parse Enron as mail; decode it as text
                    raw.decode("utf-8", "replace")
                else:
                    _reference_text(raw)
            except Exception:   # noqa: BLE001 - counting the reference's failures is the point
                failures += 1
    return n, nbytes, time.perf_counter() - started, failures, 0


def best(fn, repeat):
    runs = [fn() for _ in range(repeat)]
    return min(runs, key=lambda r: r[2])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpora", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "corpora")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    corpora = [("trec07p-dev", args.corpora / "trec07p-dev" / "trec07p-dev.tar.gz", False)]
    corpora += [(f"enron{i}", args.corpora / "enron-spam" / f"enron{i}.tar.gz", True) for i in (1, 3)]
    header = (f"{'corpus':<12} {'messages':>8} {'MB':>6} | {'spamkit msg/s':>13} {'MB/s':>6} {'fallbk':>6} | "
              f"{'stdlib msg/s':>12} {'MB/s':>6} {'failed':>6} | {'ratio':>5}")
    print(header)
    print("-" * len(header))
    for name, path, enron in corpora:
        if not path.exists():
            print(f"{name:<12} (missing: {path})")
            continue
        n, nb, t, _, fb = best(lambda path=path: run_spamkit(path), args.repeat)
        rn, rnb, rt, rfail, _ = best(lambda path=path, enron=enron: run_reference(path, enron), args.repeat)
        print(f"{name:<12} {n:>8} {nb / 1e6:>6.1f} | {n / t:>13.0f} {nb / 1e6 / t:>6.2f} {fb:>6} | "
              f"{rn / rt:>12.0f} {rnb / 1e6 / rt:>6.2f} {rfail:>6} | {(n / t) / (rn / rt):>5.2f}")
    print("\nratio = spamkit messages/s / reference messages/s (higher is faster). The reference on Enron "
          "only decodes bytes to text (the files are not mail), so it is an upper bound there.")


if __name__ == "__main__":
    main()
