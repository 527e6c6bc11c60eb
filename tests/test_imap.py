"""spamkit filter on IMAP folders, against a real Dovecot server (tests/dovecot.py).

Messages are identified by an ``X-Test-Id`` field added when they are appended, and counted
on the server's disk, so "exactly once" is checked on what the server really holds.
"""

from __future__ import annotations

import itertools
import os
import re
import signal
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

from spamkit.cli import cli
from spamkit.filterfile.config import BEST, build_filter
from spamkit.corpus import Corpus
from spamkit.mail.imap import ImapFilter, ImapURL, connect
from spamkit.mail.imapmoves import MOVING
from spamkit.filterfile.spamfilter import SpamFilter

from conftest import REPO, SAMPLE, shared_corpus
from dovecot import Dovecot

ENV = {**os.environ, "PYTHONPATH": str(REPO)}
_ID = re.compile(rb"^X-Test-Id: (\d+)\r?$", re.M)


@pytest.fixture(scope="module")
def dovecot():
    server = Dovecot()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    path = tmp_path_factory.mktemp("imap") / "m.spamkit"
    assert CliRunner().invoke(cli, ["train", str(SAMPLE), "-o", str(path)]).exit_code == 0
    return path


def sample_messages(n: int) -> list[bytes]:
    """``n`` messages of the sample corpus, spam and ham taking turns."""
    pairs = zip(sorted((SAMPLE / "spam").iterdir()), sorted((SAMPLE / "ham").iterdir()))
    files = [f for pair in pairs for f in pair]
    return [f.read_bytes() for f in itertools.islice(itertools.cycle(files), n)]


def fill(dovecot, messages: list[bytes]) -> str:
    """A new user whose INBOX holds ``messages``, each with ``X-Test-Id: i`` on top."""
    user = dovecot.new_user()
    client = dovecot.client(user)
    try:
        batch = [b"X-Test-Id: %d\r\n" % i + raw for i, raw in enumerate(messages)]
        for i in range(0, len(batch), 100):
            client.multiappend("INBOX", batch[i:i + 100])
    finally:
        client.logout()
    return user


def ids_on_disk(dovecot, user: str) -> dict[str, list[int]]:
    """Folder -> test ids of the messages in it, read from the server's Maildir (while nothing
    else runs: a file renamed meanwhile would be missed)."""
    out = {}
    for folder, files in dovecot.maildir_files(user).items():
        out[folder] = sorted(int(_ID.search(f.read_bytes()).group(1)) for f in files)
    return out


def some_moved(dovecot, user: str) -> bool:
    """Whether Junk has a message yet (polled while the filter runs)."""
    return bool(dovecot.maildir_files(user).get("Junk"))


def run_filter(dovecot, model, user, *options, env=None):
    return CliRunner().invoke(cli, ["filter", str(model), dovecot.url(user), "--ca-file", str(dovecot.cert),
                                    *options], env={"SPAMKIT_IMAP_PASSWORD": "secret", **(env or {})})


class ServerChanging(Exception):
    """A FETCH answered without a message's bytes: another session (the filter being watched)
    changed or expunged it while we looked; a poll looks again."""


def server_state(dovecot, user) -> dict:
    """folder -> {test id: (flags, raw)} as the server reports them (ServerChanging when a
    message changes under the FETCH: the server then sends its new FLAGS alone)."""
    client = dovecot.client(user)
    state = {}
    try:
        for _, _, folder in client.list_folders():
            client.select_folder(folder, readonly=True)
            data = client.fetch(client.search("ALL"), ["FLAGS", "BODY.PEEK[]"])
            if any(b"BODY[]" not in d for d in data.values()):
                raise ServerChanging(folder)
            state[folder] = {int(_ID.search(d[b"BODY[]"]).group(1)): (set(d[b"FLAGS"]), d[b"BODY[]"])
                             for d in data.values()}
    finally:
        client.logout()
    return state


@pytest.mark.slow
def test_a_thousand_real_messages_filtered_and_moved_exactly_once(dovecot, tmp_path):
    with Corpus(shared_corpus("trec07p-dev/trec07p-dev.tar.gz")) as corpus:
        msgs = list(itertools.islice(corpus, 2000))
    model = tmp_path / "trec.spamkit"
    build_filter(**BEST).fit(msgs[1000:]).save(model)
    user = fill(dovecot, [m.raw for m in msgs[:1000]])
    result = run_filter(dovecot, model, user, "--tag", "--move-spam-to", "Junk", "--json")
    assert result.exit_code == 0, result.output
    on_disk = ids_on_disk(dovecot, user)
    assert sorted(on_disk["INBOX"] + on_disk["Junk"]) == list(range(1000))   # each exactly once
    state = server_state(dovecot, user)
    spam_filter = SpamFilter.load(model)
    for folder, messages in state.items():
        for i, (flags, raw) in messages.items():
            verdict, p = spam_filter.verdict(raw)
            assert (folder == "Junk") == (verdict == "spam"), i
            assert {b"$Junk": "spam", b"$NotJunk": "ham", b"$SpamkitUnsure": "unsure"}[
                next(f for f in flags if f in (b"$Junk", b"$NotJunk", b"$SpamkitUnsure"))] == verdict
            assert f"$SpamkitP{min(int(p * 100), 99):02d}".encode() in flags
            assert b"\\Seen" not in flags                               # read with BODY.PEEK
    assert len(state["Junk"]) > 100 and len(state["INBOX"]) > 100
    # a second run finds everything judged and changes nothing
    again = run_filter(dovecot, model, user, "--tag", "--move-spam-to", "Junk", "--json")
    assert again.exit_code == 0, again.output
    assert f'"already_tagged": {len(on_disk["INBOX"])},' in again.output and '"messages": 0,' in again.output
    assert ids_on_disk(dovecot, user) == on_disk


@pytest.mark.slow
def test_a_connection_cut_mid_run_loses_nothing_and_the_next_run_finishes(dovecot, model):
    user = fill(dovecot, sample_messages(1500))
    proc = subprocess.Popen([sys.executable, "-m", "spamkit", "filter", str(model), dovecot.url(user), "--tag",
                             "--move-spam-to", "Junk", "--ca-file", str(dovecot.cert)],
                            env={**ENV, "SPAMKIT_IMAP_PASSWORD": "secret"}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not some_moved(dovecot, user):
        time.sleep(0.02)
    assert dovecot.kill_sessions(user) >= 1                             # the filter's own session
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, err.decode()
    assert b"no message is lost" in err and b"Traceback" not in err
    on_disk = ids_on_disk(dovecot, user)
    assert set(on_disk["INBOX"]) | set(on_disk["Junk"]) == set(range(1500))      # nothing lost
    assert 0 < len(on_disk["Junk"])
    # Dovecot's MOVE is a copy and an expunge: killed between them it leaves the batch in both
    # folders (CI saw 50). Only messages still marked as being moved may be in both.
    twice = set(on_disk["INBOX"]) & set(on_disk["Junk"])
    inbox = server_state(dovecot, user)["INBOX"]
    assert all(MOVING.encode() in inbox[i][0] for i in twice)
    result = run_filter(dovecot, model, user, "--tag", "--move-spam-to", "Junk")
    assert result.exit_code == 0, result.output
    on_disk = ids_on_disk(dovecot, user)
    assert sorted(on_disk["INBOX"] + on_disk["Junk"]) == list(range(1500))
    state = server_state(dovecot, user)
    assert all(flags & {b"$Junk", b"$NotJunk", b"$SpamkitUnsure"} for m in state.values() for flags, _ in m.values())
    assert all(b"$Junk" in flags for flags, _ in state["Junk"].values())
    assert not any(MOVING.encode() in flags for m in state.values() for flags, _ in m.values())


def test_dry_run_changes_nothing_and_lists_each_message(dovecot, model):
    user = fill(dovecot, sample_messages(20))
    before = server_state(dovecot, user)
    result = run_filter(dovecot, model, user, "--tag", "--move-spam-to", "Junk", "--dry-run")
    assert result.exit_code == 0, result.output
    assert result.output.count("would tag") == 20 and "would tag, move to Junk" in result.output
    assert server_state(dovecot, user) == before


@pytest.mark.parametrize("use_move", [True, False])
def test_move_and_the_copy_expunge_path_give_the_same_folders(dovecot, model, use_move):
    user = fill(dovecot, sample_messages(60))
    spam_filter = SpamFilter.load(model)
    url = ImapURL.parse(dovecot.url(user))
    client = connect(url, "secret", ca_file=str(dovecot.cert))
    try:
        runner = ImapFilter(spam_filter.verdict, tag=True, move={"spam": "Junk"}, use_move=use_move, batch=7)
        summary = runner.run(client, url)
    finally:
        client.logout()
    on_disk = ids_on_disk(dovecot, user)
    assert sorted(on_disk["INBOX"] + on_disk["Junk"]) == list(range(60))
    assert summary.moved == {"Junk": len(on_disk["Junk"])} and summary.messages == 60
    expected_spam = {i for i, raw in enumerate(sample_messages(60)) if spam_filter.verdict(raw)[0] == "spam"}
    assert set(on_disk["Junk"]) == expected_spam


@pytest.mark.parametrize("use_move", [True, False])
def test_the_next_run_finishes_moves_that_were_cut_short(dovecot, model, tmp_path, use_move):
    """The states a cut leaves, made by hand on the server: spam copied to Junk and still in
    INBOX, spam marked for the move and never copied, a ham marked (its verdict is not moved),
    and a copy in Junk still marked. The next run leaves each message in one folder, where
    its verdict puts it, and no mark anywhere; ``learn --corrections`` meanwhile takes none of
    the marked spam in INBOX for a person's correction."""
    user = fill(dovecot, sample_messages(30))
    assert run_filter(dovecot, model, user, "--tag", "--move-spam-to", "Junk").exit_code == 0
    settled = ids_on_disk(dovecot, user)
    mark = MOVING.encode()
    client = dovecot.client(user)
    try:
        client.select_folder("Junk")
        junk = sorted(client.search("ALL"))
        assert len(junk) >= 6
        client.copy(junk[:3], "INBOX")                    # copied, the source's copy not expunged
        client.move(junk[3:5], "INBOX")                   # never copied
        client.add_flags(junk[5:6], [mark])               # a copy whose mark was not taken off
        client.select_folder("INBOX")
        client.add_flags(client.search(["KEYWORD", "$Junk"]), [mark])
        ham = sorted(client.search(["KEYWORD", "$NotJunk"]))[:1]
        client.add_flags(ham, [mark])
    finally:
        client.logout()
    cut = ids_on_disk(dovecot, user)
    assert len(set(cut["INBOX"]) & set(cut["Junk"])) == 3
    learning = tmp_path / "learning.spamkit"
    learning.write_bytes(model.read_bytes())
    result = CliRunner().invoke(cli, ["learn", str(learning), "--corrections", dovecot.url(user), "--junk", "Junk",
                                      "--ca-file", str(dovecot.cert), "--json"], env={"SPAMKIT_IMAP_PASSWORD": "secret"})
    assert result.exit_code == 0 and '"ham": 0,\n    "spam": 0' in result.output, result.output

    url = ImapURL.parse(dovecot.url(user))
    client = connect(url, "secret", ca_file=str(dovecot.cert))
    try:
        runner = ImapFilter(SpamFilter.load(model).verdict, tag=True, move={"spam": "Junk"}, use_move=use_move)
        summary = runner.run(client, url)
    finally:
        client.logout()
    assert ids_on_disk(dovecot, user) == settled
    assert summary.messages == 0 and summary.already_tagged == len(settled["INBOX"])
    assert summary.recovered == [f"{url}: 6 messages whose move was cut short: 3 already in Junk: removed from INBOX; "
                                 "2 moved again; 1 left in INBOX (their verdict is not moved, or they were deleted)"]
    state = server_state(dovecot, user)
    assert not any(mark in flags for m in state.values() for flags, _ in m.values())
    assert all(b"$Junk" in flags for flags, _ in state["Junk"].values())


def test_credentials_tls_and_clear_errors(dovecot, model, tmp_path):
    user = fill(dovecot, sample_messages(4))
    # STARTTLS on imap://
    result = CliRunner().invoke(cli, ["filter", str(model), dovecot.url(user, starttls=True), "--tag",
                                      "--ca-file", str(dovecot.cert)], env={"SPAMKIT_IMAP_PASSWORD": "secret"})
    assert result.exit_code == 0, result.output
    user2 = fill(dovecot, sample_messages(4))
    # the password from a command, and from ~/.netrc
    result = CliRunner().invoke(cli, ["filter", str(model), dovecot.url(user2), "--dry-run", "--ca-file",
                                      str(dovecot.cert), "--password-command", "echo secret"],
                                env={"SPAMKIT_IMAP_PASSWORD": None})
    assert result.exit_code == 0, result.output
    home = tmp_path / "home"
    home.mkdir()
    (home / ".netrc").write_text(f"machine 127.0.0.1 login {user2} password secret\n")
    (home / ".netrc").chmod(0o600)
    result = CliRunner().invoke(cli, ["filter", str(model), dovecot.url(user2), "--dry-run", "--ca-file",
                                      str(dovecot.cert)], env={"HOME": str(home), "SPAMKIT_IMAP_PASSWORD": None})
    assert result.exit_code == 0, result.output
    # no password anywhere, a wrong one, a password in the address, an unverifiable certificate
    for args, env, says in (
            ([dovecot.url(user2), "--ca-file", str(dovecot.cert)], {"HOME": str(tmp_path), "SPAMKIT_IMAP_PASSWORD": None},
             "no password for"),
            ([dovecot.url(user2), "--ca-file", str(dovecot.cert)], {"SPAMKIT_IMAP_PASSWORD": "wrong"}, "login refused"),
            ([f"imaps://{user2}:secret@127.0.0.1:{dovecot.imaps_port}/INBOX"], {}, "never goes on the command line"),
            ([dovecot.url(user2)], {"SPAMKIT_IMAP_PASSWORD": "secret", "SSL_CERT_FILE": os.devnull},
             "certificate does not verify")):
        result = CliRunner().invoke(cli, ["filter", str(model), *args, "--dry-run"], env=env)
        assert result.exit_code == 1 and says in result.output, result.output
        assert "Traceback" not in result.output
    result = CliRunner().invoke(cli, ["filter", str(model), dovecot.url(user2), "--dry-run", "--insecure"],
                                env={"SPAMKIT_IMAP_PASSWORD": "secret"})
    assert result.exit_code == 0 and "--insecure" in result.output
    # IMAP and local folders are not mixed
    result = CliRunner().invoke(cli, ["filter", str(model), dovecot.url(user2), str(tmp_path), "--dry-run"])
    assert result.exit_code == 2 and "same run" in result.output


def _append(dovecot, user, ident: int, raw: bytes) -> None:
    client = dovecot.client(user)
    try:
        client.append("INBOX", b"X-Test-Id: %d\r\n" % ident + raw)
    finally:
        client.logout()


def _wait_for(condition, seconds: float = 60.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if condition():
                return True
        except (FileNotFoundError, AttributeError, ServerChanging):
            pass                                    # a file renamed, or a message changed, while we looked
        time.sleep(0.1)
    return False


def test_watch_filters_new_mail_as_it_arrives_and_reconnects(dovecot, model):
    spam_filter = SpamFilter.load(model)
    spam = next(raw for raw in sample_messages(40) if spam_filter.verdict(raw)[0] == "spam")
    user = fill(dovecot, sample_messages(6))
    proc = subprocess.Popen([sys.executable, "-m", "spamkit", "filter", str(model), dovecot.url(user), "--tag",
                             "--move-spam-to", "Junk", "--watch", "--ca-file", str(dovecot.cert), "--json"],
                            env={**ENV, "SPAMKIT_IMAP_PASSWORD": "secret"}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        def judged_first_pass():
            state = server_state(dovecot, user)
            return sum(len(m) for m in state.values()) == 6 and all(
                flags & {b"$Junk", b"$NotJunk", b"$SpamkitUnsure"} for m in state.values() for flags, _ in m.values())
        assert _wait_for(judged_first_pass)
        _append(dovecot, user, 100, spam)                                 # IDLE tells the watcher
        # the move done on disk (Dovecot's MOVE links the file into Junk, then expunges it from
        # INBOX: a session killed between the two leaves it in both, the server's own window)
        assert _wait_for(lambda: (lambda d: 100 in d.get("Junk", []) and 100 not in d.get("INBOX", []))(
            ids_on_disk(dovecot, user)))
        assert dovecot.kill_sessions(user) >= 1                           # the connection drops ...
        time.sleep(0.5)
        _append(dovecot, user, 101, spam)                                 # ... and comes back
        assert _wait_for(lambda: 101 in ids_on_disk(dovecot, user).get("Junk", []))
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err.decode()
    assert b"connecting again" in err and b"Traceback" not in err
    on_disk = ids_on_disk(dovecot, user)
    assert sorted(on_disk["INBOX"] + on_disk["Junk"]) == [0, 1, 2, 3, 4, 5, 100, 101]
    assert '"messages": 8' in out.decode()


@pytest.mark.parametrize("when", ["while the folder is filtered", "just before IDLE"])
def test_watch_misses_no_message_that_arrives_before_idle_begins(dovecot, model, when):
    # Dovecot does not announce during an IDLE a message that arrived before the IDLE began; it
    # reports it in the next command's response. The watcher asks (a NOOP before each IDLE) and
    # ends each IDLE after idle_seconds to read its DONE: a message appended while the first
    # pass runs, or between the NOOP and the IDLE, is filtered all the same.
    import threading
    spam_filter = SpamFilter.load(model)
    spam = next(raw for raw in sample_messages(40) if spam_filter.verdict(raw)[0] == "spam")
    user = fill(dovecot, sample_messages(4))
    url = ImapURL.parse(dovecot.url(user))
    runner = ImapFilter(spam_filter.verdict, tag=True, move={"spam": "Junk"})
    appended = []

    def arrive():
        if not appended:
            appended.append(True)
            _append(dovecot, user, 100, spam)

    def connect_again():
        client = connect(url, "secret", ca_file=str(dovecot.cert))
        hook = "run" if when == "while the folder is filtered" else "idle"
        original = client.idle if hook == "idle" else None
        if hook == "idle":
            def idle():
                arrive()                                  # after the NOOP, before the IDLE command
                return original()
            client.idle = idle
        return client

    if when == "while the folder is filtered":
        real_run = runner.run

        def run(client, target):
            done = real_run(client, target)
            arrive()                                      # after the pass, before the NOOP
            return done
        runner.run = run
    watcher = threading.Thread(target=runner.watch, args=(connect_again, url), kwargs={"idle_seconds": 1.0})
    watcher.start()
    try:
        assert _wait_for(lambda: 100 in ids_on_disk(dovecot, user).get("Junk", []), seconds=30)
    finally:
        runner.stop_requested = True
        watcher.join(30)
    assert not watcher.is_alive()
    on_disk = ids_on_disk(dovecot, user)
    assert sorted(on_disk["INBOX"] + on_disk.get("Junk", [])) == [0, 1, 2, 3, 100]


def test_learning_from_imap_folders_reads_each_message_once(dovecot, model, tmp_path):
    path = tmp_path / "m.spamkit"
    path.write_bytes(model.read_bytes())
    user = fill(dovecot, sample_messages(12))
    env = {"SPAMKIT_IMAP_PASSWORD": "secret"}
    args = ["learn", str(path), "--spam", dovecot.url(user), "--ca-file", str(dovecot.cert), "--json"]
    first = CliRunner().invoke(cli, args, env=env)
    assert first.exit_code == 0, first.output
    assert '"learned": {\n    "spam": 12\n  }' in first.output
    learned = SpamFilter.load(path)
    key = next(iter(learned.imap_seen))
    assert key.endswith("/INBOX") and learned.imap_seen[key][1] == 12     # UIDVALIDITY and the last UID read
    again = CliRunner().invoke(cli, args, env=env)
    assert again.exit_code == 0 and '"already_learned": 0' in again.output and '"learned": {}' in again.output
    _append(dovecot, user, 99, sample_messages(13)[12])
    third = CliRunner().invoke(cli, args, env=env)
    assert third.exit_code == 0 and '"learned": {' in third.output and SpamFilter.load(path).imap_seen[key][1] == 13


def test_corrections_learn_what_the_person_moved_in_and_out_of_junk(dovecot, model, tmp_path):
    path = tmp_path / "m.spamkit"
    path.write_bytes(model.read_bytes())
    spam_filter = SpamFilter.load(path)
    msgs = sample_messages(30)
    user = fill(dovecot, msgs)
    assert run_filter(dovecot, path, user, "--tag", "--move-spam-to", "Junk").exit_code == 0
    client = dovecot.client(user)
    try:                                    # the person corrects: one spam back out, two others into Junk
        client.select_folder("Junk")
        back = sorted(client.search("ALL"))[:1]
        client.select_folder("INBOX")
        into = sorted(client.search(["NOT", "KEYWORD", "$Junk"]))[:2]
        assert len(back) == 1 and len(into) == 2
        client.move(into, "Junk")
        client.select_folder("Junk")
        client.move(back, "INBOX")
    finally:
        client.logout()
    args = ["learn", str(path), "--corrections", dovecot.url(user), "--junk", "Junk", "--ca-file", str(dovecot.cert),
            "--json"]
    result = CliRunner().invoke(cli, args, env={"SPAMKIT_IMAP_PASSWORD": "secret"})
    assert result.exit_code == 0, result.output
    assert '"corrections": {\n    "ham": 1,\n    "spam": 2\n  }' in result.output
    after = SpamFilter.load(path)
    assert sorted(after.learned.values()) == ["ham", "spam", "spam"]
    state = server_state(dovecot, user)
    assert all(b"$Junk" in flags for flags, _ in state["Junk"].values())        # keywords now say what was learned
    assert not any(b"$Junk" in flags for flags, _ in state["INBOX"].values())
    again = CliRunner().invoke(cli, args, env={"SPAMKIT_IMAP_PASSWORD": "secret"})
    assert again.exit_code == 0 and '"ham": 0,\n    "spam": 0' in again.output
    assert len(SpamFilter.load(path).learned) == 3 and spam_filter.learned == {}


def test_a_missing_folder_is_named_not_reported_as_a_failed_connection(dovecot, model, tmp_path):
    user = fill(dovecot, sample_messages(2))
    env = {"SPAMKIT_IMAP_PASSWORD": "secret"}
    path = tmp_path / "m.spamkit"
    path.write_bytes(model.read_bytes())
    for args in (["filter", str(model), dovecot.url(user, "Nowhere"), "--tag"],
                 ["filter", str(model), dovecot.url(user, "Nowhere"), "--dry-run"],
                 ["learn", str(path), "--spam", dovecot.url(user, "Nowhere")]):
        result = CliRunner().invoke(cli, [*args, "--ca-file", str(dovecot.cert)], env=env)
        assert result.exit_code == 1 and "Traceback" not in result.output, result.output
        assert "/Nowhere: no folder 'Nowhere' on this server (its folders: INBOX" in result.output, result.output
        assert "connection" not in result.output
    assert path.read_bytes() == model.read_bytes()
