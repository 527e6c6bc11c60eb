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
        value = value[part]
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
