"""Threshold choice by cross-validation: brute-force oracle, saved and used by the filter."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from scipy.special import expit

from spamkit.cli import cli
from spamkit.corpus import Corpus
from spamkit.decide.selection import threshold_report
from spamkit import SpamFilter, cross_validated_log_odds

from conftest import SAMPLE


@pytest.mark.parametrize("seed", range(5))
def test_chosen_threshold_is_the_brute_force_optimum(seed):
    rng = np.random.default_rng(seed)
    y = rng.random(300) < 0.4
    s = rng.normal(size=300) + 2.0 * y
    r = threshold_report(y, s, c_fp=9.0, c_fn=1.0)
    # oracle: every possible cut (below all, between each pair of sorted scores, above all)
    cuts = np.concatenate([[-np.inf], np.sort(s), [np.inf]])
    brute = min((9.0 * np.sum((s > t) & ~y) + np.sum((s <= t) & y)) / 300 for t in cuts)
    assert r["chosen"]["cost"] == pytest.approx(brute)
    assert r["chosen"]["p_spam"] == pytest.approx(expit(r["chosen"]["log_odds"]))
    # the Bayes threshold of fp=9, fn=1 is 0.9 (hand-worked: 9 / (9 + 1))
    assert r["bayes"]["p_spam"] == pytest.approx(0.9)
    assert r["chosen"]["cost"] <= r["bayes"]["cost"] and r["chosen"]["cost"] <= r["at_one_half"]["cost"]


def test_cross_validated_scores_are_deterministic_and_complete(tmp_path):
    from spamkit import BEST, build_filter
    with Corpus(SAMPLE) as c:
        msgs = list(c)
    f = build_filter(**BEST).fit(msgs)
    with Corpus(SAMPLE) as c:
        y1, s1 = cross_validated_log_odds(f, [c], folds=4, seed=3)
    with Corpus(SAMPLE) as c:
        y2, s2 = cross_validated_log_odds(f, [c], folds=4, seed=3)
    assert len(s1) == 240 and np.array_equal(s1, s2) and np.array_equal(y1, y2) and np.isfinite(s1).all()
    # out-of-fold scores still separate the sample's classes
    from spamkit.decide.curves import roc_auc
    assert roc_auc(y1, s1) > 0.95


def test_cli_saves_the_threshold_and_decisions_use_it(tmp_path):
    runner = CliRunner()
    model = tmp_path / "m.spamkit"
    assert runner.invoke(cli, ["train", str(SAMPLE), "-o", str(model)]).exit_code == 0
    result = runner.invoke(cli, ["threshold", str(model), str(SAMPLE), "--cost", "fp=100,fn=10", "--save", "--json"])
    assert result.exit_code == 0, result.output
    chosen = json.loads(result.output)["chosen"]["p_spam"]
    f = SpamFilter.load(model)
    assert f.threshold == pytest.approx(chosen)
    proba = np.array([[1 - chosen / 2, chosen / 2], [1 - (1 + chosen) / 2, (1 + chosen) / 2]])
    assert f.decide(proba).tolist() == ["ham", "spam"]
    info = runner.invoke(cli, ["info", str(model)])
    assert "threshold   spam above P(spam)" in info.output
