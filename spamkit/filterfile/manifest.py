"""Reading a filter file's manifest: the zip, ``manifest.json`` and every field's type and size
checked before anything else is read, so that ``spamkit info`` (and the loaders,
:mod:`spamkit.filterfile.persist` and :mod:`spamkit.mail.lean`) treat a filter file from elsewhere as the
hostile input it may be.

The standard library only (array dtypes are read from their NumPy names by
:func:`dtype_of`): ``spamkit info`` and pipe mode need no more.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import stat
from zlib import error as zlib_error

from ..common.patterns import LazyPattern
from .. import __version__
from ..common.errors import ModelFormatError
from .zipread import Archive, ArchiveError, Encrypted, UnknownMethod

TYPE_CHECKING = False                  # typing is not imported at run time (pipe mode's start-up)
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any, NoReturn


FORMAT = "spamkit-filter"


FORMAT_VERSION = 1


#: largest manifest read (uncompressed bytes); real ones are a few KB
MAX_MANIFEST_BYTES = 16 << 20


#: deepest nesting of JSON values in a manifest
MAX_JSON_DEPTH = 32


#: all members of a filter file together, uncompressed (bytes); SPAMKIT_MAX_FILTER_BYTES overrides
MAX_FILTER_BYTES = 2 << 30


#: longest line of a text member (a term, a message id), in bytes
MAX_LINE_BYTES = 4096


#: dtypes an array member may have: numbers, booleans and fixed-width text
_ARRAY_KINDS = frozenset("fiubU")


#: largest .npy header (magic, version, length and the header dict, padded)
NPY_HEADER_MAX = 4096


#: a NumPy dtype as ``dtype.str`` writes it: byte order, kind, item size ("<f8", "|u1", "<U12")
_DTYPE = LazyPattern(r"([<>|=]?)([a-zA-Z])(\d+)\Z")
#: a NumPy dtype as ``str(dtype)`` names it (what filter files record): "float64", "uint8", "bool"
_DTYPE_NAME = LazyPattern(r"(float|int|uint)(8|16|32|64)\Z")


def dtype_of(text) -> tuple[str, int] | None:
    """``(kind, item size in bytes)`` of a dtype of plain numbers, booleans or text, else None.

    >>> dtype_of("float64"), dtype_of("bool"), dtype_of("<U3"), dtype_of("|u1"), dtype_of("object")
    (('f', 8), ('b', 1), ('U', 12), ('u', 1), None)
    """
    if not isinstance(text, str):
        return None
    if text == "bool":
        return "b", 1
    m = _DTYPE_NAME.match(text)
    if m is not None:
        kind, size = {"float": "f", "int": "i", "uint": "u"}[m.group(1)], int(m.group(2)) // 8
        return None if kind == "f" and size == 1 else (kind, size)
    m = _DTYPE.match(text)
    if m is None or m.group(2) not in _ARRAY_KINDS:
        return None
    kind, size = m.group(2), int(m.group(3))
    if kind in "fiu" and size not in (1, 2, 4, 8) or kind == "f" and size == 1 or kind == "b" and size != 1:
        return None
    return kind, size * 4 if kind == "U" else size


def format_error(path: Path, problem: str) -> NoReturn:
    raise ModelFormatError(f"{path}: {problem}")


def max_filter_bytes() -> int:
    """The cap on a filter file's uncompressed size: :data:`MAX_FILTER_BYTES` or ``SPAMKIT_MAX_FILTER_BYTES``."""
    value = os.environ.get("SPAMKIT_MAX_FILTER_BYTES")
    try:
        return int(value) if value else MAX_FILTER_BYTES
    except ValueError:
        raise ModelFormatError(f"SPAMKIT_MAX_FILTER_BYTES={value!r} is not a number of bytes") from None


def read_member(z: Archive, path: Path, meta: dict, limit: int | None = None) -> bytes | memoryview:
    """A member's bytes, at most ``limit`` (the zip reader stops at the declared size), checksummed
    (:func:`member_chunks`, in one piece the size the zip directory declares)."""
    try:
        size = z.getinfo(meta["file"]).file_size
    except KeyError:
        size = 0                                          # member_chunks reports it missing
    pieces = list(member_chunks(z, path, meta, limit, chunk=max(size, 1 << 16)))
    return pieces[0] if len(pieces) == 1 else b"".join(pieces)       # one piece: not copied


def member_chunks(z: Archive, path: Path, meta: dict, limit: int | None = None, chunk: int = 1 << 20):
    """A member's bytes in pieces of at most ``chunk`` bytes, with :func:`read_member`'s checks:
    at most ``limit`` bytes, no longer than the zip directory says, the SHA-256 checked after
    the last piece (so a caller keeps nothing it was given until the generator has ended)."""
    name = meta["file"]
    try:
        info = z.getinfo(name)
    except KeyError:
        format_error(path, f"member {name} is missing; the file is damaged")
    if limit is not None and info.file_size > limit:
        format_error(path, f"member {name} declares {info.file_size} bytes, more than the {limit} its manifest allows")
    digest, total = hashlib.sha256(), 0
    try:
        with z.open(info, check_crc=False) as fh:       # the SHA-256 below is the stronger check
            while True:
                piece = fh.read(min(chunk, info.file_size + 1 - total))
                if not piece:
                    break
                total += len(piece)
                if total > info.file_size:
                    format_error(path, f"member {name} is longer than the zip directory says; the file is damaged")
                digest.update(piece)
                yield piece
    except UnknownMethod as exc:
        format_error(path, f"member {name} uses an unsupported compression ({exc})")
    except Encrypted as exc:
        format_error(path, f"member {name} cannot be read ({exc})")
    except (OSError, EOFError, ValueError, zlib_error) as exc:
        format_error(path, f"member {name} is damaged ({exc})")
    if digest.hexdigest() != meta["sha256"]:
        format_error(path, f"member {name} fails its checksum; the file is damaged")


def read_manifest(path) -> dict:
    """The manifest of a filter file (format, version and structure checked; no member read)."""
    with open_zip(path) as z:
        return check_manifest(z, path)


def whole_file(path: Path) -> bytes | None:
    """The bytes of the filter file at ``path`` in one read, when it is a regular file no larger
    than a filter may be (:func:`max_filter_bytes`); None otherwise, or when it cannot be read
    or changed size while it was read (:func:`open_zip` then opens it in place and says what is
    wrong). Pipe mode reads a file once for its members (its id is the manifest's SHA-256:
    :func:`manifest_sha256`)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))     # a FIFO does not wait for a writer
    except (OSError, ValueError):
        return None
    with os.fdopen(fd, "rb") as fh:
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_size > max_filter_bytes():
                return None
            data = fh.read(st.st_size + 1)
        except (OSError, ModelFormatError):
            return None
    return data if len(data) == st.st_size else None


def open_zip(path: Path | str, data: bytes | None = None) -> Archive:
    """The filter file at ``path`` as a zip archive (:class:`~spamkit.filterfile.zipread.Archive`:
    from ``data``, its bytes, when given, else read from the file as its members are)."""
    try:
        return Archive(data) if data is not None else Archive(open(path, "rb"), owns_file=True)
    except FileNotFoundError:
        raise ModelFormatError(f"{path}: no such filter file") from None
    except IsADirectoryError:
        raise ModelFormatError(f"{path}: is a folder, not a filter file") from None
    except (ArchiveError, OSError, ValueError, EOFError) as exc:
        raise ModelFormatError(f"{path}: not a spamkit filter file, or truncated ({exc})") from None


def _depth(value) -> int:
    """Nesting depth of a JSON value, without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, d = stack.pop()
        deepest = max(deepest, d)
        if isinstance(item, dict):
            stack.extend((v, d + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, d + 1) for v in item)
    return deepest


def manifest_sha256(z: Archive) -> str:
    """The hex SHA-256 of the filter's ``manifest.json`` (read after :func:`check_manifest`, which
    bounds it): what identifies the filter in its tags (:func:`spamkit.mail.tags.model_id_of`).
    The manifest holds the SHA-256 of every member, checked whenever a member is read, so it
    changes with any byte the filter is made of, as the whole file's SHA-256 would; hashing a
    few kilobytes instead of the whole file was half of one-shot pipe mode's instructions on a
    10.8 MB filter (docs/results.md, "Start-up")."""
    return hashlib.sha256(z.read("manifest.json")).hexdigest()


def filter_sha256(path) -> str:
    """:func:`manifest_sha256` of the filter file at ``path``; for a file that is no filter (no
    zip, no manifest) the SHA-256 of its bytes, so that any file still has an id."""
    try:
        with open_zip(path) as z:
            check_manifest(z, path)
            return manifest_sha256(z)
    except (ModelFormatError, OSError, ValueError, EOFError, zlib_error):
        with open(path, "rb") as fh:
            return hashlib.sha256(fh.read()).hexdigest()


def check_manifest(z: Archive, path: Path) -> dict:
    try:
        info = z.getinfo("manifest.json")
    except KeyError:
        raise ModelFormatError(f"{path}: no manifest.json; not a spamkit filter file") from None
    if info.file_size > MAX_MANIFEST_BYTES:
        format_error(path, f"manifest.json declares {info.file_size} bytes; a manifest may have at most "
                    f"{MAX_MANIFEST_BYTES} (MAX_MANIFEST_BYTES)")
    try:
        with z.open(info) as fh:
            text = fh.read(MAX_MANIFEST_BYTES + 1)
        if len(text) > MAX_MANIFEST_BYTES:
            format_error(path, "manifest.json is longer than the zip directory says")
        manifest = json.loads(str(text, "utf-8"))
    except RecursionError:
        raise ModelFormatError(f"{path}: manifest.json is nested too deeply") from None
    except UnknownMethod as exc:
        raise ModelFormatError(f"{path}: manifest.json uses an unsupported compression ({exc})") from None
    except Encrypted as exc:
        raise ModelFormatError(f"{path}: manifest.json cannot be read ({exc})") from None
    except (ValueError, UnicodeDecodeError, OSError, EOFError, zlib_error) as exc:
        raise ModelFormatError(f"{path}: damaged manifest ({exc})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ModelFormatError(f"{path}: not a spamkit filter file (format {manifest.get('format')!r})"
                               if isinstance(manifest, dict) else f"{path}: damaged manifest")
    version = manifest.get("format_version")
    if not isinstance(version, int) or version > FORMAT_VERSION or version < 1:
        raise ModelFormatError(f"{path}: filter format version {version!r} is not supported by spamkit "
                               f"{__version__} (reads version {FORMAT_VERSION}); upgrade spamkit "
                               f"(the file was written by spamkit {manifest.get('spamkit_version')})")
    if _depth(manifest) > MAX_JSON_DEPTH:
        format_error(path, f"manifest.json is nested more than {MAX_JSON_DEPTH} deep")
    _check_structure(manifest, path)
    return manifest


def _is_count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _check_structure(manifest: dict, path: Path) -> None:
    """Types and shapes of the manifest's fields, before any member is read."""
    def need(ok: bool, what: str):
        if not ok:
            format_error(path, f"damaged manifest: {what}")

    arrays: Any = manifest.get("arrays")
    model: Any = manifest.get("model")
    need(isinstance(arrays, dict), "'arrays' is not a table")
    for name, meta in arrays.items():
        need(isinstance(meta, dict) and isinstance(meta.get("file"), str) and isinstance(meta.get("sha256"), str)
             and isinstance(meta.get("dtype"), str) and isinstance(meta.get("shape"), list)
             and len(meta["shape"]) <= 2 and all(_is_count(n) for n in meta["shape"]),
             f"array {name!r} is not described by file, sha256, dtype and a shape of at most 2 sizes")
        dtype = dtype_of(meta["dtype"])
        need(dtype is not None and dtype[1] <= 4096,
             f"array {name!r} has dtype {meta['dtype']!r}; only numbers, booleans and text are allowed")
    need(isinstance(model, dict) and isinstance(model.get("type"), str) and isinstance(model.get("params"), dict)
         and isinstance(model.get("classes"), list) and 1 <= len(model["classes"]) <= 10_000
         and all(isinstance(c, (str, int)) and not isinstance(c, bool) for c in model["classes"])
         and _is_count(model.get("n_features")) and isinstance(model.get("texts", {}), dict),
         "'model' lacks a type, parameters, a list of classes or a number of features")
    need(len(set(map(str, model["classes"]))) == len(model["classes"]), "the classes repeat")
    for name, meta in text_members(manifest).items():
        need(isinstance(meta, dict) and isinstance(meta.get("file"), str) and isinstance(meta.get("sha256"), str)
             and _is_count(meta.get("count")), f"text member {name!r} is not described by file, sha256 and count")
    need(isinstance(manifest.get("analyzer"), dict) and isinstance(manifest.get("vectorizer"), dict),
         "'analyzer' or 'vectorizer' is not a table")
    for key in ("training", "extra"):
        need(isinstance(manifest.get(key, {}), dict), f"'{key}' is not a table")
    _check_context(manifest.get("extra", {}).get("context", None), need)
    _check_grams(manifest.get("extra", {}).get("grams", None), need)
    threshold = manifest.get("extra", {}).get("threshold")
    if threshold:
        p = threshold.get("p_spam") if isinstance(threshold, dict) else None
        need(isinstance(p, (int, float)) and not isinstance(p, bool) and 0.0 <= p <= 1.0,
             f"the threshold {p!r} is not a probability")


def _check_grams(spec, need) -> None:
    """A byte 4-gram model's description (spamkit.models.bytegrams.ByteGramLogistic.check_params):
    whole numbers of bytes (>= 4) and bits (8-30), a finite positive rate, and folds (>= 2)
    where it says them (files written before the setting have none); before its weights are
    read."""
    if spec is None:
        return
    ok = isinstance(spec, dict) and all(_is_count(spec.get(k)) for k in ("n_bytes", "bits"))
    ok = ok and spec["n_bytes"] >= 4 and spec["bits"] in CONTEXT_BITS
    rate = spec.get("rate") if isinstance(spec, dict) else None
    ok = ok and isinstance(rate, (int, float)) and not isinstance(rate, bool) and 0 < rate < float("inf")
    ok = ok and ("folds" not in spec or (_is_count(spec["folds"]) and spec["folds"] >= 2))
    need(ok, f"the 4-gram model is described as {str(spec)[:200]}: n_bytes >= 4, bits 8-30, a rate > 0, "
             "folds >= 2")


#: what a context model's description may say (spamkit.models.context.ByteContextModel.check_params)
CONTEXT_ORDERS, CONTEXT_BITS = range(0, 17), range(8, 31)


def _check_context(spec, need) -> None:
    """A context model's description, as both routes read it: whole numbers in range, a finite
    positive beta; one check, before any table is made (the lean route and the full one once
    disagreed on what they accepted)."""
    if spec is None:
        return
    ok = isinstance(spec, dict) and all(_is_count(spec.get(k)) for k in ("order", "bits", "max_bytes"))
    ok = ok and spec["order"] in CONTEXT_ORDERS and spec["bits"] in CONTEXT_BITS and spec["max_bytes"] >= 1
    beta = spec.get("beta") if isinstance(spec, dict) else None
    ok = ok and isinstance(beta, (int, float)) and not isinstance(beta, bool) and 0 < beta < float("inf")
    need(ok, f"the context model is described as {str(spec)[:200]}: order 0-16, bits 8-30, max_bytes >= 1 "
         "and a positive beta are needed")


def is_count_array(name: str) -> bool:
    """Whether array ``name`` of a filter file holds counts (never negative, a finite sum)."""
    return name.endswith(("count_", ".df", ".n_docs", "_count")) or name in ("model.X_data", "model.X_shape")


#: arrays whose two values are a range, the smaller first
RANGE_ARRAYS = ("model.length_range_",)


def value_problem(name: str, kind: str, all_finite: bool, smallest, total, pair=None) -> str | None:
    """What is wrong with the values of array ``name`` (dtype kind ``kind``), or None: the rule
    both routes apply, each computing ``all_finite`` (every value a finite number), ``smallest``
    and ``total`` (their sum) with its own tools (NumPy; ``array`` and ``math``).

    >>> value_problem("model.feature_count_", "f", True, -1.0, 3.0)
    'holds negative counts'
    >>> value_problem("model.feature_count_", "f", True, 0.0, float("inf"))
    'holds counts whose sum is not a finite number'
    >>> value_problem("model.combiner_", "f", True, -5.0, -1.0) is None
    True
    """
    if kind == "f" and not all_finite:
        return "holds values that are not finite numbers"
    if is_count_array(name):
        if smallest is not None and smallest < 0:
            return "holds negative counts"
        if total is not None and not math.isfinite(total):
            return "holds counts whose sum is not a finite number"
    if name in RANGE_ARRAYS and pair is not None and not (len(pair) == 2 and pair[0] <= pair[1]):
        return "is not two numbers, the smaller first"
    return None


def text_members(manifest: dict) -> dict:
    """The manifest's descriptions of its text members: the model's lists and the vocabulary
    (absent in hashing mode)."""
    texts = dict(manifest["model"].get("texts", {}))
    if manifest.get("terms") is not None:
        texts["terms"] = manifest["terms"]
    return texts


def read_lines(z: Archive, path: Path, meta: dict, limit: int | None = None) -> list[str]:
    """A text member's lines: as many as the manifest's ``count`` (checked before the text is
    split, so that a member of line feeds never becomes more strings than were paid for)."""
    try:
        text = str(read_member(z, path, meta, limit), "utf-8")
    except UnicodeDecodeError:
        format_error(path, f"{meta['file']} is not UTF-8 text")
    found = text.count("\n") + 1 if text else 0
    if found != meta["count"]:
        raise ModelFormatError(f"{path}: {meta['file']} has {found} lines, the manifest says {meta['count']}")
    return text.split("\n") if text else []


def term_hash(term: str) -> int:
    """A term's 64-bit key in the file's hash index (``filter.term_hash``): BLAKE2b, 8 bytes.

    Looking a message's few hundred tokens up in the sorted keys (binary search) spares pipe
    mode reading and indexing the whole vocabulary (~30 ms for 90,000 terms). A token outside
    the vocabulary whose key equals a term's would take that term's column: with V terms the
    chance is V / 2^64 per token (5e-15 for V = 90,000), and :func:`spamkit.filterfile.persist.save_filter`
    writes no index for a vocabulary in which two terms share a key.

    >>> term_hash("viagra") == term_hash("viagra") != term_hash("Viagra")
    True
    """
    return int.from_bytes(hashlib.blake2b(term.encode("utf-8"), digest_size=8).digest(), "little")


def judged_shapes_problem(described: dict) -> str | None:
    """What is wrong with the types and shapes of a file's judged messages (``{name: (dtype,
    shape)}`` of its filter arrays, without the ``filter.`` prefix), or None: P(spam) float64, one
    a message; the labels uint8, as many; the combiner's rows float64, a row each; the
    familiarities float64, one each. The full route and the lean route both apply it.

    >>> judged_shapes_problem({"judged_p_spam": ("float64", [3]), "judged_spam": ("uint8", [3])}) is None
    True
    >>> judged_shapes_problem({"judged_p_spam": ("float64", [3]), "judged_spam": ("uint8", [2])})
    'judged_spam is not uint8 of shape [3]'
    """
    if "judged_p_spam" not in described or described["judged_p_spam"][0] != "float64" \
            or len(described["judged_p_spam"][1]) != 1:
        return "judged_p_spam is missing or not one float64 a message"
    n = described["judged_p_spam"][1][0]
    for name, dtype, wanted in (("judged_spam", "uint8", [n]), ("judged_familiarity", "float64", [n])):
        if (name in described or name == "judged_spam") and described.get(name) != (dtype, wanted):
            return f"{name} is not {dtype} of shape {wanted}"
    rows = described.get("judged_rows")
    if rows is not None and (rows[0] != "float64" or len(rows[1]) != 2 or rows[1][0] != n):
        return f"judged_rows is not float64 of {n} rows"
    return None
