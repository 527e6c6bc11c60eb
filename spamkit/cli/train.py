"""``spamkit train``, ``spamkit classify``, ``spamkit evaluate`` and ``spamkit info``."""

from __future__ import annotations

import sys

import click

from ..corpus import Corpus
from ..corpus.split import SPLIT_METHODS
from ..errors import ModelFormatError
from ..labels import HAM_NAME, SPAM_NAME
from ..persist import read_manifest
from ..config import (CALIBRATIONS, METRICS, MODELS, REPRESENTATIONS, SNOWBALL_LANGUAGES, STEMMERS, WEIGHTS, build_filter,
                      make_analyzer, parse_config, stack_for_rate)
from ..decision import CostMatrix
from ..jobs.crossval import compare_configs, cross_validated_log_odds, tune_filter
from ..jobs.evaluate import evaluate_filter
from ..jobs.online import online_filter
from ..jobs.train import held_out_costs, train_filter
from ..spamfilter import SpamFilter
from ..evaluation import ONLINE_MODELS, REGIMES, threshold_report
from ..report import render_comparison, render_threshold, render_evaluation, render_info, render_online, render_train, render_tuning, to_json, to_json_line
from . import cli
from .params import (CostsParam, OutputPath, close_corpora, costs_or_none, corpus_options, describe_run, engine_options, fisher_params, model_options,
                     open_corpora, spam_rate_option)
from .progress import Progress


def _close(corpora):
    close_corpora(corpora)


@cli.command("train")
@corpus_options
@click.option("-o", "--output", required=True, type=OutputPath(),
              help="Filter file to write (e.g. model.spamkit).")
@click.option("--model", type=click.Choice(MODELS), default="fisher-nb", show_default=True,
              help="fisher-nb: Robinson/Fisher, multinomial NB and online logistic regression stacked "
                   "(two classes; the best filter); fisher: Robinson/Fisher chi-square combining alone; "
                   "logistic: online logistic regression alone; multinomial or bernoulli Naive Bayes; "
                   "knn: k nearest neighbours.")
@model_options
@click.option("--calibrate", type=click.Choice(CALIBRATIONS), default=None,
              help="Map scores to probabilities fitted on 5-fold cross-validated scores of the training "
                   "data: platt (a sigmoid) or isotonic (any monotone map). Default: platt for fisher, "
                   "none otherwise (fisher-nb is calibrated by its combiner).")
@click.option("--alpha", type=click.FloatRange(min=0.0), default=1.0, show_default=True,
              help="Additive smoothing (1 = Laplace).")
@click.option("--representation", type=click.Choice(REPRESENTATIONS), default=None,
              help="Features: binary, tf (counts), tfnorm, tfidf. Default: tf for multinomial, binary for bernoulli.")
@click.option("--min-df", type=click.IntRange(min=1), default=1, show_default=True,
              help="Keep tokens found in at least this many training messages.")
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
@click.option("--k", "k", default="5", show_default=True, metavar="N|auto",
              help="kNN: neighbours that vote; 'auto' picks k and --weights by 5-fold cross-validation.")
@click.option("--weights", type=click.Choice(WEIGHTS), default="uniform", show_default=True,
              help="kNN: uniform votes, inverse distance, or softmax of similarity.")
@click.option("--metric", type=click.Choice(METRICS), default="cosine", show_default=True, help="kNN similarity.")
@click.option("--tau", type=click.FloatRange(min=0, min_open=True), default=0.1, show_default=True,
              help="kNN: softmax temperature.")
@click.option("--memory-limit", default="256M", show_default=True,
              help="kNN: memory budget of one search (e.g. 64M, 1G).")
@click.option("--condense", type=click.Choice(["none", "hart", "edit"]), default="none", show_default=True,
              help="kNN: keep only the prototypes needed (Hart); 'edit' first drops rows kNN gets wrong (Wilson).")
@click.option("--cost", "cost", type=CostsParam(), default=None,
              help="The decision layer saved with the filter: fp=100,fn=10[,unsure=2], a cost-table file, or "
                   "none (the most probable class). Default for ham/spam filters: fp=100,fn=10,unsure=2 -- "
                   "ham below P(spam) 0.2, spam above 0.98, unsure between.")
@click.option("--test-fraction", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=None,
              help="Hold out this fraction, train on the rest and print the held-out evaluation.")
@click.option("--split", type=click.Choice(SPLIT_METHODS), default="auto", show_default=True,
              help="How to hold out: chrono (latest by date), order, random (stratified), auto.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the random split.")
@click.option("--json", "as_json", is_flag=True, help="Print the training report as JSON.")
@engine_options
def train_command(corpus, ham, spam, extra, fmt, classes, output, model, tokens, strength, prior, min_dev,
                  max_clues, rate, calibrate, alpha, representation, min_df,
                  max_features, select, hashing, stem, language, stop_words, ngrams, char_ngrams, k, weights, metric, tau,
                  memory_limit, condense, cost, test_fraction, split, seed, as_json, engine, scheduler,
                  partition_size, ship):
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
    knn = {"k": _k_value(k), "weights": weights, "metric": metric, "tau": tau, "memory_limit": memory_limit}
    spam_filter = build_filter(model=model, alpha=alpha, representation=representation, min_df=min_df,
                               max_features=max_features, select=select, hashing=hashing, stem=stem,
                               language=language, stop_words=stop_words, ngrams=ngrams,
                               char_ngrams=char_ngrams, knn=knn if model == "knn" else None, tokens=tokens,
                               fisher=(fisher_params(strength, prior, min_dev, max_clues)
                                       if model in ("fisher", "fisher-nb") else None),
                               calibrate=calibrate or ("platt" if model == "fisher" else "none"),
                               stack=stack_for_rate(rate), rate=rate)
    if model == "knn" and condense != "none":
        spam_filter.condense_mode = "edit" if condense == "edit" else "condense"
    parameters = {"model": model, "tokens": tokens, "calibrate": spam_filter.calibrate,
                  **({"fisher": fisher_params(strength, prior, min_dev, max_clues)}
                     if model in ("fisher", "fisher-nb") else {}),
                  **({"rate": rate} if model in ("fisher-nb", "logistic") else {}),
                  "alpha": alpha, "representation": spam_filter.vectorizer.representation,
                  "min_df": min_df, "max_features": max_features, "select": select, "hashing": hashing,
                  "stem": stem, "language": language, "stop_words": stop_words, "ngrams": ngrams,
                  **({"char_ngrams": char_ngrams} if char_ngrams else {}),
                  "test_fraction": test_fraction, "split": split, "seed": seed,
                  **({"knn": {**knn, "condense": condense}} if model == "knn" else {}),
                  "command": " ".join(sys.argv)}
    cluster = run = None
    if engine == "dask":
        from ..distributed import Cluster, RunReport, check_distributable
        check_distributable(spam_filter)                     # before reading anything
        parameters.update({"engine": "dask", "scheduler": scheduler, "partition_size": partition_size})
        run = RunReport()
    corpora = open_corpora(corpus, ham, spam, extra, fmt, classes)
    try:
        if run is not None:
            cluster = Cluster(scheduler)
        fit = None
        if cluster is not None:
            from ..distributed import fit_on_cluster

            def fit(f, stream, step):
                return fit_on_cluster(f, stream, cluster.client, partition_size, step, run, status=progress.note)
            fit.reads_files = not ship
        with Progress("training") as progress:
            report = train_filter(spam_filter, corpora, test_fraction, split, seed, progress.step, parameters,
                                  fit=fit)
    finally:
        _close(corpora)
        if cluster is not None:
            cluster.close()
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
    if run is not None:
        extra_info["dask"] = run.as_dict()
    if as_json:
        click.echo(to_json({**report.as_dict(), **extra_info}))
    else:
        if "tuning" in extra_info:
            click.echo(render_tuning(spam_filter.tuning))
        if "condensed" in extra_info:
            c = extra_info["condensed"]
            click.echo(f"condensed: kept {c['n_after']} of {c['n_before']} training messages "
                       f"({c['n_edited']} edited out first; {c['passes']} passes)")
        click.echo(render_train(report, output))
        if run is not None:
            click.echo(describe_run(run, scheduler, "trained on"))


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


@cli.command("classify")
@click.argument("model", type=click.Path(exists=True, dir_okay=False))
@click.argument("inputs", nargs=-1, type=click.Path(allow_dash=True))
@click.option("--explain", "explain", type=click.IntRange(min=1), default=None, metavar="N",
              help="Show the N tokens that pushed each message most towards each side.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per message.")
@click.option("--format", "fmt", default="auto", show_default=True,
              help="Read INPUTS as this corpus format (see 'spamkit corpus --help').")
@click.option("--cost", "cost", type=CostsParam(), default=None,
              help="Decide by minimum expected cost: fp=100,fn=10[,unsure=2] or a cost-table file.")
@spam_rate_option
def classify_command(model, inputs, explain, as_json, fmt, cost, spam_rate):
    """Classify messages: one line per message, SOURCE<TAB>DECISION<TAB>P(spam).

    INPUTS are message files, mailboxes (mbox, Maildir, MH) or corpora; '-' (or none)
    reads one message from standard input. The decision is the most probable class, or,
    with costs (--cost here, or saved by 'train --cost'), the one with the lowest expected
    cost, which may be 'unsure'. For filters with more than two classes the third column
    lists every class's probability.
    """
    spam_filter = SpamFilter.load(model)
    if cost is not None:
        spam_filter.set_costs(costs_or_none(cost))
    spam_filter.set_spam_rate(spam_rate)
    binary = "spam" in [str(c) for c in spam_filter.classes_] and len(spam_filter.classes_) == 2
    for source, item in _inputs(inputs or ("-",), fmt):
        proba, familiarity = spam_filter.score([item])
        label = str(spam_filter.decide(proba, familiarity)[0])
        proba = proba[0]
        record = {"source": source, "class": label,
                  "probabilities": {str(c): float(p) for c, p in zip(spam_filter.classes_, proba)}}
        if binary:
            record["p_spam"] = float(proba[spam_filter.spam_column])
        if explain:
            record["explanation"] = spam_filter.explain(item, explain)
        if as_json:
            click.echo(to_json_line(record))
            continue
        score = f"{record['p_spam']:.6f}" if binary else " ".join(
            f"{c}={p:.4f}" for c, p in record["probabilities"].items())
        click.echo(f"{source}\t{label}\t{score}")
        if explain and "neighbours" in record["explanation"]:
            for nb in record["explanation"]["neighbours"]:
                measure = "similarity" if "similarity" in nb else "distance"
                click.echo(f"  neighbour {nb['id']}\t{nb['label']}\t{measure} {nb[measure]:.4f}\tweight {nb['weight']:.4g}")
        elif explain:
            ex = record["explanation"]
            a, b = ex["classes"]
            click.echo(f"  towards {a}: " + ", ".join(f"{t} {w:+.2f}" for t, w in ex["towards"]))
            click.echo(f"  towards {b}: " + ", ".join(f"{t} {w:+.2f}" for t, w in ex["against"]))


def _inputs(inputs, fmt):
    for path in inputs:
        if path == "-":
            yield "-", sys.stdin.buffer.read()
            continue
        with Corpus(path, format=fmt, classes=None) as corpus:
            for msg in corpus:
                yield msg.source, msg


@cli.command("evaluate")
@click.argument("model", type=click.Path(exists=True, dir_okay=False))
@corpus_options
@click.option("--cost", "cost", type=CostsParam(), default=None,
              help="Also report decisions and cost per message under these costs.")
@click.option("--report", "report_path", type=OutputPath(), default=None,
              help="Write a self-contained HTML report with plots (ham/spam filters).")
@spam_rate_option
@click.option("--json", "as_json", is_flag=True, help="Print the measures as JSON.")
@engine_options
def evaluate_command(model, corpus, ham, spam, extra, fmt, classes, cost, report_path, spam_rate, as_json,
                     engine, scheduler, partition_size, ship):
    """Measure a filter on labelled corpora (accuracy, recall per class, AUC, TREC measures).

    --report adds ROC (linear and log FPR) and precision-recall curves, a bootstrap interval
    of the AUC, a reliability diagram, cost against threshold, score histograms and the ten
    most costly mistakes with the tokens that decided them; --json then carries the same numbers.
    """
    spam_filter = SpamFilter.load(model)
    if cost is not None:
        spam_filter.set_costs(costs_or_none(cost))
    spam_filter.set_spam_rate(spam_rate)
    cluster = run = score = None
    corpora = open_corpora(corpus, ham, spam, extra, fmt, classes)
    try:
        if engine == "dask":
            from ..distributed import Cluster, RunReport, score_on_cluster
            cluster, run = Cluster(scheduler), RunReport()
        with Progress("evaluating") as progress:
            if cluster is not None:
                score = score_on_cluster(cluster.client, partition_size, run, ship=ship, status=progress.note)
            result = evaluate_filter(spam_filter, corpora, progress.step, detail=report_path is not None,
                                     score=score)
    finally:
        _close(corpora)
        if cluster is not None:
            cluster.close()
    if run is not None:
        result["dask"] = run.as_dict()
    if report_path is not None:
        from ..htmlreport import render_html
        page = render_html(result, " ".join(sys.argv), {"model": model, "manifest": spam_filter.manifest})
        with open(report_path, "w", encoding="utf-8") as fh:
            fh.write(page)
    click.echo(to_json(result) if as_json else render_evaluation(result))
    if run is not None and not as_json:
        click.echo(describe_run(run, scheduler, "scored"))
    if report_path is not None and not as_json:
        click.echo(f"report written to {report_path}")


@cli.command("info")
@click.argument("model", type=click.Path(exists=True, dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the whole manifest as JSON.")
def info_command(model, as_json):
    """Describe a filter file: model, classes, features, analyzer, training corpus."""
    manifest = read_manifest(model)
    try:
        text = to_json(manifest) if as_json else render_info(manifest, model)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        raise ModelFormatError(f"{model}: damaged manifest ({type(exc).__name__}: {exc})") from None
    click.echo(text)


@cli.command("tune")
@corpus_options
@click.option("--k", "ks", default="1,3,5,7,9,15,21,31", show_default=True, help="k values to try, comma-separated.")
@click.option("--weights", "weightings", default="uniform,inverse", show_default=True,
              help="Weightings to try, comma-separated (uniform, inverse, softmax).")
@click.option("--metric", type=click.Choice(METRICS), default="cosine", show_default=True)
@click.option("--representation", type=click.Choice(REPRESENTATIONS), default="tf", show_default=True)
@click.option("--folds", type=click.IntRange(min=2), default=5, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--json", "as_json", is_flag=True)
def tune_command(corpus, ham, spam, extra, fmt, classes, ks, weightings, metric, representation, folds, seed,
                 as_json):
    """Choose kNN's k and weighting by stratified cross-validation; print the error curve."""
    try:
        k_values = [int(v) for v in ks.split(",") if v.strip()]
    except ValueError:
        raise click.BadParameter(f"expected integers, got {ks!r}", param_hint="--k") from None
    weight_list = [w.strip() for w in weightings.split(",") if w.strip()]
    corpora = open_corpora(corpus, ham, spam, extra, fmt, classes)
    try:
        with Progress("reading") as progress:
            result = tune_filter(corpora, k_values, weight_list, metric=metric, representation=representation,
                                 folds=folds, seed=seed, progress=progress.step)
    finally:
        _close(corpora)
    click.echo(to_json(result.as_dict()) if as_json else render_tuning(result))


@cli.command("online")
@corpus_options
@click.option("-o", "--output", type=OutputPath(), default=None,
              help="Write the TREC results file here: 'id judgement score gold' per message.")
@click.option("--model", type=click.Choice(ONLINE_MODELS),
              default="fisher-nb", show_default=True,
              help="fisher-nb: the stacked best filter, its combiner refitted every 100 messages on the "
                   "scores it gave before learning them; logistic: online logistic regression alone.")
@model_options
@click.option("--alpha", type=click.FloatRange(min=0.0, min_open=True), default=1.0, show_default=True,
              help="Naive Bayes: additive smoothing.")
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
@click.option("--report", "report_path", type=OutputPath(), default=None,
              help="Write an HTML report: measures, the learning curve, ROC curves.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--order", type=click.Choice(["corpus", "date"]), default="corpus", show_default=True,
              help="Stream order: the corpus's own (TREC index, Enron arrival) or by message date.")
@click.option("--json", "as_json", is_flag=True)
def online_command(corpus, ham, spam, extra, fmt, classes, output, model, tokens, strength, prior, min_dev,
                   max_clues, rate, alpha, regime, margin, hashing, delay, feedback_fraction, active, active_b,
                   report_path, seed, order, as_json):
    """Online evaluation as in the TREC spam track: classify each message, then learn it.

    Messages are taken in corpus order (TREC index order, Enron arrival order).
    Prints (1-ROCA)%, hm%, sm% and lam% and the throughput.
    """
    corpora = open_corpora(corpus, ham, spam, extra, fmt, classes)
    try:
        with Progress("online") as progress:
            result = online_filter(corpora, analyzer=make_analyzer(tokens), model=model, alpha=alpha,
                                   fisher=fisher_params(strength, prior, min_dev, max_clues), regime=regime,
                                   stack=stack_for_rate(rate), rate=rate,
                                   margin=margin, hashing=hashing, delay=delay,
                                   feedback_fraction=feedback_fraction, seed=seed, order=order,
                                   active=active, active_b=active_b, progress=progress.step)
    finally:
        _close(corpora)
    if output:
        result.write_trec(output)
    data = result.as_dict()
    if report_path:
        from ..htmlreport import render_online_html
        data["report"] = result.report_data()
        with open(report_path, "w", encoding="utf-8") as fh:
            fh.write(render_online_html(data, " ".join(sys.argv)))
    click.echo(to_json(data) if as_json else render_online(data, output))
    if report_path is not None and not as_json:
        click.echo(f"report written to {report_path}")


@cli.command("threshold")
@click.argument("model", type=click.Path(exists=True, dir_okay=False))
@corpus_options
@click.option("--cost", "cost", type=CostsParam(), default=None,
              help="fp=100,fn=10 (default: the filter's own costs, else fp=1,fn=1).")
@click.option("--folds", type=click.IntRange(min=2), default=5, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--save", is_flag=True, help="Store the chosen threshold in the filter file.")
@click.option("--json", "as_json", is_flag=True)
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
    spam_filter = SpamFilter.load(model)
    costs = costs_or_none(cost) if cost is not None else spam_filter.costs
    c_fp, c_fn = 1.0, 1.0
    if costs is not None:
        c_fp, c_fn = costs.binary_costs()
    corpora = open_corpora(corpus, ham, spam, extra, fmt, classes)
    try:
        with Progress("scoring") as progress:
            is_spam, log_odds = cross_validated_log_odds(spam_filter, corpora, folds, seed, progress.step)
    finally:
        _close(corpora)
    result = threshold_report(is_spam, log_odds, c_fp, c_fn, folds, seed)
    if save:
        spam_filter.threshold = result["chosen"]["p_spam"]
        spam_filter.threshold_info = {"log_odds": result["chosen"]["log_odds"], "c_fp": c_fp, "c_fn": c_fn,
                                      "folds": folds, "seed": seed, "cv_cost": result["chosen"]["cost"]}
        spam_filter.save(model)
    if as_json:
        click.echo(to_json(result))
    else:
        click.echo(render_threshold(result))
        if save:
            click.echo(f"threshold saved in {model}: classify and filter call spam above P(spam) "
                       f"{result['chosen']['p_spam']:.6g}")


def _comparison(corpus, ham, spam, extra, fmt, classes, configs, folds, seed, as_json, report_path=None,
                engine="local", scheduler="local", partition_size=500, ship=False):
    def corpora_factory():
        return open_corpora(corpus, ham, spam, extra, fmt, classes)

    _close(corpora_factory())                      # check the corpora before the long run
    cluster = run = None
    try:
        with Progress("cross-validating") as progress:
            cv = None
            if engine == "dask":
                from ..distributed import Cluster, RunReport, cv_on_cluster
                cluster, run = Cluster(scheduler), RunReport()
                cv = cv_on_cluster(cluster.client, partition_size, run, ship=ship, status=progress.note)
            result = compare_configs(configs, corpora_factory, folds, seed, progress.step, cv=cv)
    finally:
        if cluster is not None:
            cluster.close()
    if run is not None:
        result["dask"] = run.as_dict()
    if report_path is not None:
        from ..htmlreport import render_comparison_html
        with open(report_path, "w", encoding="utf-8") as fh:
            fh.write(render_comparison_html(result, " ".join(sys.argv)))
    click.echo(to_json(result) if as_json else render_comparison(result))
    if run is not None and not as_json:
        click.echo(describe_run(run, scheduler, "cross-validated"))


@cli.command("cv")
@corpus_options
@click.option("--config", "config", default="", metavar="KEY=VALUE,...",
              help="Settings on top of the best filter, e.g. model=multinomial,tokens=words,alpha=0.5.")
@click.option("--folds", type=click.IntRange(min=2), default=5, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--json", "as_json", is_flag=True)
@engine_options
def cv_command(corpus, ham, spam, extra, fmt, classes, config, folds, seed, as_json, engine, scheduler,
               partition_size, ship):
    """Cross-validate one filter configuration on labelled ham/spam corpora.

    Pooled out-of-fold AUC with a bootstrap interval, (1-ROCA)%, accuracy and recalls at
    P(spam) = 0.5, lam%, and the AUC per fold.

    \b
    Example:
      spamkit cv enron1.tar.gz --config model=multinomial,tokens=words --folds 10
    """
    _comparison(corpus, ham, spam, extra, fmt, classes, [(config or "best", parse_config(config))],
                folds, seed, as_json, engine=engine, scheduler=scheduler, partition_size=partition_size, ship=ship)


@cli.command("compare")
@corpus_options
@click.option("--config", "configs", multiple=True, required=True, metavar="KEY=VALUE,...",
              help="A configuration (settings on top of the best filter); repeat for each. "
                   "'best' alone means the best filter.")
@click.option("--folds", type=click.IntRange(min=2), default=5, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--report", "report_path", type=OutputPath(), default=None,
              help="Also write an HTML page with overlaid ROC curves (linear and log FPR) and the table.")
@click.option("--json", "as_json", is_flag=True)
@engine_options
def compare_command(corpus, ham, spam, extra, fmt, classes, configs, folds, seed, report_path, as_json, engine,
                    scheduler, partition_size, ship):
    """Cross-validate several configurations on the same folds, side by side.

    \b
    Example:
      spamkit compare enron1.tar.gz --config best --config model=multinomial,tokens=words \\
          --config model=fisher,calibrate=platt
    """
    parsed = [(c, parse_config("" if c == "best" else c)) for c in configs]
    _comparison(corpus, ham, spam, extra, fmt, classes, parsed, folds, seed, as_json, report_path,
                engine=engine, scheduler=scheduler, partition_size=partition_size, ship=ship)
