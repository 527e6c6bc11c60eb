"""The verdict tags: header fields prepended to a message, and reading them back.

``X-Spam-Status: Yes|No|Unsure, score=0.997, model=NAME@HASH``, ``X-Spam-Probability``,
``X-Spamkit-Version`` and ``X-Spamkit-Model``, written above the original message, which
follows byte for byte. Taking them off again (to find a message's key whatever its tags)
is :func:`spamkit.message.split_tags`, one stage earlier, since learning needs it too.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from .. import __version__
from ..errors import ConfigError
from ..message import split_tags

VERDICTS = ("spam", "ham", "unsure")
STATUS_WORD = {"spam": "Yes", "ham": "No", "unsure": "Unsure"}
WORD_STATUS = {v.lower(): k for k, v in STATUS_WORD.items()}


def newline_of(raw: bytes) -> bytes:
    """The line ending the message uses (that of its first line), LF when it has none."""
    end = raw.find(b"\n")
    return b"\r\n" if end > 0 and raw[end - 1:end] == b"\r" else b"\n"


def tag_fields(verdict: str, p_spam: float, model_id: str) -> list[tuple[str, str]]:
    """The header fields of a verdict, in the order they are written."""
    if verdict not in VERDICTS:
        raise ConfigError(f"unknown verdict {verdict!r}")
    return [("X-Spam-Status", f"{STATUS_WORD[verdict]}, score={p_spam:.6f}, model={model_id}"),
            ("X-Spam-Probability", f"{p_spam:.6f}"),
            ("X-Spamkit-Version", __version__),
            ("X-Spamkit-Model", model_id)]


def tag(raw: bytes, verdict: str, p_spam: float, model_id: str) -> bytes:
    """``raw`` with spamkit's fields (old ones removed) prepended; the rest unchanged.

    >>> tag(b"Subject: hi\\r\\n\\r\\nbody", "spam", 0.99, "m@1").split(b"\\r\\n")[0]
    b'X-Spam-Status: Yes, score=0.990000, model=m@1'
    """
    _, rest = split_tags(raw)
    nl = newline_of(rest)
    head = b"".join(f"{name}: {value}".encode("utf-8") + nl for name, value in tag_fields(verdict, p_spam, model_id))
    return head + rest


def recorded_verdict(raw: bytes, model_id: str):
    """``(verdict, p_spam)`` if ``raw`` is already tagged by this model, else ``None``."""
    fields, _ = split_tags(raw)
    if fields.get("x-spamkit-model") != model_id:
        return None
    status = fields.get("x-spam-status", "")
    word = status.split(",", 1)[0].strip().lower()
    if word not in WORD_STATUS:
        return None
    try:
        p = float(fields.get("x-spam-probability", "nan"))
    except ValueError:
        p = float("nan")
    return WORD_STATUS[word], p


def model_id_of(path) -> str:
    """``NAME@HASH``: the filter file's name and the first 12 hex digits of its SHA-256."""
    digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()[:12]
    return f"{Path(path).name}@{digest}"
