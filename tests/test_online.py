"""Online (TREC-style) evaluation: scores equal batch refits on the past, delays, partial feedback, files."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from click.testing import CliRunner

from spamkit.cli import cli
from spamkit.corpus import Corpus
from spamkit.common.errors import CorpusError
from spamkit.jobs.evaluation import online_evaluate
from spamkit.features.vectorizer import Vectorizer
from spamkit.parse.message import parse_message
from spamkit.models import BernoulliNB, MultinomialNB
from spamkit.common.names import DEFAULT_RATE
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
    from spamkit.decide.metrics import trec_measures
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
    from spamkit.decide.decision import DEFAULT_BAND
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
    assert (float(found["measures.stream_cut_decision.spam_caught"])
            == data["measures"]["stream_cut_decision"]["spam_caught"])
    assert data["settings"]["rate"] == DEFAULT_RATE == 0.1 and data["report"]["roc"]["fpr"][0] == 0.0


# --------------------------------------------------------------------------- any number of classes

def _three_class_stream(tmp_path):
    from test_compare import noisy_three_classes
    return noisy_three_classes(tmp_path)


@pytest.mark.parametrize("model", ["multinomial", "bernoulli", "complement"])
def test_k_class_online_against_scikit_learn_learning_one_message_at_a_time(tmp_path, model):
    import sklearn.naive_bayes as sk
    from sklearn.metrics import roc_auc_score

    from spamkit.jobs.online_classes import online_evaluate_classes
    path = _three_class_stream(tmp_path)
    with Corpus(path, classes=None) as corpus:
        msgs = list(corpus)
    analyzer = Analyzer()
    result = online_evaluate_classes(msgs, analyzer, model=model, alpha=1.0, hashing=2 ** 12,
                                     complement={"norm": False}, keep_proba=True)
    # the same stream through scikit-learn: classify with what was learned, then partial_fit
    vec = Vectorizer.hashed(2 ** 12, "binary" if model == "bernoulli" else "tf")
    classes = sorted({m.label for m in msgs})
    est = {"multinomial": sk.MultinomialNB, "bernoulli": sk.BernoulliNB, "complement": sk.ComplementNB}[model](alpha=1.0)
    proba, seen = [], set()
    for m in msgs:
        x = vec.transform([analyzer(parse_message(m.raw, m.kind))])
        if not seen:
            proba.append(np.full(3, 1 / 3))
        else:
            with np.errstate(divide="ignore"):
                jll = est._joint_log_likelihood(x)[0]
            jll = np.where([c in seen for c in classes], jll, -np.inf)
            proba.append(np.exp(jll - np.logaddexp.reduce(jll[np.isfinite(jll)])))
        est.partial_fit(x, [m.label], classes=classes)
        seen.add(m.label)
    proba = np.array(proba)
    truth = np.array([m.label for m in msgs])
    measures = result["measures"]
    assert result["classes"] == classes and result["n"] == 90
    # the same probabilities (not bit for bit: a three-way tie may then break either way)
    np.testing.assert_allclose(result["proba"], proba, rtol=0, atol=1e-9)
    pred = np.array(classes)[result["proba"].argmax(axis=1)]
    assert measures["accuracy"] == pytest.approx(np.mean(pred == truth), abs=1e-12)
    assert measures["one_vs_rest"]["macro"]["auc"] == pytest.approx(
        roc_auc_score(truth, proba, multi_class="ovr", labels=classes), abs=1e-9)


def test_k_class_online_learning_curve_and_first_message_by_hand(tmp_path):
    from spamkit.jobs.online_classes import online_evaluate_classes
    from spamkit.corpus import LabelledMessage
    # a stream of 4: before anything is learned every class gets 1/3 (the first, "a", wins the tie);
    # message 2 ("b") is scored by a model that knows only "a": called "a"; message 3 ("a"): right;
    # message 4 ("c", never seen): wrong
    words = {"a": "apple", "b": "engine", "c": "guitar"}
    msgs = [LabelledMessage(raw=words[c].encode(), label=c, source=f"m{i}", kind="text", id=str(i))
            for i, c in enumerate("abac")]
    out = online_evaluate_classes(msgs, Analyzer(), model="multinomial", alpha=1.0, hashing=64, points=2)
    assert out["measures"]["confusion"] == [[2, 0, 0], [1, 0, 0], [1, 0, 0]]
    assert out["learning_curve"] == [{"start": 0, "end": 2, "accuracy": 0.5}, {"start": 0, "end": 4, "accuracy": 0.5}]


def test_k_class_online_on_the_command_line(tmp_path):
    path = _three_class_stream(tmp_path)
    result = CliRunner().invoke(cli, ["online", str(path), "--classes", "any", "--json"])
    assert result.exit_code == 0, result.output
    import json
    data = json.loads(result.stdout)
    assert data["settings"]["model"] == "multinomial" and data["settings"]["alpha"] == 0.01   # its defaults
    assert set(data["measures"]["one_vs_rest"]) == {"per_class", "macro", "weighted", "micro"}
    text = CliRunner().invoke(cli, ["online", str(path), "--classes", "any", "--model", "complement"]).output
    assert "online, 3 classes" in text and "learning curve" in text
    bad = CliRunner().invoke(cli, ["online", str(path), "--classes", "any", "--delay", "5"])
    assert bad.exit_code == 2 and "--delay" in bad.output and "ham/spam streams" in bad.output
    bad = CliRunner().invoke(cli, ["online", str(path), "--classes", "any", "--model", "fisher"])
    assert bad.exit_code == 2 and "learns with multinomial, complement, bernoulli" in bad.output


def _cuts_by_the_rule_written_out(y, p, low, floor, c_fp, c_unsure, every, after):
    """stream_spam_cuts by brute force: at each re-choice, every candidate's cost on the earlier
    messages summed message by message."""
    cuts, current = [], floor
    for t in range(len(p)):
        if t >= after and (t - after) % every == 0:
            candidates = sorted({floor, *(q for q in p[:t] if q > floor)})
            costs = [sum(c_fp for q, s in zip(p[:t], y[:t]) if q > c and not s)
                     + sum(c_unsure for q in p[:t] if low < q <= c) for c in candidates]
            current = candidates[costs.index(min(costs))]
        cuts.append(current)
    return cuts


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.sampled_from([0.1, 0.5, 0.97, 0.981, 0.99, 0.995, 0.999, 0.9999])),
                min_size=1, max_size=60),
       st.integers(1, 7), st.integers(0, 20))
def test_the_stream_cut_is_the_rule_written_out(messages, every, after):
    from spamkit.decide.thresholds import stream_spam_cuts
    y = [s for s, _ in messages]
    p = [q for _, q in messages]
    got = stream_spam_cuts(y, p, 0.2, 0.98, 100.0, 2.0, every=every, after=after).tolist()
    assert got == _cuts_by_the_rule_written_out(y, p, 0.2, 0.98, 100.0, 2.0, every, after)
    assert min(got) >= 0.98                               # it never goes below the costs' own cut


def test_online_reports_the_decision_with_the_cut_chosen_on_the_stream(stream):
    from scipy.special import expit
    from spamkit.decide.decision import DEFAULT_BAND
    from spamkit.decide.thresholds import STREAM_CUT_AFTER, STREAM_CUT_EVERY
    result = online_evaluate(iter(stream), Analyzer(), model="multinomial", hashing=2 ** 12)
    c = result.measures["stream_cut_decision"]
    p = expit(np.asarray(result.scores))
    y = [g == "spam" for g in result.gold]
    cuts = np.array(_cuts_by_the_rule_written_out(y, p.tolist(), DEFAULT_BAND[0], DEFAULT_BAND[1], 100.0, 2.0,
                                                  STREAM_CUT_EVERY, STREAM_CUT_AFTER))
    ham = ~np.array(y)
    assert c["ham_misfiled"] == pytest.approx(100 * np.mean(p[ham] > cuts[ham]))
    assert c["spam_caught"] == pytest.approx(100 * np.mean(p[~ham] > cuts[~ham]))
    assert c["high"] == cuts[-1] and c["high_range"] == [cuts.min(), cuts.max()]
