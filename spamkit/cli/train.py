"""``spamkit train``: learn a filter from labelled corpora and write its filter file."""

from __future__ import annotations

import contextlib
import sys

import click

from ..text.stem import SNOWBALL_LANGUAGES, STEMMERS
from ..common.names import (CALIBRATIONS, DEFAULT_MODEL, FISHER_MODEL, METRICS, MODEL_NAMES as MODELS, REPRESENTATIONS,
                     SPLIT_METHODS, STACK_MODEL, WEIGHTS)
from ..common.labels import HAM_NAME, SPAM_NAME
from .report import render_condensed, render_engine_run, render_train, to_json
from .crossreport import render_tuning
from . import cli
from .params import (OutputPath, archives_ahead, byte_grams_option, context_model_option, corpus_options, cost_option,
                     costs_or_none, engine_from_options, engine_options, fisher_params, importing_ahead, json_option,
                     model_options, reading_corpora, running)
from .progress import Progress, verbosity_options


@cli.command("train")
@verbosity_options
@corpus_options
@click.option("-o", "--output", required=True, type=OutputPath(),
              help="Filter file to write (e.g. model.spamkit).")
@click.option("--model", type=click.Choice(MODELS), default=DEFAULT_MODEL, show_default=True,
              help="fisher-nb: Robinson/Fisher, multinomial NB and online logistic regression stacked "
                   "(two classes; the best filter); fisher: Robinson/Fisher chi-square combining alone; "
                   "logistic: online logistic regression alone; multinomial or bernoulli Naive Bayes; "
                   "complement: complement Naive Bayes (Rennie et al. 2003, weight-normalised; for unbalanced "
                   "classes, any number); knn: k nearest neighbours.")
@model_options
@click.option("--calibrate", type=click.Choice(CALIBRATIONS), default=None,
              help="Map scores to probabilities fitted on 5-fold cross-validated scores of the training "
                   "data: platt (a sigmoid) or isotonic (any monotone map). Default: platt for fisher, "
                   "none otherwise (fisher-nb is calibrated by its combiner).")
@click.option("--alpha", type=click.FloatRange(min=0.0), default=None,
              help="Additive smoothing (1 = Laplace). [default: 0.01 for multinomial, 0.1 for bernoulli and "
                   "complement, 1 otherwise: each model's best on every corpus, scripts/model_defaults.py]")
@click.option("--representation", type=click.Choice(REPRESENTATIONS), default=None,
              help="Features: binary, tf (counts), tfnorm, tfidf. Default: tf for multinomial, binary for bernoulli.")
@click.option("--min-df", type=click.IntRange(min=1), default=None,
              help="Keep tokens found in at least this many training messages. [default: 2 for bernoulli, 1 otherwise]")
@click.option("--tf-log/--no-tf-log", "tf_transform", default=None,
              help="complement: count each word log(1 + count) times (Rennie et al. 2003). [default: on]")
@click.option("--length-norm/--no-length-norm", default=None,
              help="complement: scale each message's counts to unit length. [default: on]")
@click.option("--weight-norm/--no-weight-norm", default=None,
              help="complement: normalise each class's weights (Rennie et al.'s WCNB). [default: off]")
@click.option("--max-features", type=click.IntRange(min=1), default=None,
              help="Keep at most this many tokens (chosen by --select).")
@click.option("--select", type=click.Choice(["frequency", "ig"]), default="frequency", show_default=True,
              help="How --max-features chooses: corpus frequency or information gain.")
@click.option("--hashing", type=click.IntRange(min=1), default=None,
              help="Hash tokens into this many columns instead of keeping a vocabulary.")
@click.option("--stem", type=click.Choice(STEMMERS), default="none", show_default=True)
@click.option("--language", type=click.Choice(SNOWBALL_LANGUAGES), default="english", show_default=True,
              help="Language of the Snowball stemmer.")
@click.option("--stop-words", default="none", show_default=True, metavar="english|none|FILE")
@click.option("--ngrams", type=click.IntRange(1, 5), default=1, show_default=True,
              help="Also use word n-grams up to this length.")
@click.option("--char-ngrams", type=click.IntRange(0, 6), default=0, show_default=True, metavar="N",
              help="Also use the character N-grams (3-6) of the first 3,000 characters of each body; 0: off. "
                   "Best on short texts (SMS: 99.10% accuracy at 4), worse on mail.")
@click.option("--digit-prefixes", is_flag=True,
              help="Also a token of the first two digits and the length of each run of 5 or more digits "
                   "(the kind of a telephone number: premium-rate, freephone, mobile). SMS: 99.05% "
                   "accuracy; on mail about even (docs/results.md).")
@context_model_option
@click.option("--context-bytes", type=click.IntRange(min=1), default=None, metavar="N",
              help="With --context-model: the bytes of each raw message it reads. [default: 3000]")
@click.option("--context-bits", type=click.IntRange(16, 28), default=None, metavar="B",
              help="With --context-model: 2**B slots a class (8 bytes each in memory). [default: 24]")
@byte_grams_option
@click.option("--k", "k", default="15", show_default=True, metavar="N|auto",
              help="kNN: neighbours that vote; 'auto' picks k and --weights by 5-fold cross-validation.")
@click.option("--weights", type=click.Choice(WEIGHTS), default="softmax", show_default=True,
              help="kNN: uniform votes, inverse distance, or softmax of similarity.")
@click.option("--metric", type=click.Choice(METRICS), default="cosine", show_default=True,
              help="kNN: cosine similarity, an Lp distance (euclidean, manhattan, minkowski with --p, chebyshev), "
                   "hamming or jaccard (on presence).")
@click.option("--p", "p", type=click.FloatRange(min=1.0), default=2.0, show_default=True,
              help="kNN: the exponent of --metric minkowski (inf: Chebyshev).")
@click.option("--standardize", is_flag=True,
              help="kNN: divide each feature by its standard deviation over the training messages before "
                   "measuring distances.")
@click.option("--tau", type=click.FloatRange(min=0, min_open=True), default=0.1, show_default=True,
              help="kNN: softmax temperature.")
@click.option("--memory-limit", default="256M", show_default=True,
              help="kNN: memory budget of one search (e.g. 64M, 1G).")
@click.option("--condense", type=click.Choice(["none", "hart", "edit"]), default="none", show_default=True,
              help="kNN: keep only the prototypes needed (Hart); 'edit' first drops rows kNN gets wrong (Wilson).")
@cost_option("The decision layer saved with the filter: fp=100,fn=10[,unsure=2], a cost-table file, or "
             "none (the most probable class). Default for ham/spam filters: fp=100,fn=10,unsure=2 -- "
             "ham below P(spam) 0.2, spam above 0.98, unsure between.")
@click.option("--test-fraction", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=None,
              help="Hold out this fraction, train on the rest and print the held-out evaluation.")
@click.option("--split", type=click.Choice(SPLIT_METHODS), default="auto", show_default=True,
              help="How to hold out: chrono (latest by date), order, random (stratified), auto.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the random split.")
@json_option("Print the training report as JSON.")
@engine_options
@archives_ahead
def train_command(corpus, ham, spam, extra, fmt, classes, output, model, tokens, strength, prior, min_dev,
                  max_clues, rate, calibrate, alpha, representation, min_df, tf_transform, length_norm, weight_norm,
                  max_features, select, hashing, stem, language, stop_words, ngrams, char_ngrams, digit_prefixes,
                  context_model, context_bytes, context_bits, byte_grams, k, weights, metric, p, standardize, tau,
                  memory_limit, condense, cost, test_fraction, split, seed, as_json, engine, scheduler,
                  partition_size, ship, jobs):
    """Train a filter on labelled corpora and write it to a filter file.

    The defaults are spamkit's best filter: Robinson/Fisher chi-square combining,
    multinomial Naive Bayes and an online logistic regression over mail tokens, stacked by
    a logistic combiner fitted on cross-validated scores (--model fisher-nb --tokens mail;
    see docs/results.md).

    \b
    Examples:
      spamkit train corpora/sample -o sample.spamkit --test-fraction 0.3
      spamkit train enron1.tar.gz --model bernoulli --max-features 3000 --select ig -o e1.spamkit
      spamkit train --ham ~/Mail/INBOX --spam ~/Mail/Junk -o mine.spamkit
    """
    from ..common.names import MODEL_DEFAULTS, model_default
    tokens = tokens or MODEL_DEFAULTS.get(model, {}).get("tokens", "mail")
    context = None
    if context_model:
        if model != STACK_MODEL:
            raise click.BadParameter(f"a context model is a side input of the fisher-nb stack, not of {model}",
                                     param_hint="--context-model")
        context = {**({"max_bytes": context_bytes} if context_bytes else {}),
                   **({"bits": context_bits} if context_bits else {})}
    elif context_bytes or context_bits:
        raise click.BadParameter("set the context model: add --context-model", param_hint="--context-bytes/--context-bits")
    if byte_grams and model != STACK_MODEL:
        raise click.BadParameter(f"the byte 4-gram model is a side input of the fisher-nb stack, not of {model}",
                                 param_hint="--byte-grams")
    if byte_grams is None:
        byte_grams = bool(model_default(model, "grams", None, False))
    grams = {} if byte_grams else None
    knn = {"k": _k_value(k), "weights": weights, "metric": metric, "tau": tau, "memory_limit": memory_limit, "p": p,
           "standardize": standardize}
    chosen = engine_from_options(engine, scheduler, partition_size, ship, jobs)
    with contextlib.ExitStack() as stack:
        ahead = None
        with contextlib.ExitStack() as background:
            if chosen.works_ahead:
                stack.callback(chosen.close)
                if test_fraction is None and hashing is None and select != "ig":
                    # the workers start now, from this process without NumPy, holding the spools
                    # of the archives that decompress meanwhile; NumPy and SciPy are imported in
                    # the background while the corpora are opened (the archives waited for); the
                    # workers parse and tokenize the first messages while this process imports
                    # the rest (the filter is the same: ProcessEngine.count_ahead)
                    from ..text import analyzer_for
                    ahead = analyzer_for(tokens, stem, language, stop_words, ngrams, char_ngrams, digit_prefixes)
                    chosen.start_workers(ahead)
                    background.enter_context(importing_ahead())
            corpora = stack.enter_context(reading_corpora(corpus, ham, spam, extra, fmt, classes))
            if ahead is not None:
                # a filter with byte 4-grams (and no context model): the workers make their slots
                from ..common.names import GRAM_BITS, GRAM_BYTES
                chosen.count_ahead(ahead, corpora, (GRAM_BYTES, GRAM_BITS) if byte_grams and not context_model else None)
        from ..filterfile.config import FilterSettings, stack_for_rate
        from ..jobs.train import held_out_costs, train_filter
        settings = FilterSettings(
            model=model, tokens=tokens, alpha=alpha, representation=representation, min_df=min_df,
            max_features=max_features, select=select, hashing=hashing, stem=stem, language=language,
            stop_words=stop_words, ngrams=ngrams, char_ngrams=char_ngrams, digit_prefixes=digit_prefixes,
            calibrate=calibrate, fisher=fisher_params(strength, prior, min_dev, max_clues) if model in (
                FISHER_MODEL, STACK_MODEL) else None, stack=stack_for_rate(rate), rate=rate,
            knn=knn if model == "knn" else None, condense=condense, tf_transform=tf_transform,
            length_norm=length_norm, weight_norm=weight_norm, context=context, grams=grams)
        spam_filter = settings.build()
        parameters = {**settings.record(), "test_fraction": test_fraction, "split": split, "seed": seed,
                      "command": " ".join(sys.argv)}
        chosen.check(spam_filter)
        parameters.update(chosen.parameters())
        with Progress("training") as progress, running(chosen, progress) as running_engine:
            progress.expect_corpora(corpora)
            report = train_filter(spam_filter, corpora, test_fraction, split, seed, progress.step, parameters,
                                  engine=running_engine)
    from ..decide.decision import CostMatrix
    if cost is None and sorted(map(str, spam_filter.classes_)) == [HAM_NAME, SPAM_NAME]:
        cost = CostMatrix.default()                   # ham-protecting three-way decisions
    cost = costs_or_none(cost)
    if cost is not None:
        spam_filter.set_costs(cost)
        if report.evaluation is not None:
            report.evaluation["costs"] = held_out_costs(spam_filter, report)
    spam_filter.save(output)
    extra_info = {}
    if getattr(spam_filter, "tuning", None) is not None:
        extra_info["tuning"] = spam_filter.tuning.as_dict()
    if getattr(spam_filter, "condensed", None) is not None:
        extra_info["condensed"] = spam_filter.condensed
    if chosen.name == "dask":
        extra_info["dask"] = chosen.run.as_dict()
    if as_json:
        click.echo(to_json({**report.as_dict(), **extra_info}))
        return
    if "tuning" in extra_info:
        click.echo(render_tuning(spam_filter.tuning))
    if "condensed" in extra_info:
        click.echo(render_condensed(extra_info["condensed"]))
    click.echo(render_train(report, output))
    if "dask" in extra_info:
        click.echo(render_engine_run(extra_info["dask"], scheduler, "trained on"))


def _k_value(k: str):
    if k == "auto":
        return "auto"
    try:
        value = int(k)
    except ValueError:
        raise click.BadParameter(f"expected a positive integer or 'auto', got {k!r}", param_hint="--k") from None
    if value < 1:
        raise click.BadParameter(f"expected a positive integer or 'auto', got {k!r}", param_hint="--k")
    return value
