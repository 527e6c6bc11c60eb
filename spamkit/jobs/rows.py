"""Labelled corpora scored by a trained filter in this process, a block of messages at a time:
what :meth:`spamkit.jobs.engine.Engine.score` does, with the feature rows made here or by an
engine's workers (:meth:`~spamkit.jobs.engine.Engine.row_source`)."""

from __future__ import annotations

import numpy as np

from ..corpus import Corpus, iter_corpora
from ..corpus.deferred import Unread
from ..common.errors import CorpusError
from ..common.labels import HAM_NAME, SPAM_NAME
from ..parse.message import parse_message
from ..filterfile.spamfilter import SpamFilter
from ..filterfile.verdicts import distinct_tokens


#: messages scored at a time (score_locally): their feature rows are made and scored together
ROWS_AT_A_TIME = 512


def labelled_messages(corpora, spam_filter: SpamFilter, labels: list, texts: list | None, progress=None,
                      purpose: str = "evaluation", ham_spam: bool = False, sources: list | None = None):
    """The messages of labelled corpora, in order, each label appended to ``labels`` (and its
    source to ``sources``, its side models' bytes to ``texts`` unless None) as it passes, and
    ``progress(msg)`` called; a message without a class (or, with ``ham_spam``, of a class not
    named ham or spam) is an error naming it and ``purpose``."""
    for msg in iter_corpora(corpora):
        if msg.label is None or (ham_spam and msg.label not in (HAM_NAME, SPAM_NAME)):
            raise CorpusError(f"{msg.source}: {purpose} needs two classes named ham and spam, got {msg.label!r}"
                              if ham_spam else f"{msg.source}: message has no class; {purpose} needs labelled corpora")
        labels.append(msg.label)
        if sources is not None:
            sources.append(msg.source)
        if texts is not None:
            texts.append(spam_filter.side_text(msg))
        if progress is not None:
            progress(msg)
        yield msg


def row_blocks(spam_filter: SpamFilter, items, tokenize=None):
    """``(feature rows, each message's number of distinct tokens)`` of ``items``
    (:meth:`SpamFilter.tokenized`), :data:`ROWS_AT_A_TIME` messages a block."""
    block: list = []
    for tokens in spam_filter.tokenized(items, tokenize):
        block.append(tokens)
        if len(block) >= ROWS_AT_A_TIME:
            yield spam_filter.vectorizer.transform(block), np.asarray(distinct_tokens(block))
            block = []
    if block:
        yield spam_filter.vectorizer.transform(block), np.asarray(distinct_tokens(block))


def score_locally(spam_filter: SpamFilter, corpora: list[Corpus], progress=None, tokenize=None, rows=None):
    """Labels, sources, the model's log-probabilities of every message, ``rows_of(indices)`` and
    each message's familiarity (:meth:`SpamFilter.familiarity`).

    Messages are scored a block of rows at a time (:func:`row_blocks`, or ``rows(items, at_least)``,
    which yields such blocks (an engine's :meth:`~spamkit.jobs.engine.Engine.row_source`): :meth:`spamkit.jobs.engines.ProcessEngine.row_blocks`, with the block's side
    scores as a third item where ``rows.side_scores`` is true); only their scores
    are kept, so memory does not grow with the corpus but by a few numbers a message (holding
    every token list and then the whole matrix, evaluating trec07p-dev in one process peaked at
    191 MB, with Enron1-2 at 267 MB). A message's scores depend on it alone (a test compares
    blocks of 7 rows with one block). ``rows_of(indices)`` gives the feature rows of a few
    messages (the report's explanations), read, parsed and tokenized again, as the Dask
    engine's ``score`` (:class:`spamkit.jobs.distributed.DaskEngine`), which returns the same.
    ``tokenize``: where the messages are tokenized (:meth:`SpamFilter.tokenized`).
    """
    labels: list = []
    ids: list = []
    # the side scores come with the rows where the engine's workers make them (the byte 4-gram
    # model's: spamkit.jobs.engines.ProcessEngine.row_source); else from the messages' bytes, read here
    texts: list | None = [] if spam_filter.reads_bytes and not getattr(rows, "side_scores", False) else None
    messages = labelled_messages(corpora, spam_filter, labels, texts, progress, sources=ids)
    log_proba, familiarity, done = [], [], 0
    blocks = rows(messages, ROWS_AT_A_TIME) if rows is not None else row_blocks(spam_filter, messages, tokenize)
    for X, distinct, *given in blocks:
        n = X.shape[0]
        side = given[0] if given else None
        if texts is not None:                       # the block's messages' bytes, then let go
            side = spam_filter.side_scores(texts[done:done + n])
            texts[done:done + n] = [None] * n
        log_proba.append(spam_filter.model_log_proba(X, side))
        familiarity.append(spam_filter.familiarity_of(distinct, X))
        done += n

    def rows_of(indices):
        """Feature rows of a few messages, read again (for the report's explanations)."""
        wanted, raws = set(indices), {}
        for pos, msg in enumerate(iter_corpora(corpora)):
            if pos in wanted:
                raws[pos] = (msg.raw.read() if isinstance(msg.raw, Unread) else bytes(msg.raw), msg.kind)
                if len(raws) == len(wanted):
                    break
        return spam_filter.vectorizer.transform([spam_filter.analyzer(parse_message(*raws[i])) for i in indices])

    n_classes = len(spam_filter.classes_)
    return (labels, ids, np.vstack(log_proba) if log_proba else np.zeros((0, n_classes)), rows_of,
            np.concatenate(familiarity) if familiarity else np.zeros(0))
