"""Files a root process must not trust: links, FIFOs and huge files inside a mailbox.

The red team's findings (issue "Tried as an attacker..."), each through the real command line
in a child process (CI runs as root, as a site's filter may): a symbolic link at the lock
file's name made a root run create a file at its target; a message that was a link to a file
outside the Maildir had that file's contents copied in as a tagged message; a FIFO in new/
blocked the run forever while it held its locks; a 2 GB sparse message took 4.2 GB of memory
and was rewritten as 2 GB of real disk. Now: nothing outside the mailbox is read, written or
created; links, FIFOs and files over --max-size are left where they are and listed.
"""

from __future__ import annotations

import json
import mailbox
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from spamkit.cli import cli

from conftest import SAMPLE, run_with_peak

REPO = Path(__file__).resolve().parents[1]
@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("model") / "m.spamkit"
    assert CliRunner().invoke(cli, ["train", str(SAMPLE), "-o", str(path)]).exit_code == 0
    return path


def spamkit(*args, timeout: float = 120):
    return run_with_peak(*args, timeout=timeout)


def maildir(path: Path, n: int = 3) -> Path:
    box = mailbox.Maildir(path, create=True)
    for p in sorted((SAMPLE / "spam").iterdir())[:n]:
        box.add(p.read_bytes())
    return path


def contents(path: Path) -> dict:
    """Every name under ``path`` with what it is: the bytes of a file, the target of a link."""
    out = {}
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            p = Path(root) / name
            out[str(p.relative_to(path))] = (("link", os.readlink(p)) if p.is_symlink() else
                                            ("fifo",) if p.is_fifo() else ("dir",) if p.is_dir() else
                                            ("file", p.read_bytes()))
    return out


def test_a_link_at_the_lock_files_name_is_refused_and_nothing_created(model, tmp_path):
    box = maildir(tmp_path / "inbox")
    target = tmp_path / "outside" / "created-by-root"
    target.parent.mkdir()
    (box / ".spamkit.lock").symlink_to(target)
    before = contents(box)
    out, _ = spamkit("filter", model, box, "--tag")
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    assert ".spamkit.lock: a symbolic link" in out.stdout + out.stderr
    assert not target.exists() and contents(box) == before


def test_a_message_that_is_a_link_is_not_followed(model, tmp_path):
    box = maildir(tmp_path / "inbox")
    secret = tmp_path / "outside" / "secret"
    secret.parent.mkdir()
    secret.write_bytes(b"Subject: secret\n\nroot's secret viagra words\n")
    (box / "cur" / "x:2,S").symlink_to(secret)
    out, _ = spamkit("filter", model, box, "--tag", "--json")
    assert out.returncode == 1, out.stderr
    failed = json.loads(out.stdout)["failed"]
    assert [f["message"] for f in failed] == [str(box / "cur" / "x:2,S")]
    assert "a symbolic link: not followed, left where it is" in failed[0]["error"]
    assert (box / "cur" / "x:2,S").is_symlink() and secret.read_bytes().startswith(b"Subject: secret")
    found = [f for f in (box / "cur").iterdir()] + [f for f in (box / "new").iterdir()]
    assert not any(b"root's secret" in f.read_bytes() for f in found if not f.is_symlink())
    assert sum(f.read_bytes().startswith(b"X-Spam-Status: ") for f in found if not f.is_symlink()) == 3


def test_a_fifo_in_new_does_not_block_the_run(model, tmp_path):
    box = maildir(tmp_path / "inbox")
    os.mkfifo(box / "new" / "pipe")
    out, _ = spamkit("filter", model, box, "--tag", "--json", timeout=60)   # it blocked forever
    assert out.returncode == 1, out.stderr
    failed = json.loads(out.stdout)["failed"]
    assert len(failed) == 1 and "a FIFO, not a regular file: left where it is" in failed[0]["error"]
    assert (box / "new" / "pipe").is_fifo() and not (box / ".spamkit.lock").exists()


def test_a_huge_sparse_message_is_not_read_or_rewritten(model, tmp_path):
    box = maildir(tmp_path / "inbox")
    huge = box / "new" / "huge"
    with open(huge, "wb") as f:
        f.write(b"Subject: big\n\n")
        f.truncate(2 << 30)                                 # 2 GiB, sparse: almost no disk
    out, peak_mb = spamkit("filter", model, box, "--tag", "--move-spam-to", tmp_path / "junk", "--json")
    assert out.returncode == 1, out.stderr
    failed = json.loads(out.stdout)["failed"]
    assert len(failed) == 1 and f"a message of {2 << 30} bytes, over the limit of 16777216" in failed[0]["error"]
    assert huge.stat().st_size == 2 << 30 and huge.stat().st_blocks * 512 < (1 << 20)   # still sparse, in place
    assert peak_mb < 300, peak_mb


def test_a_link_for_a_maildir_folder_is_refused(model, tmp_path):
    box = maildir(tmp_path / "inbox")
    outside = tmp_path / "outside"
    outside.mkdir()
    for f in (box / "tmp").iterdir():
        f.unlink()
    (box / "tmp").rmdir()
    (box / "tmp").symlink_to(outside)
    out, _ = spamkit("filter", model, box, "--tag")
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert "tmp: a symbolic link inside the mailbox" in out.stdout + out.stderr
    assert list(outside.iterdir()) == []


def test_a_fifo_as_an_mbox_dot_lock_does_not_block(model, tmp_path):
    inbox = tmp_path / "inbox.mbox"
    box = mailbox.mbox(inbox, create=True)
    box.add((SAMPLE / "ham" / sorted(os.listdir(SAMPLE / "ham"))[0]).read_bytes())
    box.flush()
    os.mkfifo(str(inbox) + ".lock")
    out, _ = spamkit("filter", model, inbox, "--tag", "--wait", "0.5", timeout=60)
    assert out.returncode == 1 and "locked by another program" in out.stdout + out.stderr, out.stderr
