"""The Dask engine behind the jobs' ``engine`` parameter."""

from __future__ import annotations

import numpy as np

from ...common.errors import ConfigError
from ..engine import Engine
from ...common.labels import HAM_NAME, SPAM_NAME
from ...scoring.arrays import log_expit
from .cluster import Cluster, DEFAULT_PARTITION, RunReport
from .counts import check_distributable, refuse_context
from .crossval import cv_on_cluster
from .fit import fit_on_cluster
from .score import score_on_cluster


class DaskEngine(Engine):
    """The Dask engine behind the jobs' ``engine`` parameter (:class:`spamkit.jobs.engine.Engine`).

    A job given the default engine runs in this process; given a ``DaskEngine`` it hands the
    whole operations to the cluster -- training (:func:`fit_on_cluster`), scoring
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
        #: the workers read the mail files themselves (the corpus is at the same path there)
        self.reads_files = not ship

    @property
    def client(self):
        """The cluster's Dask client, once the engine is entered (``with DaskEngine(...)``)."""
        if self.cluster is None:
            raise ConfigError("the dask engine has no cluster: use it as a context manager (with ...)")
        return self.cluster.client

    def parameters(self) -> dict:
        """What a filter file records about the engine that trained it."""
        return {"engine": self.name, "scheduler": self.scheduler, "partition_size": self.partition_size}

    def check(self, spam_filter) -> None:
        """Refuse a filter the cluster cannot train, before anything is read."""
        check_distributable(spam_filter)

    def __enter__(self) -> "DaskEngine":
        self.cluster = Cluster(self.scheduler)
        return self

    def close(self) -> None:
        if self.cluster is not None:
            self.cluster.close()
            self.cluster = None

    def fit(self, spam_filter, messages, progress=None):
        return fit_on_cluster(spam_filter, messages, self.client, self.partition_size, progress, self.run,
                              status=self.status)

    def score(self, spam_filter, corpora, progress=None):
        refuse_context(spam_filter, "scores")
        return score_on_cluster(self.client, self.partition_size, self.run, ship=self.ship,
                                status=self.status)(spam_filter, corpora, progress)

    def cross_validated_log_proba(self, spam_filter, corpora, folds: int = 5, seed: int = 0, progress=None,
                                  status=None):
        """Out-of-fold ``(labels, classes, log_proba, fold_of)`` of ham and spam, from the
        cluster's log-odds (``status`` is accepted for the interface's signature; the cluster
        reports partitions through the engine's own ``status``)."""
        refuse_context(spam_filter, "cross-validates")
        is_spam, log_odds, fold_of = cv_on_cluster(self.client, self.partition_size, self.run, ship=self.ship,
                                                   status=self.status)(spam_filter, corpora, folds, seed, progress,
                                                                       True)
        z = np.asarray(log_odds, dtype=np.float64)
        labels = np.where(np.asarray(is_spam, dtype=bool), SPAM_NAME, HAM_NAME)
        return labels, [HAM_NAME, SPAM_NAME], np.column_stack([log_expit(-z), log_expit(z)]), np.asarray(fold_of)
