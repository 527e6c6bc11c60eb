"""Two classes neither called spam: ``--positive CLASS`` names the class ROC/PR are about.

Default: "spam" when it is a class, else the rarer class. The measures are checked by hand
and against scikit-learn; the HTML report says the classes' names and matches the JSON.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from click.testing import CliRunner
from sklearn.metrics import precision_score, recall_score, roc_auc_score

from spamkit.cli import cli
from spamkit.common.errors import ConfigError
from spamkit.jobs.evaluate import evaluate_predictions, positive_class


def test_the_positive_class_by_default_and_when_named():
    assert positive_class(["ham", "spam"], ["ham"] * 5 + ["spam"] * 9) == "spam"       # spam, even when common
    assert positive_class(["email", "sms"], ["sms"] * 3 + ["email"]) == "email"       # else the rarer
    assert positive_class(["a", "b"], ["a", "b"]) == "b"                              # a tie: the later name
    assert positive_class(["email", "sms"], [], "sms") == "sms"
    with pytest.raises(ConfigError, match="not a class of this filter"):
        positive_class(["email", "sms"], [], "spam")
    with pytest.raises(ConfigError, match="two-class evaluation"):
        positive_class(["a", "b", "c"], [], "a")


def test_two_class_measures_about_the_positive_class_by_hand_and_against_scikit_learn():
    y = ["sms", "sms", "email", "email", "sms", "email"]
    proba = np.array([[0.2, 0.8], [0.6, 0.4], [0.7, 0.3], [0.9, 0.1], [0.1, 0.9], [0.4, 0.6]])   # email, sms
    r = evaluate_predictions(y, proba, ["email", "sms"], positive="email")
    # decided: sms, email, email, email, sms, sms -> email caught 2 of 3, sms misfiled as email 1 of 3
    assert (r["positive"], r["negative"], r["tp"], r["fn"], r["fp"], r["tn"]) == ("email", "sms", 2, 1, 1, 2)
    y_pred = ["sms", "email", "email", "email", "sms", "sms"]
    assert r["spam_recall"] == pytest.approx(recall_score(y, y_pred, pos_label="email"))
    assert r["spam_precision"] == pytest.approx(precision_score(y, y_pred, pos_label="email"))
    is_email = np.array([v == "email" for v in y])
    assert r["auc"] == pytest.approx(roc_auc_score(is_email, proba[:, 0]), abs=1e-12)
    # the other way round: the same AUC, recalls swapped
    s = evaluate_predictions(y, proba, ["email", "sms"], positive="sms")
    assert s["auc"] == pytest.approx(r["auc"]) and s["spam_recall"] == r["ham_recall"]


def _two_class_corpus(root):
    for name, texts in (("news", [f"the council met on tuesday about the budget item {i}" for i in range(12)]),
                        ("chat", [f"hey r u coming 2nite lol {i}" for i in range(30)])):
        (root / name).mkdir(parents=True)
        for i, text in enumerate(texts):
            (root / name / f"{i}.txt").write_text(text + (" budget" if i % 7 == 0 else ""))
    return root


def test_the_command_line_text_json_and_report_name_the_classes(tmp_path):
    corpus = _two_class_corpus(tmp_path / "two")
    model = tmp_path / "m.spamkit"
    runner = CliRunner()
    out = runner.invoke(cli, ["train", str(corpus), "--classes", "any", "--model", "multinomial", "-o", str(model)])
    assert out.exit_code == 0, out.output
    text = runner.invoke(cli, ["evaluate", str(model), str(corpus), "--classes", "any"]).output
    assert "(positive class: news)" in text and "news recall" in text and "chat recall" in text   # the rarer
    page = tmp_path / "r.html"
    out = runner.invoke(cli, ["evaluate", str(model), str(corpus), "--classes", "any", "--positive", "chat",
                              "--report", str(page), "--json"])
    assert out.exit_code == 0, out.output
    result = json.loads(out.output)
    assert result["positive"] == "chat" and result["tp"] + result["fn"] == 30
    html_text = page.read_text(encoding="utf-8")
    assert "chat recall" in html_text and "P(chat)" in html_text and "spam recall" not in html_text
    for key, value in re.findall(r'data-key="([^"]+)" data-value="([^"]+)"', html_text):
        node = result
        for part in key.split("."):
            node = node[int(part)] if isinstance(node, list) else node[part]
        assert json.loads(value.replace("&quot;", '"')) == pytest.approx(node), key
    bad = runner.invoke(cli, ["evaluate", str(model), str(corpus), "--classes", "any", "--positive", "spam"])
    assert bad.exit_code == 1 and "not a class of this filter (chat, news)" in bad.output
