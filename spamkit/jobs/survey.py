"""Read (and parse) every message of a corpus and count what was found (``spamkit corpus``)."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field

from ..corpus import Corpus
from ..common.errors import CorpusError
from .engine import IN_PROCESS, Engine


@dataclass
class CorpusSurvey:
    """What ``spamkit corpus`` reports for one corpus."""

    path: str
    format: str
    container: str
    n_messages: int = 0
    n_bytes: int = 0
    per_class: dict = field(default_factory=dict)
    skipped: dict = field(default_factory=dict)
    unreadable: list = field(default_factory=list)     # "FILE: why" of messages that could not be read
    first_date: str | None = None
    last_date: str | None = None
    parsed: bool = False
    n_with_fallback: int = 0
    defects: dict = field(default_factory=dict)         # defect code -> messages showing it
    kinds: dict = field(default_factory=dict)           # rfc822 / enron / text -> count
    seconds: float = 0.0

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def _defect_family(code: str) -> str:
    # "charset-unknown:x-foo" -> "charset-unknown"; "mime:StartBoundaryNotFoundDefect" stays whole.
    return code if code.startswith("mime:") else code.split(":", 1)[0]


def survey_corpus(corpus: Corpus, parse: bool = True, strict: bool = False, progress=None,
                  engine: Engine = IN_PROCESS) -> CorpusSurvey:
    """Read every message of ``corpus`` (and parse it, with ``parse``), counting everything.

    ``strict`` makes the first message that needed a parse fallback an error.
    ``progress`` is called with each message read. ``engine``: where the messages are parsed
    (:meth:`spamkit.jobs.engine.Engine.parsed`: here or in worker processes; the same survey, in
    the same order).
    """
    started = time.perf_counter()
    survey = CorpusSurvey(path=str(corpus.path), format=corpus.format, container=corpus.container,
                          parsed=parse)
    defects: Counter = Counter()
    kinds: Counter = Counter()

    def read():
        for msg in corpus:
            if progress is not None:
                progress(msg)
            yield msg

    if not parse:
        for _ in read():
            pass
    else:
        for source, kind, found in engine.parsed(read()):
            kinds[kind] += 1
            if found:
                if strict:
                    raise CorpusError(f"{source}: parse fallback needed ({', '.join(found)}); "
                                      "drop --strict to accept it")
                survey.n_with_fallback += 1
                for family in {_defect_family(code) for code in found}:
                    defects[family] += 1
    stats = corpus.stats
    survey.n_messages = stats.n_messages
    survey.n_bytes = stats.n_bytes
    survey.per_class = {str(k): v for k, v in sorted(stats.per_class.items(), key=lambda kv: str(kv[0]))}
    survey.skipped = dict(stats.skipped)
    survey.unreadable = list(stats.unreadable)
    survey.first_date = stats.first_date.isoformat() if stats.first_date else None
    survey.last_date = stats.last_date.isoformat() if stats.last_date else None
    survey.defects = dict(defects.most_common())
    survey.kinds = dict(kinds.most_common())
    survey.seconds = time.perf_counter() - started
    return survey
