"""A filter spamkit wrote must load: big vocabularies, big word lists, and what cannot be read back.

The red team's first finding (issue "Tried as an attacker..."): a filter trained on 37,710
raw messages (859,280 terms) was refused by every command, because the loader's budget
counted 4,096 bytes for each term whatever its length, and pipe mode then passed every
message through untagged. The budget now counts what the file holds (each member's size as
stored, and the strings its lines become), and the writer refuses at once what the reader
would refuse. Here: a filter trained on all of trec06p and a 10-million-token word list, each
through the real command line, and the limits checked on both sides.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from spamkit.cli import cli
from spamkit.common.errors import ModelFormatError
from spamkit.filterfile.manifest import MAX_FILTER_BYTES, MAX_LINE_BYTES, read_manifest
from spamkit.filterfile.budget import LINE_OBJECT_BYTES, data_bytes, member_limits
from spamkit.filterfile.persist import load_filter
from spamkit.filterfile.termindex import overlong_entry
from spamkit.common.passthrough import VERDICT_STATUS
from spamkit.filterfile.spamfilter import SpamFilter
from spamkit.filterfile.wordlist import read_wordlist

from conftest import SAMPLE, shared_corpus

REPO = Path(__file__).resolve().parents[1]
SPAM = (b"From: a@example.org\nTo: b@example.net\nSubject: cheap meds online\n\n"
        b"Buy cheap viagra now, cheap pills, no prescription, click here\n")


def spamkit(*args, stdin: bytes | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "spamkit", *map(str, args)], input=stdin, capture_output=True,
                          env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})}, timeout=900)


def old_budget(manifest: dict) -> int:
    """What the loader counted before: every member at the most its shapes and counts allow."""
    return sum(member_limits(manifest).values())


# ----------------------------------------------------------------------------- by hand

def test_the_budget_counts_members_as_stored_and_a_string_per_line():
    manifest = {"arrays": {"model.x": {"file": "arrays/model.x.npy", "dtype": "float64", "shape": [2, 1000]}},
                "model": {"texts": {}}, "terms": {"file": "terms.txt", "count": 1000}}
    limits = member_limits(manifest)
    # 2,000 float64 and a .npy header of at most 4,096 bytes; 1,000 lines of at most 4,096 bytes and a line feed
    assert limits == {"arrays/model.x.npy": 16_000 + 4096, "terms.txt": 1000 * 4097}
    # stored: the array's 16,128 bytes, the terms' 5,999 (1,000 five-letter terms and 999 line feeds)
    assert data_bytes(manifest, limits, {"arrays/model.x.npy": 16_128, "terms.txt": 5_999}) == \
        16_128 + 5_999 + 1000 * LINE_OBJECT_BYTES
    # a member is counted at most at its limit, whatever the zip directory declares
    assert data_bytes(manifest, limits, {"arrays/model.x.npy": 10**12, "terms.txt": 10**12}) == \
        20_096 + 1000 * 4097 + 1000 * LINE_OBJECT_BYTES


def test_an_overlong_entry_is_measured_in_utf8_bytes():
    assert overlong_entry(["a" * MAX_LINE_BYTES, "é" * (MAX_LINE_BYTES // 2)]) == 0        # exactly at the limit
    assert overlong_entry(["ok", "é" * (MAX_LINE_BYTES // 2 + 1)]) == MAX_LINE_BYTES + 2
    assert overlong_entry([]) == 0


def test_a_member_of_line_feeds_is_refused_before_it_is_split(tmp_path):
    """A text member's line count is checked before it becomes strings: 4 MB of line feeds
    under a count of 1,000 would have been 4 million strings."""
    good = tmp_path / "good.spamkit"
    assert CliRunner().invoke(cli, ["train", str(SAMPLE), "-o", str(good)]).exit_code == 0
    with zipfile.ZipFile(good) as z:
        manifest = json.loads(z.read("manifest.json"))
        data = {n: z.read(n) for n in z.namelist() if n != "manifest.json"}
    count = manifest["terms"]["count"]
    data["terms.txt"] = b"\n" * (count * 4000)
    from test_persist_hostile import write
    bad = write(tmp_path / "bad.spamkit", manifest, data)
    with pytest.raises(ModelFormatError, match=f"has {count * 4000 + 1} lines, the manifest says {count}"):
        load_filter(bad)


# ----------------------------------------------------------------------------- the writer

def test_a_filter_that_could_not_be_read_back_is_not_written(tmp_path):
    out = tmp_path / "f.spamkit"
    result = spamkit("train", SAMPLE, "-o", out, env={"SPAMKIT_MAX_FILTER_BYTES": "100000"})
    assert result.returncode == 1, result.stderr
    assert b"Traceback" not in result.stderr
    assert b"cannot save a filter of" in result.stderr and b"more than the 100000" in result.stderr, result.stderr
    assert not out.exists() and not list(tmp_path.iterdir())
    # the same limit, once raised, writes a file that loads
    assert spamkit("train", SAMPLE, "-o", out).returncode == 0
    assert load_filter(out)[2].n_features_in_ > 0


def test_a_token_longer_than_a_line_is_left_out_of_a_word_list_and_counted(tmp_path):
    long = b"x" * (MAX_LINE_BYTES + 1)
    dump = b".MSG_COUNT 4 4 20260101\nviagra 3 0 20260101\n" + long + b" 1 1 20260101\nlunch 0 3\n"
    w = read_wordlist(io.BytesIO(dump))
    assert w.tokens == ["viagra", "lunch"] and w.skipped == 1
    path = tmp_path / "dump.txt"
    path.write_bytes(dump)
    result = spamkit("import-wordlist", path, "-o", tmp_path / "w.spamkit")
    assert result.returncode == 0, result.stderr
    assert b"imported 2 tokens" in result.stdout and b"1 left out" in result.stdout
    assert load_filter(tmp_path / "w.spamkit")[1].terms_ == ["lunch", "viagra"]


def test_a_model_entry_with_a_line_break_or_too_long_is_refused_on_saving(tmp_path):
    from spamkit.filterfile.spamfilter import SpamFilter
    f = SpamFilter.load(_sample_filter(tmp_path))
    f.vectorizer.terms_ = [*f.vectorizer.terms_[:-1], "y" * (MAX_LINE_BYTES + 1)]
    with pytest.raises(ModelFormatError, match="more than the 4096 a filter file's line may hold"):
        f.save(tmp_path / "bad.spamkit")
    assert not (tmp_path / "bad.spamkit").exists()


def _sample_filter(tmp_path) -> Path:
    path = tmp_path / "sample.spamkit"
    assert CliRunner().invoke(cli, ["train", str(SAMPLE), "-o", str(path)]).exit_code == 0
    return path


# ----------------------------------------------------------------------------- trec06p

@pytest.fixture(scope="module")
def trec06p_filter(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("big") / "trec06p.spamkit"
    result = spamkit("train", shared_corpus("trec06p/trec06p.tar.gz"), "-o", path, "--jobs", "2")
    assert result.returncode == 0, result.stderr
    return path


def test_a_filter_trained_on_all_of_trec06p_loads_in_every_command(trec06p_filter, tmp_path):
    manifest = read_manifest(trec06p_filter)
    n = manifest["model"]["n_features"]
    # big enough that the old budget (4,096 bytes a term) refused it: the test can fail
    assert old_budget(manifest) > MAX_FILTER_BYTES and n * (MAX_LINE_BYTES + 1) > MAX_FILTER_BYTES, n
    verdict, p = SpamFilter.load(trec06p_filter).verdict(SPAM)
    # pipe mode tags (the lean route, and the full one), as the filter loaded here decides
    for lean in ("1", "0"):
        out = spamkit("filter", trec06p_filter, "-", stdin=SPAM, env={"SPAMKIT_LEAN": lean})
        assert out.returncode == VERDICT_STATUS[verdict], out.stderr          # its verdict's status
        assert out.stdout.startswith(b"X-Spam-Status: ") and f"p={p:.6f}".encode() in out.stdout, \
            (lean, out.stdout[:300], out.stderr)
        assert out.stdout.endswith(SPAM)
    message = tmp_path / "m.eml"
    message.write_bytes(SPAM)
    out = spamkit("classify", trec06p_filter, message)
    assert out.returncode == 0 and f"\t{verdict}\t{p:.6f}".encode() in out.stdout, out.stdout + out.stderr
    out = spamkit("info", trec06p_filter)
    assert out.returncode == 0 and str(n).encode() in out.stdout.replace(b",", b""), out.stdout + out.stderr
    out = spamkit("evaluate", trec06p_filter, SAMPLE)
    assert out.returncode == 0, out.stderr
    # learn writes it back, and what it wrote loads again
    copy = tmp_path / "copy.spamkit"
    copy.write_bytes(trec06p_filter.read_bytes())
    folder = tmp_path / "spam"
    folder.mkdir()
    (folder / "1.eml").write_bytes(SPAM.replace(b"cheap meds", b"zqxjv unseen"))
    out = spamkit("learn", copy, "--spam", folder)
    assert out.returncode == 0, out.stderr
    assert b"learned spam 1" in out.stdout, out.stdout
    before, after = load_filter(trec06p_filter)[2], load_filter(copy)[2]
    assert after.class_count_.tolist() == [before.class_count_[0], before.class_count_[1] + 1]


def test_spamd_serves_a_filter_trained_on_all_of_trec06p(trec06p_filter):
    from test_spamd import Server
    server = Server(trec06p_filter, "--workers", "1")
    try:
        check = server.spamc("-c", data=SPAM)
    finally:
        server.stop()
    verdict, _ = SpamFilter.load(trec06p_filter).verdict(SPAM)
    assert check.returncode == (1 if verdict == "spam" else 0), check.stdout + check.stderr   # spamc -c: 1 when spam
    assert check.stdout.decode().endswith("/5.0\n"), check.stdout


# ----------------------------------------------------------------------------- 10 million tokens

def test_a_word_list_of_ten_million_tokens_imports_and_loads(tmp_path):
    """bogoutil -d text of 10 million tokens (257 MB): imported through the command line, then
    read by the lean route (pipe mode) and the full one. The tokens are made here; the one that
    decides the verdict is ``viagra``, in spam only."""
    dump = tmp_path / "big.txt"
    rng = np.random.default_rng(7)
    n = 10_000_000
    with dump.open("wb") as out:
        out.write(b".ENCODING 2 0 20260101\n.MSG_COUNT 1000 1000 20260101\n.WORDLIST_VERSION 20040500 0 20260101\n")
        out.write(b"viagra 900 0 20260101\n")
        for start in range(0, n - 1, 1_000_000):
            stop = min(start + 1_000_000, n - 1)
            s = rng.integers(0, 100, stop - start)
            h = rng.integers(0, 100, stop - start)
            out.write("".join(f"tok{i:x}q {a} {b} 20260101\n" for i, a, b in zip(range(start, stop), s.tolist(),
                                                                                 h.tolist())).encode())
    model = tmp_path / "big.spamkit"
    result = spamkit("import-wordlist", dump, "-o", model)
    assert result.returncode == 0, result.stderr
    assert f"imported {n} tokens".encode() in result.stdout
    manifest = read_manifest(model)
    assert manifest["model"]["n_features"] == n and old_budget(manifest) > MAX_FILTER_BYTES
    message = b"From: a@example.org\nSubject: viagra\n\nviagra viagra\n"
    for lean in ("1", "0"):
        out = spamkit("filter", model, "-", stdin=message, env={"SPAMKIT_LEAN": lean})
        assert out.returncode in (0, 1), out.stderr
        assert out.stdout.startswith(b"X-Spam-Status: Yes"), (lean, out.stdout[:300], out.stderr)
        assert out.stdout.endswith(message)
