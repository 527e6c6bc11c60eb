"""Model selection on the command line: ``spamkit tune`` (kNN's k), ``threshold`` (the cost-minimising
threshold), ``cv`` (one configuration) and ``compare`` (several, on the same folds)."""

from __future__ import annotations

import sys

import click


from ..common.names import METRICS, REPRESENTATIONS
from .report import render_engine_run, to_json
from .crossreport import render_comparison, render_threshold, render_tuning
from . import cli
from .params import (close_corpora, corpus_options, cost_option, costs_or_none, engine_from_options, engine_options,
                     folds_options, json_option, model_argument, open_corpora, reading_corpora, report_option, running)
from .progress import Progress, verbosity_options


@cli.command("tune")
@verbosity_options
@corpus_options
@click.option("--k", "ks", default="1,3,5,7,9,15,21,31", show_default=True, help="k values to try, comma-separated.")
@click.option("--weights", "weightings", default="uniform,inverse", show_default=True,
              help="Weightings to try, comma-separated (uniform, inverse, softmax).")
@click.option("--metric", type=click.Choice(METRICS), default="cosine", show_default=True)
@click.option("--representation", type=click.Choice(REPRESENTATIONS), default="tf", show_default=True)
@folds_options
@json_option()
def tune_command(corpus, ham, spam, extra, fmt, classes, ks, weightings, metric, representation, folds, seed,
                 as_json):
    """Choose kNN's k and weighting by stratified cross-validation; print the error curve."""
    from ..jobs.crossval import tune_filter
    try:
        k_values = [int(v) for v in ks.split(",") if v.strip()]
    except ValueError:
        raise click.BadParameter(f"expected integers, got {ks!r}", param_hint="--k") from None
    weight_list = [w.strip() for w in weightings.split(",") if w.strip()]
    with reading_corpora(corpus, ham, spam, extra, fmt, classes) as corpora, Progress("reading") as progress:
        result = tune_filter(corpora, k_values, weight_list, metric=metric, representation=representation,
                             folds=folds, seed=seed, progress=progress.step)
    click.echo(to_json(result.as_dict()) if as_json else render_tuning(result))


@cli.command("threshold")
@verbosity_options
@model_argument
@corpus_options
@cost_option("fp=100,fn=10 (default: the filter's own costs, else fp=1,fn=1).")
@folds_options
@click.option("--save", is_flag=True, help="Store the chosen threshold in the filter file.")
@json_option()
def threshold_command(model, corpus, ham, spam, extra, fmt, classes, cost, folds, seed, save, as_json):
    """Choose the spam threshold that minimises expected cost, by cross-validation.

    CORPUS should be the filter's training data (or more labelled mail, never the data you
    will report results on): every message is scored by a filter of MODEL's configuration
    trained on the other folds; the threshold with the lowest realised cost per message on
    those scores is recommended, next to the Bayes threshold of the costs.

    \b
    Example:
      spamkit threshold mine.spamkit --ham ~/Mail/INBOX --spam ~/Mail/Junk --cost fp=100,fn=10 --save
    """
    from ..jobs.folds import cross_validated_log_odds
    from ..decide.selection import threshold_report
    from ..filterfile.spamfilter import SpamFilter
    spam_filter = SpamFilter.load(model)
    costs = costs_or_none(cost) if cost is not None else spam_filter.costs
    c_fp, c_fn = 1.0, 1.0
    if costs is not None:
        c_fp, c_fn = costs.binary_costs()
    with reading_corpora(corpus, ham, spam, extra, fmt, classes) as corpora, Progress("scoring") as progress:
        is_spam, log_odds = cross_validated_log_odds(spam_filter, corpora, folds, seed, progress.step,
                                                     status=progress.stage, purpose="threshold choice")
    result = threshold_report(is_spam, log_odds, c_fp, c_fn, folds, seed)
    if save:
        spam_filter.threshold = result["chosen"]["p_spam"]
        spam_filter.threshold_info = {"log_odds": result["chosen"]["log_odds"], "c_fp": c_fp, "c_fn": c_fn,
                                      "folds": folds, "seed": seed, "cv_cost": result["chosen"]["cost"]}
        spam_filter.save(model)
    click.echo(to_json(result) if as_json else render_threshold(result, saved_in=model if save else None))


def _comparison(corpus, ham, spam, extra, fmt, classes, configs, folds, seed, as_json, report_path=None,
                engine="local", scheduler="local", partition_size=500, ship=False, jobs=1, cost=None):
    from ..jobs.crossval import compare_configs
    def corpora_factory():
        return open_corpora(corpus, ham, spam, extra, fmt, classes)

    close_corpora(corpora_factory())               # check the corpora before the long run
    chosen = engine_from_options(engine, scheduler, partition_size, ship, jobs)
    with Progress("cross-validating") as progress, running(chosen, progress) as running_engine:
        result = compare_configs(configs, corpora_factory, folds, seed, progress.step, engine=running_engine,
                                 status=progress.stage, costs=costs_or_none(cost) if cost is not None else None)
    if chosen.name == "dask":
        result["dask"] = chosen.run.as_dict()
    if report_path is not None:
        from .htmlreport import render_comparison_html
        with open(report_path, "w", encoding="utf-8") as fh:
            fh.write(render_comparison_html(result, " ".join(sys.argv)))
    click.echo(to_json(result) if as_json else render_comparison(result))
    if chosen.name == "dask" and not as_json:
        click.echo(render_engine_run(result["dask"], scheduler, "cross-validated"))


@cli.command("cv")
@verbosity_options
@corpus_options
@click.option("--config", "config", default="", metavar="KEY=VALUE,...",
              help="Settings on top of the best filter, e.g. model=multinomial,tokens=words,alpha=0.5.")
@folds_options
@cost_option("Also decide the out-of-fold probabilities by these costs and report the realised and expected "
             "cost per message: fp=100,fn=10[,unsure=2], or a cost-table file for any number of classes.")
@json_option()
@engine_options
def cv_command(corpus, ham, spam, extra, fmt, classes, config, folds, seed, cost, as_json, engine, scheduler,
               partition_size, ship, jobs):
    """Cross-validate one filter configuration on labelled ham/spam corpora.

    Pooled out-of-fold AUC with a bootstrap interval, (1-ROCA)%, accuracy and recalls at
    P(spam) = 0.5, lam%, and the AUC per fold.

    \b
    Example:
      spamkit cv enron1.tar.gz --config model=multinomial,tokens=words --folds 10
    """
    from ..filterfile.config import parse_config
    _comparison(corpus, ham, spam, extra, fmt, classes, [(config or "best", parse_config(config))],
                folds, seed, as_json, engine=engine, scheduler=scheduler, partition_size=partition_size, ship=ship, jobs=jobs,
                cost=cost)


@cli.command("compare")
@verbosity_options
@corpus_options
@click.option("--config", "configs", multiple=True, required=True, metavar="KEY=VALUE,...",
              help="A configuration (settings on top of the best filter); repeat for each. "
                   "'best' alone means the best filter.")
@folds_options
@report_option("Also write an HTML page with overlaid ROC curves (linear and log FPR) and the table.")
@cost_option("Also decide each configuration's out-of-fold probabilities by these costs (any number of "
             "classes) and report the realised and expected cost per message.")
@json_option()
@engine_options
def compare_command(corpus, ham, spam, extra, fmt, classes, configs, folds, seed, report_path, cost, as_json, engine,
                    scheduler, partition_size, ship, jobs):
    """Cross-validate several configurations on the same folds, side by side.

    \b
    Example:
      spamkit compare enron1.tar.gz --config best --config model=multinomial,tokens=words \\
          --config model=fisher,calibrate=platt
    """
    from ..filterfile.config import parse_config
    parsed = [(c, parse_config("" if c == "best" else c)) for c in configs]
    _comparison(corpus, ham, spam, extra, fmt, classes, parsed, folds, seed, as_json, report_path,
                engine=engine, scheduler=scheduler, partition_size=partition_size, ship=ship, jobs=jobs, cost=cost)
