"""Click parameter types and the options shared by commands that read corpora."""

from __future__ import annotations

import contextlib
import functools
import os

import click

from pathlib import Path

from ..corpus import FORMATS, Corpus
from ..corpus.archives import decompressing_ahead
from ..common.errors import ConfigError
from ..common.labels import normalise_label
from ..common.durable import check_writable
from ..common.names import DEFAULT_RATE, FISHER_MAX_CLUES, FISHER_MIN_DEV, FISHER_PRIOR, FISHER_STRENGTH, TOKENS
from .report import render_unreadable


class OutputPath(click.ParamType):
    """A file the command will write: its folder must exist and be writable, checked when the
    command line is read -- before any work, not after hours of training."""

    name = "file"

    def convert(self, value, param, ctx):
        if Path(value).is_dir():        # a usage error, as click's own paths report it (exit status 2)
            self.fail(f"{value!r} is a directory, not a file name", param, ctx)
        check_writable(value)           # an OutputError: "Error: cannot write ...", exit status 1
        return str(value)


class ClassPathParam(click.ParamType):
    """``NAME=PATH``: a mailbox or folder whose messages all belong to class NAME."""

    name = "NAME=PATH"

    def convert(self, value, param, ctx):
        if isinstance(value, tuple):
            return value
        name, sep, path = value.partition("=")
        if not sep or not name.strip() or not path:
            self.fail(f"expected NAME=PATH, got {value!r}", param, ctx)
        return normalise_label(name), path


class SizeParam(click.ParamType):
    """A number of bytes: ``16M``, ``512K``, ``1G`` or a plain number."""

    name = "size"
    UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}

    def convert(self, value, param, ctx):
        if isinstance(value, int):
            return value
        text = str(value).strip().upper().removesuffix("B")
        try:
            n = int(float(text[:-1]) * self.UNITS[text[-1]]) if text[-1:] in self.UNITS else int(text)
        except ValueError:
            self.fail(f"{value!r} is not a size like 16M, 512K or 1G", param, ctx)
        if n <= 0:
            self.fail(f"{value!r} must be positive", param, ctx)
        return n


#: ``--cost none``: no decision layer, the most probable class
NO_COSTS = "none"


def costs_or_none(cost):
    """What ``--cost`` asks for: a CostMatrix, or None for ``--cost none``."""
    return None if cost == NO_COSTS else cost


class CostsParam(click.ParamType):
    """``fp=100,fn=10[,tp=..,tn=..,unsure=..]``, the path of a cost table for K classes, or ``none``."""

    name = "COSTS"

    def convert(self, value, param, ctx):
        from ..decide.decision import CostMatrix
        if isinstance(value, CostMatrix) or value == NO_COSTS:
            return value
        try:
            if "=" not in value and Path(value).exists():
                return CostMatrix.from_file(value)
            return CostMatrix.parse(value)
        except ConfigError as exc:
            self.fail(str(exc), param, ctx)


class CorpusPath(click.ParamType):
    """A corpus that exists: a file, a folder, or ``ARCHIVE!FOLDER`` inside an archive."""

    name = "PATH"

    def convert(self, value, param, ctx):
        from ..corpus.archives import split_member
        if split_member(value) is not None:
            return value
        return click.Path(exists=True, dir_okay=True, readable=True).convert(value, param, ctx)


class MailboxParam(CorpusPath):
    """A local mailbox that exists (or ``ARCHIVE!FOLDER``), or an ``imap://``/``imaps://`` folder
    (read by ``spamkit learn``)."""

    name = "MAILBOX"

    def convert(self, value, param, ctx):
        if str(value).lower().startswith(("imap://", "imaps://")):
            return value
        return super().convert(value, param, ctx)


def imap_options(func):
    """``--password-command``, ``--ca-file``, ``--insecure``: how to reach IMAP folders."""
    options = [
        click.option("--password-command", default=None, metavar="COMMAND",
                     help="IMAP: a shell command that prints the password (else $SPAMKIT_IMAP_PASSWORD, else "
                          "~/.netrc)."),
        click.option("--ca-file", type=click.Path(exists=True, dir_okay=False), default=None,
                     help="IMAP: verify the server's certificate against this authority (PEM) instead of the "
                          "system's."),
        click.option("--insecure", is_flag=True,
                     help="IMAP: do not verify the server's certificate (a warning is printed)."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def corpus_options(func):
    """``CORPUS...`` plus ``--ham``, ``--spam``, ``--class``, ``--format``, ``--classes``."""
    options = [
        click.argument("corpus", nargs=-1, type=CorpusPath()),
        click.option("--ham", "ham", multiple=True, type=MailboxParam(),
                     help="A mailbox (mbox, Maildir, MH, .eml folder) whose messages are all ham. Repeatable."),
        click.option("--spam", "spam", multiple=True, type=MailboxParam(),
                     help="A mailbox whose messages are all spam. Repeatable."),
        click.option("--class", "extra", multiple=True, type=ClassPathParam(),
                     help="NAME=PATH: a mailbox whose messages all belong to class NAME. Repeatable."),
        click.option("--format", "fmt", type=click.Choice(("auto",) + FORMATS), default="auto",
                     show_default=True, help="Corpus layout; auto detects it from the content."),
        click.option("--classes", default="ham,spam", show_default=True,
                     help="Labels a TSV/CSV may use, comma-separated; 'any' accepts every label."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def open_corpora(corpus, ham, spam, extra, fmt, classes) -> list[Corpus]:
    """The :class:`Corpus` objects named by :func:`corpus_options`; raises ``UsageError`` if none."""
    allowed = None if classes.strip().lower() == "any" else tuple(c for c in classes.split(",") if c.strip())
    specs: list[tuple[str, str | None]] = [(path, None) for path in corpus]
    specs += [(path, "ham") for path in ham] + [(path, "spam") for path in spam]
    specs += [(path, name) for name, path in extra]
    if not specs:
        raise click.UsageError("name at least one corpus (CORPUS, --ham, --spam or --class)")
    seen: dict = {}
    for path, label in specs:
        if str(path).lower().startswith(("imap://", "imaps://")):
            raise click.UsageError(f"{path}: IMAP folders are read by spamkit learn and spamkit filter; for this "
                                   "command copy the mail to a local folder first")
        key = os.path.realpath(path)
        for other, (other_path, first) in seen.items():
            inside = other if key == other or key.startswith(other + os.sep) else (
                key if other.startswith(key + os.sep) else None)
            if inside is None:
                continue
            what = (f"{path}: given twice" if key == other
                    else f"{path} and {other_path}: one is inside the other")
            classes = f"as {first or 'a corpus'} and as {label or 'a corpus'}" if first != label else ""
            raise click.UsageError(f"{what}{', ' + classes if classes else ''}; name each mailbox once (its "
                                   "messages would be read twice)")
        seen[key] = (path, label)
    opened = []
    try:
        with decompressing_ahead([path for path, _ in specs]):
            for path, label in specs:
                opened.append(Corpus(path, format=fmt, label=label, classes=allowed))
    except BaseException:
        for c in opened:
            c.close()
        raise
    return opened


def model_options(func):
    """``--tokens`` and the Robinson/Fisher parameters, shared by ``train`` and ``online``."""
    options = [
        click.option("--tokens", type=click.Choice(TOKENS), default=None,
                     help="[default: mail; words for --model knn] "
                          "mail: every header field as its own token space, case kept, header names, "
                          "Received addresses, URL pieces, digit-run shapes; words: lower-cased words of "
                          "the body and a few header fields."),
        click.option("--strength", type=click.FloatRange(min=0.0), default=FISHER_STRENGTH, show_default=True,
                     help="fisher: Robinson's s, the weight of the prior for rare tokens."),
        click.option("--prior", type=click.FloatRange(0.0, 1.0, min_open=True, max_open=True), default=FISHER_PRIOR,
                     show_default=True, help="fisher: Robinson's x, P(spam) of a token never seen."),
        click.option("--min-dev", type=click.FloatRange(0.0, 0.5, max_open=True), default=FISHER_MIN_DEV,
                     show_default=True, help="fisher: tokens with |f - 0.5| below this are not clues."),
        click.option("--max-clues", type=click.IntRange(min=0), default=FISHER_MAX_CLUES, show_default=True,
                     help="fisher: at most this many clues per message, the strongest (0: all)."),
        click.option("--rate", type=click.FloatRange(min=0.0), default=DEFAULT_RATE, show_default=True,
                     help="logistic: the learning rate of each gradient step; fisher-nb: that of its "
                          "logistic-regression component (0: Fisher + NB only)."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def fisher_params(strength, prior, min_dev, max_clues) -> dict:
    return {"strength": strength, "prior": prior, "min_dev": min_dev, "max_clues": max_clues}


#: ``--context-model``, shared by ``train`` and ``online``
context_model_option = click.option(
    "--context-model", is_flag=True,
    help="fisher-nb: also a byte-level context model per class (PPM-style, order 6) over the first 3,000 "
         "bytes of each raw message (train: --context-bytes), weighed by the stack's combiner with the byte "
         "4-grams: the accurate configuration (online (1-ROCA)% trec06p 0.017, trec07p-dev 0.025; "
         "docs/results.md). Costs: 128 MB of tables in memory, a filter file of 6-11 MB on 5,000 "
         "messages, about twice the default's time per message to classify and 3 times to train.")

#: ``--byte-grams/--no-byte-grams``, shared by ``train`` and ``online``
byte_grams_option = click.option(
    "--byte-grams/--no-byte-grams", default=None,
    help="fisher-nb: an online logistic regression on the byte 4-grams of the first 3,500 bytes of "
         "each raw message (TREC 2007's best filter), weighed by the stack's combiner: on by default. Online "
         "(1-ROCA)% on trec06p 0.034 -> 0.022 (docs/results.md); costs 1 MB of weights, about 0.1 ms more a "
         "message to train and 0.03 ms more to classify (scripts/bench_context.py).")


def cost_option(help: str):
    """``--cost`` (a :class:`CostsParam`), with the command's own help."""
    return click.option("--cost", "cost", type=CostsParam(), default=None, help=help)


def report_option(help: str):
    """``--report`` (an :class:`OutputPath`), with the command's own help."""
    return click.option("--report", "report_path", type=OutputPath(), default=None, help=help)


def json_option(help: str | None = None):
    """``--json``: print the result as JSON instead of text."""
    return click.option("--json", "as_json", is_flag=True, help=help)


#: MODEL, the filter file a command reads (it must exist and be a file)
model_argument = click.argument("model", type=click.Path(exists=True, dir_okay=False))


def folds_options(fn):
    """--folds and --seed of the cross-validating commands (cv, compare, threshold, tune)."""
    fn = click.option("--seed", type=int, default=0, show_default=True)(fn)
    return click.option("--folds", type=click.IntRange(min=2), default=5, show_default=True)(fn)


#: ``--spam-rate``, shared by classify, evaluate, filter and serve
spam_rate_option = click.option(
    "--spam-rate", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=None, metavar="R",
    help="Share of spam where the filter is used, if it differs from the training data's: "
         "P(spam) is corrected by Bayes' rule.")


def jobs_option(fn):
    """--jobs for commands that read mail but train nothing (corpus, filter)."""
    return click.option("--jobs", "-j", type=click.IntRange(min=0), default=0, show_default="0: every core",
                        help="Parse (and classify) in this many worker processes (1: all in this process). "
                             "The results are the same whatever the number.")(fn)


def engine_options(fn):
    """--engine, --scheduler, --partition-size, --ship (the Dask engine, :mod:`spamkit.jobs.distributed`)."""
    options = [
        click.option("--engine", type=click.Choice(["local", "dask"]), default="local", show_default=True,
                     help="dask: parse, tokenize and count on a Dask cluster (pip install 'dask[distributed]'); "
                          "the results equal the local engine's."),
        click.option("--scheduler", default="local", show_default=True, metavar="tcp://HOST:PORT|local[:N]",
                     help="--engine dask: a running 'dask scheduler', or a local cluster of N worker processes."),
        click.option("--partition-size", type=click.IntRange(min=1), default=500, show_default=True,
                     help="--engine dask: messages per task."),
        click.option("--jobs", "-j", type=click.IntRange(min=0), default=0, show_default="0: every core",
                     help="Local engine: parse and tokenize in this many worker processes (1: all in this "
                          "process). The results are the same whatever the number."),
        click.option("--ship", is_flag=True,
                     help="--engine dask: send the mail itself to the workers instead of file names (for "
                          "workers that do not see the corpus at the same path). TSV and CSV corpora are "
                          "always sent."),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def engine_from_options(engine: str, scheduler: str, partition_size: int, ship: bool, jobs: int = 1):
    """The engine the options name (:class:`spamkit.jobs.engine.Engine`): this process, a
    :class:`spamkit.jobs.engines.ProcessEngine` (``--jobs``: worker processes parse and tokenize) or a
    :class:`spamkit.jobs.distributed.DaskEngine` (not yet started: :func:`running` starts it)."""
    if engine != "dask":
        from ..jobs.engines import ProcessEngine, default_jobs
        from ..jobs.engine import Engine
        n = jobs or default_jobs()
        return ProcessEngine(n) if n > 1 else Engine()
    from ..jobs.distributed import DaskEngine
    return DaskEngine(scheduler, partition_size, ship)


@contextlib.contextmanager
def running(engine, progress):
    """Start ``engine`` for the length of a job, its partition count shown by ``progress``; the
    one place where a cluster is started and stopped."""
    engine.status = progress.note
    with engine:
        yield engine


def archives_ahead(command):
    """A command whose compressed corpus archives start decompressing before it imports what it
    needs (:func:`spamkit.corpus.archives.decompressing_ahead`): the decompressors let go of the GIL,
    so the 0.3-0.45 s of importing NumPy, SciPy and the models overlaps them, and opening the
    archives later only indexes them. Put it under the click decorators."""
    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        paths = [*kwargs.get("corpus", ()), *kwargs.get("ham", ()), *kwargs.get("spam", ()),
                 *(path for _, path in kwargs.get("extra", ()))]
        with decompressing_ahead(paths):
            return command(*args, **kwargs)
    return wrapper


#: what ``spamkit train`` imports in the background while it opens its corpora: NumPy and the
#: parts of SciPy the filter needs, most of the command's 0.25-0.3 s of imports, and nothing of
#: spamkit's own (which this thread imports as it goes: two threads importing the same modules
#: in different orders could each wait for the other's lock)
HEAVY_MODULES = ("numpy", "scipy.sparse")
#: NumPy's submodules that nothing ``spamkit train`` runs uses, and that SciPy's import of its
#: array-API layer loads all the same (see :func:`import_without_numpy_extras`); not ``ma``,
#: which ``np.unique`` loads (NumPy 2.4)
NUMPY_EXTRAS = ("f2py", "testing", "polynomial", "ctypeslib", "rec", "char")


def import_without_numpy_extras(name: str, extras=NUMPY_EXTRAS):
    """Import module ``name`` (SciPy's) while NumPy does not name its not-yet-loaded submodules
    ``extras`` among its public names, so that they stay unloaded.

    SciPy (1.15 and later) imports its copy of ``array_api_compat``, whose NumPy namespace is
    made by ``from numpy import *`` and a ``hasattr`` of every name ``dir(numpy)`` gives
    (``array_api_compat/_internal.py``, ``clone_module``); NumPy loads a submodule when its
    name is first looked up (``numpy.__getattr__``), so importing ``scipy.sparse`` loaded
    ``numpy.f2py``, ``numpy.testing`` (and with it ``unittest``), ``numpy.polynomial`` and more:
    0.13-0.20 -> 0.08-0.12 s of SciPy's import here, 50-90 ms less CPU. Within this call only,
    ``numpy.__all__`` and ``numpy.__dir__`` leave them out (and are put back, whatever
    happens); SciPy's array-API namespace for NumPy then lacks those submodules, which the
    array API standard does not have. Nothing changes where NumPy's layout differs (no such
    names, or already loaded) or SciPy is loaded already.
    """
    import importlib
    import sys
    import numpy
    skipped = {n for n in extras if f"numpy.{n}" not in sys.modules}
    public = getattr(numpy, "__all__", None)
    listing = numpy.__dict__.get("__dir__")
    if name in sys.modules or not skipped or not isinstance(public, list) or listing is None:
        return importlib.import_module(name)
    numpy.__all__ = [n for n in public if n not in skipped]
    numpy.__dir__ = lambda: [n for n in listing() if n not in skipped]  # type: ignore[method-assign]  # hidden names, put back below
    try:
        return importlib.import_module(name)
    finally:
        numpy.__all__ = public
        numpy.__dir__ = listing                                            # type: ignore[method-assign]  # the module's own again


@contextlib.contextmanager
def importing_ahead(modules=HEAVY_MODULES):
    """Within the block, ``modules`` are imported by a thread of their own; at its end the thread
    is waited for (no thread is left for a later ``fork``). The imports let go of the GIL while
    they read files, and this thread meanwhile waits for its archives to decompress as it opens
    them (:func:`spamkit.corpus.archives.decompressing_ahead`): ``spamkit train`` forks its workers
    first (they must not hold NumPy), then opens its corpora while this imports. An import that
    fails here fails again where the command imports the module, with the reason."""
    import importlib
    import threading

    def run():
        for name in modules:
            try:
                if name.startswith("scipy"):
                    import_without_numpy_extras(name)
                else:
                    importlib.import_module(name)
            except Exception:                        # noqa: BLE001 -- raised again where it is needed
                return
    thread = threading.Thread(target=run, name="spamkit-imports", daemon=True)
    thread.start()
    try:
        yield
    finally:
        thread.join()


@contextlib.contextmanager
def reading_corpora(corpus, ham, spam, extra, fmt, classes):
    """The corpora of the corpus options, open for the length of a job, then closed with any unreadable
    message named on standard error (:func:`close_corpora`)."""
    corpora = open_corpora(corpus, ham, spam, extra, fmt, classes)
    try:
        yield corpora
    finally:
        close_corpora(corpora)


def close_corpora(corpora) -> None:
    """Close the corpora and name, on standard error, any message they could not read (the run went
    on without it; ``--json`` output lists them under ``corpora``)."""
    for c in corpora:
        c.close()
    for line in render_unreadable([{"path": str(c.path), "skipped": dict(c.stats.skipped),
                                    "unreadable": list(c.stats.unreadable)} for c in corpora]):
        click.echo(line, err=True)
