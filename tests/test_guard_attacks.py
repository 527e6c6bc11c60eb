"""The familiarity guard under attack: no client changes another's verdict, and cheap mail
cannot turn spam into "unsure".

The red team's finding (issue "Tried as an attacker..."): ``spamkit serve`` kept one window
of recent familiarities per worker, shared by every client; after 20 CHECKs of random tokens
from one spamc client, a spam that scored 9.4/5.0 scored ``No, score=4.9 ... SPAMKIT_UNSURE``
for every client. Now a server judges each message alone (the floor, as pipe mode does), and
the stream of a mailbox run keeps messages below the floor out of its window. Each test runs
the real server, the real spamc and spamkit-pipe, or the real command line.
"""

from __future__ import annotations

import json
import mailbox
import random
import subprocess
import sys

import pytest
from click.testing import CliRunner

from spamkit.cli import cli
from spamkit.filterfile.spamfilter import SpamFilter

from conftest import SAMPLE, start_server, stop_server

#: how many messages of random tokens come before the spam (the red team sent 20)
BURST = 30
#: seconds within which a real client is answered under attack: under a second here (docs/
#: mail-filtering.md); the attacks made it wait out the server's 30 s timeout. The margin is for
#: a loaded CI machine, not a goal: what is asserted is "not held until the attackers' deadline".
PROMPT = 5.0


def random_tokens(i: int) -> bytes:
    """A message of 200 random words: nothing a filter has seen, the cheapest mail to send."""
    rng = random.Random(i)
    words = b" ".join(bytes(rng.choice(b"bcdfghjklmnpqrstvwxz") for _ in range(7)) for _ in range(200))
    return b"From: m%d@example.org\nTo: you@example.net\nSubject: %s\n\n%s\n" % (i, words[:40], words)


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    path = tmp_path_factory.mktemp("attack") / "m.spamkit"
    assert CliRunner().invoke(cli, ["train", str(SAMPLE), "-o", str(path)]).exit_code == 0
    return path


@pytest.fixture(scope="module")
def spam(model) -> bytes:
    """A spam the filter calls spam, familiar enough that only a stream could make it unsure."""
    f = SpamFilter.load(model)
    for path in sorted((SAMPLE / "spam").iterdir()):
        raw = path.read_bytes()
        verdict, _ = f.verdict(raw)
        _, familiarity = f.score([raw])
        if verdict == "spam" and familiarity[0] > f.guard.typical:
            return raw
    raise AssertionError("no spam of the sample corpus is called spam")


def test_the_guard_keeps_a_burst_below_the_floor_out_of_its_window(model, spam):
    """The unit: familiarities of random-token messages are far below the floor; the window
    they would have dragged down stays where the real mail put it."""
    f = SpamFilter.load(model)
    _, familiarity = f.score([random_tokens(i) for i in range(BURST)])
    assert max(familiarity) < f.guard.floor
    proba, known = f.score([spam])
    f.guard.reset()
    verdicts = [f.verdict_from(row, k, alone=False)[0] for row, k in zip(*f.score([random_tokens(i)
                                                                                 for i in range(BURST)]))]
    assert f.verdict_from(proba[0], known[0], alone=False)[0] == "spam"
    assert f.guard.counts["unfamiliar"] == BURST and f.guard.counts["drift"] == 0 and "spam" not in verdicts


def test_a_spamc_clients_burst_changes_no_verdict_of_another_client(model, spam):
    from test_spamd import Server
    server = Server(model, "--workers", "1")            # one worker: every request sees the same process
    try:
        before = server.spamc("-c", data=spam, user="alice")
        for i in range(BURST):
            server.spamc("-c", data=random_tokens(i), user="mallory")
        after = [server.spamc("-c", data=spam, user=user) for user in ("alice", "mallory", None)]
        symbols = server.spamc("-y", data=spam, user="alice")
    finally:
        server.stop()
    assert before.returncode == 1, before.stdout                   # spamc -c: 1 when spam
    for check in after:
        assert (check.returncode, check.stdout) == (before.returncode, before.stdout)
    assert "SPAMKIT_SPAM" in symbols.stdout.decode()
    # and the server's verdict is pipe mode's, where no stream exists
    pipe = subprocess.run([sys.executable, "-m", "spamkit", "filter", str(model), "-"], input=spam,
                          capture_output=True, timeout=120)
    assert pipe.returncode == 0 and pipe.stdout.startswith(b"X-Spam-Status: Yes")


def test_a_spamkit_pipe_clients_burst_changes_no_verdict(model, spam, tmp_path):
    sock = tmp_path / "s.sock"
    proc = start_server(model, sock, "--workers", "1")

    def client(raw):
        return subprocess.run([sys.executable, "-m", "spamkit.mail.serve.client", "--socket", str(sock)], input=raw,
                              capture_output=True, timeout=120)
    try:
        before = client(spam)
        for i in range(BURST):
            client(random_tokens(i))
        after = client(spam)
    finally:
        stop_server(proc)
    assert before.returncode == 0 and before.stdout.startswith(b"X-Spam-Status: Yes")
    assert (after.returncode, after.stdout) == (before.returncode, before.stdout)


def test_a_burst_in_a_mailbox_does_not_make_the_spam_after_it_unsure(model, spam, tmp_path):
    """A mailbox run keeps its stream (mail unlike the training mail, as a whole, is a drift),
    but a burst of random-token mail ahead of a spam moves nothing: the spam is spam."""
    box = mailbox.MH(tmp_path / "inbox", create=True)
    for i in range(BURST):
        box.add(random_tokens(i))
    box.add(spam)                                          # MH numbers: the spam comes last
    out = CliRunner().invoke(cli, ["filter", str(model), str(tmp_path / "inbox"), "--dry-run", "--jobs", "1"])
    assert out.exit_code == 0, out.output
    lines = [line.split("\t") for line in out.output.splitlines() if "\t" in line]
    assert len(lines) == BURST + 1
    assert lines[-1][0].endswith(f"/{BURST + 1}") and lines[-1][1] == "spam", lines[-1]
    summary = json.loads(CliRunner().invoke(cli, ["filter", str(model), str(tmp_path / "inbox"), "--dry-run",
                                                  "--json"]).output)
    assert summary["guarded"]["unfamiliar"] == BURST and summary["guarded"]["drift"] == 0


# ----------------------------------------------------------------------------- servers under hostile peers

def test_connections_that_declare_16_mib_and_send_nothing_hold_no_memory(model, spam):
    """Four spamd requests announcing 16 MiB each reserved the whole 64 MiB budget, and real
    spamc calls waited 29-30 s and came back untagged: memory is now taken as bytes arrive."""
    import socket
    import time
    from test_spamd import Server
    server = Server(model, "--workers", "1")
    hogs = []
    try:
        for _ in range(4):
            s = socket.create_connection(("127.0.0.1", server.port))
            s.sendall(b"CHECK SPAMC/1.5\r\nContent-length: 16777216\r\n\r\n")
            hogs.append(s)
        time.sleep(0.3)
        started = time.monotonic()
        check = server.spamc("-c", data=spam)
        took = time.monotonic() - started
        tagged = server.spamc(data=spam)
    finally:
        for s in hogs:
            s.close()
        server.stop()
    assert check.returncode == 1 and check.stdout.decode().endswith("/5.0\n"), check.stdout   # scored: spam
    assert took < PROMPT, took
    assert b"\nX-Spam-Status: Yes" in tagged.stdout.split(b"\n\n")[0]


def test_idle_sockets_filling_every_slot_give_way_to_a_real_client(model, spam):
    """260 idle connections made every spamc call pass its message through untagged at once (256
    slots): a client that sends its request now takes the slot of one quiet for over a second."""
    import socket
    import time
    from test_spamd import Server
    server = Server(model, "--workers", "1")
    idle = []
    try:
        for _ in range(260):
            idle.append(socket.create_connection(("127.0.0.1", server.port)))
        time.sleep(2.5)                                        # all accepted, and quiet for over a second
        started = time.monotonic()
        tagged = server.spamc(data=spam)
        took = time.monotonic() - started
    finally:
        for s in idle:
            s.close()
        server.stop()
    assert tagged.returncode == 0 and b"\nX-Spam-Status: Yes" in tagged.stdout.split(b"\n\n")[0], tagged.stdout[:400]
    assert took < PROMPT, took


def test_tell_for_ever_new_users_stops_at_the_quota(model, tmp_path):
    """TELL with a fresh User: each time wrote a 4 MB filter file a user without limit (82 MB in
    4.3 s): now each user's file holds what they taught (a few KB), at most --max-user-filters
    files, then TELL is refused and nothing more is written."""
    from test_spamd import Server
    users = tmp_path / "users"
    users.mkdir()
    server = Server(model, "--workers", "1", "--user-models", str(users), "--allow-tell", "--max-user-filters", "3")
    try:
        for i in range(6):
            server.spamc("-L", "spam", data=random_tokens(i), user=f"user{i}")
        checked = server.spamc("-c", data=random_tokens(99), user="user5")      # still answered, by the site filter
    finally:
        log = server.stop()
    assert sorted(p.name for p in users.iterdir()) == ["user0.taught", "user1.taught", "user2.taught"]
    assert max(p.stat().st_size for p in users.iterdir()) < 4 * len(random_tokens(0))     # the message, not a filter
    assert "no room for a new user's filter" in log and "--max-user-filters 3" in log
    assert checked.stdout.decode().endswith("/5.0\n")


def test_the_filter_cache_is_bounded_in_bytes(model, tmp_path):
    """Filters loaded by a worker are dropped, least recently used first, past the byte bound
    (the one asked for stays): 70 users' filters took a worker to 2.4 GB."""
    from spamkit.mail.serve.pool import FilterCache, filter_memory
    from spamkit.filterfile.spamfilter import SpamFilter
    paths = []
    for i in range(6):
        path = tmp_path / f"u{i}.spamkit"
        path.write_bytes(model.read_bytes())
        paths.append(path)
    one = filter_memory(SpamFilter.load(model))
    assert one > 100_000                                       # the arrays and the vocabulary are counted
    cache = FilterCache(SpamFilter.load, max_bytes=int(2.5 * one))
    for path in paths:
        cache.get(path)
    assert len(cache._filters) == 2 and list(cache._filters)[-1] == str(paths[-1])
    tiny = FilterCache(SpamFilter.load, max_bytes=1)
    for path in paths:
        assert tiny.get(path) is not None
    assert len(tiny._filters) == 1


def test_one_address_cannot_take_every_slot(model, spam):
    """Connections that keep sending a byte now and then are never idle; from one address they
    may hold a quarter of the slots (64 of 256; 256 of them held every slot before), and a client
    from another address is served."""
    import socket
    import threading
    import time
    from test_spamd import Server
    server = Server(model, "--workers", "1")
    held, stop = [], threading.Event()
    try:
        for _ in range(260):
            s = socket.socket()
            s.bind(("127.0.0.2", 0))                         # another loopback address than spamc's
            s.connect(("127.0.0.1", server.port))
            held.append(s)

        def dribble():
            while not stop.is_set():
                for s in held:
                    try:
                        s.send(b"C")
                    except OSError:
                        pass
                time.sleep(0.3)
        thread = threading.Thread(target=dribble, daemon=True)
        thread.start()
        time.sleep(2.5)                    # past DRAIN_SECONDS: those told "busy" are gone, the rest hold on
        started = time.monotonic()
        tagged = server.spamc(data=spam)
        took = time.monotonic() - started
    finally:
        stop.set()
        for s in held:
            s.close()
        server.stop()
    assert b"\nX-Spam-Status: Yes" in tagged.stdout.split(b"\n\n")[0], tagged.stdout[:300]
    assert took < PROMPT, took
