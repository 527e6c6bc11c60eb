"""The mailbox formats a run writes: which kind a path is, creating a destination, and the
one-message-per-file folders (Maildir, MH) behind one interface, so that one loop
(:meth:`spamkit.mail.run.MailFilter`) filters both. An mbox is one file rewritten as
a whole (:mod:`spamkit.mail.mbox`).
"""

from __future__ import annotations

import os
from contextlib import ExitStack
from pathlib import Path

from ..corpus.mboxsplit import estimate_messages
from ..common.durable import open_regular, write_durable, write_file
from .failures import FilterError, describe
from .locks import mbox_locks, pid_alive, spamkit_lock


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
            raise FilterError(describe(exc, str(path))) from None
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
            raise FilterError(describe(exc, str(path))) from None
        if head and not (head.startswith(b"From ") or b"\nFrom " in head):
            raise FilterError(f"{path}: not an mbox (no 'From ' line starts a message in its first 64 KB)")
        return "mbox"
    raise FilterError(f"{path}: no such mailbox")


#: the folders of a Maildir, in the order a new one is made
MAILDIR_PARTS = ("tmp", "new", "cur")


def _unfinished_maildir(p: Path) -> bool:
    """A Maildir a killed run began to make: some of its folders missing, and nothing else in it
    but empty ones of them."""
    names = os.listdir(p)
    return (not all(sub in names for sub in MAILDIR_PARTS)
            and all(name in MAILDIR_PARTS and (p / name).is_dir() and not os.listdir(p / name) for name in names))


#: each kind of mailbox, as a sentence names it
_A_MAILBOX = {"mbox": "an mbox", "maildir": "a Maildir", "mh": "an MH folder"}


def check_destination(path, kind: str) -> Path:
    """``path`` as a destination for mail moved out of a ``kind`` mailbox, checked without
    changing anything (what a dry run does): a missing one, an empty folder (for a Maildir or
    MH folder) or a mailbox of that kind; anything else is refused with the reason."""
    p = Path(path)
    if kind == "mbox" and p.is_dir():
        raise FilterError(f"{path}: a folder; mail moved out of an mbox goes to an mbox, a file: name one "
                          "(moves never convert formats, so they stay atomic)")
    if not p.exists() or (p.is_dir() and (not any(p.iterdir()) or (kind == "maildir" and _unfinished_maildir(p)))):
        return p
    found = mailbox_kind(p)
    if found != kind:
        raise FilterError(f"{path} is {_A_MAILBOX[found]}; moving out of {_A_MAILBOX[kind]} needs "
                          f"{_A_MAILBOX[kind]} as destination (moves never convert formats, so they stay atomic)")
    return p


def ensure_destination(path, kind: str) -> Path:
    """Create a destination mailbox of ``kind`` if it does not exist; refuse another kind.

    New folders are private (mode 0700, as mail delivery agents make them). A new Maildir inside
    another Maildir (Maildir++: ``~/Maildir/.Junk``) also gets the empty ``maildirfolder`` file
    that Dovecot and Courier expect in a subfolder.
    """
    p = check_destination(path, kind)
    if p.is_dir() and not any(p.iterdir()):
        p.rmdir()                                     # an empty folder made for it: set it up as a mailbox
    elif kind == "maildir" and p.is_dir() and _unfinished_maildir(p):
        for sub in MAILDIR_PARTS:                     # a run killed while it made this one: finish it
            (p / sub).mkdir(mode=0o700, exist_ok=True)
    if p.exists():
        return p
    try:
        if kind == "maildir":
            p.parent.mkdir(parents=True, exist_ok=True)
            p.mkdir(mode=0o700)
            for sub in MAILDIR_PARTS:
                (p / sub).mkdir(mode=0o700)
            if all((p.parent / sub).is_dir() for sub in ("cur", "new", "tmp")):
                (p / "maildirfolder").touch(mode=0o600)
        elif kind == "mh":
            p.parent.mkdir(parents=True, exist_ok=True)
            p.mkdir(mode=0o700)
            (p / ".mh_sequences").touch(mode=0o600)
        else:
            p.parent.mkdir(parents=True, exist_ok=True)
            write_durable(p, b"")
    except OSError as exc:
        raise FilterError(describe(exc, f"cannot create {path}")) from None
    return p


def remove_if_empty(path: Path, kind: str) -> bool:
    """Remove a destination mailbox this run created and moved nothing into, if it is still
    empty (nothing delivered to it meanwhile); True if it was removed. The folders above it
    that were made for it stay."""
    try:
        if kind == "mbox":
            if path.is_file() and path.stat().st_size == 0:
                path.unlink()
                return True
            return False
        parts = {"maildir": (*MAILDIR_PARTS, "maildirfolder"), "mh": (".mh_sequences",)}[kind]
        names = set(os.listdir(path))
        if not names <= set(parts) or any((path / n).is_dir() and os.listdir(path / n) for n in names) \
                or any((path / n).is_file() and (path / n).stat().st_size for n in names):
            return False
        for name in names:
            (path / name).rmdir() if (path / name).is_dir() else (path / name).unlink()
        path.rmdir()
        return True
    except OSError:
        return False                                  # in use or changed meanwhile: it stays


def remove_stale(folder: Path, pattern: str, pid_of) -> None:
    """Delete what a killed run left (``pid_of(name)`` reads the run's pid from the name): tagged
    copies, never renamed over a message, so the message itself is intact; aside names of
    messages (a hard link each, or a folder of them), second names of files that stay in place.

    A name of this process's own pid is stale too: a run cleans up before it writes anything, so
    such a name was left by an earlier process that had the same pid (pids come round again;
    Linux's ``pid_max`` is often 32768), and keeping it made this run's own copy of that message,
    created exclusively, fail."""
    own = os.getpid()
    for stale in folder.glob(pattern):
        try:
            pid = pid_of(stale.name)
        except ValueError:
            continue
        if pid != own and pid_alive(pid):
            continue
        if stale.is_dir() and not stale.is_symlink():
            for name in stale.iterdir():
                name.unlink(missing_ok=True)
            stale.rmdir()
        else:
            stale.unlink(missing_ok=True)


def no_link(path: Path) -> Path:
    """``path``, a folder inside a mailbox, if it is not a symbolic link (a Maildir's ``new/``
    pointing elsewhere would have a run read, write and rename files outside the mailbox)."""
    if os.path.islink(path):
        raise FilterError(f"{path}: a symbolic link inside the mailbox; spamkit does not follow it "
                          "(nothing was changed)")
    return path


class FolderMailbox:
    """A mailbox of one message per file, as the run loop sees it.

    :meth:`lock` takes the locks of the mailbox and its destinations, :meth:`clean_up`
    removes what a killed run left, :meth:`messages` lists the message files in order,
    :meth:`write_new` writes a message's new bytes to a temporary file beside it (not yet
    fsynced: the run fsyncs a group's new versions together), :meth:`put` renames such a
    file over the message (atomic), :meth:`move` renames a message into a destination
    (atomic) and returns the folder it went to. None fsyncs a folder: the run fsyncs the
    folders its renames touched once per group of messages, before it reports them (see
    :class:`spamkit.mail.commit.GroupCommit`).
    """

    kind = ""

    def __init__(self, path: Path, destinations: dict):
        self.path = path
        self.destinations = destinations

    def lock(self, locks: ExitStack, wait: float) -> None:
        """spamkit's lock on each existing folder, in a fixed (sorted) order so that two runs on
        overlapping folders cannot deadlock."""
        folders = [f for f in sorted({self.path, *self.destinations.values()}, key=str)
                   if f.exists()]                     # a dry run does not create destinations
        for folder in folders:
            locks.enter_context(spamkit_lock(folder / ".spamkit.lock", wait))
        for folder in folders:
            self.lock_more(locks, folder, wait)

    def lock_more(self, locks: ExitStack, folder: Path, wait: float) -> None:
        """The format's own locks on a folder (none by default)."""

    def clean_up(self) -> None:
        raise NotImplementedError

    def messages(self):
        raise NotImplementedError

    def temporary_for(self, file) -> str:
        """Where the new version of ``file`` is written before it replaces it (strings: a worker
        writing ahead builds one a message, and pathlib's parsing was a tenth of its time)."""
        raise NotImplementedError

    def write_new(self, file, new: bytes) -> tuple[str, int]:
        """``new`` written to :meth:`temporary_for` ``file`` (a path, or its string), with its
        mode and owner: (the temporary's path, its open descriptor), not yet fsynced."""
        tmp = self.temporary_for(file)
        return tmp, write_file(Path(tmp), new, like=file)

    def put(self, tmp: Path, file: Path) -> None:
        """Rename a new version (made durable by the caller) over the message."""
        os.replace(tmp, file)

    def aside_for(self, file) -> str:
        """Where the message ``file`` is hard-linked before its new version replaces it (see
        :meth:`spamkit.mail.commit.GroupCommit.set_aside`); a name :meth:`clean_up` removes
        once the run that made it is gone."""
        raise NotImplementedError

    def end_asides(self) -> None:
        """After the run's aside names are removed: what holds them, if anything, goes too."""

    def move(self, file: Path, dest: Path) -> Path:
        raise NotImplementedError


class Maildir(FolderMailbox):
    """``new/`` then ``cur/``; a new version is written in ``tmp/``; a moved message keeps its
    name and its subfolder."""

    kind = "maildir"
    _tmp_ready = False                                # tmp/ made once per run, not per message

    _asides: Path | None = None                       # this run's folder of aside names, once made

    def clean_up(self) -> None:
        tmp = no_link(self.path / "tmp")
        if tmp.is_dir():                              # new versions, and folders of aside names
            remove_stale(tmp, "*.spamkit-*", lambda name: int(name.rsplit("-", 1)[-1]))

    def messages(self):
        for sub in ("new", "cur"):
            folder = no_link(self.path / sub)
            for name in sorted(os.listdir(folder)) if folder.is_dir() else []:
                if not name.startswith("."):
                    yield folder / name

    def temporary_for(self, file) -> str:
        if not self._tmp_ready:
            no_link(self.path / "tmp").mkdir(exist_ok=True)
            self._tmp_ready = True
        base = os.path.basename(file).split(":", 1)[0]
        return f"{self.path}/tmp/{base}.spamkit-{os.getpid()}"

    def aside_for(self, file) -> str:
        # in a folder of their own under tmp/: the run creates its new versions in tmp/, renames
        # them out of it and removes the aside names on other threads; sharing one directory,
        # all of them would wait on its lock
        if self._asides is None:
            self._asides = self.path / "tmp" / f".spamkit-aside-{os.getpid()}"
            self._asides.mkdir(exist_ok=True)
        return f"{self._asides}/{os.path.basename(file).split(':', 1)[0]}"

    def end_asides(self) -> None:
        if self._asides is not None:
            try:
                self._asides.rmdir()
            except OSError:
                pass                                  # a name left: the next run's clean-up removes it
            self._asides = None

    def move(self, file: Path, dest: Path) -> Path:
        target = no_link(dest / file.parent.name) / file.name
        if target.exists():
            raise FilterError(f"{target} already exists; not overwriting a message")
        os.rename(file, target)
        return target.parent


class MHFolder(FolderMailbox):
    """Numbered files in number order; MH programs lock ``.mh_sequences`` (a dot-lock and
    ``fcntl``); a moved message takes the destination's next free number."""

    kind = "mh"

    def __init__(self, path: Path, destinations: dict):
        super().__init__(path, destinations)
        self.next_number: dict = {}                   # per destination, first read under the locks

    @staticmethod
    def numbers(folder: Path) -> list[int]:
        return sorted(int(n) for n in os.listdir(folder) if n.isdigit())

    def lock_more(self, locks: ExitStack, folder: Path, wait: float) -> None:
        if (folder / ".mh_sequences").exists():
            locks.enter_context(mbox_locks(folder / ".mh_sequences", wait))

    def clean_up(self) -> None:
        for pattern in (".spamkit-tmp-*", ".spamkit-aside-*"):  # new versions, set-aside links
            remove_stale(self.path, pattern, lambda name: int(name.rsplit("-", 2)[-2]))

    def messages(self):
        for number in self.numbers(self.path):
            yield self.path / str(number)

    def temporary_for(self, file) -> str:
        return f"{self.path}/.spamkit-tmp-{os.getpid()}-{os.path.basename(file)}"

    def aside_for(self, file) -> str:
        return f"{self.path}/.spamkit-aside-{os.getpid()}-{os.path.basename(file)}"

    def move(self, file: Path, dest: Path) -> Path:
        if dest not in self.next_number:
            self.next_number[dest] = max(self.numbers(dest), default=0) + 1
        while (dest / str(self.next_number[dest])).exists():
            self.next_number[dest] += 1
        os.rename(file, dest / str(self.next_number[dest]))
        self.next_number[dest] += 1
        return dest


#: the one-message-per-file formats by kind
FOLDER_FORMATS = {"maildir": Maildir, "mh": MHFolder}


def count_messages(path) -> tuple[int, bool] | None:
    """``(messages, exact)`` a mailbox holds, for a progress display: a Maildir or MH folder's
    files listed (none read), an mbox's envelope lines counted (about how many:
    :func:`spamkit.corpus.mboxsplit.estimate_messages`, ~2 ms a MB); None for what cannot
    be listed or read."""
    try:
        kind = mailbox_kind(Path(path))
        if kind == "mbox":
            with os.fdopen(open_regular(path), "rb") as fh:
                return estimate_messages(fh), False
        if kind not in FOLDER_FORMATS:
            return None
        return sum(1 for _ in FOLDER_FORMATS[kind](Path(path), {}).messages()), True
    except (FilterError, OSError):
        return None
