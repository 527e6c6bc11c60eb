"""``spamkit learn``: teach a trained filter from corrected folders (local corpora, IMAP folders,
the corrections a person made on an IMAP server), or take messages back (``--forget``)."""

from __future__ import annotations

import click

from ..corpus import iter_corpora
from ..common.errors import counted
from . import cli
from .params import close_corpora, corpus_options, imap_options, json_option, model_argument, open_corpora
from .progress import Progress, verbosity, verbosity_options
from .report import to_json


@cli.command("learn")
@verbosity_options
@model_argument
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
@click.option("--all-mail", is_flag=True,
              help="These folders hold all the mail of a stretch of time with its labels, in the order it came, "
                   "not only the filter's mistakes: score each message before learning it and re-choose the "
                   "spam cut from those scores (once 200 are judged), as an online evaluation's stream cut.")
@json_option()
def learn_command(model, corpus, ham, spam, extra, fmt, classes, corrections, junk, password_command, ca_file,
                  insecure, forget, on_error, all_mail, as_json):
    """Teach a trained filter from corrected folders, like sa-learn or bogofilter -s/-n.

    \b
    Examples:
      spamkit learn mine.spamkit --spam ~/Mail/Junk-missed --ham ~/Mail/Not-junk
      spamkit learn mine.spamkit --spam ~/Mail/Junk --on-error
      spamkit learn mine.spamkit --ham ~/Mail/wrongly-learned --forget
      spamkit learn mine.spamkit --spam imaps://me@mail.example.org/Junk
      spamkit learn mine.spamkit --corrections imaps://me@mail.example.org/INBOX --junk Junk
      spamkit learn mine.spamkit last-month/index --all-mail

    Each learned message is remembered by a hash of its content (spamkit's tags excluded):
    the same message is never learned twice, a message learned with the other class is
    moved to this one, and --forget takes back what learning added (exactly for the counting
    models; a logistic-regression component approximately). An IMAP folder is read from
    where the last run stopped (its UIDVALIDITY and highest UID are kept in the filter file).
    The filter file is replaced atomically, under a lock that spamkit serve's TELL shares.

    With --all-mail the filter also learns where to put its spam cut: each new message is
    scored before it is learned, and once 200 are judged the cut is the one at or above the
    costs' own that would have cost least on them (a ham misfiled 100, a message unsure 2):
    it rises where the filter's own ham reaches the top of its scale. Give it all the mail,
    in the order it came (a TREC index, or a mailbox learned whole), not only corrections.
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
    if all_mail and (forget or corrections or on_error):
        raise click.UsageError("--all-mail judges and learns all the mail of a stretch of time; it does not combine "
                               "with " + ("--forget" if forget else "--corrections (a sample of mistakes)" if corrections
                                          else "--on-error (a message judged and not learned would be judged again)"))
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
                                    progress.step, listing if verbosity() > 0 and not as_json else None, all_mail)
            # the file is rewritten only for a change (where the reading of IMAP folders got to is one)
            changed = bool(sum(report.learned.values()) + sum(report.forgotten.values()) + report.judged
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
    if all_mail:
        result["spam_cut"] = {"p_spam": spam_filter.learned_spam_cut(),
                              "judged_in_all": len(spam_filter.judged[0]) if spam_filter.judged else 0}
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
    if all_mail:
        click.echo(_cut_line(result["spam_cut"]))
    if fixed is not None:
        click.echo(f"  corrections: {fixed['ham']} moved out of {junk} (ham), {fixed['spam']} moved into it (spam)")
    if changed:
        click.echo(f"filter written to {model} ({counted(len(spam_filter.learned), 'message')} learned in all)")
    else:
        click.echo(f"nothing changed: {model} left as it was ({counted(len(spam_filter.learned), 'message')} "
                   "learned in all)")


def _cut_line(cut: dict) -> str:
    """What ``learn --all-mail`` says of the spam cut."""
    from ..decide.thresholds import STREAM_CUT_AFTER
    judged = counted(cut["judged_in_all"], "message")
    if cut["p_spam"] is None:
        return (f"  spam cut: the costs' own ({judged} judged in all; it is re-chosen from "
                f"{STREAM_CUT_AFTER})")
    return f"  spam cut: P(spam) above {cut['p_spam']:.6g}, chosen on the {judged} judged in all"


def _learn_guarded(learn_messages, spam_filter, messages, forget, on_error, progress, on_message, judge):
    """learn_messages, with a lost IMAP connection turned into an error that says nothing was saved."""
    import imaplib

    import imapclient

    from ..mail.failures import FilterError
    try:
        return learn_messages(spam_filter, messages, forget=forget, on_error=on_error, progress=progress,
                              on_message=on_message, judge=judge)
    except (OSError, imaplib.IMAP4.abort, imaplib.IMAP4.error, imapclient.exceptions.IMAPClientError) as exc:
        raise FilterError(f"reading an IMAP folder failed ({type(exc).__name__}: {exc}); the filter file was not "
                          "changed; run again") from None
