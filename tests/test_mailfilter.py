"""spamkit filter: tags are a pure prefix, moves are exactly-once, kills and failures lose nothing."""

from __future__ import annotations

import errno
import json
import fcntl
import mailbox
import multiprocessing
import os
import threading
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from spamkit.cli import cli
from spamkit.common.errors import ConfigError
from spamkit.mail import (EXIT_ERROR, EXIT_HAM, EXIT_SPAM, FilterError, MailFilter, iter_mbox_chunks,
                                recorded_verdict, split_tags, tag)

from conftest import SAMPLE

FORMATS = ("mbox", "maildir", "mh")
_TEST_ID = re.compile(rb"X-Test-Id: (\d+)")


# ------------------------------------------------------------------ tags

def test_tag_is_a_prefix_and_replaces_old_tags():
    raw = b"Subject: hi\r\nFrom: a@b\r\n\r\nbody\r\n"
    once = tag(raw, "spam", 0.97, "m@1", threshold=0.9)
    # SpamAssassin's fields: P(spam) 0.97 with the spam threshold 0.9 at 5.0 points is 5 + 5 * 0.07 / 0.1 = 8.5
    assert once.endswith(raw) and once.startswith(
        b"X-Spam-Status: Yes, score=8.5 required=5.0 tests=SPAMKIT_SPAM,SPAMKIT_P95_99 p=0.970000 model=m@1\r\n"
        b"X-Spam-Flag: YES\r\nX-Spam-Level: ********\r\nX-Spam-Probability: 0.970000\r\n")
    twice = tag(once, "ham", 0.01, "m@2", threshold=0.9)
    assert twice.endswith(raw) and twice.count(b"X-Spam-Status") == 1 and b"m@1" not in twice
    assert b"X-Spam-Flag" not in twice and b"X-Spam-Status: No, score=0.1 " in twice     # 5 * 0.01 / 0.9 = 0.06
    assert recorded_verdict(twice, "m@2") == ("ham", 0.01) and recorded_verdict(twice, "m@1") is None


def test_another_filters_fields_are_renamed_not_doubled_and_come_back():
    raw = b"From a@b  Mon Jan  1 00:00:00 2024\nSubject: x\nX-Spam-Status: No, score=-3.1\nX-Spam-Flag: NO\n\nbody\n"
    tagged = tag(raw, "spam", 0.999, "m@1")
    head = tagged.split(b"\n\n", 1)[0]
    assert head.startswith(b"From a@b ") and head.count(b"\nX-Spam-Status:") == 1
    assert b"X-Spam-Prev-Status: No, score=-3.1" in head and b"X-Spam-Prev-Flag: NO" in head
    assert split_tags(tagged)[1] == raw and split_tags(tag(tagged, "ham", 0.1, "m@1"))[1] == raw


def test_a_from_line_without_a_line_end_is_not_an_envelope():
    # found by hypothesis: b"From " alone was taken for an envelope line and the fields ran into it
    for raw in (b"From ", b"From a@b"):
        assert split_tags(tag(raw, "spam", 0.9, "m@1"))[1] == raw


@settings(max_examples=200, deadline=None)
@given(raw=st.binary(max_size=300), verdict=st.sampled_from(["spam", "ham", "unsure"]),
       p=st.floats(0, 1))
def test_tagging_any_bytes_keeps_them(raw, verdict, p):
    fields, rest = split_tags(raw)
    tagged = tag(raw, verdict, p, "model@abc")
    again_fields, again_rest = split_tags(tagged)
    assert again_rest == rest and again_fields["x-spamkit-model"] == "model@abc"   # the message, byte for byte
    if b"x-spam-" not in rest.lower():
        assert tagged.endswith(rest)                   # nothing to rename: the tags are a pure prefix


# ------------------------------------------------------------------ mailboxes

def sample_messages():
    files = sorted(p for p in SAMPLE.rglob("*") if p.is_file() and p.parent.name in ("ham", "spam"))
    return [f.read_bytes() for f in files]


def build(kind: str, path: Path, n: int) -> None:
    """A mailbox of n messages, each with a unique X-Test-Id header first."""
    msgs = sample_messages()
    box = {"mbox": mailbox.mbox, "maildir": mailbox.Maildir, "mh": mailbox.MH}[kind](path, create=True)
    box.lock()
    for i in range(n):
        box.add(b"X-Test-Id: %d\n" % i + msgs[(i * 7) % len(msgs)])   # ham and spam mixed
    box.flush()
    box.unlock()


def stored(kind: str, path: Path) -> list[bytes]:
    """Every stored message's bytes (mbox: without its From_ line), in the mailbox's order."""
    if not path.exists():
        return []
    if kind == "mbox":
        return [c.message for c in iter_mbox_chunks(path) if c.envelope is not None]
    if kind == "maildir":
        # (a destination a killed run was making may lack new/ or cur/ yet: it holds no message)
        return [(path / sub / name).read_bytes() for sub in ("new", "cur") if (path / sub).is_dir()
                for name in sorted(os.listdir(path / sub)) if not name.startswith(".")]
    return [(path / name).read_bytes() for name in sorted(os.listdir(path), key=lambda s: (len(s), s))
            if name.isdigit()]


def by_id(messages) -> dict:
    out: dict = {}
    for m in messages:
        _, rest = split_tags(m)
        ident = int(_TEST_ID.match(rest).group(1))
        out.setdefault(ident, []).append(rest)
    return out


def check_exactly_once(kind, boxes, originals: dict) -> None:
    seen = by_id([m for b in boxes for m in stored(kind, b)])
    assert sorted(seen) == sorted(originals), "a message is missing"
    for ident, copies in seen.items():
        assert len(copies) == 1, f"message {ident} is there {len(copies)} times"
        assert copies[0] == originals[ident], f"message {ident} changed beyond the spamkit fields"


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("model") / "m.spamkit"
    result = CliRunner().invoke(cli, ["train", str(SAMPLE), "-o", str(path)])
    assert result.exit_code == 0, result.output
    return path


@pytest.mark.parametrize("kind", FORMATS)
def test_filter_tags_moves_and_is_idempotent(kind, model, tmp_path):
    from spamkit import SpamFilter
    inbox, junk = tmp_path / f"inbox.{kind}", tmp_path / f"junk.{kind}"
    build(kind, inbox, 120)
    originals = {k: v[0] for k, v in by_id(stored(kind, inbox)).items()}
    runner = CliRunner()
    dry = runner.invoke(cli, ["filter", str(model), str(inbox), "--tag", "--move-spam-to", str(junk), "--dry-run",
                              "--json"])
    assert dry.exit_code == 0, dry.output
    assert by_id(stored(kind, inbox)) == {k: [v] for k, v in originals.items()} and not junk.exists()
    result = runner.invoke(cli, ["filter", str(model), str(inbox), "--tag", "--move-spam-to", str(junk), "--json"])
    assert result.exit_code == 0, result.output
    check_exactly_once(kind, [inbox, junk], originals)
    spam_filter = SpamFilter.load(model)
    for msg in stored(kind, junk):
        assert msg.startswith(b"X-Spam-Status: Yes")
        assert spam_filter.verdict(split_tags(msg)[1])[0] == "spam"
    for msg in stored(kind, inbox):
        assert msg.startswith(b"X-Spam-Status: No")
    assert len(stored(kind, junk)) > 20 and len(stored(kind, inbox)) > 20      # the sample is about half spam
    before = {b: stored(kind, b) for b in (inbox, junk)}
    again = runner.invoke(cli, ["filter", str(model), str(inbox), "--tag", "--move-spam-to", str(junk)])
    assert again.exit_code == 0 and "already tagged by this filter" in again.output
    assert {b: stored(kind, b) for b in (inbox, junk)} == before


@pytest.mark.parametrize("kind", ["maildir", "mh"])
def test_filter_sync_files_and_filesystem_leave_the_same_mailboxes(kind, model, tmp_path):
    # --sync only changes how the changes reach the disk, never what they are
    runner, result = CliRunner(), {}
    for sync in ("filesystem", "files"):
        inbox, junk = tmp_path / sync / f"inbox.{kind}", tmp_path / sync / f"junk.{kind}"
        inbox.parent.mkdir()
        build(kind, inbox, 150)
        out = runner.invoke(cli, ["filter", str(model), str(inbox), "--tag", "--move-spam-to", str(junk),
                                  "--sync", sync, "--jobs", "1"])
        assert out.exit_code == 0, out.output
        result[sync] = (sorted(stored(kind, inbox)), sorted(stored(kind, junk)))
    assert result["files"] == result["filesystem"] and len(result["files"][1]) > 20
    bad = runner.invoke(cli, ["filter", str(model), str(tmp_path / "x"), "--tag", "--sync", "never"])
    assert bad.exit_code == 2 and "Invalid value for '--sync'" in bad.output


def test_pipe_mode_exit_status_and_pass_through(model, tmp_path):
    msgs = sample_messages()
    spam = (SAMPLE / "spam").iterdir().__next__().read_bytes()
    ham = (SAMPLE / "ham").iterdir().__next__().read_bytes()
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    cmd = [sys.executable, "-m", "spamkit", "filter", str(model), "-"]
    out = subprocess.run(cmd, input=spam, capture_output=True, env=env)
    assert out.returncode == EXIT_SPAM and out.stdout.endswith(spam) and out.stdout.startswith(b"X-Spam-Status: Yes")
    out = subprocess.run(cmd, input=ham, capture_output=True, env=env)
    assert out.returncode == EXIT_HAM and out.stdout.endswith(ham) and out.stdout.startswith(b"X-Spam-Status: No")
    broken = tmp_path / "broken.spamkit"
    broken.write_bytes(b"not a filter file")
    out = subprocess.run([sys.executable, "-m", "spamkit", "filter", str(broken), "-"], input=msgs[3],
                         capture_output=True, env=env)
    assert out.returncode == EXIT_ERROR and out.stdout == msgs[3] and b"passed through" in out.stderr
    out = subprocess.run([sys.executable, "-m", "spamkit", "filter", str(tmp_path / "missing.spamkit"), "-"],
                         input=msgs[4], capture_output=True, env=env)
    assert out.returncode == EXIT_ERROR and out.stdout == msgs[4]


@pytest.mark.parametrize("route", ["lean", "full"])
def test_pipe_mode_keeps_an_mbox_envelope_line_first(model, route):
    # procmail hands a message over with its "From sender date" line; the fields go below it
    raw = b"From someone@example.org  Mon Jan  1 00:00:00 2024\n" + next((SAMPLE / "spam").iterdir()).read_bytes()
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    if route == "full":
        env["SPAMKIT_LEAN"] = "0"
    out = subprocess.run([sys.executable, "-m", "spamkit", "filter", str(model), "-"], input=raw,
                         capture_output=True, env=env)
    lines = out.stdout.split(b"\n")
    assert lines[0] == raw.split(b"\n")[0] and lines[1].startswith(b"X-Spam-Status: ")
    assert split_tags(out.stdout)[1] == raw                            # only the fields were added
    again = subprocess.run([sys.executable, "-m", "spamkit", "filter", str(model), "-"], input=out.stdout,
                           capture_output=True, env=env)
    assert again.stdout == out.stdout                                  # re-tagging replaces, never doubles


@pytest.mark.parametrize("kind", FORMATS)
def test_new_folders_are_private_and_no_lock_file_stays_behind(kind, model, tmp_path):
    inbox = tmp_path / "Maildir" if kind == "maildir" else tmp_path / f"inbox.{kind}"
    junk = inbox / ".Junk" if kind == "maildir" else tmp_path / f"junk.{kind}"
    build(kind, inbox, 30)
    before = {p.name for p in tmp_path.rglob("*")}
    result = CliRunner().invoke(cli, ["filter", str(model), str(inbox), "--tag", "--move-spam-to", str(junk)])
    assert result.exit_code == 0, result.output
    left = {p.name for p in tmp_path.rglob("*")} - before
    assert not [name for name in left if name.endswith(".lock") or "journal" in name], left
    if kind != "mbox":
        assert junk.stat().st_mode & 0o777 == 0o700
    if kind == "maildir":
        assert (junk / "maildirfolder").is_file()                        # a Maildir++ subfolder
        assert all((junk / sub).stat().st_mode & 0o777 == 0o700 for sub in ("cur", "new", "tmp"))


def test_a_second_run_waits_then_stops_clearly(model, tmp_path):
    inbox = tmp_path / "inbox"
    build("maildir", inbox, 5)
    fd = os.open(inbox / ".spamkit.lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        result = CliRunner().invoke(cli, ["filter", str(model), str(inbox), "--tag", "--wait", "0.2"])
    finally:
        os.close(fd)
    assert result.exit_code == 1 and "another spamkit run is filtering" in result.output


_LOCK_LOOP = """
import sys
from pathlib import Path
from spamkit.mail.locks import mbox_locks
path = Path(sys.argv[1])
print("ready", flush=True)
while True:
    with mbox_locks(path, 60):
        pass
"""


def test_a_run_killed_while_taking_the_dot_lock_leaves_none_that_blocks(tmp_path):
    # CI found it: the dot-lock was created empty and its pid written after, so a run killed in
    # between left a lock naming no process, and every later run waited --wait out and failed.
    from spamkit.mail.locks import mbox_locks
    inbox = tmp_path / "inbox.mbox"
    inbox.write_bytes(b"From a@b Mon Jan  1 00:00:00 2024\nSubject: x\n\nbody\n")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    rng = random.Random(7)
    for _attempt in range(40):
        proc = subprocess.Popen([sys.executable, "-c", _LOCK_LOOP, str(inbox)], env=env, stdout=subprocess.PIPE)
        assert proc.stdout.readline() == b"ready\n"
        time.sleep(rng.uniform(0.0, 0.05))                  # the loop takes and drops the locks all the time
        proc.kill()
        proc.wait()
        proc.stdout.close()
        with mbox_locks(inbox, 0.5):                        # a dead process's lock never blocks
            pass
        assert sorted(p.name for p in tmp_path.iterdir()) == ["inbox.mbox"]     # nothing left behind


@pytest.mark.parametrize("failure", [(errno.ENOSPC, "No space left on device", "no space left"),
                                     (errno.EROFS, "Read-only file system", "not writable")])
@pytest.mark.parametrize("kind", FORMATS)
def test_a_failing_write_loses_nothing(kind, failure, model, tmp_path, monkeypatch):
    from spamkit import mail as mailfilter
    from spamkit import SpamFilter
    inbox, junk = tmp_path / f"inbox.{kind}", tmp_path / f"junk.{kind}"
    build(kind, inbox, 60)
    originals = {k: v[0] for k, v in by_id(stored(kind, inbox)).items()}
    calls = {"n": 0}
    real_replace = os.replace

    def failing_replace(src, dst):
        calls["n"] += 1
        if calls["n"] == 7 or kind == "mbox":
            raise OSError(failure[0], failure[1])
        return real_replace(src, dst)

    monkeypatch.setattr(mailfilter.os, "replace", failing_replace)
    f = SpamFilter.load(model)
    runner = MailFilter(f.verdict, "m@test", tag=True, move={"spam": junk})
    with pytest.raises(FilterError, match=failure[2]):
        runner.run([inbox])
    monkeypatch.setattr(mailfilter.os, "replace", real_replace)
    check_exactly_once(kind, [inbox, junk], originals)
    leftovers = [p.name for p in tmp_path.rglob("*spamkit-new*")] + [p.name for p in tmp_path.rglob("*journal*")]
    leftovers += [p.name for p in tmp_path.rglob("*.spamkit-*")]          # Maildir's and MH's temporaries
    assert leftovers == []


def _second_group_fails(kind, model, tmp_path, monkeypatch, make_it_fail, sync: str) -> None:
    """A run over 100 messages in groups of 30 whose second group fails to be made durable
    (``make_it_fail()`` arranges it): the run fails naming the I/O error, the first group's
    messages carry spamkit's fields and the others are as they were (those of the groups after
    the failed one too, the run's last, partial group among them), nothing is lost, no
    temporary is left."""
    from spamkit.mail import commit as commit_module
    from spamkit import SpamFilter
    inbox, junk = tmp_path / f"inbox.{kind}", tmp_path / f"junk.{kind}"
    build(kind, inbox, 100)
    originals = {k: v[0] for k, v in by_id(stored(kind, inbox)).items()}
    order = stored(kind, inbox) if kind == "mh" else [
        (inbox / sub / name).read_bytes() for sub in ("new", "cur") for name in sorted(os.listdir(inbox / sub))]
    monkeypatch.setattr(commit_module, "GROUP_COMMIT", 30)
    runner = MailFilter(SpamFilter.load(model).verdict, "m@test", tag=True, move={"spam": junk}, sync=sync)
    make_it_fail()
    with pytest.raises(FilterError, match="input/output error|Input/output error"):
        runner.run([inbox])
    monkeypatch.undo()
    check_exactly_once(kind, [inbox, junk], originals)
    first = {int(_TEST_ID.match(split_tags(m)[1]).group(1)) for m in order[:30]}
    for raw in stored(kind, inbox) + stored(kind, junk):
        fields, rest = split_tags(raw)
        ident = int(_TEST_ID.match(rest).group(1))
        assert bool(fields) == (ident in first), ident
    assert not [p for p in tmp_path.rglob("*") if ".spamkit-" in p.name]


@pytest.mark.parametrize("kind", ["maildir", "mh"])
def test_a_failing_fsync_of_a_groups_new_versions_renames_none_of_them(kind, model, tmp_path, monkeypatch):
    # the new versions of a group are fsynced by several threads together; one that fails
    # fails the run (its error named), no message of that group is replaced, nothing is lost
    real_fsync, calls, threads, lock = os.fsync, {"n": 0}, set(), threading.Lock()

    def fsync(fd):
        import stat
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            return real_fsync(fd)                     # a folder's fsync (after a group's renames)
        with lock:                                    # the threads count the new versions together
            threads.add(threading.current_thread().name)
            calls["n"] += 1
            failing = calls["n"] == 45                # a new version of the second group
        if failing:
            raise OSError(errno.EIO, "Input/output error")
        return real_fsync(fd)
    _second_group_fails(kind, model, tmp_path, monkeypatch, lambda: monkeypatch.setattr(os, "fsync", fsync),
                        sync="files")
    assert any(name.startswith("spamkit-fsync") for name in threads)


def _remove(path: Path) -> None:
    import shutil
    if path.is_dir():
        shutil.rmtree(path)
    elif path.exists():
        path.unlink()


def _copy(kind, src: Path, dst: Path) -> None:
    import shutil
    _remove(dst)
    if kind == "mbox":
        shutil.copy2(src, dst)
    else:
        shutil.copytree(src, dst)


def test_a_maildir_destination_a_killed_run_began_is_finished(model, tmp_path):
    # killed between making junk.maildir and its new/ and cur/ (seen under load in the SIGKILL
    # test): the next run must finish the destination, not refuse it as "no mailbox found"
    inbox, junk = tmp_path / "inbox.maildir", tmp_path / "junk.maildir"
    build("maildir", inbox, 40)
    originals = {k: v[0] for k, v in by_id(stored("maildir", inbox)).items()}
    (junk / "tmp").mkdir(parents=True)
    result = CliRunner().invoke(cli, ["filter", str(model), str(inbox), "--tag", "--move-spam-to", str(junk)])
    assert result.exit_code == 0, result.output
    assert all((junk / sub).is_dir() for sub in ("tmp", "new", "cur"))
    check_exactly_once("maildir", [inbox, junk], originals)
    # a folder holding anything else is still refused, not made into a Maildir
    other = tmp_path / "other"
    (other / "tmp").mkdir(parents=True)
    (other / "notes.txt").write_text("mine")
    result = CliRunner().invoke(cli, ["filter", str(model), str(inbox), "--move-spam-to", str(other)])
    assert result.exit_code == 1 and "no mailbox found" in result.output
    assert not (other / "new").exists()


@pytest.mark.slow
@pytest.mark.parametrize("kind", FORMATS)
def test_sigkill_at_random_points_loses_and_duplicates_nothing(kind, model, tmp_path):
    pristine, inbox, junk = tmp_path / f"pristine.{kind}", tmp_path / f"inbox.{kind}", tmp_path / f"junk.{kind}"
    build(kind, pristine, 2000)
    originals = {k: v[0] for k, v in by_id(stored(kind, pristine)).items()}
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    cmd = [sys.executable, "-m", "spamkit", "filter", str(model), str(inbox), "--tag", "--move-spam-to", str(junk),
           "--wait", "60"]
    _copy(kind, pristine, inbox)
    started = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, capture_output=True)      # one full run, to time it
    full = time.perf_counter() - started
    check_exactly_once(kind, [inbox, junk], originals)
    rng = random.Random(f"kill-{kind}")
    kills = 0
    for _attempt in range(6):
        _copy(kind, pristine, inbox)                         # every attempt starts again: half the mail moves
        _remove(junk)
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.2, full))
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            kills += 1
        proc.wait()
        if kind == "mbox":        # Maildir and MH are exactly-once at every instant; an mbox after recovery
            result = CliRunner().invoke(cli, ["filter", str(model), str(inbox), str(junk), "--recover"])
            assert result.exit_code == 0, result.output
        check_exactly_once(kind, [inbox, junk], originals)
        # and a later run completes the job on what is left
        later = subprocess.run(cmd, env=env, capture_output=True, text=True)
        assert later.returncode == 0, (later.stdout[-3000:], later.stderr[-3000:])  # failures are listed on stdout
        check_exactly_once(kind, [inbox, junk], originals)
        assert all(m.startswith(b"X-Spam-Status: Yes") for m in stored(kind, junk))
    assert kills >= 3


@pytest.mark.parametrize("fail_at", [2, 3])
def test_mbox_crash_after_the_commit_point_is_completed_by_recovery(fail_at, model, tmp_path, monkeypatch):
    # The first os.replace is the journal's (the commit point); the next ones are the renames of the
    # new junk and inbox files. Failing one of them leaves a committed run half done.
    from spamkit import mail as mailfilter
    from spamkit.mail import recover_mbox
    from spamkit import SpamFilter
    inbox, junk = tmp_path / "inbox.mbox", tmp_path / "junk.mbox"
    build("mbox", inbox, 80)
    originals = {k: v[0] for k, v in by_id(stored("mbox", inbox)).items()}
    calls = {"n": 0}
    real_replace = os.replace

    def crash(src, dst):
        calls["n"] += 1
        if calls["n"] == fail_at:
            raise OSError(errno.EIO, "Input/output error")
        return real_replace(src, dst)

    monkeypatch.setattr(mailfilter.os, "replace", crash)
    runner = MailFilter(SpamFilter.load(model).verdict, "m@test", tag=True, move={"spam": junk})
    with pytest.raises(FilterError, match="nothing is lost"):
        runner.run([inbox])
    monkeypatch.setattr(mailfilter.os, "replace", real_replace)
    assert any(p.name.endswith("spamkit-journal") for p in tmp_path.iterdir())
    # with the junk rename undone, recovery may start from junk (its file's owner note names the journal)
    assert "completed an interrupted run" in recover_mbox(junk if fail_at == 2 else inbox)
    check_exactly_once("mbox", [inbox, junk], originals)
    assert stored("mbox", junk) and all(m.startswith(b"X-Spam-Status: Yes") for m in stored("mbox", junk))
    assert not [p for p in tmp_path.iterdir() if "spamkit-new" in p.name or "journal" in p.name]


@pytest.mark.parametrize("kind", FORMATS)
def test_malformed_and_huge_messages_are_filtered_not_dropped(kind, model, tmp_path):
    odd = [
        b"X-Test-Id: 0\n" + bytes(range(256)) * 64,                                   # binary garbage
        b"X-Test-Id: 1\nContent-Type: multipart/mixed; boundary=\"zz\"\n\n--zz\nContent-Type: text/plain;"
        b" charset=klingon\n\n\xff\xfe broken\n--zz",                                  # no closing boundary
        b"X-Test-Id: 2\nSubject: =?unknown?B?////?=\nContent-Transfer-Encoding: base64\n\n!!!not base64!!!",
        b"X-Test-Id: 3\nSubject: huge\n\n" + (b"lorem ipsum dolor sit amet " * 40 + b"\n") * 48_000,  # ~52 MB
        b"X-Test-Id: 4\n",                                                             # headers only
        b"X-Test-Id: 5\n\n\n\n",
    ]
    inbox, junk = tmp_path / f"inbox.{kind}", tmp_path / f"junk.{kind}"
    box = {"mbox": mailbox.mbox, "maildir": mailbox.Maildir, "mh": mailbox.MH}[kind](inbox, create=True)
    for m in odd:
        box.add(m)
    box.flush()
    originals = {k: v[0] for k, v in by_id(stored(kind, inbox)).items()}
    assert len(originals) == len(odd) and len(originals[3]) > 50_000_000
    if kind != "mbox":
        # a message file over --max-size (16 MiB) is not read: left where it is, untouched, and listed
        result = CliRunner().invoke(cli, ["filter", str(model), str(inbox), "--tag", "--move-spam-to", str(junk),
                                          "--json"])
        assert result.exit_code == 1, result.output
        failed = json.loads(result.output[result.output.index("{"):])["failed"]
        assert len(failed) == 1 and "over the limit of 16777216: left where it is" in failed[0]["error"], failed
        check_exactly_once(kind, [inbox, junk], originals)
        tagged = [m for b in (inbox, junk) for m in stored(kind, b) if m.startswith(b"X-Spam-Status: ")]
        assert len(tagged) == len(odd) - 1
        assert [m for m in stored(kind, inbox) if not m.startswith(b"X-Spam-Status: ")] == [originals[3]]
    result = CliRunner().invoke(cli, ["filter", str(model), str(inbox), "--tag", "--move-spam-to", str(junk),
                                      "--max-size", "64M"])
    assert result.exit_code == 0, result.output
    check_exactly_once(kind, [inbox, junk], originals)
    assert all(m.startswith(b"X-Spam-Status: ") for b in (inbox, junk) for m in stored(kind, b))


@pytest.mark.parametrize("kind", ["mbox", "mh"])
def test_a_mail_client_lock_is_respected(kind, model, tmp_path):
    inbox = tmp_path / f"inbox.{kind}"
    build(kind, inbox, 3)
    box = {"mbox": mailbox.mbox, "mh": mailbox.MH}[kind](inbox)
    box.lock()                                       # what mail clients do (dot-lock and fcntl)
    try:
        before = stored(kind, inbox)
        result = CliRunner().invoke(cli, ["filter", str(model), str(inbox), "--tag", "--wait", "0.2"])
        assert result.exit_code == 1 and "locked by another program" in result.output
        assert stored(kind, inbox) == before
    finally:
        box.unlock()
    assert CliRunner().invoke(cli, ["filter", str(model), str(inbox), "--tag"]).exit_code == 0


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["maildir", "mbox"])
def test_ctrl_c_stops_cleanly_between_messages(kind, model, tmp_path):
    inbox, junk = tmp_path / f"inbox.{kind}", tmp_path / f"junk.{kind}"
    build(kind, inbox, 4000)
    originals = {k: v[0] for k, v in by_id(stored(kind, inbox)).items()}
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    proc = subprocess.Popen([sys.executable, "-m", "spamkit", "filter", str(model), str(inbox), "--tag",
                             "--move-spam-to", str(junk), "--json"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not junk.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)                              # the run creates the destination, then filters
    time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    if proc.returncode == 0:
        pytest.skip("the run finished before the interrupt arrived")
    assert proc.returncode == 130, err.decode()
    summary = json.loads(out)
    assert summary["interrupted"] and 0 < summary["messages"] < 4000
    check_exactly_once(kind, [inbox, junk], originals)          # nothing lost, nothing half-done
    assert not [p for p in tmp_path.rglob("*") if "spamkit-new" in p.name or "journal" in p.name]


@pytest.mark.parametrize("kind", FORMATS)
def test_a_stop_after_the_last_message_interrupts_nothing(kind, tmp_path):
    """Ctrl-C while the last message is judged (or while the summary is written) leaves nothing
    unfiltered: the run is complete, not interrupted; one message earlier, it is interrupted."""
    for stop_at, interrupted in ((9, False), (8, True)):
        inbox = tmp_path / str(stop_at) / f"inbox.{kind}"
        inbox.parent.mkdir()
        build(kind, inbox, 10)
        seen = []

        def classify(raw, seen=seen, stop_at=stop_at):
            seen.append(raw)
            if len(seen) == stop_at + 1:
                run.stop_requested = True        # noqa: B023 -- the run of this iteration, made below
            return "ham", 0.1

        run = MailFilter(classify, "m@1", tag=True)
        summary = run.run([inbox])
        assert summary.interrupted is interrupted
        assert summary.messages == stop_at + 1


@pytest.mark.parametrize("kind", ["maildir", "mh"])
def test_copies_left_by_a_killed_run_are_cleaned(kind, model, tmp_path):
    inbox = tmp_path / f"inbox.{kind}"
    build(kind, inbox, 3)
    dead = 2 ** 22 + 12345                          # a pid no process has
    while True:
        try:
            os.kill(dead, 0)
            dead += 1
        except ProcessLookupError:
            break
    stale = inbox / "tmp" / f"123.host.spamkit-{dead}" if kind == "maildir" else inbox / f".spamkit-tmp-{dead}-2"
    stale.write_bytes(b"half a tagged copy")
    # and a killed run's second name of a message it was replacing (GroupCommit.set_aside): a
    # hard link, so removing it leaves the message itself where it is
    message = next(p for p in sorted(inbox.rglob("*")) if p.is_file() and not p.name.startswith(".")
                   and p.parent.name != "tmp" and "spamkit" not in p.name)
    aside = (inbox / "tmp" / f".spamkit-aside-{dead}" / message.name.split(":")[0] if kind == "maildir"
             else inbox / f".spamkit-aside-{dead}-{message.name}")
    aside.parent.mkdir(exist_ok=True)
    os.link(message, aside)
    before = {k: v[0] for k, v in by_id(stored(kind, inbox)).items()}
    assert CliRunner().invoke(cli, ["filter", str(model), str(inbox), "--tag"]).exit_code == 0
    assert not stale.exists() and not aside.exists() and aside.parent.exists() == (kind == "mh")
    check_exactly_once(kind, [inbox], before)


@pytest.mark.parametrize("kind", ["maildir", "mh"])
def test_a_copy_left_under_this_runs_own_pid_is_cleaned(kind, model, tmp_path):
    # pids come round again (Linux's pid_max is often 32768): a killed process with this run's
    # pid left a tagged copy of a message. Clean-up skipped the names of living pids, its own
    # among them, and the run's own copy of that message (created exclusively) then failed the run.
    inbox = tmp_path / f"inbox.{kind}"
    build(kind, inbox, 3)
    message = next(p for p in sorted(inbox.rglob("*")) if p.is_file() and not p.name.startswith(".")
                   and p.parent.name != "tmp")
    stale = (inbox / "tmp" / f"{message.name.split(':')[0]}.spamkit-{os.getpid()}" if kind == "maildir"
             else inbox / f".spamkit-tmp-{os.getpid()}-{message.name}")
    stale.parent.mkdir(exist_ok=True)
    stale.write_bytes(b"half a tagged copy")
    before = {k: v[0] for k, v in by_id(stored(kind, inbox)).items()}
    result = CliRunner().invoke(cli, ["filter", str(model), str(inbox), "--tag", "--jobs", "1"])
    assert result.exit_code == 0, result.output
    assert not stale.exists()
    check_exactly_once(kind, [inbox], before)
    assert all(m.startswith(b"X-Spam-") for m in stored(kind, inbox))


# ------------------------------------------------------------------ one bad message never stops a run

POISON = b"X-Test-Id: 999\nSubject: poison\n\nthis one breaks the classifier\n"


@pytest.mark.parametrize("kind", FORMATS)
def test_a_message_the_classifier_fails_on_is_counted_left_alone_and_the_run_goes_on(kind, model, tmp_path):
    from spamkit import SpamFilter
    spam_filter = SpamFilter.load(model)

    def classify(raw):
        if b"this one breaks the classifier" in raw:
            raise RecursionError("maximum recursion depth exceeded")
        return spam_filter.verdict(raw)

    inbox, junk = tmp_path / f"inbox.{kind}", tmp_path / f"junk.{kind}"
    build(kind, inbox, 30)
    box = {"mbox": mailbox.mbox, "maildir": mailbox.Maildir, "mh": mailbox.MH}[kind](inbox)
    box.add(POISON)                                   # after some messages, before others (Maildir: new/)
    box.flush()
    build_more = {"mbox": mailbox.mbox, "maildir": mailbox.Maildir, "mh": mailbox.MH}[kind](inbox)
    for i in range(30, 40):
        build_more.add(b"X-Test-Id: %d\n" % i + sample_messages()[i])
    build_more.flush()
    originals = {k: v[0] for k, v in by_id(stored(kind, inbox)).items()}
    for attempt in range(2):                          # a rerun finishes the mailbox, and fails the same way
        runner = MailFilter(classify, "m@1", tag=True, move={"spam": junk})
        summary = runner.run([inbox]).as_dict()
        assert [f["error"] for f in summary["failed"]] == ["RecursionError: maximum recursion depth exceeded"]
        if attempt == 0:
            assert summary["messages"] == 40 and summary["already_tagged"] == 0
        else:                                         # what is left in the inbox was tagged the first time
            assert summary["messages"] == summary["already_tagged"] == len(stored(kind, inbox)) - 1
        check_exactly_once(kind, [inbox, junk], originals)
        poison = [m for m in stored(kind, inbox) if b"poison" in m]
        assert poison == [POISON]                     # untouched: not tagged, not moved
    if kind == "mbox":
        # no temporary files left (the lock files stay: they are locked with flock, not by existing)
        left = sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(".spamkit.lock"))
        assert left == sorted([inbox.name, junk.name])


def test_the_command_line_names_the_message_it_could_not_read(model, tmp_path):
    inbox = tmp_path / "inbox"
    build("maildir", inbox, 5)
    (inbox / "cur" / "1234.unreadable:2,S").mkdir()  # a directory where a message should be
    result = CliRunner().invoke(cli, ["filter", str(model), str(inbox), "--tag"])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "5 messages" in result.output and "1234.unreadable" in result.output
    assert "could not be filtered" in result.output
    as_json = CliRunner().invoke(cli, ["filter", str(model), str(inbox), "--tag", "--json"])
    assert as_json.exit_code == 1 and json.loads(as_json.stdout)["failed"][0]["message"].endswith("1234.unreadable:2,S")


@pytest.mark.parametrize("kind,mode", [("mbox", 0o444), ("mbox", 0o600), ("maildir", 0o600), ("mh", 0o640)])
def test_rewritten_mailboxes_and_messages_keep_their_mode(kind, mode, model, tmp_path):
    inbox = tmp_path / f"inbox.{kind}"
    build(kind, inbox, 6)
    files = [inbox] if kind == "mbox" else [p for p in inbox.rglob("*") if p.is_file() and p.name[0] != "."]
    for f in files:
        f.chmod(mode)
    result = CliRunner().invoke(cli, ["filter", str(model), str(inbox), "--tag"])
    assert result.exit_code == 0, result.output
    files = [inbox] if kind == "mbox" else [p for p in inbox.rglob("*") if p.is_file() and p.name[0] != "."]
    assert all(m.startswith(b"X-Spam-Status: ") for m in stored(kind, inbox))
    assert {oct(f.stat().st_mode & 0o777) for f in files} == {oct(mode)}


# ------------------------------------------------------------------ worker processes (--jobs)

@pytest.mark.parametrize("kind", FORMATS)
def test_workers_give_the_same_run_as_one_process(kind, model, tmp_path):
    # --jobs 2 classifies ahead in worker processes; mailboxes and summary equal --jobs 1's
    results, contents = {}, {}
    for jobs in ("1", "2"):
        inbox, junk = tmp_path / jobs / f"inbox.{kind}", tmp_path / jobs / f"junk.{kind}"
        inbox.parent.mkdir()
        build(kind, inbox, 150)
        out = CliRunner().invoke(cli, ["filter", str(model), str(inbox), "--tag", "--move-spam-to", str(junk),
                                       "--json", "--jobs", jobs])
        assert out.exit_code == 0, out.output
        summary = json.loads(out.output)
        for key in ("seconds", "messages_per_second", "mailboxes", "moved"):
            summary.pop(key)
        results[jobs] = summary
        contents[jobs] = [sorted(stored(kind, inbox)), sorted(stored(kind, junk))]
    assert results["1"] == results["2"] and results["1"]["messages"] == 150
    assert contents["1"] == contents["2"]


def test_a_workers_verdict_counts_only_for_the_bytes_it_judged():
    from spamkit.mail.ahead import fingerprint
    calls = []
    run = MailFilter(lambda raw: calls.append(raw) or ("ham", 0.1), "m@1")
    raw = b"Subject: x\n\nbody\n"
    assert run._judge(raw, "ref", (fingerprint(raw), "ok", "spam", 0.9)) == ("spam", 0.9, True) and not calls
    changed = (fingerprint(raw + b"more"), "ok", "spam", 0.9)            # the file changed after the worker read it
    assert run._judge(raw, "ref", changed) == ("ham", 0.1, True) and calls == [raw]
    assert run._judge(raw, "ref", (fingerprint(raw), "error", "ValueError: bad", None)) is None
    assert run.summary.failed == [{"message": "ref", "error": "ValueError: bad"}]


def _scores_of(raws):
    """``score`` for the workers: P(spam) 0.99 for messages whose X-Test-Id starts with 1; a
    message with X-Test-Id 13 cannot be scored (alone or in a batch)."""
    if any(b"X-Test-Id: 13\n" in raw for raw in raws):
        raise ValueError("message 13 cannot be scored")
    rows = [[0.01, 0.99] if b"X-Test-Id: 1" in raw else [0.99, 0.01] for raw in raws]
    return rows, [0.5 + len(raw) % 7 / 100 for raw in raws]


_CLASSIFIED_HERE: list = []


def _classify_here(raw):
    """``classify`` for a run whose workers score: records that the run classified a message
    itself (module-level, so that forkserver workers can be sent it)."""
    _CLASSIFIED_HERE.append(raw)
    row = _scores_of([raw])[0][0]
    return ("spam" if row[1] > 0.5 else "ham"), row[1]


@pytest.mark.parametrize("kind", ["maildir", "mbox"])
def test_workers_score_in_batches_and_the_run_decides_in_mailbox_order(kind, tmp_path):
    """Workers return scores; the run turns them into verdicts itself, in mailbox order (so a
    stateful decision, like the familiarity guard's window, sees the stream as one process
    does); a batch with a message that cannot be scored is scored message by message, and only
    that message fails."""
    inbox, junk = tmp_path / f"inbox.{kind}", tmp_path / f"junk.{kind}"
    build(kind, inbox, 120)
    order = [int(_TEST_ID.match(m).group(1)) for m in stored(kind, inbox)]
    decided = []

    def decide(row, familiarity):
        decided.append((row, familiarity))
        return ("spam" if row[1] > 0.5 else "ham"), row[1]

    _CLASSIFIED_HERE.clear()
    run = MailFilter(_classify_here, "m@1", tag=True, move={"spam": junk}, jobs=2, score=_scores_of, decide=decide)
    summary = run.run([inbox])
    assert summary.messages == 119 and len(summary.failed) == 1
    assert "message 13 cannot be scored" in summary.failed[0]["error"]
    assert len(decided) == 119 and not _CLASSIFIED_HERE   # scored in the workers, decided here
    expected = [str(ident).startswith("1") for ident in order if ident != 13]
    assert [row[1] > 0.5 for row, _ in decided] == expected          # in mailbox order
    assert summary.counts["spam"] == len(stored(kind, junk)) == sum(expected)
    with pytest.raises(Exception, match="go together"):
        MailFilter(_classify_here, "m@1", score=_scores_of)


def _decide_guarded_here(row, familiarity):
    """``decide`` whose answer in the run's process differs from a worker's for some messages
    (as the familiarity guard's window may): spam with an odd familiarity is "unsure" here only."""
    verdict = "spam" if row[1] > 0.5 else "ham"
    if verdict == "spam" and multiprocessing.parent_process() is None and round(familiarity * 100) % 2:
        verdict = "unsure"
    return verdict, row[1]


def _classify_guarded(raw):
    """``classify`` of one process for :func:`_scores_of` and :func:`_decide_guarded_here`."""
    rows, familiarity = _scores_of([raw])
    return _decide_guarded_here(rows[0], familiarity[0])


def _hidden_files(kind, inbox) -> list:
    """What a run may leave besides messages: Maildir's tmp/ entries, MH's dot-files (not the sequences)."""
    if kind == "maildir":
        return sorted(os.listdir(inbox / "tmp")) if (inbox / "tmp").is_dir() else []
    return sorted(n for n in os.listdir(inbox) if n.startswith(".") and n != ".mh_sequences")


@pytest.mark.parametrize("kind", ["maildir", "mh"])
def test_workers_write_the_tagged_versions_and_the_run_keeps_only_those_it_agrees_with(kind, tmp_path,
                                                                                     monkeypatch):
    """In a tagging run over a Maildir or MH folder the workers write each message's tagged
    version too, for the verdict they expect; the run renames it in place only when its own
    verdict in mailbox order is the same (here it is not for part of the spam), and writes
    the others itself. The mailboxes end as one process leaves them and nothing is left over."""
    from spamkit.mail.mailboxes import FOLDER_FORMATS
    box_class = FOLDER_FORMATS[kind]
    written_here = []
    original_write_new = box_class.write_new

    def write_new(self, file, new):
        written_here.append((os.getpid(), file))
        return original_write_new(self, file, new)

    monkeypatch.setattr(box_class, "write_new", write_new)
    results = {}
    for jobs in (1, 2):
        inbox, junk = tmp_path / str(jobs) / "inbox", tmp_path / str(jobs) / "junk"
        inbox.parent.mkdir()
        build(kind, inbox, 150)
        originals = {k: v[0] for k, v in by_id(stored(kind, inbox)).items()}
        written_here.clear()
        run = MailFilter(_classify_guarded, "m@1", tag=True, move={"spam": junk}, jobs=jobs, score=_scores_of,
                         decide=_decide_guarded_here)
        summary = run.run([inbox])
        check_exactly_once(kind, [inbox, junk], originals)
        assert not _hidden_files(kind, inbox) and [f["error"] for f in summary.failed] == [
            "ValueError: message 13 cannot be scored"]
        mine = [f for pid, f in written_here if pid == os.getpid()]
        results[jobs] = (summary.counts, sorted(stored(kind, inbox)), sorted(stored(kind, junk)), len(mine))
    counts, inbox_1, junk_1, by_the_run_1 = results[1]
    assert results[2][:3] == (counts, inbox_1, junk_1)
    assert by_the_run_1 == 149 and counts["unsure"] > 0 and counts["spam"] > 0
    assert results[2][3] == counts["unsure"]             # the run wrote only what it decided otherwise


@pytest.mark.parametrize("kind", ["maildir", "mh"])
def test_a_run_stopped_midway_leaves_no_version_a_worker_wrote(kind, tmp_path):
    """The workers write ahead of the run; a run that stops (Ctrl-C, SIGTERM) after some messages
    removes the versions written for the messages it did not reach, and those untouched stay as
    they were."""
    inbox, junk = tmp_path / "inbox", tmp_path / "junk"
    build(kind, inbox, 300)
    originals = {k: v[0] for k, v in by_id(stored(kind, inbox)).items()}
    raw_before = sorted(stored(kind, inbox))
    seen = []

    def on_message(ref, verdict, p, tagged, moved_to):
        seen.append(ref)
        if len(seen) == 40:
            run.stop_requested = True

    run = MailFilter(_classify_guarded, "m@1", tag=True, move={"spam": junk}, jobs=2, score=_scores_of,
                     decide=_decide_guarded_here, on_message=on_message)
    summary = run.run([inbox])
    assert summary.interrupted and 40 <= summary.messages < 300
    check_exactly_once(kind, [inbox, junk], originals)
    assert not _hidden_files(kind, inbox)
    untouched = [m for m in stored(kind, inbox) if not m.startswith(b"X-Spam-Status")]
    assert len(untouched) == 300 - summary.messages and set(untouched) <= set(raw_before)


def _dies_in_a_worker(raw):
    if multiprocessing.parent_process() is not None and b"X-Test-Id: 7\n" in raw:
        os._exit(9)                                   # a worker killed mid-run (out of memory, say)
    return ("spam", 0.99) if b"X-Test-Id: 1" in raw else ("ham", 0.01)


@pytest.mark.parametrize("kind", ["maildir", "mbox"])
def test_a_dead_worker_leaves_the_run_to_judge_the_rest(kind, tmp_path):
    inbox, junk = tmp_path / f"inbox.{kind}", tmp_path / f"junk.{kind}"
    build(kind, inbox, 200)
    originals = {k: v[0] for k, v in by_id(stored(kind, inbox)).items()}
    run = MailFilter(_dies_in_a_worker, "m@1", tag=True, move={"spam": junk}, jobs=2)
    summary = run.run([inbox])
    assert summary.messages == 200 and not summary.failed
    check_exactly_once(kind, [inbox, junk], originals)
    expected_spam = sum(1 for i in originals if str(i).startswith("1"))
    assert summary.counts["spam"] == expected_spam == len(stored(kind, junk))


@pytest.mark.parametrize("kind", ["maildir", "mh"])
def test_folders_are_fsynced_per_group_and_before_the_messages_are_reported(kind, tmp_path, monkeypatch):
    # a rename is reported only after the folders it touched were fsynced, but those fsyncs
    # come once per group of GROUP_COMMIT messages, not two or three per message
    from spamkit.mail import commit as commit_module
    inbox, junk = tmp_path / f"inbox.{kind}", tmp_path / f"junk.{kind}"
    build(kind, inbox, 150)
    originals = {k: v[0] for k, v in by_id(stored(kind, inbox)).items()}
    events = []
    monkeypatch.setattr(commit_module, "GROUP_COMMIT", 40)
    monkeypatch.setattr(commit_module, "fsync_dir", lambda folder: events.append(("fsync", Path(folder))))

    def reported(ref, verdict, p, tagged, moved_to):
        events.append(("report", Path(ref), moved_to))

    run = MailFilter(_dies_in_a_worker, "m@1", tag=True, move={"spam": junk}, on_message=reported, sync="files")
    summary = run.run([inbox])
    assert summary.messages == 150 and not summary.failed
    check_exactly_once(kind, [inbox, junk], originals)
    fsyncs = [e for e in events if e[0] == "fsync"]
    assert 0 < len(fsyncs) <= 4 * 3                                 # 4 groups, at most 3 folders each
    synced, last = set(), None                  # the folders of the fsyncs just before a group's reports
    for event in events:                        # every report follows the fsync of its folders
        if event[0] == "fsync":
            synced = synced | {event[1]} if last == "fsync" else {event[1]}
        else:
            _, file, moved_to = event
            assert file.parent in synced
            if moved_to is not None:
                assert (Path(moved_to) / file.parent.name if kind == "maildir" else Path(moved_to)) in synced
        last = event[0]
    assert events[0][0] == "fsync" and events[-1][0] == "report"


@pytest.mark.parametrize("kind", ["maildir", "mh"])
def test_a_groups_new_versions_are_fsynced_before_they_replace_a_message(kind, tmp_path, monkeypatch):
    # the new versions of a group are written, then fsynced together, then renamed: never a
    # rename of a file that was not fsynced (after a power failure it could be empty)
    inbox, junk = tmp_path / f"inbox.{kind}", tmp_path / f"junk.{kind}"
    build(kind, inbox, 150)
    originals = {k: v[0] for k, v in by_id(stored(kind, inbox)).items()}
    synced, renamed = set(), []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        synced.add(os.readlink(f"/proc/self/fd/{fd}"))
        return real_fsync(fd)

    def replace(src, dst):
        assert str(src) in synced, f"{src} renamed over {dst} before it was fsynced"
        renamed.append(src)
        return real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    summary = MailFilter(_dies_in_a_worker, "m@1", tag=True, move={"spam": junk}, sync="files").run([inbox])
    monkeypatch.undo()
    assert summary.messages == summary.tagged == len(renamed) == 150 and not summary.failed
    check_exactly_once(kind, [inbox, junk], originals)
    assert not [p for p in tmp_path.rglob("*") if ".spamkit-" in p.name]      # no temporary left


def _recording_syncfs(monkeypatch, on_sync):
    """Replace the run's syncfs by one that calls ``on_sync(path of the descriptor)`` and then
    the real one (this kernel's, or a no-op where it has none), so that a test sees the order."""
    from spamkit.common.durable import filesystem_sync
    from spamkit.mail import commit as commit_module
    real = filesystem_sync() or (lambda fd: None)

    def make(path=None):
        def sync(fd):
            on_sync(os.readlink(f"/proc/self/fd/{fd}"))
            real(fd)
        return sync
    monkeypatch.setattr(commit_module, "filesystem_sync", make)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/fd and syncfs are Linux's")
@pytest.mark.parametrize("kind", ["maildir", "mh"])
def test_a_group_takes_two_syncfs_new_versions_before_renames_and_renames_before_reports(kind, tmp_path,
                                                                                      monkeypatch):
    # sync="filesystem" (the default): one syncfs makes a group's new versions durable before
    # any of them replaces a message, a second one its renames before any is reported; no
    # fsync at all
    from spamkit.mail import commit as commit_module
    inbox, junk = tmp_path / f"inbox.{kind}", tmp_path / f"junk.{kind}"
    build(kind, inbox, 150)
    originals = {k: v[0] for k, v in by_id(stored(kind, inbox)).items()}
    monkeypatch.setattr(commit_module, "GROUP_COMMIT", 40)
    events, written, durable, renamed = [], set(), set(), []
    real_replace, real_rename, real_open = os.replace, os.rename, os.open

    def on_sync(path):
        events.append(("sync", path))
        # what is written so far (the temporaries) and what is renamed so far is now durable
        durable.update(written)
        durable.update(("renamed", dst) for dst in renamed)

    def tracking_open(path, flags, *args, **kwargs):
        if flags & os.O_CREAT:
            written.add(str(path))
        return real_open(path, flags, *args, **kwargs)

    def replace(src, dst):
        assert str(src) in durable, f"{src} renamed over {dst} before a syncfs"
        renamed.append(str(dst))
        return real_replace(src, dst)

    moves = {}

    def rename(src, dst):
        renamed.append(str(dst))
        moves[str(src)] = str(dst)
        return real_rename(src, dst)

    def reported(ref, verdict, p, tagged, moved_to):
        events.append(("report", ref, moved_to))
        assert ("renamed", str(ref)) in durable, f"{ref} reported before its rename was synced"
        if moved_to is not None:
            assert ("renamed", moves[str(ref)]) in durable, f"{ref} reported before its move was synced"

    real_unlink, real_link, unlinked, linked, early = os.unlink, os.link, [], {}, []

    def unlink(path, *args, **kwargs):
        unlinked.append(str(path))
        # a replaced message's set-aside name goes only once its replacement is durable (noted
        # here, asserted below: this runs on the reclaiming threads)
        if ".spamkit-aside-" in str(path) and ("renamed", linked.get(str(path))) not in durable:
            early.append(str(path))
        return real_unlink(path, *args, **kwargs)

    def link(src, dst, *args, **kwargs):
        assert ("renamed", str(src)) not in durable and str(src) not in renamed, f"{src} set aside after its rename"
        linked[str(dst)] = str(src)
        return real_link(src, dst, *args, **kwargs)

    _recording_syncfs(monkeypatch, on_sync)
    monkeypatch.setattr(os, "open", tracking_open)
    monkeypatch.setattr(os, "replace", replace)
    monkeypatch.setattr(os, "rename", rename)
    monkeypatch.setattr(os, "unlink", unlink)
    monkeypatch.setattr(os, "link", link)
    monkeypatch.setattr(os, "fsync", lambda fd: pytest.fail("an fsync in sync='filesystem' mode"))
    summary = MailFilter(_dies_in_a_worker, "m@1", tag=True, move={"spam": junk}, on_message=reported).run([inbox])
    monkeypatch.undo()
    assert summary.messages == summary.tagged == 150 and not summary.failed
    # a temporary that was renamed into place is not unlinked again (150 failing unlinks before)
    # (MH's dot-lock on .mh_sequences makes and removes a temporary of its own)
    assert not [p for p in unlinked if p in written and ".lock" not in p]
    # every message was set aside before its new version replaced it, and that name removed
    asides = {dst for dst in linked if ".spamkit-aside-" in dst}      # (MH's dot-lock links a file too)
    assert len(asides) == 150 and asides <= set(unlinked) and not early
    check_exactly_once(kind, [inbox, junk], originals)
    syncs = [e for e in events if e[0] == "sync"]
    assert len(syncs) == 2 * 4                                      # 4 groups (40, 40, 40, 30), two each
    assert events[0][0] == "sync" and events[-1][0] == "report"
    assert not [p for p in tmp_path.rglob("*") if ".spamkit-" in p.name]


@pytest.mark.parametrize("kind", ["maildir", "mh"])
def test_without_hard_links_a_new_version_simply_replaces_the_message(kind, tmp_path, monkeypatch):
    # a file system that refuses link(2) (EPERM: FAT, some FUSE and network file systems): the
    # run tags every message the plain way, a rename over it, and leaves nothing behind
    inbox, junk = tmp_path / f"inbox.{kind}", tmp_path / f"junk.{kind}"
    build(kind, inbox, 100)
    originals = {k: v[0] for k, v in by_id(stored(kind, inbox)).items()}
    calls = []

    def no_link(src, dst, *args, **kwargs):
        calls.append(dst)
        raise PermissionError(errno.EPERM, "Operation not permitted", str(dst))
    monkeypatch.setattr(os, "link", no_link)
    summary = MailFilter(_dies_in_a_worker, "m@1", tag=True, move={"spam": junk}).run([inbox])
    monkeypatch.undo()
    assert summary.messages == summary.tagged == 100 and not summary.failed
    # tried once, then not again this run (MH's dot-lock tries links of its own, and copes too)
    assert len([c for c in calls if ".spamkit-aside-" in str(c)]) == 1
    check_exactly_once(kind, [inbox, junk], originals)
    assert not [p for p in tmp_path.rglob("*") if ".spamkit-" in p.name]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/fd and syncfs are Linux's")
@pytest.mark.parametrize("kind", ["maildir", "mh"])
def test_a_failing_syncfs_of_a_groups_new_versions_renames_none_of_them(kind, model, tmp_path, monkeypatch):
    # the second group's syncfs fails (a write-back error): the run fails naming it, no message
    # of that group or of a later one is replaced, the first group's are, nothing is lost
    file_syncs = []

    def on_sync(path):
        if not os.path.isdir(path):                   # a group's new versions (not its renames)
            file_syncs.append(path)
            if len(file_syncs) == 2:
                raise OSError(errno.EIO, "Input/output error")
    _second_group_fails(kind, model, tmp_path, monkeypatch, lambda: _recording_syncfs(monkeypatch, on_sync),
                        sync="filesystem")
    assert len(file_syncs) == 2


def test_filesystem_sync_is_this_kernels_syncfs_from_linux_5_8(tmp_path):
    from spamkit.common.durable import filesystem_sync
    sync = filesystem_sync()
    release = tuple(int(x) for x in os.uname().release.split(".")[:2]) if sys.platform.startswith("linux") else None
    if release is None or release < (5, 8):
        assert sync is None                            # the caller then fsyncs each file and folder
        return
    assert sync is not None
    fd = os.open(tmp_path, os.O_RDONLY)
    try:
        sync(fd)                                       # succeeds on a healthy file system
    finally:
        os.close(fd)
    with pytest.raises(OSError) as error:
        sync(fd)                                       # a closed descriptor: the kernel's EBADF, raised
    assert error.value.errno == errno.EBADF


def test_syncfs_only_on_the_file_systems_known_to_commit_with_it(tmp_path, monkeypatch):
    from spamkit.common import durable
    st = os.stat(tmp_path)
    device = f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    for fs_type, expected in (("ext4", True), ("xfs", True), ("nfs4", False), ("fuse.sshfs", False),
                              ("overlay", False)):
        info = tmp_path / f"mountinfo-{fs_type}"
        info.write_text("22 27 0:21 / /proc rw,relatime - proc proc rw\n"
                        f"27 1 {device} / / rw,relatime shared:1 - {fs_type} /dev/x rw\n")
        assert durable.filesystem_type(tmp_path, str(info)) == fs_type
        monkeypatch.setattr(durable, "filesystem_type", lambda path, t=fs_type: t)
        release = tuple(int(x) for x in os.uname().release.split(".")[:2])
        if sys.platform.startswith("linux") and release >= (5, 8):
            assert (durable.filesystem_sync(tmp_path) is not None) == expected, fs_type
        else:
            assert durable.filesystem_sync(tmp_path) is None
        monkeypatch.undo()
    # a device the table does not list, or no table: not told, so no syncfs
    info = tmp_path / "mountinfo-other"
    info.write_text("27 1 999:999 / / rw - ext4 /dev/x rw\n")
    assert durable.filesystem_type(tmp_path, str(info)) is None
    assert durable.filesystem_type(tmp_path, str(tmp_path / "missing")) is None


def test_sync_mode_is_checked():
    with pytest.raises(ConfigError, match="sync must be one of filesystem, files"):
        MailFilter(_dies_in_a_worker, "m@1", tag=True, sync="never")


@pytest.mark.parametrize("kind", ["maildir", "mh"])
def test_a_message_a_mail_client_moves_while_its_group_is_pending_stays_where_the_client_put_it(kind, tmp_path):
    inbox, junk, client = tmp_path / f"inbox.{kind}", tmp_path / f"junk.{kind}", tmp_path / "client"
    client.mkdir()
    build(kind, inbox, 30)
    originals = {k: v[0] for k, v in by_id(stored(kind, inbox)).items()}
    order = [p for sub in (("new", "cur") if kind == "maildir" else ("",)) for p in
             sorted((inbox / sub).iterdir(), key=lambda p: (len(p.name), p.name)) if p.name[0].isalnum()]
    judged = []

    def classify(raw):
        judged.append(raw)
        if len(judged) == 11:                         # the 10th message is judged and pending: a client takes it
            os.rename(order[9], client / order[9].name)
        return ("spam", 0.99) if b"X-Test-Id: 1" in raw else ("ham", 0.01)

    summary = MailFilter(classify, "m@1", tag=True, move={"spam": junk}).run([inbox])
    taken = (client / order[9].name).read_bytes()
    assert not split_tags(taken)[0]                   # the client has the message as it was, untagged
    assert summary.messages == 29 and not summary.failed
    (taken_id, (as_taken,)), = by_id([taken]).items()
    assert as_taken == originals[taken_id]
    check_exactly_once(kind, [inbox, junk], {k: v for k, v in originals.items() if k != taken_id})
    assert not [p for p in tmp_path.rglob("*") if ".spamkit-" in p.name]
