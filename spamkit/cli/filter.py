"""``spamkit filter``: tag and move the messages of mailboxes, or filter one message on a pipe."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

import click

from ..common.durable import MAX_MESSAGE_FILE
from ..common.errors import counted
from ..mail import MailFilter, model_id_of, recover_mbox, tag
from ..common.passthrough import VERDICT_STATUS, guard
from .report import guard_text, to_json
from . import cli
from .params import (OutputPath, SizeParam, cost_option, costs_or_none, imap_options, jobs_option, json_option,
                     spam_rate_option)
from .progress import Progress, verbosity, verbosity_options
from .status import ExitStatus


def loaded_filter(model, cost, spam_rate=None):
    """The filter file ``model`` loaded in full, deciding with ``cost`` (a --cost value, or None for the
    file's own costs) and ``spam_rate``; refused if it has no "spam" class."""
    from ..filterfile.spamfilter import SpamFilter
    spam_filter = SpamFilter.load(model)
    if cost is not None:
        spam_filter.set_costs(costs_or_none(cost))
    spam_filter.set_spam_rate(spam_rate)
    spam_filter.spam_column     # noqa: B018 -- the property refuses a filter without a "spam" class: it cannot filter mail
    return spam_filter


def _load_lean(model, cost, spam_rate=None):
    """The filter as a :class:`spamkit.mail.lean.LeanFilter` (the standard library only), or None
    when the file needs the full path."""
    from ..mail.lean import lean_filter
    lean = lean_filter(model)
    if lean is None:
        return None
    if cost is not None:
        matrix = costs_or_none(cost)
        if matrix is None:
            lean.costs = None
        else:
            lean.set_costs(matrix.costs.tolist(), matrix.classes, matrix.decisions)
    lean.set_spam_rate(spam_rate)
    return lean


def _pipe(model, cost, spam_rate=None, exit_zero: bool = False) -> int:
    """One message from standard input to standard output, tagged; never lost, whatever happens.

    Whatever goes wrong after the message is read (the parser, the filter file, the
    model, memory, a signal) writes the message out unchanged with status 3
    (:func:`spamkit.common.passthrough.guard`). Counting filters over a vocabulary (the default
    filter among them) are scored by :mod:`spamkit.mail.lean` without NumPy, SciPy or
    scikit-learn, which is most of the start-up; the rest load in full.
    """
    def work(raw: bytes) -> tuple[int, bytes]:
        from ..mail.lean import lean_failed
        spam_filter = _load_lean(model, cost, spam_rate)
        try:
            verdict, p = spam_filter.verdict(raw) if spam_filter is not None else (None, None)
        except Exception as exc:                     # noqa: BLE001 -- the full route answers instead
            lean_failed(exc)
            spam_filter = None
        if spam_filter is None:
            spam_filter = loaded_filter(model, cost, spam_rate)
            verdict, p = spam_filter.verdict(raw)
        assert verdict is not None                   # one of the two routes decided
        return (0 if exit_zero else VERDICT_STATUS[verdict],
                tag(raw, verdict, p, model_id_of(model), spam_filter.spam_threshold()))

    return guard(sys.stdin.buffer.read(), work, "spamkit filter", restore_signals=True)


def _run_imap(runner, addresses, password_command, ca_file, insecure, watch=False, command_seconds=None):
    """Run an ImapFilter over IMAP folders, one connection each; a lost connection is an error
    that names the folder and says that nothing was lost (with ``watch``: retried). Literals
    over the runner's ``max_size`` are refused by the connection itself."""
    max_size = runner.max_size
    import imaplib

    import imapclient

    from ..mail.failures import FilterError
    from ..mail.imap import ImapURL, connect, password
    if insecure:
        click.echo("warning: --insecure: the IMAP server's certificate is not checked; anyone on the way can "
                   "read your password and mail", err=True)
    if watch:
        url = ImapURL.parse(addresses[0])
        secret = password(url, password_command)
        connect(url, secret, insecure=insecure, ca_file=ca_file, max_size=max_size,
                command_seconds=command_seconds).logout()   # wrong settings stop here, at once
        click.echo(f"spamkit filter: watching {url} (Ctrl-C or SIGTERM stops)", err=True)
        runner.watch(lambda: connect(url, secret, insecure=insecure, ca_file=ca_file, max_size=max_size,
                                     command_seconds=command_seconds), url,
                     log=lambda text: click.echo(f"spamkit filter: {text}", err=True))
        return runner.summary
    for address in addresses:
        url = ImapURL.parse(address)
        client = connect(url, password(url, password_command), insecure=insecure, ca_file=ca_file,
                         max_size=max_size, command_seconds=command_seconds)
        try:
            runner.run(client, url)
        except (OSError, imaplib.IMAP4.abort, imaplib.IMAP4.error, imapclient.exceptions.IMAPClientError) as exc:
            raise FilterError(f"{url}: the connection failed during the run ({type(exc).__name__}: {exc}); no "
                              "message is lost: messages already judged keep their keywords, the rest were "
                              "not touched, and a move cut short is finished by the next run; run again to "
                              "continue") from None
        finally:
            try:
                client.logout()
            except Exception:                          # noqa: BLE001 -- the connection may be gone already
                pass
    for note in runner.notes:
        click.echo(f"note: {note}", err=True)
    return runner.summary


@cli.command("filter")
@verbosity_options
# not exists=True: in pipe mode a missing filter file must still pass the message through
@click.argument("model", type=click.Path(dir_okay=False))
@click.argument("mailboxes", nargs=-1, required=True)
@click.option("--tag", "do_tag", is_flag=True,
              help="Add X-Spam-Status, X-Spam-Probability, X-Spamkit-Version and X-Spamkit-Model to each message.")
@click.option("--move-spam-to", type=click.Path(), default=None, metavar="MAILBOX",
              help="Move spam here (a mailbox of the same format; created if missing).")
@click.option("--move-unsure-to", type=click.Path(), default=None, metavar="MAILBOX",
              help="Move messages the decision layer calls unsure here.")
@cost_option("Decide with these costs instead of the filter's (e.g. fp=100,fn=10,unsure=2).")
@click.option("--dry-run", is_flag=True, help="Change nothing; list what would happen to each message.")
@click.option("--force", is_flag=True, help="Score messages already tagged by this filter again.")
@click.option("--wait", type=click.FloatRange(min=0), default=30.0, show_default=True,
              help="Seconds to wait for another run that holds a mailbox.")
@click.option("--summary", "summary_file", type=OutputPath(), default=None,
              help="Also write the run's summary here as JSON.")
@click.option("--recover", is_flag=True,
              help="Only finish or undo interrupted runs on these mbox files, then stop.")
@click.option("--exit-zero", is_flag=True,
              help="Pipe mode: exit 0 for spam, ham and unsure alike (3 stays an error), as bogofilter -e, for "
                   "delivery agents that take any other status as a failure (procmail's w flag, Sieve filters).")
@imap_options
@click.option("--watch", is_flag=True,
              help="IMAP: then stay connected and filter new mail as it arrives (IDLE), until Ctrl-C or SIGTERM; "
                   "a lost connection is retried with back-off.")
@spam_rate_option
@json_option("Print the summary as JSON.")
@click.option("--sync", type=click.Choice(["filesystem", "files"]), default="filesystem", show_default=True,
              help="Maildir/MH: make each group of 64 changes durable with one syncfs of the file system (Linux 5.8+, "
                   "ext4/XFS/Btrfs/tmpfs; elsewhere as 'files'), or with an fsync per changed file and folder ('files': writes back nothing "
                   "else, for a disk busy with other writers).")
@click.option("--imap-timeout", type=click.FloatRange(min=1.0), default=120.0, show_default=True, metavar="SECONDS",
              help="IMAP: seconds a command may take, the server's whole answer included (a server that answers "
                   "a byte at a time is cut off).")
@click.option("--max-size", type=SizeParam(), default=str(MAX_MESSAGE_FILE >> 20) + "M", show_default=True,
              help="Maildir, MH and IMAP: a larger message is left where it is, untouched, and listed as not "
                   "filtered (a 2 GB file is not read into memory).")
@jobs_option
def filter_command(model, mailboxes, do_tag, move_spam_to, move_unsure_to, cost, dry_run, force, wait,
                   summary_file, recover, exit_zero, password_command, ca_file, insecure, watch, spam_rate, as_json,
                   sync, imap_timeout, max_size, jobs):
    """Filter mailboxes (mbox, Maildir, MH, or a folder on an IMAP server) with a trained filter: tag and/or move spam.

    \b
    Examples:
      spamkit filter mine.spamkit ~/Mail/INBOX --tag --move-spam-to ~/Mail/Junk
      spamkit filter mine.spamkit ~/Maildir --move-spam-to ~/Maildir/.Junk --dry-run
      spamkit filter mine.spamkit imaps://me@mail.example.org/INBOX --tag --move-spam-to Junk
      spamkit filter mine.spamkit - < message.eml > tagged.eml    # pipe mode, for procmail etc.

    On IMAP the verdict is a keyword ($Junk, $NotJunk, $SpamkitUnsure, and $SpamkitP97 for
    P(spam) 0.97), spam moves with the server's MOVE, messages are read without marking
    them seen, and a message already judged (by spamkit or by you) is left alone. The
    password comes from --password-command, $SPAMKIT_IMAP_PASSWORD or ~/.netrc.

    A message is never lost or duplicated: Maildir and MH changes are atomic renames; an
    mbox is rewritten to temporary files and committed through a journal, which the next
    run (or --recover) completes if a run is killed. Pipe mode ("-") reads one message on
    standard input, writes it tagged to standard output and exits 0 for spam, 1 for ham,
    2 for unsure and 3 on an error (the message is then written out unchanged).
    """
    if mailboxes == ("-",):
        sys.exit(_pipe(model, cost, spam_rate, exit_zero))
    if "-" in mailboxes:
        raise click.UsageError("'-' (pipe mode) cannot be combined with mailboxes")
    if recover:
        for box in mailboxes:
            if Path(box).is_dir():
                click.echo(f"{box}: nothing to recover (Maildir and MH changes are atomic)")
                continue
            done = recover_mbox(Path(box))             # a missing mbox may still have a run's files
            click.echo(done or f"{box}: nothing to recover")
        return
    from ..mail.imap import is_imap_url
    imap = [m for m in mailboxes if is_imap_url(m)]
    if imap and len(imap) != len(mailboxes):
        raise click.UsageError("IMAP folders and local mailboxes cannot be filtered in the same run")
    if watch and len(imap) != 1:
        raise click.UsageError("--watch watches one IMAP folder (give one imaps://USER@HOST/FOLDER)")
    if not (do_tag or move_spam_to or move_unsure_to or dry_run):
        raise click.UsageError("nothing to do: give --tag, --move-spam-to, --move-unsure-to or --dry-run")
    spam_filter = loaded_filter(model, cost, spam_rate)
    move = {"spam": move_spam_to, "unsure": move_unsure_to}
    if move_unsure_to and (spam_filter.costs is None or "unsure" not in spam_filter.costs.decisions):
        raise click.UsageError("--move-unsure-to needs a decision layer with an unsure decision "
                               "(train or filter with --cost fp=...,fn=...,unsure=...)")
    previous = previous_term = None
    try:
        with Progress("filtering") as progress:
            def listing(ref, verdict, p, tagged, moved_to):
                actions = (["tag"] if tagged else []) + ([f"move to {moved_to}"] if moved_to is not None else [])
                verb = "would " if dry_run else ""
                click.echo(f"{ref}\t{verdict}\t{p:.6f}\t{verb + ', '.join(actions) if actions else 'unchanged'}")

            on_message = listing if (dry_run or verbosity() > 0) and not as_json else None
            if imap:
                from ..mail.imap import ImapFilter
                runner = ImapFilter(spam_filter.stream_verdict, tag=do_tag, move=move, dry_run=dry_run, force=force,
                                    max_size=max_size,
                                    progress=progress.step, on_message=on_message)
            else:
                from ..jobs.engines import default_jobs
                from ..mail.mailboxes import count_messages
                counts = [count_messages(m) for m in mailboxes] if progress.enabled else [None]
                known = None not in counts
                progress.expect(sum(n for n, _ in counts) if known else None,
                                exact=known and all(exact for _, exact in counts))
                runner = MailFilter(spam_filter.stream_verdict, model_id_of(model), tag=do_tag, move=move, dry_run=dry_run,
                                    force=force, wait=wait, progress=progress.step, on_message=on_message,
                                    threshold=spam_filter.spam_threshold(), jobs=jobs or default_jobs(),
                                    score=spam_filter.score, decide=spam_filter.verdict_from, sync=sync,
                                    max_size=max_size)

            def stop(signum, frame):
                runner.stop_requested = True      # finish the current message (IMAP: batch), then stop cleanly

            previous = signal.signal(signal.SIGINT, stop)
            previous_term = signal.signal(signal.SIGTERM, stop) if watch else None
            summary = (_run_imap(runner, imap, password_command, ca_file, insecure, watch, imap_timeout) if imap
                       else runner.run(mailboxes))
        # the handlers stay until the summary is out: a Ctrl-C that comes after the last message
        # has nothing left to stop and must not cut the report short
        _report_filter(summary.as_dict(), spam_filter, summary_file, as_json, dry_run)
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
        if previous_term is not None:
            signal.signal(signal.SIGTERM, previous_term)


def _report_filter(result: dict, spam_filter, summary_file, as_json: bool, dry_run: bool) -> None:
    """A filter run's summary: to ``--summary FILE``, and as JSON or text on standard output;
    exits with the run's status."""
    if spam_filter.guard is not None:
        result["guarded"] = {k: v for k, v in spam_filter.guard.counts.items() if k != "messages"}
    if summary_file:
        with open(summary_file, "w", encoding="utf-8") as fh:
            json.dump(result, fh, indent=2)
    if as_json:
        click.echo(to_json(result))
        if result["interrupted"]:
            sys.exit(ExitStatus.INTERRUPTED)
        if result["failed"]:
            sys.exit(ExitStatus.ERROR)
        return
    verb = "would be" if dry_run else "were"
    counts = ", ".join(f"{v} {n}" for v, n in result["verdicts"].items())
    rate = result["messages_per_second"]
    click.echo(f"{counted(result['messages'], 'message')} in {result['seconds']:.2f} s"
               f"{f' ({rate:.0f}/s)' if rate else ''}: {counts}")
    if result["tagged"]:
        click.echo(f"  {result['tagged']} {verb} tagged")
    for dest, n in result["moved"].items():
        click.echo(f"  {n} {verb} moved to {dest}")
    if result["already_tagged"]:
        click.echo(f"  {result['already_tagged']} already tagged by this filter (kept their verdict; --force rescores)")
    guarded = result.get("guarded", {})
    if guarded.get("spam_to_unsure"):
        click.echo(f"  judged unsure rather than spam, the mail being unlike the training mail: {guard_text(guarded)}; "
                   "if this is your mail now, train on it or teach the filter with spamkit learn")
    for note in result["recovered"]:
        click.echo(f"  recovered: {note}")
    if result["failed"]:
        click.echo(f"  {len(result['failed'])} could not be filtered and were left as they were:")
        for failure in result["failed"][:20]:
            click.echo(f"    {failure['message']}: {failure['error']}")
        if len(result["failed"]) > 20:
            click.echo(f"    ... and {len(result['failed']) - 20} more (--json or --summary lists them all)")
    if result["interrupted"]:
        click.echo("  interrupted: stopped between messages; the rest were left as they were")
        sys.exit(ExitStatus.INTERRUPTED)
    if result["failed"]:
        sys.exit(ExitStatus.ERROR)
