"""The exception hierarchy: every error spamkit raises on purpose.

The command line turns any :class:`SpamkitError` into a one-line
``Error: ...`` message and exit status 1; anything else is a bug.
"""


class SpamkitError(Exception):
    """Base class for everything spamkit raises on purpose."""


class ConfigError(SpamkitError, ValueError):
    """A parameter is outside its documented domain."""


def check_choice(value, choices, what: str):
    """``value`` if it is one of ``choices``, else a ConfigError naming ``what`` and the choices.

    >>> check_choice("tf", ("binary", "tf"), "representation")
    'tf'
    >>> check_choice("idf", ("binary", "tf"), "representation")
    Traceback (most recent call last):
    spamkit.common.errors.ConfigError: unknown representation 'idf'; choose one of binary, tf
    """
    if value not in choices:
        raise ConfigError(f"unknown {what} {value!r}; choose one of {', '.join(choices)}")
    return value


class CorpusError(SpamkitError):
    """A corpus cannot be read as the requested format."""


def __getattr__(name: str):
    # NotFittedError is also scikit-learn's NotFittedError (estimator checks expect that), so
    # defining it imports scikit-learn: done on first use, so that importing the errors (as
    # the command line does before it knows the command) stays cheap.
    if name == "NotFittedError":
        from sklearn.exceptions import NotFittedError as _SklearnNotFitted

        class NotFittedError(SpamkitError, _SklearnNotFitted):
            """An estimator or filter was used before fit/train."""

        NotFittedError.__module__, NotFittedError.__qualname__ = __name__, "NotFittedError"
        globals()["NotFittedError"] = NotFittedError
        return NotFittedError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class ModelFormatError(SpamkitError):
    """Unknown FORMAT_VERSION or a corrupt filter file."""


class OutputError(SpamkitError):
    """An output file cannot be written (a missing or read-only folder, a full disk)."""


class WorkerError(SpamkitError):
    """A worker process died (killed, out of memory) before it returned its work."""


class ResourceMissingError(SpamkitError):
    """An optional resource (a user's stop-word file, an optional extra) is absent."""


class DegenerateDataWarning(UserWarning):
    """A result is computable but meaningless (a ROC curve with no spam, an all-zero likelihood)."""


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and ``noun``, the plural for any count but one, as errors and summaries say a
    count to a person (thousands separated when there are many).

    >>> counted(1, "message"), counted(0, "message"), counted(12345, "mailbox", "mailboxes")
    ('1 message', '0 messages', '12,345 mailboxes')
    """
    word = noun if n == 1 else (plural or noun + "s")
    return f"{n:,} {word}" if isinstance(n, int) and abs(n) >= 10_000 else f"{n} {word}"
