"""The TREC spam-track protocol over corpora: classify each message in order, then learn it."""

from __future__ import annotations

from ..corpus import iter_corpora
from ..text import Analyzer


def online_filter(corpora, analyzer: Analyzer | None = None, progress=None, **settings):
    """TREC-style online evaluation over corpora in their order (see :func:`spamkit.evaluation.online_evaluate`)."""
    from ..evaluation import online_evaluate
    return online_evaluate(iter_corpora(corpora), analyzer if analyzer is not None else Analyzer(),
                           progress=progress, **settings)
