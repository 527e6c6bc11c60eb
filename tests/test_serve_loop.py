"""The event loop of ``spamkit serve`` (:class:`spamkit.mail.serve.server.ServeLoop`) on a protocol made
for the test (``tests/loop_server.py``, run in a process of its own): its limits, workers that
die or overrun, the memory budget, clients that send nothing or never read their answer.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
TICK = __import__("os").sysconf("SC_CLK_TCK")


@pytest.fixture()
def serve(tmp_path):
    """serve(workers=..., **limits) -> the socket path of a loop server, stopped after the test."""
    started = []

    def start(**options):
        path = str(tmp_path / f"loop{len(started)}.sock")
        proc = subprocess.Popen([sys.executable, str(HERE / "loop_server.py"), path, json.dumps(options)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        started.append(proc)
        assert proc.stdout.readline() == b"ready\n", proc.stderr.read().decode()
        return path, proc

    yield start
    for proc in started:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)


def stats(path: str) -> dict:
    return json.loads(ask(path, "stats"))


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def ask(path: str, command: str, body: bytes = b"", timeout: float = 30) -> bytes:
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(timeout)
        s.connect(path)
        try:
            s.sendall(f"{command} {len(body)}\n".encode() + body)
        except (BrokenPipeError, ConnectionResetError):
            pass        # the loop may answer (busy) and close before reading a byte: its answer is still there
        chunks = []
        while chunk := s.recv(1 << 16):
            chunks.append(chunk)
        return b"".join(chunks)


def eventually(condition, seconds: float = 5.0) -> bool:
    """``condition()`` within ``seconds`` (the loop closes a connection just after its answer)."""
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)
    return condition()


def in_threads(calls) -> list:
    results = [None] * len(calls)

    def run(i, call):
        results[i] = call()
    threads = [threading.Thread(target=run, args=(i, call)) for i, call in enumerate(calls)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return results


@pytest.mark.parametrize("workers", [2, 0])
def test_requests_are_answered_by_the_workers_or_in_the_loop(serve, workers):
    path, proc = serve(workers=workers)
    results = in_threads([lambda i=i: ask(path, "echo", b"x" * i) for i in range(40)])
    assert results == [b"ok:echo:" + b"x" * i for i in range(40)]
    assert ask(path, "fail") == b"fallback:failed"          # a job that raises: the fallback, in either mode
    assert ask(path, "echo", b"after") == b"ok:echo:after"
    assert eventually(lambda: stats(path) == {**stats(path), "budget": 0, "states": []})


def test_a_worker_that_dies_is_replaced_and_only_its_request_gets_the_fallback(serve):
    path, proc = serve(workers=2)
    before = set(stats(path)["workers"])
    results = in_threads([lambda: ask(path, "die")] + [lambda i=i: ask(path, "echo", b"%d" % i) for i in range(10)])
    assert results[0] == b"fallback:failed"
    assert results[1:] == [b"ok:echo:%d" % i for i in range(10)]
    after = set(stats(path)["workers"])
    assert len(after) == 2 and after != before
    assert ask(path, "echo", b"still") == b"ok:echo:still"


def test_a_worker_found_dead_when_handed_a_request_is_replaced_and_the_request_served(serve):
    path, proc = serve(workers=2)
    before = set(stats(path)["workers"])
    assert ask(path, "killidle", b"x") == b"ok:killidle:x"     # not the fallback: a new worker served it
    time.sleep(0.5)                                          # the dead workers' ends of their pipes are read
    after = stats(path)["workers"]
    assert len(after) == 2 and not set(after) & before         # each replaced once, no third worker
    assert ask(path, "echo", b"next") == b"ok:echo:next"


def test_a_job_over_the_timeout_is_answered_with_the_fallback_and_its_worker_replaced(serve):
    path, proc = serve(workers=1, timeout=1.0)
    started = time.monotonic()
    assert ask(path, "sleep", b"30") == b"fallback:timeout"
    assert time.monotonic() - started < 10
    # the one worker was replaced: the next request is served
    assert ask(path, "echo", b"next") == b"ok:echo:next"


def test_a_request_waiting_for_a_busy_worker_past_its_timeout_gets_the_fallback(serve):
    path, proc = serve(workers=1, timeout=1.0)
    # A runs until it is killed at 1 s; B, queued first, runs next; C waits behind both, past its timeout
    results = in_threads([lambda: ask(path, "sleep", b"30"),
                          lambda: (time.sleep(0.1), ask(path, "sleep", b"30"))[1],
                          lambda: (time.sleep(0.5), ask(path, "echo", b"queued"))[1]])
    assert results == [b"fallback:timeout"] * 3
    assert ask(path, "echo", b"then") == b"ok:echo:then"


def test_the_memory_budget_makes_requests_wait_their_turn_or_be_refused(serve):
    path, proc = serve(workers=1, memory_budget=1000, max_size=1000, timeout=2.0, free_bytes=0)
    # two requests of 600 bytes cannot be held at once: the second waits for the first to end
    results = in_threads([lambda: ask(path, "echo", b"a" * 600),
                          lambda: (time.sleep(0.1), ask(path, "echo", b"b" * 600))[1]])
    assert results == [b"ok:echo:" + b"a" * 600, b"ok:echo:" + b"b" * 600]
    # B holds 900 bytes queued behind A, then while it runs; C's 500 find no room before C's deadline
    results = in_threads([lambda: ask(path, "sleep", b"30"),
                          lambda: (time.sleep(0.1), ask(path, "sleep", b"30".ljust(900)))[1],
                          lambda: (time.sleep(0.5), ask(path, "echo", b"c" * 500))[1]])
    assert results == [b"fallback:timeout", b"fallback:timeout", b"no room"]
    assert ask(path, "echo", b"d" * 500) == b"ok:echo:" + b"d" * 500
    assert eventually(lambda: stats(path)["budget"] == 0)


def test_over_max_clients_is_answered_busy_at_once_and_idle_ones_are_cut_off(serve):
    path, proc = serve(workers=1, max_clients=3, timeout=1.5)
    idle = []
    for _ in range(3):
        s = socket.socket(socket.AF_UNIX)
        s.connect(path)
        idle.append(s)
    time.sleep(0.2)
    assert ask(path, "echo", b"x") == b"busy"
    time.sleep(2.0)                                          # their deadline has passed
    for s in idle:
        s.settimeout(5)
        assert s.recv(10) == b""                             # hung up on
        s.close()
    assert ask(path, "echo", b"x") == b"ok:echo:x"


def test_a_new_client_takes_the_slot_of_one_idle_for_over_a_second(serve):
    """Every slot taken by connections that send nothing: once they have been quiet for a
    second (server.IDLE_EVICT), a client that sends its request is served in the slot of the
    quietest, which is hung up on; a request being worked on is never the one closed."""
    path, proc = serve(workers=1, max_clients=3, timeout=20.0)
    working = threading.Thread(target=ask, args=(path, "sleep", b"2"))
    working.start()
    time.sleep(0.2)
    idle = []
    for _ in range(2):
        s = socket.socket(socket.AF_UNIX)
        s.connect(path)
        idle.append(s)
    time.sleep(1.3)
    started = time.monotonic()
    assert ask(path, "echo", b"x") == b"ok:echo:x"
    assert time.monotonic() - started < 1.0
    closed = 0
    for s in idle:
        s.settimeout(0.5)
        try:
            closed += s.recv(10) == b""
        except socket.timeout:
            pass
        s.close()
    assert closed == 1                                       # the quietest one only
    working.join(30)


def test_a_client_that_does_not_read_its_answer_holds_nothing_but_itself(serve):
    path, proc = serve(workers=1, timeout=3.0)
    with socket.socket(socket.AF_UNIX) as lazy:
        lazy.connect(path)
        lazy.sendall(b"big 8\n" + b"%08d" % (16 << 20))     # a 16 MB answer it never reads
        time.sleep(0.3)
        started = time.monotonic()
        assert ask(path, "echo", b"meanwhile") == b"ok:echo:meanwhile"
        assert time.monotonic() - started < 2.5             # not after the lazy one's deadline
        got = lazy.recv(1 << 16)
        assert got.startswith(b"B")


def test_the_loop_does_not_spin_while_connections_wait(serve):
    """Connections in every waiting state (sent nothing, half a request, holding the budget,
    waiting for the budget, queued behind the busy worker) cost the loop no CPU between its
    deadline checks."""
    path, proc = serve(workers=1, memory_budget=100, max_size=100, timeout=20.0, free_bytes=16)
    busy = threading.Thread(target=ask, args=(path, "sleep", b"3"))
    busy.start()
    time.sleep(0.3)
    held = []
    # nothing; half a request; a whole one (queued behind the busy worker); one that sends more
    # than the budget has room for (it holds what is left, and waits for more room)
    for data in (b"", b"echo 5\nab", b"echo 0\n", b"echo 500\n" + b"x" * 200):
        s = socket.socket(socket.AF_UNIX)
        s.connect(path)
        s.sendall(data)
        if data.endswith(b" 0\n"):
            s.shutdown(socket.SHUT_WR)         # as spamc does: its end of the stream is readable from now on
        held.append(s)
        time.sleep(0.1)
    assert eventually(lambda: stats(path)["states"] == ["budget", "queued", "reading", "reading", "working"])
    assert stats(path)["budget"] == 100
    before = cpu_seconds(proc.pid)
    time.sleep(1.0)
    assert cpu_seconds(proc.pid) - before < 0.3                 # a busy loop would take about 1 s
    for s in held:
        s.close()
    busy.join(30)


def test_out_of_file_descriptors_the_loop_rests_its_listener_instead_of_spinning(serve):
    path, proc = serve(workers=1, nofile=8, timeout=20.0)
    idle = []
    for _ in range(30):                                      # more than it can accept: the rest wait in the backlog
        s = socket.socket(socket.AF_UNIX)
        s.connect(path)
        idle.append(s)
    time.sleep(0.5)
    before = cpu_seconds(proc.pid)
    time.sleep(1.0)
    assert cpu_seconds(proc.pid) - before < 0.3                 # not a loop on the failing accept
    for s in idle:
        s.close()
    assert ask(path, "echo", b"served") == b"ok:echo:served"
    assert proc.stderr.read1(1 << 16).count(b"accept failed") >= 1


def _behind_a_sleeper(path: str, requests: list, sleep: bytes = b"0.8") -> list:
    """Answers to ``requests`` ((command, body) pairs) sent in this order, 50 ms apart, while the
    one worker sleeps, so that they are all queued, in order, when it is free again."""
    return in_threads([lambda: ask(path, "sleep", sleep)] +
                      [lambda i=i, c=c, b=b: (time.sleep(0.3 + 0.05 * i), ask(path, c, b))[1]
                       for i, (c, b) in enumerate(requests)])[1:]


def test_requests_queued_behind_a_busy_worker_are_handed_out_together(serve):
    path, proc = serve(workers=1)
    requests = [("becho", b"%d" % i) for i in range(5)]
    assert _behind_a_sleeper(path, requests) == [b"ok:becho:%d" % i for i in range(5)]
    assert stats(path)["batches"] == {"1": 1, "5": 1}         # the sleeper alone, then the five in one
    # a request that cannot be batched is handed out alone, and ends the batch before it
    requests = [("becho", b"a"), ("becho", b"b"), ("echo", b"c"), ("becho", b"d")]
    assert _behind_a_sleeper(path, requests) == [b"ok:becho:a", b"ok:becho:b", b"ok:echo:c",
                                                          b"ok:becho:d"]
    got = stats(path)["batches"]
    assert got["2"] == 1 and got["1"] == 1 + 1 + 2 and got["5"] == 1


def test_a_batch_that_fails_as_a_whole_is_answered_request_by_request(serve):
    path, proc = serve(workers=1)
    requests = [("becho", b"1"), ("bfail", b""), ("becho", b"2")]
    assert _behind_a_sleeper(path, requests) == [b"ok:becho:1", b"fallback:failed", b"ok:becho:2"]
    assert stats(path)["batches"] == {"1": 1, "3": 1}


def test_a_worker_killed_by_one_of_its_batch_costs_the_others_nothing(serve):
    path, proc = serve(workers=1)
    before = stats(path)["workers"]
    requests = [("becho", b"1"), ("bdie", b""), ("becho", b"2")]
    # the batch's worker dies; each request goes again alone: only the one that kills gets the fallback
    assert _behind_a_sleeper(path, requests) == [b"ok:becho:1", b"fallback:failed", b"ok:becho:2"]
    assert stats(path)["batches"] == {"1": 4, "3": 1}
    after = stats(path)["workers"]
    assert len(after) == 1 and not set(after) & set(before)
    assert ask(path, "becho", b"next") == b"ok:becho:next"


def test_a_batch_holds_at_most_a_megabyte_of_requests_beyond_its_first(serve):
    path, proc = serve(workers=1, memory_budget=8 << 20, max_size=1 << 20)
    body = b"x" * (400 << 10)
    requests = [("becho", body)] * 4
    assert _behind_a_sleeper(path, requests) == [b"ok:becho:" + body] * 4
    assert stats(path)["batches"] == {"1": 1, "2": 2}           # 400 + 400 KB, then the next two
