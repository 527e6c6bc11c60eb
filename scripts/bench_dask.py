#!/usr/bin/env python3
"""Dask engine: 1 against 2 workers on this machine, and the plan past one machine.

Measures, on trec07p-dev (the largest corpus in ../shared/corpora, 5,000 raw messages) and
on a longer stream made by listing it ``--repeat`` times:

* single-process training (the default engine), for reference;
* ``--engine dask`` on a LocalCluster of 1 and of 2 worker processes (workers read the
  files themselves; only file names travel): wall time, speed-up, time per partition,
  the reduce (tree of merges) time, bytes sent per partition and counts shipped back;
* the cost of one merge as a function of the vocabulary it holds, and how the vocabulary
  grows with the number of messages (Heaps' law V = K n^b, fitted on the partitions and
  on the merged totals).

From these it projects the time to train on 10 million messages with 10, 100 and 1,000
workers, term by term: the map (parse + tokenize + count, spread over the workers), the
driver (listing the corpus and submitting tasks, serial), the scheduler (per task,
serial), the reduce (log2(partitions) levels of pairwise merges whose size grows with the
vocabulary, each level's merges spread over the workers, plus shipping each level's
statistics over the network) and the final column selection on the driver. The largest
term is the one that limits scaling.

    python scripts/bench_dask.py [--corpora ../shared/corpora] [--repeat 4] [--partition-size 500]
                                 [--bandwidth-mb 100] [--task-ms 1.0]

The network bandwidth between workers (MB/s) and the scheduler's cost per task (ms; the
Dask documentation's order of magnitude) cannot be measured on one machine: they are
parameters, printed with the projection.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np

from spamkit.corpus import Corpus
from spamkit.jobs.distributed import Cluster, RunReport, fit_on_cluster, merge_stats, partition_stats
from spamkit import build_filter


def stream(path: Path, repeat: int, listed: bool = True):
    """The corpus ``repeat`` times over (opened, so unpacked, once), listed (file names only) when ``listed``."""
    with Corpus(path) as c:
        for _ in range(repeat):
            if listed:
                with c.listing():
                    yield from c
            else:
                yield from c


def local_fit(path, repeat):
    f = build_filter(model="multinomial")
    t = time.perf_counter()
    f.fit(stream(path, repeat, listed=False))
    return time.perf_counter() - t


def dask_fit(path, repeat, workers, size):
    with Cluster(f"local:{workers}") as cl:
        cl.client.run(lambda: None)                  # workers up before timing
        f, run = build_filter(model="multinomial"), RunReport()
        fit_on_cluster(f, stream(path, repeat), cl.client, partition_size=size, report=run)
    return run


def driver_cost(path, repeat, size) -> float:
    """Seconds per message the driver spends listing the corpus and cutting partitions (no cluster).

    The archive is unpacked before timing: a corpus of millions of messages is a folder tree.
    """
    from spamkit.jobs.distributed import partitions
    with Corpus(path) as c:
        t = time.perf_counter()
        n = 0
        for _ in range(repeat):
            with c.listing():
                n += sum(len(p[-1]) for p in partitions(c, size, RunReport()))
        return (time.perf_counter() - t) / n


def merge_costs(path, size):
    """(terms, seconds) of merges of growing statistics; Heaps' law points (messages, terms)."""
    analyzer = build_filter(model="multinomial").analyzer.get_config()
    with Corpus(path) as c:
        msgs = [(m.raw, m.kind, m.label) for m in c]
    parts = [partition_stats(analyzer, None, ("bytes", msgs[i:i + size])) for i in range(0, len(msgs), size)]
    heaps = [(len(msgs[i:i + size]), len(p.terms)) for i, p in zip(range(0, len(msgs), size), parts)]
    merges = []
    acc = parts[0]
    for p in parts[1:]:
        t = time.perf_counter()
        acc = merge_stats(acc, p)
        merges.append((len(acc.terms), time.perf_counter() - t))
    heaps.append((len(msgs), len(acc.terms)))
    bytes_per_term = (acc.tf.nbytes + acc.df.nbytes + sum(len(t) + 1 for t in acc.terms)) / len(acc.terms)
    return merges, heaps, bytes_per_term, acc


def fit_heaps(points):
    """V = K n^b by least squares on log-log points."""
    n, v = np.log([p[0] for p in points]), np.log([p[1] for p in points])
    b, log_k = np.polyfit(n, v, 1)
    return math.exp(log_k), b


def projection(N, W, size, per_msg, driver_per_msg, task_s, merge_per_term, heaps, bytes_per_term, bandwidth,
               select_per_term):
    K, b = heaps
    P = math.ceil(N / size)
    terms = {}
    terms["map"] = N * per_msg / W
    terms["driver"] = N * driver_per_msg
    terms["scheduler"] = P * task_s * 2               # partition tasks and as many merge tasks
    reduce_t, level, groups = 0.0, 0, P
    while groups > 1:
        merges = groups // 2
        covered = size * 2 ** (level + 1)             # messages under one merge at this level
        v_merged = K * covered ** b
        v_in = K * (covered / 2) ** b
        rounds = math.ceil(merges / W)
        reduce_t += rounds * (merge_per_term * v_merged + v_in * bytes_per_term / bandwidth)
        groups = groups - merges
        level += 1
    terms["reduce"] = reduce_t
    terms["select"] = select_per_term * K * N ** b
    return terms, P, level


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpora", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "corpora")
    parser.add_argument("--repeat", type=int, default=4, help="the longer stream: the corpus this many times")
    parser.add_argument("--partition-size", type=int, default=500)
    parser.add_argument("--bandwidth-mb", type=float, default=100.0, help="network MB/s between workers")
    parser.add_argument("--task-ms", type=float, default=1.0, help="scheduler cost per task, ms")
    args = parser.parse_args()
    path = args.corpora / "trec07p-dev" / "trec07p-dev.tar.gz"
    size = args.partition_size

    print(f"corpus: {path.name} ({5000} messages), partitions of {size}; multinomial NB, default tokens\n")
    print(f"{'stream':<10} {'engine':<14} {'wall s':>7} {'speed-up':>8} {'s/partition':>11} {'reduce s':>8} "
          f"{'sent KB/part':>12} {'back KB/part':>12}")
    measured = {}
    for repeat in (1, args.repeat):
        n = 5000 * repeat
        t_local = local_fit(path, repeat)
        print(f"{n:<10} {'local':<14} {t_local:>7.2f} {1.0:>8.2f}")
        for workers in (1, 2):
            run = dask_fit(path, repeat, workers, size)
            measured[(repeat, workers)] = run
            print(f"{n:<10} {f'dask {workers} worker' + ('s' if workers > 1 else ''):<14} {run.wall_seconds:>7.2f} "
                  f"{t_local / run.wall_seconds:>8.2f} {run.worker_seconds / run.n_partitions:>11.3f} "
                  f"{run.reduce_seconds:>8.2f} {run.bytes_in / run.n_partitions / 1e3:>12.1f} "
                  f"{run.bytes_out / run.n_partitions / 1e3:>12.1f}")
        one, two = measured[(repeat, 1)], measured[(repeat, 2)]
        print(f"{'':<10} 1 -> 2 workers: {one.wall_seconds / two.wall_seconds:.2f}x\n")

    merges, heaps_points, bytes_per_term, total = merge_costs(path, size)
    K, b = fit_heaps(heaps_points)
    sizes = np.array([m[0] for m in merges], dtype=float)
    secs = np.array([m[1] for m in merges])
    merge_per_term = float(np.sum(secs) / np.sum(sizes))
    f = build_filter(model="multinomial")
    t = time.perf_counter()
    f.vectorizer.select_columns(total.terms, total.df.sum(axis=0), total.n_docs, lambda keep: None)
    select_per_term = (time.perf_counter() - t) / len(total.terms)
    run = measured[(args.repeat, 1)]
    per_msg = run.worker_seconds / run.n_messages
    driver_per_msg = driver_cost(path, args.repeat, size)
    print(f"measured: parse+tokenize+count {1e3 * per_msg:.3f} ms/message on one worker; driver listing + "
          f"cutting partitions {1e3 * driver_per_msg:.3f} ms/message; merge {1e9 * merge_per_term:.0f} ns/term; "
          f"{bytes_per_term:.0f} bytes/term shipped; column selection {1e9 * select_per_term:.0f} ns/term")
    print(f"vocabulary growth (Heaps): V = {K:.1f} n^{b:.3f}  (from {len(heaps_points)} points; "
          f"{heaps_points[-1][1]} terms in {heaps_points[-1][0]} messages)")
    print(f"assumed: network {args.bandwidth_mb:.0f} MB/s, scheduler {args.task_ms:.1f} ms/task\n")

    N = 10_000_000
    for part in (size, 10 * size):
        print(f"projection: {N:,} messages, partitions of {part}")
        print(f"{'workers':>8} | {'map':>9} {'driver':>9} {'scheduler':>9} {'reduce':>9} {'select':>9} | "
              f"{'total':>9}  limited by")
        for W in (10, 100, 1000):
            terms, P, levels = projection(N, W, part, per_msg, driver_per_msg, args.task_ms / 1e3, merge_per_term,
                                          (K, b), bytes_per_term, args.bandwidth_mb * 1e6, select_per_term)
            # the driver and the scheduler overlap the map (tasks are submitted while others run)
            total_s = max(terms["map"], terms["driver"], terms["scheduler"]) + terms["reduce"] + terms["select"]
            limit = max(terms, key=terms.get)
            print(f"{W:>8} | " + " ".join(f"{terms[k] / 60:>8.1f}m" for k in ("map", "driver", "scheduler",
                                                                              "reduce", "select"))
                  + f" | {total_s / 60:>8.1f}m  {limit}")
        print(f"({math.ceil(N / part):,} partitions, a reduce tree of depth {levels}: the merges of a level run "
              "in parallel on the workers; only the root's result reaches the driver.)\n")


if __name__ == "__main__":
    main()
