"""A filter file's arrays read with the standard library alone, for pipe mode's fast path.

Takes the ``.npy`` members of a filter file (:mod:`spamkit.filterfile.manifest` opens the file
and checks each member's size and SHA-256 against the manifest) and gives their numbers as typed
``memoryview`` objects (on a little-endian machine, views of the members' own bytes, no copy),
checked as :func:`spamkit.filterfile.persist.load_filter` checks them with NumPy: the ``.npy``
header's type, order and shape against the manifest, and the values (finite; counts not
negative; the ranges the manifest's rules give), by C-speed passes over the bytes where they can
tell, number by number where they cannot. :mod:`spamkit.mail.lean` scores a message with them.
"""

from __future__ import annotations

import array
import math
import sys

from ..common.patterns import LazyPattern
from ..common.compiled import speedups as _compiled
from ..filterfile.manifest import RANGE_ARRAYS, format_error, is_count_array, member_chunks, read_member, value_problem

TYPE_CHECKING = False                  # typing's names for the checker only (pipe mode's start-up)
if TYPE_CHECKING:
    from pathlib import Path


speedups = _compiled()                   # spamkit/filterfile/values.c's float_summary, or None

#: .npy type -> array typecode, for the arrays read here
TYPECODES = {"<f8": "d", "<u8": "Q", "<i8": "q", "<f4": "f"}


def npy_values(data: bytes | memoryview, path: Path, name: str, meta: dict):
    """The numbers of a ``.npy`` member of little-endian float64, uint64, int64 or float32 (a
    4-gram model's weights), as a ``memoryview`` of that type: on a little-endian machine a view of
    the member's own bytes (no copy: every array of the file is read for every message), else of
    a byte-swapped ``array``."""
    parsed = npy_header(data, path, name)
    if parsed is None:
        format_error(path, f"array {name} is not a .npy array")
    header, start = parsed
    shape = list(header.get("shape", ()))
    typecode = TYPECODES.get(str(header.get("descr")))
    if typecode is None or header.get("fortran_order") is not False or shape != meta["shape"]:
        format_error(path, f"array {name} has the wrong shape or type")
    itemsize = 4 if typecode == "f" else 8
    if (array.array(typecode).itemsize != itemsize or (len(data) - start) % itemsize
            or (len(data) - start) // itemsize != math.prod(shape)):
        format_error(path, f"array {name} has the wrong shape or type")
    if sys.byteorder == "little":
        return memoryview(data)[start:].cast(typecode)   # type: ignore[call-overload]  # one of TYPECODES
    values = array.array(typecode)
    values.frombytes(memoryview(data)[start:])
    values.byteswap()
    return memoryview(values)


def npy_header(data: bytes | memoryview, path: Path, name: str) -> tuple[dict, int] | None:
    """The header of a ``.npy`` member and where its data starts, or None while ``data`` holds
    less than the whole header."""
    if len(data) < 10:
        return None
    if data[:6] != b"\x93NUMPY":
        format_error(path, f"array {name} is not a .npy array")
    length_bytes = 2 if data[6] == 1 else 4
    start = 8 + length_bytes + int.from_bytes(data[8:8 + length_bytes], "little")
    if len(data) < start:
        return None
    text = str(data[8 + length_bytes:start], "latin-1")
    header = numpy_header(text)
    if header is None:                                  # another writer's spelling: Python's own parser
        import ast

        try:
            header = ast.literal_eval(text)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            format_error(path, f"array {name} has a damaged header")
    if not isinstance(header, dict):
        format_error(path, f"array {name} has a damaged header")
    return header, start


#: the header NumPy's ``np.save`` writes (``numpy.lib.format``: a dict literal of descr,
#: fortran_order and shape, in this order, padded with spaces to a multiple of 64 bytes)
_NUMPY_HEADER = LazyPattern(r"\{'descr': '([<>|=]?[a-zA-Z]\d+)', 'fortran_order': (False|True), "
                           r"'shape': \(((?:\d+, )*\d+,?|)\), \} *\n?\Z")


def numpy_header(text: str) -> dict | None:
    """The header dict of a ``.npy`` file in the form NumPy writes it, read without :mod:`ast`
    (importing it costs pipe mode ~8 ms); None for any other form, which
    :func:`ast.literal_eval` then reads.

    >>> numpy_header("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }    \\n")
    {'descr': '<f8', 'fortran_order': False, 'shape': (2, 3)}
    >>> numpy_header("{'descr': '<f4', 'fortran_order': False, 'shape': (), }"), numpy_header("{'shape': (1,)}")
    ({'descr': '<f4', 'fortran_order': False, 'shape': ()}, None)
    """
    match = _NUMPY_HEADER.match(text)
    if match is None:
        return None
    descr, order, shape = match.groups()
    return {"descr": descr, "fortran_order": order == "True",
            "shape": tuple(int(n) for n in shape.replace(",", " ").split())}


def npy_uint32(z, path: Path, name: str, meta: dict, limit: int) -> memoryview:
    """A ``.npy`` member of little-endian uint32 (the dense context table, ``filter.context_table``,
    of files written before the packed one: 128 MB) read piece by piece into one ``bytearray`` made beforehand, seen as
    unsigned 32-bit numbers: no second copy of it in memory. The member's size and checksum are checked as :func:`read_member` checks them,
    before it is returned. A little-endian machine's (:func:`spamkit.mail.lean.lean_filter` reads it only there)."""
    target = memoryview(bytearray(4 * math.prod(meta["shape"])))
    head, filled = b"", None
    for piece in member_chunks(z, path, meta, limit):
        if filled is None:                                      # the header is still being read
            head += piece
            parsed = npy_header(head, path, name)
            if parsed is None:
                continue
            header, start = parsed
            if (header.get("descr") != "<u4" or header.get("fortran_order") is not False
                    or list(header.get("shape", ())) != meta["shape"]):
                format_error(path, f"array {name} has the wrong shape or type")
            piece, filled, head = head[start:], 0, b""
        if filled + len(piece) > len(target):
            format_error(path, f"array {name} holds more data than its shape")
        target[filled:filled + len(piece)] = piece
        filled += len(piece)
    if filled != len(target):
        format_error(path, f"array {name} holds less data than its shape")
    return target.cast("I")


def npy_bytes(z, path: Path, name: str, meta: dict, limit: int) -> memoryview:
    """A one-dimensional ``.npy`` member of uint8 (the packed context table), as its bytes."""
    data = read_member(z, path, meta, limit)
    parsed = npy_header(data, path, name)
    if parsed is None:
        format_error(path, f"array {name} is not a .npy array")
    header, start = parsed
    if (header.get("descr") != "|u1" or header.get("fortran_order") is not False
            or list(header.get("shape", ())) != meta["shape"] or len(meta["shape"]) != 1
            or len(data) - start != meta["shape"][0]):
        format_error(path, f"array {name} has the wrong shape or type")
    return memoryview(data)[start:]


def _top_bytes(values) -> bytes:
    """The most significant byte of each number of ``values`` (a typed memoryview). The whole
    array is copied first and then sliced: a strided memoryview copies byte by byte, 2.4x
    slower (2.2 against 0.94 ms for 182,200 float64 on the project's machine)."""
    top = values.itemsize - 1 if sys.byteorder == "little" else 0
    return values.tobytes()[top::values.itemsize]


#: every byte below 0x80: what is left after deleting them is the bytes with the sign bit set
_LOW_BYTES = bytes(range(0x80))


def any_negative(values) -> bool:
    """Whether signed ``values`` (float or int, any width) hold a number below 0, looking at the
    sign bits first (a C-speed pass over the bytes; only when one is set are the numbers
    themselves compared: -0.0 is not below 0)."""
    return bool(_top_bytes(values).translate(None, _LOW_BYTES)) and min(values) < 0


def finite_sum(values, path: Path, name: str) -> float:
    """The sum of float values, which is finite exactly when no value is a NaN or an infinity
    (for counts and weights far below 1e308)."""
    total = speedups.float_summary(values)[2] if speedups is not None else sum(values)
    if not math.isfinite(total):
        format_error(path, f"array {name} holds values that are not finite numbers")
    return total


#: the dtypes of the arrays of numbers read here (``TYPECODES``), as a manifest names them
DTYPES = ("float64", "int64", "uint64", "float32")


#: the top bytes (the sign and the exponent's seven high bits) of float64 values below 2**993, and of
#: float32 values below 2**125, in magnitude: finite, and fewer than 2**31 of them sum to a finite number
_SMALL_TOP = bytes(b for b in range(256) if b & 0x7F <= 0x7D)


def _finite_and_small(values) -> bool:
    """Whether every float of ``values`` is finite and far from overflowing a sum, from the top
    byte of each alone (a C-speed pass: ``bytes.translate``); False says only "look closer"."""
    return not _top_bytes(values).translate(None, _SMALL_TOP)


def check_values(values, path: Path, name: str, dtype: str) -> None:
    """:func:`spamkit.filterfile.manifest.value_problem` for an array read here. Floats, where the
    compiled loops are built: one pass in C (``float_summary``: finite, smallest, sum). Else floats: every value's
    top byte first (finite and small: so is the sum); else the sum (finite when every value is,
    unless it overflows: then each value is looked at). Counts: the sign bits, then the numbers
    where one is set. Integers are finite and their sums exact."""
    kind = dtype[0] if dtype[0] in "fiu" else "f"
    counts = is_count_array(name)
    pair = list(values) if name in RANGE_ARRAYS else None
    if kind == "f" and speedups is not None:      # one pass in C: spamkit/filterfile/values.c
        all_finite, smallest, total = speedups.float_summary(values)
        problem = value_problem(name, kind, all_finite, smallest if counts else None, total if counts else None, pair)
        if problem is not None:
            format_error(path, f"array {name} {problem}")
        return
    total = None                                   # None: known to be finite
    if kind == "f" and not _finite_and_small(values):
        total = float(sum(values))
        all_finite = math.isfinite(total) or all(map(math.isfinite, values))
    else:
        all_finite = True
    smallest = None
    if counts:
        smallest = -1.0 if kind != "u" and any_negative(values) else 0.0
    problem = value_problem(name, kind, all_finite, smallest, total if counts else None, pair)
    if problem is not None:
        format_error(path, f"array {name} {problem}")
