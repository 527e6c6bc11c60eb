"""What several stages share, below them all, with the standard library alone.

Takes nothing from the other stages and gives them: the errors every edge reports
(:mod:`~spamkit.common.errors`), the names users choose from and each model's defaults
(:mod:`~spamkit.common.names`, so that ``--help`` lists choices without importing NumPy), class
labels (:mod:`~spamkit.common.labels`), durable writes and safe opens shared by filter files and
mailboxes (:mod:`~spamkit.common.durable`), how worker processes start
(:mod:`~spamkit.common.processes`), pipe mode's never-lose-a-message guard and its exit statuses
(:mod:`~spamkit.common.passthrough`, used by mail filtering, the resident filter and its client),
immutable records without :mod:`dataclasses` (:mod:`~spamkit.common.records`), regular
expressions compiled when first used (:mod:`~spamkit.common.patterns`), and the one loader of the compiled loops (:mod:`~spamkit.common.compiled`; the extension
``spamkit.common.speedups`` is built from ``speedups.c``, what its areas share, and one source per
area next to the Python it speeds up).
"""
