"""A throw-away Dovecot IMAP server for the tests, on 127.0.0.1, with TLS and Maildir users.

Dovecot 2.3 from the distribution's packages (``apt-get install dovecot-imapd``; .ci/run
installs it) runs from a temporary configuration: its own ``base_dir`` and ``state_dir``, a
``passwd-file`` of test users, a static userdb whose mail processes run as ``nobody`` in a
temporary folder, a self-signed certificate for ``localhost``/``127.0.0.1`` (made with the
``openssl`` command), IMAP with STARTTLS and IMAPS on free ports. Its login processes run as
its own ``dovenull`` user, as it insists when started by root. ``verbose_proctitle`` names
each session's process after its user, so a test can kill one session's connection.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest


def dovecot_or_skip() -> str:
    """The ``dovecot`` program; skip (or fail under ``CI=true``) when it is not installed."""
    path = shutil.which("dovecot") or ("/usr/sbin/dovecot" if os.path.exists("/usr/sbin/dovecot") else None)
    if path is None or os.geteuid() != 0:
        reason = ("Dovecot is not installed (apt-get install dovecot-imapd)" if path is None
                  else "starting Dovecot's test server needs root (its login processes switch users)")
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    return path


#: test users made when the server starts
USERS = 64


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Dovecot:
    def __init__(self):
        self.exe = dovecot_or_skip()
        self.base = Path(tempfile.mkdtemp(prefix="spamkit-dovecot-"))
        os.chmod(self.base, 0o755)
        nobody = pwd.getpwnam("nobody")
        for d in ("run", "state", "home", "sieve", "sieve-bin"):
            (self.base / d).mkdir()
        os.chown(self.base / "home", nobody.pw_uid, nobody.pw_gid)
        os.chown(self.base / "sieve", nobody.pw_uid, nobody.pw_gid)      # compiled scripts and their logs
        self.cert, key = self.base / "cert.pem", self.base / "key.pem"
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
                        "-out", str(self.cert), "-days", "2", "-subj", "/CN=localhost",
                        "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"], check=True, capture_output=True)
        self.passwd = self.base / "passwd"
        self._fresh = [f"u{i}" for i in range(USERS)]
        self.passwd.write_text("".join(f"{u}:{{PLAIN}}secret::::::\n" for u in self._fresh))
        self.imap_port, self.imaps_port = _free_port(), _free_port()
        conf = self.base / "dovecot.conf"
        conf.write_text(f"""
base_dir = {self.base}/run
state_dir = {self.base}/state
log_path = {self.base}/dovecot.log
protocols = imap
listen = 127.0.0.1
ssl = yes
ssl_cert = <{self.cert}
ssl_key = <{key}
disable_plaintext_auth = yes
auth_mechanisms = plain login
default_internal_user = dovecot
default_login_user = dovenull
first_valid_uid = 1
verbose_proctitle = yes
mail_location = maildir:~/Maildir
passdb {{
  driver = passwd-file
  args = scheme=PLAIN username_format=%u {self.passwd}
}}
userdb {{
  driver = static
  args = uid={nobody.pw_uid} gid={nobody.pw_gid} home={self.base}/home/%u
}}
namespace inbox {{
  inbox = yes
  separator = /
}}
protocol lda {{
  mail_plugins = sieve
  postmaster_address = postmaster@localhost
}}
plugin {{
  sieve = file:{self.base}/sieve/%u;active={self.base}/sieve/%u.sieve
  sieve_before = {self.base}/sieve/before.sieve
  sieve_plugins = sieve_extprograms
  sieve_global_extensions = +vnd.dovecot.filter
  sieve_filter_bin_dir = {self.base}/sieve-bin
}}
service imap-login {{
  chroot =
  inet_listener imap {{
    address = 127.0.0.1
    port = {self.imap_port}
  }}
  inet_listener imaps {{
    address = 127.0.0.1
    port = {self.imaps_port}
    ssl = yes
  }}
}}
""")
        self.proc = subprocess.Popen([self.exe, "-F", "-c", str(conf)], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"dovecot did not start: {self.proc.stderr.read().decode()[-2000:]}")
            try:
                socket.create_connection(("127.0.0.1", self.imaps_port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("dovecot did not open its port within 30 s")

    def new_user(self) -> str:
        """A user nobody has used yet, password "secret" (made before the server started: Dovecot
        looks at a changed passwd-file at most once a second)."""
        return self._fresh.pop(0)

    def sieve(self, script: str, programs: dict[str, str] | None = None) -> None:
        """The administrator's Sieve script run before every user's own (``sieve_before``, where
        ``vnd.dovecot.filter`` is allowed), and the filter programs (name -> shell script) it may call."""
        for name, text in (programs or {}).items():
            path = self.base / "sieve-bin" / name
            path.write_text(text)
            path.chmod(0o755)
        (self.base / "sieve" / "before.sieve").write_text(script)
        os.chmod(self.base / "sieve" / "before.sieve", 0o644)

    def deliver(self, user: str, raw: bytes) -> subprocess.CompletedProcess:
        """Deliver one message to ``user`` with dovecot-lda, which runs the user's Sieve script."""
        lda = shutil.which("dovecot-lda") or "/usr/lib/dovecot/dovecot-lda"
        return subprocess.run([lda, "-c", str(self.base / "dovecot.conf"), "-d", user, "-f", "sender@example.org"],
                              input=raw, capture_output=True, timeout=120)

    def url(self, user: str, folder: str = "INBOX", starttls: bool = False) -> str:
        if starttls:
            return f"imap://{user}@127.0.0.1:{self.imap_port}/{folder}"
        return f"imaps://{user}@127.0.0.1:{self.imaps_port}/{folder}"

    def client(self, user: str, secret: str = "secret"):
        import ssl

        import imapclient
        c = imapclient.IMAPClient("127.0.0.1", port=self.imaps_port, ssl=True,
                                  ssl_context=ssl.create_default_context(cafile=str(self.cert)))
        c.login(user, secret)
        return c

    def maildir_files(self, user: str) -> dict[str, list[Path]]:
        """Folder -> message files, read on disk (what the server holds, whatever any client says)."""
        root = self.base / "home" / user / "Maildir"
        out = {}
        for folder in [root] + sorted(p for p in root.glob(".*") if p.is_dir()):
            name = "INBOX" if folder == root else folder.name[1:]
            out[name] = [f for sub in ("new", "cur") for f in (folder / sub).glob("*") if f.is_file()]
        return out

    def kill_sessions(self, user: str) -> int:
        """Kill the imap processes serving ``user`` (the connection drops mid-command); how many."""
        out = subprocess.run(["pgrep", "-f", f"dovecot/imap \\[{user} "], capture_output=True, text=True).stdout.split()
        for pid in out:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                pass
        return len(out)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        shutil.rmtree(self.base, ignore_errors=True)
