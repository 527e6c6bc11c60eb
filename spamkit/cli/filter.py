"""``spamkit filter``: tag and move the messages of mailboxes, or filter one message on a pipe."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import click

from ..corpus import iter_corpora
from ..common.durable import MAX_MESSAGE_FILE
from ..common.errors import counted
from ..mail import MailFilter, model_id_of, recover_mbox, tag
from ..common.passthrough import VERDICT_STATUS, guard
from .report import guard_text, to_json
from ..mail.serve.listen import AllowList, tcp_listener, unix_listener
from ..mail.serve.pool import FilterCache, Workers, log
from ..mail.serve.server import MAX_CLIENTS, MAX_MESSAGE, MEMORY_BUDGET, TIMEOUT, ServeLoop
from ..mail.serve.wire import SpamkitProtocol
from . import cli
from .params import (CostsParam, OutputPath, SizeParam, close_corpora, corpus_options, costs_or_none, imap_options,
                     jobs_option, open_corpora, spam_rate_option)
from .progress import Progress, verbosity, verbosity_options
from .status import ExitStatus



def _load(model, cost, spam_rate=None):
    from ..filterfile.spamfilter import SpamFilter
    spam_filter = SpamFilter.load(model)
    if cost is not None:
        spam_filter.set_costs(costs_or_none(cost))
    spam_filter.set_spam_rate(spam_rate)
    spam_filter.spam_column     # noqa: B018 -- the property refuses a filter without a "spam" class: it cannot filter mail
    return spam_filter


def _taught_filter(site_filter, taught: str, site_id: str):
    """The loaded site filter with the messages a user taught (``taught``, :mod:`spamkit.mail.serve.taught`)
    learned on top, in the order taught; its id names both. The site filter itself is not
    changed: the user's filter shares its vocabulary, analyzer and decision layer and has copies
    of what learning changes (:meth:`SpamFilter.learning_copy`: the model, the side models, the
    learned keys, the guard, seen columns) -- a few MB where loading the whole file again took
    55 MB and 0.4 s for a trec06p-sized filter."""
    from ..corpus.base import LabelledMessage
    from ..jobs.learn import learn_messages
    from ..mail.serve.taught import read_taught
    spam_filter = site_filter.learning_copy()
    entries = read_taught(taught)
    learn_messages(spam_filter, [LabelledMessage(f"taught:{i}", label, raw, f"{taught}#{i + 1}")
                                 for i, (label, raw) in enumerate(entries)])
    spam_filter.model_id = f"{site_id}+{os.path.basename(taught)}:{len(entries)}"
    if spam_filter.guard is not None:
        spam_filter.guard.reset()
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
            spam_filter = _load(model, cost, spam_rate)
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
@click.option("--cost", type=CostsParam(), default=None,
              help="Decide with these costs instead of the filter's (e.g. fp=100,fn=10,unsure=2).")
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
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
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
    spam_filter = _load(model, cost, spam_rate)
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


@cli.command("learn")
@verbosity_options
@click.argument("model", type=click.Path(exists=True, dir_okay=False))
@corpus_options
@click.option("--corrections", default=None, metavar="IMAP-FOLDER",
              help="Learn what you corrected on an IMAP server: messages you moved out of Junk into this folder "
                   "(ham) and into Junk (spam), for a filter that runs --tag --move-spam-to Junk.")
@click.option("--junk", default="Junk", show_default=True, metavar="FOLDER",
              help="The Junk folder of --corrections, on the same server.")
@imap_options
@click.option("--forget", is_flag=True, help="Remove these messages' contribution instead (exactly for counts; "
              "a logistic-regression component takes a step back, approximately).")
@click.option("--on-error", is_flag=True, help="Learn only the messages the filter gets wrong now.")
@click.option("--json", "as_json", is_flag=True)
def learn_command(model, corpus, ham, spam, extra, fmt, classes, corrections, junk, password_command, ca_file,
                  insecure, forget, on_error, as_json):
    """Teach a trained filter from corrected folders, like sa-learn or bogofilter -s/-n.

    \b
    Examples:
      spamkit learn mine.spamkit --spam ~/Mail/Junk-missed --ham ~/Mail/Not-junk
      spamkit learn mine.spamkit --spam ~/Mail/Junk --on-error
      spamkit learn mine.spamkit --ham ~/Mail/wrongly-learned --forget
      spamkit learn mine.spamkit --spam imaps://me@mail.example.org/Junk
      spamkit learn mine.spamkit --corrections imaps://me@mail.example.org/INBOX --junk Junk

    Each learned message is remembered by a hash of its content (spamkit's tags excluded):
    the same message is never learned twice, a message learned with the other class is
    moved to this one, and --forget takes back what learning added (exactly for the counting
    models; a logistic-regression component approximately). An IMAP folder is read from
    where the last run stopped (its UIDVALIDITY and highest UID are kept in the filter file).
    The filter file is replaced atomically, under a lock that spamkit serve's TELL shares.
    """
    import itertools

    from ..common.durable import filter_lock
    from ..jobs.learn import learn_messages
    from ..mail.imap import ImapURL, connect, is_imap_url, password
    from ..mail.imaplearn import Corrections, imap_messages
    from ..filterfile.spamfilter import SpamFilter
    imap = {label: [ImapURL.parse(u) for u in urls if is_imap_url(u)] for label, urls in (("ham", ham), ("spam", spam))}
    local_ham = tuple(h for h in ham if not is_imap_url(h))
    local_spam = tuple(s for s in spam if not is_imap_url(s))
    if corrections is not None and not is_imap_url(corrections):
        raise click.BadParameter("expected an imaps://USER@HOST/FOLDER address", param_hint="--corrections")
    if corrections and forget:
        raise click.UsageError("--corrections learns what you corrected; it does not combine with --forget")
    local = bool(corpus or local_ham or local_spam or extra)
    if not (local or imap["ham"] or imap["spam"] or corrections):
        raise click.UsageError("name at least one corpus (CORPUS, --ham, --spam, --class or --corrections)")
    if insecure and (imap["ham"] or imap["spam"] or corrections):
        click.echo("warning: --insecure: the IMAP server's certificate is not checked", err=True)
    clients: dict = {}

    def client_for(url):
        key = (url.secure, url.user, url.host, url.port)
        if key not in clients:
            clients[key] = connect(url, password(url, password_command), insecure=insecure, ca_file=ca_file)
        return clients[key]

    corpora = open_corpora(corpus, local_ham, local_spam, extra, fmt, classes) if local else []
    fixed = None
    try:
        # read, learn and write back under the filter's lock: a spamd TELL or another learn waits
        with filter_lock(model), Progress("learning") as progress:
            spam_filter = SpamFilter.load(model)
            seen_before = {k: list(v) for k, v in spam_filter.imap_seen.items()}
            sources = [iter_corpora(corpora)] if corpora else []
            for label, urls in imap.items():
                for url in urls:
                    sources.append(imap_messages(client_for(url), url, label,
                                                 None if forget else spam_filter.imap_seen))
            fixes = Corrections(client_for(ImapURL.parse(corrections)), ImapURL.parse(corrections), junk) \
                if corrections else None
            if fixes is not None:
                sources.append(fixes.messages())

            def listing(source, what):
                click.echo(f"{source}\t{what}")
            report = _learn_guarded(learn_messages, spam_filter, itertools.chain(*sources), forget, on_error,
                                    progress.step, listing if verbosity() > 0 and not as_json else None)
            # the file is rewritten only for a change (where the reading of IMAP folders got to is one)
            changed = bool(sum(report.learned.values()) + sum(report.forgotten.values())
                           or spam_filter.imap_seen != seen_before)
            if changed:
                spam_filter.save(model)
            if fixes is not None:
                fixed = fixes.commit()
    finally:
        close_corpora(corpora)
        for client in clients.values():
            try:
                client.logout()
            except Exception:                          # noqa: BLE001 -- the connection may be gone already
                pass
    result = report.as_dict()
    if fixed is not None:
        result["corrections"] = fixed
    if as_json:
        click.echo(to_json(result))
        return
    if forget:
        done = ", ".join(f"{k} {v}" for k, v in result["forgotten"].items()) or "nothing"
        click.echo(f"forgot {done}; {result['not_learned_before']} were never learned")
    else:
        done = ", ".join(f"{k} {v}" for k, v in result["learned"].items()) or "nothing"
        click.echo(f"learned {done} ({result['relabelled']} moved from the other class); "
                   f"{result['already_learned']} already learned"
                   + (f", {result['skipped_correct']} already classified right" if on_error else ""))
    if fixed is not None:
        click.echo(f"  corrections: {fixed['ham']} moved out of {junk} (ham), {fixed['spam']} moved into it (spam)")
    if changed:
        click.echo(f"filter written to {model} ({counted(len(spam_filter.learned), 'message')} learned in all)")
    else:
        click.echo(f"nothing changed: {model} left as it was ({counted(len(spam_filter.learned), 'message')} "
                   "learned in all)")


def _learn_guarded(learn_messages, spam_filter, messages, forget, on_error, progress, on_message):
    """learn_messages, with a lost IMAP connection turned into an error that says nothing was saved."""
    import imaplib

    import imapclient

    from ..mail.failures import FilterError
    try:
        return learn_messages(spam_filter, messages, forget=forget, on_error=on_error, progress=progress,
                              on_message=on_message)
    except (OSError, imaplib.IMAP4.abort, imaplib.IMAP4.error, imapclient.exceptions.IMAPClientError) as exc:
        raise FilterError(f"reading an IMAP folder failed ({type(exc).__name__}: {exc}); the filter file was not "
                          "changed; run again") from None


@cli.command("serve")
@verbosity_options
@click.argument("model", type=click.Path(exists=True, dir_okay=False))
@click.option("--socket", "socket_path", type=click.Path(dir_okay=False), default=None,
              help="Answer spamkit-pipe on this Unix-domain socket (created with mode 0600).")
@click.option("--spamd", "spamd_address", default=None, metavar="HOST:PORT",
              help="Answer SpamAssassin's spamc protocol on this TCP address (e.g. 127.0.0.1:783).")
@click.option("--spamd-socket", type=click.Path(dir_okay=False), default=None,
              help="Answer SpamAssassin's spamc protocol on this Unix-domain socket (spamc -U PATH).")
@click.option("--allowed-ips", multiple=True, metavar="NETWORKS",
              help="Clients --spamd answers: addresses or networks (10.1.2.3, 192.0.2.0/24, 10., ::1), "
                   "comma-separated or repeated, as spamd -A. Default: this host only (127.0.0.0/8, ::1).")
@click.option("--user-models", type=click.Path(file_okay=False), default=None, metavar="DIR",
              help="Per-user filters for spamd's User: field: DIR/USER.spamkit when it exists, else MODEL.")
@click.option("--allow-tell", is_flag=True,
              help="Let spamd clients teach the filters (spamc -L spam|ham|forget), as spamd --allow-tell.")
@click.option("--cost", type=CostsParam(), default=None, help="Decide with these costs instead of the filter's.")
@click.option("--workers", type=click.IntRange(min=0), default=None,
              help="Processes that classify (default: one per core; 0 classifies in the server's own process).")
@click.option("--max-size", type=SizeParam(), default=str(MAX_MESSAGE >> 20) + "M", show_default=True,
              help="Largest message classified; bigger ones are refused and the client passes them on untagged.")
@click.option("--memory-budget", type=SizeParam(), default=str(MEMORY_BUDGET >> 20) + "M", show_default=True,
              help="Bytes of messages held at once, all clients together (more wait their turn).")
@click.option("--max-clients", type=click.IntRange(min=1), default=MAX_CLIENTS, show_default=True,
              help="Connections served at once; one more is told the server is busy (the client keeps the message).")
@click.option("--timeout", type=click.FloatRange(min=0.1), default=TIMEOUT, show_default=True,
              help="Seconds a client has to send its message, and the filter to classify it.")
@click.option("--socket-mode", default="600", show_default=True, metavar="OCTAL",
              help="Permissions of the Unix sockets (600: only its owner may ask; 660 lets the group ask too).")
@click.option("--filter-cache", type=SizeParam(), default="512M", show_default=True,
              help="Memory each worker may keep filters loaded in (the site filter and users' filters, the least "
                   "recently used dropped first).")
@click.option("--max-user-filters", type=click.IntRange(min=0), default=1000, show_default=True,
              help="With --user-models and --allow-tell: filter files TELL may create for new users; more are "
                   "refused.")
@click.option("--user-models-quota", type=SizeParam(), default="2G", show_default=True,
              help="With --user-models and --allow-tell: bytes the users' filter files may take together before "
                   "TELL refuses to create another.")
@spam_rate_option
def serve_command(model, socket_path, spamd_address, spamd_socket, allowed_ips, user_models, allow_tell, cost,
                  workers, max_size, memory_budget, max_clients, timeout, socket_mode, filter_cache,
                  max_user_filters, user_models_quota, spam_rate):
    """Keep a filter loaded and answer spamkit-pipe, or spamc as SpamAssassin's spamd would.

    \b
    Examples:
      spamkit serve mine.spamkit --socket ~/.spamkit.sock &
      spamkit-pipe --socket ~/.spamkit.sock < message.eml > tagged.eml
      spamkit serve mine.spamkit --spamd 127.0.0.1:783 --user-models /var/lib/spamkit --allow-tell &
      spamc -d 127.0.0.1 -p 783 < message.eml > processed.eml     # any spamc integration
      spamkit serve mine.spamkit --spamd 0.0.0.0:783 --allowed-ips 127.0.0.1,192.0.2.0/24 &

    Clients are served concurrently (one event loop reads every connection, worker
    processes classify); a client that sends nothing holds only its own connection. A filter file is
    reloaded when it changes (after spamkit learn) and after SIGHUP, without dropping a
    request. Stop it with Ctrl-C or SIGTERM; the sockets are removed. spamd has no
    authentication: as spamd, --spamd answers only this host unless --allowed-ips names
    other clients (any other connection is closed unread, and spamc passes the message on).
    """
    from ..filterfile.spamfilter import SpamFilter
    from ..mail.serve.spamd import SpamdProtocol, parse_address
    if not (socket_path or spamd_address or spamd_socket):
        raise click.UsageError("nothing to answer on: give --socket, --spamd HOST:PORT or --spamd-socket PATH")
    try:
        mode = int(socket_mode, 8)
    except ValueError:
        raise click.BadParameter(f"{socket_mode!r} is not an octal mode like 600", param_hint="--socket-mode") from None
    if mode & ~0o777 or not mode & 0o600 == 0o600:
        raise click.BadParameter(f"{socket_mode!r}: the owner needs read and write (6xx)", param_hint="--socket-mode")
    try:
        address = parse_address(spamd_address) if spamd_address else None
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--spamd") from exc
    if allowed_ips and not spamd_address:
        raise click.BadParameter("only a TCP listener has client addresses: give --spamd HOST:PORT too",
                                 param_hint="--allowed-ips")
    try:
        allowed = AllowList.parse(allowed_ips or AllowList.LOOPBACK)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--allowed-ips") from exc
    if user_models and not Path(user_models).is_dir():
        raise click.BadParameter(f"{user_models}: no such folder", param_hint="--user-models")

    def load(path):
        if isinstance(path, tuple):                    # the site filter and what a user taught over it
            return _taught_filter(cache.get(path[0]), path[1], model_id_of(path[0]))
        spam_filter = _load(path, cost, spam_rate)
        spam_filter.model_id = model_id_of(path)
        spam_filter.points_threshold = spam_filter.spam_threshold()   # spamd's 5.0 points, found once
        spam_filter.verdict(b"Subject: warm-up\n\nwarm up")      # first call builds caches
        if spam_filter.guard is not None:
            spam_filter.guard.reset()
        return spam_filter

    cache = FilterCache(load, max_bytes=filter_cache)
    cache.get(model)                                  # a bad filter file stops here, with its reason
    workers = (os.cpu_count() or 1) if workers is None else workers
    pool = Workers(workers, {"cache": cache, "model": str(model), "user_models": user_models,
                             "allow_tell": allow_tell, "load_for_learning": SpamFilter.load,
                             "user_quota": (max_user_filters, user_models_quota)})
    loop = ServeLoop(pool, max_size=max_size, memory_budget=memory_budget, timeout=timeout, max_clients=max_clients)
    try:
        if socket_path:
            loop.listen(unix_listener(socket_path, mode), SpamkitProtocol(model, max_size))
        if address:
            loop.listen(tcp_listener(address), SpamdProtocol(max_size), allowed)
        if spamd_socket:
            loop.listen(unix_listener(spamd_socket, mode), SpamdProtocol(max_size))
    except OSError as exc:
        loop.close()
        pool.close()
        raise click.ClickException(str(exc)) from None

    signal.signal(signal.SIGTERM, lambda signum, frame: loop.stop())
    signal.signal(signal.SIGINT, lambda signum, frame: loop.stop())
    signal.signal(signal.SIGHUP, lambda signum, frame: cache.reload_all())
    where = ", ".join(filter(None, [socket_path and f"spamkit-pipe on {socket_path}",
                                    address and f"spamd on {address[0]}:{address[1]} for {allowed}",
                                    spamd_socket and f"spamd on {spamd_socket}"]))
    click.echo(f"spamkit serve: {model} ({where}; {workers or 'no'} worker processes)", err=True)
    try:
        loop.run()
    finally:
        if workers:
            log(loop.summary())
        loop.close()
        pool.close()
