"""Online (TREC-style) evaluation: scores equal batch refits on the past, delays, partial feedback, files."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

from spamkit.cli import cli
from spamkit.corpus import Corpus
from spamkit.errors import CorpusError
from spamkit.evaluation import online_evaluate
from spamkit.features import Vectorizer
from spamkit.message import parse_message
from spamkit.models import BernoulliNB, MultinomialNB
from spamkit.text import Analyzer

from conftest import SAMPLE


@pytest.fixture(scope="module")
def stream():
    with Corpus(SAMPLE) as corpus:
        msgs = sorted(corpus, key=lambda m: m.date)[:60]
    return msgs


def _batch_scores(msgs, model, delay=0, hashing=2 ** 12):
    """Oracle: for each message, a model fitted from scratch on the messages learned before it."""
    analyzer = Analyzer()
    vec = Vectorizer.hashed(hashing, "binary" if model is BernoulliNB else "tf")
    X = vec.transform(analyzer(parse_message(m.raw, m.kind)) for m in msgs)
    y = np.array([m.label for m in msgs])
    scores = []
    for i in range(len(msgs)):
        past = max(0, i - delay)
        if len(set(y[:past])) < 2:
            scores.append(0.0)
            continue
        nb = model(alpha=1.0).fit(X[:past], y[:past])
        jll = nb.joint_log_likelihood(X[i])[0]
        scores.append(jll[1] - jll[0])
    return np.array(scores)


@pytest.mark.parametrize("model, name", [(MultinomialNB, "multinomial"), (BernoulliNB, "bernoulli")])
@pytest.mark.parametrize("delay", [0, 5])
def test_online_scores_equal_batch_refits(stream, model, name, delay):
    result = online_evaluate(iter(stream), Analyzer(), model=name, hashing=2 ** 12, delay=delay)
    np.testing.assert_allclose(result.scores, _batch_scores(stream, model, delay), rtol=1e-9, atol=1e-9)
    assert result.n_learned == len(stream) - delay
    assert result.ids == [m.id for m in stream]


def test_partial_feedback_is_seeded(stream):
    a = online_evaluate(iter(stream), Analyzer(), feedback_fraction=0.5, seed=3, hashing=2 ** 12)
    b = online_evaluate(iter(stream), Analyzer(), feedback_fraction=0.5, seed=3, hashing=2 ** 12)
    assert a.scores == b.scores and 15 <= a.n_learned <= 45
    full = online_evaluate(iter(stream), Analyzer(), hashing=2 ** 12)
    assert a.scores != full.scores


def test_trec_results_file(stream, tmp_path):
    result = online_evaluate(iter(stream), Analyzer(), hashing=2 ** 12)
    result.write_trec(tmp_path / "results")
    lines = (tmp_path / "results").read_text().splitlines()
    assert len(lines) == len(stream)
    ident, judgement, score, gold = lines[-1].split()
    assert ident == stream[-1].id and gold == stream[-1].label
    assert judgement == ("spam" if float(score) > 0 else "ham")
    # the summary measures are computed from exactly these scores
    from spamkit.metrics import trec_measures
    y = np.array([line.split()[3] == "spam" for line in lines])
    s = np.array([float(line.split()[2]) for line in lines])
    assert trec_measures(y, s, 0.0)["roca_pct"] == pytest.approx(result.measures["roca_pct"], abs=1e-4)


def test_single_class_stream_is_an_error(stream):
    with pytest.raises(CorpusError, match="both ham and spam"):
        online_evaluate(iter([m for m in stream if m.label == "ham"]), Analyzer(), hashing=2 ** 10)


def test_cli_online(tmp_path):
    out = tmp_path / "results.txt"
    result = CliRunner().invoke(cli, ["online", str(SAMPLE), "--order", "date", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "(1-ROCA)%" in result.output and "lam%" in result.output and "messages/s" in result.output
    assert len(out.read_text().splitlines()) == 240


def test_cli_online_reports_the_learning_curve():
    import json
    result = CliRunner().invoke(cli, ["online", str(SAMPLE), "--order", "date", "--json"])
    assert result.exit_code == 0, result.output
    curve = json.loads(result.output)["learning_curve"]
    assert len(curve) == 10 and curve[-1]["end"] == 240 and curve[-1]["ham"] + curve[-1]["spam"] == 200
    text = CliRunner().invoke(cli, ["online", str(SAMPLE), "--order", "date"]).output
    assert "learning curve" in text and "240: " in text


def test_active_learning_asks_by_margin_within_its_quota(stream):
    """The selective-sampling rule replayed by hand: with the same seed, message i is asked about
    iff a uniform draw is below b / (b + |z_i|), until the quota is spent."""
    result = online_evaluate(iter(stream), Analyzer(), model="multinomial", hashing=2 ** 12, active=12,
                             active_b=2.0, seed=5)
    rng = np.random.default_rng(5)
    asked = 0
    for z in result.scores:
        if asked < 12 and rng.random() < 2.0 / (2.0 + abs(z)):
            asked += 1
    assert result.settings["asked"] == asked == result.n_learned <= 12
    # an enormous b asks about everything until the quota is spent: the first 12 messages
    eager = online_evaluate(iter(stream), Analyzer(), model="multinomial", hashing=2 ** 12, active=12,
                            active_b=1e12)
    full = online_evaluate(iter(stream[:12]), Analyzer(), model="multinomial", hashing=2 ** 12)
    assert eager.n_learned == 12 and eager.scores[:12] == full.scores
    with pytest.raises(Exception, match="quota"):
        online_evaluate(iter(stream), Analyzer(), active=5, feedback_fraction=0.5)


def test_online_reports_the_default_three_way_decision(stream):
    from scipy.special import expit
    from spamkit.decision import DEFAULT_BAND
    result = online_evaluate(iter(stream), Analyzer(), model="multinomial", hashing=2 ** 12)
    d = result.measures["default_decision"]
    p = expit(np.asarray(result.scores))
    ham = np.array([g == "ham" for g in result.gold])
    assert d["ham_misfiled"] == pytest.approx(100 * np.mean(p[ham] > DEFAULT_BAND[1]))
    assert d["spam_caught"] == pytest.approx(100 * np.mean(p[~ham] > DEFAULT_BAND[1]))
    assert d["ham_unsure"] == pytest.approx(100 * np.mean((p[ham] >= DEFAULT_BAND[0]) & (p[ham] <= DEFAULT_BAND[1])))


def test_online_html_report_matches_the_json(tmp_path):
    import json
    import re
    page = tmp_path / "online.html"
    r = CliRunner().invoke(cli, ["online", str(SAMPLE), "--order", "date", "--model", "logistic", "--json",
                                 "--report", str(page)])
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    text = page.read_text()
    assert text.count("data:image/png;base64,") == 2 and "Learning curve" in text
    found = dict(re.findall(r'data-key="([^"]+)" data-value="([^"]+)"', text))
    assert float(found["measures.roca_pct"]) == data["measures"]["roca_pct"]
    assert float(found["learning_curve.9.roca_pct"]) == data["learning_curve"][9]["roca_pct"]
    assert float(found["measures.default_decision.ham_misfiled"]) == data["measures"]["default_decision"]["ham_misfiled"]
    assert data["settings"]["rate"] == 0.2 and data["report"]["roc"]["fpr"][0] == 0.0
