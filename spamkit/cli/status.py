"""Exit statuses of the ``spamkit`` command (after httpie/cli's ``status.py``)."""

from enum import IntEnum


class ExitStatus(IntEnum):
    """0 success, 1 a spamkit error (bad input, bad model), 2 usage (click), 130 interrupted."""

    SUCCESS = 0
    ERROR = 1
    USAGE = 2
    INTERRUPTED = 130
