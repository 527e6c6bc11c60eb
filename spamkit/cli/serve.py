"""``spamkit serve``: keep a filter loaded and answer spamkit-pipe on a Unix socket, or spamc as
SpamAssassin's spamd would (:mod:`spamkit.mail.serve`)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import click

from ..mail import model_id_of
from ..mail.serve.listen import AllowList, tcp_listener, unix_listener
from ..mail.serve.pool import FilterCache, Workers, log
from ..mail.serve.server import MAX_CLIENTS, MAX_MESSAGE, MEMORY_BUDGET, TIMEOUT, ServeLoop
from ..mail.serve.wire import SpamkitProtocol
from . import cli
from .filter import loaded_filter
from .params import SizeParam, cost_option, model_argument, spam_rate_option
from .progress import verbosity_options


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


@cli.command("serve")
@verbosity_options
@model_argument
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
@cost_option("Decide with these costs instead of the filter's.")
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
        spam_filter = loaded_filter(path, cost, spam_rate)
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
