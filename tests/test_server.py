"""Fast pipe mode: spamkit serve keeps the filter loaded; spamkit-pipe is a standard-library client."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from spamkit.cli import cli
from spamkit.mailfilter import EXIT_ERROR, EXIT_HAM, EXIT_SPAM

from conftest import SAMPLE

ENV = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}


def _client(socket_path, data: bytes):
    return subprocess.run([sys.executable, "-m", "spamkit.client", "--socket", str(socket_path)], input=data,
                          capture_output=True, env=ENV)


@pytest.fixture()
def server(tmp_path):
    model = tmp_path / "m.spamkit"
    assert CliRunner().invoke(cli, ["train", str(SAMPLE), "-o", str(model)]).exit_code == 0
    sock = tmp_path / "s.sock"
    proc = subprocess.Popen([sys.executable, "-m", "spamkit", "serve", str(model), "--socket", str(sock)],
                            env=ENV, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not sock.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert sock.exists(), proc.stderr.read().decode()
    yield model, sock, proc
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)


def test_client_gets_the_verdict_and_the_tagged_message(server):
    model, sock, proc = server
    from spamkit.pipeline import SpamFilter
    f = SpamFilter.load(model)
    assert oct(sock.stat().st_mode & 0o777) == "0o600"
    for cls, status in (("spam", EXIT_SPAM), ("ham", EXIT_HAM)):
        raw = sorted((SAMPLE / cls).iterdir())[0].read_bytes()
        assert f.verdict(raw)[0] == cls
        out = _client(sock, raw)
        assert out.returncode == status
        assert out.stdout.endswith(raw) and out.stdout.startswith(b"X-Spam-Status: " + (b"Yes" if cls == "spam"
                                                                                          else b"No"))
    garbage = bytes(range(256)) * 100
    out = _client(sock, garbage)
    assert out.returncode in (EXIT_SPAM, EXIT_HAM) and out.stdout.endswith(garbage)


def test_no_server_means_the_message_passes_through(server, tmp_path):
    model, sock, proc = server
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)
    assert not sock.exists()                                  # the server removes its socket
    raw = b"Subject: hello\n\nstill delivered"
    out = _client(sock, raw)
    assert out.returncode == EXIT_ERROR and out.stdout == raw and b"passed through" in out.stderr


def test_the_client_imports_only_the_standard_library():
    code = "import sys, spamkit.client; print(sorted(m for m in ('numpy', 'scipy', 'sklearn', 'nltk') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, env=ENV, text=True)
    assert out.stdout.strip() == "[]"
