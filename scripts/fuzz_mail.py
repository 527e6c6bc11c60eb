#!/usr/bin/env python3
"""Mutation fuzzing of the mail path: parse -> tokenize -> classify, on real messages made hostile.

Takes the raw messages of the shared corpora (trec07p-dev and CSDMC2010 by default),
mutates each many times and runs every mutant through the whole path a mail filter
runs — ``SpamFilter.verdict`` (parse, mail tokens, features, model, decision) — with a
filter trained on the first messages of the same corpora. Reports:

* exceptions, by type and place, each mutant that raised saved to ``--crashers DIR``
  (there it becomes a regression test: ``tests/hostile.py``);
* the slowest messages (the goal: none over 1 s) and how many took over 1 s; the five
  slowest are written to ``--crashers DIR`` too, to time again or profile;
* the peak resident memory of the process, and how far above the memory it held
  before fuzzing (the corpus in memory and the trained filter) it went — which includes
  the mutant itself, up to :data:`MAX_MUTANT` (the goal: 300 MB for spamkit's part);
* throughput, for the record.

The mutations are the ones the issue "Hostile inputs" lists, applied one to three
at a time: byte flips, truncation, duplicated headers, huge headers, bad or
missing boundaries, bogus and RFC 2231 charsets, NUL bytes, deep nesting,
1,000-part multiparts, long parameter lists, unclosed HTML, folded headers,
broken base64/quoted-printable, 8-bit bytes in header values and in attachments' types and
file names, and splices of two messages.

    python scripts/fuzz_mail.py --count 100000 [--seed 1] [--corpora ../shared/corpora]

``--routes`` saves the filter and scores every mutant by both of pipe mode's routes, each
reading the file: :mod:`spamkit.mail.lean` (the standard library only, what ``spamkit filter
MODEL -`` runs) and :class:`~spamkit.filterfile.spamfilter.SpamFilter` (the full route, with its guard
reset before each message, as one message a process sees it). They must give the same
verdict and P(spam) to 1e-9; each disagreement is counted and saved. ``--only header_bytes``
draws from the named mutations alone (8-bit bytes in header values: the red team's
finding).

Deterministic for a given seed and corpus. The run's summary is printed at the end;
``--json FILE`` writes it as JSON too.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import sys
import tarfile
import time
import traceback
from collections import Counter
from pathlib import Path

from spamkit import BEST, build_filter

CORPORA = ("trec07p-dev/trec07p-dev.tar.gz", "csdmc2010/csdmc2010.tar.gz")
#: largest mutant (bytes): a mail server hands a filter nothing bigger (spamkit parses 4 MiB of it)
MAX_MUTANT = 32 << 20


def load_messages(root: Path) -> list[tuple[str, bytes]]:
    """(label, raw) of every message in the raw-mail corpora (read straight from the archives)."""
    out = []
    for rel in CORPORA:
        path = root / rel
        if not path.exists():
            sys.exit(f"fuzz_mail: {path} not found (use --corpora)")
        with tarfile.open(path) as tar:            # one sequential pass: a gzip stream cannot seek back cheaply
            files = {m.name: tar.extractfile(m).read() for m in tar if m.isfile()}
        index = next(n for n in files if n.endswith("full/index"))
        base = index.rsplit("/", 2)[0]
        for line in files[index].decode().splitlines():
            label, rel_path = line.split()
            name = f"{base}/{rel_path.replace('../', '')}"
            if name in files:
                out.append((label, files[name]))
    return out


# ----------------------------------------------------------------------------- mutations

def _split(raw: bytes) -> tuple[bytes, bytes]:
    for sep in (b"\r\n\r\n", b"\n\n"):
        i = raw.find(sep)
        if i >= 0:
            return raw[:i + len(sep) // 2], raw[i + len(sep) // 2:]
    return raw, b""


def flip_bytes(rng, raw):
    data = bytearray(raw)
    for _ in range(rng.randint(1, 64)):
        if data:
            data[rng.randrange(len(data))] = rng.randrange(256)
    return bytes(data)


def truncate(rng, raw):
    return raw[:rng.randrange(len(raw) + 1)]


def duplicate_headers(rng, raw):
    head, body = _split(raw)
    lines = head.splitlines(keepends=True) or [b"X: y\n"]
    line = rng.choice(lines)
    times = min(rng.choice((2, 100, 5000)), max(1, MAX_MUTANT // max(1, len(line))))
    return b"".join(lines + [line] * times) + body


def huge_header(rng, raw):
    field = rng.choice((b"Subject: ", b"X-Junk: ", b"Content-Type: text/plain; x=", b"Received: from "))
    return field + bytes(rng.choice(b"ab =?;\"'") for _ in range(64)) * rng.choice((1000, 20000)) + b"\n" + raw


def bad_boundary(rng, raw):
    head, body = _split(raw)
    choice = rng.randrange(4)
    if choice == 0:
        return head.replace(b"boundary=", b"boundary=\"\"; x=", 1) + body
    if choice == 1:
        return b'Content-Type: multipart/mixed; boundary="--"\n' + head + body.replace(b"\n--", b"\n----")
    if choice == 2:
        return b"Content-Type: multipart/alternative\n" + raw              # no boundary at all
    return head + body.replace(b"--\n", b"\n")                           # close delimiters removed


def bogus_charset(rng, raw):
    cs = rng.choice((b"charset=klingon", b"charset*=utf-8''x", b"charset*=us-ascii'en'utf-8",
                     b"charset*0*=utf-8''u; charset*1=tf-8", b"charset=\"\xff\xfe\"", b"charset*=%ZZ''%FF%",
                     b"charset=utf-7", b"charset=x-user-defined", b"charset=iso-2022-jp", b"charset=\x00"))
    return raw.replace(b"charset=", cs + b"; old=", rng.randint(1, 3)) if b"charset=" in raw else \
        b"Content-Type: text/plain; " + cs + b"\n" + raw


def nul_bytes(rng, raw):
    data = bytearray(raw)
    for _ in range(rng.randint(1, 50)):
        data.insert(rng.randrange(len(data) + 1), 0)
    return bytes(data)


def deep_nesting(rng, raw):
    depth = rng.choice((50, 1000, 5000))
    head, body = _split(raw)
    opening = b"".join(b'Content-Type: multipart/mixed; boundary="n%d"\n\n--n%d\n' % (i, i) for i in range(depth))
    closing = b"".join(b"\n--n%d--" % i for i in reversed(range(depth)))
    return head.rstrip(b"\r\n") + b"\nMIME-Version: 1.0\n" + opening + b"\n" + body + closing + b"\n"


def many_parts(rng, raw):
    _, body = _split(raw)
    piece = body[:200] or b"x"
    parts = b"".join(b"--p\nContent-Type: text/plain\n\n" + piece + b"\n" for _ in range(rng.choice((1000, 3000))))
    return b'Content-Type: multipart/mixed; boundary="p"\n\n' + parts + b"--p--\n"


def many_parameters(rng, raw):
    n = rng.choice((1000, 40_000, 130_000))
    return b"Content-Type: text/plain" + b"; a=b" * n + b"\n" + raw


def unclosed_html(rng, raw):
    unit = rng.choice((b"<a href='x ", b"<!-- ", b"<div class=\"", b"<", b"<script>", b"<b ", b"&#"))
    return (b"Content-Type: text/html\n\n" + unit * rng.choice((1000, 20_000, 80_000)) + raw)


def character_references(rng, raw):
    """An HTML part of character references of every shape: decimal ones of up to 6,000 digits
    (past int()'s 4,300: html.unescape raised there), hexadecimal, named with and without ";",
    names that only start like one, stray "&", in text and in attribute values."""
    pieces = []
    for _ in range(rng.randint(1, 400)):
        pieces.append(rng.choice((
            b"&#" + b"0" * rng.randint(0, 3) + str(rng.randint(0, 10 ** rng.randint(1, 9))).encode(),
            b"&#" + b"9" * rng.choice((4301, 5000, 6000)), b"&#x" + b"f" * rng.randint(1, 5000),
            b"&amp", b"&amp;", b"&notit;", b"&frac34x", b"&" + b"z" * rng.randint(1, 40), b"&", b";", b"#",
            b" text ", b"<a href='http://x.example/?a=1&amp;b=2&#", b"'>", b"<img alt=\"&lt;&#8364", b"\">")))
    return b"Content-Type: text/html; charset=utf-8\n\n<p>" + b"".join(pieces) + b"</p>\n" + raw


def folded_headers(rng, raw):
    return b"X-Fold: a\n" + b" b\n" * rng.choice((1000, 50_000)) + raw


def broken_encoding(rng, raw):
    head, body = _split(raw)
    cte = rng.choice((b"base64", b"quoted-printable", b"x-uuencode"))
    junk = bytes(rng.choice(b"=A/+\n\r!=?") for _ in range(rng.randint(10, 5000)))
    return b"Content-Transfer-Encoding: " + cte + b"\n" + head + junk + body


#: 8-bit bytes as they come in headers: Latin-1 and Windows-1252 letters, UTF-8 sequences (whole,
#: cut short, overlong), bytes a decoder never accepts, and C1 controls
_EIGHT_BIT = (b"\xff", b"\xfe", b"\xe9", b"\xc3\xa9", b"\xc3", b"\xe2\x82", b"\xe2\x82\xac", b"\xc0\xaf", b"\x80",
              b"\x9d", b"\xf0\x9f\x98", b"\xf0\x9f\x98\x80", b"\xed\xa0\x80", b"\xa0", b"\xbf\xbd")


def header_bytes(rng, raw):
    """8-bit bytes in header values, where RFC 5322 allows none: in a random field, or in the
    fields whose values become tokens without a decoder (the content type, a file name, a
    boundary, a charset), first line or continuation (the red team's 4.5% of mutants)."""
    head, body = _split(raw)
    lines = head.splitlines(keepends=True)
    if not lines:
        return raw
    for _ in range(rng.randint(1, 4)):
        choice = rng.randrange(6)
        junk = b"".join(rng.choice(_EIGHT_BIT) for _ in range(rng.randint(1, 3)))
        if choice == 0:                                   # a random field, anywhere in its value
            i = rng.randrange(len(lines))
            line = lines[i]
            at = rng.randrange(line.find(b":") + 1 if b":" in line else 0, max(len(line.rstrip(b"\r\n")), 1))
            lines[i] = line[:at] + junk + line[at:]
        elif choice == 1:
            lines.insert(rng.randrange(len(lines) + 1), b"Content-Type: " + junk + b"text/html\n")
        elif choice == 2:
            lines.insert(rng.randrange(len(lines) + 1), b"Content-Type: application/" + junk + b"x; name=\"a"
                         + junk + b".e" + junk + b"\"\n")
        elif choice == 3:
            lines.insert(rng.randrange(len(lines) + 1), b"Content-Disposition: attachment; filename=r" + junk
                         + b"." + junk + b"zip\n")
        elif choice == 4:                                 # a field's name
            i = rng.randrange(len(lines))
            lines[i] = junk + lines[i]
        else:                                             # a continuation line
            i = rng.randrange(len(lines))
            lines.insert(i + 1, b" " + junk + b" folded " + junk + b"\n")
    return b"".join(lines) + body


def attachment_bytes(rng, raw):
    """A multipart message whose parts have 8-bit bytes in their types and file names."""
    junk = b"".join(rng.choice(_EIGHT_BIT) for _ in range(rng.randint(1, 3)))
    _, body = _split(raw)
    parts = (b"--b\nContent-Type: text/plain\n\n" + body[:2000] + b"\n"
             b"--b\nContent-Type: " + rng.choice((b"image/gif", b"application/" + junk, junk + b"/pdf"))
             + b"; name=\"" + junk + b".p" + junk + b"\"\nContent-Disposition: attachment; filename=\"x" + junk
             + b"." + rng.choice((b"exe", junk, b"zi" + junk)) + b"\"\nContent-Transfer-Encoding: base64\n\nR0lGODlh\n"
             b"--b--\n")
    return b"From: a@example.org\nSubject: hi\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"b\"\n\n" + parts


def splice(rng, raw, other):
    return raw[:rng.randrange(len(raw) + 1)] + other[rng.randrange(len(other) + 1):]


MUTATIONS = [flip_bytes, truncate, duplicate_headers, huge_header, bad_boundary, bogus_charset, nul_bytes,
             deep_nesting, many_parts, many_parameters, unclosed_html, folded_headers, broken_encoding,
             character_references, header_bytes, attachment_bytes]


def mutate(rng, raw: bytes, others: list) -> tuple[bytes, list[str]]:
    names = []
    for _ in range(rng.choice((1, 1, 2, 3))):
        if rng.random() < 0.05:
            raw = splice(rng, raw, rng.choice(others)[1])
            names.append("splice")
        else:
            fn = rng.choice(MUTATIONS)
            raw = fn(rng, raw)
            names.append(fn.__name__)
        raw = raw[:MAX_MUTANT]
    return raw, names


# ----------------------------------------------------------------------------- the run

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpora", type=Path, default=Path(os.environ.get("SPAMKIT_CORPORA", "../shared/corpora")))
    ap.add_argument("--count", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--train", type=int, default=2000, help="messages the filter is trained on first")
    ap.add_argument("--crashers", type=Path, default=Path("fuzz-crashers"))
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--routes", action="store_true",
                    help="save the filter, then score every mutant by both of pipe mode's routes (spamkit.mail.lean "
                         "and SpamFilter, each from the file) and count where they disagree")
    ap.add_argument("--only", default=None,
                    help="comma-separated mutation names to draw from (default: all)")
    args = ap.parse_args(argv)
    if args.only:
        chosen = set(args.only.split(","))
        unknown = chosen - {fn.__name__ for fn in MUTATIONS}
        if unknown:
            sys.exit(f"fuzz_mail: no mutation {', '.join(sorted(unknown))}")
        MUTATIONS[:] = [fn for fn in MUTATIONS if fn.__name__ in chosen]

    messages = load_messages(args.corpora)
    rng = random.Random(args.seed)
    training = rng.sample(messages, min(args.train, len(messages)))
    spam_filter = build_filter(**BEST)                  # the default filter of spamkit train
    spam_filter.fit([raw for _, raw in training], y=[label for label, _ in training])
    lean = None
    if args.routes:                                     # both routes read the file, as pipe mode does
        import tempfile

        from spamkit.mail.lean import lean_filter
        from spamkit.filterfile.spamfilter import SpamFilter
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "fuzz.spamkit"
            spam_filter.save(path)
            spam_filter, lean = SpamFilter.load(path), lean_filter(path)
        if lean is None:
            sys.exit("fuzz_mail: the lean route does not score the default filter")
    baseline_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{len(messages)} messages; filter trained on {len(training)}; fuzzing {args.count} mutants "
          f"(seed {args.seed}); resident memory so far {baseline_mb:.0f} MB", flush=True)

    errors: Counter = Counter()
    disagreements = routes_compared = 0
    disagreeing: list = []
    slow: list = []
    over_1s = 0
    by_mutation: Counter = Counter()
    n_bytes = largest = 0
    started = time.perf_counter()
    for i in range(args.count):
        label, raw = messages[rng.randrange(len(messages))]
        mutant, names = mutate(rng, raw, messages)
        n_bytes += len(mutant)
        largest = max(largest, len(mutant))
        t0 = time.perf_counter()
        full = None
        for route, scorer in (("full", spam_filter), ("lean", lean)):
            if scorer is None:
                continue
            try:
                if route == "full" and spam_filter.guard is not None:
                    spam_filter.guard.reset()             # pipe mode: one message a process, no stream
                verdict, p = scorer.verdict(mutant)
                if verdict not in ("spam", "ham", "unsure") or not 0.0 <= p <= 1.0:
                    raise AssertionError(f"verdict {verdict!r} with P(spam) {p!r}")
            except Exception as exc:                   # noqa: BLE001 - counting them is the point
                frame = traceback.extract_tb(exc.__traceback__)[-1]
                key = f"{route} route: {type(exc).__name__} at {Path(frame.filename).name}:{frame.lineno}"
                errors[key] += 1
                args.crashers.mkdir(parents=True, exist_ok=True)
                (args.crashers / f"crash-{route}-{i}-{'+'.join(names)}.eml").write_bytes(mutant)
                break
            if route == "full":
                full = (verdict, p)
            elif verdict != full[0] or abs(p - full[1]) > 1e-9:
                disagreements += 1
                args.crashers.mkdir(parents=True, exist_ok=True)
                (args.crashers / f"disagree-{i}-{'+'.join(names)}.eml").write_bytes(mutant)
                if len(disagreeing) < 10:
                    disagreeing.append({"mutant": i, "mutations": names, "full": full, "lean": [verdict, p]})
        if args.routes:
            routes_compared += full is not None
        dt = time.perf_counter() - t0
        over_1s += dt > 1.0
        if len(slow) < 5 or dt > slow[-1][0]:
            slow.append((dt, i, "+".join(names), len(mutant), mutant))
            slow = sorted(slow, key=lambda row: row[0], reverse=True)[:5]
        by_mutation.update(names)
        if (i + 1) % 10_000 == 0:
            rate = (i + 1) / (time.perf_counter() - started)
            print(f"  {i + 1:>7d} mutants, {sum(errors.values())} exceptions, "
                  + (f"{disagreements} disagreements, " if args.routes else "")
                  + f"slowest {slow[0][0]:.3f} s, {rate:.0f}/s", flush=True)
    seconds = time.perf_counter() - started
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    summary = {
        "mutants": args.count, "seed": args.seed, "exceptions": sum(errors.values()),
        "exceptions_by_place": dict(errors.most_common()), "over_1_second": over_1s,
        "slowest": [{"seconds": round(dt, 4), "mutant": i, "mutations": names, "bytes": size}
                    for dt, i, names, size, _ in slow],
        "largest_mutant_bytes": largest,
        "baseline_rss_mb": round(baseline_mb, 1), "peak_rss_mb": round(peak_mb, 1),
        "peak_over_baseline_mb": round(peak_mb - baseline_mb, 1), "seconds": round(seconds, 1),
        "mutants_per_second": round(args.count / seconds, 1), "mb_per_second": round(n_bytes / seconds / 1e6, 2),
        "mutations_applied": dict(by_mutation.most_common()),
    }
    if args.routes:
        summary.update({"routes_compared": routes_compared, "disagreements": disagreements,
                        "first_disagreements": disagreeing})
    args.crashers.mkdir(parents=True, exist_ok=True)
    for rank, (_dt, i, _names, _size, mutant) in enumerate(slow, 1):   # to time again, or profile
        (args.crashers / f"slowest-{rank}-mutant-{i}.eml").write_bytes(mutant)
    print(json.dumps(summary, indent=2))
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2))
    return 1 if errors or disagreements else 0


if __name__ == "__main__":
    sys.exit(main())
