"""The ``spamkit`` command line: click wiring only, no arithmetic and no file formats.

Every :class:`~spamkit.errors.SpamkitError` becomes one ``Error: ...`` line
on stderr and exit status 1; ``--traceback`` shows the full trace instead.
"""

from __future__ import annotations

import sys

import click

from .. import __version__
from ..errors import SpamkitError
from .status import ExitStatus


class SpamkitGroup(click.Group):
    """The one place where spamkit exceptions become "Error: ..." and exit status 1."""

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
def cli(traceback):
    """spamkit: train, evaluate and run text classifiers and spam filters.

    Corpora can be class folders (ham/, spam/, ...), Enron-spam, TREC index,
    SpamAssassin, TSV/CSV, mbox, Maildir, MH or .eml folders, unpacked or
    inside .tar.gz/.tar.bz2/.zip archives; see 'spamkit corpus --help'.
    """


def main(argv=None):
    """Console-script entry point."""
    return cli.main(args=argv, prog_name="spamkit")


from . import corpus as _corpus  # noqa: E402,F401  (registers the commands)
from . import train as _train  # noqa: E402,F401
from . import filter as _filter  # noqa: E402,F401

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
