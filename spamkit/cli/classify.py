"""``spamkit classify``: one decision per message, from files, mailboxes, corpora or standard input."""

from __future__ import annotations

import sys

import click

from ..corpus import Corpus
from ..common.errors import CorpusError
from .report import render_classification, to_json_line
from . import cli
from .progress import verbosity_options
from .params import cost_option, costs_or_none, json_option, model_argument, spam_rate_option
@cli.command("classify")
@verbosity_options
@model_argument
@click.argument("inputs", nargs=-1, type=click.Path(allow_dash=True))
@click.option("--explain", "explain", type=click.IntRange(min=1), default=None, metavar="N",
              help="Show the N tokens that pushed each message most towards each side.")
@json_option("One JSON object per message.")
@click.option("--format", "fmt", default="auto", show_default=True,
              help="Read INPUTS as this corpus format (see 'spamkit corpus --help').")
@cost_option("Decide by minimum expected cost: fp=100,fn=10[,unsure=2] or a cost-table file.")
@spam_rate_option
def classify_command(model, inputs, explain, as_json, fmt, cost, spam_rate):
    """Classify messages: one line per message, SOURCE<TAB>DECISION<TAB>P(spam).

    INPUTS are message files, mailboxes (mbox, Maildir, MH) or corpora; '-' (or none,
    when standard input is not a terminal) reads one message from standard input. The decision is the most probable class, or,
    with costs (--cost here, or saved by 'train --cost'), the one with the lowest expected
    cost, which may be 'unsure'. For filters with more than two classes the third column
    lists every class's probability.
    """
    if not inputs and sys.stdin.isatty():
        raise click.UsageError("no messages to classify: name message files, mailboxes or corpora, or '-' "
                               "for one message on standard input")
    from ..filterfile.spamfilter import SpamFilter
    spam_filter = SpamFilter.load(model)
    if cost is not None:
        spam_filter.set_costs(costs_or_none(cost))
    spam_filter.set_spam_rate(spam_rate)
    binary = "spam" in [str(c) for c in spam_filter.classes_] and len(spam_filter.classes_) == 2
    guard = spam_filter.guard if spam_filter.costs is not None else None
    for source, item in _inputs(inputs or ("-",), fmt):
        proba, familiarity = spam_filter.score([item])
        label = str(spam_filter.decide(proba, familiarity)[0])
        record = {"source": source, "class": label,
                  "probabilities": {str(c): float(p) for c, p in zip(spam_filter.classes_, proba[0])}}
        if guard is not None and label == "unsure" and guard.last and str(spam_filter.costs.decide(proba)[0]) == "spam":
            # the familiarity guard turned spam into unsure: which rule, so that a verdict that
            # depends on the mail before it in the run says so
            record["guard"] = {"rule": guard.last, "why": guard.why()}
        proba = proba[0]
        if binary:
            record["p_spam"] = float(proba[spam_filter.spam_column])
        if explain:
            record["explanation"] = spam_filter.explain(item, explain)
        click.echo(to_json_line(record) if as_json else render_classification(record))


def _inputs(inputs, fmt):
    for path in inputs:
        if path == "-":
            raw = sys.stdin.buffer.read()
            if not raw.strip():
                raise CorpusError("standard input: empty, no message to classify")
            yield "-", raw
            continue
        with Corpus(path, format=fmt, classes=None) as corpus:
            for msg in corpus:
                yield msg.source, msg
