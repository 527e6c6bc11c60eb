"""A context model's table as a filter file keeps it: packed (the gaps between slots with a
count, and their two counts, as LEB128 varints) and unpacked again with every check.

Takes the dense ``(2**bits, 2)`` uint32 table of :class:`spamkit.models.context.ByteContextModel`
and gives the packed uint8 array, and back (in C where built, else NumPy, the same checks); a
packed table that is not such a table raises a ConfigError.
"""

from __future__ import annotations

import numpy as np

from ..common.compiled import speedups as _compiled
from ..common.errors import ConfigError

speedups = _compiled()                   # spamkit/common/speedups.c, or None: NumPy throughout

#: where a count stops (the table's counts are uint32)
SATURATED = np.iinfo(np.uint32).max
#: slots pack_table packs at a time (its temporaries: about 100 bytes a slot with a count)
PACK_SLOTS = 1 << 20


def _varints(values: np.ndarray) -> np.ndarray:
    """Unsigned numbers (< 2**35) as LEB128 varints, one after another (uint8)."""
    values = values.astype(np.uint64)
    sizes = np.ones(len(values), dtype=np.int8)
    for k in range(1, 5):
        sizes += values >= np.uint64(1 << (7 * k))
    starts = np.cumsum(sizes, dtype=np.int64) - sizes
    out = np.empty(int(starts[-1] + sizes[-1]) if len(values) else 0, dtype=np.uint8)
    out[starts] = (values & np.uint64(0x7F)).astype(np.uint8) | ((sizes > 1).astype(np.uint8) << 7)
    for k in range(1, 5):                     # the few numbers of more than one byte
        has = np.flatnonzero(sizes > k)
        if not len(has):
            break
        more = (sizes[has] > k + 1).astype(np.uint8) << 7
        out[starts[has] + k] = ((values[has] >> np.uint64(7 * k)) & np.uint64(0x7F)).astype(np.uint8) | more
    return out


def pack_table(slots: np.ndarray) -> np.ndarray:
    """A context model's counts (``slots_``: 2**bits rows of two uint32) as a filter file keeps
    them: the table's ``bits``, then for every slot with a count, in slot order, the gap since
    the previous such slot and its two counts, each a LEB128 varint (uint8 array). A trained table is mostly empty (about
    15% of the 2**24 slots after trec07p-dev): packed it is a tenth of the dense table, and is
    inflated and unpacked in a fraction of the time inflating the dense table took."""
    slots = np.ascontiguousarray(slots, dtype=np.uint32)
    bits = int(len(slots)).bit_length() - 1
    if len(slots) != 1 << bits or slots.shape[1:] != (2,):
        raise ConfigError(f"a context table is 2**bits rows of two counts, not {slots.shape}")
    pairs = slots.view(np.uint64).reshape(-1)            # a slot's two counts as one number
    parts, last = [_varints(np.array([bits]))], -1
    for start in range(0, len(slots), PACK_SLOTS):       # a range of slots at a time: small temporaries
        at = np.flatnonzero(pairs[start:start + PACK_SLOTS]) + start
        if len(at):
            gaps = np.diff(at, prepend=last) - 1
            parts.append(_varints(np.column_stack([gaps, slots[at, 0], slots[at, 1]]).reshape(-1)))
            last = at[-1]
    return np.concatenate(parts)


def unpack_table(packed, bits: int) -> np.ndarray:
    """The table :func:`pack_table` packed, ``(2**bits, 2)`` uint32 (in C where built, else
    NumPy, the same checks). Raises ConfigError when the data is not such a table (a varint cut
    short, longer than 5 bytes or past 2**32 - 1, a slot past the table, a slot with no count,
    the table of another ``bits``)."""
    packed = np.ascontiguousarray(packed, dtype=np.uint8).reshape(-1)
    table = np.zeros((1 << bits, 2), dtype=np.uint32)
    if speedups is not None:
        try:
            speedups.context_unpack(packed, table.reshape(-1))
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        return table
    ends = np.flatnonzero(packed < 0x80)
    if not len(ends):
        raise ConfigError("packed context table: it is a table of another size than the model's settings say")
    if ends[-1] != len(packed) - 1:
        raise ConfigError("packed context table: a number is cut short, too long or past 2**32 - 1")
    starts = np.concatenate([[0], ends[:-1] + 1]).astype(np.int64)
    sizes = ends - starts + 1
    values = np.zeros(len(ends), dtype=np.uint64)
    for k in range(5):
        has = sizes > k
        values[has] |= (packed[starts[has] + k].astype(np.uint64) & np.uint64(0x7F)) << np.uint64(7 * k)
    if sizes[0] > 5 or values[0] != bits:
        raise ConfigError("packed context table: it is a table of another size than the model's settings say")
    sizes, values = sizes[1:], values[1:]
    if (sizes > 5).any() or (values > SATURATED).any() or len(values) % 3:
        raise ConfigError("packed context table: a number is cut short, too long or past 2**32 - 1")
    triples = values.reshape(-1, 3)
    slot = np.cumsum(triples[:, 0].astype(np.int64) + 1) - 1
    if len(slot) and slot[-1] >= (1 << bits):
        raise ConfigError("packed context table: a slot lies past the table")
    if ((triples[:, 1] == 0) & (triples[:, 2] == 0)).any():
        raise ConfigError("packed context table: a slot is stored with no count")
    table[slot] = triples[:, 1:].astype(np.uint32)
    return table
