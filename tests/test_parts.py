"""The compiled loops that run in parts on helper threads (``spamkit/common/speedups.c``: ``run_parts``):
``fisher_sums``, ``nb_sums`` and ``renumber_rows`` cut a matrix's rows, ``sort_terms`` a
vocabulary. Each must give the same bits as the one loop: checked against the same calls in a
process pinned to one CPU (where no helper is made) and against the Python definitions, on
inputs large enough to be cut here."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from spamkit.common.compiled import speedups

pytestmark = pytest.mark.skipif(speedups() is None, reason="spamkit.common.speedups was not built")

#: the non-zeros a part of a row loop gets at least (ROWS_PART_NNZ in speedups.c)
ROWS_PART_NNZ = 100_000
#: the terms a part of sort_terms gets at least (SORT_PART_TERMS)
SORT_PART_TERMS = 20_000
MAX_PARTS = 4
ROOT = Path(__file__).resolve().parents[1]


def _cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def _matrix(seed: int = 7, rows: int = 4000, cols: int = 60_000) -> sp.csr_matrix:
    """Rows of 20-300 distinct columns, Zipf-like (a few columns in most rows), in any order."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(20, 300, size=rows)
    indices = []
    for n in lengths:
        picked = np.unique(np.minimum(rng.zipf(1.3, size=3 * n), cols) - 1)[:n]
        indices.append(rng.permutation(picked))
    ptr = np.concatenate([[0], np.cumsum([len(i) for i in indices])]).astype(np.int64)
    data = rng.integers(1, 4, size=ptr[-1]).astype(np.float64)
    X = sp.csr_matrix((data, np.concatenate(indices).astype(np.int32), ptr), shape=(rows, cols))
    X.has_sorted_indices = False
    return X


def _terms(seed: int = 3, n: int = 120_000) -> list[str]:
    """A vocabulary like a mail filter's: many terms under a few long prefixes, some non-ASCII."""
    rnd = random.Random(seed)
    prefixes = ["", "", "received:", "received:ip:", "subject:", "url:", "from:", "é"]
    out = sorted({rnd.choice(prefixes) + "".join(rnd.choice("abcdefghijklmnoé0") for _ in range(rnd.randint(1, 14)))
                  for _ in range(n)})
    rnd.shuffle(out)                                # (a set's order would differ from process to process)
    return out


def _results(X: sp.csr_matrix, terms: list[str]) -> dict:
    """What the four loops give on X and terms, as JSON-able lists (floats by their bits)."""
    s = speedups()
    counts = np.vstack([np.asarray((X[: X.shape[0] // 2] > 0).sum(axis=0)).ravel(),
                        np.asarray((X[X.shape[0] // 2:] > 0).sum(axis=0)).ravel()]).astype(np.float64)
    ptr = X.indptr.astype(np.int64)
    fisher = np.empty(3 * X.shape[0])
    s.fisher_sums(ptr, X.indices, counts[0], counts[1], 2000.0, 2000.0, 0.45, 0.5, 0.1, 150, fisher)
    nb = np.empty(X.shape[0])
    s.nb_sums(ptr, X.indices, X.data, counts[0], counts[1], 1.0, 11.5, 12.25, nb)
    renumbered = X.copy()
    new_col = np.random.default_rng(11).permutation(X.shape[1]).astype(np.int32)
    s.renumber_rows(renumbered.indptr, renumbered.indices, renumbered.data, new_col)
    order = np.frombuffer(s.sort_terms(terms), dtype=np.int64)
    return {"fisher": fisher.view(np.int64).tolist(), "nb": nb.view(np.int64).tolist(),
            "indices": renumbered.indices.tolist(), "data": renumbered.data.view(np.int64).tolist(),
            "order": order.tolist(), "counts": counts.tolist(), "new_col": new_col.tolist()}


_CHILD = """
import json, os, sys
sys.path.insert(0, sys.argv[1])
os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
import tests.test_parts as t
from spamkit.common.compiled import speedups
out = t._results(t._matrix(), t._terms())
out["parts"] = speedups().loop_parts(10 ** 9, 1)
json.dump(out, open(sys.argv[2], "w"))
"""


def test_the_number_of_parts_follows_the_usable_cpus():
    s = speedups()
    cpus = min(_cpus(), MAX_PARTS)
    assert s.loop_parts(10 ** 9, 1) == cpus
    assert s.loop_parts(3 * ROWS_PART_NNZ, ROWS_PART_NNZ) == min(cpus, 3)
    assert s.loop_parts(ROWS_PART_NNZ - 1, ROWS_PART_NNZ) == 1 and s.loop_parts(0, 1) == 1


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no CPU affinity on this system")
def test_loops_in_parts_give_the_bits_of_one_loop(tmp_path):
    if _cpus() < 2:
        if os.environ.get("CI") == "true":
            pytest.fail("CI runs on two cores or more: the loops must be cut into parts there")
        pytest.skip("one usable CPU: every loop runs in one part here")
    X, terms = _matrix(), _terms()
    assert X.nnz >= 2 * ROWS_PART_NNZ and len(terms) >= 2 * SORT_PART_TERMS    # cut here, not in the child
    here = _results(X, terms)
    out = tmp_path / "one.json"
    subprocess.run([sys.executable, "-c", _CHILD, str(ROOT), str(out)], check=True)
    alone = json.loads(out.read_text())
    assert alone.pop("parts") == 1
    for key in here:
        assert here[key] == alone[key], f"{key} differs between parts and one loop"


def test_loops_in_parts_are_their_definitions():
    from spamkit.models.robinson import RobinsonFisher
    X, terms = _matrix(), _terms()
    got = _results(X, terms)
    counts = np.asarray(got["counts"])
    # Fisher: RobinsonFisher's own Python definition of the clue sums
    m = RobinsonFisher(strength=0.45, prior=0.5, min_dev=0.1, max_clues=150)
    m.fit(np.eye(2, X.shape[1]), ["ham", "spam"])
    m.feature_count_[:] = counts
    m.class_count_[:] = [2000.0, 2000.0]
    presence = X.copy()
    presence.data[:] = 1.0
    n_py, log_f_py, log_1mf_py = m._clue_sums_python(presence)
    fisher = np.asarray(got["fisher"], dtype=np.int64).view(np.float64).reshape(-1, 3)
    assert fisher[:, 0].tolist() == np.asarray(n_py, dtype=np.float64).tolist()
    np.testing.assert_allclose(fisher[:, 1], log_f_py, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(fisher[:, 2], log_1mf_py, rtol=1e-13, atol=1e-15)
    # NB: each entry's weight times its count, summed per row
    rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
    w = (np.log(counts[1, X.indices] + 1.0) - 12.25) - (np.log(counts[0, X.indices] + 1.0) - 11.5)
    nb = np.asarray(got["nb"], dtype=np.int64).view(np.float64)
    np.testing.assert_allclose(nb, np.bincount(rows, weights=w * X.data, minlength=X.shape[0]), rtol=1e-12)
    # renumbering: new_col[indices], then scipy's sort of each row
    expected = X.copy()
    expected.indices[:] = np.asarray(got["new_col"], dtype=np.int32)[expected.indices]
    expected.has_sorted_indices = False
    expected.sort_indices()
    assert got["indices"] == expected.indices.tolist()
    assert got["data"] == expected.data.view(np.int64).tolist()
    # sorting: sorted() over positions
    assert got["order"] == sorted(range(len(terms)), key=terms.__getitem__)


@pytest.mark.parametrize("arrangement", ["shuffled", "sorted", "reversed", "organ pipe", "one prefix"])
def test_sorting_a_vocabulary_in_any_arrangement_is_sorted(arrangement):
    """Fixed pivots (first, middle, last) made a sorted vocabulary ten times slower to sort than a
    shuffled one (the partitions left organ-pipe orders); whatever the arrangement, the order
    is sorted()'s, in parts or not."""
    terms = _terms(5, 60_000)
    if arrangement == "sorted":
        terms.sort()
    elif arrangement == "reversed":
        terms.sort(reverse=True)
    elif arrangement == "organ pipe":
        ordered = sorted(terms)
        terms = ordered[::2] + ordered[1::2][::-1]
    elif arrangement == "one prefix":
        terms = ["received:" + t for t in terms]
    order, in_order = speedups().sort_terms(terms, True)
    assert in_order == sorted(terms)
    assert np.frombuffer(order, dtype=np.int64).tolist() == sorted(range(len(terms)), key=terms.__getitem__)


@pytest.mark.parametrize("budget", [0, 1, 3])
def test_the_heapsort_that_bounds_the_sort_gives_the_same_order(budget):
    """After ``budget`` partitions the rest of each run is heapsorted (what keeps any arrangement
    at n log n); with duplicates, shared prefixes and terms ending inside a head, the same
    stable order."""
    terms = _terms(9, 5_000) + ["abc", "abc", "abc\x00", "ab", "received:", "received:"] * 50
    random.Random(1).shuffle(terms)
    order = speedups().sort_terms(terms, False, budget)
    assert np.frombuffer(order, dtype=np.int64).tolist() == sorted(range(len(terms)), key=terms.__getitem__)
