"""The HTML evaluation report: self-contained, plots embedded, every number equal to the JSON's."""

from __future__ import annotations

import base64
import json
import re

import pytest
from click.testing import CliRunner

from spamkit.cli import cli

from conftest import SAMPLE


def _lookup(result: dict, key: str):
    value = result
    for part in key.split("."):
        value = value[int(part)] if isinstance(value, list) else value[part]
    return value


def test_report_embeds_plots_and_matches_the_json(tmp_path):
    runner = CliRunner()
    model = tmp_path / "m.spamkit"
    assert runner.invoke(cli, ["train", str(SAMPLE), "-o", str(model), "--test-fraction", "0.5"]).exit_code == 0
    page = tmp_path / "report.html"
    out = runner.invoke(cli, ["evaluate", str(model), str(SAMPLE), "--cost", "fp=100,fn=10", "--report", str(page),
                              "--json"])
    assert out.exit_code == 0, out.output
    result = json.loads(out.output)
    text = page.read_text(encoding="utf-8")
    images = re.findall(r'src="data:image/png;base64,([^"]+)"', text)
    assert len(images) == 6
    assert all(base64.b64decode(png)[:8] == b"\x89PNG\r\n\x1a\n" for png in images)
    assert "http://" not in text.split("<h2>Configuration")[0] and "<script" not in text   # nothing fetched
    shown = re.findall(r'data-key="([^"]+)" data-value="([^"]+)"', text)
    assert len(shown) >= 20
    for key, value in shown:
        assert json.loads(value.replace("&quot;", '"')) == pytest.approx(_lookup(result, key)), key
    report = result["report"]
    assert report["auc"]["auc_low"] <= report["auc"]["auc"] <= report["auc"]["auc_high"]
    assert sum(b["n"] for b in report["reliability"]) == result["n"]
    assert len(report["mistakes"]) == min(10, result["fp"] + result["fn"])


def test_probability_scores_against_scikit_learn():
    import numpy as np
    from sklearn.metrics import brier_score_loss, log_loss
    from spamkit.evaluation import probability_scores
    rng = np.random.default_rng(0)
    y = rng.random(200) < 0.3
    p = np.clip(rng.random(200), 0.01, 0.99)
    got = probability_scores(y, p)
    assert got["brier"] == pytest.approx(brier_score_loss(y, p))
    assert got["log_loss"] == pytest.approx(log_loss(y, p))


def test_report_measures_the_effect_of_calibration(tmp_path):
    runner = CliRunner()
    model = tmp_path / "iso.spamkit"
    assert runner.invoke(cli, ["train", str(SAMPLE), "-o", str(model), "--model", "fisher", "--calibrate",
                               "isotonic"]).exit_code == 0
    page = tmp_path / "r.html"
    out = runner.invoke(cli, ["evaluate", str(model), str(SAMPLE), "--report", str(page), "--json"])
    assert out.exit_code == 0, out.output
    cal = json.loads(out.output)["report"]["calibration"]
    assert "raw" in cal and len(cal["raw"]["reliability"]) == 10
    assert 'data-key="report.calibration.raw.brier"' in page.read_text(encoding="utf-8")


def test_k_class_report_matches_the_json(tmp_path):
    """Three classes: per-class one-vs-rest ROC and PR curves (each class and the micro average),
    the per-class table, the averages and the confusion matrix, every number from the JSON."""
    from test_compare import noisy_three_classes
    corpus = noisy_three_classes(tmp_path)
    model = tmp_path / "three.spamkit"
    runner = CliRunner()
    assert runner.invoke(cli, ["train", str(corpus), "--classes", "any", "--model", "multinomial", "--tokens", "words",
                               "-o", str(model)]).exit_code == 0
    page = tmp_path / "three.html"
    out = runner.invoke(cli, ["evaluate", str(model), str(corpus), "--classes", "any", "--report", str(page), "--json"])
    assert out.exit_code == 0, out.output
    result = json.loads(out.stdout)
    text = page.read_text(encoding="utf-8")
    images = re.findall(r'src="data:image/png;base64,([^"]+)"', text)
    assert len(images) == 2 and all(base64.b64decode(png)[:8] == b"\x89PNG\r\n\x1a\n" for png in images)
    shown = dict(re.findall(r'data-key="([^"]+)" data-value="([^"]+)"', text))
    assert {"one_vs_rest.per_class.a.auc", "one_vs_rest.micro.average_precision", "confusion.2.2",
            "per_class.b.f1"} <= set(shown)
    for key, value in shown.items():
        assert json.loads(value.replace("&quot;", '"')) == pytest.approx(_lookup(result, key)), key
    curves = result["report"]
    assert set(curves["per_class"]) == {"a", "b", "c"} and curves["micro"]["roc"]["tpr"][-1] == 1.0
