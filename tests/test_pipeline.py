"""SpamFilter, training with a held-out split, evaluation, explanations, and the CLI commands."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from spamkit.cli import cli
from spamkit.corpus import Corpus
from spamkit.corpus.split import holdout_ids
from spamkit.common.errors import ConfigError, CorpusError
from spamkit import SpamFilter, build_filter, train_filter

from conftest import SAMPLE


def test_holdout_chrono_random_order():
    recs = [(str(i), "ham" if i % 2 else "spam", None if i == 0 else i) for i in range(10)]
    with pytest.raises(CorpusError, match="1 of 10 messages have no date"):
        holdout_ids(recs, 0.3, "chrono")
    assert holdout_ids(recs[1:], 0.3, "chrono") == {"7", "8", "9"}
    random = holdout_ids(recs, 0.4, "random", seed=3)
    assert len(random) == 4 and sum(int(i) % 2 for i in random) == 2      # stratified: 2 of each
    assert holdout_ids(recs, 0.4, "random", seed=3) == random             # seeded
    with pytest.raises(ConfigError, match="between 0 and 1"):
        holdout_ids(recs, 1.0)


def test_train_holds_out_the_latest_messages():
    f = build_filter()
    with Corpus(SAMPLE) as corpus:
        report = train_filter(f, [corpus], test_fraction=0.25)
    assert report.split["method"] == "chrono"
    assert report.n_train + report.n_test == 240 and report.n_test == 60
    assert report.evaluation["n"] == 60
    assert 0.5 < report.evaluation["auc"] <= 1.0


def test_train_needs_two_classes_and_labels(tmp_path):
    (tmp_path / "ham").mkdir()
    (tmp_path / "ham" / "1.eml").write_bytes(b"Subject: a\n\nhello")
    with Corpus(tmp_path) as corpus, pytest.raises(CorpusError, match="needs at least 2 classes, found ham: 1"):
        train_filter(build_filter(), [corpus])
    with Corpus(tmp_path / "ham") as corpus, pytest.raises(CorpusError, match="has no class"):
        train_filter(build_filter(), [corpus])


def test_explanation_shares_add_up():
    raws = [p.read_bytes() for p in sorted(SAMPLE.rglob("*.eml"))]
    labels = [p.parent.name for p in sorted(SAMPLE.rglob("*.eml"))]
    f = SpamFilter().fit(raws, y=labels)
    msg = raws[labels.index("spam")]
    ex = f.explain(msg, n=10_000)
    assert ex["classes"] == ("spam", "ham")
    jll = f.model.joint_log_likelihood(f.transform([msg]))[0]
    empty = f.model.joint_log_likelihood(f.vectorizer.transform([[]]))[0]
    total = sum(w for _, w in ex["towards"]) + sum(w for _, w in ex["against"])
    assert total == pytest.approx((jll[1] - jll[0]) - (empty[1] - empty[0]))
    assert all(w > 0 for _, w in ex["towards"]) and all(w < 0 for _, w in ex["against"])


def test_multiclass_filter(tmp_path):
    for cls, words in {"sports": "goal match team", "politics": "vote law party", "food": "bread cake oven"}.items():
        (tmp_path / cls).mkdir()
        for i in range(5):
            (tmp_path / cls / f"{i}.txt").write_text(f"{words} {i}")
    f = build_filter()
    with Corpus(tmp_path, classes=None) as corpus:
        train_filter(f, [corpus])
    assert f.classes_.tolist() == ["food", "politics", "sports"]
    assert f.predict(["the team scored a goal"]).tolist() == ["sports"]
    with pytest.raises(ConfigError, match="P\\(spam\\) needs a 'spam' class"):
        f.p_spam(["x"])


# ------------------------------------------------------------------ CLI

def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def test_cli_train_classify_info_evaluate(tmp_path):
    model = tmp_path / "m.spamkit"
    result = run("train", SAMPLE, "--test-fraction", "0.3", "-o", model)
    assert result.exit_code == 0, result.output
    assert "held-out evaluation: 72 messages" in result.output and "ROC AUC" in result.output
    result = run("info", model)
    assert result.exit_code == 0 and ("fisher-nb (alpha=1.0, folds=5, length_aware=True, logistic=0.1, max_clues=150, "
                                      "min_dev=0.1, prior=0.5, side_inputs=1, squash=slog, strength=0.45)") in result.output
    assert "unlearning  approximate" in result.output
    assert "byte grams  online logistic regression on the byte 4-grams of the first 3500 bytes" in result.output
    spam = sorted((SAMPLE / "spam").iterdir())[0]
    result = run("classify", model, spam, "--explain", "3")
    assert result.exit_code == 0
    source, verdict, p = result.output.splitlines()[0].split("\t")
    assert source == str(spam) and verdict in ("ham", "spam") and 0 <= float(p) <= 1
    assert "towards spam:" in result.output
    result = run("classify", model, spam, "--json")
    record = json.loads(result.output)
    assert record["p_spam"] == pytest.approx(float(p), abs=1e-6)
    result = run("evaluate", model, SAMPLE, "--json")
    assert result.exit_code == 0
    assert json.loads(result.output)["n"] == 240


def test_cli_classify_reads_stdin(tmp_path):
    model = tmp_path / "m.spamkit"
    run("train", SAMPLE, "-o", model)
    raw = sorted((SAMPLE / "spam").iterdir())[0].read_bytes()
    proc = subprocess.run([sys.executable, "-m", "spamkit", "classify", str(model), "-"], input=raw,
                          capture_output=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode().startswith("-\t")


def test_cli_errors(tmp_path):
    bad = tmp_path / "bad.spamkit"
    bad.write_bytes(b"not a zip")
    result = run("classify", bad, SAMPLE / "ham")
    assert result.exit_code == 1 and result.output.startswith("Error: ") and "not a spamkit filter file" in result.output
    (tmp_path / "ham").mkdir()
    (tmp_path / "ham" / "a.eml").write_bytes(b"Subject: x\n\nhello")
    result = run("train", tmp_path, "-o", tmp_path / "m.spamkit")
    assert result.exit_code == 1 and "needs at least 2 classes" in result.output
    result = run("train", SAMPLE, "-o", tmp_path / "m.spamkit", "--stop-words", tmp_path / "nofile")
    assert result.exit_code == 1 and "stop-word file not found" in result.output
    result = run("train", SAMPLE, "-o", tmp_path / "m.spamkit", "--model", "svm")
    assert result.exit_code == 2


def test_cli_evaluate_rejects_foreign_classes(tmp_path):
    model = tmp_path / "m.spamkit"
    run("train", SAMPLE, "-o", model)
    tsv = tmp_path / "x.tsv"
    tsv.write_text("sports\tgoal\n")
    result = run("evaluate", model, tsv, "--classes", "any")
    assert result.exit_code == 1 and "not trained on" in result.output


def test_the_package_gives_every_name_of_its_facade_from_the_module_that_defines_it():
    import importlib

    import spamkit
    assert sorted(spamkit.__all__) == sorted(spamkit._FACADE) and len(set(spamkit.__all__)) == len(spamkit.__all__)
    for name, module in spamkit._FACADE.items():
        assert getattr(spamkit, name) is getattr(importlib.import_module(f"spamkit.{module}"), name), name
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        spamkit.no_such_name  # noqa: B018
    from spamkit import mail                            # a stage is still a submodule, not a facade name
    assert mail.__name__ == "spamkit.mail"


def test_importing_the_package_imports_none_of_its_stages():
    code = ("import sys, spamkit; from spamkit import __version__; "
            "print(sorted(m for m in sys.modules if m.startswith('spamkit.')), 'numpy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["[]", "False"]
