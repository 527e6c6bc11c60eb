"""A message counter on stderr for long runs, shown only when stderr is a terminal."""

from __future__ import annotations

import sys
import time


class Progress:
    """Counts steps and redraws ``label: N messages (R/s)`` at most ten times a second."""

    def __init__(self, label: str, stream=None):
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.count = 0
        self._started = time.perf_counter()
        self._last = 0.0

    def step(self, *_):
        self.count += 1
        if self.enabled:
            now = time.perf_counter()
            if now - self._last >= 0.1:
                self._last = now
                rate = self.count / max(now - self._started, 1e-9)
                self.stream.write(f"\r{self.label}: {self.count} messages ({rate:.0f}/s)")
                self.stream.flush()

    def note(self, text: str) -> None:
        """Replace the counter by ``text`` (cluster progress: partitions done)."""
        if self.enabled:
            self.count = max(self.count, 1)
            self.stream.write(f"\r{self.label}: {text}".ljust(len(self.label) + 40))
            self.stream.flush()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.enabled and self.count:
            self.stream.write("\r" + " " * (len(self.label) + 40) + "\r")
            self.stream.flush()
