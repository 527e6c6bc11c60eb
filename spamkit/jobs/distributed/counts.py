"""Statistics of partitions: each worker parses, tokenizes and counts a partition; the
statistics merge by adding (a tree of pairwise merges); the driver builds the model from
the merged counts, as single-process training would."""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from ...common.errors import ConfigError, CorpusError
from ...features.counting import count_matrix
from ...features.vectorizer import Vectorizer
from ...features.matrices import information_gain
from ...parse.message import parse_message
from ...models import BernoulliNB, FisherNBStack, MultinomialNB, RobinsonFisher
from ...text import Analyzer



@dataclass
class Shared:
    """One object sent once to every worker (``client.scatter`` would split a dict or a tuple)."""

    value: Any


@dataclass
class Stats:
    """Sufficient statistics of some messages (see the module docstring).

    ``terms``: list of str, or sorted int64 column numbers with hashing; ``tf`` and ``df``:
    (n_labels, n_terms) int64, summed counts and documents holding the term; ``docs``:
    documents per label; ``labels`` sorted.
    """

    labels: list
    terms: Any                    # list of str, or int64 column numbers with hashing
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
    from ...corpus.tree import reopen_tree
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
    terms: Any                    # list of str, or int64 column numbers with hashing
    labels: list
    fallbacks: Counter
    n_bytes: int
    seconds: float
    distinct: np.ndarray | None = None   # distinct tokens of each message (the familiarity guard's denominator)


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
        terms: Any = np.unique(X.indices).astype(np.int64)
        X = X[:, terms]
    else:
        index: defaultdict = defaultdict()
        index.default_factory = index.__len__
        X = count_matrix(docs, index, grow=True)
        terms = list(index)                   # insertion order = column order
    return Part(X=X, terms=terms, labels=labels, fallbacks=fallbacks, n_bytes=n_bytes,
                seconds=time.perf_counter() - started,
                distinct=np.fromiter((len(set(d)) for d in docs), dtype=np.float64, count=len(docs)))


def subset(part: Part, rows) -> Part:
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
    part = subset(part, rows)
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
    terms: Any
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


def stats_size(stats: Stats) -> int:
    size = stats.terms.nbytes if isinstance(stats.terms, np.ndarray) else sum(len(t) + 1 for t in stats.terms)
    return int(size + stats.tf.nbytes + stats.df.nbytes + stats.docs.nbytes)


def refuse_context(spam_filter, what: str = "trains") -> None:
    """Refuse a filter with a context model: its tables (256 MB a model) and the bytes of every
    message are not something to ship to a cluster's workers (spamkit.models.context)."""
    if getattr(spam_filter, "context", None) is not None:
        raise ConfigError(f"--engine dask {what} filters without a context model; this one reads each "
                          "message's bytes with one (spamkit train --context-model): use the default engine "
                          "(--jobs N for several cores)")


def check_distributable(spam_filter) -> None:
    """Refuse, with the reason, filters whose training is not a sum of counts."""
    refuse_context(spam_filter)
    model, vec = spam_filter.model, spam_filter.vectorizer
    if not isinstance(model, (MultinomialNB, BernoulliNB, RobinsonFisher, FisherNBStack)):
        raise ConfigError(f"--engine dask trains fisher-nb, fisher, multinomial and bernoulli filters; "
                          f"{type(model).__name__} stores its training rows (knn): train it with the default "
                          "engine, then search it with spamkit.jobs.distributed.sharded_kneighbors")
    stepped = [what for what, used in (("logistic-regression component (--rate 0 leaves it out)",
                                        isinstance(model, FisherNBStack) and model.logistic),
                                       ("byte 4-gram model (--no-byte-grams)", getattr(spam_filter, "grams", None)
                                        is not None)) if used]
    if stepped:
        raise ConfigError("--engine dask trains what is a sum of counts; the stack's " + " and its ".join(stepped)
                          + (" learn" if len(stepped) > 1 else " learns") + " by gradient steps in message order, "
                          "which do not add up across workers: use --rate 0 --no-byte-grams (Fisher + NB) on the "
                          "cluster, or the default engine")
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
    from ...corpus import require_classes
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

        keep, terms = vec.select_terms(stats.terms, df_total, n_docs, score)
        df = df_total[keep]
        feature_count = counts[:, keep].astype(np.float64)
    fitted = Vectorizer.restore(vec.get_config(), terms, {"df": df, "n_docs": np.array([n_docs])})
    spam_filter.vectorizer = fitted
    classes = np.asarray(stats.labels)
    arrays = {"class_count_": stats.docs.astype(np.float64), "feature_count_": feature_count}
    if isinstance(spam_filter.model, FisherNBStack):
        arrays.update(spam_filter.model.unfitted_combiner())   # fitted next, on cross-validated scores
    spam_filter.model.restore_state(classes, fitted.n_features_, arrays, {})
    spam_filter.classes_ = spam_filter.model.classes_
    spam_filter.calibration = None
    spam_filter.tuning = None
    spam_filter.parse_fallbacks = Counter(stats.fallbacks)
    return spam_filter


def counting(parts, sizes: list):
    """Pass partitions through, noting how many messages each holds."""
    for part in parts:
        sizes.append(len(part[-1]))
        yield part
