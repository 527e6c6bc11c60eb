"""Corpus-level jobs: what each ``spamkit`` command does, one module per job.

- :mod:`~spamkit.jobs.train`: train a filter on corpora, with a held-out evaluation;
- :mod:`~spamkit.jobs.evaluate`: classify labelled corpora and measure (costs, report data);
- :mod:`~spamkit.jobs.crossval`: cross-validated scores of a filter's configuration, compare
  configurations on the same folds, tune kNN;
- :mod:`~spamkit.jobs.online`: the TREC online protocol over corpora;
- :mod:`~spamkit.jobs.learn`: add (or forget) messages in a trained filter;
- :mod:`~spamkit.jobs.survey`: read and count a corpus.

A job takes corpora and a :class:`~spamkit.spamfilter.SpamFilter` (or its settings), runs the
stages and returns a report object or a dict; it prints nothing (the CLI and
:mod:`spamkit.report` do).
"""
