"""The verdict tags: header fields prepended to a message, and reading them back.

Written SpamAssassin's way, so that recipes and mail clients made for it read them:
``X-Spam-Status: Yes|No|Unsure, score=7.5 required=5.0 tests=SPAMKIT_SPAM,SPAMKIT_P99_100
p=0.999616 model=NAME@HASH`` (score: P(spam) as points, :func:`points`; "Unsure" is spamkit's
third answer), ``X-Spam-Flag: YES`` for spam, ``X-Spam-Level: *******``, then
``X-Spam-Probability``, ``X-Spamkit-Version`` and ``X-Spamkit-Model``. They go above the
message (below an mbox ``From`` line); fields of those names further down — another filter's
verdict — are renamed ``X-Spam-Prev-Status`` etc., never doubled. Taking the tags off again
(to find a message's key whatever its tags) is :func:`spamkit.parse.markup.split_tags`, one stage
earlier, since learning needs it too; it renames those fields back.
"""

from __future__ import annotations

import os
import re

from ..common.patterns import LazyPattern
from .. import __version__
from ..common.errors import ConfigError
from ..parse.markup import PREVIOUS, SPAMD_FIELDS, envelope_end, header_end, split_tags, strip_markup

VERDICTS = ("spam", "ham", "unsure")
STATUS_WORD = {"spam": "Yes", "ham": "No", "unsure": "Unsure"}
WORD_STATUS = {v.lower(): k for k, v in STATUS_WORD.items()}


def newline_of(raw: bytes) -> bytes:
    """The line ending the message uses (that of its first line), LF when it has none."""
    end = raw.find(b"\n")
    return b"\r\n" if end > 0 and raw[end - 1:end] == b"\r" else b"\n"


def tag_fields(verdict: str, p_spam: float, model_id: str, threshold: float = 0.5) -> list[tuple[str, str]]:
    """The header fields of a verdict, in the order they are written (``threshold``: the
    filter's spam threshold on P(spam), which :func:`points` places at 5.0)."""
    if verdict not in VERDICTS:
        raise ConfigError(f"unknown verdict {verdict!r}")
    score = points(verdict, p_spam, threshold)
    fields = [("X-Spam-Status", f"{STATUS_WORD[verdict]}, score={score:.1f} required={REQUIRED_POINTS:.1f} "
                                f"tests={','.join(rule_names(verdict, p_spam))} p={p_spam:.6f} model={model_id}")]
    if verdict == "spam":
        fields.append(("X-Spam-Flag", "YES"))
    fields += [("X-Spam-Level", "*" * int(score)),
               ("X-Spam-Probability", f"{p_spam:.6f}"),
               ("X-Spamkit-Version", __version__),
               ("X-Spamkit-Model", model_id)]
    return fields


_TAG_RENAMES = LazyPattern(rb"(?im)^(X-Spam-(?:Status|Flag|Level|Probability))(?=[ \t]*:)")


def tag(raw: bytes, verdict: str, p_spam: float, model_id: str, threshold: float = 0.5) -> bytes:
    """``raw`` with spamkit's fields (old ones removed) prepended, another filter's fields of
    the same names renamed ``X-Spam-Prev-...``; the rest unchanged. An mbox envelope line
    (``From sender date``, as procmail hands a message over) stays first.

    >>> print(tag(b"Subject: hi\\nX-Spam-Status: No, score=-2\\n\\nbody", "spam", 0.99, "m@1", 0.9).decode())
    X-Spam-Status: Yes, score=9.5 required=5.0 tests=SPAMKIT_SPAM,SPAMKIT_P99_100 p=0.990000 model=m@1
    X-Spam-Flag: YES
    X-Spam-Level: *********
    X-Spam-Probability: 0.990000
    X-Spamkit-Version: 0.1.0
    X-Spamkit-Model: m@1
    Subject: hi
    X-Spam-Prev-Status: No, score=-2
    <BLANKLINE>
    body
    >>> tag(b"From a@b Mon\\nSubject: hi\\n\\nbody", "ham", 0.01, "m@1").split(b"\\n")[:2]
    [b'From a@b Mon', b'X-Spam-Status: No, score=0.1 required=5.0 tests=SPAMKIT_HAM,SPAMKIT_P01_05 p=0.010000 model=m@1']
    """
    _, rest = split_tags(raw)
    end = header_end(rest)
    if b"x-spam-" in rest[:end].lower():
        rest = _TAG_RENAMES.sub(lambda m: PREVIOUS + m.group(1)[len(b"X-Spam-"):], rest[:end]) + rest[end:]
    start = envelope_end(rest)
    nl = newline_of(rest)
    head = b"".join(f"{name}: {value}".encode("utf-8") + nl
                    for name, value in tag_fields(verdict, p_spam, model_id, threshold))
    return rest[:start] + head + rest[start:]


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


def model_id_of(path, sha256: str | None = None) -> str:
    """``NAME@HASH``: the filter file's name and the first 12 hex digits of its id, the SHA-256 of
    its manifest (:func:`spamkit.filterfile.manifest.manifest_sha256`: it changes with any byte of
    the filter; ``sha256``, that hex digest when the caller has it, else it is read)."""
    from ..filterfile.manifest import filter_sha256
    digest = (sha256 or filter_sha256(path))[:12]
    return f"{os.path.basename(os.fspath(path))}@{digest}"


# ----------------------------------------------------------------------------- SpamAssassin's fields

#: the score at which SpamAssassin calls a message spam, which every integration assumes
REQUIRED_POINTS = 5.0


def points(verdict: str, p_spam: float, threshold: float) -> float:
    """P(spam) as SpamAssassin points, 0 to 10, with the filter's spam threshold at
    :data:`REQUIRED_POINTS`: ``5 p / t`` below the threshold t, ``5 + 5 (p - t) / (1 - t)`` above,
    rounded to 0.1 and kept on the side of 5.0 its verdict is on (spam: at least 5.0; ham and
    unsure, which the familiarity guard may decide above t: at most 4.9).

    >>> points("spam", 0.99, 0.98), points("ham", 0.1, 0.98), points("unsure", 0.985, 0.98)
    (7.5, 0.5, 4.9)
    """
    t = min(max(float(threshold), 1e-9), 1 - 1e-9)
    p = min(max(float(p_spam), 0.0), 1.0)
    value = 5.0 * p / t if p < t else 5.0 + 5.0 * (p - t) / (1.0 - t)
    value = round(value, 1)
    return max(value, REQUIRED_POINTS) if verdict == "spam" else min(value, REQUIRED_POINTS - 0.1)


#: P(spam) bands named in the tests= list, so a rule can key on how sure the filter was
_BANDS = ((0.01, "00_01"), (0.05, "01_05"), (0.20, "05_20"), (0.50, "20_50"), (0.80, "50_80"), (0.95, "80_95"),
          (0.99, "95_99"), (1.01, "99_100"))


def rule_names(verdict: str, p_spam: float) -> list[str]:
    """SpamAssassin-style rule names for a verdict: ``SPAMKIT_SPAM|HAM|UNSURE`` and the P(spam)
    band, e.g. ``["SPAMKIT_SPAM", "SPAMKIT_P99_100"]``."""
    band = next(name for top, name in _BANDS if p_spam < top)
    return [f"SPAMKIT_{verdict.upper()}", f"SPAMKIT_P{band}"]


def spamassassin_fields(verdict: str, p_spam: float, threshold: float, model_id: str,
                        host: str = "localhost") -> list[tuple[str, str]]:
    """The header fields SpamAssassin writes, for a spamkit verdict (``X-Spam-Checker-Version``
    first: :data:`spamkit.parse.markup.SPAMD_MARK` finds the block again)."""
    score = points(verdict, p_spam, threshold)
    spam = verdict == "spam"
    fields = [("X-Spam-Checker-Version", f"spamkit {__version__} on {host}")]
    if spam:
        fields.append(("X-Spam-Flag", "YES"))
    fields += [("X-Spam-Level", "*" * int(score)),
               ("X-Spam-Status", f"{'Yes' if spam else 'No'}, score={score:.1f} required={REQUIRED_POINTS:.1f} "
                                 f"tests={','.join(rule_names(verdict, p_spam))} autolearn=no "
                                 f"version=spamkit-{__version__}"),
               ("X-Spam-Probability", f"{p_spam:.6f}"),
               ("X-Spamkit-Model", model_id)]
    return fields


def add_spamassassin_fields(raw: bytes, fields: list[tuple[str, str]]) -> bytes:
    """``raw`` with ``fields`` appended to its header block, as SpamAssassin does: spamkit's
    earlier marks removed first (:func:`~spamkit.parse.markup.strip_markup`, so processing twice
    equals processing once), fields of the same names from elsewhere kept under
    ``X-Spam-Prev-...`` (never doubled, never trusted), an mbox ``From`` line left first.

    >>> raw = b"From a@b Mon\\nX-Spam-Flag: NO\\nSubject: s\\n\\nbody"
    >>> out = add_spamassassin_fields(raw, spamassassin_fields("spam", 0.99, 0.5, "m@1"))
    >>> print(out.decode())                                     # doctest: +ELLIPSIS
    From a@b Mon
    X-Spam-Prev-Flag: NO
    Subject: s
    X-Spam-Checker-Version: spamkit ... on localhost
    X-Spam-Flag: YES
    X-Spam-Level: *********
    X-Spam-Status: Yes, score=9.9 required=5.0 tests=SPAMKIT_SPAM,SPAMKIT_P99_100 autolearn=no version=spamkit-...
    X-Spam-Probability: 0.990000
    X-Spamkit-Model: m@1
    <BLANKLINE>
    body
    >>> strip_markup(out) == raw
    True
    >>> add_spamassassin_fields(out, spamassassin_fields("spam", 0.99, 0.5, "m@1")) == out
    True
    """
    raw = strip_markup(raw)
    nl = newline_of(raw)
    end = header_end(raw)
    names = {name.lower().encode("ascii") for name, _ in fields} | set(SPAMD_FIELDS)
    head = re.sub(rb"(?im)^(x-spam(?:kit)?-[a-z0-9-]+)(?=[ \t]*:)",
                  lambda m: (PREVIOUS + m.group(1)[len(b"x-spam-"):]) if m.group(1).lower() in names
                  and m.group(1).lower().startswith(b"x-spam-") else m.group(1), raw[:end])
    block = b"".join(f"{name}: {value}".encode("utf-8") + nl for name, value in fields)
    if end == len(raw) and raw and not raw.endswith(b"\n"):
        return head + nl + block + nl
    if end == len(raw):
        return head + block + nl
    return head + block + raw[end:]
