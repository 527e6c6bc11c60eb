"""Scale out on Dask: train and search on a cluster, with results identical to one process.

Optional (``pip install 'dask[distributed]'``): nothing here is imported unless ``--engine dask``
is asked for, and the single-process path never imports Dask.

Training. Naive Bayes and Robinson/Fisher filters are sums: class document counts,
and per class and term either the summed term counts or the number of documents holding
the term. Vocabulary selection (min_df, max_df, max_features by total count or by
information gain) needs only per-term totals of the same kind
(:meth:`spamkit.features.vectorizer.Vectorizer.select_columns`). So **one pass** is enough: the driver
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

from .cluster import DEFAULT_PARTITION, Cluster, RunReport, partitions
from .counts import (Part, Shared, Stats, build_from_stats, check_distributable, merge_stats, part_stats,
                     partition_stats, read_partition, tokenize_partition, tree_reduce)
from .crossval import cv_on_cluster, fit_from_parts
from .engine import DaskEngine
from .fit import fit_on_cluster
from .knn import sharded_kneighbors, sharded_predict_proba
from .score import score_on_cluster

__all__ = ["DEFAULT_PARTITION", "Cluster", "RunReport", "partitions", "Part", "Shared", "Stats", "build_from_stats",
           "check_distributable", "merge_stats", "part_stats", "partition_stats", "read_partition",
           "tokenize_partition", "tree_reduce", "cv_on_cluster", "fit_from_parts", "DaskEngine", "fit_on_cluster",
           "sharded_kneighbors", "sharded_predict_proba", "score_on_cluster"]
