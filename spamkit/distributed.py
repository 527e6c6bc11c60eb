"""Scale out on Dask: train and search on a cluster, with results identical to one process.

Optional (``pip install 'spamkit[dask]'``): nothing here is imported unless ``--engine dask``
is asked for, and the single-process path never imports Dask.

Training. Naive Bayes and Robinson/Fisher filters are sums: class document counts,
and per class and term either the summed term counts or the number of documents holding
the term. Vocabulary selection (min_df, max_df, max_features by total count or by
information gain) needs only per-term totals of the same kind
(:meth:`spamkit.features.Vectorizer.select_columns`). So **one pass** is enough: the driver
reads the corpus in order and cuts it into partitions of messages; each worker parses,
tokenizes and counts a partition into its *statistics* (its terms, and per class and term
the count sum and the document frequency); statistics merge by adding
(:func:`merge_stats`), pairwise, as a tree whose depth is log2 of the number of partitions,
on the workers; the driver receives one merged result, selects the columns exactly as
single-process training does and writes the same counts into the model. Counts are
integers, exact in float64 under any order of addition, so the model's arrays equal those
of single-process training bit for bit (tests/test_distributed.py compares filter files).
With hashing the terms are column numbers and nothing is selected.

A task's input (its partition) travels with the task, so when a worker dies Dask runs the
task again elsewhere and the result is the same; messages that parse only with fallbacks
are counted per partition and summed like the counts (never dropped).

kNN (:func:`sharded_kneighbors`): the stored rows are cut into shards, one task per shard
returns the shard's exact top k for every query, and the merge keeps the best k (higher
similarity first, then lower global index): the single-process order, ties included. Every
shard splits the vocabulary into dense and sparse terms as the whole index does, so each
similarity is summed in the same order as in one process.

The stacked filter (fisher-nb, the default) also needs its combiner, a logistic regression
fitted on 5-fold cross-validated scores: its tokenized partitions stay on the workers, the
per-fold counts are summed by a second tree, each worker scores its rows with the model of
the other folds (totals minus the fold), and the driver fits the combiner on the scores in
corpus order: the same folds, scores and coefficients as :meth:`FisherNBStack.fit`.

Cross-validation (:func:`cv_on_cluster`, ``spamkit cv``/``compare --engine dask``): the
tokenized partitions stay on the workers and the folds run in parallel, each built from the
other folds' rows (:func:`fit_from_parts`) and scoring its own rows there.

Not distributed (refused with a message): calibrated filters (calibration is fitted on
cross-validated scores of the whole filter), kNN training (it stores the rows; train it
locally and search with :func:`sharded_kneighbors`), and the weighted representations
(tfidf, normalised tf), whose sums are not integers.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from .errors import ConfigError, CorpusError
from .features import Vectorizer, count_matrix, columns_per_row, information_gain
from .message import parse_message
from .models import BernoulliNB, FisherNBStack, MultinomialNB, RobinsonFisher
from .models.base import finite_log_odds
from .text import Analyzer

#: messages per partition (a task): big enough that a task's fixed cost (~1 ms) is small
DEFAULT_PARTITION = 500


# ---------------------------------------------------------------------- cluster


def _import_dask():
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise ConfigError("the dask engine needs Dask: pip install 'spamkit[dask]'") from None
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
            self._cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                         dashboard_address=None)
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


class DaskEngine:
    """The Dask engine behind the jobs' ``engine`` parameter (:mod:`spamkit.jobs`).

    A job given ``engine=None`` runs in this process; given a ``DaskEngine`` it hands the
    parallel part to the cluster -- training (:func:`fit_on_cluster`), scoring
    (:func:`score_on_cluster`), cross-validated scores (:func:`cv_on_cluster`) -- with the
    same results. Use as a context manager: entering starts (or connects to) the cluster.

    ``status(text)`` hears how many partitions are done; :attr:`run` counts what was sent
    and how long it took.
    """

    name = "dask"

    def __init__(self, scheduler: str = "local", partition_size: int = DEFAULT_PARTITION, ship: bool = False,
                 status=None):
        self.scheduler, self.partition_size, self.ship, self.status = scheduler, partition_size, ship, status
        self.run = RunReport()
        self.cluster: Cluster | None = None

    @property
    def reads_files(self) -> bool:
        """Do the workers read the mail files themselves (the corpus is at the same path there)?"""
        return not self.ship

    def parameters(self) -> dict:
        """What a filter file records about the engine that trained it."""
        return {"engine": self.name, "scheduler": self.scheduler, "partition_size": self.partition_size}

    def check(self, spam_filter) -> None:
        """Refuse a filter the cluster cannot train, before anything is read."""
        check_distributable(spam_filter)

    def __enter__(self) -> "DaskEngine":
        self.cluster = Cluster(self.scheduler)
        return self

    def __exit__(self, *exc) -> None:
        if self.cluster is not None:
            self.cluster.close()
            self.cluster = None

    def fit(self, spam_filter, messages, progress=None):
        return fit_on_cluster(spam_filter, messages, self.cluster.client, self.partition_size, progress, self.run,
                              status=self.status)

    def score(self, spam_filter, corpora, progress=None):
        return score_on_cluster(self.cluster.client, self.partition_size, self.run, ship=self.ship,
                                status=self.status)(spam_filter, corpora, progress)

    def cross_validated_log_odds(self, spam_filter, corpora, folds: int = 5, seed: int = 0, progress=None,
                                 return_folds: bool = False, status=None):
        """``status`` is accepted for the local signature; the cluster reports partitions through
        the engine's own ``status``."""
        return cv_on_cluster(self.cluster.client, self.partition_size, self.run, ship=self.ship,
                             status=self.status)(spam_filter, corpora, folds, seed, progress, return_folds)


# ---------------------------------------------------------------------- statistics


@dataclass
class Shared:
    """One object sent once to every worker (``client.scatter`` would split a dict or a tuple)."""

    value: object


@dataclass
class Stats:
    """Sufficient statistics of some messages (see the module docstring).

    ``terms``: list of str, or sorted int64 column numbers with hashing; ``tf`` and ``df``:
    (n_labels, n_terms) int64, summed counts and documents holding the term; ``docs``:
    documents per label; ``labels`` sorted.
    """

    labels: list
    terms: object
    tf: np.ndarray
    df: np.ndarray
    docs: np.ndarray
    fallbacks: Counter = field(default_factory=Counter)
    n_bytes: int = 0
    seconds: float = 0.0          # worker time spent (sum over merged partitions)

    @property
    def n_docs(self) -> int:
        return int(self.docs.sum())


#: trees opened by this (worker) process, by address: an archive is unpacked once per worker
_TREES: dict = {}


def _tree(address):
    from .corpus.tree import reopen_tree
    tree = _TREES.get(address)
    if tree is None:
        tree = _TREES[address] = reopen_tree(address)
    return tree


def read_partition(partition) -> list:
    """A partition's messages as (raw, kind, label): shipped bytes, or files read here.

    ``partition``: ``("bytes", [(raw, kind, label), ...])`` or
    ``("files", tree address, [(where, kind, label), ...])``, ``where`` a path in the tree or
    ``(path, start, end)``, a span of a file (a message of an mbox).
    """
    if partition[0] == "bytes":
        return partition[1]
    _, address, entries = partition
    try:
        tree = _tree(address)
        return [(tree.read(where) if isinstance(where, str) else tree.read_span(*where), kind, label)
                for where, kind, label in entries]
    except (CorpusError, OSError) as exc:
        import socket
        raise CorpusError(f"on worker host {socket.gethostname()}: {exc} (the workers read the corpus "
                          "themselves: it must be at the same path on every worker, or use --ship)") from None


@dataclass
class Part:
    """A tokenized partition: counts over its own terms (kept on a worker between passes)."""

    X: sp.csr_matrix
    terms: object                 # list of str, or int64 column numbers with hashing
    labels: list
    fallbacks: Counter
    n_bytes: int
    seconds: float
    distinct: np.ndarray = None   # distinct tokens of each message (the familiarity guard's denominator)


def tokenize_partition(analyzer_config: dict, hashing: int | None, partition) -> Part:
    """Read (if given by file), parse, tokenize and count one partition (see :func:`read_partition`)."""
    started = time.perf_counter()
    analyzer = Analyzer.from_config(analyzer_config)
    docs, labels = [], []
    fallbacks: Counter = Counter()
    n_bytes = 0
    for raw, kind, label in read_partition(partition):
        msg = parse_message(raw, kind)
        if msg.defects:
            fallbacks.update({d.split(":", 1)[0] for d in msg.defects})
        docs.append(analyzer(msg))
        labels.append(label)
        n_bytes += len(raw)
    if hashing is not None:
        X = Vectorizer.hashed(int(hashing)).hash_counts(docs)
        terms = np.unique(X.indices).astype(np.int64)
        X = X[:, terms]
    else:
        index: defaultdict = defaultdict()
        index.default_factory = index.__len__
        X = count_matrix(docs, index, grow=True)
        terms = list(index)                   # insertion order = column order
    return Part(X=X, terms=terms, labels=labels, fallbacks=fallbacks, n_bytes=n_bytes,
                seconds=time.perf_counter() - started,
                distinct=np.fromiter((len(set(d)) for d in docs), dtype=np.float64, count=len(docs)))


def _subset(part: Part, rows) -> Part:
    """The partition restricted to some of its rows (None: all of them)."""
    if rows is None:
        return part
    rows = np.asarray(rows, dtype=np.int64)
    return Part(X=part.X[rows], terms=part.terms, labels=[part.labels[i] for i in rows.tolist()],
                fallbacks=part.fallbacks, n_bytes=part.n_bytes, seconds=part.seconds,
                distinct=None if part.distinct is None else part.distinct[rows])


def part_stats(part: Part, rows=None) -> Stats:
    """The statistics of a tokenized partition (of its ``rows`` only, if given)."""
    started = time.perf_counter()
    part = _subset(part, rows)
    labels, X = part.labels, part.X
    classes, codes = np.unique(np.asarray(labels, dtype=object).astype(str), return_inverse=True) \
        if labels else (np.array([], dtype=str), np.array([], dtype=np.int64))
    Y = sp.csr_matrix((np.ones(len(codes)), (np.arange(len(codes)), codes)), shape=(len(codes), len(classes)))
    presence = X.copy()
    presence.data[:] = 1.0
    tf = np.rint((Y.T @ X).toarray()).astype(np.int64)
    df = np.rint((Y.T @ presence).toarray()).astype(np.int64)
    return Stats(labels=classes.tolist(), terms=part.terms, tf=tf, df=df,
                 docs=np.bincount(codes, minlength=len(classes)).astype(np.int64), fallbacks=part.fallbacks,
                 n_bytes=part.n_bytes, seconds=part.seconds + time.perf_counter() - started)


def partition_stats(analyzer_config: dict, hashing: int | None, partition) -> Stats:
    """:func:`tokenize_partition` then :func:`part_stats`, in one task (nothing kept on the worker)."""
    return part_stats(tokenize_partition(analyzer_config, hashing, partition))


def merge_stats(a: Stats, b: Stats) -> Stats:
    """The statistics of both parts: union of labels and terms, counts added."""
    labels = sorted(set(a.labels) | set(b.labels))
    lpos = {lab: i for i, lab in enumerate(labels)}
    la = np.array([lpos[x] for x in a.labels], dtype=np.int64)
    lb = np.array([lpos[x] for x in b.labels], dtype=np.int64)
    if isinstance(a.terms, np.ndarray):                          # hashing: sorted column numbers
        terms = np.union1d(a.terms, b.terms)
        ia, ib = np.searchsorted(terms, a.terms), np.searchsorted(terms, b.terms)
    else:
        index = {t: i for i, t in enumerate(a.terms)}
        terms = list(a.terms)
        ib = np.empty(len(b.terms), dtype=np.int64)
        for k, t in enumerate(b.terms):
            j = index.get(t)
            if j is None:
                j = index[t] = len(terms)
                terms.append(t)
            ib[k] = j
        ia = np.arange(len(a.terms), dtype=np.int64)
    n = len(terms)
    out = []
    for xa, xb in ((a.tf, b.tf), (a.df, b.df)):
        m = np.zeros((len(labels), n), dtype=np.int64)
        m[np.ix_(la, ia)] += xa
        m[np.ix_(lb, ib)] += xb
        out.append(m)
    docs = np.zeros(len(labels), dtype=np.int64)
    docs[la] += a.docs
    docs[lb] += b.docs
    return Stats(labels=labels, terms=terms, tf=out[0], df=out[1], docs=docs,
                 fallbacks=a.fallbacks + b.fallbacks, n_bytes=a.n_bytes + b.n_bytes,
                 seconds=a.seconds + b.seconds)


def tree_reduce(client, futures: list, fn=merge_stats):
    """Combine futures pairwise, level by level, on the workers: depth log2(n), no funnel."""
    if not futures:
        raise ConfigError("no training messages")
    level = list(futures)
    while len(level) > 1:
        nxt = [client.submit(fn, level[i], level[i + 1], pure=False) for i in range(0, len(level) - 1, 2)]
        if len(level) % 2:
            nxt.append(level[-1])
        level = nxt
    return level[0]


# ---------------------------------------------------------------------- training


def check_distributable(spam_filter) -> None:
    """Refuse, with the reason, filters whose training is not a sum of counts."""
    model, vec = spam_filter.model, spam_filter.vectorizer
    if not isinstance(model, (MultinomialNB, BernoulliNB, RobinsonFisher, FisherNBStack)):
        raise ConfigError(f"--engine dask trains fisher-nb, fisher, multinomial and bernoulli filters; "
                          f"{type(model).__name__} stores its training rows (knn): train it with the default "
                          "engine, then search it with spamkit.distributed.sharded_kneighbors")
    if isinstance(model, FisherNBStack) and model.logistic:
        raise ConfigError("--engine dask trains what is a sum of counts; the stack's logistic-regression "
                          "component learns by gradient steps in message order, which do not add up across "
                          "workers: use --rate 0 (Fisher + NB) on the cluster, or the default engine")
    if spam_filter.calibrate != "none":
        raise ConfigError("--engine dask cannot calibrate (calibration is fitted on cross-validated "
                          "scores); use --calibrate none, or the default engine")
    if vec.representation not in ("tf", "binary"):
        raise ConfigError(f"--engine dask needs counts or presence features (--representation tf or "
                          f"binary), not {vec.representation!r}: weighted sums are not exact under "
                          "reordering, so the model could not equal single-process training")


def _model_counts(spam_filter, stats: Stats) -> np.ndarray:
    """Which per-term statistic the model's fit sums: counts, or documents holding the term."""
    model = spam_filter.model
    presence = (spam_filter.vectorizer.representation == "binary"
                or isinstance(model, (RobinsonFisher, FisherNBStack))
                or (isinstance(model, BernoulliNB) and model.binarize is not None))
    return stats.df if presence else stats.tf


def build_from_stats(spam_filter, stats: Stats):
    """Fit ``spam_filter`` from merged statistics: the same arrays as ``spam_filter.fit``."""
    from .corpus import require_classes
    check_distributable(spam_filter)
    require_classes(Counter(dict(zip(stats.labels, stats.docs.tolist()))), "training data")
    vec = spam_filter.vectorizer
    if isinstance(spam_filter.model, (RobinsonFisher, FisherNBStack)) and len(stats.labels) != 2:
        raise ConfigError(f"the fisher models separate two classes; the training data has {len(stats.labels)}")
    n_docs = stats.n_docs
    df_total = stats.df.sum(axis=0)
    counts = _model_counts(spam_filter, stats)
    if vec.hashing is not None:
        n = int(vec.hashing)
        df = np.zeros(n, dtype=np.int64)
        df[stats.terms] = df_total
        feature_count = np.zeros((len(stats.labels), n))
        feature_count[:, stats.terms] = counts
        terms = None
    else:
        def score(keep):
            if vec.select == "ig":
                return information_gain(stats.df[:, keep].T, stats.docs)
            return stats.tf[:, keep].sum(axis=0)

        keep = vec.select_columns(stats.terms, df_total, n_docs, score)
        terms = [stats.terms[j] for j in keep.tolist()]
        df = df_total[keep]
        feature_count = counts[:, keep].astype(np.float64)
    fitted = Vectorizer.restore(vec.get_config(), terms, {"df": df, "n_docs": np.array([n_docs])})
    spam_filter.vectorizer = fitted
    classes = np.asarray(stats.labels)
    arrays = {"class_count_": stats.docs.astype(np.float64), "feature_count_": feature_count}
    if isinstance(spam_filter.model, FisherNBStack):
        arrays["combiner_"] = np.array([1.0, 0.0, 0.0])     # fitted next, on cross-validated scores
    spam_filter.model.restore_state(classes, fitted.n_features_, arrays, {})
    spam_filter.classes_ = spam_filter.model.classes_
    spam_filter.calibration = None
    spam_filter.tuning = None
    spam_filter.parse_fallbacks = Counter(stats.fallbacks)
    return spam_filter


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


def _stats_size(stats: Stats) -> int:
    terms = stats.terms.nbytes if isinstance(stats.terms, np.ndarray) else sum(len(t) + 1 for t in stats.terms)
    return int(terms + stats.tf.nbytes + stats.df.nbytes + stats.docs.nbytes)


def partitions(items, size: int, report: RunReport, progress=None, on_message=None):
    """Cut messages into partitions (see :func:`read_partition`), in order.

    Messages listed without being read (``raw`` an :class:`~spamkit.corpus.Unread`) travel
    as file names, others as bytes; a partition never mixes trees. ``on_message(msg)`` sees
    every message (the driver keeps labels and names there).
    """
    from .corpus import LabelledMessage, Unread
    from .corpus.tree import tree_address
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
            entry = (item.raw, item.kind, str(item.label))
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


def _submit_all(client, fn, parts, max_pending: int, *args) -> list:
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


def _wait_all(futures: list, status=None) -> None:
    """Wait for every partition, telling ``status`` how many are done as they finish."""
    from dask.distributed import as_completed, wait
    if status is not None:
        for done, _ in enumerate(as_completed(futures), 1):
            status(f"{done}/{len(futures)} partitions done")
    wait(futures)


def _default_pending(client) -> int:
    return 4 * max(1, len(client.scheduler_info()["workers"]))


def fit_on_cluster(spam_filter, items, client, partition_size: int = DEFAULT_PARTITION, progress=None,
                   report: RunReport | None = None, max_pending: int | None = None, status=None):
    """Train ``spam_filter`` on the cluster of ``client``; the result equals ``spam_filter.fit(items)``.

    ``items``: LabelledMessage objects, taken here in order and cut into partitions of
    ``partition_size`` messages (:func:`partitions`). Messages listed without being read
    (:meth:`spamkit.corpus.Corpus.listing`) travel as file names and the workers read them
    (the corpus must be at the same path on every worker: a shared or copied file system);
    others travel as bytes. At most ``max_pending`` partitions wait at a time (default: four
    per worker), so the driver's memory stays bounded whatever the corpus size. ``status(text)``
    hears how many partitions are done.
    """
    check_distributable(spam_filter)
    report = report if report is not None else RunReport()
    started = time.perf_counter()
    stacked = isinstance(spam_filter.model, FisherNBStack)
    labels: list = []
    sizes_of_parts: list = []
    parts = partitions(items, partition_size, report, progress, on_message=lambda m: labels.append(str(m.label)))
    # keep each tokenized partition on its worker: the familiarity guard (and the stack's
    # combiner) need a second look at the rows once the vocabulary is known
    parts = _counting(parts, sizes_of_parts)
    tokenized = _submit_all(client, tokenize_partition, parts, max_pending or _default_pending(client),
                            spam_filter.analyzer.get_config(), spam_filter.vectorizer.hashing)
    futures = [client.submit(part_stats, f, pure=False) for f in tokenized]
    report.read_seconds = time.perf_counter() - started
    _wait_all(futures, status)
    before_reduce = time.perf_counter()
    sizes = client.gather([client.submit(_stats_size, f, pure=False) for f in futures])
    report.bytes_out = int(sum(sizes))
    stats = tree_reduce(client, futures).result()
    report.reduce_seconds = time.perf_counter() - before_reduce
    report.worker_seconds = stats.seconds
    report.mail_bytes = stats.n_bytes
    build_from_stats(spam_filter, stats)
    if stacked:
        _fit_combiner_on_cluster(spam_filter, client, tokenized, labels, sizes_of_parts, status)
    _fit_guard_on_cluster(spam_filter, client, tokenized)
    report.wall_seconds = time.perf_counter() - started
    return spam_filter


def part_familiarity(part: Part, shared: Shared) -> tuple[np.ndarray, np.ndarray]:
    """Per message of a partition: its tokens known without it (see SpamFilter.fit_guard), and its
    distinct tokens."""
    vocabulary, n_features, known_without_self = shared.value
    return columns_per_row(_global_rows(part, vocabulary, n_features), known_without_self), part.distinct


def _fit_guard_on_cluster(spam_filter, client, tokenized: list) -> None:
    """The familiarity guard of SpamFilter.fit, from the partitions kept on the workers."""
    vec = spam_filter.vectorizer
    mask = spam_filter.known_without_self(vec.df_)
    shared = client.scatter(Shared((dict(vec.vocabulary_) if vec.vocabulary_ is not None else None,
                                    vec.n_features_, mask)), broadcast=True, hash=False)
    parts = client.gather([client.submit(part_familiarity, t, shared, pure=False) for t in tokenized])
    known = np.concatenate([p[0] for p in parts]) if parts else np.zeros(0)
    distinct = np.concatenate([p[1] for p in parts]) if parts else np.zeros(0)
    spam_filter.fit_guard(vec.df_, known, distinct)


def _counting(parts, sizes: list):
    """Pass partitions through, noting how many messages each holds."""
    for part in parts:
        sizes.append(len(part[-1]))
        yield part


# ---------------------------------------------------------------------- the stacked model's combiner


@dataclass
class FoldCounts:
    """Per cross-validation fold: documents per class (k, 2) and per class and column (k, 2, n_cols)."""

    cols: np.ndarray
    class_count: np.ndarray
    feature_count: np.ndarray


def _global_counts(part: Part, vocabulary, n_features: int) -> sp.csr_matrix:
    """A partition's counts over a filter's columns (unknown terms dropped), indices sorted:
    what ``Vectorizer.counts`` gives for the same messages. ``vocabulary`` None: hashing (the
    partition's terms are already column numbers)."""
    if vocabulary is None:
        mapping = np.asarray(part.terms, dtype=np.int64)
    else:
        mapping = np.fromiter((vocabulary.get(t, -1) for t in part.terms), dtype=np.int64, count=len(part.terms))
    X = part.X
    cols = mapping[X.indices]
    keep = cols >= 0
    indptr = np.concatenate([[0], np.cumsum(keep)])[X.indptr]
    out = sp.csr_matrix((X.data[keep], cols[keep], indptr), shape=(X.shape[0], n_features))
    out.has_sorted_indices = False
    out.sort_indices()
    return out


def _global_rows(part: Part, vocabulary, n_features: int) -> sp.csr_matrix:
    """:func:`_global_counts` as presence (1.0 where a term occurs)."""
    X = _global_counts(part, vocabulary, n_features)
    X.data[:] = 1.0
    return X


def part_fold_counts(part: Part, vocabulary: Shared, n_features: int, folds: np.ndarray, codes: np.ndarray,
                     k: int, rows=None) -> FoldCounts:
    """Counts of each fold's rows of one partition (as FisherNBStack.fit counts them)."""
    X = _global_rows(_subset(part, rows), vocabulary.value, n_features)
    cols = np.unique(X.indices)
    local = sp.csr_matrix((X.data, np.searchsorted(cols, X.indices), X.indptr), shape=(X.shape[0], len(cols)))
    cc = np.zeros((k, 2), dtype=np.int64)
    fc = np.zeros((k, 2, len(cols)), dtype=np.int64)
    for f in range(k):
        rows = np.flatnonzero(folds == f)
        if rows.size == 0:
            continue
        Y = sp.csr_matrix((np.ones(rows.size), codes[rows], np.arange(rows.size + 1)), shape=(rows.size, 2))
        cc[f] = np.bincount(codes[rows], minlength=2)
        fc[f] = np.rint((Y.T @ local[rows]).toarray()).astype(np.int64)
    return FoldCounts(cols=cols, class_count=cc, feature_count=fc)


def merge_fold_counts(a: FoldCounts, b: FoldCounts) -> FoldCounts:
    cols = np.union1d(a.cols, b.cols)
    fc = np.zeros(a.feature_count.shape[:2] + (len(cols),), dtype=np.int64)
    fc[:, :, np.searchsorted(cols, a.cols)] += a.feature_count
    fc[:, :, np.searchsorted(cols, b.cols)] += b.feature_count
    return FoldCounts(cols=cols, class_count=a.class_count + b.class_count, feature_count=fc)


def part_fold_scores(part: Part, vocabulary: Shared, model_params: dict, classes, counts: Shared,
                     folds: np.ndarray, k: int, rows=None) -> np.ndarray:
    """(Fisher, NB) log-odds of each row from the model of the other folds (totals minus its fold)."""
    class_count, feature_count, fold_cc, fold_fc = counts.value
    X = _global_rows(_subset(part, rows), vocabulary.value, feature_count.shape[1])
    model = FisherNBStack(**model_params)
    model.classes_ = np.asarray(classes)
    scores = np.zeros((X.shape[0], 2))
    for f in range(k):
        held = folds == f
        if held.any():
            scores[held] = model.component_scores(class_count - fold_cc[f], feature_count - fold_fc[f], X[held])
    return scores


def _fit_combiner_on_cluster(spam_filter, client, tokenized: list, labels: list, sizes: list, status=None,
                             rows_per_part=None):
    """FisherNBStack.fit's combiner, from the partitions kept on the workers: same folds, same scores.

    ``labels``: of the training rows in order; ``sizes``: training rows per partition;
    ``rows_per_part``: which rows of each partition train (None: all).
    """
    from .models.stack import fold_of_rows
    model = spam_filter.model
    classes = model.classes_
    codes = np.searchsorted(classes, np.asarray(labels))
    k = int(min(model.folds, np.bincount(codes, minlength=2).min()))
    if k < 2:
        return
    folds = fold_of_rows(codes, k)
    bounds = np.concatenate([[0], np.cumsum(sizes)])
    vec = spam_filter.vectorizer
    # in a box: scatter would send a dict's values (or a tuple's items) as separate pieces
    vocabulary = client.scatter(Shared(dict(vec.vocabulary_) if vec.vocabulary_ is not None else None),
                                broadcast=True, hash=False)
    n = vec.n_features_
    rows_per_part = rows_per_part or [None] * len(tokenized)
    per_part = [client.submit(part_fold_counts, t, vocabulary, n, folds[lo:hi], codes[lo:hi], k, r, pure=False)
                for t, lo, hi, r in zip(tokenized, bounds[:-1], bounds[1:], rows_per_part)]
    fold = tree_reduce(client, per_part, merge_fold_counts).result()
    fold_fc = np.zeros((k, 2, n))
    fold_fc[:, :, fold.cols] = fold.feature_count
    counts = client.scatter(Shared((model.class_count_, model.feature_count_,
                                    fold.class_count.astype(np.float64), fold_fc)), broadcast=True, hash=False)
    params = {p: getattr(model, p) for p in ("strength", "prior", "min_dev", "max_clues", "alpha", "folds")}
    scored = [client.submit(part_fold_scores, t, vocabulary, params, classes, counts, folds[lo:hi], k, r, pure=False)
              for t, lo, hi, r in zip(tokenized, bounds[:-1], bounds[1:], rows_per_part)]
    _wait_all(scored, status)
    scores = np.vstack(client.gather(scored))
    model.fit_combiner(scores, codes == 1)




# ---------------------------------------------------------------------- scoring

#: filters loaded by this (worker) process, by the digest of their file
_FILTERS: dict = {}


def _filter_from_bytes(blob: bytes, digest: str):
    from .spamfilter import SpamFilter
    f = _FILTERS.get(digest)
    if f is None:
        fd, path = tempfile.mkstemp(suffix=".spamkit")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(blob)
            f = SpamFilter.load(path)
        finally:
            os.unlink(path)
        if len(_FILTERS) >= 8:                      # a few at a time (the folds of a cross-validation)
            _FILTERS.pop(next(iter(_FILTERS)))
        _FILTERS[digest] = f
    return f


def _send_filter(client, spam_filter):
    """The filter's file, sent once to every worker: (future of its bytes, their SHA-256)."""
    fd, path = tempfile.mkstemp(suffix=".spamkit")
    os.close(fd)
    try:
        spam_filter.save(path)
        with open(path, "rb") as fh:
            blob = fh.read()
    finally:
        os.unlink(path)
    return client.scatter(Shared(blob), broadcast=True, hash=False), hashlib.sha256(blob).hexdigest()


def score_partition(blob: Shared, digest: str, partition):
    """The model's log-probabilities of a partition's messages, the parse fallbacks seen, the
    bytes read, the seconds taken and the messages' familiarities."""
    started = time.perf_counter()
    f = _filter_from_bytes(blob.value, digest)
    rows, fallbacks, n_bytes = [], Counter(), 0
    for raw, kind, _label in read_partition(partition):
        msg = parse_message(raw, kind)
        if msg.defects:
            fallbacks.update({d.split(":", 1)[0] for d in msg.defects})
        rows.append(f.analyzer(msg))
        n_bytes += len(raw)
    X = f.vectorizer.transform(rows)
    lp = f.model.predict_log_proba(X)
    return lp, fallbacks, n_bytes, time.perf_counter() - started, f.familiarity(rows, X)


def score_on_cluster(client, partition_size: int = DEFAULT_PARTITION, report: RunReport | None = None,
                     max_pending: int | None = None, ship: bool = False, status=None):
    """A ``score`` function for :func:`spamkit.jobs.evaluate.evaluate_filter` that scores on the cluster.

    The filter travels once to every worker (as its file's bytes); each partition comes back
    as the model's log-probabilities of its messages, which are the same, row by row, as
    scoring in one process. Calibration and prior correction are applied by the caller.
    Corpora whose messages are files are listed and the workers read them, unless ``ship``.
    """
    report = report if report is not None else RunReport()

    def score(spam_filter, corpora, progress=None):
        from .corpus import Unread, iter_corpora
        started = time.perf_counter()
        blob_future, digest = _send_filter(client, spam_filter)
        labels, ids, refs = [], [], []

        def keep(msg):
            labels.append(msg.label)
            ids.append(msg.source)
            refs.append((msg.raw if isinstance(msg.raw, Unread) else None, msg.kind))

        with contextlib.ExitStack() as listing:
            for corpus in corpora if not ship else ():
                listing.enter_context(corpus.listing())
            try:
                futures = _submit_all(client, score_partition,
                                      partitions(iter_corpora(corpora), partition_size, report, progress, keep),
                                      max_pending or _default_pending(client), blob_future, digest)
            except ConfigError as exc:
                raise CorpusError(f"{exc}; evaluation needs labelled corpora") from None
            report.read_seconds = time.perf_counter() - started
            _wait_all(futures, status)
            parts = client.gather(futures)
        lp = np.vstack([p[0] for p in parts]) if parts else np.zeros((0, len(spam_filter.classes_)))
        familiarity = np.concatenate([p[4] for p in parts]) if parts else np.zeros(0)
        spam_filter.parse_fallbacks = sum((p[1] for p in parts), Counter())
        report.mail_bytes = sum(p[2] for p in parts)
        report.worker_seconds = sum(p[3] for p in parts)
        report.wall_seconds = time.perf_counter() - started

        def rows_of(indices):
            """Feature rows of a few messages, read again here (for the report's explanations)."""
            raws = {i: refs[i][0].read() for i in indices if refs[i][0] is not None}
            missing = set(indices) - set(raws)
            if missing:                             # shipped as bytes: one more pass to find them
                for pos, msg in enumerate(iter_corpora(corpora)):
                    if pos in missing:
                        raws[pos] = bytes(msg.raw)
            rows = [spam_filter.analyzer(parse_message(raws[i], refs[i][1])) for i in indices]
            return spam_filter.vectorizer.transform(rows)

        return labels, ids, lp, rows_of, familiarity

    return score


# ---------------------------------------------------------------------- cross-validation


def part_log_odds(part: Part, blob: Shared, digest: str, rows) -> np.ndarray:
    """log-odds of spam of some rows of a partition under a filter (sent as its file's bytes)."""
    from .labels import SPAM_NAME
    f = _filter_from_bytes(blob.value, digest)
    vec = f.vectorizer
    counts = _global_counts(_subset(part, rows), vec.vocabulary_ if vec.hashing is None else None, vec.n_features_)
    lp = f.log_proba(vec.represent(counts))
    s = list(f.classes_).index(SPAM_NAME)
    with np.errstate(invalid="ignore"):
        return lp[:, s] - lp[:, 1 - s]


def _part_cost(part: Part) -> tuple:
    return part.seconds, part.n_bytes


def fit_from_parts(spam_filter, client, tokenized: list, labels: list, rows_per_part: list, status=None):
    """Train ``spam_filter`` on some rows of tokenized partitions (cross-validation's training folds)."""
    check_distributable(spam_filter)
    futures = [client.submit(part_stats, t, r, pure=False) for t, r in zip(tokenized, rows_per_part)]
    build_from_stats(spam_filter, tree_reduce(client, futures).result())
    if isinstance(spam_filter.model, FisherNBStack):
        _fit_combiner_on_cluster(spam_filter, client, tokenized, labels, [len(r) for r in rows_per_part],
                                 None, rows_per_part)
    return spam_filter


def cv_on_cluster(client, partition_size: int = DEFAULT_PARTITION, report: RunReport | None = None,
                  ship: bool = False, status=None, max_pending: int | None = None):
    """A replacement for :func:`spamkit.jobs.crossval.cross_validated_log_odds` that runs on the cluster.

    Every message is read and tokenized once, on the workers, and stays there; the folds
    then run in parallel (one driver thread each): a fold's filter is built from the
    statistics of the other folds' rows (:func:`fit_from_parts`, the fisher-nb combiner
    included) and scores its own rows on the workers. Same folds, same filters, same
    scores as in one process.
    """
    from concurrent.futures import ThreadPoolExecutor

    from .corpus import iter_corpora, require_classes
    from .evaluation import stratified_folds
    from .features import Vectorizer as _Vectorizer
    from .labels import HAM_NAME, SPAM_NAME
    report = report if report is not None else RunReport()

    def cv(spam_filter, corpora, folds: int = 5, seed: int = 0, progress=None, return_folds: bool = False):
        from sklearn.base import clone

        from .spamfilter import SpamFilter
        check_distributable(spam_filter)
        started = time.perf_counter()
        labels: list = []
        sizes: list = []

        def keep(msg):
            if msg.label not in (HAM_NAME, SPAM_NAME):
                raise CorpusError(f"{msg.source}: threshold choice needs ham/spam labels, got {msg.label!r}")
            labels.append(str(msg.label))

        with contextlib.ExitStack() as listing:
            for corpus in corpora if not ship else ():
                listing.enter_context(corpus.listing())
            parts = _counting(partitions(iter_corpora(corpora), partition_size, report, progress, keep), sizes)
            tokenized = _submit_all(client, tokenize_partition, parts, max_pending or _default_pending(client),
                                    spam_filter.analyzer.get_config(), spam_filter.vectorizer.hashing)
        report.read_seconds = time.perf_counter() - started
        _wait_all(tokenized, status)
        y = np.asarray(labels)
        require_classes(Counter(labels), "the threshold corpus")
        fold_of = stratified_folds(y, folds, seed=seed)
        bounds = np.concatenate([[0], np.cumsum(sizes)])
        config = spam_filter.vectorizer.get_config()

        def run_fold(k):
            train_rows = [np.flatnonzero(fold_of[lo:hi] != k) for lo, hi in zip(bounds[:-1], bounds[1:])]
            held_rows = [np.flatnonzero(fold_of[lo:hi] == k) for lo, hi in zip(bounds[:-1], bounds[1:])]
            f = SpamFilter(spam_filter.analyzer, _Vectorizer(**config), clone(spam_filter.model),
                           calibrate=spam_filter.calibrate)
            fit_from_parts(f, client, tokenized, y[fold_of != k].tolist(), train_rows)
            shared, digest = _send_filter(client, f)
            scored = [client.submit(part_log_odds, t, shared, digest, r, pure=False)
                      for t, r in zip(tokenized, held_rows)]
            out = np.zeros(len(y))
            for t_rows, lo, part_scores in zip(held_rows, bounds[:-1], client.gather(scored)):
                out[lo + t_rows] = part_scores
            return fold_of == k, out

        with ThreadPoolExecutor(max_workers=folds) as pool:     # the folds in parallel
            results = list(pool.map(run_fold, range(folds)))
        scores = np.zeros(len(y))
        for mask, out in results:
            scores[mask] = out[mask]
        scores = finite_log_odds(scores)
        report.wall_seconds = time.perf_counter() - started
        costs = client.gather([client.submit(_part_cost, t, pure=False) for t in tokenized])
        report.worker_seconds = float(sum(c[0] for c in costs))
        report.mail_bytes = int(sum(c[1] for c in costs))
        if return_folds:
            return y == SPAM_NAME, scores, fold_of
        return y == SPAM_NAME, scores

    return cv


# ---------------------------------------------------------------------- kNN


def _shard_search(rows: sp.csr_matrix, dense_cols: np.ndarray, params: dict, Q: sp.csr_matrix, k: int, offset: int):
    """Top k of one shard of stored (already prepared) rows, as global indices."""
    from .models.knn import KNNClassifier
    from .models.neighbours import CosineIndex
    knn = KNNClassifier(**params, n_jobs=1)
    knn.check_search_params()
    knn.classes_ = np.array([0])
    knn.y_codes_ = np.zeros(rows.shape[0], dtype=np.int64)
    knn.n_features_in_ = rows.shape[1]
    knn.ids_ = None
    knn.set_rows(rows)
    if knn.metric == "cosine":
        knn.index_ = CosineIndex(rows, knn.memory_bytes_, dense_cols=dense_cols)
    scores, idx = knn.search(Q, min(k, rows.shape[0]))
    return scores, idx + offset


def sharded_kneighbors(client, knn, X, n_shards: int, k: int | None = None):
    """``knn.kneighbors(X)`` with the stored rows split into ``n_shards`` tasks; same result.

    Returns ``(indices, measure)`` like :meth:`~spamkit.models.KNNClassifier.kneighbors`.
    """
    from .models.neighbours import NeighbourSearch
    k = int(knn.k if k is None else k)
    n = knn.rows_.shape[0]
    if k > n:
        raise ConfigError(f"k={k} is larger than the {n} stored training rows")
    Q = knn.check_query(X)                   # each shard prepares it, as a single search does
    params = {name: getattr(knn, name) for name in ("k", "weights", "metric", "tau", "epsilon", "memory_limit")}
    dense_cols = knn.index_.dense_cols if knn.metric == "cosine" else None
    bounds = np.linspace(0, n, max(1, min(n_shards, n)) + 1).astype(np.int64)
    # the queries travel with each task (not scattered): a task re-run after a lost worker has all it needs
    futures = [client.submit(_shard_search, knn.rows_[lo:hi], dense_cols, params, Q, k, int(lo), pure=False)
               for lo, hi in zip(bounds[:-1], bounds[1:]) if hi > lo]
    parts = client.gather(futures)
    best_s, best_i = parts[0]
    for s, i in parts[1:]:
        best_s, best_i = NeighbourSearch.merge(best_s, best_i, s, i, k)
    order = np.lexsort((best_i, -best_s), axis=1)
    best_s = np.take_along_axis(best_s, order, axis=1)
    best_i = np.take_along_axis(best_i, order, axis=1)
    measure = best_s if knn.metric in ("cosine", "jaccard") else -best_s
    return best_i, measure


def sharded_predict_proba(client, knn, X, n_shards: int) -> np.ndarray:
    """``knn.predict_proba(X)`` from the sharded search (the vote is computed here)."""
    k = knn.k_for_vote()
    idx, measure = sharded_kneighbors(client, knn, X, n_shards, k)
    scores = measure if knn.metric in ("cosine", "jaccard") else -measure
    votes, _ = knn.votes(scores, idx)
    total = votes.sum(axis=1, keepdims=True)
    total[total == 0] = 1.0
    return votes / total
