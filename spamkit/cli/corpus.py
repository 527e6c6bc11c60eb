"""``spamkit corpus``: what a corpus holds and how well it parses."""

from __future__ import annotations

import click

from ..jobs.survey import survey_corpus
from .report import render_survey, to_json
from . import cli
from .params import corpus_options, engine_from_options, jobs_option, json_option, open_corpora
from .progress import Progress, verbosity_options


@cli.command("corpus")
@verbosity_options
@corpus_options
@json_option("Print the survey as JSON.")
@click.option("--no-parse", is_flag=True, help="Only read and count; do not parse the messages.")
@click.option("--strict", is_flag=True, help="Fail on the first message that needs a parse fallback.")
@jobs_option
def corpus_command(corpus, ham, spam, extra, fmt, classes, as_json, no_parse, strict, jobs):
    """Describe corpora: format, messages per class, size, dates, parse fallbacks.

    \b
    Examples:
      spamkit corpus corpora/sample
      spamkit corpus enron1.tar.gz trec07p/full/index SMSSpamCollection
      spamkit corpus --ham ~/Mail/INBOX --spam ~/Mail/Junk.mbox
    """
    surveys = []
    engine = engine_from_options("local", "", 0, False, jobs if not no_parse else 1)
    try:
        for c in open_corpora(corpus, ham, spam, extra, fmt, classes):
            with c, Progress(f"reading {c.path.name}") as progress:
                surveys.append(survey_corpus(c, parse=not no_parse, strict=strict, progress=progress.step,
                                             engine=engine))
    finally:
        engine.close()
    if as_json:
        click.echo(to_json([s.as_dict() for s in surveys]))
    else:
        click.echo("\n\n".join(render_survey(s) for s in surveys))
