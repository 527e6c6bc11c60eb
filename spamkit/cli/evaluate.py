"""``spamkit evaluate``: measure a trained filter on labelled corpora (text, JSON, HTML report)."""

from __future__ import annotations

import sys

import click


from .report import render_engine_run, render_evaluation, to_json
from . import cli
from .params import (archives_ahead, corpus_options, cost_option, costs_or_none, engine_from_options, engine_options,
                     json_option, model_argument, reading_corpora, report_option, running, spam_rate_option)
from .progress import Progress, verbosity_options


@cli.command("evaluate")
@verbosity_options
@model_argument
@corpus_options
@cost_option("Also report decisions and cost per message under these costs.")
@report_option("Write a self-contained HTML report with plots (ham/spam filters).")
@click.option("--positive", default=None, metavar="CLASS",
              help="Two classes: the class ROC, precision-recall and recall are about. [default: spam when it "
                   "is a class, else the rarer class]")
@spam_rate_option
@json_option("Print the measures as JSON.")
@engine_options
@archives_ahead
def evaluate_command(model, corpus, ham, spam, extra, fmt, classes, cost, report_path, positive, spam_rate, as_json,
                     engine, scheduler, partition_size, ship, jobs):
    """Measure a filter on labelled corpora (accuracy, recall per class, AUC, TREC measures).

    Every form leads with what the filter decided (ham, unsure, spam, under its costs, unsure
    band and familiarity guard) and what that cost; the measures at P(spam) 0.5 follow, as
    the ranking's view. --report adds ROC (linear and log FPR) and precision-recall curves, a
    bootstrap interval of the AUC, a reliability diagram, cost against threshold, score
    histograms and the ten costliest decisions with the tokens that decided them; --json then
    carries the same numbers.
    """
    from ..jobs.evaluate import evaluate_filter
    from ..filterfile.spamfilter import SpamFilter
    spam_filter = SpamFilter.load(model)
    if cost is not None:
        spam_filter.set_costs(costs_or_none(cost))
    spam_filter.set_spam_rate(spam_rate)
    if positive is not None:
        from ..jobs.evaluate import positive_class
        positive_class(spam_filter.classes_, [], positive)           # a wrong name stops here, before reading
    chosen = engine_from_options(engine, scheduler, partition_size, ship, jobs)
    with reading_corpora(corpus, ham, spam, extra, fmt, classes) as corpora, \
            Progress("evaluating") as progress, running(chosen, progress) as running_engine:
        progress.expect_corpora(corpora)
        result = evaluate_filter(spam_filter, corpora, progress.step, detail=report_path is not None,
                                 engine=running_engine, positive=positive)
    if chosen.name == "dask":
        result["dask"] = chosen.run.as_dict()
    if report_path is not None:
        from .htmlreport import render_html
        page = render_html(result, " ".join(sys.argv), {"model": model, "manifest": spam_filter.manifest})
        with open(report_path, "w", encoding="utf-8") as fh:
            fh.write(page)
    click.echo(to_json(result) if as_json else render_evaluation(result))
    if chosen.name == "dask" and not as_json:
        click.echo(render_engine_run(result["dask"], scheduler, "scored"))
    if report_path is not None and not as_json:
        click.echo(f"report written to {report_path}")
