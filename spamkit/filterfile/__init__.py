"""The trained filter and its file.

Takes the stages before it (analyzer, vectorizer, model, decision layer) and gives one object,
:class:`~spamkit.filterfile.spamfilter.SpamFilter`, built from one frozen settings value
(:mod:`~spamkit.filterfile.config`) and written to and read from a checked zip of arrays and a
manifest, never a pickle (:mod:`~spamkit.filterfile.persist`,
:mod:`~spamkit.filterfile.manifest`, written by :mod:`~spamkit.filterfile.ziparchive`, read by
:mod:`~spamkit.filterfile.zipread`); bogofilter word
lists in and out (:mod:`~spamkit.filterfile.wordlist`).
"""
