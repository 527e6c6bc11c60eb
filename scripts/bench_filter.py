#!/usr/bin/env python3
"""Filtering big mailboxes: messages/s and peak memory, in each format, next to bogofilter.

Builds mailboxes of N messages (default 100,000) from the Enron-spam archives in
../shared/corpora (cycled, each copy given a unique Message-ID line so that no two are
identical), in mbox, Maildir and MH format, in a temporary folder; trains spamkit's best
filter on Enron1; then runs ``spamkit filter MODEL MAILBOX --tag --move-spam-to JUNK`` on
each (a separate process, timed, its peak resident memory read from ``getrusage``) with one
process (``--jobs 1``) and with worker processes classifying ahead (``--jobs N``, default every
core), each on a fresh copy of the mailbox, then the read-only ``--dry-run --json``, and
the same at N/10 messages to show that memory does not grow with the mailbox. Next to the
Maildir and MH runs, what the disk allows: rewriting every file the way a tagging run must
(a new file, made durable, renamed over the original; no reading of a filter, no judging), in
the same process as the script, both ways a run can make its changes durable (``--sync files``:
an fsync per file and folder; ``--sync filesystem``, the default: one syncfs per 64 messages
for the new files and one for their renames). The
reference is bogofilter (installed with apt-get when missing) trained on the same Enron1
messages, classifying the same mailboxes in its bulk modes (``-b`` reading the message
files' names, ``-M`` on the mbox), which read and score but write nothing: an upper bound
on what a filter that also tags and moves can do. Peak memory is each child's own
``ru_maxrss`` (``os.wait4``).

    python scripts/bench_filter.py [--messages 100000] [--jobs N] [--corpora ../shared/corpora] [--keep DIR]
"""

from __future__ import annotations

import argparse
import mailbox
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bogofilter import ensure_bogofilter  # standard library only
from _measure import compile_package, run_child

from spamkit.common.durable import filesystem_sync  # standard library only

ROOT = Path(__file__).resolve().parents[2] / "shared" / "corpora"


def enron_messages(corpora: Path):
    """Raw Enron messages as mail: the Enron files have no header/body separator; add one."""
    from spamkit.corpus import Corpus
    out = []
    for i in range(1, 7):
        with Corpus(corpora / "enron-spam" / f"enron{i}.tar.gz") as corpus:
            for m in corpus:
                subject, _, body = m.raw.partition(b"\n")
                out.append(subject + b"\nFrom: someone@enron.example\n\n" + body)
    return out


def build(kind: str, path: Path, messages, n: int) -> None:
    if kind == "mh":
        # numbered files are an MH folder; mailbox.MH.add lists the folder on every call (quadratic)
        path.mkdir()
        (path / ".mh_sequences").touch()
        for i in range(n):
            (path / str(i + 1)).write_bytes(b"Message-ID: <bench-%d@spamkit.example>\n" % i + messages[i % len(messages)])
        return
    box = {"mbox": mailbox.mbox, "maildir": mailbox.Maildir}[kind](path, create=True)
    box.lock()
    for i in range(n):
        box.add(b"Message-ID: <bench-%d@spamkit.example>\n" % i + messages[i % len(messages)])
        if kind == "mbox" and i % 5000 == 4999:
            box.flush()
    box.flush()
    box.unlock()


def fresh_copy(box: Path, copy: Path, junk: Path) -> None:
    """A new copy of the mailbox for every run (and no destination left from the last)."""
    for old in (copy, junk):
        if old.is_dir():
            shutil.rmtree(old)
        elif old.exists():
            old.unlink()
    (shutil.copytree if box.is_dir() else shutil.copy2)(box, copy)
    os.sync()                                     # the copy's writes are not the next run's to wait for


def disk_floor(folder: Path, syncfs=None) -> float:
    """Seconds to rewrite every message file of a Maildir or MH folder as a tagging run must,
    without reading a filter or judging anything: each file's bytes plus a 100-byte header
    written to a new file, made durable, the original hard-linked aside and the new file renamed
    over it, the renames made durable every 64 messages, then the aside links removed on two
    threads (as ``GroupCommit.set_aside`` does) -- what this disk allows a filter that tags
    every message in place. Without ``syncfs``: an fsync per new file and per folder (``spamkit
    filter --sync files``); with it: the new files of 64 messages written, one syncfs, their
    renames, one syncfs (``--sync filesystem``, the default)."""
    from concurrent.futures import ThreadPoolExecutor
    files = [p for p in sorted(folder.rglob("*")) if p.is_file() and p.name[0] != "." and p.parent.name != "tmp"]
    header = b"X-Spam-Status: No, score=0.0 required=5.0 tests=none autolearn=no version=spamkit\n"
    started = time.perf_counter()
    with ThreadPoolExecutor(2) as reclaim:
        for start in range(0, len(files), 64):
            group = files[start:start + 64]
            written = []
            for path in group:
                tmp = path.parent / f".floor-{path.name}"
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                os.write(fd, header + path.read_bytes())
                if syncfs is None:
                    os.fsync(fd)
                written.append((fd, tmp, path))
            if syncfs is not None:
                syncfs(written[0][0])
            asides = []
            for fd, tmp, path in written:
                os.close(fd)
                asides.append(path.parent / f".floor-old-{path.name}")
                os.link(path, asides[-1])
                os.replace(tmp, path)
            if syncfs is not None:
                dfd = os.open(folder, os.O_RDONLY)
                syncfs(dfd)
                os.close(dfd)
            else:
                for parent in sorted({path.parent for path in group}):
                    dfd = os.open(parent, os.O_RDONLY)
                    os.fsync(dfd)
                    os.close(dfd)
            for aside in asides:
                reclaim.submit(os.unlink, aside)
    return time.perf_counter() - started


def prepare(work: Path, corpora: Path, n: int, exe) -> None:
    """The heavy part, run in a child process so that the measuring parent stays small (a forked
    child's peak memory counts the parent's pages until it execs)."""
    from spamkit.corpus import Corpus
    from spamkit import BEST, build_filter
    messages = enron_messages(corpora)
    with Corpus(corpora / "enron-spam" / "enron1.tar.gz") as corpus:
        train = list(corpus)
    build_filter(**BEST).fit(train).save(work / "best.spamkit")
    if exe:
        wordlist = work / "bogofilter"
        wordlist.mkdir(exist_ok=True)
        for flag, label in (("-s", "spam"), ("-n", "ham")):
            box = work / f"train{flag}.mbox"
            mb = mailbox.mbox(box)
            for m in train:
                if m.label == label:
                    mb.add(m.raw)
            mb.flush()
            subprocess.run([exe, "-C", "-d", str(wordlist), flag, "-M", "-I", str(box)], check=True)
    for kind in ("maildir", "mh", "mbox"):
        for size in (n // 10, n):
            build(kind, work / f"{kind}-{size}", messages, size)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--corpora", type=Path, default=ROOT)
    parser.add_argument("--keep", type=Path, default=None, help="Build the mailboxes here and keep them.")
    parser.add_argument("--prepare", type=Path, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)),
                        help="Worker processes of the parallel runs.")
    args = parser.parse_args()
    exe = shutil.which("bogofilter") if args.prepare else ensure_bogofilter(True)
    compile_package()                              # as an installed copy has it
    if args.prepare is not None:
        prepare(args.prepare, args.corpora, args.messages, exe)
        return
    work = args.keep or Path(tempfile.mkdtemp(prefix="spamkit-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        subprocess.run([sys.executable, __file__, "--prepare", str(work), "--messages", str(args.messages),
                        "--corpora", str(args.corpora)], check=True)
        model, wordlist = work / "best.spamkit", work / "bogofilter"
        print(f"{'format':<8} {'messages':>9} {'MB':>7} | {'spamkit run':<26} {'s':>6} {'msg/s':>7} {'peak MB':>8} | "
              f"{'bogofilter s':>12} {'msg/s':>7} {'peak MB':>8}")
        for kind in ("maildir", "mh", "mbox"):
            for n in (args.messages // 10, args.messages):
                box = work / f"{kind}-{n}"
                size = sum(p.stat().st_size for p in box.rglob("*") if p.is_file()) if box.is_dir() else box.stat().st_size
                bogo = ("-", "-", "-")
                if exe:
                    if kind == "mbox":
                        bs, bpeak = run_child([exe, "-C", "-d", str(wordlist), "-M", "-I", str(box)])
                    else:
                        listing = work / f"{kind}-{n}.list"
                        files = [str(p) for p in sorted(box.rglob("*")) if p.is_file() and p.name[0] != "."]
                        listing.write_text("\n".join(files) + "\n")
                        with open(listing, "rb") as fh:
                            bs, bpeak = run_child([exe, "-C", "-d", str(wordlist), "-b"], stdin=fh)
                    bogo = (f"{bs:.1f}", f"{n / bs:.0f}", f"{bpeak:.0f}")
                runs = [("tag + move, --jobs 1", ["--tag", "--move-spam-to", "JUNK", "--jobs", "1"]),
                        (f"tag + move, --jobs {args.jobs}", ["--tag", "--move-spam-to", "JUNK", "--jobs", str(args.jobs)]),
                        (f"--dry-run --json, --jobs {args.jobs}", ["--dry-run", "--json", "--jobs", str(args.jobs)])]
                if kind != "mbox":
                    runs.insert(2, ("the same, --sync files", ["--tag", "--move-spam-to", "JUNK", "--jobs",
                                                                str(args.jobs), "--sync", "files"]))
                for name, options in runs:
                    copy, junk = work / f"{kind}-{n}-copy", work / f"{kind}-{n}-junk"
                    fresh_copy(box, copy, junk)
                    options = [str(junk) if o == "JUNK" else o for o in options]
                    seconds, peak = run_child([sys.executable, "-m", "spamkit", "filter", str(model), str(copy),
                                               *options])
                    print(f"{kind:<8} {n:>9} {size / 1e6:>7.0f} | {name:<26} {seconds:>6.1f} {n / seconds:>7.0f} "
                          f"{peak:>8.0f} | {bogo[0]:>12} {bogo[1]:>7} {bogo[2]:>8}", flush=True)
                for name, syncfs in ((("the disk: fsync each file", None),
                                      ("the disk: syncfs per 64", filesystem_sync(box)))
                                     if kind != "mbox" else ()):
                    if name.endswith("64") and syncfs is None:
                        continue                           # no syncfs here: spamkit fsyncs each file too
                    copy = work / f"{kind}-{n}-copy"
                    fresh_copy(box, copy, work / f"{kind}-{n}-junk")
                    seconds = disk_floor(copy, syncfs)
                    print(f"{kind:<8} {n:>9} {size / 1e6:>7.0f} | {name:<26} {seconds:>6.1f} "
                          f"{n / seconds:>7.0f}", flush=True)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
