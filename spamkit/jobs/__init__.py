"""Corpus-level jobs: what each ``spamkit`` command does over corpora, and where it runs.

Takes corpora and a :class:`~spamkit.filterfile.spamfilter.SpamFilter` (or its settings),
runs the stages and gives a report object or a dict; it prints nothing (the CLI and
:mod:`spamkit.cli.report` do). One module per job -- :mod:`~spamkit.jobs.train` (with a
held-out evaluation), :mod:`~spamkit.jobs.evaluate`, :mod:`~spamkit.jobs.crossval` (configurations
compared on the same folds, kNN tuning), :mod:`~spamkit.jobs.online` (the TREC protocol, whose
loop is :mod:`~spamkit.jobs.evaluation`), :mod:`~spamkit.jobs.learn`, :mod:`~spamkit.jobs.survey`
-- with the work they share: a configuration's out-of-fold scores (:mod:`~spamkit.jobs.folds`)
and corpora scored a block at a time (:mod:`~spamkit.jobs.rows`). Every job takes an engine,
one declared interface (:mod:`~spamkit.jobs.engine`: this process by default; worker
processes, :mod:`~spamkit.jobs.engines`; a Dask cluster, :mod:`spamkit.jobs.distributed`).
"""
