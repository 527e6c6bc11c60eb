"""The README's tour and docs/commands.md, run as printed: every line of their shell blocks, in
order, by ``bash`` in a folder (also ``$HOME``) that holds what the lines name.

``tests/test_docs_commands.py`` checks that every command shown anywhere in the docs parses;
this runs the two lists a new user copies from, line by line, exactly as printed, with the
installed ``spamkit`` and the real services (bogofilter's ``bogoutil``, SpamAssassin's
``spamc``). The names the lines use stand for a user's own files, so the folder provides them
(:func:`world`): ``corpora/sample`` (and ``big/``, trained on Dask) is the repository's sample
corpus; ``enron1.tar.gz``, ``enron2.tar.gz``, ``SMSSpamCollection``, ``20news-bydate.tar.gz``
and ``trec07p-dev.tar.gz`` are the shared corpora (``trec07p.tar.gz`` is trec07p-dev's archive
under the full corpus's name); ``trec07p/`` and ``trec06p/`` are those corpora's first 1,000
messages in the TREC layout (the real ones are 75,419 and 37,821: the commands are the same,
the run minutes shorter); ``~/Mail``, ``~/Maildir``, ``message.eml`` and ``missed.eml`` are
made from the sample's messages, ``~/.bogofilter`` is a word list bogofilter trained on them
(``wordlist.txt`` its ``bogoutil -d``), ``costs.csv`` a cost table, ``bad.tsv`` the broken
table of the Errors section (whose printed output is compared with the run's, word for word).

Each ``python`` block of the two files runs too, as a script of its own, in the same folder.
A line that starts a server (it ends with ``&``) runs until the next such line or the end of
the list, and the lines after it talk to it. A line is left out only for a reason of the
reader's world that no test machine has, named in :data:`NOT_HERE` with the test that covers
what it shows instead. Each line must exit 0, but for the exits the docs promise otherwise
(pipe mode's verdicts, the Errors section's 1).
"""

from __future__ import annotations

import contextlib
import mailbox
import shutil
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from conftest import REPO, SAMPLE, corpora_root, installed

pytestmark = pytest.mark.slow                            # the real corpora, about two minutes

#: lines of the reader's world that no test machine has: (pattern, why, where it is tested)
NOT_HERE = [
    (r"imaps://", "a mail account of the reader's on an IMAP server",
     "tests/test_imap.py runs these options against a real Dovecot"),
    (r"tcp://(HOST|A):|^dask (scheduler|worker)", "a Dask cluster of the reader's machines",
     "tests/test_distributed.py trains, evaluates and cross-validates on Dask"),
    (r"\s/var/(?!lib/spamkit/)", "a mail server's system folders",
     "tests/test_recipes.py delivers through procmail and Dovecot"),
]
#: the site's folder the docs' spamd examples use; made for the run (and removed) by root under CI
SITE = Path("/var/lib/spamkit")

#: exit statuses a line may end with besides 0, by what the docs say of it
PIPE_MODE = re.compile(r"^(spamkit filter \S+ - |spamkit-pipe )")   # 0 spam, 1 ham, 2 unsure
TEN_MINUTES = 600


def shell_lines(path: Path, containing: str | None = None) -> list[tuple[int, str]]:
    """``(line number, text)`` of each command line of the ``sh`` blocks of ``path`` (only the
    block that holds ``containing``, when given): continuation lines joined, blank and comment
    lines dropped."""
    text = path.read_text(encoding="utf-8")
    lines = []
    for block in re.finditer(r"```sh\n(.*?)```", text, re.S):
        if containing is not None and containing not in block.group(1):
            continue
        first = text[:block.start()].count("\n") + 2
        pending, start = "", None
        for offset, line in enumerate(block.group(1).splitlines()):
            if start is None:
                start = first + offset
            if line.rstrip().endswith("\\"):
                pending += line.rstrip()[:-1] + " "
                continue
            line, pending = (pending + line).strip(), ""
            if line and not line.startswith("#"):
                lines.append((start, line))
            start = None
    assert lines, f"{path.name}: no sh block" + (f" with {containing!r}" if containing else "")
    return lines


def starts_a_server(line: str) -> bool:
    """A line that leaves its command running in the background (``... &``, a comment after it)."""
    words = shlex.split(line, comments=True)
    return bool(words) and words[-1].endswith("&") and not words[-1].endswith("&&")


def python_blocks(path: Path) -> list[tuple[int, str]]:
    """``(line number, code)`` of each ``python`` block of ``path``."""
    text = path.read_text(encoding="utf-8")
    return [(text[:block.start()].count("\n") + 2, block.group(1))
            for block in re.finditer(r"```python\n(.*?)```", text, re.S)]


def not_here(line: str, site: bool) -> str | None:
    command = " ".join(shlex.split(line, comments=True))        # a comment may name anything
    if not site and str(SITE) in command:
        return f"{SITE}, a site's folder, made for this run only by root under CI=true"
    for pattern, why, where in NOT_HERE:
        if re.search(pattern, command):
            return f"{why} ({where})"
    return None


def _messages(label: str) -> list[bytes]:
    return [p.read_bytes() for p in sorted((SAMPLE / label).iterdir())]


def _mbox(path: Path, messages) -> None:
    box = mailbox.mbox(path, create=True)
    for raw in messages:
        box.add(raw)
    box.close()


def _maildir(path: Path, messages) -> None:
    box = mailbox.Maildir(path, create=True)
    for raw in messages:
        box.add(raw)


def _trec_prefix(archive: Path, folder: Path, n: int) -> None:
    """The first ``n`` messages of a TREC corpus archive, extracted in its layout into ``folder``."""
    with tarfile.open(archive) as tar:
        root = tar.getnames()[0].split("/")[0]
        index = tar.extractfile(f"{root}/full/index").read().decode().splitlines()[:n]
        (folder / "full").mkdir(parents=True)
        (folder / "full" / "index").write_text("\n".join(index) + "\n")
        wanted = {f"{root}/{line.split()[1].removeprefix('../')}" for line in index}
        for member in tar:
            if member.name in wanted:
                target = folder / member.name.removeprefix(root + "/")
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(tar.extractfile(member).read())
                wanted.discard(member.name)
                if not wanted:
                    break
    assert not wanted, f"{archive}: {len(wanted)} indexed messages not found"


def world(folder: Path) -> Path:
    """The folder the docs' lines run in (and ``$HOME``): what they name, made or linked."""
    shared = corpora_root()
    for name, target in (("enron1.tar.gz", "enron-spam/enron1.tar.gz"), ("enron2.tar.gz", "enron-spam/enron2.tar.gz"),
                         ("SMSSpamCollection", "sms-spam-collection/SMSSpamCollection"),
                         ("20news-bydate.tar.gz", "20news/20news-bydate.tar.gz"),
                         ("trec07p-dev.tar.gz", "trec07p-dev/trec07p-dev.tar.gz"),
                         ("trec07p.tar.gz", "trec07p-dev/trec07p-dev.tar.gz")):
        if not (shared / target).exists():
            message = f"real corpus {shared / target} not found (set SPAMKIT_CORPORA)"
            if os.environ.get("CI", "").lower() == "true":
                pytest.fail(message)
            pytest.skip(message)
        (folder / name).symlink_to(shared / target)
    _trec_prefix(shared / "trec07p-dev" / "trec07p-dev.tar.gz", folder / "trec07p", 1000)
    _trec_prefix(shared / "trec06p" / "trec06p.tar.gz", folder / "trec06p", 1000)
    (folder / "corpora").mkdir()
    (folder / "corpora" / "sample").symlink_to(SAMPLE)
    (folder / "big").symlink_to(SAMPLE)                  # corpora to train on Dask
    (folder / "big-corpus").symlink_to(SAMPLE)
    ham, spam = _messages("ham"), _messages("spam")
    (folder / "message.eml").write_bytes(spam[0])
    (folder / "missed.eml").write_bytes(spam[1])
    mail = folder / "Mail"
    mail.mkdir()
    _mbox(mail / "INBOX", ham[:100] + spam[:20])        # mostly good mail, some spam to move
    _mbox(mail / "Junk.mbox", spam[20:])
    _mbox(mail / "Junk", spam[6:20])                     # the junk folder a mail client keeps
    _maildir(mail / "missed-spam", spam[2:6])
    _maildir(mail / "not-spam", ham[100:104])
    _maildir(mail / "oops", ham[100:102])                # learned as ham above, then taken back
    _maildir(folder / "Maildir", ham[104:] + spam[:5])
    (folder / ".spamkit").mkdir()
    (folder / ".spamkit" / "mine.spamkit").symlink_to(folder / "mine.spamkit")   # made by a line
    (folder / "costs.csv").write_text("decision,ham,spam\nham,0,10\nspam,100,0\nunsure,2,2\n")
    (folder / "bad.tsv").write_text("ham\tsee you at lunch\nspma\tcheap pills\n")
    bogofilter = installed("bogofilter", "bogofilter")
    bogoutil = installed("bogoutil", "bogofilter")
    (folder / ".bogofilter").mkdir()
    for flag, messages in (("-s", spam), ("-n", ham)):
        files = []
        for i, raw in enumerate(messages):
            files.append(folder / ".bogofilter" / f"{flag[1]}{i}.eml")
            files[-1].write_bytes(raw)
        subprocess.run([bogofilter, "-d", str(folder / ".bogofilter"), flag, "-B", *map(str, files)], check=True)
        for f in files:
            f.unlink()
    with open(folder / "wordlist.txt", "wb") as out:       # what the README's import line reads
        subprocess.run([bogoutil, "-d", str(folder / ".bogofilter" / "wordlist.db")], stdout=out, check=True)
    return folder


def printed_output(path: Path, command: str) -> str:
    """The lines a docs block shows after ``$ command``."""
    text = path.read_text(encoding="utf-8")
    block = re.search(rf"```\n\$ {re.escape(command)}\n(.*?)```", text, re.S)
    assert block, f"{path.name}: no output shown for {command!r}"
    return block.group(1)


class Servers:
    """The server a line ending with ``&`` started, stopped when the next one starts or at the end."""

    def __init__(self):
        self.proc = None

    def start(self, line: str, cwd: Path, env: dict) -> None:
        self.stop()
        self.proc = subprocess.Popen(["bash", "-c", line + "\nwait"], cwd=cwd, env=env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
        where = re.search(r"--socket (\S+)", line)
        address = re.search(r"--spamd (\S+):(\d+)", line)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and self.proc.poll() is None:
            if where and Path(where.group(1).replace("~", str(cwd), 1)).exists():
                return
            if address:
                host = "127.0.0.1" if address.group(1) == "0.0.0.0" else address.group(1)
                try:
                    socket.create_connection((host, int(address.group(2))), timeout=1).close()
                    return
                except OSError:
                    pass
            time.sleep(0.05)
        raise AssertionError(f"the server did not start: {self.stop()[-800:]}")

    def stop(self) -> str:
        if self.proc is None:
            return ""
        with contextlib.suppress(ProcessLookupError):       # it ended by itself
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            _, err = self.proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            _, err = self.proc.communicate()
        self.proc = None
        return err.decode(errors="replace")


@contextlib.contextmanager
def site_folder(folder: Path):
    """True, with :data:`SITE` made for the block (``users/`` and ``site.spamkit``, the filter
    ``mine.spamkit`` the lines train), where this run may: as root, under CI, and only when no
    such folder exists; it is removed afterwards."""
    if os.environ.get("CI", "").lower() != "true" or os.geteuid() != 0 or SITE.exists():
        yield False
        return
    (SITE / "users").mkdir(parents=True)
    (SITE / "site.spamkit").symlink_to(folder / "mine.spamkit")
    try:
        yield True
    finally:
        shutil.rmtree(SITE)


def run_lines(doc: Path, lines, folder: Path, site: bool) -> list[str]:
    """Run ``lines`` in order in ``folder``; what went wrong, one entry per line."""
    env = {**os.environ, "HOME": str(folder),
           "PATH": os.pathsep.join([str(Path(sys.executable).parent), "/usr/local/bin", "/usr/bin", "/bin"])}
    env.pop("SPAMKIT_LEAN", None)
    problems, skipped = [], []
    servers = Servers()
    privileged = re.compile(r"(--spamd \S+:|spamc .*-p )(\d+)")
    try:
        for lineno, line in lines:
            where = f"{doc.name}:{lineno}: {line}"
            reason = not_here(line, site)
            port = privileged.search(line)
            if reason is None and port and int(port.group(2)) < 1024 and os.geteuid() != 0:
                reason = "a port below 1024 needs root (CI runs as root)"
            if line.startswith("spamc") and servers.proc is None and reason is None:
                reason = "its server did not run"
            if reason is not None:
                skipped.append(f"{where}  [{reason}]")
                if starts_a_server(line):
                    servers.stop()                          # the lines after it talk to this one
                continue
            if starts_a_server(line):
                try:
                    servers.start(line, folder, env)
                except AssertionError as exc:
                    problems.append(f"{where}\n    {exc}")
                continue
            done = subprocess.run(["bash", "-c", line], cwd=folder, env=env, capture_output=True,
                                  timeout=TEN_MINUTES)
            allowed = {0}
            if PIPE_MODE.match(line):
                allowed = {0, 1, 2}
            if line.startswith("spamc -c"):
                allowed = {0, 1}                          # spamc -c: 1 for spam
            errors_example = line == "spamkit corpus bad.tsv"
            if errors_example:
                allowed = {1}
                shown = printed_output(doc, line)
                if done.stderr.decode() + done.stdout.decode() != shown:
                    problems.append(f"{where}\n    printed: {shown!r}\n    ran:     "
                                    f"{(done.stderr + done.stdout).decode()!r}")
            if done.returncode not in allowed:
                tail = (done.stderr.decode(errors="replace") or done.stdout.decode(errors="replace"))[-800:]
                problems.append(f"{where}\n    exit {done.returncode}: {tail}")
    finally:
        servers.stop()
    print("\n".join(["left out:", *skipped]))
    return problems


def _check(doc: Path, tmp_path: Path, containing: str | None = None, mine: bool = False) -> None:
    """Run ``doc``'s lines in a new world; with ``mine``, one where the reader has trained
    ``mine.spamkit`` as the README does (for the guides that start from it)."""
    lines = shell_lines(doc, containing)
    folder = world(tmp_path)
    if mine:
        subprocess.run([str(Path(sys.executable).parent / "spamkit"), "train", "--ham", "Mail/INBOX", "--spam",
                        "Mail/Junk.mbox", "-o", "mine.spamkit", "-q"], cwd=folder, check=True)
    with site_folder(folder) as site:
        problems = run_lines(doc, lines, folder, site)
    for lineno, code in python_blocks(doc):              # each a script of its own, as printed
        script = folder / f"block-{lineno}.py"
        script.write_text(code)
        done = subprocess.run([sys.executable, script.name], cwd=folder, capture_output=True, timeout=TEN_MINUTES,
                              env={**os.environ, "HOME": str(folder)})
        if done.returncode != 0:
            problems.append(f"{doc.name}:{lineno}: the Python block\n    exit {done.returncode}: "
                            f"{done.stderr.decode(errors='replace')[-800:]}")
    assert not problems, "\n".join(problems)


def test_the_readme_tour_runs_as_printed(tmp_path):
    _check(REPO / "README.md", tmp_path, containing="spamkit corpus corpora/sample")
    assert (tmp_path / "tagged.eml").read_bytes().count(b"X-Spamkit") >= 1
    assert "X-Spamkit" in (tmp_path / "Mail" / "INBOX").read_text(errors="replace")
    assert ":0" in (tmp_path / ".procmailrc").read_text()
    if os.geteuid() == 0:                                  # spamd on port 783
        assert b"X-Spam-Status" in (tmp_path / "checked.eml").read_bytes()


def test_the_command_list_runs_as_printed(tmp_path):
    _check(REPO / "docs" / "commands.md", tmp_path)
    if os.geteuid() == 0:                                  # spamd on port 783
        assert b"X-Spam-Status" in (tmp_path / "processed.eml").read_bytes()
        assert list((tmp_path / ".spamkit" / "users").iterdir()), "spamc -L taught nothing"
    assert (tmp_path / "back.txt").stat().st_size > 0
    assert (tmp_path / "news.html").stat().st_size > 0
    assert (tmp_path / "sample-dask.spamkit").stat().st_size > 0


@pytest.mark.parametrize("doc", ["mail-filtering.md", "scaling-out.md"])
def test_the_other_guides_commands_run_as_printed(doc, tmp_path):
    _check(REPO / "docs" / doc, tmp_path, mine=True)
