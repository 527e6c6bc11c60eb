"""``spamkit info``: describe a filter file without loading its model."""

from __future__ import annotations

import click

from ..common.errors import ModelFormatError
from .report import render_info, to_json
from . import cli
from .params import json_option, model_argument
from .progress import verbosity_options


@cli.command("info")
@verbosity_options
@model_argument
@json_option("Print the whole manifest as JSON.")
def info_command(model, as_json):
    """Describe a filter file: model, classes, features, analyzer, training corpus."""
    from ..filterfile.manifest import read_manifest
    manifest = read_manifest(model)
    try:
        text = to_json(manifest) if as_json else render_info(manifest, model)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        raise ModelFormatError(f"{model}: damaged manifest ({type(exc).__name__}: {exc})") from None
    click.echo(text)
