"""``spamkit online``: the TREC spam-track protocol (classify each message, then learn it)."""

from __future__ import annotations

import sys

import click

from ..common.names import DEFAULT_MODEL, ONLINE_MODELS, REGIMES, STACK_MODEL
from .report import render_online, to_json
from . import cli
from .params import (OutputPath, byte_grams_option, context_model_option, corpus_options, engine_from_options,
                     fisher_params, json_option, model_options, reading_corpora, report_option, running)
from .progress import Progress, verbosity_options


@cli.command("online")
@verbosity_options
@corpus_options
@click.option("-o", "--output", type=OutputPath(), default=None,
              help="Write the TREC results file here: 'id judgement score gold' per message.")
@click.option("--model", type=click.Choice(ONLINE_MODELS + ("complement",)), default=None,
              help="fisher-nb: the stacked best filter, its combiner refitted every 100 messages on the "
                   "scores it gave before learning them; logistic: online logistic regression alone; grams: "
                   "online logistic regression on the byte 4-grams of each raw message's first 3,500 bytes, alone "
                   "(TREC 2007's best filter; no tokens). "
                   "[default: fisher-nb; multinomial for more than two classes, where multinomial, complement "
                   "and bernoulli learn]")
@model_options
@click.option("--alpha", type=click.FloatRange(min=0.0, min_open=True), default=None,
              help="Naive Bayes: additive smoothing. [default: as for spamkit train: 0.01 for multinomial, 0.1 "
                   "for bernoulli, 1 otherwise]")
@click.option("--regime", type=click.Choice(REGIMES), default="all", show_default=True,
              help="Learn every message, only mistakes, or mistakes and near misses (|log-odds| < --margin).")
@click.option("--margin", type=click.FloatRange(min=0.0), default=2.0, show_default=True,
              help="near-error: log-odds margin.")
@click.option("--hashing", type=click.IntRange(min=1), default=2 ** 20, show_default=True,
              help="Hashed feature columns (the vocabulary of a stream is unbounded).")
@click.option("--delay", type=click.IntRange(min=0), default=0, show_default=True,
              help="Feedback arrives this many messages after classification.")
@click.option("--feedback-fraction", type=click.FloatRange(0, 1, min_open=True), default=1.0, show_default=True,
              help="Only this share of messages is ever learned.")
@click.option("--active", type=click.IntRange(min=1), default=None, metavar="QUOTA",
              help="Active learning: the filter asks for at most QUOTA labels, for the messages it is least "
                   "sure of (asked with probability b / (b + |log-odds|)); only those are learned.")
@click.option("--active-b", type=click.FloatRange(min=0.0, min_open=True), default=1.0, show_default=True,
              help="Active learning: b (larger asks more often).")
@report_option("Write an HTML report: measures, the learning curve, ROC curves.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--order", type=click.Choice(["corpus", "date"]), default="corpus", show_default=True,
              help="Stream order: the corpus's own (TREC index, Enron arrival) or by message date.")
@click.option("--jobs", "-j", type=click.IntRange(min=0), default=0, show_default="0: every core",
              help="Parse and tokenize ahead in this many worker processes (1: all in this process); the "
                   "learning stays in order, so the results are the same.")
@context_model_option
@byte_grams_option
@json_option()
def online_command(corpus, ham, spam, extra, fmt, classes, output, model, tokens, strength, prior, min_dev,
                   max_clues, rate, alpha, regime, margin, hashing, delay, feedback_fraction, active, active_b,
                   report_path, seed, order, jobs, context_model, byte_grams, as_json):
    """Online evaluation as in the TREC spam track: classify each message, then learn it.

    Messages are taken in corpus order (TREC index order, Enron arrival order).
    Prints (1-ROCA)%, hm%, sm% and lam% and the throughput.
    """
    from ..filterfile.config import make_analyzer, model_default, stack_for_rate
    from ..jobs.online import online_filter
    if classes != "ham,spam" or extra:
        return _online_classes(corpus, ham, spam, extra, fmt, classes, output, model or "multinomial", tokens, alpha,
                               hashing, report_path, jobs, as_json,
                               {"--regime": regime != "all", "--delay": delay != 0, "--feedback-fraction":
                                feedback_fraction != 1.0, "--active": active is not None, "--order": order != "corpus"})
    model = model or DEFAULT_MODEL
    for flag, given in (("--context-model", context_model), ("--byte-grams", byte_grams)):
        if given and model != STACK_MODEL:
            raise click.BadParameter(f"{flag} adds an input to the fisher-nb stack's combiner; use --model fisher-nb"
                                     + (" (--model grams is the 4-gram model alone)" if flag == "--byte-grams" else ""),
                                     param_hint=flag)
    if model == "grams" and (order != "corpus" or regime != "all" or delay or feedback_fraction != 1.0 or active):
        raise click.BadParameter("the 4-gram model alone runs the plain protocol: corpus order, every message "
                                 "learned at once", param_hint="--model")
    if model == "complement":
        raise click.BadParameter("complement NB learns online for more than two classes (--classes any); for ham "
                                 "and spam use multinomial or fisher-nb", param_hint="--model")
    alpha = model_default(model, "alpha", alpha, 1.0)
    if byte_grams is None:
        byte_grams = bool(model_default(model, "grams", None, False))
    chosen = engine_from_options("local", "local", 0, False, jobs)
    with reading_corpora(corpus, ham, spam, extra, fmt, classes) as corpora, Progress("online") as progress, \
            running(chosen, progress) as engine:
        progress.expect_corpora(corpora)
        result = online_filter(corpora, analyzer=make_analyzer(tokens or "mail"), model=model, alpha=alpha, engine=engine,
                               fisher=fisher_params(strength, prior, min_dev, max_clues), regime=regime,
                               stack=stack_for_rate(rate), rate=rate,
                               margin=margin, hashing=hashing, delay=delay,
                               feedback_fraction=feedback_fraction, seed=seed, order=order,
                               active=active, active_b=active_b, progress=progress.step,
                               context={} if context_model else None, grams={} if byte_grams else None)
    if output:
        result.write_trec(output)
    data = result.as_dict()
    if report_path:
        from .htmlreport import render_online_html
        data["report"] = result.report_data()
        with open(report_path, "w", encoding="utf-8") as fh:
            fh.write(render_online_html(data, " ".join(sys.argv)))
    click.echo(to_json(data) if as_json else render_online(data, output))
    if report_path is not None and not as_json:
        click.echo(f"report written to {report_path}")


def _online_classes(corpus, ham, spam, extra, fmt, classes, output, model, tokens, alpha, hashing, report_path, jobs,
                    as_json, unsupported: dict) -> None:
    """``spamkit online --classes any`` (or class folders): classify-then-learn for any number of classes."""
    from ..filterfile.config import COMPLEMENT_KEYS, make_analyzer, model_default
    from ..jobs.online_classes import ONLINE_K_MODELS
    from ..jobs.online import online_filter_classes
    from .report import render_online_classes
    if model not in ONLINE_K_MODELS:
        raise click.BadParameter(f"{model} separates ham from spam; online evaluation of any number of classes "
                                 f"learns with {', '.join(ONLINE_K_MODELS)}", param_hint="--model")
    asked = [name for name, given in unsupported.items() if given]
    if output or report_path or asked:
        what = ", ".join(asked + (["-o"] if output else []) + (["--report"] if report_path else []))
        raise click.UsageError(f"{what}: the TREC spam-track settings and outputs are for ham/spam streams; with "
                               "--classes the run learns every message at once and prints (or --json) its measures")
    complement = ({COMPLEMENT_KEYS[k]: bool(model_default(model, k, None, False)) for k in COMPLEMENT_KEYS}
                  if model == "complement" else None)
    chosen = engine_from_options("local", "local", 0, False, jobs)
    with reading_corpora(corpus, ham, spam, extra, fmt, classes) as corpora, Progress("online") as progress, \
            running(chosen, progress) as engine:
        progress.expect_corpora(corpora)
        result = online_filter_classes(corpora, analyzer=make_analyzer(tokens or "mail"), model=model,
                                       alpha=model_default(model, "alpha", alpha, 1.0), hashing=hashing,
                                       complement=complement, engine=engine, progress=progress.step)
    click.echo(to_json(result) if as_json else render_online_classes(result))
