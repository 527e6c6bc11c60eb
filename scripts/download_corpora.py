#!/usr/bin/env python3
"""Download the public spam corpora spamkit reads, for users with internet access.

Never run by the tests or CI (they use ../shared/corpora). Files are saved
unchanged; spamkit reads the archives directly, so nothing needs unpacking.

    python scripts/download_corpora.py --out ~/corpora [enron sms spamassassin]

The TREC 2005-2007 spam-track corpora are distributed under a usage agreement
(University of Waterloo, G. Cormack), so they are not downloaded here; see
corpora/README.md.
"""

from __future__ import annotations

import argparse
import sys
import urllib.request
from pathlib import Path

SOURCES = {
    # Metsis, Androutsopoulos & Paliouras (2006), preprocessed Enron-spam.
    "enron": [f"https://www2.aueb.gr/users/ion/data/enron-spam/preprocessed/enron{i}.tar.gz" for i in range(1, 7)],
    # Almeida, Gómez Hidalgo & Yamakami (2011), UCI Machine Learning Repository.
    "sms": ["https://archive.ics.uci.edu/static/public/228/sms+spam+collection.zip"],
    # The SpamAssassin public corpus (2002-2005).
    "spamassassin": [f"https://spamassassin.apache.org/old/publiccorpus/{name}" for name in (
        "20030228_easy_ham.tar.bz2", "20030228_easy_ham_2.tar.bz2", "20030228_hard_ham.tar.bz2",
        "20030228_spam.tar.bz2", "20050311_spam_2.tar.bz2")],
}


def fetch(url: str, dest: Path) -> None:
    if dest.exists():
        print(f"have {dest}")
        return
    print(f"get  {url}")
    tmp = dest.with_suffix(dest.suffix + ".part")
    with urllib.request.urlopen(url, timeout=60) as response, open(tmp, "wb") as out:
        while chunk := response.read(1 << 20):
            out.write(chunk)
    tmp.rename(dest)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("corpora-public"))
    parser.add_argument("which", nargs="*", choices=sorted(SOURCES), default=sorted(SOURCES))
    args = parser.parse_args()
    failed = 0
    for name in args.which:
        folder = args.out / name
        folder.mkdir(parents=True, exist_ok=True)
        for url in SOURCES[name]:
            try:
                fetch(url, folder / url.rsplit("/", 1)[-1].replace("+", "_"))
            except OSError as exc:
                print(f"error: {url}: {exc}", file=sys.stderr)
                failed += 1
    print(f"done; read them with e.g. 'spamkit corpus {args.out}/enron/enron1.tar.gz'")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
