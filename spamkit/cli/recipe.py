"""``spamkit recipe``: a delivery agent's recipe for this installation (absolute paths)."""

from __future__ import annotations

import click

from ..mail.recipes import KINDS, recipe
from . import cli
from .params import model_argument
from .progress import verbosity_options


@cli.command("recipe")
@verbosity_options
@click.argument("kind", type=click.Choice(KINDS))
@model_argument
@click.option("--junk", default="Junk", show_default=True, help="The folder spam is filed into.")
@click.option("--unsure", default="Review", show_default=True, help="The folder unsure mail is filed into.")
@click.option("--spamd", default="127.0.0.1:783", show_default=True, metavar="HOST:PORT",
              help="sieve: where spamkit serve answers spamc.")
def recipe_command(kind, model, junk, unsure, spamd):
    """Print a procmail or Dovecot Sieve recipe that filters mail with MODEL.

    The recipe runs this spamkit by its absolute path (a delivery agent's PATH does not hold a
    virtual environment's bin, nor ~/.local/bin) and files spam and unsure mail apart:
    procmail through pipe mode, Dovecot through spamc and spamkit serve (its mail processes
    run as each user). Whatever fails, the message is delivered unchanged.

    \b
    Examples:
      spamkit recipe procmail ~/.spamkit/mine.spamkit >> ~/.procmailrc
      spamkit recipe sieve /var/lib/spamkit/site.spamkit   # the script, the server, Dovecot's settings
    """
    click.echo(recipe(kind, model, junk=junk, unsure=unsure, spamd=spamd), nl=False)
