"""spamkit cv / compare: out-of-fold scores equal filters trained on the other folds; same folds for all."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from click.testing import CliRunner

from spamkit.cli import cli
from spamkit.corpus import Corpus
from spamkit.common.errors import ConfigError
from spamkit.decide.selection import stratified_folds
from spamkit import build_filter, cross_validated_log_odds, filter_from_config, parse_config

from conftest import SAMPLE


@pytest.mark.parametrize("settings", [{"model": "multinomial", "tokens": "words"}, {}])
def test_out_of_fold_scores_equal_filters_trained_on_the_other_folds(settings):
    with Corpus(SAMPLE) as c:
        msgs = list(c)
    with Corpus(SAMPLE) as c:
        y, s, folds = cross_validated_log_odds(filter_from_config(settings), [c], folds=3, seed=1,
                                               return_folds=True)
    assert np.array_equal(folds, stratified_folds([m.label for m in msgs], 3, seed=1))
    for k in range(3):
        train = [m for m, f in zip(msgs, folds) if f != k]
        held = [m for m, f in zip(msgs, folds) if f == k]
        f = filter_from_config(settings).fit(train)                 # the ordinary training path
        tokens, texts = f.read(held)                                # (the default's byte 4-grams read bytes)
        lp = f.log_proba(f.vectorizer.transform(tokens), f.side_scores(texts))
        np.testing.assert_allclose(s[folds == k], lp[:, 1] - lp[:, 0], rtol=1e-9, atol=1e-9)


def test_compare_uses_the_same_folds_for_every_configuration():
    out = CliRunner().invoke(cli, ["compare", str(SAMPLE), "--config", "model=multinomial,tokens=words",
                                   "--config", "model=multinomial,tokens=words", "--folds", "3", "--json"])
    assert out.exit_code == 0, out.output
    a, b = json.loads(out.output)["configs"]
    assert a["per_fold"] == b["per_fold"] and b["vs_first"]["auc_diff_mean"] == 0.0


def test_bad_configuration_is_a_clear_error():
    with pytest.raises(ConfigError, match="bad setting"):
        parse_config("modle=knn")
    with pytest.raises(ConfigError, match="needs a float"):
        parse_config("alpha=lots")
    out = CliRunner().invoke(cli, ["cv", str(SAMPLE), "--config", "alpha=lots"])
    assert out.exit_code == 1 and "needs a float" in out.output
    assert isinstance(filter_from_config({"model": "knn", "k": 3}).model.k, int)
    # each model's own default smoothing, and what a user gives wins
    assert build_filter(model="multinomial").model.alpha == 0.01
    assert build_filter(model="multinomial", alpha=1.0).model.alpha == 1.0
    assert build_filter(model="fisher-nb").model.alpha == 1.0
    assert filter_from_config({"model": "bernoulli"}).vectorizer.min_df == 2
    assert filter_from_config({"model": "complement", "weight_norm": True}).model.norm is True
    with pytest.raises(ConfigError, match="needs true or false"):
        parse_config("model=complement,length_norm=maybe")


def test_compare_report_matches_the_json(tmp_path):
    import re
    page = tmp_path / "c.html"
    out = CliRunner().invoke(cli, ["compare", str(SAMPLE), "--config", "best", "--config",
                                   "model=multinomial,tokens=words", "--folds", "3", "--report", str(page), "--json"])
    assert out.exit_code == 0, out.output
    result = json.loads(out.output)
    text = page.read_text(encoding="utf-8")
    assert len(re.findall(r'src="data:image/png;base64,', text)) == 2
    shown = re.findall(r'data-key="([^"]+)" data-value="([^"]+)"', text)
    assert len(shown) >= 20
    for key, value in shown:
        node = result
        for part in key.split("."):
            node = node[int(part)] if part.isdigit() else node[part]
        assert json.loads(value.replace("&quot;", '"')) == pytest.approx(node), key


def noisy_three_classes(tmp_path):
    rng = np.random.default_rng(5)
    vocab = {"a": "apple banana cherry grape", "b": "car truck engine wheel", "c": "song music guitar drum"}
    shared = "the of and to in".split()
    lines = []
    for i in range(90):
        c = "abc"[i % 3]
        own = vocab[c].split()
        words = [rng.choice(own) for _ in range(3)] + [rng.choice(vocab["abc"[(i + 1) % 3]].split())] + \
                [rng.choice(shared) for _ in range(4)]
        lines.append(f"{c}\t{' '.join(words)}\n")
    path = tmp_path / "three.tsv"
    path.write_text("".join(lines))
    return path


def test_compare_on_three_classes(tmp_path):
    corpus = noisy_three_classes(tmp_path)
    result = CliRunner().invoke(cli, ["compare", str(corpus), "--classes", "any", "--folds", "3", "--json",
                                      "--config", "model=multinomial,tokens=words",
                                      "--config", "model=complement,tokens=words"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    first = data["configs"][0]
    assert first["classes"] == ["a", "b", "c"] and first["n"] == 90
    confusion = np.array(first["confusion"])
    assert first["accuracy"] == pytest.approx(np.trace(confusion) / confusion.sum())
    assert sum(f["accuracy"] for f in first["per_fold"]) / 3 == pytest.approx(first["accuracy_fold_mean"])
    assert set(first["one_vs_rest"]) == {"per_class", "macro", "weighted", "micro"}
    assert data["configs"][1]["vs_first"]["measure"] == "accuracy"
    text = CliRunner().invoke(cli, ["cv", str(corpus), "--classes", "any", "--folds", "3",
                                    "--config", "model=multinomial,tokens=words"]).output
    assert "90 messages of 3 classes (a, b, c)" in text and "macro AUC" in text


def test_compare_report_on_three_classes_matches_the_json(tmp_path):
    corpus = noisy_three_classes(tmp_path)
    page = tmp_path / "r.html"
    result = CliRunner().invoke(cli, ["compare", str(corpus), "--classes", "any", "--folds", "3", "--json",
                                      "--config", "model=multinomial,tokens=words",
                                      "--config", "model=complement,tokens=words", "--report", str(page)])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    text = page.read_text(encoding="utf-8")
    assert "3 classes (a, b, c)" in text and "micro-averaged one-vs-rest ROC" in text
    assert len(re.findall(r'src="data:image/png;base64,', text)) == 2
    shown = re.findall(r'data-key="([^"]+)" data-value="([^"]+)"', text)
    assert len(shown) >= 2 * 8 + 2 * 3 * 2
    for key, value in shown:
        node = data
        for part in key.split("."):
            node = node[int(part)] if isinstance(node, list) else node[part]
        assert json.loads(value.replace("&quot;", '"')) == pytest.approx(node), key
    # the curve is the pooled one-vs-rest ranking: its area is the micro AUC (scikit-learn's trapezoids)
    first = data["configs"][0]
    roc = first["micro_roc"]
    area = float(np.trapezoid(roc["tpr"], roc["fpr"]))
    assert area == pytest.approx(first["one_vs_rest"]["micro"]["auc"], abs=2e-3)

def test_k_class_costs_in_compare_against_the_out_of_fold_probabilities(tmp_path):
    from spamkit.jobs.folds import cross_validated_log_proba
    corpus = noisy_three_classes(tmp_path)
    table = tmp_path / "costs.csv"
    # calling a "c" message "b" is dear; abstaining costs 0.4 whatever the class
    table.write_text("decision,a,b,c\na,0,1,1\nb,1,0,6\nc,1,1,0\nunsure,0.4,0.4,0.4\n")
    out = CliRunner().invoke(cli, ["compare", str(corpus), "--classes", "any", "--folds", "3", "--json",
                                   "--config", "model=multinomial,tokens=words", "--cost", str(table)])
    assert out.exit_code == 0, out.output
    costs = json.loads(out.stdout)["configs"][0]["costs"]
    # the same out-of-fold probabilities by the Python API, decided by hand with numpy
    with Corpus(corpus, classes=None) as c:
        labels, classes, lp, _ = cross_validated_log_proba(filter_from_config({"model": "multinomial",
                                                                              "tokens": "words"}), [c], 3, 0)
    matrix = np.array([[0, 1, 1], [1, 0, 6], [1, 1, 0], [0.4, 0.4, 0.4]])      # rows a, b, c, unsure
    expected = np.exp(lp) @ matrix.T
    chosen = expected.argmin(axis=1)
    truth = np.array([classes.index(str(v)) for v in labels])
    names = ["a", "b", "c", "unsure"]
    for j, cls in enumerate(classes):
        assert costs["decisions"][cls] == {d: int(np.sum((truth == j) & (chosen == i))) for i, d in enumerate(names)}
    assert costs["cost_per_message"] == pytest.approx(matrix[chosen, truth].mean(), abs=1e-12)
    assert costs["expected_cost_per_message"] == pytest.approx(expected[np.arange(len(chosen)), chosen].mean(),
                                                               abs=1e-12)
    assert sum(costs["decisions"]["c"].values()) == 30 and costs["decisions"]["c"]["b"] == 0
    text = CliRunner().invoke(cli, ["cv", str(corpus), "--classes", "any", "--folds", "3",
                                    "--config", "model=multinomial,tokens=words", "--cost", str(table)]).output
    assert "decided by the costs" in text and f"cost per message {costs['cost_per_message']:.4f}" in text
    page = tmp_path / "r.html"
    out = CliRunner().invoke(cli, ["compare", str(corpus), "--classes", "any", "--folds", "3", "--report", str(page),
                                   "--config", "model=multinomial,tokens=words", "--cost", str(table)])
    assert out.exit_code == 0, out.output
    assert f'data-key="configs.0.costs.cost_per_message" data-value="{costs["cost_per_message"]}"' in \
        page.read_text(encoding="utf-8")
