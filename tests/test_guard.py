"""Decisions that protect ham: the default three-way costs and the familiarity guard, by hand and on real corpora."""

from __future__ import annotations

import math

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from spamkit.cli import cli
from spamkit.corpus import Corpus
from spamkit.decide.decision import DEFAULT_BAND, CostMatrix, unsure_band
from spamkit.decide.guard import FamiliarityGuard
from spamkit import BEST, SpamFilter, build_filter

from conftest import SAMPLE, shared_corpus

HAM = [b"Subject: lunch\n\nlunch at noon with the team", b"Subject: notes\n\nthe meeting notes for the team",
       b"Subject: lunch\n\nnotes from lunch", b"Subject: team\n\nthe team meeting at noon"] * 6
SPAM = [b"Subject: cheap\n\ncheap pills now", b"Subject: pills\n\nbuy cheap pills",
        b"Subject: win\n\nwin cheap prizes now", b"Subject: prizes\n\nbuy prizes now"] * 6


def test_the_default_costs_are_the_lecture_example_with_an_unsure_cost():
    # c_FP = 100, c_FN = 10 (the notes' decision-theory example) and abstaining costs 2:
    # ham below u / c_FN = 2 / 10, spam above 1 - u / c_FP = 1 - 2 / 100
    assert DEFAULT_BAND == pytest.approx((0.2, 0.98))
    assert unsure_band(100, 10, 2) == DEFAULT_BAND
    d = CostMatrix.default().decide([[0.81, 0.19], [0.79, 0.21], [0.021, 0.979], [0.019, 0.981]])
    assert d.tolist() == ["ham", "unsure", "unsure", "spam"]


def test_leave_one_out_familiarity_by_hand():
    """Four training messages; a token is known without message i if another message has it."""
    f = build_filter(model="multinomial", tokens="words")
    docs = [b"Subject: a\n\nred blue", b"Subject: a\n\nred green", b"Subject: a\n\nblue gold",
            b"Subject: a\n\nred blue green"]
    f.fit(docs * 5 + [b"Subject: b\n\npurple"], ["ham", "spam", "ham", "spam"] * 5 + ["spam"])
    # (the word analyzer keeps words of two letters or more: the subjects "a" and "b" give no token)
    # Every message's tokens occur in its five copies: all known (familiarity 1), except the last,
    # whose only token "purple" is in no other message: familiarity 0.
    # 21 messages: the 1st percentile interpolates between 0 and 1 at 0.2, the 5th at 1.
    assert f.guard.floor == pytest.approx(0.2)
    assert f.guard.typical == pytest.approx(1.0)
    X = f.transform([b"Subject: a\n\nred unseen words here"])
    tokens = [f.tokens(b"Subject: a\n\nred unseen words here")]
    # distinct tokens: red, unseen, words, here -> 1 known of 4
    assert f.familiarity(tokens, X).tolist() == [pytest.approx(1 / 4)]


def test_the_guard_turns_spam_into_unsure_never_ham():
    g = FamiliarityGuard(floor=0.5, typical=0.7, window=10, min_window=5)
    d = g.apply(np.array(["spam", "ham", "spam", "unsure"], dtype=object), [0.4, 0.1, 0.9, 0.2])
    assert d.tolist() == ["unsure", "ham", "spam", "unsure"]      # the ham at 0.1 stays ham
    assert g.counts == {"messages": 4, "unfamiliar": 3, "drift": 0, "spam_to_unsure": 1,
                        "spam_to_unsure_unfamiliar": 1, "spam_to_unsure_drift": 0}
    # a drifted stream: the median of the window 0.25 spreads (0.7 - 0.5) under 0.7, below 0.65,
    # though each message passes the floor
    g = FamiliarityGuard(floor=0.5, typical=0.7, window=4, min_window=3)
    assert g.drift_level == pytest.approx(0.65)
    d = g.apply(np.array(["spam"] * 5, dtype=object), [0.6, 0.6, 0.62, 0.9, 0.95])
    assert d.tolist() == ["spam", "spam", "unsure", "unsure", "spam"]   # medians 0.6, 0.61, 0.775
    with pytest.raises(Exception, match="floors"):
        FamiliarityGuard(1.5, 0.5)
    assert FamiliarityGuard.from_training([0.9] * 19) is None             # too few to know what is usual


def test_the_margin_by_hand():
    """Between the floor (1st percentile) and the typical familiarity (5th), a spam decision must
    clear the costs' cut (P(spam) 0.98, log-odds ln 49 = 3.892) by a margin falling linearly from
    2 at the floor to 0 at the typical familiarity (a margin of 2; the default is GUARD_MARGIN)."""
    g = FamiliarityGuard(floor=0.6, typical=0.8, margin=2.0)
    assert g.discount(0.9) == 0.0 and g.discount(0.8) == 0.0
    assert g.discount(0.7) == pytest.approx(1.0) and g.discount(0.6) == pytest.approx(2.0)
    assert g.discount(0.59) is None
    costs = CostMatrix.default()

    def redecide(i, extra, p=(0.985, 0.999, 0.9999, 0.995)):
        from spamkit.decide.familiar import discounted_p_spam
        q = discounted_p_spam(p[i], extra)
        return costs.decide_row([1 - q, q])

    # at familiarity 0.7 the margin is 1: P(spam) must exceed expit(ln 49 + 1) = 49e / (49e + 1) = 0.992548;
    # at 0.65 it is 1.5: 49e^1.5 / (49e^1.5 + 1) = 0.995467
    assert 1 / (1 + math.exp(-(math.log(49) + 1))) == pytest.approx(0.992548, abs=1e-6)
    d = g.apply(np.array(["spam"] * 4, dtype=object), [0.7, 0.7, 0.65, 0.65], redecide=redecide)
    assert d.tolist() == ["unsure", "spam", "spam", "unsure"]      # 0.985 < 0.992548 < 0.999; 0.995 < 0.995467 < 0.9999
    assert g.counts["spam_to_unsure_unfamiliar"] == 2 and g.counts["unfamiliar"] == 4
    assert g.why().startswith("unfamiliar: 65% of its tokens") and "1.50 more log-odds" in g.why()
    # without a way to decide again, only the floor and the drift apply (the rule before the margin)
    assert FamiliarityGuard(0.6, 0.8).apply(np.array(["spam"], dtype=object), [0.7]).tolist() == ["spam"]


def test_files_of_before_the_margin_keep_their_guard():
    """A guard saved before the margin (``window_floor`` for the typical familiarity, a window of
    50) is read with the default margin and drift, both routes alike."""
    from spamkit.decide.familiar import GUARD_DRIFT, GUARD_MARGIN, guard_settings
    old = {"floor": 0.6, "window_floor": 0.8, "window": 50, "min_window": 20}
    g = FamiliarityGuard.from_dict(old)
    assert (g.floor, g.typical, g.margin, g.drift, g.window) == (0.6, 0.8, GUARD_MARGIN, GUARD_DRIFT, 50)
    assert guard_settings(old)["typical"] == 0.8
    assert FamiliarityGuard.from_dict(g.as_dict()).as_dict() == g.as_dict()
    for bad in ({"floor": 0.6}, {"floor": 2, "typical": 0.8}, {"floor": 0.6, "typical": 0.8, "margin": -1},
                {"floor": 0.6, "typical": 0.8, "window": 10, "min_window": 11}, []):
        with pytest.raises((KeyError, ValueError)):
            guard_settings(bad)


def test_a_filter_saves_its_guard_and_the_pipe_uses_the_floor(tmp_path):
    f = build_filter(**BEST).fit(HAM + SPAM, ["ham"] * len(HAM) + ["spam"] * len(SPAM))
    f.set_costs(CostMatrix.default())
    f.save(tmp_path / "f.spamkit")
    back = SpamFilter.load(tmp_path / "f.spamkit")
    assert back.guard.as_dict() == f.guard.as_dict()
    assert back.verdict(SPAM[0])[0] == "spam"
    # the same spam words drowned in tokens the filter never saw: unsure, not spam
    strange = b"Subject: cheap\n\ncheap pills now " + b" ".join(b"zq%dxy" % i for i in range(40))
    verdict, p = back.verdict(strange)
    assert p > DEFAULT_BAND[1] and verdict == "unsure"
    assert back.guard.counts["spam_to_unsure"] == 1


def test_train_saves_the_default_decision_and_cost_none_opts_out(tmp_path):
    runner = CliRunner()
    r = runner.invoke(cli, ["train", str(SAMPLE), "-o", str(tmp_path / "d.spamkit")])
    assert r.exit_code == 0, r.output
    f = SpamFilter.load(tmp_path / "d.spamkit")
    assert f.costs is not None and f.costs.decisions == ["ham", "spam", "unsure"]
    info = runner.invoke(cli, ["info", str(tmp_path / "d.spamkit")]).output
    assert "ham below P(spam) 0.2, spam above 0.98, unsure between (costs fp=100, fn=10, unsure=2)" in info
    assert "guard       spam becomes unsure" in info
    r = runner.invoke(cli, ["train", str(SAMPLE), "-o", str(tmp_path / "n.spamkit"), "--cost", "none"])
    assert r.exit_code == 0, r.output
    assert SpamFilter.load(tmp_path / "n.spamkit").costs is None
    # classify with --cost none: the most probable class, no unsure
    out = runner.invoke(cli, ["classify", str(tmp_path / "d.spamkit"), "--cost", "none",
                              str(SAMPLE / "spam" / "0004.eml")]).output
    assert "\tspam\t" in out


@pytest.mark.slow
@pytest.mark.parametrize("train, test", [("csdmc2010/csdmc2010.tar.gz", "trec07p-dev/trec07p-dev.tar.gz"),
                                         ("trec07p-dev/trec07p-dev.tar.gz", "csdmc2010/csdmc2010.tar.gz")])
def test_a_filter_moved_to_another_corpus_does_not_call_its_ham_spam(train, test):
    """Trained on one raw-mail corpus, judging another: without the guard the filter trained on
    CSDMC2010 called 27% of trec07p-dev's ham spam; with it, at most 0.5% (the issue's goal)."""
    with Corpus(shared_corpus(train)) as c:
        f = build_filter(**BEST).fit(c)
    f.set_costs(CostMatrix.default())
    with Corpus(shared_corpus(test)) as c:
        msgs = list(c)
    proba, familiarity = f.score(msgs)
    is_ham = np.array([m.label == "ham" for m in msgs])
    unguarded = f.costs.decide(proba)
    guarded = f.decide(proba, familiarity)
    misfiled = 100 * np.mean(guarded[is_ham] == "spam")
    print(f"\n{train} -> {test}: ham misfiled {misfiled:.2f}% (without the guard "
          f"{100 * np.mean(unguarded[is_ham] == 'spam'):.2f}%), guard {f.guard.counts}")
    assert misfiled <= 0.5
    assert set(guarded[unguarded != guarded]) <= {"unsure"}           # it only ever abstains
    # and on held-out mail of the training corpus itself the guard rarely speaks
    with Corpus(shared_corpus(train)) as c:
        own = list(c)
    cut = len(own) * 4 // 5
    g = build_filter(**BEST).fit(own[:cut])
    g.set_costs(CostMatrix.default())
    proba, familiarity = g.score(own[cut:])
    before = g.costs.decide(proba)
    after = g.decide(proba, familiarity)
    changed = np.mean(before != after)
    print(f"held-out {train}: {100 * changed:.2f}% of decisions changed by the guard")
    assert changed < 0.03


@pytest.mark.slow
def test_a_message_scores_the_same_alone_and_in_a_batch():
    """``spamkit filter --jobs`` scores chunks of messages in worker processes and decides each
    message alone; both must give the probabilities one process gives, to the last bit."""
    with Corpus(shared_corpus("csdmc2010/csdmc2010.tar.gz")) as c:
        f = build_filter(**BEST).fit(c)
    with Corpus(shared_corpus("trec07p-dev/trec07p-dev.tar.gz")) as c:
        raws = [m.raw for _, m in zip(range(300), c)]
    proba, familiarity = f.score(raws)
    for i, raw in enumerate(raws):
        alone, known = f.score([raw])
        assert np.array_equal(alone[0], proba[i]) and known[0] == familiarity[i], i


def _csdmc_filter_and_trec_mail(tmp_path, maildir):
    """A filter trained on CSDMC2010 (its path) and a Maildir of 600 trec07p-dev messages at
    ``maildir``: mail from another server, where the familiarity guard speaks."""
    import mailbox
    model = tmp_path / "csdmc.spamkit"
    assert CliRunner().invoke(cli, ["train", str(shared_corpus("csdmc2010/csdmc2010.tar.gz")),
                                    "-o", str(model)]).exit_code == 0
    box = mailbox.Maildir(maildir, create=True)
    with Corpus(shared_corpus("trec07p-dev/trec07p-dev.tar.gz")) as c:
        for _, m in zip(range(600), c):
            box.add(m.raw)
    return model


@pytest.mark.slow
def test_the_guard_sees_a_filter_run_alike_on_one_and_on_two_processes(tmp_path):
    """Trained on CSDMC2010, filtering trec07p-dev mail (where the guard speaks): the listing
    and the guard's counts are the same with --jobs 1 and --jobs 2 (workers score, the run
    decides in mailbox order)."""
    import json
    from click.testing import CliRunner
    from spamkit.cli import cli
    model = _csdmc_filter_and_trec_mail(tmp_path, tmp_path / "inbox")
    runs = {}
    for jobs in ("1", "2"):
        listing = CliRunner().invoke(cli, ["filter", str(model), str(tmp_path / "inbox"), "--dry-run", "--jobs", jobs])
        summary = CliRunner().invoke(cli, ["filter", str(model), str(tmp_path / "inbox"), "--dry-run", "--json",
                                           "--jobs", jobs])
        assert listing.exit_code == 0 and summary.exit_code == 0, listing.output + summary.output
        result = json.loads(summary.output)
        lines = sorted(line for line in listing.output.splitlines() if "\t" in line)   # one per message
        assert len(lines) == 600
        runs[jobs] = (lines, result["verdicts"], result["guarded"])
    assert runs["1"] == runs["2"]
    assert sum(runs["1"][2].values()) > 0                 # the guard did speak on this stream


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0, 1) | st.sampled_from([0.5, 0.7, 0.5000000000000001]), min_size=1, max_size=120),
       st.integers(1, 12), st.integers(1, 12))
def test_the_guard_one_message_at_a_time_is_the_guard_on_arrays(values, window, min_window):
    """A filter run asks the guard message by message (:meth:`FamiliarityGuard.observe_one`, a
    sorted window); against the definition with np.median over the last ``window`` values at or
    above the floor (a value below it is judged by the floor and kept out of the window)."""
    window, min_window = max(window, min_window), min(window, min_window)
    g = FamiliarityGuard(floor=0.3, typical=0.7, drift=0.5, window=window, min_window=min_window)
    assert g.drift_level == pytest.approx(0.5)
    for i, value in enumerate(values):
        kept = [v for v in values[:i + 1] if v >= 0.3]
        recent = kept[max(0, len(kept) - window):]
        expected = value < 0.3 or (len(recent) >= min_window and float(np.median(recent)) < g.drift_level)
        assert g.observe_one(value) == expected, (i, recent)
    assert g.counts["messages"] == len(values)
    g.reset()
    assert g.observe([0.9] * min_window).tolist() == [False] * min_window


def test_a_filter_decides_one_row_as_it_decides_arrays():
    """``SpamFilter.verdict_from`` (plain Python, per message) against ``SpamFilter.decide`` (NumPy):
    the same verdicts and guard counts over a stream with a threshold, with costs and a guard,
    and with neither."""
    f = build_filter(**BEST).fit(HAM + SPAM, ["ham"] * len(HAM) + ["spam"] * len(SPAM))
    rng = np.random.default_rng(3)
    p = np.concatenate([rng.random(300), 1 - 0.05 * rng.random(200), [0.0, 1.0, 0.2, 0.98, 0.5]])
    fam = rng.random(len(p))
    proba = np.column_stack([1 - p, p]) if f.spam_column == 1 else np.column_stack([p, 1 - p])
    f.guard = FamiliarityGuard(0.2, 0.45, window=10, min_window=4)
    seen = []
    for costs, threshold in ((CostMatrix.default(), None), (None, None), (CostMatrix.default(), 0.7)):
        f.costs, f.threshold = (costs.align(f.classes_) if costs is not None else None), threshold
        f.guard.reset()
        by_array = [str(d) for d in f.decide(proba, fam)]
        counts = dict(f.guard.counts)
        f.guard.reset()
        by_row = [f.verdict_from(proba[k], fam[k]) for k in range(len(p))]
        assert [v for v, _ in by_row] == by_array and f.guard.counts == counts
        assert [q for _, q in by_row] == p.tolist()
        seen.append((counts["spam_to_unsure"], sorted(set(by_array))))
        if costs is not None and threshold is None:        # every rule spoke: the floor, the margin, the drift
            assert counts["spam_to_unsure_drift"] > 0 and counts["spam_to_unsure_unfamiliar"] > 0
            assert any(d == "unsure" and f.guard.floor <= fam[k] < f.guard.typical and p[k] > 0.98
                       for k, d in enumerate(by_array))
    assert seen[0][0] > 0 and seen[0][1] == ["ham", "spam", "unsure"]        # the guard and the band both spoke
    assert seen[1] == (0, ["ham", "spam"]) and seen[2] == (0, ["ham", "spam"])


@pytest.mark.slow
def test_tagging_on_two_processes_leaves_the_mailboxes_one_process_leaves_where_the_guard_speaks(tmp_path):
    """Trained on CSDMC2010, tagging and moving trec07p-dev mail, where the familiarity guard
    turns spam into unsure: the workers write tagged copies for the verdicts they expect and the
    run keeps only those it agrees with, so the inbox, the junk and the unsure folders hold the
    same bytes with --jobs 1 and --jobs 2, and nothing is left in tmp/."""
    import json
    import os
    import shutil
    model = _csdmc_filter_and_trec_mail(tmp_path, tmp_path / "pristine")
    runs = {}
    for jobs in ("1", "2"):
        # copies of one mailbox: the same file names, so the same order, so the guard sees the same stream
        inbox, junk, review = (tmp_path / jobs / name for name in ("inbox", "junk", "review"))
        shutil.copytree(tmp_path / "pristine", inbox)
        out = CliRunner().invoke(cli, ["filter", str(model), str(inbox), "--tag", "--move-spam-to", str(junk),
                                       "--move-unsure-to", str(review), "--json", "--jobs", jobs])
        assert out.exit_code == 0, out.output
        summary = json.loads(out.output)
        contents = [sorted((folder / sub / name).read_bytes() for sub in ("new", "cur") if (folder / sub).is_dir()
                           for name in os.listdir(folder / sub)) for folder in (inbox, junk, review)]
        assert not os.listdir(inbox / "tmp")
        runs[jobs] = (summary["verdicts"], summary["guarded"], contents)
    assert runs["1"] == runs["2"]
    verdicts, guarded, contents = runs["1"]
    assert sum(guarded.values()) > 0 and verdicts["unsure"] > 0 and sum(map(len, contents)) == 600


def test_classify_says_which_rule_of_the_guard_made_a_message_unsure(tmp_path):
    # a verdict that depends on the mail before it in the run says so, message by message
    import json
    model = _csdmc_filter_and_trec_mail(tmp_path, tmp_path / "box")
    result = CliRunner().invoke(cli, ["classify", str(model), str(tmp_path / "box"), "--json", "-q"])
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(records) == 600
    guarded = [r for r in records if "guard" in r]
    rules = {r["guard"]["rule"] for r in guarded}
    assert rules == {"unfamiliar", "drift"}
    f = SpamFilter.load(model)
    for r in guarded:
        assert r["class"] == "unsure" and r["p_spam"] > f.spam_threshold()     # spam without the guard
        assert r["guard"]["why"].startswith(r["guard"]["rule"] + ":")
    # a message judged unsure for the mail before it ("drift") is spam judged alone, as pipe mode does
    drift = next(r for r in guarded if r["guard"]["rule"] == "drift")
    assert f.verdict(open(drift["source"], "rb").read())[0] == "spam"
    # every other message has no guard field; the text lines carry the rule as a fourth column
    text = CliRunner().invoke(cli, ["classify", str(model), str(tmp_path / "box"), "-q"]).stdout.splitlines()
    assert sum(line.endswith("\tguard:drift") for line in text) == sum(r["guard"]["rule"] == "drift" for r in guarded)
    assert all(len(line.split("\t")) == 3 for line, r in zip(text, records) if "guard" not in r)


def test_pipe_modes_lean_route_applies_the_same_margin(tmp_path):
    """The lean route (no NumPy) and the full route decide a message judged alone with the same
    floor and margin: a grid of P(spam) around the margin's cuts and familiarities across the
    floor and the typical familiarity."""
    from spamkit.decide.familiar import guard_settings
    from spamkit.mail.lean import lean_filter
    f = build_filter(**BEST).fit(HAM + SPAM, ["ham"] * len(HAM) + ["spam"] * len(SPAM))
    f.set_costs(CostMatrix.default())
    f.save(tmp_path / "f.spamkit")
    lean = lean_filter(tmp_path / "f.spamkit")
    assert lean is not None
    f.guard = FamiliarityGuard(0.3, 0.7)
    lean.guard = guard_settings(f.guard.as_dict())
    s = f.spam_column
    for p in (0.5, 0.979, 0.981, 0.99, 0.992, 0.9925, 0.993, 0.995, 0.999, 1.0):
        for fam in (0.0, 0.29, 0.3, 0.4, 0.5, 0.6, 0.69, 0.7, 0.9, float("nan")):
            row = [0.0, 0.0]
            row[s], row[1 - s] = p, 1 - p
            full = f.verdict_from(row, fam, alone=True)[0]
            assert lean.decide((row[0], row[1]), fam) == full, (p, fam)
    # the margin spoke: spam at 0.992 for a familiar message, unsure at 0.5 of the way to the floor
    assert f.verdict_from([0.008, 0.992][::1 if s == 1 else -1], 0.9, alone=True)[0] == "spam"
    assert f.verdict_from([0.008, 0.992][::1 if s == 1 else -1], 0.5, alone=True)[0] == "unsure"
    assert f.verdict_from([0.001, 0.999][::1 if s == 1 else -1], 0.5, alone=True)[0] == "spam"
