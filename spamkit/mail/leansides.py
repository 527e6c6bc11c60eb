"""The default stack's side inputs in pipe mode: a filter file's byte-context model and byte 4-gram
model, each scoring one raw message with the standard library (and the compiled context loop).

:class:`spamkit.mail.lean.LeanFilter` makes them from the file's arrays (checked by
:mod:`spamkit.mail.leanarrays`) when its stack weighs them; ``tests/test_lean.py`` holds their
scores to the full route's (:meth:`spamkit.filterfile.spamfilter.SpamFilter.side_scores`).
"""

from __future__ import annotations

import array
import math

from ..filterfile.manifest import format_error
from ..scoring import LOG_ODDS_LIMIT
from .leanarrays import any_negative, finite_sum

TYPE_CHECKING = False                  # typing's names for the checker only (pipe mode's start-up)
if TYPE_CHECKING:
    from pathlib import Path

#: spamkit.features.bytekeys's multiplier of the byte 4-grams' hash
GRAM_MULTIPLIER = 2654435761


class LeanContext:
    """The byte-context model of a filter file, scoring one message: its log-likelihood ratio
    per symbol (:meth:`spamkit.models.context.ByteContextModel.mean_log_ratio` of the first
    ``max_bytes`` bytes of the raw message, :meth:`spamkit.filterfile.spamfilter.SpamFilter.side_text`),
    by the same compiled loop over the same counts: a packed table (``filter.context_packed``) is
    checked and indexed once, and each message's slots are copied from it before it is scored
    (a few thousand lookups, about 5 ms, where unpacking the whole table took 0.15-0.2 s and
    128 MB); a dense table (older files) is read whole."""

    def __init__(self, path: Path, spec, arrays: dict):
        from ..common.compiled import speedups
        self.speedups = speedups()
        try:
            self.order, self.bits, self.max_bytes = int(spec["order"]), int(spec["bits"]), int(spec["max_bytes"])
            self.beta = float(spec["beta"])
            ok = (spec["order"] == self.order and spec["bits"] == self.bits and spec["max_bytes"] == self.max_bytes
                  and 0 <= self.order <= 16 and 8 <= self.bits <= 30 and self.max_bytes >= 1
                  and math.isfinite(self.beta) and self.beta > 0)
        except (KeyError, TypeError, ValueError, OverflowError):
            ok = False
        if not ok:
            format_error(path, f"damaged context model ({spec!r})")
        self.packed = self.index = None
        if "filter.context_packed" in arrays:
            # the packed table checked whole and indexed by blocks of 64 slots; each message's slots
            # are then copied from it into a table of anonymous memory (context_gather), whose
            # other pages are never written: the system maps them to its zero page, and nothing the
            # size of the table is made (small pages: a huge page would be zeroed whole at the
            # first write into it)
            import mmap
            self.packed = arrays["filter.context_packed"]
            try:
                self.index = self.speedups.context_index(self.packed, self.bits)
            except ValueError as exc:
                format_error(path, f"damaged context model ({exc})")
            memory = mmap.mmap(-1, 8 << self.bits)
            if hasattr(mmap, "MADV_NOHUGEPAGE"):
                memory.madvise(mmap.MADV_NOHUGEPAGE)
            self.table = memoryview(memory).cast("I")
        else:
            self.table = arrays["filter.context_table"]
        if len(self.table) != 2 << self.bits:
            format_error(path, f"damaged context model (its table has {len(self.table)} counts; bits {self.bits} "
                         f"make it {2 << self.bits})")
        self.texts, self.symbols = arrays["filter.context_class_count"], arrays["filter.context_symbol_count"]
        for name in ("filter.context_class_count", "filter.context_symbol_count"):
            finite_sum(arrays[name], path, name)
            if any_negative(arrays[name]):
                format_error(path, f"array {name} holds negative counts")

    def score(self, raw: bytes) -> float:
        out, lengths = array.array("d", [0.0]), array.array("q", [0])
        text = raw[:self.max_bytes]
        if self.packed is not None:                # the counts of the slots this text reads, and no others
            self.speedups.context_gather([text], self.order, self.bits, self.max_bytes, self.packed, self.index,
                                         self.table)
        self.speedups.context_ratios([text], self.order, self.bits, self.max_bytes, self.table,
                                     self.texts[0], self.texts[1], self.symbols[0], self.symbols[1], self.beta,
                                     out, lengths)
        return out[0] / max(lengths[0], 1)


class LeanGrams:
    """The byte 4-gram model of a filter file (:class:`spamkit.models.bytegrams.ByteGramLogistic`),
    scoring one message: the sum of the weights of the distinct slots of the 4-grams of its first
    ``n_bytes`` raw bytes (:func:`spamkit.features.bytekeys.gram_slots`: each 4-gram read as a big-endian
    32-bit number, times :data:`GRAM_MULTIPLIER` modulo 2**32, its top ``bits`` bits), clipped to
    ±700 as ``decision_function`` clips it. The weights are read whole (float32, 4 bytes a slot)."""

    def __init__(self, path: Path, spec, arrays: dict):
        try:
            self.n_bytes, self.bits = int(spec["n_bytes"]), int(spec["bits"])
            ok = spec["n_bytes"] == self.n_bytes and spec["bits"] == self.bits and self.n_bytes >= 4 and 8 <= self.bits <= 30
        except (KeyError, TypeError, ValueError, OverflowError):
            ok = False
        weights = arrays.get("filter.grams_weights")
        if not ok or weights is None or weights.format != "f" or len(weights) != 1 << self.bits:
            format_error(path, f"damaged 4-gram model ({str(spec)[:200]})")
        self.weights = weights

    def score(self, raw: bytes) -> float:
        data = raw[:self.n_bytes]
        shift, mask, multiplier = 32 - self.bits, 0xFFFFFFFF, GRAM_MULTIPLIER
        value = int.from_bytes(data[:3], "big")
        slots = set()
        for byte in data[3:]:
            value = ((value << 8) | byte) & mask
            slots.add(((value * multiplier) & mask) >> shift)
        w = self.weights
        z = math.fsum(w[slot] for slot in slots)
        return min(max(z, -LOG_ODDS_LIMIT), LOG_ODDS_LIMIT)
