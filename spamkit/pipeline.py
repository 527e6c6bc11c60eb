"""spamkit's Python interface in one import: the filter, its settings and the jobs.

The code lives where its name says -- :mod:`spamkit.filterfile.spamfilter` (the trained filter),
:mod:`spamkit.filterfile.config` (settings and defaults), :mod:`spamkit.jobs` (train, evaluate,
cross-validate, online, learn, survey) -- and this module gathers the names a script needs,
so that ``from spamkit.pipeline import SpamFilter, build_filter, BEST`` keeps working::

    >>> from spamkit.pipeline import BEST, build_filter
    >>> f = build_filter(**BEST)
    >>> type(f).__name__, type(f.model).__name__
    ('SpamFilter', 'FisherNBStack')
"""

from __future__ import annotations

from .filterfile.config import (BEST, CALIBRATIONS, CONFIG_KEYS, DEFAULT_RATE, METRICS, MODELS, REPRESENTATIONS, SELECTIONS,
                     SNOWBALL_LANGUAGES, STACK, STEMMERS, TOKENS, WEIGHTS, FilterClassifier, build_filter,
                     filter_from_config, make_analyzer, parse_config, stack_for_rate)
from .decide.decision import CostMatrix
from .jobs.crossval import compare_configs, tune_filter
from .jobs.folds import cross_validated_log_odds
from .jobs.evaluate import cost_report, describe_corpora, evaluate_filter, evaluate_predictions
from .jobs.rows import score_locally
from .jobs.learn import LearnReport, learn_messages
from .jobs.online import online_filter
from .jobs.survey import CorpusSurvey, survey_corpus
from .jobs.train import TrainReport, held_out_costs, library_versions, train_filter
from .models.registry import make_model
from .filterfile.spamfilter import SpamFilter

__all__ = ["SpamFilter", "FilterClassifier", "CostMatrix", "make_model", "held_out_costs", "build_filter", "make_analyzer",
           "train_filter", "evaluate_filter", "tune_filter", "online_filter", "survey_corpus", "MODELS", "TOKENS",
           "BEST", "STACK", "DEFAULT_RATE", "CALIBRATIONS", "learn_messages", "stack_for_rate",
           "cross_validated_log_odds", "compare_configs", "parse_config", "REPRESENTATIONS", "SELECTIONS",
           "STEMMERS", "SNOWBALL_LANGUAGES", "METRICS", "WEIGHTS", "CONFIG_KEYS", "filter_from_config",
           "cost_report", "describe_corpora", "evaluate_predictions", "score_locally", "LearnReport",
           "CorpusSurvey", "TrainReport", "library_versions"]
