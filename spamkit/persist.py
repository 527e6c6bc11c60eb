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
a file from a newer spamkit names the version it needs. Files are written atomically
(a temporary file in the same folder, flushed, fsynced, then renamed over the old
one), so a crash while saving leaves the previous file intact.
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

import numpy as np

from . import __version__
from .durable import fsync_dir
from .errors import ModelFormatError
from .features import Vectorizer
from .models import BernoulliNB, FisherNBStack, KNNClassifier, MultinomialNB, RobinsonFisher
from .text import Analyzer

FORMAT = "spamkit-filter"
FORMAT_VERSION = 1

# model type -> (class, constructor parameters stored). Each class says what else it stores
# through _state() (arrays and text lists) and rebuilds itself with _restore().
# GaussianNB is a library estimator for dense numeric features; text filters use these.
MODEL_TYPES = {
    "multinomial": (MultinomialNB, ("alpha", "fit_prior", "class_prior")),
    "bernoulli": (BernoulliNB, ("alpha", "fit_prior", "class_prior", "binarize")),
    "fisher": (RobinsonFisher, ("strength", "prior", "min_dev", "max_clues")),
    "fisher-nb": (FisherNBStack, ("strength", "prior", "min_dev", "max_clues", "alpha", "folds")),
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


def atomic_write(path: Path, data_writer) -> None:
    """Write ``path`` via a temporary file in its folder: flush, fsync, rename (POSIX-atomic)."""
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            data_writer(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        tmp = None
        fsync_dir(folder)                        # make the rename itself durable
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)


def save_filter(path, analyzer: Analyzer, vectorizer: Vectorizer, model, training: dict | None = None,
                extra: dict | None = None, filter_arrays: dict | None = None) -> None:
    """Write a filter file (see the module docstring) atomically to ``path``.

    ``filter_arrays``: arrays that belong to the filter rather than its model (the keys of
    the messages ``spamkit learn`` has learned); :func:`load_filter` returns them in
    ``manifest["filter_arrays"]``.
    """
    kind = model_type_of(model)
    cls, param_names = MODEL_TYPES[kind]
    model._check_fitted()
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

    model_arrays, model_texts = model._state()
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


def _read_member(z: zipfile.ZipFile, path: Path, meta: dict) -> bytes:
    try:
        data = z.read(meta["file"])
    except KeyError:
        raise ModelFormatError(f"{path}: member {meta['file']} is missing; the file is damaged") from None
    if hashlib.sha256(data).hexdigest() != meta["sha256"]:
        raise ModelFormatError(f"{path}: member {meta['file']} fails its checksum; the file is damaged")
    return data


def read_manifest(path) -> dict:
    """The manifest of a filter file (checks the format and version only)."""
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
    except (zipfile.BadZipFile, OSError) as exc:
        raise ModelFormatError(f"{path}: not a spamkit filter file, or truncated ({exc})") from None


def _manifest(z: zipfile.ZipFile, path: Path) -> dict:
    try:
        manifest = json.loads(z.read("manifest.json").decode("utf-8"))
    except KeyError:
        raise ModelFormatError(f"{path}: no manifest.json; not a spamkit filter file") from None
    except (zipfile.BadZipFile, ValueError, UnicodeDecodeError, OSError, EOFError) as exc:
        raise ModelFormatError(f"{path}: damaged manifest ({exc})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ModelFormatError(f"{path}: not a spamkit filter file (format {manifest.get('format')!r})"
                               if isinstance(manifest, dict) else f"{path}: damaged manifest")
    version = manifest.get("format_version")
    if not isinstance(version, int) or version > FORMAT_VERSION or version < 1:
        raise ModelFormatError(f"{path}: filter format version {version!r} is not supported by spamkit "
                               f"{__version__} (reads version {FORMAT_VERSION}); upgrade spamkit "
                               f"(the file was written by spamkit {manifest.get('spamkit_version')})")
    return manifest


def load_filter(path):
    """Read a filter file: ``(analyzer, vectorizer, model, manifest)``; raises ModelFormatError."""
    path = Path(path)
    with _open_zip(path) as z:
        manifest = _manifest(z, path)
        try:
            arrays = {}
            for name, meta in manifest["arrays"].items():
                data = _read_member(z, path, meta)
                array = np.load(io.BytesIO(data), allow_pickle=False)
                if list(array.shape) != meta["shape"] or str(array.dtype) != meta["dtype"]:
                    raise ModelFormatError(f"{path}: array {name} has the wrong shape or type")
                arrays[name] = array
            terms = _read_lines(z, path, manifest["terms"]) if manifest["terms"] is not None else None
            texts = {name: _read_lines(z, path, meta) for name, meta in manifest["model"].get("texts", {}).items()}
            analyzer = Analyzer.from_config(manifest["analyzer"])
            vectorizer = Vectorizer.restore(
                manifest["vectorizer"], terms,
                {k.split(".", 1)[1]: v for k, v in arrays.items() if k.startswith("vectorizer.")})
            model = _restore_model(manifest["model"],
                                   {k.split(".", 1)[1]: v for k, v in arrays.items() if k.startswith("model.")},
                                   texts, path)
            manifest["filter_arrays"] = {k.split(".", 1)[1]: v for k, v in arrays.items() if k.startswith("filter.")}
        except (KeyError, TypeError, ValueError, zipfile.BadZipFile, EOFError, OSError) as exc:
            if isinstance(exc, ModelFormatError):
                raise
            raise ModelFormatError(f"{path}: damaged filter file ({type(exc).__name__}: {exc})") from None
    if model.n_features_in_ != vectorizer.n_features_:
        raise ModelFormatError(f"{path}: model has {model.n_features_in_} features, vectorizer "
                               f"{vectorizer.n_features_}; the file is inconsistent")
    return analyzer, vectorizer, model, manifest


def _read_lines(z: zipfile.ZipFile, path: Path, meta: dict) -> list[str]:
    text = _read_member(z, path, meta).decode("utf-8")
    lines = text.split("\n") if text else []
    if len(lines) != meta["count"]:
        raise ModelFormatError(f"{path}: {meta['file']} has {len(lines)} lines, the manifest says {meta['count']}")
    return lines


def _restore_model(spec: dict, arrays: dict, texts: dict, path: Path):
    kind = spec["type"]
    if kind not in MODEL_TYPES:
        raise ModelFormatError(f"{path}: unknown model type {kind!r}; upgrade spamkit")
    cls, param_names = MODEL_TYPES[kind]
    model = cls(**{p: spec["params"][p] for p in param_names})
    model._restore(spec["classes"], int(spec["n_features"]), arrays, texts)
    return model
