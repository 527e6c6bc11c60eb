"""Delivery-agent recipes, run end to end: procmail with pipe mode, and Dovecot's Sieve with spamc.

The recipes are the ones docs/recipes.md shows. Each test delivers real messages through the
real delivery agent (procmail from the distribution's packages; dovecot-lda with Pigeonhole's
Sieve and its vnd.dovecot.filter extension) and looks at where they landed and what they carry.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from spamkit.cli import cli
from spamkit.message import strip_markup
from spamkit.spamfilter import SpamFilter

from conftest import REPO, SAMPLE, installed
from dovecot import Dovecot
from test_spamd import Server


def need(program: str, package: str) -> str:
    return installed(program, package)


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("recipes") / "m.spamkit"
    assert CliRunner().invoke(cli, ["train", str(SAMPLE), "-o", str(path)]).exit_code == 0
    return path


def messages(model: Path) -> dict[str, bytes]:
    """A message the filter calls spam and one it calls ham."""
    spam_filter = SpamFilter.load(model)
    out = {}
    for label in ("spam", "ham"):
        out[label] = next(p.read_bytes() for p in sorted((SAMPLE / label).iterdir())
                          if spam_filter.verdict(p.read_bytes())[0] == label)
    return out


def maildir_messages(folder: Path) -> list[bytes]:
    return [f.read_bytes() for sub in ("new", "cur") if (folder / sub).is_dir() for f in (folder / sub).iterdir()]


def test_procmail_recipe_files_spam_in_junk_with_the_fields_written(model, tmp_path):
    procmail = need("procmail", "procmail")
    mail = tmp_path / "Mail"
    mail.mkdir()
    rc = tmp_path / "procmailrc"
    rc.write_text(f"""SHELL=/bin/sh
PYTHONPATH={REPO}
MAILDIR={mail}
DEFAULT={mail}/INBOX/
LOGFILE={tmp_path}/procmail.log

:0fw
| {sys.executable} -m spamkit filter --exit-zero {model} -

:0
* ^X-Spam-Status: Yes
{mail}/Junk/
""")
    msgs = messages(model)
    for label, raw in msgs.items():
        out = subprocess.run([procmail, "-m", str(rc)], input=b"From sender@example.org  Mon Jan  1 00:00:00 2024\n"
                             + raw, capture_output=True, timeout=120)
        assert out.returncode == 0, out.stderr.decode() + (tmp_path / "procmail.log").read_text()
    junk, inbox = maildir_messages(mail / "Junk"), maildir_messages(mail / "INBOX")
    assert len(junk) == 1 and len(inbox) == 1
    # procmail drops the envelope line for a Maildir and ends a message with a blank line
    assert junk[0].startswith(b"X-Spam-Status: Yes") and strip_markup(junk[0]).rstrip() == msgs["spam"].rstrip()
    assert inbox[0].startswith(b"X-Spam-Status: No") and strip_markup(inbox[0]).rstrip() == msgs["ham"].rstrip()
    # a filter that cannot work (a damaged file) still delivers the message, unchanged, to INBOX
    broken = tmp_path / "broken.spamkit"
    broken.write_bytes(b"not a filter")
    rc.write_text(rc.read_text().replace(str(model), str(broken)))
    subprocess.run([procmail, "-m", str(rc)], input=msgs["spam"], capture_output=True, timeout=120)
    assert msgs["spam"].rstrip() in [m.rstrip() for m in maildir_messages(mail / "INBOX")]


def test_dovecot_sieve_recipe_through_spamc_files_spam_in_junk(model, tmp_path):
    spamc = need("spamc", "spamc")
    dovecot = Dovecot()
    server = Server(model, "--workers", "1")
    try:
        user = dovecot.new_user()
        dovecot.sieve("""require ["vnd.dovecot.filter", "fileinto", "mailbox"];
filter "spamkit-spamc";
if header :is "X-Spam-Flag" "YES" {
    fileinto :create "Junk";
    stop;
}
""", {"spamkit-spamc": f"#!/bin/sh\nexec {spamc} -d 127.0.0.1 -p {server.port}\n"})
        msgs = messages(model)
        for raw in msgs.values():
            out = dovecot.deliver(user, raw)
            assert out.returncode == 0, out.stderr.decode() + (dovecot.base / "dovecot.log").read_text()[-2000:]
        folders = {name: [f.read_bytes() for f in files] for name, files in dovecot.maildir_files(user).items()}
        assert len(folders["Junk"]) == 1 and len(folders["INBOX"]) == 1
        junk, inbox = folders["Junk"][0], folders["INBOX"][0]
        assert b"X-Spam-Flag: YES" in junk and b"X-Spam-Status: Yes, score=" in junk
        assert b"X-Spam-Status: No, score=" in inbox and b"X-Spam-Flag" not in inbox
        # dovecot-lda adds its own Return-Path; the rest is the message and spamkit's fields
        assert strip_markup(junk).endswith(msgs["spam"].split(b"\n", 1)[1])
    finally:
        server.stop()
        dovecot.stop()
