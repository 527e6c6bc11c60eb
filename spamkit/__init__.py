"""spamkit: text classification and spam filtering.

The package's folders are the pipeline's stages, and data flows one way through them::

    corpus -> parse -> text -> features -> models (scoring) -> decide -> filterfile -> jobs
           -> mail (and its resident filter, mail.serve) -> cli

``common`` holds what several stages share below them all (errors, the names users choose from,
labels, durable writes, worker processes, pipe mode's guard, the compiled loops' loader); each
stage's ``__init__`` says what it takes and gives, and ``tests/test_layering.py`` holds the
imports each may make. The command line (``spamkit.cli``) only wires the stages together.

The names a script needs are here in one import, each loaded from the module that defines it
when first asked for (``import spamkit`` itself loads nothing: pipe mode imports this package
before it reads the message)::

    >>> from spamkit import BEST, build_filter
    >>> f = build_filter(**BEST)
    >>> type(f).__name__, type(f.model).__name__
    ('SpamFilter', 'FisherNBStack')
"""

__version__ = "0.1.0"

#: name -> the module (below ``spamkit``) that defines it
_FACADE = {
    **dict.fromkeys(("BEST", "CALIBRATIONS", "CONFIG_KEYS", "DEFAULT_RATE", "METRICS", "MODELS", "REPRESENTATIONS",
                     "SELECTIONS", "SNOWBALL_LANGUAGES", "STACK", "STEMMERS", "TOKENS", "WEIGHTS", "FilterClassifier",
                     "build_filter", "filter_from_config", "make_analyzer", "parse_config", "stack_for_rate"),
                    "filterfile.config"),
    "SpamFilter": "filterfile.spamfilter",
    "CostMatrix": "decide.decision",
    "make_model": "models.registry",
    **dict.fromkeys(("compare_configs", "tune_filter"), "jobs.crossval"),
    "cross_validated_log_odds": "jobs.folds",
    **dict.fromkeys(("cost_report", "describe_corpora", "evaluate_filter", "evaluate_predictions"), "jobs.evaluate"),
    "score_locally": "jobs.rows",
    **dict.fromkeys(("LearnReport", "learn_messages"), "jobs.learn"),
    "online_filter": "jobs.online",
    **dict.fromkeys(("CorpusSurvey", "survey_corpus"), "jobs.survey"),
    **dict.fromkeys(("TrainReport", "held_out_costs", "library_versions", "train_filter"), "jobs.train"),
}

#: the facade's names (tests/test_pipeline.py checks it against _FACADE)
__all__ = ["BEST", "CALIBRATIONS", "CONFIG_KEYS", "CorpusSurvey", "CostMatrix", "DEFAULT_RATE",
           "FilterClassifier", "LearnReport", "METRICS", "MODELS", "REPRESENTATIONS", "SELECTIONS",
           "SNOWBALL_LANGUAGES", "STACK", "STEMMERS", "SpamFilter", "TOKENS", "TrainReport", "WEIGHTS",
           "build_filter", "compare_configs", "cost_report", "cross_validated_log_odds", "describe_corpora",
           "evaluate_filter", "evaluate_predictions", "filter_from_config", "held_out_costs",
           "learn_messages", "library_versions", "make_analyzer", "make_model", "online_filter",
           "parse_config", "score_locally", "stack_for_rate", "survey_corpus", "train_filter", "tune_filter"]


def __getattr__(name: str):
    """``spamkit.NAME`` for a name of the facade: imported from its module on first use."""
    module = _FACADE.get(name)
    if module is None:
        raise AttributeError(f"module 'spamkit' has no attribute {name!r}")
    import importlib
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_FACADE})
