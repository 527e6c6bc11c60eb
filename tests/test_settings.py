"""One frozen settings object (spamkit.filterfile.config.FilterSettings) makes every untrained filter: the
command line's, the KEY=VALUE settings', the scikit-learn estimator's; the filter file records it."""

from __future__ import annotations

import dataclasses
import json
import zipfile

import pytest
from click.testing import CliRunner

from spamkit.cli import cli
from spamkit.filterfile.config import BEST, FilterClassifier, FilterSettings, build_filter, filter_from_config
from spamkit.common.errors import ConfigError
from spamkit.filterfile.spamfilter import SpamFilter

from conftest import SAMPLE


def _made(f: SpamFilter) -> tuple:
    """What makes a filter: its analyzer's, vectorizer's and model's settings and its side models'."""
    return (f.analyzer.get_config(), f.vectorizer.get_config(), type(f.model).__name__, f.model.get_params(),
            f.calibrate, None if f.context is None else f.context.get_params(), f.context_bytes,
            None if f.grams is None else f.grams.get_params())


def test_settings_are_frozen_all_the_way_down():
    s = FilterSettings(fisher={"min_dev": 0.3}, context={"bits": 18})
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.model = "fisher"
    with pytest.raises(TypeError):
        s.fisher["min_dev"] = 0.1                      # a read-only view, not the caller's dict
    given = {"bits": 18}
    t = FilterSettings(context=given)
    given["bits"] = 30
    assert t.context["bits"] == 18


def test_the_defaults_resolve_to_each_models_own_best():
    r = FilterSettings().resolved()                    # spamkit's best filter
    assert (r.model, r.tokens, r.representation, r.calibrate) == ("fisher-nb", "mail", "binary", "none")
    assert r.grams is not None and r.stack["logistic"] == r.rate
    assert FilterSettings(model="fisher").resolved().calibrate == "platt"
    assert FilterSettings(model="knn").resolved().knn["k"] == 15
    assert _made(FilterSettings().build()) == _made(build_filter(**BEST))


@pytest.mark.parametrize("settings", [
    {"model": "fisher-nb", "tokens": "mail", "rate": 0.05, "grams": True},
    {"model": "fisher", "min_dev": 0.3, "max_clues": 50},
    {"model": "multinomial", "tokens": "words", "alpha": 0.5, "stem": "porter"},
    {"model": "complement", "tf_transform": True},
    {"model": "knn", "k": 7, "weights": "uniform"},
    {"model": "fisher-nb", "context": True, "context_bits": 18},
])
def test_the_three_ways_in_make_the_same_filter(settings):
    # KEY=VALUE settings (compare), the object, and the scikit-learn estimator's parameters
    from_config = filter_from_config(settings)
    s = FilterSettings.from_config(settings)
    assert _made(s.build()) == _made(from_config)
    params = {f.name: getattr(s, f.name) for f in dataclasses.fields(FilterSettings)}
    assert set(params) == set(FilterClassifier().get_params())      # every setting is a parameter
    clf = FilterClassifier(**{k: (dict(v) if hasattr(v, "items") else v) for k, v in params.items()})
    assert _made(FilterSettings(**clf.get_params()).build()) == _made(from_config)


def test_what_cannot_be_made_is_refused_when_the_settings_are_made():
    with pytest.raises(ConfigError, match="side input of the fisher-nb stack"):
        FilterSettings(model="multinomial", context={})
    with pytest.raises(ConfigError, match="unknown model"):
        FilterSettings(model="svm")
    with pytest.raises(ConfigError, match="unknown context model setting"):
        FilterSettings(context={"colour": 1}).build()


def test_the_filter_file_records_the_settings_it_was_made_from(tmp_path):
    out = tmp_path / "m.spamkit"
    r = CliRunner().invoke(cli, ["train", str(SAMPLE), "-o", str(out), "--model", "fisher-nb", "--min-dev", "0.2",
                                 "--rate", "0.05", "--digit-prefixes", "--jobs", "1", "-q"])
    assert r.exit_code == 0, r.output
    with zipfile.ZipFile(out) as z:
        manifest = json.loads(z.read("manifest.json"))
    recorded = manifest["training"]["parameters"]
    expected = FilterSettings(model="fisher-nb", tokens="mail", rate=0.05, digit_prefixes=True,
                              fisher={"strength": 0.45, "prior": 0.5, "min_dev": 0.2, "max_clues": 150}).record()
    assert {k: recorded[k] for k in expected} == json.loads(json.dumps(expected))
    assert recorded["fisher"]["min_dev"] == 0.2 and recorded["rate"] == 0.05 and recorded["grams"]["bits"] > 0
    assert {"test_fraction", "split", "seed", "command"} <= set(recorded)
    # and the filter is the one the settings build
    assert _made(SpamFilter.load(out)) == _made(FilterSettings(
        model="fisher-nb", tokens="mail", rate=0.05, digit_prefixes=True, fisher=recorded["fisher"]).build())
