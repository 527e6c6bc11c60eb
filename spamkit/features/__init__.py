"""Tokens to numbers: the vocabulary, feature matrices and byte-level keys.

Takes token lists (or raw bytes) and gives scipy.sparse matrices -- binary, TF, TF-IDF, hashed
(:mod:`~spamkit.features.vectorizer`) -- the terms a worker process numbers
(:mod:`~spamkit.features.numbering`) and the hashed byte contexts and 4-gram slots of the byte-
level models (:mod:`~spamkit.features.bytekeys`).
"""
