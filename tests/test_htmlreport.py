"""The HTML evaluation report: self-contained, plots embedded, every number equal to the JSON's."""

from __future__ import annotations

import base64
import json
import re

import pytest
from click.testing import CliRunner

from spamkit.cli import cli

from conftest import SAMPLE, installed


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
    from spamkit.jobs.reports import probability_scores
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


# ------------------------------------------------------------------ as a person sees it

def _chromium() -> str:
    return installed("chromium", "chromium", "chromium-browser")


def _browse(page, *args) -> str:
    import subprocess
    out = subprocess.run([_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                          "--window-size=1280,900", *args, page.resolve().as_uri()],
                         capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """A report of each kind: evaluate (ham/spam and three classes), compare (both), online."""
    from test_compare import noisy_three_classes
    tmp = tmp_path_factory.mktemp("pages")
    runner = CliRunner()
    model, three = tmp / "m.spamkit", tmp / "three.spamkit"
    corpus = noisy_three_classes(tmp)
    assert runner.invoke(cli, ["train", str(SAMPLE), "-o", str(model)]).exit_code == 0
    assert runner.invoke(cli, ["train", str(corpus), "--classes", "any", "--model", "multinomial", "-o",
                               str(three)]).exit_code == 0
    commands = {"evaluate": ["evaluate", str(model), str(SAMPLE)],
                "three classes": ["evaluate", str(three), str(corpus), "--classes", "any"],
                "compare": ["compare", str(SAMPLE), "--config", "best", "--config", "model=multinomial", "--folds", "3"],
                "compare three classes": ["compare", str(corpus), "--classes", "any", "--folds", "3",
                                          "--config", "model=multinomial", "--config", "model=complement"],
                "online": ["online", str(SAMPLE)]}
    out = {}
    for name, args in commands.items():
        page = tmp / f"{name.replace(' ', '-')}.html"
        result = runner.invoke(cli, [*args, "--report", str(page)])
        assert result.exit_code == 0, (name, result.output)
        out[name] = page
    return out


@pytest.mark.parametrize("kind", ["evaluate", "three classes", "compare", "compare three classes", "online"])
def test_the_report_reads_well_in_a_browser(pages, kind, tmp_path):
    import struct

    from matplotlib.image import imread
    page = pages[kind]
    text = page.read_text(encoding="utf-8")
    # what a person needs before scrolling, and what only some want, folded away
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in text
    what = re.search(r'<p class="what">(.*?)</p>', text, re.S).group(1)
    assert what.startswith("Evaluated:") and "command" in what and re.search(r"\d{4}-\d\d-\d\d", what)
    if kind in ("evaluate", "three classes"):
        assert "filter <code>" in what and "corpora <code>" in what
        assert "<details><summary>the filter&#x27;s manifest and settings</summary>" in text
    # plots twice as sharp as they are shown, each with alt text that says what it shows
    images = re.findall(r'<img alt="([^"]+)" width="(\d+)" height="(\d+)" src="data:image/png;base64,([^"]+)"', text)
    assert images
    for alt, width, _, data in images:
        assert " against " in alt and len(alt) > 30, alt
        png_width = struct.unpack(">I", base64.b64decode(data)[16:20])[0]
        assert png_width == 2 * int(width)
    # in Chromium at 1280 px: nothing wider than the window, and the page is not blank
    probe = tmp_path / "probe.html"
    probe.write_text(text.replace("</body>", "<script>document.body.setAttribute('data-widths', "
                                  "document.documentElement.scrollWidth + ' ' + window.innerWidth)</script></body>"))
    scroll, inner = map(int, re.search(r'data-widths="(\d+) (\d+)"', _browse(probe, "--dump-dom")).groups())
    assert inner == 1280 and scroll <= inner, (scroll, inner)
    shot = tmp_path / "shot.png"
    _browse(page, f"--screenshot={shot}")
    pixels = imread(shot)[..., :3]
    assert pixels.shape[:2] == (900, 1280)
    dark = (pixels.mean(axis=2) < 0.5).mean()
    assert pixels.std() > 0.05 and 0.005 < dark < 0.5, (pixels.std(), dark)      # text on a light page


def _folder_of(messages, root):
    for i, m in enumerate(messages):
        (root / m.label).mkdir(parents=True, exist_ok=True)
        (root / m.label / f"{i:05d}.eml").write_bytes(m.raw)
    return root


def test_the_three_reports_lead_with_the_filters_decisions_and_agree(tmp_path):
    """A filter trained on one server's mail judging another's (CSDMC2010 -> trec07p-dev): the
    terminal, the JSON and the HTML page lead with what the filter decided -- ham, unsure, spam,
    with its unsure band and familiarity guard -- and its cost, the same numbers in all three;
    the 0.5 cut comes after, as the ranking's view. The costliest decisions are ranked by what
    each cost as decided, the histogram spans the scores there are, the log ROC starts at one ham."""
    from itertools import islice

    from conftest import shared_corpus
    from spamkit.corpus import Corpus
    with Corpus(shared_corpus("csdmc2010/csdmc2010.tar.gz")) as c:
        train = _folder_of(list(islice(c, 600)), tmp_path / "train")
    with Corpus(shared_corpus("trec07p-dev/trec07p-dev.tar.gz")) as c:
        judged = _folder_of(list(islice(c, 800)), tmp_path / "judged")
    model, page = tmp_path / "m.spamkit", tmp_path / "r.html"
    runner = CliRunner()
    assert runner.invoke(cli, ["train", str(train), "-o", str(model)]).exit_code == 0
    text = runner.invoke(cli, ["evaluate", str(model), str(judged)])
    out = runner.invoke(cli, ["evaluate", str(model), str(judged), "--report", str(page), "--json"])
    assert text.exit_code == 0 and out.exit_code == 0, text.output + out.output
    result = json.loads(out.output)
    costs = result["costs"]
    decided = costs["decisions"]
    assert sum(decided["spam"].values()) + sum(decided["ham"].values()) == result["n"]
    assert decided["spam"]["unsure"] + decided["ham"]["unsure"] > 0      # mail from elsewhere: some unsure
    # terminal: the decisions first, with the JSON's numbers, then the 0.5 cut
    lines = text.output.splitlines()
    assert lines[1].startswith("  the filter's decisions, under costs")
    for cls in ("ham", "spam"):
        row = next(line for line in lines if line.strip().startswith(f"true {cls} "))
        assert row.split(None, 2)[2] == "  ".join(f"-> {d} {n}" for d, n in decided[cls].items()), row
    assert f"cost per message: {costs['cost_per_message']:.4f}" in lines[4]
    assert lines[5].startswith("  at P(spam) 0.5, without an unsure band")
    # HTML: the decisions first, every number the JSON's (data-value against the JSON key)
    html_text = page.read_text(encoding="utf-8")
    assert html_text.index("The filter's decisions") < html_text.index("<h2>Measures")
    shown = dict(re.findall(r'data-key="([^"]+)" data-value="([^"]+)"', html_text))
    for cls in ("ham", "spam"):
        for d, n in decided[cls].items():
            assert json.loads(shown[f"costs.decisions.{cls}.{d}"]) == n
    assert json.loads(shown["costs.cost_per_message"]) == pytest.approx(costs["cost_per_message"])
    for key, value in shown.items():
        assert json.loads(value.replace("&quot;", '"')) == pytest.approx(_lookup(result, key)), key
    # the costliest decisions, by what each cost as decided, each with its decision
    report = result["report"]
    mistakes = report["mistakes"]
    assert mistakes and [m["cost"] for m in mistakes] == sorted((m["cost"] for m in mistakes), reverse=True)
    assert all(m["decision"] != m["label"] and m["cost"] > 0 for m in mistakes)
    assert {m["decision"] for m in mistakes} <= {"ham", "spam", "unsure"}
    # axes that follow the data
    low, high = report["histogram"]["range"]
    scores = [m["log_odds"] for m in mistakes]
    assert low <= min(scores) and max(scores) <= high and high - low < 200
    n_ham = result["tn"] + result["fp"]
    assert report["roc"]["smallest_fpr"] == pytest.approx(1 / n_ham)
