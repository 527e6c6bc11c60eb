"""Pipe mode never loses a message: crashers, damaged filters, broken installs, signals, memory.

Each case runs the real command (``python -m spamkit filter MODEL -`` or ``spamkit-pipe``
against a running ``spamkit serve``) and compares the bytes that come out.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from spamkit.cli import cli
from spamkit.parse.markup import split_tags
from spamkit.common.passthrough import EXIT_ERROR, VERDICT_STATUSES

from conftest import SAMPLE, start_server, stop_server
from hostile import CRASHERS

REPO = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(REPO)}
PIPE = [sys.executable, "-m", "spamkit", "filter"]


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("pipe") / "m.spamkit"
    assert CliRunner().invoke(cli, ["train", str(SAMPLE), "-o", str(path)]).exit_code == 0
    return path


def delivered(raw: bytes, out: subprocess.CompletedProcess) -> None:
    """The message came out: tagged with a verdict status, or unchanged with status 3."""
    if out.returncode == EXIT_ERROR:
        assert out.stdout == raw and b"passed through" in out.stderr
    else:
        assert out.returncode in VERDICT_STATUSES, out.stderr.decode()[-2000:]
        assert out.stdout.startswith(b"X-Spam-Status: ") and split_tags(out.stdout)[1] == raw


@pytest.mark.parametrize("name,raw", CRASHERS, ids=[c[0] for c in CRASHERS])
def test_every_crasher_comes_out_of_pipe_mode_tagged(model, name, raw):
    out = subprocess.run(PIPE + [str(model), "-"], input=raw, capture_output=True, env=ENV, timeout=300)
    if not raw.strip():                   # nothing to judge: an error, and what came in goes out
        assert out.returncode == EXIT_ERROR and out.stdout == raw
        assert out.stderr == b"spamkit filter: standard input is empty, not a message; message passed through untagged\n"
        return
    delivered(raw, out)
    assert out.returncode != EXIT_ERROR, f"{name}: {out.stderr.decode()[-500:]}"


@pytest.mark.parametrize("route", ["lean", "full"])
@pytest.mark.parametrize("raw", [b"", b"\n", b"\r\n\r\n"])
def test_empty_standard_input_is_not_tagged_as_a_message(model, route, raw):
    env = ENV if route == "lean" else {**ENV, "SPAMKIT_LEAN": "0"}
    for options in ([], ["--exit-zero"]):
        out = subprocess.run(PIPE + [*options, str(model), "-"], input=raw, capture_output=True, env=env, timeout=120)
        assert out.returncode == EXIT_ERROR and out.stdout == raw
        assert b"standard input is empty, not a message" in out.stderr


def test_a_broken_installation_still_delivers(model, tmp_path):
    # a numpy that cannot be imported: the full path cannot even start and passes the message
    # through; the lean path (spamkit.mail.lean, the standard library only) never needed numpy
    fake = tmp_path / "site" / "numpy"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('numpy is broken on purpose')\n")
    env = {**ENV, "PYTHONPATH": f"{tmp_path / 'site'}{os.pathsep}{REPO}"}
    raw = CRASHERS[0][1]
    out = subprocess.run(PIPE + [str(model), "-"], input=raw, capture_output=True, env={**env, "SPAMKIT_LEAN": "0"},
                         timeout=120)
    assert out.returncode == EXIT_ERROR and out.stdout == raw
    assert b"numpy is broken on purpose" in out.stderr and b"Traceback" not in out.stderr
    out = subprocess.run(PIPE + [str(model), "-"], input=raw, capture_output=True, env=env, timeout=120)
    assert out.returncode in VERDICT_STATUSES and split_tags(out.stdout)[1] == raw
    assert out.stdout.startswith(b"X-Spam-Status:")


def test_a_bad_option_still_delivers(model):
    raw = b"Subject: x\n\nhello"
    out = subprocess.run(PIPE + ["--cost", "nonsense", str(model), "-"], input=raw, capture_output=True,
                         env=ENV, timeout=120)
    assert out.returncode == EXIT_ERROR and out.stdout == raw and b"Traceback" not in out.stderr


@pytest.mark.parametrize("route", ["lean", "full"])
def test_too_little_memory_still_delivers(model, route):
    # 300 MB of address space is not enough to import scikit-learn: MemoryError or ImportError
    raw = b"Subject: x\n\nhello"

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (300 << 20, 300 << 20))

    env = ENV if route == "lean" else {**ENV, "SPAMKIT_LEAN": "0"}
    out = subprocess.run(PIPE + [str(model), "-"], input=raw, capture_output=True, env=env, timeout=120,
                         preexec_fn=limit)
    delivered(raw, out)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_signal_after_the_message_was_read_still_delivers(model, tmp_path, signum):
    raw = b"Subject: signalled\n\n" + b"words " * 1000
    source = tmp_path / "in.eml"
    source.write_bytes(raw)
    with open(source, "rb") as stdin:
        proc = subprocess.Popen(PIPE + [str(model), "-"], stdin=stdin, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=ENV)
        # a regular file as standard input: its offset tells when the message has been read
        fdinfo = Path(f"/proc/{proc.pid}/fdinfo/0")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if f"pos:\t{len(raw)}" in fdinfo.read_text():
                    break
            except OSError:
                break
            time.sleep(0.005)
        time.sleep(0.05)                     # the command line is still importing its libraries
        proc.send_signal(signum)
        stdout, stderr = proc.communicate(timeout=120)
    out = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    delivered(raw, out)


@pytest.fixture()
def server(model, tmp_path):
    sock = tmp_path / "s.sock"
    proc = start_server(model, sock)
    yield sock
    stop_server(proc)


def test_every_crasher_comes_out_of_spamkit_pipe_tagged(server):
    for name, raw in CRASHERS:
        out = subprocess.run([sys.executable, "-m", "spamkit.mail.serve.client", "--socket", str(server)], input=raw,
                             capture_output=True, env=ENV, timeout=120)
        if not raw.strip():               # as pipe mode: no message, an error, the input passed on
            assert out.returncode == EXIT_ERROR and out.stdout == raw
            assert b"standard input is empty, not a message" in out.stderr
            continue
        delivered(raw, out)
        assert out.returncode != EXIT_ERROR, f"{name}: {out.stderr.decode()[-500:]}"
