"""A filter run over mailboxes: classify each message, tag it, move it, count what was done.

How a run never loses a message is in the package docstring (:mod:`spamkit.mail`).
"""

from __future__ import annotations

import errno
import os
import queue
import threading
import time
from contextlib import ExitStack, closing
from dataclasses import dataclass, field
from pathlib import Path

from ..durable import MAX_MESSAGE_FILE, NotAMessageFile, filesystem_sync, fsync_dir, read_file, take_mode, unlink_quietly
from ..errors import ConfigError
from .failures import FilterError, describe
from .locks import mbox_locks, spamkit_lock
from .mailboxes import FOLDER_FORMATS, check_destination, ensure_destination, mailbox_kind, remove_if_empty
from .mbox import commit_mbox, ends_without_blank_line, iter_mbox_chunks, journal_path, owner_path, recover_mbox
from .tags import VERDICTS, newline_of, recorded_verdict, tag


def _fingerprint(raw: bytes) -> tuple[int, int]:
    from .ahead import fingerprint
    return fingerprint(raw)


def _fsync_version(new_version) -> None:
    """fsync a new version: by its descriptor, or opened again (a worker wrote and closed it)."""
    path, fd = new_version
    if fd is not None:
        os.fsync(fd)
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _unlink_all(paths) -> None:
    for path in paths:
        unlink_quietly(path)


def _nothing_written(judgement) -> None:
    """:func:`spamkit.mail.ahead.written_ahead` of a run without workers."""
    return None


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


#: messages whose folders are fsynced together (Maildir and MH; see GroupCommit)
GROUP_COMMIT = 64
#: threads that fsync a group's new versions together (see GroupCommit._fsync_all)
FSYNC_THREADS = 4
#: threads that remove the replaced messages' set-aside links (see GroupCommit.set_aside); one
#: and four measured the same within the noise (tag + move of 10,000 messages, in turns, medians:
#: Maildir 7.5 s with one, 8.6 with four; MH 7.6 and 7.4)
RECLAIM_THREADS = 2
#: errors of link(2) that mean "no hard links here" (then a new version simply replaces the message)
NO_LINKS = frozenset({errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EMLINK, errno.EXDEV, errno.ENOSYS,
                      errno.EACCES})
#: how a group is made durable: "filesystem" (one syncfs(2) for the new versions and one for
#: the renames, where the system has it: :func:`~spamkit.durable.filesystem_sync`) or "files"
#: (an fsync per new version and per folder touched)
SYNC_MODES = ("filesystem", "files")


class GroupCommit:
    """A group of messages of a Maildir or MH folder written, renamed and reported together.

    :meth:`add` takes a message's new version already written to its temporary file (not
    fsynced) and where it goes; every :data:`GROUP_COMMIT` messages (and at the end, on an
    error or an interruption: :meth:`close`) :meth:`commit` makes the group's new versions
    durable, then, message by message in order, renames each over its original and moves what
    goes to a destination, then makes those renames durable, and only then reports the
    messages (``report(*args)``, in order). "Durable" is one ``syncfs`` of the file system
    each time with ``sync="filesystem"`` (the default, on Linux 5.8 and later and the file
    systems of :data:`~spamkit.durable.SYNCFS_FILESYSTEMS`), or an fsync of each new version
    and then of each folder touched with ``sync="files"`` (and elsewhere). Groups are
    committed in order by a thread of their own while the run reads, judges and writes the next group (fsyncs and renames wait
    on the disk, not on Python), and an error it meets is raised in the run at its next
    message or at the end.

    A rename is atomic, so a crash or a SIGKILL at any point leaves each message in exactly
    one place, tagged or not (a temporary that was never renamed is removed by the next
    run's clean-up). No new version is renamed before it is fsynced (a rename of unwritten
    data could leave an empty file after a power failure), and no message is reported
    before its folders are fsynced, so what is reported survives a power failure. Doing
    each step for a group rather than per message is what makes tagging a folder fast: a
    run that tags and moves every message of a Maildir fsynced two or three folders per
    message (22,750 fsyncs for 10,000 messages, half of the run); the new versions' fsyncs,
    written back together, cost less than one at a time after each write; and two syncfs
    calls a group (two journal commits) cost less again than 64 fsyncs and a few folders'
    (tagging and moving 10,000 Maildir or MH messages: 1,058-1,141 against 711-1,034
    messages/s, the two modes in turns). A rename over a message frees the old file inside
    the rename, most of its cost, and renaming on several threads gains nothing; so each
    message is first hard-linked aside (:meth:`set_aside`), its rename then only drops a
    name, and the aside names are removed on threads of their own once the group's renames
    are durable (the committing thread's renames 0.43 -> 0.14 ms a message; 10,000 messages
    tagged and moved, before and after in turns, medians of two series: MH 8.1-8.6 -> 7.4-7.5
    s, Maildir 8.2-10.0 -> 7.9-8.4 s, on a machine whose runs vary by a third).
    (Measured and not kept: writing the new versions in the committing thread too. The run
    then waited for that thread instead of for its own ``open`` calls; on this disk a tag and a
    move cost about 0.65 ms of file-system work a message however the threads share it.)

    A message a mail client moved away while its group was pending is left where the client
    put it (its new version is dropped, and it is not reported).
    """

    def __init__(self, box, report, size: int = 0, sync: str = "filesystem"):
        self.box, self.report, self.size, self.sync = box, report, size or GROUP_COMMIT, sync
        self.pending: list = []
        self._groups: queue.Queue | None = None
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self._fsyncs = None                                  # the threads of _fsync_all, made on first use
        self._failed = False                                 # a group failed: the later ones are dropped
        self._syncfs = False                                 # syncfs or None once a group commits
        self._links = True                                   # hard links work here (set_aside)
        self._reclaim = None                                 # the threads that remove set-aside links

    def add(self, file: Path, new_version, dest: Path | None, args: tuple) -> None:
        """``new_version``: ``(temporary path, open descriptor)`` from the box's ``write_new``,
        ``(temporary path, None)`` for one a worker wrote and closed, or None. After a failed
        group it is removed and the failure raised (the message stays as it was)."""
        if self._error is not None:
            self.discard([(file, new_version, dest, args)])
        self._raise_error()
        self.pending.append((file, new_version, dest, args))
        if len(self.pending) >= self.size:
            self.flush()

    def flush(self) -> None:
        """Hand the pending group to the committing thread, which takes it once the group before
        it is committed (so at most two groups' files are open)."""
        pending, self.pending = self.pending, []
        if not pending:
            return
        if self._failed:
            self.discard(pending)                     # after a failed group, nothing more is committed
            return
        if self._thread is None:
            self._groups = queue.Queue(maxsize=1)
            self._thread = threading.Thread(target=self._commit_groups, name="spamkit-commit", daemon=True)
            self._thread.start()
        try:
            self._groups.put(pending)
        except BaseException:
            self.discard(pending)                     # interrupted while waiting: these stay as they were
            raise

    def close(self) -> None:
        """Commit what is pending, wait for the committing thread, and raise what it met."""
        try:
            self.flush()
        finally:
            if self._thread is not None:
                self._groups.put(None)
                self._thread.join()
                self._thread = None
            if self._fsyncs is not None:
                self._fsyncs.shutdown()
                self._fsyncs = None
            if self._reclaim is not None:
                self._reclaim.shutdown()              # every set-aside link removed before the run ends
                self._reclaim = None
            self.box.end_asides()
        self._raise_error()

    def _raise_error(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    def _commit_groups(self) -> None:
        """The committing thread: the groups in order; after an error, the later groups are
        dropped (their messages stay as they were) and the error waits for the run — also those
        handed over after the run has taken the error (its last, partial group at ``close``)."""
        while (group := self._groups.get()) is not None:
            if self._failed:
                self.discard(group)
                continue
            try:
                self.commit(group)
            except BaseException as exc:              # noqa: BLE001 - handed to the run's thread
                self._failed = True                   # stays set once the run has taken the error
                self._error = exc

    def _fsync_all(self, new_versions) -> None:
        """fsync each new version (by its descriptor, or opened again where a worker wrote and
        closed it), :data:`FSYNC_THREADS` at a time: a file system commits the
        fsyncs that wait together in one journal transaction (ext4's jbd2 does), so a group's
        new versions reach the disk in less time than 64 fsyncs one after another (64 new
        files: 15-18 ms one by one, 9-10 ms four at a time, on this machine's ext4). Every
        one is fsynced before this returns; the first error is raised."""
        if len(new_versions) < 2 or FSYNC_THREADS < 2:
            for new_version in new_versions:
                _fsync_version(new_version)
            return
        if self._fsyncs is None:
            from concurrent.futures import ThreadPoolExecutor
            self._fsyncs = ThreadPoolExecutor(FSYNC_THREADS, thread_name_prefix="spamkit-fsync")
        futures = [self._fsyncs.submit(_fsync_version, new_version) for new_version in new_versions]
        # every fsync ends before any is reported failed: the caller then closes these descriptors
        errors = [error for error in (future.exception() for future in futures) if error is not None]
        if errors:
            raise errors[0]

    @staticmethod
    def discard(group, renamed=frozenset()) -> None:
        """Close the group's new versions and remove those not renamed (``renamed``: their
        positions in the group, already in place: nothing to remove, no failing unlink a message)."""
        for k, (_, new_version, _, _) in enumerate(group):
            if new_version is not None:
                if new_version[1] is not None:
                    os.close(new_version[1])
                if k not in renamed:
                    unlink_quietly(new_version[0])

    def _filesystem_sync(self):
        """The ``syncfs`` this group commit uses, or None (``sync="files"``, or a system or file
        system without an honest one: :func:`~spamkit.durable.filesystem_sync`); found once."""
        if self._syncfs is False:
            self._syncfs = filesystem_sync(self.box.path) if self.sync == "filesystem" else None
        return self._syncfs

    def _make_durable(self, new_versions) -> None:
        """The group's new versions on the disk: one ``syncfs`` of their file system where
        ``sync`` is ``"filesystem"`` and the system has it, else an fsync each."""
        if not new_versions:
            return
        sync = self._filesystem_sync()
        if sync is None:
            self._fsync_all(new_versions)
            return
        # the temporaries are on the mailbox's file system (renames cannot cross one)
        fd = next((fd for _, fd in new_versions if fd is not None), None)
        if fd is not None:
            sync(fd)
            return
        fd = os.open(self.box.path, os.O_RDONLY)
        try:
            sync(fd)
        finally:
            os.close(fd)

    def _folders_durable(self, folders) -> None:
        """The renames in ``folders`` on the disk: one ``syncfs`` (of the mailbox's file system,
        which every rename stays on), or an fsync of each folder -- also when the ``syncfs``
        fails: each folder is then tried and an error ignored, as :func:`~spamkit.durable.fsync_dir` does."""
        if not folders:
            return
        sync = self._filesystem_sync()
        if sync is not None:
            try:
                fd = os.open(self.box.path, os.O_RDONLY)
                try:
                    sync(fd)
                    return
                finally:
                    os.close(fd)
            except OSError:
                pass
        for folder in sorted(folders, key=str):
            fsync_dir(folder)

    def set_aside(self, file: Path):
        """Hard-link the message ``file`` to :meth:`~FolderMailbox.aside_for` before its new
        version replaces it: the link's path, None where the file system has no hard links (the
        rename then frees the old file itself), or False when ``file`` is gone (moved away by a
        mail client meanwhile).

        Why: a rename over a file frees the file it replaces inside the rename, and on this
        machine's ext4 that is most of a rename's cost (0.18-0.20 ms against 0.05 for a link and
        a rename over a file that keeps a link; ``python scripts/bench_filter.py``). With the old
        file still linked, the committing thread's renames are quick, and the links are removed
        by :data:`RECLAIM_THREADS` threads once the group's renames are durable, while the run
        goes on (in the end :meth:`close` waits for them). The link is a second name of the same
        file, in the folder's own hidden place (a folder of the run's own in Maildir's ``tmp/``, a
        dot-name in an MH folder) that mail clients do not read: a crash leaves at most such a
        name, which the next run's clean-up removes (the message itself is in place, old or new,
        either way).
        """
        if not self._links:
            return None if os.path.lexists(file) else False
        aside = self.box.aside_for(file)
        try:
            os.link(file, aside, follow_symlinks=False)
            return aside
        except FileNotFoundError:
            if not os.path.lexists(file):
                return False
        except FileExistsError:
            pass                                       # a name left by a run of this pid: no link this time
        except OSError as exc:
            if exc.errno not in NO_LINKS:
                raise
            self._links = False
        return None

    def _reclaim_later(self, asides) -> None:
        """Remove the set-aside links (each a name of a message's replaced version) on the reclaim threads."""
        if not asides:
            return
        if self._reclaim is None:
            from concurrent.futures import ThreadPoolExecutor
            self._reclaim = ThreadPoolExecutor(RECLAIM_THREADS, thread_name_prefix="spamkit-reclaim")
        for k in range(RECLAIM_THREADS):              # a share each (a task per link cost a Future each)
            if asides[k::RECLAIM_THREADS]:
                self._reclaim.submit(_unlink_all, asides[k::RECLAIM_THREADS])

    def commit(self, pending) -> None:
        """Make the new versions durable, rename in order, make the folders touched durable, report."""
        folders: set = set()
        done: list = []
        renamed: set = set()
        asides: list = []
        file = None
        try:
            self._make_durable([new_version for _, new_version, _, _ in pending if new_version is not None])
            for k, (file, new_version, dest, args) in enumerate(pending):
                if new_version is not None:
                    aside = self.set_aside(file)
                    if aside is False:
                        continue                      # moved away by a mail client meanwhile
                    if aside is not None:
                        asides.append(aside)
                    self.box.put(new_version[0], file)
                    renamed.add(k)
                    folders.add(file.parent)
                elif not os.path.lexists(file):
                    continue                          # moved away by a mail client meanwhile
                if dest is not None:
                    folders.update((file.parent, self.box.move(file, dest)))
                done.append(args)
        except OSError as exc:
            raise FilterError(describe(exc, str(file))) from None
        finally:
            self.discard(pending, renamed)            # a version not renamed is removed
            self._folders_durable(folders)
            for args in done:
                self.report(*args)
            self._reclaim_later(asides)               # the replaced versions, once the renames are durable


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
    threshold : float
        The filter's spam threshold on P(spam), which the tags' points put at 5.0
        (:func:`~spamkit.mail.tags.points`).
    jobs : int
        Worker processes that classify the next messages while this process writes (see
        :mod:`spamkit.mail.ahead`); 1: everything in this process. The result is the same.
    score, decide : callable, optional
        ``classify`` in two halves, for the workers: ``score(raws)`` gives class probabilities
        and familiarity for many messages at once (in a worker), ``decide(row, familiarity)``
        the verdict and P(spam) of one (here, in mailbox order); ``decide(*score([raw]))`` is
        ``classify(raw)``. Without them the workers call ``classify``.
    sync : str
        How a Maildir or MH group's changes reach the disk before they are reported:
        ``"filesystem"`` (default; one ``syncfs`` for the group's new versions and one for its
        renames, on Linux 5.8 and later and ext4, XFS, Btrfs or tmpfs, else as ``"files"``) or
        ``"files"`` (an fsync per new version and per folder touched: nothing else on the file
        system is written back, for a mail server whose disk is busy with other writers). See
        :class:`GroupCommit`.
    """

    def __init__(self, classify, model_id: str, tag: bool = False, move: dict | None = None,
                 dry_run: bool = False, force: bool = False, wait: float = 30.0, progress=None, on_message=None,
                 threshold: float = 0.5, jobs: int = 1, score=None, decide=None, sync: str = "filesystem",
                 max_size: int = MAX_MESSAGE_FILE):
        self.classify = classify
        if (score is None) != (decide is None):
            raise ConfigError("score and decide go together (the two halves of classify)")
        self.score, self.decide = score, decide
        self.jobs = jobs
        if sync not in SYNC_MODES:
            raise ConfigError(f"sync must be one of {', '.join(SYNC_MODES)}, not {sync!r}")
        self.sync = sync
        self._ahead = None
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
        self.threshold = threshold
        self.max_size = max_size                      # larger Maildir/MH messages are left where they are
        self.stop_requested = False
        self._left_unfiltered = False
        self._made: dict = {}                         # destination -> its kind, for those this run created
        self.summary = FilterSummary(dry_run=dry_run)

    # ------------------------------------------------------------- per message

    def _judge(self, raw: bytes, ref, ahead=None, mark=None) -> tuple[str, float, bool] | None:
        """(verdict, p_spam, scored now?) -- a message tagged by this model keeps its verdict.

        ``None`` when the classifier fails on this message: the failure is counted with the
        message's name, and the caller leaves the message exactly as it is and goes on.
        ``ahead``: a worker's judgement (:mod:`spamkit.mail.ahead`), used if it judged
        exactly these bytes (``mark``: their fingerprint, if the caller has it).
        """
        if not self.force:
            recorded = recorded_verdict(raw, self.model_id)
            if recorded is not None:
                self.summary.already_tagged += 1
                return recorded[0], recorded[1], False
        if ahead is not None and ahead[0] == (mark if mark is not None else _fingerprint(raw)):
            if ahead[1] == "ok":
                return ahead[2], ahead[3], True
            if ahead[1] == "scored" and self.decide is not None:
                try:
                    verdict, p = self.decide(ahead[2], ahead[3])
                except Exception as exc:          # noqa: BLE001 - one message must not stop the run
                    self._fail(ref, f"{type(exc).__name__}: {exc}")
                    return None
                return verdict, p, True
            if ahead[1] == "error":
                self._fail(ref, ahead[2])
                return None
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

    def _judge_file(self, file, ahead=None) -> tuple[bytes, str, float, bool, bool] | None:
        """(the message, its verdict, P(spam), scored now?, judged by a worker from these very
        bytes?) of one Maildir/MH file; None if the file is gone (a mail client moved it
        meanwhile), cannot be read, or cannot be classified (the last two are counted as failures)."""
        try:
            raw = read_file(file, self.max_size)
        except FileNotFoundError:
            return None
        except NotAMessageFile as exc:
            self._fail(file, exc.strerror)
            return None
        except OSError as exc:
            self._fail(file, describe(exc, "cannot read the message"))
            return None
        mark = _fingerprint(raw) if ahead is not None else None
        judged = self._judge(raw, file, ahead, mark)
        if judged is None:
            return None
        return (raw, *judged, mark is not None and ahead[0] == mark)

    def _new_bytes(self, raw: bytes, verdict: str, p: float, scored: bool) -> bytes:
        if self.tag and scored:
            return tag(raw, verdict, p, self.model_id, self.threshold)
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
        with ExitStack() as stack:
            if self.jobs > 1:
                # forked now, before any lock is taken (imported here: pipe mode never needs it)
                from .ahead import JudgeAhead
                self._ahead = stack.enter_context(JudgeAhead(self.classify, self.model_id, self.force, self.jobs,
                                                               score=self.score, decide=self.decide))
            try:
                self._run(mailboxes)
            finally:
                self._ahead = None
                self._remove_unused()
        # interrupted: a message was left unfiltered (a Ctrl-C after the last one interrupts nothing)
        self.summary.interrupted = self._left_unfiltered
        self.summary.seconds = time.perf_counter() - started
        return self.summary

    def _judged(self, items, entry, writer=None):
        """``(item, a worker's judgement or None)`` in order (:meth:`JudgeAhead.judged`)."""
        if self._ahead is None:
            return ((item, None) for item in items)
        return self._ahead.judged(items, entry, writer)

    def _writer(self, box):
        """For the workers of a tagging run over a Maildir or MH folder: what they need to write
        the tagged versions too (:class:`~spamkit.mail.ahead.WriteAhead`), else None."""
        if self._ahead is None or not self.tag or self.dry_run:
            return None
        from .ahead import WriteAhead
        return WriteAhead(box, self.model_id, self.threshold)

    def _run(self, mailboxes) -> None:
        for box in mailboxes:
            if self.stop_requested:
                self._left_unfiltered = True
                break
            path = Path(box)
            kind = mailbox_kind(path)
            for verdict, dest in self.move.items():
                if dest.resolve() == path.resolve():
                    raise ConfigError(f"{path}: the {verdict} destination is the mailbox being filtered")
            before = self.summary.messages
            if kind == "mbox":
                self._filter_mbox(path)
            else:
                self._filter_folder(path, kind)
            self.summary.mailboxes.append({"path": str(path), "format": kind,
                                           "messages": self.summary.messages - before})

    def _destinations(self, kind: str) -> dict:
        """The destination of each verdict moved, created where missing (a dry run creates
        nothing; both refuse a destination of another kind than the mailbox)."""
        if self.dry_run:
            return {v: check_destination(p, kind) for v, p in self.move.items()}
        made = {p for p in self.move.values() if not p.exists()}
        dests = {v: ensure_destination(p, kind) for v, p in self.move.items()}
        for p in made:
            self._made.setdefault(p, kind)
        return dests

    def _remove_unused(self) -> None:
        """Remove the destinations this run created and moved nothing into (still empty): a
        run that moved nothing leaves no new empty mailbox behind."""
        for path, kind in self._made.items():
            if not self.summary.moved.get(str(path)):
                remove_if_empty(path, kind)
        self._made.clear()

    # ------------------------------------------------------------- Maildir and MH: one loop

    def _filter_folder(self, path: Path, kind: str):
        dests = self._destinations(kind)
        box = FOLDER_FORMATS[kind](path, dests)
        with ExitStack() as locks:
            box.lock(locks, self.wait)
            if not self.dry_run:
                box.clean_up()
            group = GroupCommit(box, self._count, sync=self.sync)
            if self._ahead is not None:
                from .ahead import written_ahead
            else:
                written_ahead = _nothing_written
            try:
                with closing(self._judged(box.messages(), str, self._writer(box))) as judged_files:
                    for file, ahead in judged_files:
                        version = written_ahead(ahead)   # (path, verdict, P(spam)) a worker wrote, or None
                        left = version[0] if version is not None else ""
                        try:
                            if self.stop_requested:
                                self._left_unfiltered = True
                                return
                            left = self._filter_file(box, group, dests, file, ahead, version)
                        finally:
                            if left:
                                unlink_quietly(left)  # a worker's version that was not renamed
            finally:
                group.close()                         # what was renamed is made durable and reported

    def _filter_file(self, box, group, dests: dict, file, ahead, version) -> str:
        """One Maildir or MH message judged and its new version handed to ``group``: the
        ``version`` a worker wrote (``(path, verdict, P(spam))``, see
        :class:`~spamkit.mail.ahead.WriteAhead`) when it was written from the bytes read
        now for the verdict decided now, else one written here. Returns the path of a
        worker's version the group did not take ("" if none), for the caller to remove."""
        written = version[0] if version is not None else ""
        judged = self._judge_file(file, ahead)
        if judged is None:
            return written                            # moved away by a mail client meanwhile, or failed
        raw, verdict, p, scored, fresh = judged
        dest = dests.get(verdict)
        if fresh and scored and version is not None and version[1:] == (verdict, p):
            new_version, changed, written = ((written, None) if written else None), bool(written), ""
        else:
            new = self._new_bytes(raw, verdict, p, scored)
            changed = new != raw
            if self.dry_run:
                self._count(verdict, changed, dest, file, p)
                return written
            try:
                new_version = box.write_new(file, new) if changed else None
            except OSError as exc:
                raise FilterError(describe(exc, str(file))) from None
        group.add(file, new_version, dest, (verdict, changed, dest, file, p))
        return written

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
                messages = (c for c in iter_mbox_chunks(path) if c.envelope is not None)
                for number, (chunk, ahead) in enumerate(self._judged(messages, lambda c: c.message), 1):
                    if self.stop_requested:
                        self._left_unfiltered = True
                        return
                    judged = self._judge(chunk.message, f"{path}#{number}", ahead)
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
            need_separator = {d: ends_without_blank_line(d) for d in set(dests.values())}
            out = handles[path]
            number = 0
            for chunk, ahead in self._judged(iter_mbox_chunks(path),
                                             lambda c: c.message if c.envelope is not None else None):
                if chunk.envelope is None or self.stop_requested:
                    out.write(chunk.raw())                       # preamble, or the rest after Ctrl-C
                    self._left_unfiltered |= chunk.envelope is not None
                    continue
                number += 1
                judged = self._judge(chunk.message, f"{path}#{number}", ahead)
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
            for tmp in [*tmp_of.values(), *(owner_path(t) for t in tmp_of.values()), journal_tmp]:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
            if not isinstance(exc, OSError):
                raise                                     # after removing this run's unfinished files
            raise FilterError(describe(exc, str(path))) from None
