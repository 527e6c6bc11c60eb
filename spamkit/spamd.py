"""SpamAssassin's spamd protocol (SPAMC/1.5), so that ``spamc`` and everything built on it
(Postfix, Exim, procmail, maildrop, Dovecot Sieve, amavis) use a spamkit filter unchanged.

``spamkit serve MODEL --spamd 127.0.0.1:783`` (or ``--spamd-socket PATH``) answers:

``CHECK``
    ``Spam: True ; 7.5 / 5.0``: the verdict and SpamAssassin-style points
    (:func:`spamkit.mailfilter.tags.points`: P(spam) mapped to 0-10 with the filter's spam
    threshold at 5.0, the score every integration compares with).
``SYMBOLS``
    the rule names: ``SPAMKIT_SPAM|HAM|UNSURE`` and the P(spam) band (``SPAMKIT_P99_100``).
``REPORT``, ``REPORT_IFSPAM``
    a text report: the verdict, P(spam), the filter, and the tokens that weighed most.
``PROCESS``, ``HEADERS``
    the message (or its header block) with SpamAssassin's fields (``X-Spam-Flag: YES``,
    ``X-Spam-Level``, ``X-Spam-Status: Yes, score=... required=5.0 tests=...``) appended to
    the header; fields of those names from elsewhere are kept as ``X-Spam-Prev-...``
    (:func:`spamkit.mailfilter.tags.add_spamassassin_fields`).
``PING``, ``SKIP``
    ``PONG``; nothing.
``TELL``
    learning (with ``--allow-tell``, as spamd): ``Message-class: spam|ham`` with ``Set: local``
    learns the message, with ``Remove: local`` forgets it, into the user's filter file under
    :func:`spamkit.durable.filter_lock`; the servers' other processes reload the file.

``User:`` chooses a per-user filter, ``--user-models DIR/USER.spamkit``, when the file exists
(and the default filter otherwise; a ``TELL`` for a user without a file starts one from the
default filter). ``Compress: zlib`` bodies are inflated, within the size limit.

Requests are read under the limits of :class:`spamkit.server.Resident` (a thread per
connection, a deadline for the whole request, a size limit and a memory budget for all
requests together, a maximum number of clients) and scored by its workers. Errors are
answered with spamd's codes (``EX_PROTOCOL``, ``EX_DATAERR``, ``EX_TEMPFAIL``, ...), on which
``spamc`` delivers the message unchanged.

Protocol: SpamAssassin's ``spamd/PROTOCOL`` (Apache SpamAssassin 3.4/4.0); checked against the
real ``spamc`` 4.0 and the ``aiospamc`` client in ``tests/test_spamd.py``.
"""

from __future__ import annotations

import os
import re
import socket
import socketserver
import time
import zlib
from dataclasses import dataclass, field

from .mailfilter.tags import add_spamassassin_fields, points, rule_names, spamassassin_fields, REQUIRED_POINTS
from .message import header_end
from .server import Deadline, PrivateUnixServer, Resident, log, worker_state

#: spamd's exit codes (sysexits.h) used in answers
EX_OK, EX_USAGE, EX_DATAERR, EX_NOUSER, EX_UNAVAILABLE, EX_SOFTWARE, EX_TEMPFAIL, EX_PROTOCOL, EX_NOPERM = (
    0, 64, 65, 67, 69, 70, 75, 76, 77)
CODE_NAMES = {EX_OK: "EX_OK", EX_USAGE: "EX_USAGE", EX_DATAERR: "EX_DATAERR", EX_NOUSER: "EX_NOUSER",
              EX_UNAVAILABLE: "EX_UNAVAILABLE", EX_SOFTWARE: "EX_SOFTWARE", EX_TEMPFAIL: "EX_TEMPFAIL",
              EX_PROTOCOL: "EX_PROTOCOL", EX_NOPERM: "EX_NOPERM"}
#: commands that carry a message
SCORING = ("CHECK", "SYMBOLS", "REPORT", "REPORT_IFSPAM", "PROCESS", "HEADERS")
COMMANDS = SCORING + ("PING", "SKIP", "TELL")
#: the request line and header fields together (real requests: under 200 bytes)
MAX_HEAD_BYTES = 16 << 10
#: user names a per-user filter may be chosen by (no path separators, no leading dot)
_USER = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._@+-]{0,63}\Z")
_REQUEST_LINE = re.compile(r"([A-Z_]+) SPAMC/(\d+)\.(\d+)\Z")
#: the blank line that ends a request's header fields
_HEAD_END = re.compile(rb"\r?\n\r?\n")


class ProtocolError(Exception):
    """A request spamd would refuse: answered with ``code`` and the text."""

    def __init__(self, code: int, text: str):
        super().__init__(code, text)             # both, so that it pickles back from a worker
        self.code, self.text = code, text

    def __str__(self) -> str:
        return self.text


@dataclass
class Request:
    command: str
    version: str
    headers: dict = field(default_factory=dict)      # lower-case name -> value
    body: bytes = b""


def answer(code: int, text: str | None = None, headers=(), body: bytes | None = None, version: str = "1.1") -> bytes:
    """One spamd answer: ``SPAMD/<version> <code> <text>``, the header fields, a blank line, the body."""
    lines = [f"SPAMD/{version} {code} {text or CODE_NAMES.get(code, 'EX_OK')}"]
    if body is not None:
        lines.append(f"Content-length: {len(body)}")
    lines += [f"{name}: {value}" for name, value in headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8") + (body or b"")


def error(code: int, text: str) -> bytes:
    return f"SPAMD/1.0 {code} {text}\r\n\r\n".encode("utf-8", "replace")


def _recv(sock, deadline: float, size: int = 65536) -> bytes:
    left = deadline - time.monotonic()
    if left <= 0:
        raise Deadline("timed out")
    sock.settimeout(left)
    try:
        chunk = sock.recv(size)
    except (socket.timeout, OSError) as exc:
        raise Deadline(str(exc)) from None
    return chunk


def read_head(sock, deadline: float) -> tuple[Request, bytes]:
    """The request line and header fields, and the bytes of the body read with them."""
    data = b""
    while True:
        m = _HEAD_END.search(data)
        if m is not None:
            head, rest = data[:m.start()], data[m.end():]
            break
        if len(data) > MAX_HEAD_BYTES:
            raise ProtocolError(EX_PROTOCOL, f"request header over {MAX_HEAD_BYTES} bytes")
        chunk = _recv(sock, deadline)
        if not chunk:
            if data.strip():
                head, rest = data.strip(), b""            # a client that closed after the request line
                break
            raise Deadline("the client closed the connection")
        data += chunk
    lines = head.decode("latin-1").replace("\r\n", "\n").split("\n")
    m = _REQUEST_LINE.match(lines[0].strip())
    if m is None:
        raise ProtocolError(EX_PROTOCOL, f"bad request line {lines[0][:80]!r}")
    command, version = m.group(1), f"{m.group(2)}.{m.group(3)}"
    if command not in COMMANDS:
        raise ProtocolError(EX_PROTOCOL, f"unknown command {command}")
    headers = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep or not name.strip():
            raise ProtocolError(EX_PROTOCOL, f"bad header line: {line[:80]}")
        headers[name.strip().lower()] = value.strip()
    return Request(command, version, headers), rest


def read_body(sock, request: Request, rest: bytes, deadline: float, max_size: int) -> bytes:
    """The message of a request: Content-length bytes (or up to the end of the stream), inflated
    if ``Compress: zlib``; larger than ``max_size`` raises :class:`ProtocolError` (after reading
    it, so the client gets the answer)."""
    length = request.headers.get("content-length")
    if length is not None:
        try:
            length = int(length)
        except ValueError:
            raise ProtocolError(EX_PROTOCOL, f"Content-length {length!r} is not a number") from None
        if length < 0:
            raise ProtocolError(EX_PROTOCOL, "negative Content-length")
    chunks, got, too_big = [rest], len(rest), False
    while length is None or got < length:
        chunk = _recv(sock, deadline, min(1 << 20, (length - got) if length is not None else 1 << 20))
        if not chunk:
            if length is None:
                break
            raise Deadline("the client closed the connection")
        got += len(chunk)
        if got > max_size:
            too_big = True
            chunks = []                                   # read and drop the rest
        else:
            chunks.append(chunk)
    if too_big or got > max_size:
        raise ProtocolError(EX_DATAERR, f"message of {got} bytes is over the server's limit of {max_size} "
                                        "(spamkit serve --max-size)")
    body = b"".join(chunks)[:length] if length is not None else b"".join(chunks)
    compress = request.headers.get("compress")
    if compress:
        if compress.lower() != "zlib":
            raise ProtocolError(EX_PROTOCOL, f"unknown compression {compress!r}")
        inflate = zlib.decompressobj()
        try:
            body = inflate.decompress(body, max_size + 1)
        except zlib.error as exc:
            raise ProtocolError(EX_DATAERR, f"damaged zlib body ({exc})") from None
        if len(body) > max_size or inflate.unconsumed_tail:
            raise ProtocolError(EX_DATAERR, f"message inflates to over the server's limit of {max_size}")
    return body


# ----------------------------------------------------------------------------- the jobs (in workers)

def user_filter(user: str | None) -> str:
    """The filter file of a ``User:``: ``USER.spamkit`` in the per-user folder when it exists,
    else the default filter."""
    state = worker_state()
    folder = state.get("user_models")
    if folder and user and _USER.match(user):
        path = os.path.join(folder, f"{user}.spamkit")
        if os.path.isfile(path):
            return path
    return state["model"]


def score_job(user: str | None, raw: bytes, explain: bool) -> dict:
    """What a scoring command needs: verdict, P(spam), the spam threshold, the filter's id and,
    for a report, the tokens that weighed most."""
    path = user_filter(user)
    spam_filter = worker_state()["cache"].get(path)
    verdict, p = spam_filter.verdict(raw)
    threshold = getattr(spam_filter, "points_threshold", None)
    if threshold is None:
        threshold = spam_filter.spam_threshold()
    out = {"verdict": verdict, "p": p, "threshold": threshold, "model_id": spam_filter.model_id}
    if explain:
        try:
            out["explain"] = spam_filter.explain(raw, n=8)
        except Exception as exc:                   # noqa: BLE001 -- the report is extra; the verdict stands
            out["explain"] = {"error": f"{type(exc).__name__}: {exc}"}
    return out


def tell_job(user: str | None, raw: bytes, label: str | None, learn: bool, forget: bool) -> dict:
    """Forget (``forget``) and/or learn (``learn``, as ``label``) one message in the user's filter
    file, under its lock; a user without a file of their own gets one, started from the default
    filter. Returns the answer's ``DidRemove``/``DidSet`` fields for what changed (nothing, for a
    message already learned so, or never learned: spamc then says "already un/learned")."""
    from .corpus.base import LabelledMessage
    from .durable import filter_lock
    from .jobs.learn import learn_messages
    from .message import message_key
    state = worker_state()
    target = state["model"]
    folder = state.get("user_models")
    if folder and user:
        if not _USER.match(user):
            raise ProtocolError(EX_NOUSER, f"user name {user[:64]!r} cannot name a filter file")
        target = os.path.join(folder, f"{user}.spamkit")
    done = {}
    with filter_lock(target):
        source = target if os.path.isfile(target) else state["model"]
        spam_filter = state["load_for_learning"](source)
        if forget:
            known = spam_filter.learned.get(message_key(raw))
            if known is not None:
                report = learn_messages(spam_filter, [LabelledMessage("tell", known, raw, "spamd TELL")], forget=True)
                if sum(report.forgotten.values()):
                    done["DidRemove"] = "local"
        if learn:
            report = learn_messages(spam_filter, [LabelledMessage("tell", label, raw, "spamd TELL")])
            if sum(report.learned.values()):
                done["DidSet"] = "local"
        if done:
            spam_filter.save(target)
    return done


# ----------------------------------------------------------------------------- formatting

def report_text(result: dict, host: str) -> str:
    """The body of a REPORT: SpamAssassin's layout (points, rule, description), then the tokens."""
    score = points(result["verdict"], result["p"], result["threshold"])
    lines = [f"spamkit on {host} judged this message {result['verdict']}: P(spam) = {result['p']:.6f} "
             f"(spam above {result['threshold']:.4f}), filter {result['model_id']}.", "",
             f"Content analysis details:   ({score:.1f} points, {REQUIRED_POINTS:.1f} required)", "",
             " pts rule name              description",
             "---- ---------------------- --------------------------------------------------"]
    rules = rule_names(result["verdict"], result["p"])
    lines.append(f"{score:4.1f} {rules[0]:<22} the filter's decision: {result['verdict']}")
    lines.append(f" 0.0 {rules[1]:<22} P(spam) = {result['p']:.6f}")
    explained = result.get("explain") or {}
    for title, key in (("Tokens towards spam", "towards"), ("Tokens towards ham", "against")):
        pairs = explained.get(key) or []
        if pairs:
            lines += ["", f"{title} (share of the log-odds):"]
            lines += [f"  {share:+8.3f}  {token}" for token, share in pairs]
    return "\n".join(lines) + "\n"


def scoring_answer(request: Request, result: dict, raw: bytes, host: str) -> bytes:
    verdict, p = result["verdict"], result["p"]
    score = points(verdict, p, result["threshold"])
    spam = verdict == "spam"
    headers = [("Spam", f"{'True' if spam else 'False'} ; {score:.1f} / {REQUIRED_POINTS:.1f}")]
    command = request.command
    if command == "CHECK":
        return answer(EX_OK, headers=headers)
    if command == "SYMBOLS":
        return answer(EX_OK, headers=headers, body=",".join(rule_names(verdict, p)).encode())
    if command in ("REPORT", "REPORT_IFSPAM"):
        body = report_text(result, host).encode("utf-8") if spam or command == "REPORT" else b""
        return answer(EX_OK, headers=headers, body=body)
    processed = add_spamassassin_fields(raw, spamassassin_fields(verdict, p, result["threshold"], result["model_id"],
                                                                 host))
    if command == "HEADERS":
        processed = processed[:header_end(processed)]
        processed += b"\r\n" if processed.endswith(b"\r\n") else b"\n"
    return answer(EX_OK, headers=headers, body=processed)


class SpamdHandler(socketserver.BaseRequestHandler):
    def handle(self):
        server = self.server
        deadline = time.monotonic() + server.timeout
        held = 0
        try:
            try:
                request, rest = read_head(self.request, deadline)
                if request.command == "SKIP":
                    return
                if request.command == "PING":
                    return self._send(answer(EX_OK, "PONG", version="1.5"))
                declared = request.headers.get("content-length", "").strip()
                held = min(int(declared), server.max_size) if declared.isdigit() else server.max_size
                if not server.budget.acquire(held, deadline):
                    held = 0
                    raise ProtocolError(EX_TEMPFAIL, "server busy: too many bytes in flight; try again")
                raw = read_body(self.request, request, rest, deadline, server.max_size)
                self._send(self.respond(request, raw))
            except ProtocolError as exc:
                self._send(error(exc.code, str(exc)))
            finally:
                if held:
                    server.budget.release(held)
        except Deadline:
            return                                        # the client went away or sent too slowly

    def respond(self, request: Request, raw: bytes) -> bytes:
        server = self.server
        user = request.headers.get("user")
        try:
            if request.command == "TELL":
                return self._tell(request, user, raw)
            result = server.workers.run(score_job, user, raw, request.command.startswith("REPORT"))
        except ProtocolError:
            raise
        except TimeoutError as exc:
            log(f"{exc}; answered EX_TEMPFAIL")
            raise ProtocolError(EX_TEMPFAIL, str(exc)) from None
        except Exception as exc:                          # noqa: BLE001 -- spamc then delivers unchanged
            log(f"{type(exc).__name__}: {exc}; answered EX_SOFTWARE")
            raise ProtocolError(EX_SOFTWARE, f"{type(exc).__name__}: {exc}") from None
        return scoring_answer(request, result, raw, server.host)

    def _tell(self, request: Request, user, raw: bytes) -> bytes:
        if not self.server.allow_tell:
            raise ProtocolError(EX_UNAVAILABLE, "TELL commands are not enabled, start spamkit serve with --allow-tell")
        label = request.headers.get("message-class", "").strip().lower() or None
        sets = {w.strip().lower() for w in request.headers.get("set", "").split(",") if w.strip()}
        removes = {w.strip().lower() for w in request.headers.get("remove", "").split(",") if w.strip()}
        if not sets and not removes:
            raise ProtocolError(EX_PROTOCOL, "TELL needs Set: local or Remove: local")
        if sets & removes:
            raise ProtocolError(EX_PROTOCOL, "TELL cannot set and remove the same place")
        if sets and label not in ("spam", "ham"):
            raise ProtocolError(EX_PROTOCOL, "TELL with Set needs Message-class: spam or ham")
        done = self.server.workers.run(tell_job, user, raw, label, "local" in sets, "local" in removes)
        return answer(EX_OK, headers=sorted(done.items()), body=b"")

    def _send(self, data: bytes) -> None:
        self.request.settimeout(self.server.timeout)
        try:
            self.request.sendall(data)
        except OSError:
            pass                                          # the client went away; it still holds its message


class _Spamd(Resident):
    host = socket.gethostname()

    def setup_spamd(self, allow_tell: bool) -> None:
        self.allow_tell = allow_tell

    def busy(self, request) -> None:
        try:
            request.settimeout(1.0)
            request.sendall(error(EX_TEMPFAIL, "server busy: too many clients at once; try again"))
        except OSError:
            pass


class SpamdServer(_Spamd, socketserver.ThreadingMixIn, socketserver.TCPServer):
    """spamd's protocol on TCP (``HOST:PORT``; no authentication: bind it to loopback or a trusted
    network, as spamd's ``--allowed-ips`` would)."""

    def __init__(self, address: tuple[str, int], workers, *, max_size: int, memory_budget: int, timeout: float,
                 max_clients: int, allow_tell: bool = False):
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        self.setup_resident(workers, max_size, memory_budget, timeout, max_clients)
        self.setup_spamd(allow_tell)
        super().__init__(address, SpamdHandler)


class SpamdUnixServer(_Spamd, PrivateUnixServer):
    """spamd's protocol on a Unix-domain socket (``spamc -U PATH``)."""

    def __init__(self, path, workers, *, max_size: int, memory_budget: int, timeout: float, max_clients: int,
                 allow_tell: bool = False, socket_mode: int = 0o600):
        self.setup_resident(workers, max_size, memory_budget, timeout, max_clients)
        self.setup_spamd(allow_tell)
        super().__init__(path, SpamdHandler, socket_mode)


def parse_address(text: str) -> tuple[str, int]:
    """``HOST:PORT``, ``[IPv6]:PORT`` or ``PORT`` (on 127.0.0.1).

    >>> parse_address("127.0.0.1:783"), parse_address("[::1]:7830"), parse_address("7830")
    (('127.0.0.1', 783), ('::1', 7830), ('127.0.0.1', 7830))
    """
    host, _, port = text.rpartition(":")
    host = host.strip("[]") or "127.0.0.1"
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{text!r}: expected HOST:PORT, e.g. 127.0.0.1:783")
    return host, int(port)


__all__ = ["SpamdServer", "SpamdUnixServer", "parse_address", "score_job", "tell_job"]
