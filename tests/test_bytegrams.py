"""The byte 4-gram online logistic regression (TREC 2007's best filter) as a model of its own and
as a side input of the stack: its features and gradient steps worked by hand, the published
method's scores reproduced by an independent implementation on real mail, the filter file, the
commands that train, score and learn with it, and its fusion with the default stack on a real
stream."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from spamkit.features.bytekeys import context_keys, gram_rows, gram_slots
from spamkit.cli import cli
from spamkit.common.compiled import gramloops, speedups
from spamkit.filterfile.config import build_filter
from spamkit.corpus import Corpus
from spamkit.common.errors import ConfigError, ModelFormatError
from spamkit.mail.lean import lean_filter
from spamkit.decide.curves import roc_auc
from spamkit.models import FisherNBStack
from spamkit.models.bytegrams import ByteGramLogistic
from spamkit.models.context import ByteContextModel
from spamkit.filterfile.spamfilter import SpamFilter

from conftest import (SAMPLE, assert_classify_and_pipe_score_as_the_filter, lean_route_of_a_context_model, learned_copy,
                      script_module, shared_corpus)


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def sample_messages():
    with Corpus(SAMPLE) as corpus:
        return list(corpus)


def hand_slot(gram: bytes, bits: int) -> int:
    """A 4-gram's slot by the definition, in Python integers: the top bits of its 32-bit number
    times 2654435761, modulo 2**32."""
    return ((int.from_bytes(gram, "big") * 2654435761) % 2 ** 32) >> (32 - bits)


def test_features_are_the_distinct_4_grams_of_the_first_bytes_hashed_by_the_definition():
    text = b"Subject: abcabcabc"
    grams = {text[i:i + 4] for i in range(len(text) - 3)}
    assert gram_slots(text, 3500, 20).tolist() == sorted({hand_slot(g, 20) for g in grams})
    # only the first n_bytes are read; fewer than 4 bytes have no 4-gram
    assert gram_slots(text, 6, 20).tolist() == sorted({hand_slot(text[i:i + 4], 20) for i in range(3)})
    assert gram_slots(b"abc", 3500, 20).size == 0
    # a str is its UTF-8 bytes
    assert gram_slots("Grüße", 3500, 16).tolist() == gram_slots("Grüße".encode(), 3500, 16).tolist()
    with pytest.raises(ConfigError, match="reads bytes or str"):
        gram_slots(42, 3500, 16)


def test_one_gradient_step_a_message_worked_by_hand():
    a, b = gram_slots(b"cheap pills", 3500, 16), gram_slots(b"cheap watch", 3500, 16)
    shared = np.intersect1d(a, b).size                        # "chea", "heap", "eap " : 3
    assert shared == 3
    m = ByteGramLogistic(bits=16, rate=0.1).partial_fit([a], ["spam"], classes=["ham", "spam"])
    # the first message: w = 0, log-odds 0, p = 1/2, each of its slots moves by 0.1 (1 - 1/2)
    assert np.allclose(m.weights_[a], 0.05) and np.count_nonzero(m.weights_) == a.size
    # the second is scored by the three 4-grams it shares with the first: 3 × 0.05
    assert m.decision_function([b])[0] == pytest.approx(0.15, abs=1e-6)
    m.partial_fit([b], ["ham"])
    p = 1 / (1 + np.exp(-0.15))
    assert m.weights_[np.setdiff1d(b, a)] == pytest.approx(0.1 * (0 - p), abs=1e-7)
    assert m.weights_[np.intersect1d(a, b)] == pytest.approx(0.05 + 0.1 * (0 - p), abs=1e-7)
    assert m.n_learned_ == 2
    # fit is that online pass from zero weights, and keeps the scores given before each step
    fitted = ByteGramLogistic(bits=16, rate=0.1).fit([a, b], ["spam", "ham"])
    assert np.array_equal(fitted.weights_, m.weights_)
    assert fitted.held_out_ == pytest.approx([0.0, 0.15], abs=1e-6)
    # unlearning is a step towards the other class
    before = m.decision_function([a])[0]
    m.unlearn([a], ["spam"])
    assert m.decision_function([a])[0] < before
    assert m.predict_proba([a]).sum(axis=1) == pytest.approx([1.0])


def test_bad_parameters_and_features_are_refused_by_name():
    with pytest.raises(ConfigError, match="at least 4 bytes"):
        ByteGramLogistic(n_bytes=3).check_params()
    with pytest.raises(ConfigError, match="bits from 8 to 30"):
        ByteGramLogistic(bits=40).check_params()
    with pytest.raises(ConfigError, match="learning rate"):
        ByteGramLogistic(rate=0).check_params()
    for folds in (1, 2.0, True):
        with pytest.raises(ConfigError, match="folds >= 2"):
            ByteGramLogistic(folds=folds).check_params()
    with pytest.raises(ConfigError, match="two classes of 2 messages or more"):
        ByteGramLogistic(bits=8).held_out_scores([np.array([1]), np.array([2]), np.array([3])], ["spam", "ham", "ham"])
    m = ByteGramLogistic(bits=8)
    with pytest.raises(ConfigError, match="slots from 0 to 2\\*\\*8 - 1"):
        m.fit([np.array([300]), np.array([1])], ["spam", "ham"])
    with pytest.raises(ConfigError, match="two classes"):
        m.fit([np.array([1]), np.array([2])], ["spam", "spam"])
    with pytest.raises(ConfigError, match="needs classes"):
        ByteGramLogistic(bits=8).partial_fit([np.array([1])], ["spam"])


def test_the_published_method_scores_as_an_independent_implementation_on_real_mail():
    # scripts/waterloo_logistic.py writes the method out in float64 NumPy, one message at a time
    run_stream = script_module("waterloo_logistic").run_stream
    with Corpus(shared_corpus("csdmc2010/csdmc2010.tar.gz")) as corpus:
        messages = list(corpus)
    reference, labels = run_stream(messages, 2500, 22, 0.002)
    m = ByteGramLogistic(n_bytes=2500, bits=22).fit(gram_rows([x.raw for x in messages], 2500, 22),
                                           [x.label for x in messages])
    # float32 weights against float64: the same scores to a few parts in a million
    assert np.allclose(m.held_out_, reference, rtol=1e-4, atol=1e-4)
    ours, theirs = 100 * (1 - roc_auc(labels, m.held_out_)), 100 * (1 - roc_auc(labels, reference))
    assert ours == pytest.approx(theirs, abs=2e-4)
    assert ours < 0.005                          # CSDMC2010 is nearly separable for this method


@pytest.mark.skipif(gramloops() is None, reason="spamkit.features.gramloops is not in use (not built, or SPAMKIT_PURE_PYTHON=1)")
def test_the_compiled_loops_give_the_numpy_definitions_results(monkeypatch):
    import spamkit.features.bytekeys as bytekeys_module
    import spamkit.models.bytegrams as bytegrams_module
    with Corpus(shared_corpus("csdmc2010/csdmc2010.tar.gz")) as corpus:
        messages = list(corpus)[:400]
    texts = [m.raw for m in messages] + [b"", b"abc", b"abcd", b"\xff" * 5000, "Grüße aus Köln".encode()]
    labels = [m.label for m in messages] + ["ham", "spam", "ham", "spam", "ham"]

    def everything():
        out = {}
        for n_bytes, bits in ((3500, 18), (3500, 22), (2500, 8), (100_000, 30), (7, 12)):
            out[n_bytes, bits] = gram_rows(texts, n_bytes, bits)
        rows = out[3500, 18]
        m = ByteGramLogistic(bits=18).fit(rows, labels)
        m.partial_fit(rows[:50], labels[:50]).unlearn(rows[:10], labels[:10])
        return out, m, m.decision_function(rows)

    compiled = everything()
    monkeypatch.setattr(bytekeys_module, "gramloops", lambda: None)
    monkeypatch.setattr(bytegrams_module, "gramloops", lambda: None)
    numpy_defined = everything()
    for key, rows in compiled[0].items():           # the same slots, exactly
        assert all(np.array_equal(a, b) and a.dtype == b.dtype for a, b in zip(rows, numpy_defined[0][key])), key
    # the same steps; a message's weights are added in another order (slot order, not pairwise)
    assert np.allclose(compiled[1].held_out_, numpy_defined[1].held_out_, rtol=1e-12, atol=1e-12)
    assert np.allclose(compiled[1].weights_, numpy_defined[1].weights_, rtol=1e-6, atol=1e-9)
    assert np.allclose(compiled[2], numpy_defined[2], rtol=1e-12, atol=1e-12)
    assert compiled[1].n_learned_ == numpy_defined[1].n_learned_ == len(texts) + 60
    # a slot outside the table is refused before any step, by the same words
    model = ByteGramLogistic(bits=8).fit([np.array([1, 2], dtype=np.uint32)] * 2, ["ham", "spam"])
    before = model.weights_.copy()
    monkeypatch.undo()
    with pytest.raises(ConfigError, match="slots from 0 to 2\\*\\*8 - 1"):
        model.partial_fit([np.array([3], dtype=np.uint32), np.array([256], dtype=np.uint32)], ["ham", "spam"])
    assert np.array_equal(model.weights_, before)
    with pytest.raises(ConfigError, match="slots from 0 to 2\\*\\*8 - 1"):
        model.decision_function([np.array([999], dtype=np.uint32)])


def test_packed_rows_are_the_slots_in_half_the_bytes_and_learn_the_same():
    # a training holds every message's slots until the combiner is fitted: packed (uint16 gaps,
    # spamkit.features.bytekeys.pack_slots) where the compiled loops are built
    from spamkit.features.bytekeys import pack_slots, packed_gram_rows, unpack_slots
    loops = gramloops()
    if loops is None:
        pytest.skip("the compiled loops are not built (SPAMKIT_PURE_PYTHON or no compiler)")
    with Corpus(shared_corpus("trec07p-dev/trec07p-dev.tar.gz")) as corpus:
        messages = [m for _, m in zip(range(300), corpus)]
    texts = [m.raw for m in messages] + [b"", b"abc", b"abcd", b"\xff" * 5000]
    labels = [m.label for m in messages] + ["ham", "spam", "ham", "spam"]
    for n_bytes, bits in ((3500, 18), (100_000, 30), (50, 32), (7, 8)):
        plain, packed = gram_rows(texts, n_bytes, bits), packed_gram_rows(texts, n_bytes, bits)
        assert all(type(p) is bytes and p == pack_slots(a) and np.array_equal(unpack_slots(p), a)
                   for a, p in zip(plain, packed)), (n_bytes, bits)
    plain, packed = gram_rows(texts), packed_gram_rows(texts)
    assert sum(map(len, packed)) < 0.51 * sum(a.nbytes for a in plain)         # 2 bytes a slot, few escapes
    a, b = ByteGramLogistic().fit(plain, labels), ByteGramLogistic().fit(packed, labels)
    assert np.array_equal(a.held_out_, b.held_out_) and np.array_equal(a.weights_, b.weights_)
    assert np.array_equal(a.decision_function(plain), b.decision_function(packed))
    assert np.array_equal(a.held_out_scores(plain, labels, np.arange(len(labels)) % 3),
                          b.held_out_scores(packed, labels, np.arange(len(labels)) % 3))
    # a malformed packed row, or one with a slot outside the table, is refused before any step
    before = b.weights_.copy()
    escape = b"\xff\xff"
    for bad in (b"\x05", escape + b"\x01\x00", (escape + b"\xff\xff\xff\xff") * 2, pack_slots([5, 1 << 18])):
        with pytest.raises(ConfigError):                # half a word, an escape cut short, past 2**32, outside
            b.partial_fit([packed[0], bad], ["ham", "spam"])
        with pytest.raises(ConfigError):                # scoring checks them as learning does
            b.decision_function([packed[1], bad])
        with pytest.raises(ConfigError):
            b.slots(bad)
    assert np.array_equal(b.weights_, before)
    with pytest.raises(ConfigError, match="distinct ascending"):
        pack_slots([3, 3])


def test_the_compiled_hash_is_the_documented_one():
    import spamkit.features.bytekeys as bytekeys_module
    loops = gramloops()
    if loops is None:
        pytest.skip("spamkit.features.gramloops is not in use (not built, or SPAMKIT_PURE_PYTHON=1)")
    assert loops.GRAM_MULTIPLIER == int(bytekeys_module._GRAM_MULTIPLIER) == 2654435761


def test_the_features_defaults_are_the_models():
    import inspect
    from spamkit.models.bytegrams import GRAM_BITS, GRAM_BYTES
    for function in (gram_slots, gram_rows):
        params = inspect.signature(function).parameters
        assert (params["n_bytes"].default, params["bits"].default) == (GRAM_BYTES, GRAM_BITS)


def test_fit_is_the_protocol_written_out():
    # the combiner is fitted on the side models' scores held out by the stack's own folds
    msgs = sample_messages()
    f = build_filter(model="fisher-nb", tokens="mail", context={"bits": 18}, grams={"bits": 16}).fit(msgs)
    assert f.model.side_inputs == 2 and f.grams is not None
    y = np.array([m.label for m in msgs])
    texts = [m.raw[:3500] for m in msgs]
    keys = context_keys(texts, 6, 18, 3000)
    k, folds = f.model.fold_assignment(y)
    context_side = ByteContextModel(bits=18).fit(keys, y).held_out_mean_log_ratio(keys, y, folds)
    rows = gram_rows(texts, 3500, 16)
    grams = ByteGramLogistic(bits=16).fit(rows, y)
    assert np.array_equal(f.grams.weights_, grams.weights_)
    grams_side = np.empty(len(msgs))
    # the 4-gram model's own two folds, stratified: the i-th message of each class in fold i mod 2
    assert f.grams.folds == 2
    codes = (y == "spam").astype(int)
    gram_folds = np.empty(len(y), dtype=int)
    for c in (0, 1):
        gram_folds[codes == c] = np.arange((codes == c).sum()) % 2
    for fold in range(2):                   # a model of the other fold, learned in corpus order
        rest, members = np.flatnonzero(gram_folds != fold), np.flatnonzero(gram_folds == fold)
        other = ByteGramLogistic(bits=16).fit([rows[i] for i in rest], y[rest])
        grams_side[members] = other.decision_function([rows[i] for i in members])
    X = f.vectorizer.transform([f.tokens(m) for m in msgs])
    stack = FisherNBStack(**f.model.get_params()).fit(X, y, side=np.column_stack([context_side, grams_side]))
    assert np.allclose(stack.coef_, f.model.coef_, rtol=0, atol=1e-9)
    side = np.column_stack([ByteContextModel(bits=18).fit(keys, y).mean_log_ratio(keys), grams.decision_function(rows)])
    expected = np.exp(stack.predict_log_proba(X, side=side))
    assert np.allclose(f.predict_proba(msgs), expected, rtol=0, atol=1e-12)
    # explain names both side inputs, each with its share of the combiner's log-odds
    why = f.explain(msgs[0].raw)
    assert why["grams"]["share"] == pytest.approx(why["grams"]["log_odds"] * f.model.coef_[-1])
    assert set(why) >= {"context", "grams"}


def test_the_filter_file_keeps_the_4_gram_model_and_refuses_a_damaged_one(tmp_path):
    msgs = sample_messages()
    f = build_filter(model="fisher-nb", tokens="mail", grams={"bits": 16}).fit(msgs)
    path = tmp_path / "g.spamkit"
    f.save(path)
    g = SpamFilter.load(path)
    assert g.context is None and g.grams.get_params() == f.grams.get_params()
    assert np.array_equal(g.grams.weights_, f.grams.weights_) and g.grams.n_learned_ == len(msgs)
    assert np.array_equal(g.p_spam(msgs), f.p_spam(msgs))
    # pipe mode's lean route reads them too (tests/test_lean.py compares the two routes)
    lean = lean_filter(path)
    assert lean is not None and lean.grams is not None and lean.context is None
    raw = msgs[0].raw
    assert lean.grams.score(raw) == pytest.approx(f.side_scores([raw[:3500]])[0, 0], abs=1e-9)
    with zipfile.ZipFile(path) as z:
        members = {n: z.read(n) for n in z.namelist()}
    manifest = json.loads(members["manifest.json"])

    def damaged(change) -> Path:
        m = json.loads(members["manifest.json"])
        change(m)
        out = tmp_path / "bad.spamkit"
        with zipfile.ZipFile(out, "w") as z:
            for name, data in members.items():
                z.writestr(name, json.dumps(m) if name == "manifest.json" else data)
        return out

    assert "grams" in manifest["extra"]
    with pytest.raises(ModelFormatError, match="4-gram model is described"):
        SpamFilter.load(damaged(lambda m: m["extra"]["grams"].update(bits=99)))
    with pytest.raises(ModelFormatError, match="weighs 1 side input.* but the file has 0 side model.*4-gram model: no"):
        SpamFilter.load(damaged(lambda m: m["extra"].pop("grams")))
    with pytest.raises(ModelFormatError, match="damaged 4-gram model"):
        SpamFilter.load(damaged(lambda m: m["extra"]["grams"].update(bits=20)))
    # the held-out folds are a fitting setting: recorded; a file from before it loads with the
    # default; a wrong one is refused by both routes
    assert manifest["extra"]["grams"]["folds"] == 2
    old = SpamFilter.load(damaged(lambda m: m["extra"]["grams"].pop("folds")))
    assert old.grams.folds == 2 and np.array_equal(old.p_spam(msgs), f.p_spam(msgs))
    for folds in (1, "2", None):
        bad = damaged(lambda m, folds=folds: m["extra"]["grams"].update(folds=folds))
        with pytest.raises(ModelFormatError, match="4-gram model is described"):
            SpamFilter.load(bad)
        with pytest.raises(ModelFormatError, match="4-gram model is described"):
            lean_filter(bad)


def test_the_commands_train_score_and_learn_with_it(tmp_path):
    model = tmp_path / "g.spamkit"
    result = run("train", SAMPLE, "--byte-grams", "--context-model", "--context-bits", "18", "-o", model)
    assert result.exit_code == 0, result.output
    assert "byte grams  online logistic regression on the byte 4-grams of the first 3500 bytes" in run(
        "info", model).output
    f = SpamFilter.load(model)
    # classify and pipe mode (the lean route) agree with it
    first = SAMPLE / "spam" / sorted(p.name for p in (SAMPLE / "spam").iterdir())[0]
    assert_classify_and_pipe_score_as_the_filter(model, first)
    # learning a message takes one step of the 4-gram model; forgetting it one step back
    learned, ham = learned_copy(model, tmp_path)
    after = SpamFilter.load(learned)
    assert after.grams.n_learned_ == f.grams.n_learned_ + 1
    assert after.side_scores([ham.read_bytes()[:3500]])[0, 1] > f.side_scores([ham.read_bytes()[:3500]])[0, 1]
    # cross-validation trains a 4-gram model per fold
    result = run("cv", SAMPLE, "--config", "grams=true", "--folds", "3", "--json")
    assert result.exit_code == 0, result.output
    # its settings from a --config: the bytes read and the held-out folds
    from spamkit.filterfile.config import FilterSettings, parse_config
    settings = FilterSettings.from_config(parse_config("grams=true,grams_bytes=2500,grams_folds=5")).resolved()
    assert dict(settings.grams) == {"n_bytes": 2500, "bits": 18, "rate": 0.002, "folds": 5}
    with pytest.raises(ConfigError, match="grams_bytes and grams_folds set the byte 4-gram model: add grams=true"):
        FilterSettings.from_config(parse_config("grams=false,grams_bytes=2500,grams_folds=5"))
    # options that do not go together say so
    result = CliRunner().invoke(cli, ["train", str(SAMPLE), "--model", "fisher", "--byte-grams", "-o",
                                      str(tmp_path / "x.spamkit")])
    assert result.exit_code == 2 and "side input of the fisher-nb stack" in result.output
    result = CliRunner().invoke(cli, ["online", str(SAMPLE), "--model", "fisher", "--byte-grams"])
    assert result.exit_code == 2 and "--model grams is the 4-gram model alone" in result.output


def test_online_alone_and_fused_on_a_real_stream():
    # the method alone through the command line scores as the model fed by hand; fused with the
    # default stack and the context model it ranks better than the default stack
    path = shared_corpus("csdmc2010/csdmc2010.tar.gz")
    result = run("online", path, "--model", "grams", "--json", "-q")
    assert result.exit_code == 0, result.output
    alone = json.loads(result.stdout)
    with Corpus(path) as corpus:
        messages = list(corpus)
    m = ByteGramLogistic().fit(gram_rows([x.raw for x in messages]), [x.label for x in messages])
    labels = np.array([x.label == "spam" for x in messages])
    assert alone["measures"]["roca_pct"] == pytest.approx(100 * (1 - roc_auc(labels, m.held_out_)), abs=1e-9)
    default = json.loads(run("online", path, "--json", "-q").stdout)
    fused = json.loads(run("online", path, "--byte-grams", "--json", "-q").stdout)
    assert fused["settings"]["grams"] == {"n_bytes": 3500, "bits": 18, "rate": 0.002, "folds": 2}
    assert fused["measures"]["roca_pct"] <= default["measures"]["roca_pct"]


def test_a_young_stack_with_a_prior_is_scored_alike_by_both_routes(tmp_path):
    # fewer training messages than the prior's warm-up: both routes scale the log-odds alike
    from spamkit.mail.lean import PRIOR_WARMUP as LEAN_WARMUP
    from spamkit.scoring import PRIOR_WARMUP
    assert LEAN_WARMUP == PRIOR_WARMUP
    msgs = sample_messages()[::6]                             # 40 messages of both classes
    f = build_filter(model="fisher-nb", tokens="mail", context={"bits": 18}, grams={"bits": 16}).fit(msgs)
    path = tmp_path / "young.spamkit"
    f.save(path)
    lean = lean_route_of_a_context_model(lean_filter(path))
    assert lean.warmup == pytest.approx(len(msgs) / PRIOR_WARMUP)
    for m in sample_messages():
        assert lean.verdict(m.raw)[1] == pytest.approx(f.verdict(m.raw)[1], abs=1e-9)


def _zip_members(path) -> dict:
    with zipfile.ZipFile(path) as z:
        return {name: z.read(name) for name in z.namelist() if name != "manifest.json"}


def test_the_side_models_read_a_message_without_spamkits_own_tags(tmp_path):
    # the byte models read raw bytes: a tag of an earlier run (pipe mode re-tagging, a folder of
    # mail spamkit filtered) must not change a message's score, nor a verdict written into a
    # training folder be learned -- on every route: in-process, the lean pipe route, the workers
    from spamkit.mail.tags import tag
    from spamkit.parse.message import parsed_bytes
    plain = tmp_path / "plain"
    tagged = tmp_path / "tagged"
    for label in ("ham", "spam"):
        (plain / label).mkdir(parents=True)
        (tagged / label).mkdir(parents=True)
        for p in sorted((SAMPLE / label).iterdir()):
            raw = p.read_bytes()
            (plain / label / p.name).write_bytes(raw)
            (tagged / label / p.name).write_bytes(tag(raw, label, 0.999 if label == "spam" else 0.001, "m@1", 0.98))
    raw = sorted((plain / "spam").iterdir())[0].read_bytes()
    marked = sorted((tagged / "spam").iterdir())[0].read_bytes()
    assert marked != raw and parsed_bytes(marked) == raw
    f = build_filter(model="fisher-nb", tokens="mail", grams={}, context={"bits": 16})
    f.fit(Corpus(plain))
    assert np.array_equal(f.side_scores([f.side_text(marked)]), f.side_scores([f.side_text(raw)]))
    assert f.verdict(marked) == f.verdict(raw)
    f.save(tmp_path / "f.spamkit")
    lean = lean_filter(tmp_path / "f.spamkit")
    if speedups() is not None:                 # (without the compiled loops a context model takes the full route)
        assert lean is not None and lean.verdict(marked) == lean.verdict(raw)
    for jobs in ("1", "2"):                    # in this process, and in worker processes
        outputs = []
        for corpus in (plain, tagged):
            out = tmp_path / f"{corpus.name}-{jobs}.spamkit"
            result = run("train", corpus, "-o", out, "--jobs", jobs)
            assert result.exit_code == 0, result.output
            outputs.append(_zip_members(out))
        assert outputs[0] == outputs[1]


def test_a_learning_copy_learns_without_changing_the_filter_it_was_copied_from():
    # a server learns a user's messages over the site filter on such a copy: nothing the copy
    # learns may reach the site filter (the 4-gram weights are changed in place by a step)
    import copy
    from spamkit.corpus.base import LabelledMessage
    from spamkit.jobs.learn import learn_messages
    msgs = sample_messages()
    site = build_filter(model="fisher-nb", tokens="mail", grams={}, context={"bits": 16}).fit(msgs)
    before = {name: copy.deepcopy(getattr(site, name)) for name in SpamFilter.LEARNING_STATE}
    weights = site.grams.weights_.copy()
    p = site.p_spam([msgs[0].raw])
    twin = site.learning_copy()
    learn_messages(twin, [LabelledMessage(f"t{i}", "spam", m.raw, "taught") for i, m in enumerate(msgs[:20])
                          if m.label == "ham"])
    assert not np.array_equal(twin.grams.weights_, weights)        # the copy learned
    assert np.array_equal(site.grams.weights_, weights) and site.learned == {}
    assert site.p_spam([msgs[0].raw]) == p and twin.p_spam([msgs[0].raw]) != p
    assert np.array_equal(site.model.feature_count_, before["model"].feature_count_)
    assert np.array_equal(site.model.class_count_, before["model"].class_count_)


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_class_of_one_message_trains_without_held_out_scores(tmp_path, jobs):
    """One spam: the stack has no folds to hold scores out by (k < 2), so the 4-gram input's
    held-out column is zeros, whether the 4-grams were made here (--jobs 1) or by the workers
    (--jobs 2: no message's bytes in this process; that route raised a TypeError)."""
    for i in range(12):
        (tmp_path / "ham").mkdir(exist_ok=True)
        (tmp_path / "ham" / f"{i}.eml").write_bytes(
            f"From: a{i}@example.org\nSubject: budget {i}\n\nthe budget meeting is at noon, item {i}\n".encode())
    (tmp_path / "spam").mkdir()
    (tmp_path / "spam" / "1.eml").write_bytes(b"From: s@spam.example\nSubject: cheap pills\n\nbuy cheap pills now\n")
    model = tmp_path / "one.spamkit"
    result = run("train", "--ham", tmp_path / "ham", "--spam", tmp_path / "spam", "--jobs", jobs, "-o", model)
    assert result.exit_code == 0, result.output
    f = SpamFilter.load(model)
    assert f.grams is not None and f.grams.n_learned_ == 13
