"""Terms numbered where messages are tokenized: what a worker process sends back of a chunk.

A worker process numbers the terms of the messages it tokenized with numbers of its own
(:func:`number_terms`), and sends the numbers, the counts and only the terms it had not
sent before; the process that counts (:func:`spamkit.features.counting.count_matrix`) maps them to
its columns. Standard library (and the compiled table of ``spamkit.common.speedups``) only: the
workers of ``spamkit train`` start before NumPy and SciPy are imported
(:meth:`spamkit.jobs.engines.ProcessEngine.count_ahead`), and never import them.
"""

from __future__ import annotations

from array import array
from collections import Counter
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:                          # annotations only: the workers never import NumPy here
    import numpy as np

__all__ = ["IndexedChunk", "new_numbering", "number_terms"]


class IndexedChunk(NamedTuple):
    """Consecutive training documents numbered by the worker process that read them
    (:meth:`spamkit.jobs.engines.ProcessEngine.counter`): each document's distinct terms as that
    worker's own term numbers, with their counts. ``new_terms`` are the worker's terms first
    seen in this chunk, in the order it numbered them (order of first appearance), so the
    process that counts looks up only those by name and maps the rest with an array.

    Given in corpus order, chunks give the same vocabulary, in the same order, and the same
    matrix as the documents' token lists (:func:`spamkit.features.counting.count_matrix`).
    """

    source: object            # which worker numbered the terms (its numbering is its own)
    new_terms: list
    ids: np.ndarray           # int32 array: the worker's number of each distinct term of each document
    counts: np.ndarray        # int32 array: how often each occurs in its document
    sizes: np.ndarray         # int64 array: distinct terms per document


def new_numbering():
    """A worker's numbers for :func:`number_terms`: a compiled table
    (``spamkit.common.speedups.Numbering``, one probe per token) where it was built, else a dict."""
    from ..common.compiled import speedups
    module = speedups()
    return module.Numbering() if module is not None else {}


def number_terms(numbers, token_lists: list) -> tuple[list, bytes, bytes, bytes]:
    """``(new terms, ids, counts, sizes)`` of documents numbered through ``numbers`` (a term not
    in it gets the next number, ``len(numbers)``): for each document its distinct terms in order
    of first appearance, as int32 numbers, with int32 counts, and its number of distinct terms
    (int64). ``numbers`` is a dict, for which the Python loop below is the definition, or
    what :func:`new_numbering` made: ``speedups.Numbering`` does the same in C (a third of a
    worker's time on TREC mail went to this loop in Python; then 95-110 ns a token to a C loop
    that tallied each document and looked its terms up in the dict). Worker processes number
    their chunks this way (:class:`IndexedChunk`, :mod:`spamkit.jobs.engines`)."""
    if not isinstance(numbers, dict):
        return numbers.number(token_lists if type(token_lists) is list else list(token_lists))
    ids, counts, sizes, new_terms = array("i"), array("i"), array("q"), []
    for tokens in token_lists:
        tally = Counter(tokens)                      # distinct terms in order of first appearance
        for term in tally:
            j = numbers.get(term)
            if j is None:
                j = numbers[term] = len(numbers)     # a term new to this worker gets the next number
                new_terms.append(term)
            ids.append(j)
        counts.extend(tally.values())
        sizes.append(len(tally))
    return new_terms, ids.tobytes(), counts.tobytes(), sizes.tobytes()
