"""Worker processes start safely (spamkit.common.processes): ``fork`` from a one-thread process only,
``forkserver`` beside other threads, and a worker that dies fails the job instead of hanging it.

A CI run hung for 90 minutes here: a Dask client in an earlier test leaves its event-loop
thread alive in the test process, and a worker forked beside it never answered."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading

import pytest

from spamkit.corpus import Corpus
from spamkit.jobs.engines import ProcessEngine
from spamkit.common.errors import WorkerError
from spamkit.mail.ahead import JudgeAhead
from spamkit import BEST, build_filter
from spamkit.common.processes import forks, start_context
from spamkit.filterfile.sides import parse_item

from conftest import SAMPLE


class another_thread:
    """A second thread alive for the duration of the ``with`` block."""

    def __enter__(self):
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.stop.wait, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()


def test_a_one_thread_process_forks_and_a_threaded_one_does_not():
    code = ("import threading; from spamkit.common.processes import start_context as s; a = s().get_start_method(); "
            "t = threading.Thread(target=threading.Event().wait, daemon=True); t.start(); "
            "print(a, s().get_start_method())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["fork", "forkserver"]
    with another_thread():
        assert not forks() and start_context().get_start_method() == "forkserver"


def test_the_engine_beside_another_thread_gives_the_same_tokens():
    f = build_filter(**BEST)
    with Corpus(SAMPLE) as corpus:
        msgs = list(corpus)
    with another_thread(), ProcessEngine(jobs=2, chunk=3) as engine:
        remote = list(f.tokenized(msgs, engine.tokenizer(f.analyzer)))
    assert remote == [f.tokens(m) for m in msgs]


def worker_pid_as_familiarity(raws):
    """A ``score`` for JudgeAhead that says who scored: P(spam) from the length, familiarity = pid."""
    return [[0.5, len(r) % 2] for r in raws], [float(os.getpid())] * len(raws)


def test_filter_workers_beside_another_thread_judge_in_order():
    raws = [b"Subject: %d\n\n" % i + b"x" * i for i in range(100)]
    with another_thread(), JudgeAhead(None, "m", False, jobs=2, chunk=7, score=worker_pid_as_familiarity) as ahead:
        judged = list(ahead.judged(raws, lambda raw: raw))
        assert not ahead.broken                        # the workers lived (their parent watch did not end them)
    assert [item for item, _ in judged] == raws
    pids = {judgement[3] for _, judgement in judged}
    assert os.getpid() not in pids and len(pids) >= 1
    assert [judgement[2][1] for _, judgement in judged] == [len(r) % 2 for r in raws]


class DiesOn:
    """An analyzer whose worker process is killed on the message with ``word`` in its body."""

    def __init__(self, word: str):
        self.word = word

    def get_config(self) -> dict:
        return {"dies_on": self.word}

    def __call__(self, msg) -> list:
        if self.word in msg.body:
            os.kill(os.getpid(), signal.SIGKILL)
        return msg.body.split()


def test_a_worker_killed_fails_the_job_instead_of_hanging_it():
    with Corpus(SAMPLE) as corpus:
        msgs = list(corpus)
    victim = next(parse_item(m) for m in msgs[10:] if len(parse_item(m).body.split()) > 20)
    word = max(victim.body.split(), key=len)
    with ProcessEngine(jobs=2, chunk=3) as engine, pytest.raises(WorkerError, match="worker process died"):
        list(engine.tokenizer(DiesOn(word))(msgs))


def test_filter_workers_that_cannot_be_sent_the_filter_leave_the_run_to_judge():
    # beside another thread the workers come from a forkserver, and a closure does not pickle:
    # the run is told, and judges every message itself (a None judgement), losing none
    def score(raws):
        return [[0.5, 0.5] for _ in raws], [1.0] * len(raws)

    raws = [b"Subject: %d\n\nx" % i for i in range(10)]
    with another_thread(), pytest.warns(RuntimeWarning, match="workers not started"):
        ahead = JudgeAhead(None, "m", False, jobs=2, score=score)
    with ahead:
        assert list(ahead.judged(raws, lambda raw: raw)) == [(raw, None) for raw in raws]


def test_every_worker_starts_with_the_first_task_whatever_the_start_method():
    # forkserver workers started one per task can leave a late one that a broken pool never
    # joins (a CI run hung so); worker_pool starts all of them at once, as CPython does for fork
    import multiprocessing
    from spamkit.common.processes import worker_pool
    with another_thread():
        context = start_context()
        assert context.get_start_method() == "forkserver"
        before = set(multiprocessing.active_children())
        pool = worker_pool(3, context)
        try:
            assert pool.submit(os.getpid).result() != os.getpid()
            assert len(set(multiprocessing.active_children()) - before) == 3
        finally:
            pool.shutdown()


def test_a_pool_found_broken_at_submit_also_fails_the_job_clearly():
    # CI met it: the pool learned of a worker's death before the next chunk was submitted, so
    # submit() itself raised BrokenProcessPool, past the handler around result()
    from concurrent.futures import Future
    from concurrent.futures.process import BrokenProcessPool

    class BreaksOnThirdSubmit:
        calls = 0

        def submit(self, fn, chunk):
            self.calls += 1
            if self.calls == 3:
                raise BrokenProcessPool("A child process terminated abruptly")
            future = Future()
            future.set_result(fn(chunk))
            return future

    engine = ProcessEngine(jobs=2, chunk=1)
    with pytest.raises(WorkerError, match="worker process died"):
        list(engine.ordered(BreaksOnThirdSubmit(), len, [[1], [2], [3], [4], [5]]))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pipe capacities are Linux's (fcntl F_SETPIPE_SZ)")
def test_the_results_pipe_of_a_pool_holds_a_megabyte():
    """A worker's chunk of numbered terms (0.5-1 MB) goes into the results' pipe in one or two
    writes, not one 64 KiB piece per wake-up of the driver (fcntl(2): F_GETPIPE_SZ is 1032)."""
    import fcntl
    import multiprocessing

    from spamkit.common.processes import RESULT_PIPE_BYTES, UpFrontPool, widen_pipe
    reader, writer = multiprocessing.Pipe(duplex=False)
    assert fcntl.fcntl(reader.fileno(), 1032) == 65536            # Linux's default capacity
    assert widen_pipe(reader) and fcntl.fcntl(writer.fileno(), 1032) == RESULT_PIPE_BYTES == 1 << 20
    one, other = multiprocessing.Pipe(duplex=True)                # a socket pair: not a pipe
    assert not widen_pipe(one)
    for end in (reader, writer, one, other):
        end.close()
    pool = UpFrontPool(1, mp_context=start_context())
    try:
        assert fcntl.fcntl(pool._result_queue._reader.fileno(), 1032) == RESULT_PIPE_BYTES
        assert pool.submit(sum, [1, 2]).result() == 3
    finally:
        pool.shutdown()
