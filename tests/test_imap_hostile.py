"""spamkit filter against an IMAP server that lies (tests/hostile_imap.py), through the command line.

The red team's findings (issue "Tried as an attacker..."): a literal announced as 3 GiB took
the run to 3.2 GB and a MemoryError traceback; 40 MB bodies behind a small RFC822.SIZE were
read; endless ``* 1 EXISTS`` never let the run end; one byte every 20 s, no progress after
200 s. Each case now ends the run with exit 1 and one clear line, within its deadline, with
bounded memory (the child's own VmHWM), and nothing on the server changed.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from spamkit.cli import cli

from conftest import SAMPLE, run_with_peak
from hostile_imap import HostileImap

REPO = Path(__file__).resolve().parents[1]
@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("model") / "m.spamkit"
    assert CliRunner().invoke(cli, ["train", str(SAMPLE), "-o", str(path)]).exit_code == 0
    return path


def run_against(model, tmp_path, mode: str, *options) -> tuple[subprocess.CompletedProcess, float, float]:
    server = HostileImap(tmp_path, mode)
    started = time.monotonic()
    try:
        out, peak_mb = run_with_peak("filter", model, server.url(), "--tag", "--ca-file", server.cert, *options,
                                     env={**os.environ, "PYTHONPATH": str(REPO), "SPAMKIT_IMAP_PASSWORD": "secret"})
    finally:
        server.stop()
    return out, time.monotonic() - started, peak_mb


def test_the_hostile_server_is_a_working_server_when_it_behaves(model, tmp_path):
    out, _, _ = run_against(model, tmp_path, "honest")
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.mark.parametrize("mode", ["huge-literal", "big-body"])
def test_a_literal_over_the_limit_is_not_read(model, tmp_path, mode):
    out, took, peak_mb = run_against(model, tmp_path, mode)
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr[-2000:]
    assert "more than the" in out.stdout + out.stderr and "not read" in out.stdout + out.stderr
    assert peak_mb < 300, peak_mb


def test_a_body_larger_than_its_size_said_is_left_where_it_is(model, tmp_path):
    out, took, peak_mb = run_against(model, tmp_path, "over-size", "--max-size", "17M")
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr[-2000:]
    assert "(its RFC822.SIZE said 4928) is over the limit" in out.stdout + out.stderr
    assert peak_mb < 300, peak_mb


def test_endless_untagged_responses_end_the_run(model, tmp_path):
    out, took, peak_mb = run_against(model, tmp_path, "exists-flood")
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr[-2000:]
    assert "untagged responses" in out.stdout + out.stderr
    assert peak_mb < 300, peak_mb


def test_a_server_answering_a_byte_at_a_time_is_cut_off_at_the_deadline(model, tmp_path):
    out, took, _ = run_against(model, tmp_path, "dribble", "--imap-timeout", "5")
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr[-2000:]
    assert "took over 5 s to answer" in out.stdout + out.stderr
    assert took < 60, took


class _NoKeywordsServer:
    """A client to a folder that keeps no keywords (PERMANENTFLAGS without ``\\*``): it records
    every command and refuses a keyword in a STORE, as such a server answers NO."""

    def __init__(self, messages: dict):
        self.folders = {"INBOX": dict(messages), "Junk": {}}
        self.selected, self.calls = None, []

    def select_folder(self, folder, readonly=False):
        self.selected = folder
        return {b"UIDVALIDITY": 1, b"PERMANENTFLAGS": (b"\\Seen", b"\\Deleted")}

    def has_capability(self, name):
        return name in ("MOVE", "UIDPLUS")

    def folder_exists(self, folder):
        return folder in self.folders

    def create_folder(self, folder):
        self.folders[folder] = {}

    def search(self, criteria):
        self.calls.append(("search", list(criteria)))
        return sorted(self.folders[self.selected])

    def fetch(self, uids, items):
        box = self.folders[self.selected]
        return {u: {b"RFC822.SIZE": len(box[u]), b"BODY[]": box[u]} for u in uids if u in box}

    def add_flags(self, uids, flags, silent=False):
        self.calls.append(("store", list(flags)))
        assert all(f.startswith("\\") or f.startswith(b"\\") for f in flags), f"a keyword stored: {flags}"

    remove_flags = add_flags

    def move(self, uids, dest):
        self.calls.append(("move", list(uids), dest))
        for u in uids:
            self.folders[dest][u] = self.folders[self.selected].pop(u)


def test_a_folder_without_keywords_is_moved_without_marks():
    # move only (no --tag) on a folder that keeps no keywords: the moves are made, unmarked
    from spamkit.mail.imap import ImapFilter, ImapURL
    server = _NoKeywordsServer({1: b"Subject: a\r\n\r\nspam", 2: b"Subject: b\r\n\r\nham"})
    runner = ImapFilter(lambda raw: ("spam", 0.99) if raw.endswith(b"spam") else ("ham", 0.01), move={"spam": "Junk"})
    summary = runner.run(server, ImapURL.parse("imaps://me@127.0.0.1/INBOX"))
    assert summary.moved == {"Junk": 1} and list(server.folders["Junk"]) == [1] and list(server.folders["INBOX"]) == [2]
    assert not any(call[0] == "store" for call in server.calls)
