"""Filter files: everything needed to classify, in a safe, documented format. Never pickle.

A filter file (``*.spamkit``) is a zip archive:

``manifest.json``
    ``format`` (``"spamkit-filter"``), ``format_version`` (:data:`FORMAT_VERSION`),
    the spamkit version that wrote it, creation time, the analyzer configuration,
    the vectorizer configuration, the model type, its constructor parameters and
    classes, the training summary (corpora, counts, parameters, library versions),
    and for every other member its SHA-256, dtype and shape.
``terms.txt``
    The vocabulary, one token per line in column order (UTF-8; tokens never contain
    a newline). Absent in hashing mode.
``arrays/<name>.npy``
    NumPy arrays (the model's counts, document frequencies, idf), read back with
    ``allow_pickle=False``. With a vocabulary, ``filter.term_hash`` and
    ``filter.term_hash_column`` index it by a 64-bit key per term
    (:func:`spamkit.filterfile.termindex.term_hash_index`), so that pipe mode (:mod:`spamkit.mail.lean`) looks a message's
    tokens up without reading ``terms.txt``; files without them still load everywhere.

Loading a file therefore never runs code from it: JSON, text and ``.npy`` arrays of
plain numbers only. A truncated or altered file fails its zip CRC or SHA-256 check;
a file from a newer spamkit names the version it needs.

A filter file is something users share and download, so the loader treats it as
hostile data (:func:`load_filter`): the manifest is read only if its uncompressed size
is at most :data:`spamkit.filterfile.manifest.MAX_MANIFEST_BYTES` and parsed with a nesting limit; its structure
and types are checked before anything else is read; every member's uncompressed size,
as the zip directory declares it, must match what the manifest's own dtypes, shapes and
counts imply, and all members together must stay under :data:`spamkit.filterfile.manifest.MAX_FILTER_BYTES`
(``SPAMKIT_MAX_FILTER_BYTES`` raises it for a filter that really is that big) — all
before a byte of any member is decompressed, and the zip reader never produces more
than the declared size. Arrays must be plain numbers or text, shaped consistently
with the classes, the vocabulary and each other; counts finite and non-negative; the
vocabulary free of duplicates. A filter file carries data, never instructions: no file
paths (stop words travel as a list), and the token pattern must be one of the
analyzer's own (:data:`spamkit.text.tokenize.NAMED_PATTERNS`) unless the caller
trusts the file (``trusted=True``, for one's own files). Files are written atomically
(a temporary file in the same folder, flushed, fsynced, then renamed over the old
one), so a crash while saving leaves the previous file intact, and by
:class:`spamkit.filterfile.ziparchive.ZipWriter` (members deflated by ISA-L at level 1; zipfile, with
ZIP64, writes a file too large for 32-bit sizes); :mod:`spamkit.filterfile.zipread` reads them, for
this loader and for pipe mode's fast path alike.

The manifest's own checks are :mod:`spamkit.filterfile.manifest` (all ``spamkit info`` needs).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import io
import json
import zipfile
import zlib
from pathlib import Path

import numpy as np

from .. import __version__
from ..common.durable import atomic_write
from ..common.errors import ConfigError, ModelFormatError
from .manifest import (FORMAT, FORMAT_VERSION, MAX_LINE_BYTES, RANGE_ARRAYS, check_manifest,  # noqa: F401
                       format_error, is_count_array, member_chunks, open_zip, read_lines, read_manifest, read_member,
                       value_problem)  # (read_manifest: re-exported with the loader)
from .budget import data_bytes, expected_sizes, member_limits, over_budget
from ..features.vectorizer import Vectorizer
from ..models import (BernoulliNB, ComplementNB, FisherNBStack, KNNClassifier, MultinomialNB, OnlineLogistic,
                     RobinsonFisher)
from ..text import Analyzer
from .ziparchive import ZipWriter, fits, pack
from .termindex import PreparedLines, overlong_entry, term_hash_index
from .zipread import Archive


#: arrays written without compression: those one-shot pipe mode reads whole for every message
#: (the lean route: counts, weights, document frequencies, the vocabulary's columns). Inflating
#: them was 26-31 ms of its ~130; stored, the lean route loads trec07p-dev's default filter in
#: 42-46 ms instead of 62-82, and the file takes 10.8 MB instead of 5.3 (the counts deflate
#: twelvefold, the weights by a tenth to a third). docs/results.md, "Start-up".
STORED_ARRAYS = frozenset({"model.feature_count_", "model.logistic_coef_", "vectorizer.df", "filter.grams_weights",
                           "filter.term_hash_column"})

# model type -> (class, constructor parameters stored). Each class says what else it stores
# through state_arrays() (arrays and text lists) and rebuilds itself with restore_state().
# GaussianNB is a library estimator for dense numeric features; text filters use these.
MODEL_TYPES = {
    "multinomial": (MultinomialNB, ("alpha", "fit_prior", "class_prior")),
    "bernoulli": (BernoulliNB, ("alpha", "fit_prior", "class_prior", "binarize")),
    "fisher": (RobinsonFisher, ("strength", "prior", "min_dev", "max_clues")),
    "fisher-nb": (FisherNBStack, ("strength", "prior", "min_dev", "max_clues", "alpha", "folds", "logistic", "squash",
                                  "length_aware", "side_inputs", "combiner_center")),
    "logistic": (OnlineLogistic, ("rate", "epochs")),
    "complement": (ComplementNB, ("alpha", "norm", "tf_transform", "length_norm")),
    "knn": (KNNClassifier, ("k", "weights", "metric", "tau", "epsilon", "memory_limit", "n_jobs", "p",
                            "standardize")),
}


def model_type_of(model) -> str:
    for name, (cls, _) in MODEL_TYPES.items():
        if type(model) is cls:
            return name
    raise ModelFormatError(f"cannot save a {type(model).__name__}: not a spamkit model type")


def _jsonable(value):
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating,)):
        return float(value)
    return value


class _HashingWriter:
    """A writable stream that hashes (SHA-256) and counts what it is given, and passes it on to
    ``out`` if there is one."""

    def __init__(self, out=None):
        self.out, self.digest, self.size = out, hashlib.sha256(), 0

    def write(self, data) -> int:
        self.digest.update(data)
        self.size += len(data)
        return self.out.write(data) if self.out is not None else len(data)


#: arrays of a filter smaller than this are packed (np.save's bytes hashed and deflated) on
#: :data:`SAVE_THREADS` threads while the file is written, each held packed until its turn;
#: larger ones stream into the file as np.save writes them, never held whole (a context model's
#: table is 128 MB)
PACK_AHEAD_BYTES = 16 << 20
#: the threads that pack arrays ahead (SHA-256, ISA-L's deflate and CRC-32 let go of the GIL)
SAVE_THREADS = 2


class _Pieces:
    """A writable stream that keeps what it is given (np.save's header and data)."""

    def __init__(self):
        self.parts: list = []

    def write(self, data) -> int:
        self.parts.append(bytes(data))
        return len(data)


def _pack_array(array: np.ndarray, deflate: bool):
    """``(Packed, SHA-256 hex)`` of ``np.save(array)``'s bytes: the member and its checksum."""
    pieces = _Pieces()
    np.save(pieces, array, allow_pickle=False)
    digest = hashlib.sha256()
    return pack(pieces.parts, deflate=deflate, digest=digest), digest.hexdigest()


def save_filter(path, analyzer: Analyzer, vectorizer: Vectorizer, model, training: dict | None = None,
                extra: dict | None = None, filter_arrays: dict | None = None, term_index=None,
                side_model: bool = False) -> None:
    """Write a filter file (see the module docstring) atomically to ``path``.

    ``filter_arrays``: arrays that belong to the filter rather than its model (the keys of
    the messages ``spamkit learn`` has learned); :func:`load_filter` returns them in
    ``manifest["filter_arrays"]``. ``term_index``: a :class:`spamkit.filterfile.termindex.TermIndex` made beforehand
    (:meth:`~spamkit.filterfile.termindex.TermIndexJob.result`: the vocabulary's hash index and ``terms.txt``), used when its
    ``terms`` is still the vectorizer's vocabulary (the same list, of the same length). ``side_model``: the file also
    holds (in ``extra`` and ``filter_arrays``) what computes the side scores of a stack with
    side inputs (a filter's context model); such a stack is refused without it.
    """
    kind = model_type_of(model)
    cls, param_names = MODEL_TYPES[kind]
    model.check_fitted()
    if getattr(model, "side_inputs", 0) and not side_model:
        raise ModelFormatError("a stack with side inputs cannot be saved: a filter file has no model of its side "
                               "scores to compute them from")
    members: dict[str, bytes | PreparedLines] = {}
    stored: set = set()                           # members written without compression
    arrays_meta = {}
    array_members: dict[str, np.ndarray] = {}     # written straight into the zip (see write)
    texts_meta = {}

    def add_array(name, array, compress: bool | None = None):
        compress = name not in STORED_ARRAYS if compress is None else compress
        array = np.ascontiguousarray(array)
        if array.dtype == object:
            raise ModelFormatError(f"array {name} holds Python objects and cannot be saved safely")
        member = f"arrays/{name}.npy"
        array_members[member] = array
        if not compress:
            stored.add(member)
        # the checksum is made as the member is written (the manifest comes last); until then
        # 64 zeros, a checksum's length, so the manifest's size is known beforehand
        arrays_meta[name] = {"file": member, "sha256": "0" * 64, "dtype": str(array.dtype),
                             "shape": list(array.shape)}

    def add_lines(name, lines, prepared: PreparedLines | None = None):
        member = f"{name}.txt"
        if prepared is not None:
            members[member] = prepared
            return {"file": member, "sha256": prepared.sha256, "count": prepared.count}
        text = "\n".join(lines)
        if text.count("\n") != max(len(lines) - 1, 0) or "\r" in text:
            raise ModelFormatError(f"an entry of {name} contains a line break; cannot store it")
        if overlong_entry(lines):
            raise ModelFormatError(f"an entry of {name} takes {overlong_entry(lines)} bytes, more than the "
                                   f"{MAX_LINE_BYTES} a filter file's line may hold; cannot store it")
        data = text.encode("utf-8")
        members[member] = data
        return {"file": member, "sha256": hashlib.sha256(data).hexdigest(), "count": len(lines)}

    model_arrays, model_texts = model.state_arrays()
    for name, array in model_arrays.items():
        add_array(f"model.{name}", array)
    for name, lines in model_texts.items():
        texts_meta[name] = add_lines(f"model_{name}", lines)
    for name, array in vectorizer.get_arrays().items():
        add_array(f"vectorizer.{name}", array)
    for name, array in (filter_arrays or {}).items():
        add_array(f"filter.{name}", array)
    terms_meta = None
    if vectorizer.terms_ is not None:
        ready = term_index if term_index is not None and term_index.serves(vectorizer.terms_) else None
        terms_meta = add_lines("terms", vectorizer.terms_, ready.member if ready is not None else None)
        index = ready.index if ready is not None else term_hash_index(vectorizer.terms_)
        if index is not None:
            add_array("filter.term_hash", index[0], compress=False)      # random keys: deflate gains 3%
            add_array("filter.term_hash_column", index[1])
    classes = [_jsonable(c) for c in model.classes_.tolist()]
    manifest = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "spamkit_version": __version__,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "analyzer": analyzer.get_config(),
        "vectorizer": vectorizer.get_config(),
        "model": {"type": kind, "params": {p: _jsonable(getattr(model, p)) for p in param_names},
                  "classes": classes, "n_features": int(vectorizer.n_features_), "texts": texts_meta},
        "terms": terms_meta,
        "arrays": arrays_meta,
        "training": training or {},
        "extra": extra or {},
    }

    def manifest_json() -> bytes:
        return json.dumps(manifest, indent=2, sort_keys=True, ensure_ascii=False).encode("utf-8")

    # what could not be read back is not written: the loader's budget, on the bytes as stored
    limits = member_limits(manifest)
    stored_sizes = {name: limits[name] for name in array_members}
    stored_sizes.update({name: d.packed.size if isinstance(d, PreparedLines) else len(d) for name, d in members.items()})
    problem = over_budget(data_bytes(manifest, limits, stored_sizes))
    if problem is not None:
        raise ModelFormatError(f"{path}: cannot save a filter of {problem}")

    def write(fh):
        # deflate's fastest level: a third of level 6's time for 12% more bytes on a vocabulary
        # (saving was a fifth of training on trec07p-dev); `spamkit learn` saves after every run.
        # ISA-L deflates where the file fits a zip without ZIP64 (spamkit.filterfile.ziparchive), zipfile
        # (zlib) beyond
        sizes = [len(manifest_json()), *(a.nbytes + 4096 for a in array_members.values()),
                 *(d.packed.size if isinstance(d, PreparedLines) else len(d) for d in members.values())]
        if fits(sizes):
            with ZipWriter(fh) as z:
                write_members(z.member, z.add_packed)
        else:
            with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as z:
                def opened(name, deflate=True):
                    return z.open(name if deflate else _stored(name), "w")

                def inflated(name, packed):            # zipfile deflates it again (files past 4 GiB only)
                    with opened(name, packed.deflate) as out:
                        inflate = zlib.decompressobj(-15) if packed.deflate else None
                        for part in packed.parts:
                            out.write(inflate.decompress(part) if inflate is not None else part)
                write_members(opened, inflated, pack_ahead=False)

    def write_members(member, add_packed, pack_ahead: bool = True):
        # the arrays first, each checksummed as it is written, in their order: the small ones
        # packed ahead on threads of their own, the large ones streamed as np.save writes them
        # (16 MB at a time: never a second copy in memory); then the texts; the manifest last,
        # with the checksums (readers find members by name). A file past 4 GiB (zipfile, which
        # deflates by itself) streams every array
        from concurrent.futures import ThreadPoolExecutor
        by_member = {meta["file"]: meta for meta in arrays_meta.values()}
        with ThreadPoolExecutor(SAVE_THREADS, thread_name_prefix="spamkit-save") as pool:
            ahead = {name: pool.submit(_pack_array, array, name not in stored)
                     for name, array in array_members.items() if pack_ahead and array.nbytes < PACK_AHEAD_BYTES}
            try:
                for name, array in array_members.items():
                    if name in ahead:
                        packed, digest = ahead[name].result()
                        add_packed(name, packed)
                    else:
                        with member(name, name not in stored) as out:
                            hashing = _HashingWriter(out)
                            np.save(hashing, array, allow_pickle=False)
                        digest = hashing.digest.hexdigest()
                    by_member[name]["sha256"] = digest
            finally:
                for future in ahead.values():
                    future.cancel()
        for name, data in members.items():
            if isinstance(data, PreparedLines):
                add_packed(name, data.packed)
                continue
            with member(name, name not in stored) as out:
                out.write(data)
        with member("manifest.json") as out:
            out.write(manifest_json())

    atomic_write(Path(path), write)


def _stored(name: str) -> zipfile.ZipInfo:
    """A member of a filter file that zipfile writes stored (not deflated)."""
    info = zipfile.ZipInfo(name, date_time=_dt.datetime.now().timetuple()[:6])
    info.compress_type = zipfile.ZIP_STORED
    return info


def _check_arrays(arrays: dict, manifest: dict, path: Path) -> None:
    """Values and cross-shapes: counts finite and non-negative, per class and per feature."""
    n_classes = len(manifest["model"]["classes"])
    n_features = manifest["model"]["n_features"]
    for name, array in arrays.items():
        if array.dtype.kind not in "fiu":
            continue
        counts = is_count_array(name)
        with np.errstate(over="ignore"):              # a sum past the largest float is the finding, not a warning
            total = float(array.sum(dtype=np.float64)) if counts else None
        problem = value_problem(name, array.dtype.kind, array.dtype.kind != "f" or bool(np.isfinite(array).all()),
                                array.min() if counts and array.size else None, total,
                                array.tolist() if name in RANGE_ARRAYS else None)
        if problem is not None:
            format_error(path, f"array {name} {problem}")
    for name, shape in (("model.class_count_", (n_classes,)), ("model.feature_count_", (n_classes, n_features)),
                        ("vectorizer.df", (n_features,)), ("vectorizer.idf", (n_features,)),
                        ("vectorizer.n_docs", (1,))):
        if name in arrays and arrays[name].shape != shape:
            format_error(path, f"array {name} has shape {arrays[name].shape}; {n_classes} classes and "
                        f"{n_features} features make it {shape}")


def load_filter(path, trusted: bool = False):
    """Read a filter file: ``(analyzer, vectorizer, model, manifest)``; raises ModelFormatError.

    Treats the file as hostile (see the module docstring); ``trusted=True`` accepts a
    token pattern outside the analyzer's named set (a file you wrote yourself).
    """
    path = Path(path)
    with open_zip(path) as z:
        manifest = check_manifest(z, path)
        sizes = expected_sizes(manifest, path, z)
        try:
            arrays = {}
            for name, meta in manifest["arrays"].items():
                array = read_array(z, path, meta, sizes[meta["file"]])
                if list(array.shape) != meta["shape"] or str(array.dtype) != meta["dtype"]:
                    raise ModelFormatError(f"{path}: array {name} has the wrong shape or type")
                arrays[name] = array
            _check_arrays(arrays, manifest, path)
            terms = (read_lines(z, path, manifest["terms"], sizes[manifest["terms"]["file"]])
                     if manifest["terms"] is not None else None)
            if terms is not None and len(set(terms)) != len(terms):
                format_error(path, "the vocabulary (terms.txt) lists a term twice")
            texts = {name: read_lines(z, path, meta, sizes[meta["file"]])
                     for name, meta in manifest["model"].get("texts", {}).items()}
            analyzer = Analyzer.from_config(manifest["analyzer"], trusted=trusted)
            vectorizer = Vectorizer.restore(
                manifest["vectorizer"], terms,
                {k.split(".", 1)[1]: v for k, v in arrays.items() if k.startswith("vectorizer.")})
            model = _restore_model(manifest["model"],
                                   {k.split(".", 1)[1]: v for k, v in arrays.items() if k.startswith("model.")},
                                   texts, path)
            manifest["filter_arrays"] = {k.split(".", 1)[1]: v for k, v in arrays.items() if k.startswith("filter.")}
        except ModelFormatError:
            raise
        except (KeyError, TypeError, ValueError, IndexError, AttributeError, zipfile.BadZipFile, EOFError,
                OSError, ConfigError, MemoryError, OverflowError) as exc:
            raise ModelFormatError(f"{path}: damaged filter file ({type(exc).__name__}: {exc})") from None
    if model.n_features_in_ != vectorizer.n_features_:
        raise ModelFormatError(f"{path}: model has {model.n_features_in_} features, vectorizer "
                               f"{vectorizer.n_features_}; the file is inconsistent")
    return analyzer, vectorizer, model, manifest


def read_array(z: Archive, path: Path, meta: dict, limit: int) -> np.ndarray:
    """An ``arrays/*.npy`` member as a NumPy array, read into the array piece by piece
    (:func:`spamkit.filterfile.manifest.member_chunks`): no copy of the whole member is held beside it (a
    context model's 128 MB table needed twice its size to load). The header is parsed as
    ``np.load(..., allow_pickle=False)`` would: plain numbers and text only, and the data must
    be exactly what the header's shape and dtype make."""
    from numpy.lib import format as npy
    pieces = member_chunks(z, path, meta, limit)
    head = b""
    for piece in pieces:                             # the header: at most 4,096 bytes plus the magic
        head += piece
        if len(head) >= 4096 + 10:
            break
    try:
        stream = io.BytesIO(head)
        version = npy.read_magic(stream)
        shape, fortran, dtype = (npy.read_array_header_1_0(stream) if version == (1, 0)
                                 else npy.read_array_header_2_0(stream))
    except (ValueError, TypeError, SyntaxError, EOFError) as exc:
        format_error(path, f"member {meta['file']} is not a NumPy array ({exc})")
    if dtype.hasobject:
        format_error(path, f"member {meta['file']} holds Python objects; a filter file holds numbers and text only")
    if list(shape) != meta["shape"] or str(dtype) != meta["dtype"]:      # before its room is made
        format_error(path, f"member {meta['file']} is an array of shape {list(shape)} and type {dtype}; the manifest "
                     f"says {meta['shape']} and {meta['dtype']}")
    array = np.empty(shape, dtype=dtype, order="F" if fortran else "C")
    target = array.reshape(-1, order="A").view(np.uint8) if array.size else np.empty(0, np.uint8)
    at = len(head) - stream.tell()
    if at > target.size:
        format_error(path, f"member {meta['file']} holds more data than its shape and dtype make")
    target[:at] = np.frombuffer(head, dtype=np.uint8, offset=stream.tell())
    for piece in pieces:                             # the rest, straight into the array
        if at + len(piece) > target.size:
            format_error(path, f"member {meta['file']} holds more data than its shape and dtype make")
        target[at:at + len(piece)] = np.frombuffer(piece, dtype=np.uint8)
        at += len(piece)
    if at != target.size:
        format_error(path, f"member {meta['file']} holds less data than its shape and dtype make")
    return array


def _restore_model(spec: dict, arrays: dict, texts: dict, path: Path):
    kind = spec["type"]
    if kind not in MODEL_TYPES:
        raise ModelFormatError(f"{path}: unknown model type {kind!r}; upgrade spamkit")
    cls, param_names = MODEL_TYPES[kind]
    # a parameter added in a later version is absent from older files: the class default is what they used
    model = cls(**{p: spec["params"][p] for p in param_names if p in spec["params"]})
    if hasattr(model, "check_params"):
        model.check_params()
    model.restore_state(spec["classes"], int(spec["n_features"]), arrays, texts)
    return model
