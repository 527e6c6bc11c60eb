"""The Dask engine: models identical to single-process training, exact sharded kNN, lost workers.

Runs on a dask.distributed LocalCluster with two worker processes (CI has two cores).
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
import zipfile
from collections import Counter

import numpy as np
import pytest
import scipy.sparse as sp
from click.testing import CliRunner

pytest.importorskip("dask.distributed")

from spamkit.cli import cli
from spamkit.corpus import Corpus, LabelledMessage
from spamkit.jobs.distributed import (Cluster, RunReport, Stats, fit_on_cluster, merge_stats,
                                 partition_stats, sharded_kneighbors, sharded_predict_proba)
from spamkit.common.errors import ConfigError
from spamkit.models import KNNClassifier
from spamkit import build_filter

from conftest import SAMPLE, shared_corpus


@pytest.fixture(scope="module")
def cluster():
    with Cluster("local:2") as c:
        yield c


def members(path) -> dict:
    """A filter file's members, with the run metadata (training summary) taken out."""
    with zipfile.ZipFile(path) as z:
        out = {name: z.read(name) for name in z.namelist()}
    manifest = json.loads(out.pop("manifest.json"))
    manifest.pop("training", None)
    manifest.pop("created", None)
    out["manifest"] = manifest
    return out


def train_both(tmp_path, corpus, cluster, **options):
    local, dist = build_filter(**options), build_filter(**options)
    with Corpus(corpus) as c:
        local.fit(c)
    report = RunReport()
    with Corpus(corpus) as c:
        fit_on_cluster(dist, c, cluster.client, partition_size=300, report=report)
    local.save(tmp_path / "local.spamkit")
    dist.save(tmp_path / "dask.spamkit")
    return members(tmp_path / "local.spamkit"), members(tmp_path / "dask.spamkit"), report


# ------------------------------------------------------------------ statistics by hand


def test_partition_statistics_by_hand():
    analyzer = build_filter(model="multinomial").analyzer.get_config()
    msgs = [(b"Subject: hi\n\ncheap cheap pills", "rfc822", "spam"),
            (b"Subject: lunch\n\nlunch at noon", "rfc822", "ham"),
            (b"Subject: pills\n\ncheap lunch", "rfc822", "spam")]
    s = partition_stats(analyzer, None, ("bytes", msgs))
    assert s.labels == ["ham", "spam"] and s.docs.tolist() == [1, 2]
    col = {t: j for j, t in enumerate(s.terms)}
    # "cheap": 2 + 1 occurrences in spam, in 2 spam documents; "lunch": once in ham, once in spam
    assert s.tf[:, col["cheap"]].tolist() == [0, 3] and s.df[:, col["cheap"]].tolist() == [0, 2]
    assert s.tf[:, col["lunch"]].tolist() == [1, 1] and s.df[:, col["lunch"]].tolist() == [1, 1]
    assert s.tf[:, col["subject:pills"]].tolist() == [0, 1]


def test_merge_adds_and_is_associative():
    def st(labels, terms, tf, docs):
        tf = np.array(tf, dtype=np.int64)
        return Stats(labels=labels, terms=terms, tf=tf, df=np.minimum(tf, 1), docs=np.array(docs),
                     fallbacks=Counter({"x": 1}))

    a = st(["ham"], ["a", "b"], [[1, 2]], [1])
    b = st(["ham", "spam"], ["b", "c"], [[3, 0], [1, 5]], [1, 1])
    c = st(["spam"], ["a", "d"], [[4, 4]], [2])

    def table(s):
        return {(lab, t): int(s.tf[i, j]) for i, lab in enumerate(s.labels) for j, t in enumerate(s.terms)
                if s.tf[i, j]}

    left, right = merge_stats(merge_stats(a, b), c), merge_stats(a, merge_stats(b, c))
    expected = {("ham", "a"): 1, ("ham", "b"): 5, ("spam", "b"): 1, ("spam", "c"): 5,
                ("spam", "a"): 4, ("spam", "d"): 4}
    assert table(left) == table(right) == expected
    assert left.docs.tolist() == right.docs.tolist() == [2, 3]
    assert left.fallbacks == Counter({"x": 3})


# ------------------------------------------------------------------ identical models


@pytest.mark.slow
@pytest.mark.parametrize("corpus", ["enron-spam/enron1.tar.gz", "trec07p-dev/trec07p-dev.tar.gz"])
@pytest.mark.parametrize("options", [
    {"model": "multinomial"},
    {"model": "bernoulli"},
    {"model": "multinomial", "hashing": 2 ** 14},
    {"model": "bernoulli", "hashing": 2 ** 14},
    # the default stack less its logistic component (sequential gradient steps do not add up
    # across workers; the engine refuses them): a combiner on CV scores, and the familiarity guard
    {"model": "fisher-nb", "tokens": "mail", "stack": {"logistic": 0.0, "squash": "slog"}},
    # and with the default's length-aware combiner (its fold scores carry each row's length)
    {"model": "fisher-nb", "tokens": "mail", "stack": {"logistic": 0.0, "squash": "slog", "length_aware": True}},
])
def test_dask_model_file_is_identical(tmp_path, cluster, corpus, options):
    local, dist, report = train_both(tmp_path, shared_corpus(corpus), cluster, **options)
    assert set(local) == set(dist)
    for name in local:
        assert local[name] == dist[name], name
    assert report.n_partitions > 2 and report.n_messages == 5000 if "trec" in corpus else True


@pytest.mark.slow
def test_selection_and_fisher_are_identical(tmp_path, cluster):
    corpus = shared_corpus("enron-spam/enron1.tar.gz")
    for options in ({"model": "bernoulli", "max_features": 500, "select": "ig"},
                    {"model": "multinomial", "min_df": 3, "max_features": 2000},
                    {"model": "fisher", "calibrate": "none", "tokens": "mail"}):
        local, dist, _ = train_both(tmp_path, corpus, cluster, **options)
        assert local == dist, options


def test_malformed_mail_is_counted_like_locally(tmp_path, cluster):
    bad = [LabelledMessage(id=f"m{i}", label="spam" if i % 2 else "ham", source="t",
                           raw=(b"Subject: =?utf-8?q?bro=ken\nContent-Type: text/plain; charset=no-such\n\n"
                                b"\xff\xfe body " + bytes([65 + i])), kind="rfc822")
           for i in range(40)]
    local, dist = build_filter(model="multinomial"), build_filter(model="multinomial")
    local.fit(bad)
    fit_on_cluster(dist, bad, cluster.client, partition_size=7)
    assert dist.parse_fallbacks == local.parse_fallbacks and sum(local.parse_fallbacks.values()) > 0
    assert dist.vectorizer.terms_ == local.vectorizer.terms_


def test_unsupported_filters_are_refused(cluster):
    for options, match in (({"model": "knn"}, "stores its training rows"),
                           ({"model": "multinomial", "representation": "tfidf"}, "not exact"),
                           ({"model": "fisher", "calibrate": "platt"}, "calibrate")):
        with pytest.raises(ConfigError, match=match):
            fit_on_cluster(build_filter(**options), [], cluster.client)


# ------------------------------------------------------------------ a worker lost mid-run


@pytest.mark.slow
def test_worker_killed_mid_run_gives_the_same_model(tmp_path):
    corpus = shared_corpus("enron-spam/enron1.tar.gz")
    local = build_filter(model="multinomial")
    with Corpus(corpus) as c:
        local.fit(c)
    with Cluster("local:2") as cl:
        pids = cl.client.run(os.getpid)              # worker address -> pid
        victim = sorted(pids.values())[0]

        def kill_soon():
            time.sleep(0.3)                           # while partitions are being counted
            os.kill(victim, signal.SIGKILL)

        killer = threading.Thread(target=kill_soon)
        dist = build_filter(model="multinomial")
        killer.start()
        with Corpus(corpus) as c:
            fit_on_cluster(dist, c, cl.client, partition_size=100)
        killer.join()
        assert victim not in cl.client.run(os.getpid).values()      # it really died (and was replaced)
    local.save(tmp_path / "a.spamkit")
    dist.save(tmp_path / "b.spamkit")
    assert members(tmp_path / "a.spamkit") == members(tmp_path / "b.spamkit")


# ------------------------------------------------------------------ sharded kNN


@pytest.mark.parametrize("n_shards", [1, 2, 3, 7])
def test_sharded_knn_equals_unsharded(cluster, n_shards):
    rng = np.random.default_rng(n_shards)
    base = sp.random(120, 40, density=0.2, format="csr", random_state=rng)
    base.data = np.ceil(base.data * 3)
    X = sp.vstack([base, base[rng.integers(0, 120, 80)]]).tolil()     # duplicates: exact ties
    X[:, :2] = rng.integers(1, 3, (200, 2))                            # dense columns
    X = X.tocsr()
    Q = sp.vstack([X[:15], sp.random(10, 40, density=0.3, random_state=rng)]).tocsr()
    y = rng.integers(0, 2, 200)
    for metric in ("cosine", "euclidean", "jaccard"):
        knn = KNNClassifier(k=9, metric=metric, weights="inverse").fit(X, y)
        idx, measure = knn.kneighbors(Q)
        idx_s, measure_s = sharded_kneighbors(cluster.client, knn, Q, n_shards)
        np.testing.assert_array_equal(idx, idx_s)
        np.testing.assert_array_equal(measure, measure_s)
        np.testing.assert_array_equal(knn.predict_proba(Q), sharded_predict_proba(cluster.client, knn, Q, n_shards))


# ------------------------------------------------------------------ CLI


def test_cli_train_on_dask_equals_default_engine(tmp_path):
    runner = CliRunner()
    common = ["train", str(SAMPLE), "--model", "multinomial", "--tokens", "words"]
    r1 = runner.invoke(cli, common + ["-o", str(tmp_path / "a.spamkit")])
    assert r1.exit_code == 0, r1.output
    r2 = runner.invoke(cli, common + ["-o", str(tmp_path / "b.spamkit"), "--engine", "dask",
                                      "--scheduler", "local:2", "--partition-size", "20"])
    assert r2.exit_code == 0, r2.output
    assert "dask" in r2.output and "partitions" in r2.output
    assert members(tmp_path / "a.spamkit") == members(tmp_path / "b.spamkit")
    r3 = runner.invoke(cli, ["train", str(SAMPLE), "-o", str(tmp_path / "c.spamkit"), "--engine", "dask",
                             "--scheduler", "local:1", "--model", "knn"])
    assert r3.exit_code != 0 and "stores its training rows" in r3.output and "Traceback" not in r3.output
    refused = runner.invoke(cli, ["train", str(SAMPLE), "-o", str(tmp_path / "d.spamkit"), "--engine", "dask",
                                  "--scheduler", "local:1"])       # the default stack: refused, with the way out
    assert refused.exit_code != 0 and "gradient steps" in refused.output and "--rate 0" in refused.output
    assert "--no-byte-grams" in refused.output
    # the default filter less what learns by gradient steps (fisher-nb, mail tokens, --rate 0
    # --no-byte-grams), with a held-out part: same file as locally (counts, combiner, familiarity
    # guard, decision layer)
    for name, extra in (("e", []), ("f", ["--engine", "dask", "--scheduler", "local:2", "--partition-size", "25"])):
        r = runner.invoke(cli, ["train", str(SAMPLE), "-o", str(tmp_path / f"{name}.spamkit"), "--rate", "0",
                                "--no-byte-grams", "--test-fraction", "0.3"] + extra)
        assert r.exit_code == 0, r.output
    assert members(tmp_path / "e.spamkit") == members(tmp_path / "f.spamkit")
    r4 = runner.invoke(cli, common + ["-o", str(tmp_path / "d.spamkit"), "--engine", "dask",
                                      "--scheduler", "tcp://127.0.0.1:1"])
    assert r4.exit_code != 0 and "cannot reach the Dask scheduler" in r4.output


@pytest.mark.slow
def test_workers_reading_files_give_the_same_model(tmp_path, cluster):
    # listed, not read: only file names travel, the workers read the archive themselves
    corpus = shared_corpus("trec07p-dev/trec07p-dev.tar.gz")
    local = build_filter(model="multinomial")
    with Corpus(corpus) as c:
        local.fit(c)
    dist, report = build_filter(model="multinomial"), RunReport()
    with Corpus(corpus) as c, c.listing() as listed:
        assert listed
        fit_on_cluster(dist, c, cluster.client, partition_size=400, report=report)
    assert report.bytes_in < report.mail_bytes / 100          # names, not mail
    local.save(tmp_path / "a.spamkit")
    dist.save(tmp_path / "b.spamkit")
    assert members(tmp_path / "a.spamkit") == members(tmp_path / "b.spamkit")


def test_listing_reads_nothing_and_names_every_file():
    with Corpus(SAMPLE) as c:
        full = [(m.id, m.label, m.raw) for m in c]
        with c.listing() as listed:
            names = [(m.id, m.label, m.raw) for m in c]
    assert listed and len(full) == len(names)
    for (i, lab, raw), (j, lab2, unread) in zip(full, names):
        assert (i, lab) == (j, lab2) and unread == b"" and unread.read() == raw


@pytest.mark.slow
@pytest.mark.parametrize("ship", [False, True])
def test_evaluate_on_dask_equals_local(tmp_path, ship):
    runner = CliRunner()
    model = tmp_path / "m.spamkit"
    corpus = str(shared_corpus("enron-spam/enron2.tar.gz"))
    r = runner.invoke(cli, ["train", str(SAMPLE), "-o", str(model)])      # the default: fisher-nb, byte 4-grams
    assert r.exit_code == 0, r.output
    local = runner.invoke(cli, ["evaluate", str(model), corpus, "--json", "--report", str(tmp_path / "a.html")])
    assert local.exit_code == 0, local.output
    args = ["evaluate", str(model), corpus, "--json", "--report", str(tmp_path / "b.html"), "--engine", "dask",
            "--scheduler", "local:2", "--partition-size", "700"] + (["--ship"] if ship else [])
    dist = runner.invoke(cli, args)
    assert dist.exit_code == 0, dist.output
    a, b = json.loads(local.output), json.loads(dist.output)
    run = b.pop("dask")
    assert run["n_messages"] == 5857 and run["n_partitions"] == 9
    assert (run["bytes_in"] >= run["mail_bytes"]) == ship
    assert a == b                                  # every measure, curve and explained mistake


@pytest.mark.slow
def test_cross_validation_on_dask_equals_local(tmp_path):
    # the stacked filter less what learns by gradient steps (fisher-nb, rate=0, grams=false: a
    # combiner inside every fold) and information-gain selection, folds run in parallel on the
    # cluster: the same out-of-fold scores
    runner = CliRunner()
    corpus = str(shared_corpus("enron-spam/enron1.tar.gz"))
    args = ["compare", corpus, "--config", "rate=0,grams=false", "--config", "model=bernoulli,max_features=500,select=ig",
            "--folds", "4", "--seed", "3", "--json"]
    local = runner.invoke(cli, args)
    assert local.exit_code == 0, local.output
    dist = runner.invoke(cli, args + ["--engine", "dask", "--scheduler", "local:2", "--partition-size", "600"])
    assert dist.exit_code == 0, dist.output
    a, b = json.loads(local.output), json.loads(dist.output)
    assert b.pop("dask")["n_partitions"] == 2 * 9          # each configuration reads the corpus once
    assert a == b
    refused = runner.invoke(cli, ["cv", corpus, "--config", "model=multinomial,representation=tfidf",
                                  "--engine", "dask", "--scheduler", "local:1"])
    assert refused.exit_code != 0 and "not exact" in refused.output and "Traceback" not in refused.output


def _tricky_mbox(path, n=60):
    """An mbox with a preamble, CRLF messages, '>From ' lines, a last message without a newline."""
    with open(path, "wb") as fh:
        fh.write(b"stray text before the first separator\n\n")
        for i in range(n):
            eol = b"\r\n" if i % 7 == 3 else b"\n"
            body = [b"Subject: message %d" % i, b"From: a%d@example.com" % i, b"",
                    b"cheap pills %d" % (i % 5) if i % 2 else b"lunch at noon %d" % (i % 3),
                    b">From the desk of nobody", b"", b""]           # ends with a blank line
            fh.write(b"From sender%d@example.com Mon Jan  1 00:00:00 2024\n" % i + eol.join(body))
        fh.write(b"From last@example.com Mon Jan  1 00:00:00 2024\nSubject: last\n\nno newline at the end")


def test_mbox_messages_are_spans_read_by_the_workers(tmp_path, cluster):
    _tricky_mbox(tmp_path / "spam.mbox")
    _tricky_mbox(tmp_path / "ham.mbox", 45)
    with Corpus(tmp_path / "spam.mbox", format="mbox", label="spam") as c:
        full = [(m.id, m.raw) for m in c]
        with c.listing() as listed:
            spans = [(m.id, m.raw) for m in c]
        assert listed and len(full) == 61 and [i for i, _ in full] == [i for i, _ in spans]
        assert all(unread.read() == raw and unread.span is not None for (_, raw), (_, unread) in zip(full, spans))
    local, dist, report = build_filter(model="multinomial"), build_filter(model="multinomial"), RunReport()

    def corpora():
        return [Corpus(tmp_path / "spam.mbox", format="mbox", label="spam"), Corpus(tmp_path / "ham.mbox", format="mbox", label="ham")]

    from spamkit.corpus import iter_corpora
    a = corpora()
    local.fit(iter_corpora(a))
    b = corpora()
    with b[0].listing(), b[1].listing():
        fit_on_cluster(dist, iter_corpora(b), cluster.client, partition_size=13, report=report)
    for c in a + b:
        c.close()
    assert report.n_messages == 61 + 46 and report.bytes_in < report.mail_bytes
    local.save(tmp_path / "a.spamkit")
    dist.save(tmp_path / "b.spamkit")
    assert members(tmp_path / "a.spamkit") == members(tmp_path / "b.spamkit")


def test_a_corpus_workers_cannot_see_is_a_clear_error(tmp_path, cluster):
    # the driver lists the corpus, then it disappears before the workers read it
    import shutil
    root = tmp_path / "corpus"
    shutil.copytree(SAMPLE, root)
    f = build_filter(model="multinomial")
    from spamkit.common.errors import CorpusError

    def listed_then_gone():
        with Corpus(root) as c, c.listing():
            items = list(c)
        shutil.rmtree(root)
        yield from items

    with pytest.raises(CorpusError, match="same path on every worker"):
        fit_on_cluster(f, listed_then_gone(), cluster.client)
