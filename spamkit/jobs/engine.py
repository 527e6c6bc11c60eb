"""Where a job's work runs: the engine interface the jobs ask of, and its implementation in
this process.

A job (train, evaluate, cross-validate, online, survey) takes an ``engine`` and asks it for
two kinds of things, and nothing else:

- **whole operations**, each with the same result wherever it runs: :meth:`Engine.fit`,
  :meth:`Engine.score`, :meth:`Engine.cross_validated_log_proba`;
- **where messages become tokens**: :meth:`Engine.tokenizer` (the online protocol, which must
  learn each message before it scores the next, keeps the loop and only hands the parsing out)
  and :meth:`Engine.parsed` (a corpus survey).

:class:`Engine` itself runs everything in this process; its whole operations are written in
terms of three primitives -- :meth:`~Engine.tokenizer`, :meth:`~Engine.counter` and
:meth:`~Engine.row_source` -- so that :class:`spamkit.jobs.engines.ProcessEngine` (worker processes
parse, tokenize and make feature rows) overrides only those, and
:class:`spamkit.jobs.distributed.DaskEngine` (a cluster) overrides the whole operations. The jobs
never ask which engine they were given.

This module imports neither NumPy nor the filter: ``spamkit train`` starts its worker
processes (:class:`spamkit.jobs.engines.ProcessEngine`, a subclass) before it imports NumPy, so
that they never hold it; the whole operations import what they run when they run.

Its attributes tell a job how to hand over the corpus: :attr:`~Engine.reads_files` (the
workers read the mail files themselves: the job only lists them) and
:attr:`~Engine.reads_located` (the workers read the messages that lie where they can).
"""

from __future__ import annotations

from ..parse.message import parse_message


class Engine:
    """The engine interface, run in this process (the default of every job).

    Use as a context manager (an engine with workers or a cluster starts and stops them).
    """

    name = "local"
    #: the workers read the mail files themselves (the corpus is at the same path there)
    reads_files = False
    #: the workers read the messages that lie where they can (``Corpus.located``)
    reads_located = False
    #: hears what the engine does as it goes (a cluster's partitions); set by the command line
    status = None
    #: it can start its workers and give them the first messages before the filter is built
    #: (:meth:`start_workers`, :meth:`count_ahead`: ``spamkit train``'s start-up)
    works_ahead = False

    def __enter__(self) -> "Engine":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Stop whatever the engine started (nothing, in this process)."""

    def parameters(self) -> dict:
        """What a filter file records about the engine that trained it (nothing: the filter is
        the same as with one process)."""
        return {}

    def check(self, spam_filter) -> None:
        """Refuse, before anything is read, a filter this engine cannot train (every filter can
        be trained in this process)."""

    def start_workers(self, analyzer) -> None:
        """Start the workers that will tokenize with ``analyzer`` now (none in this process)."""

    def count_ahead(self, analyzer, corpora, grams: tuple | None = None) -> None:
        """Give the workers the first messages of ``corpora`` to count now (none in this process)."""

    # ------------------------------------------------------------- primitives

    def tokenizer(self, analyzer):
        """A function from messages to their ``(tokens, defect families)``, in order, for
        :meth:`spamkit.filterfile.spamfilter.SpamFilter.tokenized`; None: they are tokenized in this process."""
        return None

    def counter(self, analyzer, grams: tuple | None = None):
        """A function counting the documents of messages for :meth:`SpamFilter.fit` (``count``);
        None: they are counted in this process."""
        return None

    def row_source(self, spam_filter):
        """A function ``rows(items, at_least)`` from messages to blocks of (at least ``at_least``
        but the last) of their feature rows for :func:`spamkit.jobs.rows.score_locally`; None:
        the rows are made in this process."""
        return None

    def makes_gram_rows(self, spam_filter) -> bool:
        """Whether :meth:`fit` has workers make the filter's byte 4-gram slots (then this process
        need not read the messages' bytes: :meth:`spamkit.filterfile.spamfilter.SpamFilter.driver_reads_bytes`)."""
        return False

    def parsed(self, items):
        """``(source, kind, defects)`` of each message, in order (a corpus survey)."""
        for msg in items:
            m = parse_message(msg.raw, msg.kind)
            yield msg.source, m.kind, m.defects

    # ------------------------------------------------------------- whole operations

    def fit(self, spam_filter, messages, progress=None):
        """Train ``spam_filter`` on a stream of labelled messages."""
        return spam_filter.fit(messages, progress=progress, tokenize=self.tokenizer(spam_filter.analyzer),
                               count=self.counter(spam_filter.analyzer, self.worker_grams(spam_filter)))

    def worker_grams(self, spam_filter) -> tuple | None:
        """The byte 4-grams' ``(n_bytes, bits)`` that :meth:`counter` has the workers make (None:
        the filter makes its own)."""
        return None

    def score(self, spam_filter, corpora, progress=None):
        """Labels, sources, the model's log-probabilities, ``rows_of(indices)`` and familiarity of
        every message of labelled corpora (:func:`spamkit.jobs.rows.score_locally`)."""
        from .rows import score_locally          # (NumPy's: see the module's note on imports)
        return score_locally(spam_filter, corpora, progress, tokenize=self.tokenizer(spam_filter.analyzer),
                             rows=self.row_source(spam_filter))

    def cross_validated_log_proba(self, spam_filter, corpora, folds: int = 5, seed: int = 0, progress=None,
                                  status=None):
        """Out-of-fold ``(labels, classes, log_proba, fold of each message)`` of a filter's
        configuration (:func:`spamkit.jobs.folds.cross_validated_log_proba`)."""
        from .folds import cross_validated_log_proba          # (NumPy's, as score's)
        return cross_validated_log_proba(spam_filter, corpora, folds, seed, progress, status,
                                         tokenize=self.tokenizer(spam_filter.analyzer))

#: the default engine of every job: this process
IN_PROCESS = Engine()
