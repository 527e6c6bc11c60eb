"""Seeded train/test splits of a corpus, by time or by stratified random draw.

Works on light records ``(id, label, date)`` gathered in a first cheap pass
(no parsing), so the split is decided before any message is tokenized.
"""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np

from ..common.errors import ConfigError, CorpusError, check_choice
from ..common.names import SPLIT_METHODS



def holdout_ids(records, test_fraction: float, method: str = "auto", seed: int = 0) -> set[str]:
    """The ids of the test part.

    Parameters
    ----------
    records : list of (id, label, date)
        In corpus order.
    test_fraction : float in (0, 1)
    method : {"auto", "chrono", "order", "random"}
        ``chrono``: the latest messages by date (ties and equal dates keep corpus order),
        as a filter meets them; ``order``: the last ones in corpus order (TREC and Enron
        corpus order is arrival order); ``random``: a stratified draw (each class split in
        the same proportion) seeded by ``seed``; ``auto``: chrono when every message has
        a date, random otherwise.

    Examples
    --------
    >>> recs = [("a", "ham", None), ("b", "spam", None), ("c", "ham", None), ("d", "spam", None)]
    >>> sorted(holdout_ids(recs, 0.5, "order"))
    ['c', 'd']
    """
    if not 0.0 < float(test_fraction) < 1.0:
        raise ConfigError(f"test fraction must be between 0 and 1 (exclusive), got {test_fraction}")
    check_choice(method, SPLIT_METHODS, "split method")
    records = list(records)
    if not records:
        raise CorpusError("cannot split an empty corpus")
    if method == "auto":
        method = "chrono" if all(r[2] is not None for r in records) else "random"
    n_test = max(1, min(len(records) - 1, math.ceil(test_fraction * len(records))))
    if method == "chrono":
        missing = sum(r[2] is None for r in records)
        if missing:
            raise CorpusError(f"{missing} of {len(records)} messages have no date; use a random or "
                              "order split")
        order = sorted(range(len(records)), key=lambda i: (records[i][2], i))
        return {records[i][0] for i in order[-n_test:]}
    if method == "order":
        return {r[0] for r in records[-n_test:]}
    by_class = defaultdict(list)
    for r in records:
        by_class[r[1]].append(r[0])
    rng = np.random.default_rng(seed)
    test: set = set()
    for label in sorted(by_class, key=str):
        ids = by_class[label]
        k = round(test_fraction * len(ids))
        k = min(max(k, 1 if len(ids) > 1 else 0), len(ids) - 1) if len(ids) > 1 else 0
        picked = rng.permutation(len(ids))[:k]
        test.update(ids[i] for i in picked)
    return test
