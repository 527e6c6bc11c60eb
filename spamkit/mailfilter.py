"""Filtering mailboxes in place: tag each message with its verdict, move spam, lose nothing.

Owns writing to mailboxes; reading labelled corpora stays in :mod:`spamkit.corpus`, the
verdicts come from a :class:`~spamkit.spamfilter.SpamFilter` and its decision layer.

Tags
    The verdict is written as header fields *prepended* to the message, the way trace
    fields (``Received:``) are added: ``X-Spam-Status: Yes|No|Unsure, score=0.997,
    model=NAME@HASH``, ``X-Spam-Probability``, ``X-Spamkit-Version`` and
    ``X-Spamkit-Model``. Everything after them is the original message, byte for byte
    (headers, body, line endings, even a message with no header section at all), so
    "nothing changed but the tags" is a prefix check. Re-tagging removes the old spamkit
    fields at the top first. A message whose ``X-Spamkit-Model`` names the same filter
    file (its SHA-256) is not scored again unless forced: its recorded verdict is used.

Never losing a message
    Maildir and MH hold one message per file. Tagging writes the new file beside the old
    one (Maildir ``tmp/``, a hidden name in an MH folder), flushes and fsyncs it and renames
    it over the original (POSIX rename is atomic: a reader sees the old or the new file,
    never half of one). Moving is a rename into the destination folder. A SIGKILL at any
    instant therefore leaves every message exactly once, tagged or not.

    An mbox is one file, and moving spam to another mbox changes two files, which no
    single system call can do at once. The run writes the new source and the new
    destination to temporary files in their own folders (flushed and fsynced), then commits
    by writing a journal (``.NAME.spamkit-journal``: which temporary file replaces which
    file) atomically, then renames, then deletes the journal. Every run starts by
    recovering: a journal is rolled forward (its renames redone), temporary files without a
    journal are deleted (the run died before committing; the originals are intact). So after
    a kill, the next run (or ``spamkit filter --recover``) restores the exactly-once state.
    While it works on an mbox, a run holds the locks mail clients use: ``fcntl`` on the file
    and a dot-lock ``NAME.lock`` (removed when stale, i.e. when its process is gone).

    MH folders are locked the way MH programs lock them, on ``.mh_sequences``.
    Every folder a run writes is also locked against other spamkit runs (``fcntl`` on a
    ``.spamkit.lock`` file): a second run waits up to ``wait`` seconds, then stops with a
    message naming the lock, so two runs never interleave their writes.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import re
import time
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from . import __version__
from .durable import fsync_dir, take_mode, write_durable
from .errors import ConfigError, SpamkitError
from .message import SPAMKIT_FIELDS, split_tags  # noqa: F401  (re-exported: the filter's own fields)
# exit status of pipe mode (``spamkit filter MODEL -``), as bogofilter's: 0 spam, 1 ham, 2 unsure, 3 error
from .passthrough import EXIT_ERROR, EXIT_HAM, EXIT_SPAM, EXIT_UNSURE  # noqa: F401  (re-exported)

VERDICTS = ("spam", "ham", "unsure")
STATUS_WORD = {"spam": "Yes", "ham": "No", "unsure": "Unsure"}
_WORD_STATUS = {v.lower(): k for k, v in STATUS_WORD.items()}


class FilterError(SpamkitError):
    """A mailbox could not be filtered (busy, unreadable, not writable, full disk)."""


# --------------------------------------------------------------------------- tags

def newline_of(raw: bytes) -> bytes:
    """The line ending the message uses (that of its first line), LF when it has none."""
    end = raw.find(b"\n")
    return b"\r\n" if end > 0 and raw[end - 1:end] == b"\r" else b"\n"


def tag_fields(verdict: str, p_spam: float, model_id: str) -> list[tuple[str, str]]:
    """The header fields of a verdict, in the order they are written."""
    if verdict not in VERDICTS:
        raise ConfigError(f"unknown verdict {verdict!r}")
    return [("X-Spam-Status", f"{STATUS_WORD[verdict]}, score={p_spam:.6f}, model={model_id}"),
            ("X-Spam-Probability", f"{p_spam:.6f}"),
            ("X-Spamkit-Version", __version__),
            ("X-Spamkit-Model", model_id)]


def tag(raw: bytes, verdict: str, p_spam: float, model_id: str) -> bytes:
    """``raw`` with spamkit's fields (old ones removed) prepended; the rest unchanged.

    >>> tag(b"Subject: hi\\r\\n\\r\\nbody", "spam", 0.99, "m@1").split(b"\\r\\n")[0]
    b'X-Spam-Status: Yes, score=0.990000, model=m@1'
    """
    _, rest = split_tags(raw)
    nl = newline_of(rest)
    head = b"".join(f"{name}: {value}".encode("utf-8") + nl for name, value in tag_fields(verdict, p_spam, model_id))
    return head + rest


def recorded_verdict(raw: bytes, model_id: str):
    """``(verdict, p_spam)`` if ``raw`` is already tagged by this model, else ``None``."""
    fields, _ = split_tags(raw)
    if fields.get("x-spamkit-model") != model_id:
        return None
    status = fields.get("x-spam-status", "")
    word = status.split(",", 1)[0].strip().lower()
    if word not in _WORD_STATUS:
        return None
    try:
        p = float(fields.get("x-spam-probability", "nan"))
    except ValueError:
        p = float("nan")
    return _WORD_STATUS[word], p


def model_id_of(path) -> str:
    """``NAME@HASH``: the filter file's name and the first 12 hex digits of its SHA-256."""
    digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()[:12]
    return f"{Path(path).name}@{digest}"


# --------------------------------------------------------------------------- durable writes

def _describe(exc: OSError, what: str) -> str:
    if exc.errno == errno.ENOSPC:
        return f"{what}: no space left on the device; nothing was lost, the mailbox is as it was"
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return f"{what}: not writable ({exc.strerror}); nothing was lost, the mailbox is as it was"
    return f"{what}: {exc.strerror or exc}"


# --------------------------------------------------------------------------- locks

@contextmanager
def spamkit_lock(lock_path: Path, wait: float):
    """Exclusive ``fcntl`` lock on ``lock_path`` against other spamkit runs; waits up to ``wait`` s."""
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise FilterError(_describe(exc, str(lock_path))) from None
    try:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise FilterError(f"{lock_path}: another spamkit run is filtering this mailbox "
                                      f"(waited {wait:g} s); try again when it has finished") from None
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextmanager
def mbox_locks(path: Path, wait: float):
    """The locks mail clients take on an mbox: a dot-lock ``PATH.lock`` and ``fcntl`` on the file."""
    dotlock = Path(str(path) + ".lock")
    deadline = time.monotonic() + wait
    while True:
        try:
            fd = os.open(dotlock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            os.write(fd, f"{os.getpid()}\n".encode())
            os.close(fd)
            break
        except FileExistsError:
            try:
                owner = int(dotlock.read_text().split()[0])
            except (OSError, ValueError, IndexError):
                owner = None
            stale_age = time.time() - dotlock.stat().st_mtime if dotlock.exists() else 0
            if (owner is not None and not _pid_alive(owner)) or (owner is None and stale_age > 300):
                try:
                    dotlock.unlink()                 # left by a process that is gone
                except FileNotFoundError:
                    pass
                continue
            if time.monotonic() >= deadline:
                who = f" (pid {owner})" if owner is not None else ""
                raise FilterError(f"{dotlock}: the mailbox is locked by another program{who}; "
                                  "try again later") from None
            time.sleep(0.05)
        except OSError as exc:
            raise FilterError(_describe(exc, str(dotlock))) from None
    try:
        with open(path, "rb") as fh:
            try:
                fcntl.lockf(fh.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
            except OSError:
                raise FilterError(f"{path}: locked by another program (fcntl); try again later") from None
            yield
    finally:
        try:
            dotlock.unlink()
        except FileNotFoundError:
            pass


# --------------------------------------------------------------------------- mailbox kinds

def mailbox_kind(path) -> str:
    """``maildir`` (a folder with cur/ and new/), ``mh`` (a folder of numbered messages) or ``mbox``.

    Anything else is refused rather than filtered as an empty mailbox: a folder with
    neither cur/+new/ nor numbered files nor ``.mh_sequences``, or a non-empty file
    with no ``From `` line in its first 64 KB.
    """
    p = Path(path)
    if p.is_dir():
        if (p / "cur").is_dir() and (p / "new").is_dir():
            return "maildir"
        try:
            names = os.listdir(p)
        except OSError as exc:
            raise FilterError(_describe(exc, str(path))) from None
        if ".mh_sequences" in names or any(n.isdigit() for n in names):
            return "mh"
        others = [n for n in names if not n.startswith(".spamkit")]
        raise FilterError(f"{path}: no mailbox found here (a Maildir has cur/ and new/, an MH folder numbered "
                          f"message files; this folder has {len(others) or 'no'} other entries)")
    if p.is_file():
        try:
            with open(p, "rb") as fh:
                head = fh.read(65536)
        except OSError as exc:
            raise FilterError(_describe(exc, str(path))) from None
        if head and not (head.startswith(b"From ") or b"\nFrom " in head):
            raise FilterError(f"{path}: not an mbox (no 'From ' line starts a message in its first 64 KB)")
        return "mbox"
    raise FilterError(f"{path}: no such mailbox")


def ensure_destination(path, kind: str) -> Path:
    """Create a destination mailbox of ``kind`` if it does not exist; refuse another kind."""
    p = Path(path)
    if p.is_dir() and not any(p.iterdir()):
        p.rmdir()                                     # an empty folder made for it: set it up as a mailbox
    if p.exists():
        found = mailbox_kind(p)
        if found != kind:
            raise FilterError(f"{path} is a {found} mailbox; moving from a {kind} mailbox needs a {kind} "
                              "destination (moves never convert formats, so they stay atomic)")
        return p
    try:
        if kind == "maildir":
            for sub in ("tmp", "new", "cur"):
                (p / sub).mkdir(parents=True, exist_ok=True)
        elif kind == "mh":
            p.mkdir(parents=True)
            (p / ".mh_sequences").touch()
        else:
            p.parent.mkdir(parents=True, exist_ok=True)
            write_durable(p, b"")
    except OSError as exc:
        raise FilterError(_describe(exc, f"cannot create {path}")) from None
    return p


# --------------------------------------------------------------------------- the run

@dataclass
class FilterSummary:
    """What a filter run did, per mailbox and in total."""

    counts: dict = field(default_factory=lambda: {v: 0 for v in VERDICTS})
    tagged: int = 0
    moved: dict = field(default_factory=dict)
    already_tagged: int = 0
    messages: int = 0
    recovered: list = field(default_factory=list)
    interrupted: bool = False
    dry_run: bool = False
    seconds: float = 0.0
    mailboxes: list = field(default_factory=list)
    #: messages that could not be read or classified: {"message": ref, "error": why}; left as they were
    failed: list = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"messages": self.messages, "verdicts": dict(self.counts), "tagged": self.tagged,
                "failed": list(self.failed),
                "moved": dict(self.moved), "already_tagged": self.already_tagged, "recovered": self.recovered,
                "interrupted": self.interrupted, "dry_run": self.dry_run, "seconds": round(self.seconds, 3),
                "messages_per_second": round(self.messages / self.seconds, 1) if self.seconds else None,
                "mailboxes": self.mailboxes}


class MailFilter:
    """Runs a classifier over mailboxes.

    Parameters
    ----------
    classify : callable
        ``classify(raw: bytes) -> (verdict, p_spam)`` with verdict in :data:`VERDICTS`.
    model_id : str
        Written in the tags; messages tagged with the same id are not scored again.
    tag : bool
        Add the verdict header fields.
    move : dict
        Verdict -> destination mailbox path (``{"spam": "Junk", "unsure": "Review"}``).
    dry_run : bool
        Change nothing; count what would happen.
    force : bool
        Score messages already tagged by this model again.
    wait : float
        Seconds to wait for another run's lock before giving up.
    progress : callable, optional
        Called once per message.
    on_message : callable, optional
        ``on_message(ref, verdict, p_spam, tagged, moved_to)`` for each message (``--dry-run``
        lists what would happen through it); ``ref`` is the file, or ``MBOX#n``.
    """

    def __init__(self, classify, model_id: str, tag: bool = False, move: dict | None = None,
                 dry_run: bool = False, force: bool = False, wait: float = 30.0, progress=None, on_message=None):
        self.classify = classify
        self.model_id = model_id
        self.tag = tag
        self.move = {k: Path(v) for k, v in (move or {}).items() if v is not None}
        unknown = set(self.move) - set(VERDICTS)
        if unknown:
            raise ConfigError(f"cannot move verdicts {sorted(unknown)}")
        self.dry_run = dry_run
        self.force = force
        self.wait = wait
        self.progress = progress
        self.on_message = on_message
        self.stop_requested = False
        self.summary = FilterSummary(dry_run=dry_run)

    # ------------------------------------------------------------- per message

    def _judge(self, raw: bytes, ref) -> tuple[str, float, bool] | None:
        """(verdict, p_spam, scored now?) -- a message tagged by this model keeps its verdict.

        ``None`` when the classifier fails on this message: the failure is counted with the
        message's name, and the caller leaves the message exactly as it is and goes on.
        """
        if not self.force:
            recorded = recorded_verdict(raw, self.model_id)
            if recorded is not None:
                self.summary.already_tagged += 1
                return recorded[0], recorded[1], False
        try:
            verdict, p = self.classify(raw)
        except Exception as exc:                  # noqa: BLE001 - one message must not stop the run
            self._fail(ref, f"{type(exc).__name__}: {exc}")
            return None
        return verdict, p, True

    def _fail(self, ref, why: str) -> None:
        self.summary.failed.append({"message": str(ref), "error": why[:300]})
        if self.progress is not None:
            self.progress()

    def _judge_file(self, file) -> tuple[bytes, bytes, str, float] | None:
        """(the message, the message as it should be written, its verdict, P(spam)) of one
        Maildir/MH file; None if the file is gone (a mail client moved it meanwhile), cannot
        be read, or cannot be classified (the last two are counted as failures)."""
        try:
            raw = file.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            self._fail(file, _describe(exc, "cannot read the message"))
            return None
        judged = self._judge(raw, file)
        if judged is None:
            return None
        verdict, p, scored = judged
        return raw, self._new_bytes(raw, verdict, p, scored), verdict, p

    def _new_bytes(self, raw: bytes, verdict: str, p: float, scored: bool) -> bytes:
        if self.tag and scored:
            return tag(raw, verdict, p, self.model_id)
        return raw

    def _count(self, verdict: str, changed: bool, moved_to: Path | None, ref=None, p: float = float("nan")):
        if self.on_message is not None:
            self.on_message(str(ref), verdict, p, changed, moved_to)
        self.summary.messages += 1
        self.summary.counts[verdict] += 1
        if changed:
            self.summary.tagged += 1
        if moved_to is not None:
            key = str(moved_to)
            self.summary.moved[key] = self.summary.moved.get(key, 0) + 1
        if self.progress is not None:
            self.progress()

    # ------------------------------------------------------------- entry point

    def run(self, mailboxes) -> FilterSummary:
        started = time.perf_counter()
        for box in mailboxes:
            if self.stop_requested:
                break
            path = Path(box)
            kind = mailbox_kind(path)
            for verdict, dest in self.move.items():
                if dest.resolve() == path.resolve():
                    raise ConfigError(f"{path}: the {verdict} destination is the mailbox being filtered")
            before = self.summary.messages
            getattr(self, f"_filter_{kind}")(path)
            self.summary.mailboxes.append({"path": str(path), "format": kind,
                                           "messages": self.summary.messages - before})
        self.summary.interrupted = self.stop_requested
        self.summary.seconds = time.perf_counter() - started
        return self.summary

    def _destinations(self, kind: str) -> dict:
        if self.dry_run:
            return dict(self.move)
        return {v: ensure_destination(p, kind) for v, p in self.move.items()}

    def _lock_folders(self, locks: ExitStack, folders) -> list:
        """Take the spamkit lock of each existing folder, in a fixed (sorted) order so that two
        runs on overlapping folders cannot deadlock; returns the folders, sorted."""
        ordered = sorted(set(folders), key=str)
        for folder in ordered:
            if folder.exists():                       # a dry run does not create destinations
                locks.enter_context(spamkit_lock(folder / ".spamkit.lock", self.wait))
        return ordered

    # ------------------------------------------------------------- Maildir

    def _filter_maildir(self, path: Path):
        dests = self._destinations("maildir")
        with ExitStack() as locks:
            self._lock_folders(locks, [path, *dests.values()])
            if not self.dry_run and (path / "tmp").is_dir():
                self._remove_stale(path / "tmp", "*.spamkit-*")
            for sub in ("new", "cur"):
                folder = path / sub
                for name in sorted(os.listdir(folder)) if folder.is_dir() else []:
                    if self.stop_requested:
                        return
                    if name.startswith("."):
                        continue
                    file = folder / name
                    judged = self._judge_file(file)
                    if judged is None:
                        continue                          # moved away by a mail client meanwhile
                    raw, new, verdict, p = judged
                    dest = dests.get(verdict)
                    if not self.dry_run:
                        try:
                            if new != raw:
                                tmp = path / "tmp" / f"{name.split(':', 1)[0]}.spamkit-{os.getpid()}"
                                (path / "tmp").mkdir(exist_ok=True)
                                write_durable(tmp, new, like=file)
                                os.replace(tmp, file)
                            if dest is not None:
                                target = dest / sub / name
                                if target.exists():
                                    raise FilterError(f"{target} already exists; not overwriting a message")
                                os.rename(file, target)
                                fsync_dir(dest / sub)
                            fsync_dir(folder)
                        except OSError as exc:
                            raise FilterError(_describe(exc, str(file))) from None
                    self._count(verdict, new != raw, dest, file, p)

    # ------------------------------------------------------------- MH

    @staticmethod
    def _remove_stale(folder: Path, pattern: str) -> None:
        """Delete tagged copies a killed run left (its pid is the last part of the name): they were
        never renamed over a message, so the message itself is intact."""
        for stale in folder.glob(pattern):
            try:
                pid = int(stale.name.rsplit("-", 2)[-2] if pattern.startswith(".spamkit-tmp") else
                          stale.name.rsplit("-", 1)[-1])
            except ValueError:
                continue
            if not _pid_alive(pid):
                stale.unlink(missing_ok=True)

    @staticmethod
    def _mh_numbers(folder: Path) -> list[int]:
        return sorted(int(n) for n in os.listdir(folder) if n.isdigit())

    def _filter_mh(self, path: Path):
        dests = self._destinations("mh")
        with ExitStack() as locks:
            for folder in self._lock_folders(locks, [path, *dests.values()]):
                # MH programs (and Python's mailbox.MH) lock .mh_sequences: a dot-lock and fcntl
                if (folder / ".mh_sequences").exists():
                    locks.enter_context(mbox_locks(folder / ".mh_sequences", self.wait))
            if not self.dry_run:
                self._remove_stale(path, ".spamkit-tmp-*")
            next_number = {v: (max(self._mh_numbers(d), default=0) + 1) if d.exists() else 1
                           for v, d in dests.items()}
            for number in self._mh_numbers(path):
                if self.stop_requested:
                    return
                file = path / str(number)
                judged = self._judge_file(file)
                if judged is None:
                    continue                              # moved away by a mail client meanwhile
                raw, new, verdict, p = judged
                dest = dests.get(verdict)
                if not self.dry_run:
                    try:
                        if new != raw:
                            tmp = path / f".spamkit-tmp-{os.getpid()}-{number}"
                            write_durable(tmp, new, like=file)
                            os.replace(tmp, file)
                        if dest is not None:
                            while (dest / str(next_number[verdict])).exists():
                                next_number[verdict] += 1
                            os.rename(file, dest / str(next_number[verdict]))
                            next_number[verdict] += 1
                            fsync_dir(dest)
                        fsync_dir(path)
                    except OSError as exc:
                        raise FilterError(_describe(exc, str(file))) from None
                self._count(verdict, new != raw, dest, file, p)

    # ------------------------------------------------------------- mbox

    def _filter_mbox(self, path: Path):
        dests = self._destinations("mbox")
        folders = sorted({path, *dests.values()}, key=str)
        with ExitStack() as locks:
            for box in folders:
                if box.exists():
                    locks.enter_context(spamkit_lock(Path(str(box) + ".spamkit.lock"), self.wait))
            if not self.dry_run:
                for box in folders:
                    recovered = recover_mbox(box)
                    if recovered:
                        self.summary.recovered.append(recovered)
            for box in folders:
                if box.exists():
                    locks.enter_context(mbox_locks(box, self.wait))
            if self.dry_run:
                for number, chunk in enumerate((c for c in iter_mbox_chunks(path) if c.envelope is not None), 1):
                    if self.stop_requested:
                        return
                    judged = self._judge(chunk.message, f"{path}#{number}")
                    if judged is None:
                        continue
                    verdict, p, scored = judged
                    self._count(verdict, self.tag and scored, dests.get(verdict), f"{path}#{number}", p)
                return
            self._rewrite_mbox(path, dests)

    def _rewrite_mbox(self, path: Path, dests: dict):
        stamp = f"{os.getpid()}-{int(time.time() * 1e6)}"
        tmp_of = {path: path.with_name(f".{path.name}.spamkit-new-{stamp}")}
        for d in set(dests.values()):
            tmp_of[d] = d.with_name(f".{d.name}.spamkit-new-{stamp}")
        handles = {}
        changed = False
        try:
            for box, tmp in tmp_of.items():
                handles[box] = open(tmp, "xb")
                take_mode(handles[box].fileno(), box)              # a 0444 or 0600 mbox keeps its mode
                if box != path:                                    # destinations keep what they hold
                    with open(box, "rb") as src:
                        while block := src.read(1 << 20):
                            handles[box].write(block)
            need_separator = {d: _ends_without_blank_line(d) for d in set(dests.values())}
            out = handles[path]
            number = 0
            for chunk in iter_mbox_chunks(path):
                if chunk.envelope is None or self.stop_requested:
                    out.write(chunk.raw())                       # preamble, or the rest after Ctrl-C
                    continue
                number += 1
                judged = self._judge(chunk.message, f"{path}#{number}")
                if judged is None:
                    out.write(chunk.raw())                       # left exactly as it was
                    continue
                verdict, p, scored = judged
                new = self._new_bytes(chunk.message, verdict, p, scored)
                dest = dests.get(verdict)
                data = chunk.envelope + new + chunk.separator
                if dest is None:
                    out.write(data)
                else:
                    fh = handles[dest]
                    if need_separator[dest]:
                        fh.write(newline_of(chunk.envelope))
                    if not chunk.separator:                   # the last message of the source
                        data += newline_of(chunk.envelope)
                    fh.write(data)
                    need_separator[dest] = False
                changed = changed or new != chunk.message or dest is not None
                self._count(verdict, new != chunk.message, dest, f"{path}#{number}", p)
            for fh in handles.values():
                fh.flush()
                os.fsync(fh.fileno())
                fh.close()
            if not changed:
                for tmp in tmp_of.values():
                    os.unlink(tmp)
                return
            commit_mbox(path, {str(box): str(tmp) for box, tmp in tmp_of.items()})
        except BaseException as exc:
            for fh in handles.values():
                fh.close()
            if journal_path(path).exists():
                if not isinstance(exc, OSError):
                    raise
                # Past the commit point: the journal and the finished files complete the run later.
                raise FilterError(f"{path}: {exc.strerror or exc} while committing; nothing is lost: the next run "
                                  f"(or spamkit filter MODEL {path} --recover) completes it") from None
            journal_tmp = journal_path(path).with_name(journal_path(path).name + ".tmp")
            for tmp in [*tmp_of.values(), *(_owner_path(t) for t in tmp_of.values()), journal_tmp]:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
            if not isinstance(exc, OSError):
                raise                                     # after removing this run's unfinished files
            raise FilterError(_describe(exc, str(path))) from None


def _ends_without_blank_line(path: Path) -> bool:
    """Does a non-empty mbox end without the blank line that must precede the next ``From ``?"""
    size = path.stat().st_size
    if size == 0:
        return False
    with open(path, "rb") as fh:
        fh.seek(max(0, size - 2))
        tail = fh.read()
    return not (tail.endswith(b"\n\n") or tail.endswith(b"\r\n\r\n") or tail == b"\n")


# --------------------------------------------------------------------------- mbox chunks and journal

@dataclass
class MboxChunk:
    """One stored message of an mbox: its ``From `` line, the message, the blank line after it.

    ``envelope`` is ``None`` for text before the first ``From `` line (kept, never dropped).
    ``envelope + message + separator`` are the file's bytes exactly.
    """

    envelope: bytes | None
    message: bytes
    separator: bytes

    def raw(self) -> bytes:
        return (self.envelope or b"") + self.message + self.separator


def iter_mbox_chunks(path: Path):
    """The chunks of an mbox (RFC 4155: ``From `` at the start of the file or after a blank line)."""
    envelope = None
    lines: list[bytes] = []
    prev_blank = True
    with open(path, "rb") as fh:
        for line in fh:
            if line.startswith(b"From ") and prev_blank:
                separator = b""
                if envelope is not None and lines and lines[-1] in (b"\n", b"\r\n"):
                    separator = lines.pop()
                if envelope is not None or lines:
                    yield MboxChunk(envelope, b"".join(lines), separator)
                envelope, lines, prev_blank = line, [], False
                continue
            lines.append(line)
            prev_blank = line in (b"\n", b"\r\n")
    if envelope is not None or lines:
        separator = b""
        if envelope is not None and lines and lines[-1] in (b"\n", b"\r\n"):
            separator = lines.pop()
        yield MboxChunk(envelope, b"".join(lines), separator)


def journal_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.spamkit-journal")


def _owner_path(tmp) -> Path:
    return Path(str(tmp) + ".owner")


def commit_mbox(path: Path, renames: dict) -> None:
    """Commit a rewrite of source ``path``: ``renames`` maps each final mbox to its finished temporary file.

    Order: every destination's temporary file gets an ``.owner`` note naming the source's
    journal (so that a recovery started from the destination knows whose it is); then the
    journal is written atomically -- the commit point; then the renames; then the notes and
    the journal are deleted. All temporary files are complete and fsynced before any of this.
    """
    journal = journal_path(path)
    for final, tmp in renames.items():
        if Path(final) != path:
            write_durable(_owner_path(tmp), str(journal).encode())
    tmp_journal = journal.with_name(journal.name + ".tmp")
    write_durable(tmp_journal, json.dumps({"renames": renames}).encode())
    os.replace(tmp_journal, journal)                          # the commit point
    fsync_dir(path.parent)
    _roll_forward(journal, renames)


def _roll_forward(journal: Path, renames: dict) -> None:
    for final, tmp in renames.items():
        if os.path.exists(tmp):
            os.replace(tmp, final)
            fsync_dir(Path(final).parent)
    for final, tmp in renames.items():
        owner = _owner_path(tmp)
        if owner.exists():
            owner.unlink()
    os.unlink(journal)
    fsync_dir(journal.parent)


def _recover_journal(journal: Path) -> None:
    try:
        renames = json.loads(journal.read_text())["renames"]
    except (OSError, ValueError, KeyError) as exc:
        raise FilterError(f"{journal}: unreadable journal of an interrupted run ({exc}); "
                          "remove it by hand after checking the mailbox") from None
    _roll_forward(journal, renames)


def recover_mbox(path: Path) -> str | None:
    """Finish or undo an interrupted rewrite touching ``path``; returns what was done, if anything.

    A journal next to ``path`` is rolled forward. A leftover temporary file of ``path`` is
    either a destination's part of another mbox's committed rewrite (its ``.owner`` note names
    that journal, which is then rolled forward) or the remains of a run that died before
    committing, which is deleted: the mailbox itself was never touched.
    """
    done = []
    journal = journal_path(path)
    tmp_journal = journal.with_name(journal.name + ".tmp")
    if tmp_journal.exists():
        tmp_journal.unlink()                                  # died just before the commit point
    if journal.exists():
        _recover_journal(journal)
        done.append("completed an interrupted run")
    discarded = 0
    for tmp in sorted(path.parent.glob(f".{glob_escape(path.name)}.spamkit-new-*")):
        if tmp.name.endswith(".owner") or not tmp.exists():
            continue
        owner = _owner_path(tmp)
        if owner.exists():
            source_journal = Path(owner.read_text())
            if source_journal.exists():
                _recover_journal(source_journal)
                done.append(f"completed an interrupted run of {source_journal.name[1:-len('.spamkit-journal')]}")
                continue
            owner.unlink()
        if tmp.exists():
            tmp.unlink()
            discarded += 1
    if discarded:
        done.append(f"discarded {discarded} unfinished file(s) of an interrupted run (the mailbox was intact)")
    return f"{path}: " + "; ".join(done) if done else None


def glob_escape(name: str) -> str:
    return re.sub(r"([*?\[])", r"[\1]", name)
