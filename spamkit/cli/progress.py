"""Progress on standard error for long runs, and the verbosity every command shares.

``-q/--quiet`` and ``-v/--verbose`` mean the same on every command (and before it:
``spamkit -q train ...``): quiet shows no progress; the default shows it when standard
error is a terminal; verbose also writes progress lines when it is not (a log file), and
commands that handle messages one by one (``filter``, ``learn``) list each message.
"""

from __future__ import annotations

import sys
import time

import click

from ..common.errors import counted

#: -1 quiet, 0 default, 1 verbose (set by the -q/-v options)
_verbosity = 0


def set_verbosity(level: int) -> None:
    global _verbosity
    _verbosity = level


def verbosity() -> int:
    return _verbosity


def _set_quiet(ctx, param, value):
    if value:
        set_verbosity(-1)
    return value


def _set_verbose(ctx, param, value):
    if value:
        set_verbosity(1)
    return value


def verbosity_options(fn):
    """``-q/--quiet`` and ``-v/--verbose`` (see the module docstring), on a command or the group."""
    fn = click.option("-v", "--verbose", is_flag=True, expose_value=False, callback=_set_verbose, is_eager=True,
                      help="Progress lines even when standard error is not a terminal; filter and learn list "
                           "each message.")(fn)
    return click.option("-q", "--quiet", is_flag=True, expose_value=False, callback=_set_quiet, is_eager=True,
                        help="No progress display (results and errors only).")(fn)


def _clock(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}" if seconds >= 3600 \
        else f"{seconds // 60}:{seconds % 60:02d}"


class Progress:
    """Counts messages and redraws ``label: N messages (R/s)`` at most ten times a second, or,
    when the total is known (:meth:`expect`), ``N of T messages (R/s, about M:SS left)`` (``of
    about T`` for an estimate; past it, the count and the rate); a
    stage of known size (:meth:`stage`) shows ``done of total`` and the time left.

    On a terminal (and not ``-q``) the line is redrawn in place; with ``-v`` and no terminal
    a line is written at most every 10 seconds.
    """

    def __init__(self, label: str, stream=None):
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        level = verbosity()
        self.enabled = level >= 0 and (tty or level > 0)
        self.in_place = tty
        self.count = 0
        self.total: int | None = None                 # the messages expected, when known (expect)
        self._started = time.perf_counter()
        self._last = 0.0
        self._shown = False

    def _show(self, text: str, force: bool = False) -> None:
        now = time.perf_counter()
        if not force and now - self._last < (0.1 if self.in_place else 10.0):
            return
        self._last = now
        self._shown = True
        if self.in_place:
            self.stream.write(f"\r{self.label}: {text}".ljust(len(self.label) + 60))
        else:
            self.stream.write(f"{self.label}: {text}\n")
        self.stream.flush()

    def expect(self, total: int | None, exact: bool = True) -> "Progress":
        """The number of messages the run will count, when known (None: unknown, the display
        shows the count and the rate only); ``exact=False`` for an estimate (an mbox's envelope
        lines counted), shown as "of about"."""
        self.total, self.exact = total, exact
        return self

    exact = True

    def expect_corpora(self, corpora) -> "Progress":
        """:meth:`expect` the messages of all the ``corpora``, counted only for a display someone
        sees (counting lists every corpus once more, or scans an mbox's bytes: about 0.15 s of a
        training's driver on 10,000 messages, taken from the cores its workers count on). The
        total is known when every corpus can count its messages without reading them
        (:meth:`~spamkit.corpus.Corpus.cheap_count`) or tell about how many it holds (an mbox:
        :meth:`~spamkit.corpus.Corpus.estimated_count`); else the display shows the count and
        the rate only."""
        if not self.enabled:
            return self
        counts = []
        for corpus in corpora:
            n = corpus.estimated_count()
            counts.append((n, True) if isinstance(n, int) else n)
        if any(n is None for n in counts):
            return self.expect(None)
        return self.expect(sum(n for n, _ in counts), all(exact for _, exact in counts))

    def step(self, *_):
        self.count += 1
        if self.enabled:
            now = time.perf_counter()
            elapsed = max(now - self._started, 1e-9)
            rate = self.count / elapsed
            if self.total is not None and self.count <= self.total:
                left = elapsed / self.count * (self.total - self.count)
                about = "" if self.exact else "about "
                self._show(f"{self.count:,} of {about}{counted(self.total, 'message')} ({rate:.0f}/s, about "
                           f"{_clock(left)} left)")
            else:
                self._show(f"{counted(self.count, 'message')} ({rate:.0f}/s)")

    def note(self, text: str) -> None:
        """Replace the counter by ``text`` (cluster progress: partitions done)."""
        if self.enabled:
            self._show(text, force=True)

    def stage(self, done: int, total: int, text: str) -> None:
        """Work of a known size: ``text — done of total``, and the time left at the pace so far."""
        if not self.enabled:
            return
        if not hasattr(self, "_stage_started"):
            self._stage_started, self._stage_done = time.perf_counter(), done
        elapsed = time.perf_counter() - self._stage_started
        finished = done - self._stage_done
        left = f", about {_clock(elapsed / finished * (total - done))} left" if finished > 0 and done < total else ""
        self._show(f"{text} ({done} of {total} steps{left})", force=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.enabled and self._shown and self.in_place:
            self.stream.write("\r" + " " * (len(self.label) + 60) + "\r")
            self.stream.flush()
