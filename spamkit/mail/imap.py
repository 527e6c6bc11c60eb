"""Filtering a folder on an IMAP server: keywords for verdicts, MOVE for spam, nothing lost.

``spamkit filter MODEL imaps://USER@HOST[:PORT]/FOLDER --tag --move-spam-to Junk`` (or
``imap://``, which always upgrades with STARTTLS) does on the server what the same options
do to a local folder:

Tags
    IMAP messages cannot be rewritten, so the verdict is a keyword, the ones mail clients use:
    ``$Junk`` (spam), ``$NotJunk`` (ham), ``$SpamkitUnsure``, and ``$SpamkitP97`` for
    P(spam) = 0.97.. (two digits). A message that already carries ``$Junk``, ``$NotJunk`` or
    ``$SpamkitUnsure`` has been judged (by spamkit, or by the person reading the mail, whose
    client sets them) and is not scored again unless ``--force``: a second run does nothing.
Moving
    With the server's ``MOVE`` (RFC 6851), or else ``UID COPY``, then ``\\Deleted`` and ``UID
    EXPUNGE`` (RFC 4315 UIDPLUS) of only those UIDs, after the copy succeeded. Either can be cut
    between its copy and its expunge (a server's MOVE is a copy and an expunge too), so each
    moved message carries the keyword ``$SpamkitMoving`` until its move is done, and the next
    run finishes what a cut left: a message found in both folders loses its source copy, one
    never copied is moved again (:mod:`spamkit.mail.imapmoves`). A server without UIDPLUS gets
    the copy and the ``\\Deleted`` flag but no expunge (which would also remove what the user
    deleted), said in the summary.
Reading
    ``BODY.PEEK[]``: filtering never marks a message read. Messages are fetched in batches,
    the keywords of a batch are stored before its moves, and a batch is finished before a
    Ctrl-C stops the run, so an interrupted run leaves judged messages judged and the rest
    as they were. Messages over ``max_size`` are left alone and counted as failed.
Credentials and TLS
    :func:`password`: the ``SPAMKIT_IMAP_PASSWORD`` environment variable, ``~/.netrc``, or a
    password command — never a command-line argument. Certificates are verified against the
    system's authorities (or ``ca_file``); ``insecure`` turns verification off.

The client library is ``imapclient`` (see the README's dependencies for why).
"""

from __future__ import annotations

import imaplib
import netrc
import os
import ssl
import subprocess
import time
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from ..common.errors import ConfigError
from .failures import FilterError
from .imapmoves import MOVING, finish_moves, move, settle
from .run import FilterSummary
from .tags import VERDICTS

#: verdict -> the keyword that records it
KEYWORDS = {"spam": "$Junk", "ham": "$NotJunk", "unsure": "$SpamkitUnsure"}
#: messages fetched at a time
BATCH = 100
#: larger messages are left where they are (counted as failed)
MAX_SIZE = 16 << 20


def score_keyword(p_spam: float) -> str:
    """``$SpamkitP97`` for P(spam) in [0.97, 0.98): a keyword a mail client can sort or search on.

    >>> score_keyword(0.973), score_keyword(1.0), score_keyword(0.001)
    ('$SpamkitP97', '$SpamkitP99', '$SpamkitP00')
    """
    return f"$SpamkitP{min(max(int(p_spam * 100), 0), 99):02d}"


def is_imap_url(text: str) -> bool:
    return str(text).lower().startswith(("imap://", "imaps://"))


@dataclass(frozen=True)
class ImapURL:
    """``imaps://USER@HOST[:PORT]/FOLDER`` (RFC 5092's form without the parts spamkit has no use for).

    >>> u = ImapURL.parse("imaps://alice%40example.org@mail.example.org/Lists/spam%20traps")
    >>> u.user, u.host, u.port, u.folder, str(u)
    ('alice@example.org', 'mail.example.org', 993, 'Lists/spam traps', 'imaps://alice%40example.org@mail.example.org:993/Lists/spam%20traps')
    """

    secure: bool
    user: str
    host: str
    port: int
    folder: str

    @classmethod
    def parse(cls, text: str) -> "ImapURL":
        parts = urlsplit(text)
        scheme = parts.scheme.lower()
        if scheme not in ("imap", "imaps"):
            raise ConfigError(f"{text}: not an imap:// or imaps:// address")
        if parts.password is not None:
            raise ConfigError(f"{parts.scheme}://{parts.username}@{parts.hostname}: a password never goes on the "
                              "command line; use SPAMKIT_IMAP_PASSWORD, ~/.netrc or --password-command")
        if not parts.username or not parts.hostname:
            raise ConfigError(f"{text}: expected {scheme}://USER@HOST[:PORT]/FOLDER")
        try:
            port = parts.port or (993 if scheme == "imaps" else 143)
        except ValueError:
            raise ConfigError(f"{text}: the port is not a number") from None
        folder = unquote(parts.path.lstrip("/")) or "INBOX"
        return cls(scheme == "imaps", unquote(parts.username), parts.hostname, port, folder)

    def __str__(self) -> str:
        from urllib.parse import quote
        return (f"{'imaps' if self.secure else 'imap'}://{quote(self.user, safe='')}@{self.host}:{self.port}/"
                f"{quote(self.folder)}")

    def at(self, folder: str) -> "ImapURL":
        return ImapURL(self.secure, self.user, self.host, self.port, folder)


def password(url: ImapURL, password_command: str | None = None) -> str:
    """The password for ``url``: the output of ``password_command`` (first line), else
    ``SPAMKIT_IMAP_PASSWORD``, else the ``~/.netrc`` entry of the host (and user)."""
    if password_command:
        out = subprocess.run(password_command, shell=True, capture_output=True, text=True)
        if out.returncode != 0:
            raise ConfigError(f"--password-command failed with status {out.returncode}: "
                              f"{out.stderr.strip()[:200] or 'no message'}")
        return out.stdout.split("\n", 1)[0]
    env = os.environ.get("SPAMKIT_IMAP_PASSWORD")
    if env:
        return env
    try:
        entry = netrc.netrc().authenticators(url.host)
    except FileNotFoundError:
        entry = None
    except (netrc.NetrcParseError, OSError) as exc:
        raise ConfigError(f"~/.netrc: {exc}") from None
    if entry is not None and entry[2] and entry[0] in (None, "", url.user):
        return entry[2]
    raise ConfigError(f"no password for {url.user}@{url.host}: set SPAMKIT_IMAP_PASSWORD, add "
                      f"'machine {url.host} login {url.user} password ...' to ~/.netrc, or give --password-command")


def connect(url: ImapURL, secret: str, insecure: bool = False, ca_file: str | None = None, timeout: float = 60.0,
            max_size: int = MAX_SIZE, command_seconds: float | None = None):
    """A logged-in ``IMAPClient``: TLS from the start (imaps) or STARTTLS (imap), verified; a
    :class:`~spamkit.mail.imapguard.GuardedIMAPClient`, which refuses a literal over
    ``max_size`` (and 64 KiB), bounds untagged responses and gives each command a deadline."""
    import imapclient

    from .imapguard import COMMAND_SECONDS, GuardedIMAPClient
    deadline = {"command_seconds": command_seconds or COMMAND_SECONDS}
    context = ssl.create_default_context(cafile=ca_file)
    if insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    where = f"{url.user}@{url.host}:{url.port}"
    try:
        limit = max_size + (64 << 10)
        if url.secure:
            client = GuardedIMAPClient(url.host, port=url.port, ssl=True, ssl_context=context, timeout=timeout,
                                       max_literal=limit, **deadline)
        else:
            client = GuardedIMAPClient(url.host, port=url.port, ssl=False, timeout=timeout, max_literal=limit,
                                       **deadline)
            if not client.has_capability("STARTTLS"):
                client.shutdown()
                raise FilterError(f"{where}: the server offers no STARTTLS; spamkit does not send a password "
                                  "in clear (use imaps://)")
            client.starttls(context)
        client.login(url.user, secret)
    except ssl.SSLCertVerificationError as exc:
        raise FilterError(f"{where}: the server's certificate does not verify ({exc.verify_message}); give "
                          "--ca-file for a private authority, or --insecure to skip the check") from None
    except imapclient.exceptions.LoginError:
        raise FilterError(f"{where}: login refused (wrong user or password)") from None
    except (OSError, imapclient.exceptions.IMAPClientError, imaplib.IMAP4.error) as exc:
        raise FilterError(f"{where}: cannot connect ({type(exc).__name__}: {exc})") from None
    return client


def select(client, url: ImapURL, readonly: bool = False, folder: str | None = None) -> dict:
    """``client.select_folder`` of ``folder`` (the URL's by default), with a folder that is not
    on the server, or that the server will not open, said as such -- not as a failed connection
    (the server answered NO; the connection is fine)."""
    folder = url.folder if folder is None else folder
    try:
        return client.select_folder(folder, readonly=readonly)
    except imaplib.IMAP4.abort:
        raise                                         # the connection is gone: the caller says so
    except imaplib.IMAP4.error as exc:                # a tagged NO or BAD for this command
        try:
            names = [name for _, _, name in client.list_folders()]
        except Exception:                             # noqa: BLE001 -- the NO is what to report
            names = None
        where = str(url.at(folder)) if folder != url.folder else str(url)
        if names is not None and folder not in names:
            shown = ", ".join(sorted(names)[:20]) + (", ..." if len(names) > 20 else "")
            raise FilterError(f"{where}: no folder {folder!r} on this server (its folders: {shown or 'none'})") from None
        raise FilterError(f"{where}: the server will not open folder {folder!r} ({exc})") from None


def batches(items: list, n: int):
    for i in range(0, len(items), n):
        yield items[i:i + n]


#: seconds an IDLE lasts before it is ended to read what its DONE reports (ImapFilter.watch)
RECHECK_SECONDS = 10.0


def _news(responses) -> list:
    """The responses of an IDLE, a DONE or a NOOP that say new mail came: EXISTS and RECENT."""
    return [r for r in responses if isinstance(r, tuple) and len(r) > 1 and r[1] in (b"EXISTS", b"RECENT")]


class ImapFilter:
    """Runs a classifier over one IMAP folder (see the module docstring).

    ``classify(raw) -> (verdict, p_spam)``; ``move``: verdict -> folder on the same server;
    ``use_move``: None to use MOVE when the server has it, False to force the copy-and-expunge
    path. ``on_message(ref, verdict, p_spam, tagged, moved_to)`` hears each message.
    """

    def __init__(self, classify, tag: bool = False, move: dict | None = None, dry_run: bool = False,
                 force: bool = False, max_size: int = MAX_SIZE, progress=None, on_message=None,
                 use_move: bool | None = None, batch: int = BATCH):
        self.classify = classify
        self.tag = tag
        self.move = {k: v for k, v in (move or {}).items() if v}
        unknown = set(self.move) - set(VERDICTS)
        if unknown:
            raise ConfigError(f"cannot move verdicts {sorted(unknown)}")
        self.dry_run, self.force, self.max_size = dry_run, force, max_size
        self.progress, self.on_message = progress, on_message
        self.use_move, self.batch = use_move, batch
        self.stop_requested = False
        self.summary = FilterSummary(dry_run=dry_run)
        self.notes: list[str] = []
        #: whether the next pass first finishes the moves a cut left (imapmoves.finish_moves):
        #: the first pass, and the first after each reconnection of a watch
        self.check_moves = True

    #: in a watch, the folder's UIDVALIDITY and the highest UID already looked at
    seen: tuple[int, int] | None = None
    #: whether the folder keeps keywords (its PERMANENTFLAGS has ``\\*``): the moves' marks need
    #: them; without, a move-only run moves unmarked, the server's MOVE alone (set by :meth:`run`)
    marks = True

    def run(self, client, url: ImapURL) -> FilterSummary:
        """One pass over the folder: every message not judged yet (and, in a watch, newer than
        the last pass)."""
        started = time.monotonic()
        where = str(url)
        if where not in self.summary.mailboxes:
            self.summary.mailboxes.append(where)
        info = select(client, url, readonly=self.dry_run)
        validity = int(info.get(b"UIDVALIDITY", 0))
        since = self.seen[1] if self.seen is not None and self.seen[0] == validity else 0
        self.marks = b"\\*" in info.get(b"PERMANENTFLAGS", ())
        if self.tag and not self.dry_run and not self.marks:
            raise FilterError(f"{where}: the server does not keep keywords on this folder, so --tag cannot "
                              "record verdicts (move only, or ask the server's administrator)")
        can_move = client.has_capability("MOVE") if self.use_move is None else self.use_move
        uidplus = client.has_capability("UIDPLUS")
        if not self.dry_run:
            for folder in set(self.move.values()):
                if folder != url.folder and not client.folder_exists(folder):
                    client.create_folder(folder)
        if self.check_moves and not self.dry_run and self.marks:
            note = finish_moves(client, url.folder, self.move, KEYWORDS, can_move, uidplus)
            if note is not None:
                self.summary.recovered.append(f"{url}: {note}")
            self.check_moves = False
        moved_before = sum(self.summary.moved.values())
        newer = ["UID", f"{since + 1}:*"] if since else ["ALL"]
        everything = [u for u in client.search(newer) if u > since]
        if self.force:
            todo = everything
        else:
            criteria = list(newer)
            for keyword in KEYWORDS.values():
                criteria += ["NOT", "KEYWORD", keyword]
            todo = [u for u in client.search(criteria) if u > since]
            self.summary.already_tagged += len(everything) - len(todo)
        if everything:
            self.seen = (validity, max(everything))
        elif self.seen is None or self.seen[0] != validity:
            self.seen = (validity, since)
        for chunk in batches(sorted(todo), self.batch):
            if self.stop_requested:
                self.summary.interrupted = True
                break
            self._batch(client, url, chunk, can_move, uidplus)
        if sum(self.summary.moved.values()) > moved_before and not self.dry_run and self.marks:
            settle(client, url.folder, self.move.values())
        if not uidplus and not can_move and any(self.summary.moved.values()) and not self.dry_run:
            self.notes.append(f"{where}: the server has neither MOVE nor UIDPLUS: moved messages were copied "
                              "and flagged \\Deleted but not expunged (your mail client's expunge removes them)")
        self.summary.seconds += time.monotonic() - started
        return self.summary

    def _batch(self, client, url: ImapURL, uids: list, can_move: bool, uidplus: bool) -> None:
        sizes = client.fetch(uids, ["RFC822.SIZE"])
        small = [u for u in uids if u in sizes and sizes[u].get(b"RFC822.SIZE", 0) <= self.max_size]
        for u in uids:
            if u in sizes and u not in small:
                self._failed(url, u, f"message of {sizes[u].get(b'RFC822.SIZE')} bytes is over the limit of "
                                     f"{self.max_size}; left where it is")
        bodies = client.fetch(small, ["BODY.PEEK[]"]) if small else {}
        keywords: dict[tuple, list] = {}
        moves: dict[str, list] = {}
        for uid in small:
            raw = bodies.get(uid, {}).get(b"BODY[]")
            if raw is None:                                   # expunged by someone else meanwhile
                continue
            if len(raw) > self.max_size:                      # RFC822.SIZE said less: the server is not trusted
                self._failed(url, uid, f"message of {len(raw)} bytes (its RFC822.SIZE said "
                                       f"{sizes[uid].get(b'RFC822.SIZE')}) is over the limit of {self.max_size}; "
                                       "left where it is")
                continue
            try:
                verdict, p = self.classify(raw)
            except Exception as exc:                          # noqa: BLE001 -- one message must not stop the run
                self._failed(url, uid, f"{type(exc).__name__}: {exc}")
                continue
            self.summary.messages += 1
            self.summary.counts[verdict] += 1
            dest = self.move.get(verdict)
            if dest == url.folder:
                dest = None
            flags = ((KEYWORDS[verdict], score_keyword(p)) if self.tag else ()) + ((MOVING,) if dest and self.marks else ())
            if flags:
                keywords.setdefault(flags, []).append(uid)
            if self.tag:
                self.summary.tagged += 1
            if dest is not None:
                moves.setdefault(dest, []).append(uid)
                self.summary.moved[dest] = self.summary.moved.get(dest, 0) + 1
            if self.on_message is not None:
                self.on_message(f"{url}#{uid}", verdict, p, self.tag, dest)
            if self.progress is not None:
                self.progress()
        if self.dry_run:
            return
        for flags, group in keywords.items():                 # verdicts and marks first, then the moves
            client.add_flags(group, list(flags), silent=True)
        for dest, group in moves.items():
            move(client, group, dest, can_move, uidplus, marked=self.marks)

    def watch(self, connect_again, url: ImapURL, idle_seconds: float = RECHECK_SECONDS, max_delay: float = 300.0,
              log=None) -> FilterSummary:
        """Filter the folder, then stay connected and filter each new message as it arrives
        (IMAP IDLE, RFC 2177), until :attr:`stop_requested`. ``connect_again()`` gives a new
        logged-in client; a lost connection is retried after 1, 2, 4 ... ``max_delay`` seconds.

        A message that arrives between a command and the start of IDLE is not announced during
        the IDLE (Dovecot 2.3 reports it in the response to the next command: measured, a
        message appended just before IDLE was not announced in 45 s of it, and came with the
        DONE). So a NOOP before each IDLE asks for what came while the folder was being
        filtered, and each IDLE ends after ``idle_seconds`` (:data:`RECHECK_SECONDS`; servers
        drop an IDLE after 30 minutes anyway) to read what its DONE reports: a message that came
        in the moment between the NOOP and the IDLE waits at most that long."""
        import imaplib

        import imapclient
        lost = (OSError, imaplib.IMAP4.abort, imaplib.IMAP4.error, imapclient.exceptions.IMAPClientError, FilterError)
        delay = 1.0
        while not self.stop_requested:
            client = None
            try:
                client = connect_again()
                self.check_moves = True
                self.run(client, url)
                delay = 1.0
                while not self.stop_requested:
                    if _news(client.noop()[1]):               # it came while the folder was filtered
                        self.run(client, url)
                        continue
                    client.idle()
                    renew = time.monotonic() + idle_seconds
                    news: list = []
                    while not self.stop_requested and not news and time.monotonic() < renew:
                        asked = time.monotonic()
                        got = client.idle_check(timeout=min(1.0, max(renew - asked, 0.0)))
                        news = _news(got)
                        if not got and time.monotonic() - asked < 0.5 and renew - asked >= 0.5:
                            # woken with nothing to read: imapclient reports a closed connection as no
                            # news, so ask the server; a connection that is gone raises here
                            news = _news(client.idle_done()[1]) or _news(client.noop()[1])
                            if news:
                                break
                            client.idle()
                    else:
                        news = _news(client.idle_done()[1]) or news
                    if news and not self.stop_requested:
                        self.run(client, url)
            except lost as exc:
                if self.stop_requested:
                    break
                if log is not None:
                    log(f"{url}: {type(exc).__name__}: {exc}; connecting again in {delay:g} s")
                wake = time.monotonic() + delay
                while not self.stop_requested and time.monotonic() < wake:
                    time.sleep(0.2)
                delay = min(delay * 2, max_delay)
            finally:
                if client is not None:
                    try:
                        client.logout()
                    except Exception:                             # noqa: BLE001 -- already gone
                        pass
        self.summary.interrupted = False
        return self.summary

    def _failed(self, url, uid, why: str) -> None:
        self.summary.failed.append({"message": f"{url}#{uid}", "error": why[:300]})
        if self.progress is not None:
            self.progress()
