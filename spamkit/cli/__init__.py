"""The ``spamkit`` command line: click wiring only, no arithmetic and no file formats.

Every :class:`~spamkit.common.errors.SpamkitError` becomes one ``Error: ...`` line
on stderr and exit status 1; ``--traceback`` shows the full trace instead.
"""

from __future__ import annotations

import importlib
import sys

import click

from .. import __version__
from ..common.errors import SpamkitError
from .progress import set_verbosity, verbosity_options
from .status import ExitStatus


#: command -> (module of spamkit.cli that defines it, its one-line help). A command's module is
#: imported when the command runs, so ``spamkit --help`` and a mistyped command answer without
#: loading numpy and scikit-learn; tests/test_cli.py checks the help lines against the commands.
COMMANDS = {
    "classify": ("classify", "Classify messages: one line per message, SOURCE<TAB>DECISION<TAB>P(spam)."),
    "compare": ("crossval", "Cross-validate several configurations on the same folds, side by side."),
    "corpus": ("corpus", "Describe corpora: format, messages per class, size, dates, parse fallbacks."),
    "cv": ("crossval", "Cross-validate one filter configuration on labelled ham/spam corpora."),
    "evaluate": ("evaluate", "Measure a filter on labelled corpora (accuracy, recall per class, AUC, TREC measures)."),
    "filter": ("filter", "Filter mailboxes (mbox, Maildir, MH, or a folder on an IMAP server) with a trained filter: tag and/or move spam."),
    "export-wordlist": ("wordlist", "Write a filter's token counts as a bogofilter word list (bogoutil -l reads it)."),
    "import-wordlist": ("wordlist", "Make a filter from a bogofilter word list (the text bogoutil -d writes)."),
    "info": ("info", "Describe a filter file: model, classes, features, analyzer, training corpus."),
    "learn": ("learn", "Teach a trained filter from corrected folders, like sa-learn or bogofilter -s/-n."),
    "online": ("online", "Online evaluation as in the TREC spam track: classify each message, then learn it."),
    "recipe": ("recipe", "Print a procmail or Dovecot Sieve recipe that filters mail with MODEL."),
    "serve": ("serve", "Keep a filter loaded and answer spamkit-pipe, or spamc as SpamAssassin's spamd would."),
    "threshold": ("crossval", "Choose the spam threshold that minimises expected cost, by cross-validation."),
    "train": ("train", "Train a filter on labelled corpora and write it to a filter file."),
    "tune": ("crossval", "Choose kNN's k and weighting by stratified cross-validation; print the error curve."),
}


class SpamkitGroup(click.Group):
    """The one place where spamkit exceptions become "Error: ..." and exit status 1.

    Commands are loaded on first use (:data:`COMMANDS`).
    """

    def parse_args(self, ctx, args):
        set_verbosity(0)                       # each invocation starts from the default
        return super().parse_args(ctx, args)

    def list_commands(self, ctx):
        return sorted(set(self.commands) | set(COMMANDS))

    def get_command(self, ctx, name):
        if name not in self.commands and name in COMMANDS:
            importlib.import_module(f"{__name__}.{COMMANDS[name][0]}")      # registers it on cli
        return self.commands.get(name)

    def format_commands(self, ctx, formatter):
        rows = [(name, COMMANDS[name][1] if name not in self.commands else
                 self.commands[name].get_short_help_str(limit=formatter.width))
                for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except SpamkitError as exc:
            if ctx.params.get("traceback"):
                raise
            raise click.ClickException(str(exc)) from exc
        except KeyboardInterrupt:
            click.echo("Interrupted.", err=True)
            ctx.exit(ExitStatus.INTERRUPTED)


@click.group(cls=SpamkitGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="spamkit")
@click.option("--traceback", is_flag=True, help="Show the full Python traceback on errors.")
@verbosity_options
def cli(traceback):
    """spamkit: train, evaluate and run text classifiers and spam filters.

    Corpora can be class folders (ham/, spam/, ...), Enron-spam, TREC index,
    SpamAssassin, TSV/CSV, mbox, Maildir, MH or .eml folders, unpacked or
    inside .tar.gz/.tar.bz2/.zip archives; see 'spamkit corpus --help'.
    """


def main(argv=None):
    """Console-script entry point."""
    return cli.main(args=argv, prog_name="spamkit")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
