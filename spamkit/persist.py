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
    ``allow_pickle=False``.

Loading a file therefore never runs code from it: JSON, text and ``.npy`` arrays of
plain numbers only. A truncated or altered file fails its zip CRC or SHA-256 check;
a file from a newer spamkit names the version it needs.

A filter file is something users share and download, so the loader treats it as
hostile data (:func:`load_filter`): the manifest is read only if its uncompressed size
is at most :data:`MAX_MANIFEST_BYTES` and parsed with a nesting limit; its structure
and types are checked before anything else is read; every member's uncompressed size,
as the zip directory declares it, must match what the manifest's own dtypes, shapes and
counts imply, and all members together must stay under :data:`MAX_FILTER_BYTES`
(``SPAMKIT_MAX_FILTER_BYTES`` raises it for a filter that really is that big) — all
before a byte of any member is decompressed, and the zip reader never produces more
than the declared size. Arrays must be plain numbers or text, shaped consistently
with the classes, the vocabulary and each other; counts finite and non-negative; the
vocabulary free of duplicates. A filter file carries data, never instructions: no file
paths (stop words travel as a list), and the token pattern must be one of the
analyzer's own (:data:`spamkit.text.tokenize.NAMED_PATTERNS`) unless the caller
trusts the file (``trusted=True``, for one's own files). Files are written atomically
(a temporary file in the same folder, flushed, fsynced, then renamed over the old
one), so a crash while saving leaves the previous file intact.

One concern over ~490 lines: the filter file, written atomically and read as hostile
input (every size, shape, type and checksum checked before use).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import io
import json
import os
import tempfile
import zipfile
from pathlib import Path
from zlib import error as zlib_error

import numpy as np

from . import __version__
from .durable import fsync_dir, glob_escape
from .errors import ConfigError, ModelFormatError, OutputError
from .features import Vectorizer
from .models import BernoulliNB, FisherNBStack, KNNClassifier, MultinomialNB, OnlineLogistic, RobinsonFisher
from .text import Analyzer

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
_NPY_HEADER_MAX = 4096

# model type -> (class, constructor parameters stored). Each class says what else it stores
# through state_arrays() (arrays and text lists) and rebuilds itself with restore_state().
# GaussianNB is a library estimator for dense numeric features; text filters use these.
MODEL_TYPES = {
    "multinomial": (MultinomialNB, ("alpha", "fit_prior", "class_prior")),
    "bernoulli": (BernoulliNB, ("alpha", "fit_prior", "class_prior", "binarize")),
    "fisher": (RobinsonFisher, ("strength", "prior", "min_dev", "max_clues")),
    "fisher-nb": (FisherNBStack, ("strength", "prior", "min_dev", "max_clues", "alpha", "folds", "logistic", "squash")),
    "logistic": (OnlineLogistic, ("rate", "epochs")),
    "knn": (KNNClassifier, ("k", "weights", "metric", "tau", "epsilon", "memory_limit", "n_jobs")),
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


def _npy_bytes(array: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(array), allow_pickle=False)
    return buf.getvalue()


def _stale_temporaries(folder: Path, name: str) -> None:
    """Remove the temporary files of earlier saves of ``name`` whose writing process is gone."""
    for tmp in folder.glob(f".{glob_escape(name)}.spamkit-*.tmp"):
        try:
            pid = int(tmp.name.rsplit(".spamkit-", 1)[1].split("-", 1)[0])
            os.kill(pid, 0)
        except ProcessLookupError:
            tmp.unlink(missing_ok=True)
        except (ValueError, IndexError, PermissionError, OSError):
            continue


def atomic_write(path: Path, data_writer) -> None:
    """Write ``path`` via a temporary file in its folder: flush, fsync, rename (POSIX-atomic).

    The temporary file's name holds the writer's pid, so a later save removes what a
    killed one left; an error names the file and the reason (:class:`OutputError`).
    """
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    tmp = None
    try:
        _stale_temporaries(folder, path.name)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.spamkit-{os.getpid()}-", suffix=".tmp", dir=folder)
        with os.fdopen(fd, "wb") as fh:
            data_writer(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        tmp = None
        fsync_dir(folder)                        # make the rename itself durable
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)


def check_writable(path) -> None:
    """Fail now, not after hours of training, if ``path`` cannot be written."""
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise OutputError(f"cannot write {path}: folder {folder} does not exist")
    if path.is_dir():
        raise OutputError(f"cannot write {path}: it is a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputError(f"cannot write {path}: folder {folder} is not writable")


def save_filter(path, analyzer: Analyzer, vectorizer: Vectorizer, model, training: dict | None = None,
                extra: dict | None = None, filter_arrays: dict | None = None) -> None:
    """Write a filter file (see the module docstring) atomically to ``path``.

    ``filter_arrays``: arrays that belong to the filter rather than its model (the keys of
    the messages ``spamkit learn`` has learned); :func:`load_filter` returns them in
    ``manifest["filter_arrays"]``.
    """
    kind = model_type_of(model)
    cls, param_names = MODEL_TYPES[kind]
    model.check_fitted()
    members: dict[str, bytes] = {}
    arrays_meta = {}
    texts_meta = {}

    def add_array(name, array):
        array = np.asarray(array)
        if array.dtype == object:
            raise ModelFormatError(f"array {name} holds Python objects and cannot be saved safely")
        data = _npy_bytes(array)
        member = f"arrays/{name}.npy"
        members[member] = data
        arrays_meta[name] = {"file": member, "sha256": hashlib.sha256(data).hexdigest(),
                             "dtype": str(array.dtype), "shape": list(array.shape)}

    def add_lines(name, lines):
        if any("\n" in t or "\r" in t for t in lines):
            raise ModelFormatError(f"an entry of {name} contains a line break; cannot store it")
        data = "\n".join(lines).encode("utf-8")
        member = f"{name}.txt"
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
        terms_meta = add_lines("terms", vectorizer.terms_)
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

    def write(fh):
        with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=6) as z:
            z.writestr("manifest.json", json.dumps(manifest, indent=2, sort_keys=True, ensure_ascii=False))
            for name, data in members.items():
                z.writestr(name, data)

    atomic_write(Path(path), write)


def _fail(path: Path, problem: str):
    raise ModelFormatError(f"{path}: {problem}")


def max_filter_bytes() -> int:
    """The cap on a filter file's uncompressed size: :data:`MAX_FILTER_BYTES` or ``SPAMKIT_MAX_FILTER_BYTES``."""
    value = os.environ.get("SPAMKIT_MAX_FILTER_BYTES")
    try:
        return int(value) if value else MAX_FILTER_BYTES
    except ValueError:
        raise ModelFormatError(f"SPAMKIT_MAX_FILTER_BYTES={value!r} is not a number of bytes") from None


def _read_member(z: zipfile.ZipFile, path: Path, meta: dict, limit: int | None = None) -> bytes:
    """A member's bytes, at most ``limit`` (the zip reader stops at the declared size), checksummed."""
    name = meta["file"]
    try:
        info = z.getinfo(name)
    except KeyError:
        _fail(path, f"member {name} is missing; the file is damaged")
    if limit is not None and info.file_size > limit:
        _fail(path, f"member {name} declares {info.file_size} bytes, more than the {limit} its manifest allows")
    try:
        with z.open(info) as fh:
            data = fh.read(info.file_size + 1)
    except NotImplementedError as exc:                  # unknown compression methods
        _fail(path, f"member {name} uses an unsupported compression ({exc})")
    except RuntimeError as exc:                         # encrypted members
        _fail(path, f"member {name} cannot be read ({exc})")
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, zlib_error) as exc:
        _fail(path, f"member {name} is damaged ({exc})")
    if len(data) > info.file_size:
        _fail(path, f"member {name} is longer than the zip directory says; the file is damaged")
    if hashlib.sha256(data).hexdigest() != meta["sha256"]:
        _fail(path, f"member {name} fails its checksum; the file is damaged")
    return data


def read_manifest(path) -> dict:
    """The manifest of a filter file (format, version and structure checked; no member read)."""
    path = Path(path)
    with _open_zip(path) as z:
        return _manifest(z, path)


def _open_zip(path: Path) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(path)
    except FileNotFoundError:
        raise ModelFormatError(f"{path}: no such filter file") from None
    except IsADirectoryError:
        raise ModelFormatError(f"{path}: is a folder, not a filter file") from None
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
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


def _manifest(z: zipfile.ZipFile, path: Path) -> dict:
    try:
        info = z.getinfo("manifest.json")
    except KeyError:
        raise ModelFormatError(f"{path}: no manifest.json; not a spamkit filter file") from None
    if info.file_size > MAX_MANIFEST_BYTES:
        _fail(path, f"manifest.json declares {info.file_size} bytes; a manifest may have at most "
                    f"{MAX_MANIFEST_BYTES} (MAX_MANIFEST_BYTES)")
    try:
        with z.open(info) as fh:
            text = fh.read(MAX_MANIFEST_BYTES + 1)
        if len(text) > MAX_MANIFEST_BYTES:
            _fail(path, "manifest.json is longer than the zip directory says")
        manifest = json.loads(text.decode("utf-8"))
    except RecursionError:
        raise ModelFormatError(f"{path}: manifest.json is nested too deeply") from None
    except NotImplementedError as exc:
        raise ModelFormatError(f"{path}: manifest.json uses an unsupported compression ({exc})") from None
    except RuntimeError as exc:
        raise ModelFormatError(f"{path}: manifest.json cannot be read ({exc})") from None
    except (zipfile.BadZipFile, ValueError, UnicodeDecodeError, OSError, EOFError, zlib_error) as exc:
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
        _fail(path, f"manifest.json is nested more than {MAX_JSON_DEPTH} deep")
    _check_structure(manifest, path)
    return manifest


def _is_count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _check_structure(manifest: dict, path: Path) -> None:
    """Types and shapes of the manifest's fields, before any member is read."""
    def need(ok: bool, what: str):
        if not ok:
            _fail(path, f"damaged manifest: {what}")

    arrays, model = manifest.get("arrays"), manifest.get("model")
    need(isinstance(arrays, dict), "'arrays' is not a table")
    for name, meta in arrays.items():
        need(isinstance(meta, dict) and isinstance(meta.get("file"), str) and isinstance(meta.get("sha256"), str)
             and isinstance(meta.get("dtype"), str) and isinstance(meta.get("shape"), list)
             and len(meta["shape"]) <= 2 and all(_is_count(n) for n in meta["shape"]),
             f"array {name!r} is not described by file, sha256, dtype and a shape of at most 2 sizes")
        try:
            dtype = np.dtype(meta["dtype"])
        except (TypeError, ValueError):
            dtype = None
        need(dtype is not None and dtype.kind in _ARRAY_KINDS and dtype.itemsize <= 4096,
             f"array {name!r} has dtype {meta['dtype']!r}; only numbers, booleans and text are allowed")
    need(isinstance(model, dict) and isinstance(model.get("type"), str) and isinstance(model.get("params"), dict)
         and isinstance(model.get("classes"), list) and 1 <= len(model["classes"]) <= 10_000
         and all(isinstance(c, (str, int)) and not isinstance(c, bool) for c in model["classes"])
         and _is_count(model.get("n_features")) and isinstance(model.get("texts", {}), dict),
         "'model' lacks a type, parameters, a list of classes or a number of features")
    need(len(set(map(str, model["classes"]))) == len(model["classes"]), "the classes repeat")
    for name, meta in _text_members(manifest).items():
        need(isinstance(meta, dict) and isinstance(meta.get("file"), str) and isinstance(meta.get("sha256"), str)
             and _is_count(meta.get("count")), f"text member {name!r} is not described by file, sha256 and count")
    need(isinstance(manifest.get("analyzer"), dict) and isinstance(manifest.get("vectorizer"), dict),
         "'analyzer' or 'vectorizer' is not a table")
    for key in ("training", "extra"):
        need(isinstance(manifest.get(key, {}), dict), f"'{key}' is not a table")
    threshold = manifest.get("extra", {}).get("threshold")
    if threshold:
        p = threshold.get("p_spam") if isinstance(threshold, dict) else None
        need(isinstance(p, (int, float)) and not isinstance(p, bool) and 0.0 <= p <= 1.0,
             f"the threshold {p!r} is not a probability")


def _text_members(manifest: dict) -> dict:
    """The manifest's descriptions of its text members: the model's lists and the vocabulary
    (absent in hashing mode)."""
    texts = dict(manifest["model"].get("texts", {}))
    if manifest.get("terms") is not None:
        texts["terms"] = manifest["terms"]
    return texts


def _expected_sizes(manifest: dict, path: Path) -> dict[str, int]:
    """Largest uncompressed size of each member that the manifest's own shapes and counts allow."""
    sizes = {}
    for name, meta in manifest["arrays"].items():
        n = 1
        for dim in meta["shape"]:
            n *= dim
        sizes[meta["file"]] = n * np.dtype(meta["dtype"]).itemsize + _NPY_HEADER_MAX
    for meta in _text_members(manifest).values():
        sizes[meta["file"]] = max(meta["count"], 1) * (MAX_LINE_BYTES + 1)
    cap = max_filter_bytes()
    total = sum(sizes.values())
    if total > cap:
        _fail(path, f"the manifest describes {total} bytes of data, more than the {cap} a filter file may hold "
                    "(MAX_FILTER_BYTES; set SPAMKIT_MAX_FILTER_BYTES to allow a bigger filter you trust)")
    return sizes


def _check_arrays(arrays: dict, manifest: dict, path: Path) -> None:
    """Values and cross-shapes: counts finite and non-negative, per class and per feature."""
    n_classes = len(manifest["model"]["classes"])
    n_features = manifest["model"]["n_features"]
    for name, array in arrays.items():
        if array.dtype.kind == "f" and not np.isfinite(array).all():
            _fail(path, f"array {name} holds values that are not finite numbers")
        counts = name.endswith(("count_", ".df", ".n_docs")) or name in ("model.X_data", "model.X_shape")
        if counts and array.dtype.kind in "fi" and array.size and array.min() < 0:
            _fail(path, f"array {name} holds negative counts")
    for name, shape in (("model.class_count_", (n_classes,)), ("model.feature_count_", (n_classes, n_features)),
                        ("vectorizer.df", (n_features,)), ("vectorizer.idf", (n_features,)),
                        ("vectorizer.n_docs", (1,))):
        if name in arrays and arrays[name].shape != shape:
            _fail(path, f"array {name} has shape {arrays[name].shape}; {n_classes} classes and "
                        f"{n_features} features make it {shape}")


def load_filter(path, trusted: bool = False):
    """Read a filter file: ``(analyzer, vectorizer, model, manifest)``; raises ModelFormatError.

    Treats the file as hostile (see the module docstring); ``trusted=True`` accepts a
    token pattern outside the analyzer's named set (a file you wrote yourself).
    """
    path = Path(path)
    with _open_zip(path) as z:
        manifest = _manifest(z, path)
        sizes = _expected_sizes(manifest, path)
        try:
            arrays = {}
            for name, meta in manifest["arrays"].items():
                data = _read_member(z, path, meta, sizes[meta["file"]])
                array = np.load(io.BytesIO(data), allow_pickle=False)
                if list(array.shape) != meta["shape"] or str(array.dtype) != meta["dtype"]:
                    raise ModelFormatError(f"{path}: array {name} has the wrong shape or type")
                arrays[name] = array
                del data
            _check_arrays(arrays, manifest, path)
            terms = (_read_lines(z, path, manifest["terms"], sizes[manifest["terms"]["file"]])
                     if manifest["terms"] is not None else None)
            if terms is not None and len(set(terms)) != len(terms):
                _fail(path, "the vocabulary (terms.txt) lists a term twice")
            texts = {name: _read_lines(z, path, meta, sizes[meta["file"]])
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


def _read_lines(z: zipfile.ZipFile, path: Path, meta: dict, limit: int | None = None) -> list[str]:
    try:
        text = _read_member(z, path, meta, limit).decode("utf-8")
    except UnicodeDecodeError:
        _fail(path, f"{meta['file']} is not UTF-8 text")
    lines = text.split("\n") if text else []
    if len(lines) != meta["count"]:
        raise ModelFormatError(f"{path}: {meta['file']} has {len(lines)} lines, the manifest says {meta['count']}")
    return lines


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
