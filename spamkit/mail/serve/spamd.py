"""SpamAssassin's spamd protocol (SPAMC/1.5), so that ``spamc`` and everything built on it
(Postfix, Exim, procmail, maildrop, Dovecot Sieve, amavis) use a spamkit filter unchanged.

``spamkit serve MODEL --spamd 127.0.0.1:783`` (or ``--spamd-socket PATH``) answers:

``CHECK``
    ``Spam: True ; 7.5 / 5.0``: the verdict and SpamAssassin-style points
    (:func:`spamkit.mail.tags.points`: P(spam) mapped to 0-10 with the filter's spam
    threshold at 5.0, the score every integration compares with).
``SYMBOLS``
    the rule names: ``SPAMKIT_SPAM|HAM|UNSURE`` and the P(spam) band (``SPAMKIT_P99_100``).
``REPORT``, ``REPORT_IFSPAM``
    a text report: the verdict, P(spam), the filter, and the tokens that weighed most.
``PROCESS``, ``HEADERS``
    the message (or its header block) with SpamAssassin's fields (``X-Spam-Flag: YES``,
    ``X-Spam-Level``, ``X-Spam-Status: Yes, score=... required=5.0 tests=...``) appended to
    the header; fields of those names from elsewhere are kept as ``X-Spam-Prev-...``
    (:func:`spamkit.mail.tags.add_spamassassin_fields`).
``PING``, ``SKIP``
    ``PONG``; nothing.
``TELL``
    learning (with ``--allow-tell``, as spamd): ``Message-class: spam|ham`` with ``Set: local``
    learns the message, with ``Remove: local`` forgets it, into the user's filter file under
    :func:`spamkit.common.durable.filter_lock`; the servers' other processes reload the file.

``User:`` chooses a per-user filter, ``--user-models DIR/USER.spamkit``, when the file exists
(and the default filter otherwise; a ``TELL`` for a user without a file starts one from the
default filter). ``Compress: zlib`` bodies are inflated, within the size limit.

Requests are read by :class:`spamkit.mail.serve.server.ServeLoop` (one event loop for every connection,
a deadline for the whole request, a size limit and a memory budget for all requests together,
a maximum number of clients) through :class:`SpamdProtocol`, and answered by the workers
(:func:`spamd_job` builds the whole answer). Errors are answered with spamd's codes
(``EX_PROTOCOL``, ``EX_DATAERR``, ``EX_TEMPFAIL``, ...), on which ``spamc`` delivers the
message unchanged.

Protocol: SpamAssassin's ``spamd/PROTOCOL`` (Apache SpamAssassin 3.4/4.0); checked against the
real ``spamc`` 4.0 and the ``aiospamc`` client in ``tests/test_spamd.py``.
"""

from __future__ import annotations

import os
import re
import socket
import time

from ..tags import add_spamassassin_fields, points, rule_names, spamassassin_fields, REQUIRED_POINTS
from ...parse.markup import header_end
from .pool import Reply, Work, log, worker_state
from .server import CLOSE
from .spamdwire import (EX_OK, EX_DATAERR, EX_NOUSER, EX_UNAVAILABLE, EX_SOFTWARE, EX_TEMPFAIL, EX_PROTOCOL, SCORING, MAX_HEAD_BYTES, HEAD_END, ProtocolError, Request, answer, error, parse_head, content_length, inflate)

#: user names a per-user filter may be chosen by (no path separators, no leading dot)
_USER = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._@+-]{0,63}\Z")


# ----------------------------------------------------------------------------- the jobs (in workers)

#: the users a worker has said the site filter answers for (said once per user and worker)
_SITE_FILTER_USERS: set = set()


def user_filter(user: str | None):
    """The filter of a ``User:``: ``USER.spamkit`` in the per-user folder when it exists (a
    filter of the user's own), else ``(MODEL, USER.taught)`` when the user taught messages over
    the site filter (:mod:`spamkit.mail.serve.taught`), else the site filter MODEL -- as spamd answers a
    user without preferences of their own with the site's. With a per-user folder, a user who
    has neither (a typing error in ``spamc -u``, a name no file can have) is logged, once per
    user, so that the answer is never silently another filter than the one meant."""
    state = worker_state()
    folder = state.get("user_models")
    if folder and user and _USER.match(user):
        path = os.path.join(folder, f"{user}.spamkit")
        if os.path.isfile(path):
            return path
        taught = os.path.join(folder, f"{user}.taught")
        if os.path.isfile(taught):
            return (state["model"], taught)
    if folder and user and user not in _SITE_FILTER_USERS and len(_SITE_FILTER_USERS) < 1000:
        _SITE_FILTER_USERS.add(user)
        why = (f"has no {user}.spamkit or {user}.taught in {folder}" if _USER.match(user)
               else "cannot name a filter file")
        log(f"user {user[:64]!r} {why}: the site filter {state['model']} answers for this user")
    return state["model"]


def score_job(user: str | None, raw: bytes, explain: bool) -> dict:
    """What a scoring command needs: verdict, P(spam), the spam threshold, the filter's id and,
    for a report, the tokens that weighed most."""
    return score_jobs(user_filter(user), [raw], [explain])[0]


def score_jobs(path: str, raws: list, explains: list) -> list:
    """:func:`score_job` for several messages of one filter file, scored together (one feature
    matrix, one pass of the model: the same numbers as one by one) and decided in order."""
    spam_filter = worker_state()["cache"].get(path)
    proba, familiarity = spam_filter.score(raws)
    threshold = getattr(spam_filter, "points_threshold", None)
    if threshold is None:
        threshold = spam_filter.spam_threshold()
    out = []
    for raw, row, known, explain in zip(raws, proba, familiarity, explains):
        verdict, p = spam_filter.verdict_from(row, known, alone=True)
        result = {"verdict": verdict, "p": p, "threshold": threshold, "model_id": spam_filter.model_id}
        if explain:
            try:
                result["explain"] = spam_filter.explain(raw, n=8)
            except Exception as exc:               # noqa: BLE001 -- the report is extra; the verdict stands
                result["explain"] = {"error": f"{type(exc).__name__}: {exc}"}
        out.append(result)
    return out


def tell_job(user: str | None, raw: bytes, label: str | None, learn: bool, forget: bool) -> dict:
    """Forget (``forget``) and/or learn (``learn``, as ``label``) one message in the user's filter
    file, under its lock; a user without a filter file of their own has the message added to
    their taught messages (``USER.taught``, :func:`_tell_taught`), and without ``User:`` (or
    ``--user-models``) the site filter learns it. Returns the answer's ``DidRemove``/``DidSet`` fields for what changed (nothing, for a
    message already learned so, or never learned: spamc then says "already un/learned")."""
    from ...corpus.base import LabelledMessage
    from ...common.durable import filter_lock
    from ...jobs.learn import learn_messages
    from ...parse.message import message_key
    state = worker_state()
    target = state["model"]
    folder = state.get("user_models")
    if folder and user:
        if not _USER.match(user):
            raise ProtocolError(EX_NOUSER, f"user name {user[:64]!r} cannot name a filter file")
        target = os.path.join(folder, f"{user}.spamkit")
        if not os.path.isfile(target):                # what the user teaches goes over the site filter
            return _tell_taught(os.path.join(folder, f"{user}.taught"), raw, label, learn, forget, state)
    done = {}
    with filter_lock(target):
        spam_filter = state["load_for_learning"](target)
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


def _tell_taught(path: str, raw: bytes, label: str | None, learn: bool, forget: bool, state: dict) -> dict:
    """:func:`tell_job` for a user's taught messages (:mod:`spamkit.mail.serve.taught`): the message added,
    relabelled or removed, the newest :data:`~spamkit.mail.serve.taught.MAX_MESSAGES` kept; a new file only
    within the folder's quota."""
    from ...common.durable import filter_lock
    from ...common.errors import ModelFormatError
    from ...parse.message import message_key
    from .taught import bounded, read_taught, write_taught
    key = message_key(raw)
    done: dict[str, str] = {}
    if not os.path.isfile(path):
        if not learn:
            return done
        _room_for_a_user(os.path.dirname(path), state.get("user_quota"))
    with filter_lock(path):
        try:
            entries = read_taught(path)
        except ModelFormatError as exc:
            raise ProtocolError(EX_SOFTWARE, f"{exc}; not learned") from None
        kept: list[tuple[str | None, bytes]] = [(old, body) for old, body in entries if message_key(body) != key]
        previous = next((old for old, body in entries if message_key(body) == key), None)
        if forget and previous is not None:
            done["DidRemove"] = "local"
        if learn and label is not None and (previous != label or forget):
            kept.append((label, raw))
            done["DidSet"] = "local"
        elif learn and previous == label:
            kept.append((previous, raw))              # already taught so: unchanged
        if done:
            write_taught(path, bounded(kept))
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


def spamd_job(request: Request, host: str, max_size: int) -> bytes:
    """The whole answer to one request with its message (in a worker): inflated (``Compress:
    zlib``, within ``max_size``), then scored, or learned from (``TELL``); a refused request or a
    failure is answered with spamd's code, on which ``spamc`` delivers the message unchanged."""
    try:
        request.body = inflate(request, request.body, max_size)
        if request.command == "TELL":
            return _tell(request)
        result = score_job(request.headers.get("user"), request.body, request.command.startswith("REPORT"))
        return scoring_answer(request, result, request.body, host)
    except ProtocolError as exc:
        return error(exc.code, str(exc))
    except Exception as exc:                          # noqa: BLE001 -- spamc then delivers unchanged
        log(f"{type(exc).__name__}: {exc}; answered EX_SOFTWARE")
        return error(EX_SOFTWARE, f"{type(exc).__name__}: {exc}")


def spamd_batch(items: list) -> list:
    """:func:`spamd_job` for several requests (``(request, host, max_size)`` each), the same
    answers: the messages of each filter file are scored together (:func:`score_jobs`), which
    a worker does in about three quarters of the time per message for batches of two to four
    20 KB messages; ``TELL`` and refused requests are answered one by one. The requests are not
    changed (should this fail, :func:`spamkit.mail.serve.pool.run_batch` answers each with
    :func:`spamd_job`)."""
    answers: list = [None] * len(items)
    groups: dict = {}                                  # filter file -> [(position, inflated body)]
    for i, (request, host, max_size) in enumerate(items):
        if request.command not in SCORING:
            answers[i] = spamd_job(request, host, max_size)
            continue
        try:
            body = inflate(request, request.body, max_size)
            path = user_filter(request.headers.get("user"))
        except ProtocolError as exc:
            answers[i] = error(exc.code, str(exc))
            continue
        groups.setdefault(path, []).append((i, body))
    for path, members in groups.items():
        bodies = [body for _, body in members]
        results = score_jobs(path, bodies, [items[i][0].command.startswith("REPORT") for i, _ in members])
        for (i, body), result in zip(members, results):
            request, host, _ = items[i]
            answers[i] = scoring_answer(request, result, body, host)
    return answers


#: when this worker last logged a refused TELL (one line a minute at most)
_SAID = {"tell": -1e9, "quota": -1e9}


def _say_once_a_minute(what: str, text: str) -> None:
    now = time.monotonic()
    if now - _SAID[what] >= 60.0:
        _SAID[what] = now
        log(text)


def _room_for_a_user(folder: str, quota) -> None:
    """Refuse to make a new user's filter file past the quota: ``(files, bytes)`` of the folder
    (TELL with a fresh ``User:`` each time wrote a 4.1 MB file a user, 82 MB in 4.3 s)."""
    if quota is None:
        return
    max_files, max_bytes = quota
    files = size = 0
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.name.endswith((".spamkit", ".taught")) and entry.is_file(follow_symlinks=False):
                files += 1
                size += entry.stat(follow_symlinks=False).st_size
    if files >= max_files or size >= max_bytes:
        text = (f"no room for a new user's filter in {folder}: {files} filters of {size} bytes "
                f"(--max-user-filters {max_files}, --user-models-quota {max_bytes}); not learned")
        _say_once_a_minute("quota", text)
        raise ProtocolError(EX_UNAVAILABLE, text)


def _tell(request: Request) -> bytes:
    if not worker_state().get("allow_tell"):
        # spamc -L prints "already un/learned" whatever the answer's code (spamc 4.0, checked with
        # codes 0, 69 and 76): the server's log is where the refusal shows
        _say_once_a_minute("tell", "refused a TELL: spamkit serve runs without --allow-tell")
        raise ProtocolError(EX_UNAVAILABLE, "TELL commands are not enabled, start spamkit serve with --allow-tell")
    headers = request.headers
    label = headers.get("message-class", "").strip().lower() or None
    sets = {w.strip().lower() for w in headers.get("set", "").split(",") if w.strip()}
    removes = {w.strip().lower() for w in headers.get("remove", "").split(",") if w.strip()}
    if not sets and not removes:
        raise ProtocolError(EX_PROTOCOL, "TELL needs Set: local or Remove: local")
    if sets & removes:
        raise ProtocolError(EX_PROTOCOL, "TELL cannot set and remove the same place")
    if sets and label not in ("spam", "ham"):
        raise ProtocolError(EX_PROTOCOL, "TELL with Set needs Message-class: spam or ham")
    done = tell_job(headers.get("user"), request.body, label, "local" in sets, "local" in removes)
    return answer(EX_OK, headers=sorted(done.items()), body=b"")


def _fallback(kind: str, text: str) -> bytes:
    """The answer when the filter overran (EX_TEMPFAIL) or its worker died (EX_SOFTWARE)."""
    return error(EX_TEMPFAIL if kind == "timeout" else EX_SOFTWARE, text)


class SpamdProtocol:
    """SpamAssassin's protocol, read as the bytes arrive (:class:`spamkit.mail.serve.server.ServeLoop`):
    the request line and header fields (at most :data:`MAX_HEAD_BYTES`), then ``Content-length``
    bytes of message (or up to the end of the stream), at most ``max_size`` — a bigger one is
    read to its end and answered ``EX_DATAERR``; the memory budget is taken for the declared
    length before the body is read."""

    host = socket.gethostname()

    def __init__(self, max_size: int):
        self.max_size = max_size

    @staticmethod
    def busy() -> bytes:
        return error(EX_TEMPFAIL, "server busy: too many clients at once; try again")

    @staticmethod
    def too_many_bytes() -> bytes:
        return error(EX_TEMPFAIL, "server busy: too many bytes in flight; try again")

    def step(self, conn):
        try:
            return self._step(conn)
        except ProtocolError as exc:
            return Reply(error(exc.code, str(exc)))

    def _step(self, conn):
        ctx, buf = conn.ctx, conn.buf
        if "request" not in ctx:
            m = HEAD_END.search(buf)
            if m is not None:
                head, rest = bytes(buf[:m.start()]), buf[m.end():]
            elif len(buf) > MAX_HEAD_BYTES:
                raise ProtocolError(EX_PROTOCOL, f"request header over {MAX_HEAD_BYTES} bytes")
            elif conn.eof and buf.strip():
                head, rest = bytes(buf).strip(), bytearray()     # a client that closed after the request line
            else:
                return None
            request = parse_head(head)
            conn.buf = buf = rest
            ctx["request"] = request
            if request.command == "SKIP":
                return CLOSE
            if request.command == "PING":
                return Reply(answer(EX_OK, "PONG", version="1.5"))
            length = ctx["length"] = content_length(request)
            ctx["got"], ctx["dropping"] = 0, False
        length = ctx["length"]
        if not ctx["dropping"]:
            if length is not None and length <= self.max_size and len(buf) >= length:
                body = bytes(buf[:length])
            elif length is None and conn.eof and len(buf) <= self.max_size:
                body = bytes(buf)
            elif len(buf) > self.max_size:                     # read and drop the rest, then refuse
                ctx["dropping"] = True
            else:
                return None                                      # (a close before the end: the loop hangs up)
        if ctx["dropping"]:
            ctx["got"] += len(buf)
            buf.clear()
            if length is not None and ctx["got"] < length or length is None and not conn.eof:
                return None
            raise ProtocolError(EX_DATAERR, f"message of {ctx['got']} bytes is over the server's limit of "
                                            f"{self.max_size} (spamkit serve --max-size)")
        request = ctx["request"]
        request.body = body                        # inflated in the worker (spamd_job), not in the loop
        return Work(spamd_job, (request, self.host, self.max_size), _fallback, spamd_batch)


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


__all__ = ["SpamdProtocol", "parse_address", "score_job", "score_jobs", "spamd_batch", "spamd_job", "tell_job"]
