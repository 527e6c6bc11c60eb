"""The TREC spam-track protocol over corpora: classify each message in order, then learn it."""

from __future__ import annotations

from ..corpus import iter_corpora
from ..text import Analyzer
from .engine import IN_PROCESS, Engine


def online_filter(corpora, analyzer: Analyzer | None = None, progress=None, engine: Engine = IN_PROCESS, **settings):
    """TREC-style online evaluation over corpora in their order (see :func:`spamkit.jobs.evaluation.online_evaluate`).

    ``engine``: where the messages are parsed and tokenized (:meth:`spamkit.jobs.engine.Engine.tokenizer`:
    here, or ahead in worker processes), the same tokens in the same order, so the same scores.
    """
    from .evaluation import online_evaluate
    analyzer = analyzer if analyzer is not None else Analyzer()
    tokenize = engine.tokenizer(analyzer)
    return online_evaluate(iter_corpora(corpora), analyzer, progress=progress, tokenize=tokenize, **settings)


def online_filter_classes(corpora, analyzer: Analyzer | None = None, progress=None, engine: Engine = IN_PROCESS,
                          **settings) -> dict:
    """Online evaluation of any number of classes over corpora in their order
    (:func:`spamkit.jobs.online_classes.online_evaluate_classes`)."""
    from .online_classes import online_evaluate_classes
    analyzer = analyzer if analyzer is not None else Analyzer()
    tokenize = engine.tokenizer(analyzer)
    return online_evaluate_classes(iter_corpora(corpora), analyzer, progress=progress, tokenize=tokenize, **settings)
