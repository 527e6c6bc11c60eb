"""spamkit learn: incremental counts, no message learned twice, --forget restores the counts exactly."""

from __future__ import annotations

import mailbox

import numpy as np
import pytest
from click.testing import CliRunner

from spamkit.cli import cli
from spamkit.mail import tag
from spamkit.models import BernoulliNB, FisherNBStack, MultinomialNB, RobinsonFisher
from spamkit import SpamFilter

from conftest import SAMPLE


def _maildir(path, messages):
    box = mailbox.Maildir(path, create=True)
    for m in messages:
        box.add(m)
    return path


def _messages(cls):
    return [p.read_bytes() for p in sorted((SAMPLE / cls).iterdir())]


@pytest.mark.parametrize("model", [FisherNBStack, RobinsonFisher, MultinomialNB, BernoulliNB])
def test_unlearn_returns_the_counts_exactly(model):
    rng = np.random.default_rng(0)
    X = (rng.random((40, 30)) < 0.3).astype(float)
    y = np.where(rng.random(40) < 0.5, "spam", "ham")
    y[:2] = ["ham", "spam"]
    m = model().fit(X[:30], y[:30])
    before = (m.class_count_.copy(), m.feature_count_.copy(), m.predict_log_proba(X))
    m.partial_fit(X[30:], y[30:])
    assert not np.array_equal(m.feature_count_, before[1])
    m.unlearn(X[30:], y[30:])
    assert np.array_equal(m.class_count_, before[0]) and np.array_equal(m.feature_count_, before[1])
    np.testing.assert_allclose(m.predict_log_proba(X), before[2], rtol=1e-12, atol=1e-12)


def test_learn_forget_and_relabel_through_the_cli(tmp_path):
    runner = CliRunner()
    model = tmp_path / "m.spamkit"
    assert runner.invoke(cli, ["train", str(SAMPLE), "-o", str(model)]).exit_code == 0
    original = SpamFilter.load(model)
    new_ham = _maildir(tmp_path / "ham", [b"Subject: lunch %d\n\nsee you at noon, %d" % (i, i) for i in range(8)])
    result = runner.invoke(cli, ["learn", str(model), "--ham", str(new_ham)])
    assert result.exit_code == 0 and "learned ham 8" in result.output, result.output
    learned = SpamFilter.load(model)
    assert learned.model.class_count_[0] == original.model.class_count_[0] + 8 and len(learned.learned) == 8
    # the same messages again, one of them tagged by spamkit filter: nothing new
    tagged = _maildir(tmp_path / "tagged", [tag(b"Subject: lunch 3\n\nsee you at noon, 3", "ham", 0.1, "m@1")])
    result = runner.invoke(cli, ["learn", str(model), "--ham", str(new_ham), "--ham", str(tagged)])
    assert "learned nothing" in result.output and "9 already learned" in result.output
    # a correction: learned as ham, now spam -> moved, counts of ham back to the original
    result = runner.invoke(cli, ["learn", str(model), "--spam", str(new_ham)])
    assert "learned spam 8 (8 moved from the other class)" in result.output
    moved = SpamFilter.load(model)
    assert moved.model.class_count_[0] == original.model.class_count_[0]
    result = runner.invoke(cli, ["learn", str(model), "--spam", str(new_ham), "--forget"])
    assert "forgot spam 8" in result.output
    restored = SpamFilter.load(model)
    assert np.array_equal(restored.model.feature_count_, original.model.feature_count_)
    assert np.array_equal(restored.model.class_count_, original.model.class_count_) and restored.learned == {}


def test_learn_on_error_skips_what_the_filter_already_gets_right(tmp_path):
    runner = CliRunner()
    model = tmp_path / "m.spamkit"
    assert runner.invoke(cli, ["train", str(SAMPLE), "-o", str(model)]).exit_code == 0
    spams = _maildir(tmp_path / "spam", _messages("spam")[:20])
    f = SpamFilter.load(model)
    right = sum(f.verdict(m)[0] == "spam" for m in _messages("spam")[:20])
    result = runner.invoke(cli, ["learn", str(model), "--spam", str(spams), "--on-error", "--json"])
    assert result.exit_code == 0
    import json
    report = json.loads(result.output)
    assert report["skipped_correct"] == right and report["learned"].get("spam", 0) == 20 - right


def test_learn_refuses_knn_clearly(tmp_path):
    runner = CliRunner()
    model = tmp_path / "k.spamkit"
    assert runner.invoke(cli, ["train", str(SAMPLE), "--model", "knn", "-o", str(model)]).exit_code == 0
    result = runner.invoke(cli, ["learn", str(model), "--spam", str(_maildir(tmp_path / "s", _messages("spam")[:2]))])
    assert result.exit_code == 1 and "cannot learn incrementally" in result.output
