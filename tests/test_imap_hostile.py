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
