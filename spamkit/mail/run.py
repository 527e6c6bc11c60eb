"""A filter run over mailboxes: classify each message, tag it, move it, count what was done.

How a run never loses a message is in the package docstring (:mod:`spamkit.mail`).
"""

from __future__ import annotations

import os
import time
from contextlib import ExitStack, closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..common.durable import MAX_MESSAGE_FILE, NotAMessageFile, read_file, take_mode, unlink_quietly
from ..common.errors import ConfigError
from .commit import SYNC_MODES, GroupCommit
from .failures import FilterError, describe
from .locks import mbox_locks, spamkit_lock
from .mailboxes import FOLDER_FORMATS, check_destination, ensure_destination, mailbox_kind, remove_if_empty
from .mbox import commit_mbox, ends_without_blank_line, iter_mbox_chunks, journal_path, owner_path, recover_mbox
from .tags import VERDICTS, newline_of, recorded_verdict, tag

if TYPE_CHECKING:
    from .ahead import JudgeAhead


def _fingerprint(raw: bytes) -> tuple[int, int]:
    from .ahead import fingerprint
    return fingerprint(raw)


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
        self._ahead: JudgeAhead | None = None
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
            self._fail(file, exc.strerror or str(exc))
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
