"""The cluster: a Dask client (local worker processes or a scheduler), a corpus cut into
partitions as tasks, bounded submission, and what a run did (:class:`RunReport`)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from ...common.errors import ConfigError



#: messages per partition (a task): big enough that a task's fixed cost (~1 ms) is small
DEFAULT_PARTITION = 500


def _import_dask():
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise ConfigError("the dask engine needs Dask: pip install 'dask[distributed]'") from None
    return Client, LocalCluster


class Cluster:
    """A Dask client, on a scheduler address or on a local cluster of worker processes.

    ``scheduler``: ``tcp://HOST:PORT`` (a running ``dask scheduler``), ``local`` (one
    worker process per core) or ``local:N`` (N worker processes). Use as a context manager.
    """

    def __init__(self, scheduler: str = "local"):
        Client, LocalCluster = _import_dask()
        self.scheduler = scheduler
        self._cluster = None
        if scheduler == "local" or scheduler.startswith("local:"):
            n = scheduler.partition(":")[2]
            try:
                workers = int(n) if n else (os.cpu_count() or 1)
            except ValueError:
                raise ConfigError(f"--scheduler {scheduler!r}: expected local or local:N") from None
            if workers < 1:
                raise ConfigError(f"--scheduler {scheduler!r}: need at least one worker")
            # the scheduler's HTTP server on a free port: None still meant 8787, which another
            # cluster (or anything else) may hold, and Dask then warned and took another
            self._cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                         dashboard_address=":0")
            self.client = Client(self._cluster)
        else:
            try:
                self.client = Client(scheduler, timeout="20s")
            except (OSError, TimeoutError) as exc:
                raise ConfigError(f"cannot reach the Dask scheduler at {scheduler}: {exc}") from None

    def close(self) -> None:
        self.client.close()
        if self._cluster is not None:
            self._cluster.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


@dataclass
class RunReport:
    """What a distributed run did: partitions, messages, bytes shipped, times."""

    n_partitions: int = 0
    n_messages: int = 0
    mail_bytes: int = 0            # raw mail parsed by the workers
    bytes_in: int = 0              # shipped to workers: mail, or file names when the workers read
    bytes_out: int = 0             # statistics shipped back (partition results, before the tree)
    worker_seconds: float = 0.0
    read_seconds: float = 0.0
    wall_seconds: float = 0.0
    reduce_seconds: float = 0.0

    def as_dict(self) -> dict:
        return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in self.__dict__.items()}


def partitions(items, size: int, report: RunReport, progress=None, on_message=None):
    """Cut messages into partitions (see :func:`read_partition`), in order.

    Messages listed without being read (``raw`` an :class:`~spamkit.corpus.Unread`) travel
    as file names, others as bytes; a partition never mixes trees. ``on_message(msg)`` sees
    every message (the driver keeps labels and names there).
    """
    from ...corpus import LabelledMessage, Unread
    from ...corpus.tree import tree_address
    batch: list = []
    where = None                      # None: bytes; else the tree address of the files in the batch
    addresses: dict = {}              # id(tree) -> (tree, address): resolved once per tree

    def cut():
        report.n_partitions += 1
        return ("bytes", batch) if where is None else ("files", where, batch)

    for item in items:
        if not isinstance(item, LabelledMessage) or item.label is None:
            raise ConfigError(f"{getattr(item, 'source', 'a message')}: the dask engine needs labelled "
                              "corpus messages")
        if isinstance(item.raw, Unread):
            tree = item.raw.tree
            known = addresses.get(id(tree))
            if known is None or known[0] is not tree:
                known = addresses[id(tree)] = (tree, tree_address(tree))
            address = known[1]
            name = item.raw.rel if item.raw.span is None else (item.raw.rel, *item.raw.span)
            entry = (name, item.kind, str(item.label))
            report.bytes_in += len(item.raw.rel) + (0 if item.raw.span is None else 16)
        else:
            address = None
            entry = (item.raw, item.kind, str(item.label))       # type: ignore[assignment]  # the bytes themselves, shipped
            report.bytes_in += len(item.raw)
        if address != where and batch:
            yield cut()
            batch = []
        where = address
        batch.append(entry)
        report.n_messages += 1
        if on_message is not None:
            on_message(item)
        if progress is not None:
            progress(item)
        if len(batch) >= size:
            yield cut()
            batch = []
    if batch:
        yield cut()


def submit_all(client, fn, parts, max_pending: int, *args) -> list:
    """Submit ``fn(*args, partition)`` for every partition, keeping at most ``max_pending`` waiting."""
    from dask.distributed import wait
    futures, pending = [], []
    for part in parts:
        futures.append(client.submit(fn, *args, part, pure=False))
        pending.append(futures[-1])
        if len(pending) >= max_pending:
            wait(pending[: len(pending) // 2])
            pending[:] = [f for f in pending if not f.done()]
    return futures


def wait_all(futures: list, status=None) -> None:
    """Wait for every partition, telling ``status`` how many are done as they finish."""
    from dask.distributed import as_completed, wait
    if status is not None:
        for done, _ in enumerate(as_completed(futures), 1):
            status(f"{done}/{len(futures)} partitions done")
    wait(futures)


def default_pending(client) -> int:
    return 4 * max(1, len(client.scheduler_info()["workers"]))
