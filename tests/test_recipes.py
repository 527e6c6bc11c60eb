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
from spamkit.parse.markup import strip_markup
from spamkit.filterfile.spamfilter import SpamFilter

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
    for _label, raw in msgs.items():
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


# ---------------------------------------------------------------- the recipes `spamkit recipe` prints

def printed_recipe(kind: str, model: Path, *options: str) -> str:
    """What `spamkit recipe KIND MODEL` prints, run as a user runs it: the installed script."""
    script = Path(sys.executable).parent / "spamkit"
    command = [str(script)] if script.is_file() else [sys.executable, "-m", "spamkit"]
    out = subprocess.run([*command, "recipe", kind, str(model), *options], capture_output=True, timeout=120)
    assert out.returncode == 0, out.stderr.decode()
    return out.stdout.decode()


@pytest.fixture(scope="module")
def unsure_model(tmp_path_factory) -> Path:
    """A filter whose costs make an unsure verdict cheap: most mail comes out unsure."""
    path = tmp_path_factory.mktemp("recipes") / "unsure.spamkit"
    result = CliRunner().invoke(cli, ["train", str(SAMPLE), "-o", str(path), "--cost", "fp=100,fn=10,unsure=0.001"])
    assert result.exit_code == 0, result.output
    return path


#: what a delivery agent's environment holds: no virtual environment, no PYTHONPATH
BARE = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}


def test_the_printed_procmail_recipe_works_as_printed(model, unsure_model, tmp_path):
    procmail = need("procmail", "procmail")
    text = printed_recipe("procmail", model)
    assert "/" in text.split("| ", 1)[1].split()[0]             # spamkit by its absolute path
    home = tmp_path / "home"
    (home / "Mail").mkdir(parents=True)
    rc = home / ".procmailrc"
    msgs = messages(model)
    for recipe_text, raw in ((text, msgs["spam"]), (text, msgs["ham"]), (printed_recipe("procmail", unsure_model),
                                                                         msgs["ham"])):
        rc.write_text(recipe_text)
        # (as root, procmail takes HOME from the password file: the tests' user is given here)
        out = subprocess.run([procmail, "-m", f"HOME={home}", str(rc)], input=raw, capture_output=True, timeout=120,
                             env=BARE)
        assert out.returncode == 0, out.stderr.decode()
    mail = home / "Mail"
    junk, inbox, review = (maildir_messages(mail / name) for name in ("Junk", "INBOX", "Review"))
    assert len(junk) == len(inbox) == len(review) == 1, sorted(p.name for p in mail.iterdir())
    assert junk[0].startswith(b"X-Spam-Status: Yes") and inbox[0].startswith(b"X-Spam-Status: No")
    assert review[0].startswith(b"X-Spam-Status: Unsure") and strip_markup(review[0]).rstrip() == msgs["ham"].rstrip()


def test_the_printed_sieve_recipe_works_as_printed_through_spamc(model, unsure_model, tmp_path):
    spamc = need("spamc", "spamc")
    need("sievec", "dovecot-sieve")
    import shlex
    from test_spamd import free_port
    dovecot = Dovecot()
    try:
        user = dovecot.new_user()
        msgs = messages(model)
        for which, raw in ((model, msgs["spam"]), (model, msgs["ham"]), (unsure_model, msgs["ham"])):
            port = free_port()
            text = printed_recipe("sieve", which, "--spamd", f"127.0.0.1:{port}")
            lines = text.splitlines()
            assert "sievec /etc/dovecot/sieve/spamkit.sieve" in text and f"exec {spamc} -d 127.0.0.1 -p {port}" in text
            # the server command, the filter program and the script, each as printed
            serve = shlex.split(lines[lines.index("# 1. the server, as a service (the filter loaded once; about 5 ms "
                                                  "a message):") + 1][len("#      "):])
            start = lines.index("#      #!/bin/sh")
            program = "\n".join(line[len("#      "):] for line in lines[start:start + 2]) + "\n"
            server = subprocess.Popen([*serve, "--workers", "0"], stderr=subprocess.PIPE)
            try:
                _wait_for_port(port, server)
                dovecot.sieve(text, {"spamkit": program})
                out = dovecot.deliver(user, raw)
                assert out.returncode == 0, out.stderr.decode() + (dovecot.base / "dovecot.log").read_text()[-2000:]
            finally:
                server.terminate()
                server.wait(timeout=30)
        folders = {name: [f.read_bytes() for f in files] for name, files in dovecot.maildir_files(user).items()}
        assert {k: len(v) for k, v in folders.items()} == {"INBOX": 1, "Junk": 1, "Review": 1}, \
            (dovecot.base / "dovecot.log").read_text()[-2000:]
        assert b"X-Spam-Flag: YES" in folders["Junk"][0] and b"X-Spam-Status: No" in folders["INBOX"][0]
        assert b"SPAMKIT_UNSURE" in folders["Review"][0]
    finally:
        dovecot.stop()


def _wait_for_port(port: int, proc) -> None:
    import socket
    import time
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(proc.stderr.read().decode() if proc.poll() is not None else "the server did not answer")
