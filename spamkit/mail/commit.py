"""How a filter run makes its moves durable: :class:`GroupCommit` links each moved or tagged
Maildir file into its destination, makes groups of them durable with one sync (of the file
system, or of each file: :data:`SYNC_MODES`) and only then removes the originals, on helper
threads, so that a crash at any point leaves every message at least once and a rerun finishes
the move (the argument is the package docstring's, :mod:`spamkit.mail`).
"""

from __future__ import annotations

import errno
import os
import queue
import threading
from pathlib import Path

from ..common.durable import filesystem_sync, fsync_dir, unlink_quietly
from .failures import FilterError, describe

TYPE_CHECKING = False                  # typing's names for the checker only
if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor


def _unlink_all(paths) -> None:
    for path in paths:
        unlink_quietly(path)


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
#: the renames, where the system has it: :func:`~spamkit.common.durable.filesystem_sync`) or "files"
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
    systems of :data:`~spamkit.common.durable.SYNCFS_FILESYSTEMS`), or an fsync of each new version
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
        self._groups: queue.Queue = queue.Queue(maxsize=1)
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self._fsyncs: ThreadPoolExecutor | None = None       # the threads of _fsync_all, made on first use
        self._failed = False                                 # a group failed: the later ones are dropped
        self._syncfs = False                                 # syncfs or None once a group commits
        self._links = True                                   # hard links work here (set_aside)
        self._reclaim: ThreadPoolExecutor | None = None      # the threads that remove set-aside links

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
        system without an honest one: :func:`~spamkit.common.durable.filesystem_sync`); found once."""
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
        fails: each folder is then tried and an error ignored, as :func:`~spamkit.common.durable.fsync_dir` does."""
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
