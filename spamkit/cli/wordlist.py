"""``spamkit import-wordlist`` and ``export-wordlist``: bogofilter word lists in and out."""

from __future__ import annotations

import sys

import click

from . import cli
from .params import OutputPath, model_argument
from .progress import verbosity_options


@cli.command("import-wordlist")
@verbosity_options
@click.argument("dump", metavar="DUMP|-")
@click.option("-o", "--output", required=True, type=OutputPath(), help="Filter file to write (e.g. model.spamkit).")
@click.option("--robs", type=click.FloatRange(min=0.0, min_open=True), default=None,
              help="bogofilter's robs (weight of robx for rare tokens). Default: bogofilter's 0.0178.")
@click.option("--robx", type=click.FloatRange(0.0, 1.0, min_open=True, max_open=True), default=None,
              help="bogofilter's robx (probability of an unknown token). Default: the word list's .ROBX, "
                   "else bogofilter's 0.52.")
@click.option("--min-dev", type=click.FloatRange(0.0, 0.5, max_open=True), default=None,
              help="bogofilter's min_dev (tokens nearer 0.5 are no clue). Default: 0.375.")
@click.option("--ham-cutoff", type=click.FloatRange(0.0, 1.0, min_open=True, max_open=True), default=None,
              help="Ham below this score. Default: bogofilter's 0.45.")
@click.option("--spam-cutoff", type=click.FloatRange(0.0, 1.0, min_open=True, max_open=True), default=None,
              help="Spam from this score; unsure between the cut-offs. Default: bogofilter's 0.99.")
def import_wordlist_command(dump, output, robs, robx, min_dev, ham_cutoff, spam_cutoff):
    """Make a filter from a bogofilter word list (the text bogoutil -d writes).

    Write the text with `bogoutil -d ~/.bogofilter/wordlist.db > wordlist.txt`.
    The filter uses bogofilter's tokens and, unless told otherwise, its compiled-in parameters and
    cut-offs, so it scores mail as bogofilter did; `spamkit learn` goes on teaching it. Give the
    values of your bogofilter.cf with the options.
    """
    from .report import render_import
    from ..filterfile.wordlist import read_wordlist, wordlist_filter
    wordlist = read_wordlist(dump)
    spam_filter = wordlist_filter(wordlist, robs=robs, robx=robx, min_dev=min_dev, ham_cutoff=ham_cutoff,
                                  spam_cutoff=spam_cutoff, source="standard input" if dump == "-" else dump)
    spam_filter.save(output)
    click.echo(render_import(spam_filter.training["imported"], output))


@cli.command("export-wordlist")
@verbosity_options
@model_argument
@click.option("-o", "--output", type=OutputPath(), default=None,
              help="File to write; default: standard output. Load it with `bogoutil -l wordlist.db < FILE`.")
def export_wordlist_command(model, output):
    """Write a filter's token counts as a bogofilter word list (bogoutil -l reads it).

    For the fisher and fisher-nb models (they count tokens per message, as bogofilter does).
    """
    from ..filterfile.spamfilter import SpamFilter
    from ..filterfile.wordlist import write_wordlist
    spam_filter = SpamFilter.load(model)
    if spam_filter.analyzer.lexer != "bogofilter":
        click.echo(f"warning: {model} was not trained on bogofilter's tokens (train with --tokens bogofilter): "
                   "bogofilter will find few of these tokens in mail", err=True)
    if output is None:
        n = write_wordlist(spam_filter, sys.stdout.buffer)
        sys.stdout.buffer.flush()
    else:
        with open(output, "wb") as stream:
            n = write_wordlist(spam_filter, stream)
    click.echo(f"{n} tokens written{'' if output is None else ' to ' + str(output)}", err=True)
