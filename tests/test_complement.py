"""Complement Naive Bayes (Rennie et al. 2003): scikit-learn's ComplementNB as the oracle, the
complement counts by hand, the options, the command line and the filter file."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp
from click.testing import CliRunner

from spamkit.cli import cli
from spamkit.models import ComplementNB

from conftest import SAMPLE


def counts(seed=0, n=120, d=40):
    rng = np.random.default_rng(seed)
    y = rng.choice(["a", "b", "c"], n, p=[0.6, 0.3, 0.1])             # unbalanced, as CNB is meant for
    X = rng.poisson(0.4, (n, d)) + (rng.poisson(1.5, (n, d)) * (np.arange(d)[None, :] % 3 == np.searchsorted(["a", "b", "c"], y)[:, None]))
    return sp.csr_matrix(X.astype(float)), y


@pytest.mark.parametrize("alpha,norm", [(1.0, False), (1.0, True), (0.3, True)])
def test_equals_scikit_learn(alpha, norm):
    from sklearn.naive_bayes import ComplementNB as Reference
    X, y = counts()
    ours, ref = ComplementNB(alpha=alpha, norm=norm).fit(X, y), Reference(alpha=alpha, norm=norm).fit(X, y)
    Q, _ = counts(seed=1, n=30)
    np.testing.assert_allclose(ours.feature_log_prob_, ref.feature_log_prob_, rtol=1e-12)
    np.testing.assert_allclose(ours.predict_log_proba(Q), ref.predict_log_proba(Q), rtol=1e-9, atol=1e-12)
    assert ours.predict(Q).tolist() == ref.predict(Q).tolist()


def test_the_transforms_are_the_papers_steps():
    from sklearn.naive_bayes import ComplementNB as Reference
    X, y = counts()
    Xt = X.copy()
    Xt.data = np.log1p(Xt.data)                                         # step 1: TF transform
    norms = np.sqrt(np.asarray(Xt.multiply(Xt).sum(axis=1)).ravel())
    Xt = sp.csr_matrix(Xt.multiply(1 / np.where(norms == 0, 1, norms)[:, None]))   # step 3: length
    ours = ComplementNB(norm=True, tf_transform=True, length_norm=True).fit(X, y)
    ref = Reference(norm=True).fit(Xt, y)
    np.testing.assert_allclose(ours.predict_log_proba(X), ref.predict_log_proba(Xt), rtol=1e-9, atol=1e-12)


def test_complement_counts_by_hand():
    X = np.array([[2, 0], [0, 1], [1, 1]])
    nb = ComplementNB(alpha=1).fit(X, ["a", "b", "b"])
    # complement of a = the b rows: word counts (1, 2) + 1 each -> (2, 3) / 5
    np.testing.assert_allclose(np.exp(-nb.feature_log_prob_[0]), [2 / 5, 3 / 5])
    # complement of b = the a row: (2, 0) + 1 -> (3, 1) / 4
    np.testing.assert_allclose(np.exp(-nb.feature_log_prob_[1]), [3 / 4, 1 / 4])


def test_learning_in_batches_and_unlearning_are_exact():
    X, y = counts()
    whole = ComplementNB(norm=True).fit(X, y)
    parts = ComplementNB(norm=True)
    parts.partial_fit(X[:50], y[:50], classes=["a", "b", "c"])
    parts.partial_fit(X[50:], y[50:])
    np.testing.assert_allclose(parts.feature_log_prob_, whole.feature_log_prob_, rtol=1e-12)
    parts.partial_fit(X[:7], y[:7])
    parts.unlearn(X[:7], y[:7])
    np.testing.assert_allclose(parts.feature_log_prob_, whole.feature_log_prob_, rtol=1e-12)


def test_command_line_and_filter_file(tmp_path):
    model = tmp_path / "c.spamkit"
    result = CliRunner().invoke(cli, ["train", str(SAMPLE), "--model", "complement", "--tokens", "words",
                                      "-o", str(model), "--test-fraction", "0.3", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["evaluation"]["accuracy"] > 0.85
    info = json.loads(CliRunner().invoke(cli, ["info", str(model), "--json"]).stdout)
    # the model's own defaults (spamkit.filterfile.config.MODEL_DEFAULTS, chosen by scripts/model_defaults.py)
    assert info["model"]["type"] == "complement"
    assert info["model"]["params"] == {"alpha": 0.1, "norm": False, "tf_transform": True, "length_norm": True}
    # ... each of which the options override
    again = tmp_path / "wcnb.spamkit"
    result = CliRunner().invoke(cli, ["train", str(SAMPLE), "--model", "complement", "--weight-norm", "--no-tf-log",
                                      "--no-length-norm", "--alpha", "1", "-o", str(again)])
    assert result.exit_code == 0, result.output
    params = json.loads(CliRunner().invoke(cli, ["info", str(again), "--json"]).stdout)["model"]["params"]
    assert params == {"alpha": 1.0, "norm": True, "tf_transform": False, "length_norm": False}
    explained = CliRunner().invoke(cli, ["classify", str(model), str(SAMPLE / "spam"), "--explain", "3", "--json"])
    assert explained.exit_code == 0 and "towards" in explained.stdout
