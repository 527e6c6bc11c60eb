"""Pipe mode's promise, kept in one place: the message always comes out.

A mail delivery agent (procmail, maildrop, Postfix ``pipe``, Sieve ``execute``) hands a
filter one message on standard input and delivers whatever comes out on standard
output. If the filter dies half way, the mail is gone. bogofilter's contract, which
spamkit keeps: exit 0 spam, 1 ham, 2 unsure, and 3 on any error, with the message
written out unchanged.

:func:`guard` runs the work after the message has been read into memory, and turns
*anything* that goes wrong — an exception from the parser or the model (including
``RecursionError`` and ``MemoryError``), a damaged filter file, a failed import, a usage
error, ``SIGTERM``/``SIGINT``/``SIGHUP``/``SIGALRM``/``SIGXCPU`` — into "write the
original bytes, exit 3". Only ``SIGKILL`` (which nothing can catch) and a failure to
write standard output itself can still lose a message; a delivery agent treats a
non-zero exit without output as a temporary failure and retries, so even then the
mail stays in the queue.

This module imports only the standard library, so it works even when numpy,
scikit-learn or spamkit itself cannot be imported.
"""

from __future__ import annotations

import signal
import sys

#: the exit statuses of pipe mode (``spamkit filter MODEL -``, ``spamkit-pipe``), as bogofilter's:
#: 0 spam, 1 ham, 2 unsure, 3 error; and 4, the resident filter refusing a message (too big,
#: too busy: ``spamkit-pipe`` then passes it through untouched). The ``spamkit`` command's own
#: statuses (success, error, usage, interrupted) are :class:`spamkit.cli.status.ExitStatus`.
EXIT_SPAM, EXIT_HAM, EXIT_UNSURE, EXIT_ERROR, EXIT_REFUSED = 0, 1, 2, 3, 4
#: a verdict's pipe-mode status
VERDICT_STATUS = {"spam": EXIT_SPAM, "ham": EXIT_HAM, "unsure": EXIT_UNSURE}
#: the statuses a successful pipe run may end with
VERDICT_STATUSES = frozenset(VERDICT_STATUS.values())
#: signals that stop the work and pass the message through (SIGKILL cannot be caught)
CAUGHT_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGINT", "SIGHUP", "SIGALRM", "SIGXCPU")
                       if hasattr(signal, name))


class Signalled(BaseException):
    """Raised from a signal handler so that the work unwinds and the message goes out."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _raise_signalled(signum, frame):
    raise Signalled(signum)


def _hold_signals() -> None:
    """Block the caught signals: from here on the output is committed and written in full."""
    signal.pthread_sigmask(signal.SIG_BLOCK, CAUGHT_SIGNALS)
    for signum in CAUGHT_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)


def write_out(data: bytes) -> None:
    """Write ``data`` to standard output in full."""
    out = sys.stdout.buffer
    out.write(data)
    out.flush()


def guard(raw: bytes, work, prog: str, *, restore_signals: bool = False) -> int:
    """Run ``work(raw) -> (status, output)`` and deliver its output, or ``raw`` on any failure.

    ``work`` returns the bytes to deliver and the exit status; a status outside
    0/1/2, empty output, any exception or a caught signal all deliver ``raw`` unchanged
    with status 3 and one line on standard error naming what went wrong; so does an empty
    ``raw`` (blank lines at most), which ``work`` is not asked to judge. ``(3, raw)``
    means the work passed the message through itself (and said why).

    Once the output is committed the caught signals are blocked, so a signal cannot
    cut the write short. A process that is about to exit leaves them blocked (a
    ``SIGTERM`` after the verdict must not turn a delivered message into a killed
    filter, which the delivery agent would retry); ``restore_signals=True`` restores
    the previous handlers and mask for a caller that goes on.
    """
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, ())
    previous = {signum: signal.signal(signum, _raise_signalled) for signum in CAUGHT_SIGNALS}
    try:
        status, output, reason = _run(raw, work)
    except Signalled as exc:                # a signal while a failure was being handled
        _hold_signals()
        status, output, reason = EXIT_ERROR, raw, f"stopped by {exc}"
    try:
        write_out(output)
    finally:
        if reason:
            _warn(prog, reason)
        if restore_signals:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    return status


def _run(raw: bytes, work) -> tuple[int, bytes, str | None]:
    if not raw.strip():                     # nothing to judge: what came in goes out, as an error
        return EXIT_ERROR, raw, "standard input is empty, not a message"
    try:
        status, output = work(raw)
        _hold_signals()
        if status == EXIT_ERROR and output == raw:
            return status, output, None
        if status not in VERDICT_STATUSES or not output:
            return EXIT_ERROR, raw, f"the filter ended with status {status} and no verdict"
        return status, output, None
    except BaseException as exc:            # noqa: BLE001 - the one place where everything is caught
        _hold_signals()
        reason = f"stopped by {exc}" if isinstance(exc, Signalled) else f"{type(exc).__name__}: {exc}"
        return EXIT_ERROR, raw, reason


def _warn(prog: str, reason: str) -> None:
    try:
        print(f"{prog}: {reason[:500]}; message passed through untagged", file=sys.stderr)
    except BaseException:                   # noqa: BLE001 - a closed stderr must not lose the mail
        pass
