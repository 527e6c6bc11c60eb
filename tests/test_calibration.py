"""Platt scaling: scikit-learn's sigmoid calibration as the oracle, hand-worked limits, filter files."""

import math

import numpy as np
import pytest

from spamkit.decide.calibration import PlattScaling
from spamkit.common.errors import ConfigError


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_matches_scikit_learn_sigmoid_calibration(seed):
    from sklearn.calibration import _sigmoid_calibration
    rng = np.random.default_rng(seed)
    s = rng.normal(size=400) * 4 + 1
    y = rng.random(400) < 1 / (1 + np.exp(-(0.6 * s - 1.2)))
    ours = PlattScaling().fit(s, y)
    a, b = _sigmoid_calibration(s, y)          # scikit-learn: P = 1 / (1 + exp(a s + b))
    assert ours.a_ == pytest.approx(-a, rel=1e-4, abs=1e-6)
    assert ours.b_ == pytest.approx(-b, rel=1e-4, abs=1e-6)


def test_uninformative_scores_give_the_smoothed_prior():
    # The same mix of labels at score +1 and at -1 (three positives, one negative each): the
    # score carries no information, so a = 0 and sigma(b) is the mean of Platt's targets,
    # t+ = (6 + 1) / (6 + 2) and t- = 1 / (2 + 2).
    s = np.array([1.0, 1.0, -1.0, -1.0, 1.0, -1.0, 1.0, -1.0])
    y = np.array([1, 0, 1, 0, 1, 1, 1, 1], dtype=bool)       # 6 positives, 2 negatives
    p = PlattScaling().fit(s, y)
    assert p.a_ == pytest.approx(0.0, abs=1e-6)
    t_pos, t_neg = 7 / 8, 1 / 4                                # (6+1)/(6+2), 1/(2+2)
    mean_target = (6 * t_pos + 2 * t_neg) / 8
    assert 1 / (1 + math.exp(-p.b_)) == pytest.approx(mean_target, abs=1e-6)


def test_log_proba_is_normalised_and_monotone():
    p = PlattScaling().fit(np.array([-3.0, -1.0, 0.5, 2.0, 4.0, -2.0]), np.array([0, 0, 1, 1, 1, 1], dtype=bool))
    s = np.array([-1e6, -5.0, 0.0, 5.0, np.inf])
    log0, log1 = p.log_proba(s)
    np.testing.assert_allclose(np.exp(log0) + np.exp(log1), 1.0)
    assert np.all(np.diff(log1) >= 0) and p.a_ > 0


def test_round_trip_and_bad_input():
    p = PlattScaling().fit(np.array([-1.0, 1.0, -2.0, 2.0]), np.array([0, 1, 0, 1], dtype=bool))
    q = PlattScaling.from_dict(p.as_dict())
    assert (q.a_, q.b_) == (p.a_, p.b_)
    with pytest.raises(ConfigError, match="both classes"):
        PlattScaling().fit(np.array([1.0, 2.0]), np.array([1, 1], dtype=bool))
    with pytest.raises(ConfigError, match="NaN"):
        PlattScaling().fit(np.array([np.nan, 2.0]), np.array([0, 1], dtype=bool))
    with pytest.raises(ConfigError, match="method"):
        PlattScaling.from_dict({"method": "isotonic"})


def test_fisher_filter_calibrates_saves_and_loads(tmp_path):
    from conftest import SAMPLE
    from spamkit.corpus import Corpus
    from spamkit import SpamFilter, build_filter
    with Corpus(SAMPLE) as c:
        msgs = list(c)
    f = build_filter(model="fisher", tokens="mail", calibrate="platt").fit(msgs[::2])
    assert f.calibration is not None and f.calibration.a_ > 0
    raw = f.model.predict_log_proba(f.transform(msgs[1::2]))
    expected = 1 / (1 + np.exp(-(f.calibration.a_ * (raw[:, 1] - raw[:, 0]) + f.calibration.b_)))
    np.testing.assert_allclose(f.p_spam(msgs[1::2]), expected)
    f.save(tmp_path / "best.spamkit")
    g = SpamFilter.load(tmp_path / "best.spamkit")
    np.testing.assert_allclose(g.p_spam(msgs[1::2]), f.p_spam(msgs[1::2]))
    assert g.calibration.as_dict() == f.calibration.as_dict()


def test_fisher_refuses_more_than_two_classes():
    from spamkit import build_filter
    with pytest.raises(ConfigError, match="two classes"):
        build_filter(model="fisher").fit(["apple pie", "cherry tart", "plum cake", "apple tart", "pie cake",
                                          "plum plum"],
                                         y=["x", "x", "y", "y", "z", "z"])


@pytest.mark.parametrize("seed", [0, 1])
def test_isotonic_matches_scikit_learn(seed):
    from sklearn.isotonic import IsotonicRegression
    from spamkit.decide.calibration import IsotonicCalibration, calibration_from_dict
    rng = np.random.default_rng(seed)
    s = np.round(rng.normal(size=400) * 3, 1)                  # with tied scores
    y = rng.random(400) < 1 / (1 + np.exp(-s))
    ours = IsotonicCalibration().fit(s, y)
    ref = IsotonicRegression(out_of_bounds="clip").fit(s, y)
    grid = np.linspace(-15, 15, 2001)
    np.testing.assert_allclose(ours.proba(grid), ref.predict(grid), atol=1e-12)
    log0, log1 = ours.log_proba(grid)
    assert np.isfinite(log0).all() and np.isfinite(log1).all()
    again = calibration_from_dict(ours.as_dict())
    np.testing.assert_array_equal(again.proba(grid), ours.proba(grid))


def test_isotonic_hand_worked():
    # scores 1,2,3,4 with labels 0,1,0,1: PAV pools (2,3) to 1/2 -> blocks 0 | 1/2 1/2 | 1
    from spamkit.decide.calibration import IsotonicCalibration
    c = IsotonicCalibration().fit(np.array([1.0, 2.0, 3.0, 4.0]), np.array([0, 1, 0, 1], dtype=bool))
    np.testing.assert_allclose(c.proba(np.array([0.0, 1.0, 1.5, 2.5, 3.5, 9.0])), [0, 0, 0.25, 0.5, 0.75, 1])
