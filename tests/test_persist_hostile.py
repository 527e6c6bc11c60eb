"""Filter files are data, never instructions: every hostile file ends in exit 1, one clear line, bounded memory.

Each hostile file is built here from a real filter trained on the sample corpus, and
given to the real command line in a child process that reports its own peak memory.
"""

from __future__ import annotations

import hashlib
import json
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from spamkit.cli import cli

from conftest import SAMPLE, compiled_expected, run_with_peak

REPO = Path(__file__).resolve().parents[1]
MESSAGE = sorted((SAMPLE / "spam").iterdir())[0]
#: the goal of the issue "Hostile inputs": no hostile filter file takes spamkit past this
PEAK_MB = 300
@pytest.fixture(scope="module")
def good(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("hostile") / "good.spamkit"
    assert CliRunner().invoke(cli, ["train", str(SAMPLE), "-o", str(path), "--stop-words", "english"]).exit_code == 0
    return path


def members(path: Path) -> tuple[dict, dict]:
    with zipfile.ZipFile(path) as z:
        data = {n: z.read(n) for n in z.namelist()}
    return json.loads(data.pop("manifest.json")), data


def write(path: Path, manifest, data: dict, fix_sums: bool = True, raw_manifest: bytes | None = None) -> Path:
    """A filter file from a manifest and members; checksums recomputed so that the checks after them run."""
    if fix_sums and isinstance(manifest, dict):
        for meta in [*manifest["arrays"].values(), manifest.get("terms"), *manifest["model"].get("texts", {}).values()]:
            if meta and meta["file"] in data:
                meta["sha256"] = hashlib.sha256(data[meta["file"]]).hexdigest()
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("manifest.json", raw_manifest if raw_manifest is not None else json.dumps(manifest))
        for name, blob in data.items():
            z.writestr(name, blob)
    return path


def npy(array) -> bytes:
    import io
    buf = io.BytesIO()
    np.save(buf, array, allow_pickle=False)
    return buf.getvalue()


def largest_array(manifest) -> str:
    return max(manifest["arrays"], key=lambda n: np.prod(manifest["arrays"][n]["shape"]))


def run(*args) -> tuple[subprocess.CompletedProcess, float]:
    return run_with_peak(*args, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})


def refused(path: Path, problem: str, command: str = "classify", pipe: bool = False) -> None:
    args = ["classify", path, MESSAGE] if command == "classify" else ["info", path]
    out, peak_mb = run(*args)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "Traceback" not in out.stderr and out.stderr.startswith(f"Error: {path}: "), out.stderr
    assert problem in out.stderr, out.stderr
    assert peak_mb <= PEAK_MB, f"peak memory {peak_mb:.0f} MB"
    if pipe:                                        # and in pipe mode the message comes out unchanged
        raw = MESSAGE.read_bytes()
        out = subprocess.run([sys.executable, "-m", "spamkit", "filter", str(path), "-"], input=raw,
                             capture_output=True, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
                             timeout=300)
        assert out.returncode == 3 and out.stdout == raw and problem.encode() in out.stderr


# ----------------------------------------------------------------- sizes before reading

def test_a_zero_bomb_member_is_refused_before_it_is_decompressed(good, tmp_path):
    manifest, data = members(good)
    target = manifest["arrays"][largest_array(manifest)]["file"]
    path = tmp_path / "bomb.spamkit"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("manifest.json", json.dumps(manifest))
        for name, blob in data.items():
            if name != target:
                z.writestr(name, blob)
        with z.open(target, "w", force_zip64=True) as fh:          # 1.5 GiB of zeros, a few MB packed
            zeros = bytes(1 << 24)
            for _ in range(96):
                fh.write(zeros)
    assert path.stat().st_size < 20 << 20
    refused(path, f"member {target} declares 1610612736 bytes", pipe=True)


def test_a_huge_manifest_is_refused_unread(good, tmp_path):
    manifest, data = members(good)
    padded = json.dumps(manifest).encode()[:-1] + b" " * (1 << 30) + b"}"      # valid JSON, 1 GiB
    path = write(tmp_path / "fat.spamkit", manifest, data, raw_manifest=padded)
    refused(path, "manifest.json declares")
    refused(path, "manifest.json declares", command="info")


def test_a_manifest_nested_100000_deep_is_refused(good, tmp_path):
    manifest, data = members(good)
    deep = json.dumps(manifest).encode()[:-1] + b', "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    refused(write(tmp_path / "deep.spamkit", manifest, data, raw_manifest=deep), "nested too deep")


def test_a_declared_shape_of_a_trillion_elements_is_refused(good, tmp_path):
    manifest, data = members(good)
    manifest["arrays"][largest_array(manifest)]["shape"] = [1_000_000, 1_000_000]
    refused(write(tmp_path / "shape.spamkit", manifest, data), "more than the")


# ----------------------------------------------------------------- data, not instructions

def test_a_stop_word_path_is_never_opened(good, tmp_path):
    manifest, data = members(good)
    manifest["analyzer"]["stop_words"] = "/dev/zero"
    manifest["analyzer"].pop("stop_word_list", None)
    refused(write(tmp_path / "path.spamkit", manifest, data), "names a stop-word file", pipe=True)


def test_a_foreign_token_pattern_is_not_run(good, tmp_path):
    manifest, data = members(good)
    manifest["analyzer"]["token_pattern"] = "(a|aa)+$"
    refused(write(tmp_path / "regex.spamkit", manifest, data), "its own token pattern", pipe=True)


@pytest.mark.parametrize("value,problem", [(np.nan, "not finite"), (np.inf, "not finite"), (-5.0, "negative")])
def test_counts_must_be_finite_and_non_negative(good, tmp_path, value, problem):
    manifest, data = members(good)
    meta = manifest["arrays"]["model.feature_count_"]
    counts = np.load(__import__("io").BytesIO(data[meta["file"]]))
    counts[0, 0] = value
    data[meta["file"]] = npy(counts)
    refused(write(tmp_path / "values.spamkit", manifest, data), problem, pipe=value != np.inf)


def test_a_class_count_longer_than_the_classes_is_refused(good, tmp_path):
    manifest, data = members(good)
    meta = manifest["arrays"]["model.class_count_"]
    data[meta["file"]] = npy(np.array([1.0, 2.0, 3.0]))
    meta["shape"] = [3]
    refused(write(tmp_path / "classes.spamkit", manifest, data), "model.class_count_ has shape (3,)")


def test_duplicate_terms_are_refused(good, tmp_path):
    manifest, data = members(good)
    terms = data["terms.txt"].decode().split("\n")
    terms[1] = terms[0]
    data["terms.txt"] = "\n".join(terms).encode()
    refused(write(tmp_path / "dupes.spamkit", manifest, data), "lists a term twice")


def test_a_threshold_that_is_not_a_number_is_refused_by_info(good, tmp_path):
    manifest, data = members(good)
    manifest.setdefault("extra", {})["threshold"] = {"p_spam": "abc"}
    path = write(tmp_path / "threshold.spamkit", manifest, data)
    refused(path, "is not a probability", command="info")
    refused(path, "is not a probability")


# ----------------------------------------------------------------- zip tricks

def _patch_member(path: Path, name: str, flag_bits: int | None = None, method: int | None = None) -> None:
    """Change a member's general-purpose flags or compression method in both zip headers."""
    blob = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as z:
        info = z.getinfo(name)
    local = info.header_offset                                          # local file header
    central = blob.index(b"PK\x01\x02", blob.index(b"PK\x01\x02"))      # find this member's central entry
    while blob[central + 46:central + 46 + len(name)] != name.encode():
        central = blob.index(b"PK\x01\x02", central + 4)
    if flag_bits is not None:
        struct.pack_into("<H", blob, local + 6, flag_bits)
        struct.pack_into("<H", blob, central + 8, flag_bits)
    if method is not None:
        struct.pack_into("<H", blob, local + 8, method)
        struct.pack_into("<H", blob, central + 10, method)
    path.write_bytes(bytes(blob))


def test_an_encrypted_member_is_refused(good, tmp_path):
    manifest, data = members(good)
    path = write(tmp_path / "encrypted.spamkit", manifest, data)
    _patch_member(path, "terms.txt", flag_bits=0x1)
    refused(path, "terms.txt cannot be read")


def test_an_unknown_compression_method_is_refused(good, tmp_path):
    manifest, data = members(good)
    path = write(tmp_path / "method.spamkit", manifest, data)
    _patch_member(path, "terms.txt", method=99)
    refused(path, "terms.txt uses an unsupported compression")


def test_the_good_file_still_loads_and_a_trusted_pattern_can_be_allowed(good, tmp_path):
    out, peak_mb = run("classify", good, MESSAGE)
    assert out.returncode == 0 and "\tspam\t" in out.stdout
    from spamkit.common.errors import ModelFormatError
    from spamkit.filterfile.persist import load_filter
    manifest, data = members(good)
    manifest["analyzer"]["token_pattern"] = r"\w+"
    path = write(tmp_path / "mine.spamkit", manifest, data)
    with pytest.raises(ModelFormatError):
        load_filter(path)
    analyzer, *_ = load_filter(path, trusted=True)
    assert analyzer.token_pattern == r"\w+"


def test_an_array_member_must_hold_exactly_what_its_header_says(tmp_path):
    # arrays are read piece by piece into place: a header that promises more or less data than
    # the member holds, or Python objects, is refused; an honest one reads back exactly
    import hashlib
    import io
    import zipfile

    from spamkit.common.errors import ModelFormatError
    from spamkit.filterfile.manifest import open_zip
    from spamkit.filterfile.persist import read_array

    def member(data: bytes, name="arrays/a.npy", shape=(10,), dtype="float64"):
        path = tmp_path / f"{hashlib.sha256(data).hexdigest()[:8]}.zip"
        with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
            z.writestr(name, data)
        return open_zip(path), path, {"file": name, "sha256": hashlib.sha256(data).hexdigest(),
                                      "shape": list(shape), "dtype": dtype}

    def npy(array) -> bytes:
        buf = io.BytesIO()
        np.save(buf, array, allow_pickle=True)
        return buf.getvalue()

    big = np.arange(3 * 700_000, dtype=np.uint32).reshape(-1, 3)      # several pieces of 1 MB
    z, path, meta = member(npy(big), shape=big.shape, dtype="uint32")
    assert np.array_equal(read_array(z, path, meta, 1 << 30), big)
    fortran = np.asfortranarray(np.arange(12.0).reshape(3, 4))
    z, path, meta = member(npy(fortran), shape=fortran.shape)
    assert np.array_equal(read_array(z, path, meta, 1 << 30), fortran)
    whole = npy(np.arange(10.0))
    for data, problem in ((whole[:-8], "less data"), (whole + b"\0" * 8, "more data"),
                          (npy(np.array([{"a": 1}], dtype=object)), "Python objects"),
                          (b"not an array at all", "not a NumPy array")):
        z, path, meta = member(data)
        with pytest.raises(ModelFormatError, match=problem):
            read_array(z, path, meta, 1 << 30)
    # a header whose shape or type is not the manifest's is refused before room is made for it
    # (80 TB in the header, 80 bytes in the member and the manifest: np.empty is never asked for 80 TB)
    head = io.BytesIO()
    np.lib.format.write_array_header_1_0(head, {"descr": "<f8", "fortran_order": False, "shape": (10**13,)})
    for data, shape, dtype in ((head.getvalue() + bytes(80), (10,), "float64"), (whole, (10**13,), "float64"),
                               (whole, (10,), "int64"), (whole, (2, 5), "float64")):
        z, path, meta = member(data, shape=shape, dtype=dtype)
        with pytest.raises(ModelFormatError, match="the manifest says"):
            read_array(z, path, meta, 1 << 30)
    z, path, meta = member(whole)
    with pytest.raises(ModelFormatError, match="fails its checksum"):
        read_array(z, path, {**meta, "sha256": "0" * 64}, 1 << 30)


# ----------------------------------------------------------------- tables a file declares, one rule for both routes

@pytest.fixture(scope="module")
def context_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("context") / "ctx.spamkit"
    result = CliRunner().invoke(cli, ["train", str(SAMPLE), "-o", str(path), "--context-model", "--context-bits", "16"])
    assert result.exit_code == 0, result.output
    return path


def test_a_context_table_declared_past_the_budget_is_refused_before_it_is_made(context_file, tmp_path):
    """5.3 MB on disk declaring ``bits: 30`` took classify to 8.3 GB: the table it declares
    (8 bytes a slot, 2**30 slots) counts against the budget before anything is made."""
    manifest, data = members(context_file)
    manifest["extra"]["context"]["bits"] = 30
    bad = write(tmp_path / "bits30.spamkit", manifest, data)
    refused(bad, f"its context table alone takes {8 << 30} bytes", pipe=True)
    for bits in (31, "24", -1, True):
        manifest["extra"]["context"]["bits"] = bits
        refused(write(tmp_path / f"bits{bits}.spamkit", manifest, data), "the context model is described as",
                pipe=True)


def _both_routes_refuse(path: Path, problem: str) -> None:
    from spamkit.common.errors import ModelFormatError
    from spamkit.mail.lean import lean_filter
    from spamkit.filterfile.persist import load_filter
    for load in (lean_filter, load_filter):
        with pytest.raises(ModelFormatError, match=problem):
            load(path)


@pytest.mark.parametrize("name, values, problem", [
    ("model.feature_count_", "overflow", "holds counts whose sum is not a finite number"),
    ("vectorizer.df", "negative", "holds negative counts"),
    ("model.length_range_", [5.0, 1.0], "is not two numbers, the smaller first"),
    ("model.logistic_coef_", "nan", "holds values that are not finite numbers"),
])
def test_both_routes_apply_one_rule_to_the_values(good, tmp_path, name, values, problem):
    """A file the lean route (pipe mode) scores must be a file the full route loads, and the
    other way round: counts whose sum overflows (each finite), a negative document frequency
    (an array the lean route used not to read), a length range the wrong way round."""
    manifest, data = members(good)
    meta = manifest["arrays"][name]
    import io
    array = np.load(io.BytesIO(data[meta["file"]]))
    if values == "overflow":
        array[...] = 1e308
    elif values == "negative":
        array[0] = -1
    elif values == "nan":
        array[0] = np.nan
    else:
        array[...] = values
    data[meta["file"]] = npy(array)
    _both_routes_refuse(write(tmp_path / "bad.spamkit", manifest, data), problem)


@pytest.mark.skipif(__import__("spamkit.common.compiled", fromlist=["speedups"]).speedups() is None
                    and not compiled_expected(),
                    reason="the compiled loops are not in use (SPAMKIT_PURE_PYTHON=1, or not built)")
def test_the_compiled_value_summary_is_pythons_and_both_checks_agree(monkeypatch, tmp_path):
    # spamkit/filterfile/values.c's float_summary against Python's all/min/sum, and pipe mode's
    # check of an array (spamkit.mail.leanarrays.check_values) with and without it, on the values
    # a hostile file holds: NaNs, infinities, negative zeros, negatives, sums that overflow
    import array
    import math
    import random

    from spamkit.common.errors import ModelFormatError
    from spamkit.mail import leanarrays

    compiled = leanarrays.speedups
    rng = random.Random(3)
    specials = [math.nan, math.inf, -math.inf, -0.0, 0.0, -1.0, 1e308, 3.4e38, 1e-300, 5.0]
    cases = [[], [1.0], [-0.0], [1e308] * 3, [math.nan, -5.0], [math.inf, -math.inf]]
    cases += [[rng.choice(specials) if rng.random() < 0.1 else rng.uniform(0, 1e3) for _ in range(rng.randrange(1, 300))]
              for _ in range(200)]
    seen = set()
    for values in cases:
        for code in "df":
            try:
                typed = memoryview(array.array(code, values))
            except OverflowError:                                        # 1e308 as float32
                continue
            finite, smallest, total = compiled.float_summary(typed)
            numbers = list(typed)
            assert finite == all(map(math.isfinite, numbers))
            ordered = [x for x in numbers if not math.isnan(x)]
            assert smallest == (min(ordered) if ordered else math.inf)
            python_total = sum(numbers, 0.0)
            assert total == python_total or (math.isnan(total) and math.isnan(python_total))
            for name in ("model.feature_count_", "model.logistic_coef_"):
                outcomes = []
                for engine in (compiled, None):
                    monkeypatch.setattr(leanarrays, "speedups", engine)
                    try:
                        leanarrays.check_values(typed, tmp_path / "f.spamkit", name, "float64" if code == "d" else "float32")
                        outcomes.append(None)
                    except ModelFormatError as exc:
                        outcomes.append(str(exc).split(name, 1)[1])
                assert outcomes[0] == outcomes[1], (values, code, name, outcomes)
                seen.add(outcomes[0])
    monkeypatch.setattr(leanarrays, "speedups", compiled)
    assert {None, " holds values that are not finite numbers", " holds negative counts",
            " holds counts whose sum is not a finite number"} <= seen
    with pytest.raises(TypeError, match="format 'd' or 'f'"):
        compiled.float_summary(memoryview(array.array("q", [1, 2])))
