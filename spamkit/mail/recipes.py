"""Delivery-agent recipes for this installation: procmail and Dovecot's Sieve, with
the absolute path of this spamkit and of the filter file written in.

A recipe copied from documentation names ``spamkit`` and leaves the delivery agent to find it:
procmail runs its pipes with a ``PATH`` of its own (``$HOME/bin:/usr/local/bin:/usr/bin:/bin``),
which holds neither a virtual environment's ``bin`` nor ``~/.local/bin``, and the message is
then delivered untagged with "cannot open spamkit" in the log. :func:`recipe` writes the
command as this installation runs it. Every recipe files spam and unsure mail apart (the three
verdicts are spamkit's), and pipe mode delivers the message unchanged, exit status 3, whatever
fails, so a recipe never loses mail. ``tests/test_recipes.py`` delivers through what these
print, with the real procmail and Dovecot.

Sources: procmailrc(5) and procmailex(5) (``:0fw`` filters through a pipe and waits for it),
spamc(1) (``-d``/``-p``: where spamd listens; the message passed on unchanged when it cannot
answer), Pigeonhole's ``vnd.dovecot.filter`` extension and
``sievec(1)`` (a global script must be compiled by an administrator: the delivery process
cannot write its binary next to it).
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys

from .. import __version__
from ..common.errors import ConfigError

#: the delivery agents :func:`recipe` writes for
KINDS = ("procmail", "sieve")


def spamkit_command(argv0: str | None = None, executable: str | None = None) -> str:
    """How a shell runs this spamkit: the absolute path of the ``spamkit`` script this process
    was started as, else of the one installed beside this Python, else this Python with ``-m
    spamkit`` (quoted for a shell)."""
    argv0 = sys.argv[0] if argv0 is None else argv0
    executable = sys.executable if executable is None else executable
    if os.path.basename(argv0) == "spamkit" and os.path.isfile(argv0):
        return shlex.quote(os.path.abspath(argv0))
    beside = os.path.join(os.path.dirname(os.path.abspath(executable)), "spamkit")
    if os.path.isfile(beside) and os.access(beside, os.X_OK):
        return shlex.quote(beside)
    return f"{shlex.quote(os.path.abspath(executable))} -m spamkit"


def _folder_name(name: str, what: str) -> str:
    if not name or "/" in name or name.startswith(".") or any(c in name for c in "\"'$`\\\n"):
        raise ConfigError(f"--{what} {name!r}: a folder name (letters, digits, spaces; no '/', quotes or '$')")
    return name


def recipe(kind: str, model, junk: str = "Junk", unsure: str = "Review", command: str | None = None,
           spamd: str = "127.0.0.1:783") -> str:
    """The text of a ``kind`` recipe (:data:`KINDS`) that filters each delivered message with the
    filter file ``model`` and files spam into folder ``junk``, unsure mail into ``unsure``:
    procmail through pipe mode, Dovecot's Sieve through spamc and ``spamkit serve --spamd
    spamd`` (its mail processes run as each user, who need not be able to run spamkit)."""
    if kind not in KINDS:
        raise ConfigError(f"no recipe for {kind!r}: one of {', '.join(KINDS)}")
    junk, unsure = _folder_name(junk, "junk"), _folder_name(unsure, "unsure")
    model_path = os.path.abspath(os.fspath(model))
    pipe = f"{command or spamkit_command()} filter --exit-zero {shlex.quote(model_path)} -"
    made = f"written by `spamkit recipe {kind}` (spamkit {__version__}) for this installation"
    if kind == "procmail":
        return f"""# ~/.procmailrc -- {made}
SHELL=/bin/sh
MAILDIR=$HOME/Mail
DEFAULT=$MAILDIR/INBOX/

# the message comes back with spamkit's fields on top (or unchanged if anything failed)
:0fw
| {pipe}

:0
* ^X-Spam-Status: Yes
$MAILDIR/{junk}/

:0
* ^X-Spam-Status: Unsure
$MAILDIR/{unsure}/
"""
    spamc = shutil.which("spamc") or "/usr/bin/spamc"
    host, _, port = spamd.rpartition(":")
    if not host or not port.isdigit():
        raise ConfigError(f"--spamd {spamd!r}: HOST:PORT, e.g. 127.0.0.1:783")
    serve = f"{command or spamkit_command()} serve {shlex.quote(model_path)} --spamd {spamd}"
    return f"""# spamkit.sieve -- {made}
#
# Dovecot's mail processes run as each mail user: they hand the message to spamkit's resident
# server through spamc (SpamAssassin's client), and never run Python or read filter files.
#
# 1. the server, as a service (the filter loaded once; about 5 ms a message):
#      {serve}
# 2. the filter program, /etc/dovecot/sieve-filters/spamkit (chmod 755):
#      #!/bin/sh
#      exec {spamc} -d {host} -p {port}
# 3. in dovecot.conf:
#      protocol lda {{
#        mail_plugins = $mail_plugins sieve
#      }}
#      protocol lmtp {{
#        mail_plugins = $mail_plugins sieve
#      }}
#      plugin {{
#        sieve_before = /etc/dovecot/sieve/spamkit.sieve
#        sieve_plugins = sieve_extprograms
#        sieve_global_extensions = +vnd.dovecot.filter
#        sieve_filter_bin_dir = /etc/dovecot/sieve-filters
#      }}
# 4. this file as /etc/dovecot/sieve/spamkit.sieve, compiled once by root (the delivery
#    process cannot write the compiled script beside it, and then logs an error for every
#    message):  sievec /etc/dovecot/sieve/spamkit.sieve
#
# When the server does not answer, spamc passes the message on unchanged: it is delivered.
require ["vnd.dovecot.filter", "fileinto", "mailbox"];
filter "spamkit";
if header :is "X-Spam-Flag" "YES" {{
    fileinto :create "{junk}";
    stop;
}}
if header :contains "X-Spam-Status" "SPAMKIT_UNSURE" {{
    fileinto :create "{unsure}";
    stop;
}}
"""
