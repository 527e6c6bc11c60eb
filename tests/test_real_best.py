"""spamkit's best filter against the published figures of issue 7, on the real corpora (CI has them).

Each test is a claim of docs/results.md's "Beating bogofilter" section, checked end to end:
the figures compared with are the published ones, not results of this code.
"""

from __future__ import annotations

import numpy as np
import pytest

from spamkit.corpus import Corpus
from spamkit.jobs.evaluation import online_evaluate
from spamkit.decide.metrics import mcc
from spamkit import BEST, build_filter, make_analyzer

from conftest import shared_corpus

pytestmark = pytest.mark.slow

#: bogofilter 1.2.5 with default settings on trec07p-dev, online, immediate feedback (issue 7's table)
BOGOFILTER_ROCA_PCT = 0.082
#: Almeida et al. 2011, best result on their split (linear SVM): accuracy %, MCC
ALMEIDA_BEST = (97.64, 0.893)


def test_best_filter_ranks_the_trec_stream_better_than_bogofilter():
    with Corpus(shared_corpus("trec07p-dev/trec07p-dev.tar.gz")) as corpus:
        result = online_evaluate(corpus, make_analyzer(BEST["tokens"]), model=BEST["model"])
    assert len(result.ids) == 5000
    print(f"\nbest filter, trec07p-dev online: {result.measures}")
    assert result.measures["roca_pct"] < BOGOFILTER_ROCA_PCT
    # and far ahead of textbook multinomial NB on word tokens, the starting point
    with Corpus(shared_corpus("trec07p-dev/trec07p-dev.tar.gz")) as corpus:
        plain = online_evaluate(corpus, make_analyzer("words"), model="multinomial")
    assert result.measures["roca_pct"] < plain.measures["roca_pct"] / 10


def test_best_filter_beats_the_published_sms_result():
    with Corpus(shared_corpus("sms-spam-collection/SMSSpamCollection")) as corpus:
        msgs = list(corpus)
    train, test = msgs[:1674], msgs[-3900:]                     # Almeida et al.'s split
    f = build_filter(**BEST).fit(train)
    pred = f.p_spam(test) > 0.5
    y = np.array([m.label == "spam" for m in test])
    tp, fn, fp, tn = (int(np.sum(pred & y)), int(np.sum(~pred & y)), int(np.sum(pred & ~y)),
                      int(np.sum(~pred & ~y)))
    accuracy, m = 100 * (tp + tn) / len(y), mcc(tp, fp, tn, fn)
    print(f"\nbest filter, SMS split: accuracy {accuracy:.2f}%, MCC {m:.3f}")
    assert accuracy > ALMEIDA_BEST[0] and m > ALMEIDA_BEST[1]


@pytest.mark.parametrize("option", [{}, {"digit_prefixes": True}], ids=["default", "digit-prefixes"])
def test_the_default_and_digit_prefixes_reach_the_sms_goal(option):
    """Issue 12's SMS goal (Almeida split: accuracy >= 99.0%, blocked ham <= 0.2%): the default
    filter since its combiner is length-aware (99.03%, 0.00% blocked; 98.97% without), and with
    ``--digit-prefixes`` on top (99.10%). (``--char-ngrams 4``, which reached it with the
    previous combiner, is at 98.97% with this one: docs/results.md.)"""
    with Corpus(shared_corpus("sms-spam-collection/SMSSpamCollection")) as corpus:
        msgs = list(corpus)
    train, test = msgs[:1674], msgs[-3900:]
    y = np.array([m.label == "spam" for m in test])
    f = build_filter(**BEST, **option).fit(train)
    pred = f.p_spam(test) > 0.5
    accuracy = 100 * np.mean(pred == y)
    blocked_ham = 100 * np.sum(pred & ~y) / np.sum(~y)
    print(f"\nbest filter + {option}, SMS split: accuracy {accuracy:.2f}%, blocked ham {blocked_ham:.2f}%")
    assert accuracy >= 99.0 and blocked_ham <= 0.2
