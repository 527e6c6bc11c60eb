"""The ``spamkit`` command (the console script, and ``python -m spamkit``): pipe mode is guarded
before anything heavy is imported.

``spamkit filter MODEL -`` reads the message first and runs the whole command line —
imports, option parsing, the filter — under :func:`spamkit.common.passthrough.guard`, so that
neither a broken installation (numpy or scikit-learn failing to import), a bad option,
nor anything the message or the filter file does can lose the message. Every other
command goes straight to :mod:`spamkit.cli`.

The plain form ``spamkit filter MODEL -`` (no options), what a delivery agent runs once per
message, does not even load the command line: a filter that :mod:`spamkit.mail.lean` scores
(the default filter among them) is read and applied with the standard library alone, and
any other filter goes through :mod:`spamkit.cli` as the options would. Same verdict, same
tags, same exit status; ``tests/test_lean.py`` checks both routes on the same messages.
"""

from __future__ import annotations

import io
import os
import sys

from .common.passthrough import guard

#: options of the ``spamkit`` group itself, which may stand before the command name
GROUP_FLAGS = ("--traceback",)


def is_pipe_mode(args: list[str]) -> bool:
    """True for ``[--traceback] filter ... -`` without ``--help``.

    >>> is_pipe_mode(["filter", "m.spamkit", "-"]), is_pipe_mode(["filter", "m.spamkit", "INBOX", "--tag"])
    (True, False)
    >>> is_pipe_mode(["--traceback", "filter", "--cost", "fp=9,fn=1", "m.spamkit", "-"])
    True
    """
    rest = list(args)
    while rest and rest[0] in GROUP_FLAGS:
        rest.pop(0)
    return (len(rest) >= 2 and rest[0] == "filter" and "-" in rest[1:]
            and not {"-h", "--help", "--version"} & set(rest))


def _run_command_line(args: list[str], raw: bytes) -> tuple[int, bytes]:
    """The ``spamkit`` command on ``raw`` as standard input, its standard output captured."""
    stdin, stdout = sys.stdin, sys.stdout
    captured = io.BytesIO()
    sys.stdin = io.TextIOWrapper(io.BytesIO(raw), encoding="utf-8", errors="surrogateescape")
    sys.stdout = io.TextIOWrapper(captured, encoding="utf-8", errors="surrogateescape", write_through=True)
    try:
        from .cli import cli

        try:
            status = cli.main(args=args, prog_name="spamkit", standalone_mode=False)
        except SystemExit as stop:
            status = stop.code
        sys.stdout.flush()
        return (status if isinstance(status, int) else 1), captured.getvalue()
    finally:
        sys.stdin, sys.stdout = stdin, stdout


def plain_pipe(args: list[str]) -> bool:
    """``filter [--exit-zero] MODEL -``: the forms the lean path answers without the command line.

    >>> plain_pipe(["filter", "m.spamkit", "-"]), plain_pipe(["filter", "--exit-zero", "m.spamkit", "-"])
    (True, True)
    >>> plain_pipe(["filter", "--cost", "fp=9,fn=1", "m.spamkit", "-"])
    False
    """
    if len(args) < 3 or args[0] != "filter" or args[-1] != "-":
        return False
    middle = args[1:-1]
    options = [a for a in middle if a.startswith("-")]
    return len(middle) - len(options) == 1 and set(options) <= {"--exit-zero"} and len(options) == len(set(options))


def _lean_pipe(args: list[str], raw: bytes) -> tuple[int, bytes]:
    """``spamkit filter MODEL -`` on ``raw`` through :mod:`spamkit.mail.lean`, or the command line
    when the filter needs the full path."""
    from .mail.lean import lean_failed, lean_filter
    from .mail.tags import model_id_of, tag
    from .common.passthrough import VERDICT_STATUS

    model = next(a for a in args[1:-1] if not a.startswith("-"))
    lean = lean_filter(model, with_sha256=True)
    if lean is None:
        return _run_command_line(args, raw)
    try:
        verdict, p = lean.verdict(raw)
    except Exception as exc:                             # noqa: BLE001 -- the full route answers instead
        # the lean route is a second implementation: a failure of its own must not let a message
        # through untagged that the full route scores (signals and exits still go to the guard)
        lean_failed(exc)
        previous = os.environ.get("SPAMKIT_LEAN")
        os.environ["SPAMKIT_LEAN"] = "0"
        try:
            return _run_command_line(args, raw)
        finally:
            if previous is None:
                os.environ.pop("SPAMKIT_LEAN", None)
            else:
                os.environ["SPAMKIT_LEAN"] = previous
    status = 0 if "--exit-zero" in args else VERDICT_STATUS[verdict]
    return status, tag(raw, verdict, p, model_id_of(model, lean.sha256), lean.spam_threshold())


def main(argv=None) -> int:
    """Console-script entry point."""
    args = sys.argv[1:] if argv is None else list(argv)
    one_blas_thread(os.environ)
    if is_pipe_mode(args):
        raw = sys.stdin.buffer.read()
        run = _lean_pipe if plain_pipe(args) else _run_command_line
        try:
            return guard(raw, lambda message: run(args, message), "spamkit filter")
        finally:
            _quick_exit()                                # one-shot pipe mode: 5 ms of its ~90
    with archives_early(args):
        from .cli import main as cli_main

        try:
            return cli_main(args)
        finally:
            _quick_exit()


#: the commands whose compressed corpus archives decompress ahead (``spamkit.cli.params.archives_ahead``)
ARCHIVE_COMMANDS = ("train", "evaluate")


def archive_arguments(args: list[str]) -> list[str]:
    """The arguments of ``train`` or ``evaluate`` that name existing files: what may be corpus
    archives (an option's value among them, which opening then tells apart by its content);
    none for other commands, or with ``--help``.

    >>> archive_arguments(["info", __file__]), archive_arguments(["train", "--help", __file__])
    ([], [])
    >>> archive_arguments(["--traceback", "train", "-o", "no-such-file", __file__]) == [__file__]
    True
    """
    rest = list(args)
    while rest and rest[0] in GROUP_FLAGS:
        rest.pop(0)
    if not rest or rest[0] not in ARCHIVE_COMMANDS or {"-h", "--help"} & set(rest):
        return []
    return [a for a in rest[1:] if not a.startswith("-") and os.path.isfile(a)]


def archives_early(args: list[str]):
    """For ``train`` and ``evaluate``, start decompressing the compressed tar archives among the
    arguments now, before the command line (click, the commands' modules: 40-50 ms) is imported;
    :func:`spamkit.corpus.archives.decompressing_ahead` is what ``archives_ahead`` uses later, which
    finds them started. Opening a ``.tar.gz`` waits for its decompression (its messages are
    listed in the archive's order, the index first), and the worker processes wait for the
    listing: trec07p-dev's first messages reached them at 0.19-0.25 s of a 1.0-1.3 s run.
    Nothing else changes: an argument that is no archive is left alone, a damaged one is
    reported when the command opens it, and one the command never opens is closed here."""
    paths = archive_arguments(args)
    if not paths:
        import contextlib
        return contextlib.nullcontext()
    from .corpus.archives import decompressing_ahead
    return decompressing_ahead(paths)


#: the variables by which the BLAS libraries NumPy and SciPy may load read their thread count
#: when they load (OpenBLAS, including the scipy-openblas builds of the NumPy and SciPy wheels;
#: Intel's MKL)
BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def one_blas_thread(environ) -> None:
    """Set the BLAS libraries to one thread, where the user did not set them: before NumPy loads.

    spamkit's commands work on sparse matrices, which SciPy multiplies without BLAS, and use
    both cores through their own worker processes (``--jobs``) and, in the k-nearest-neighbour
    search, their own threads, each with one BLAS thread (``threadpool_limits``). A BLAS pool
    of one thread per core only got in their way: OpenBLAS starts its threads when NumPy is
    imported (and again for SciPy's own copy) and they spin waiting for work, on the cores
    the worker processes need. Measured in turns (``spamkit train`` on trec07p-dev, two jobs,
    8 pairs, medians): the command's CPU 2.43 -> 2.32 s, its time the same within noise (1.49
    vs 1.51 s); ``import numpy`` alone 0.15 -> 0.07 s of CPU. A value the user set is kept.

    >>> env = {"MKL_NUM_THREADS": "4"}; one_blas_thread(env); sorted(env.items())
    [('MKL_NUM_THREADS', '4'), ('OPENBLAS_NUM_THREADS', '1')]
    """
    for name in BLAS_THREAD_VARIABLES:
        environ.setdefault(name, "1")


def _quick_exit() -> None:
    """Before the interpreter's shutdown: move every object into the collector's permanent
    generation (``gc.freeze``), so that its final collections do not walk the run's millions of
    objects only to find nothing to free (after ``spamkit filter --dry-run`` over 10,000
    messages: 0.10-0.13 s from the command's end to the process's, 0.03-0.04 s with this; an
    ``os._exit`` took 0.01 s but skips the ``atexit`` handlers). Shutdown still runs every
    ``atexit`` handler and flushes and closes the standard streams; what it no longer does is
    look for reference cycles, which a process that is ending need not free."""
    import gc
    gc.freeze()


if __name__ == "__main__":
    sys.exit(main())
