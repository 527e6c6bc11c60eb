"""The command line at its edges: a clear message and a non-zero exit, never a traceback, nothing left over."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from spamkit.cli import cli

from conftest import SAMPLE

REPO = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(REPO)}


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("edges") / "m.spamkit"
    assert CliRunner().invoke(cli, ["train", str(SAMPLE), "-o", str(path)]).exit_code == 0
    return path


def fails_clearly(args, *expected):
    result = CliRunner().invoke(cli, [str(a) for a in args])
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    for text in expected:
        assert text in result.output, result.output
    return result


def test_output_into_a_missing_folder_fails_before_training(tmp_path):
    fails_clearly(["train", SAMPLE, "-o", tmp_path / "missing" / "m.spamkit"], "folder", "does not exist")
    assert not (tmp_path / "missing").exists()


def test_output_onto_a_folder_is_a_usage_error(tmp_path):
    result = CliRunner().invoke(cli, ["train", str(SAMPLE), "-o", str(tmp_path)])
    assert result.exit_code == 2 and "is a directory" in result.output


def test_a_failed_save_names_the_file(tmp_path, monkeypatch):
    from spamkit.common.errors import OutputError
    from spamkit.common.durable import atomic_write
    target = tmp_path / "gone" / "m.spamkit"
    with pytest.raises(OutputError, match="cannot write .*m.spamkit"):
        atomic_write(target, lambda fh: fh.write(b"x"))


@pytest.mark.parametrize("make,expected", [
    (lambda p: [(p / f"junk{i}").write_bytes(os.urandom(500)) for i in range(3)], "no mailbox found"),
    (lambda p: None, "no mailbox found"),
])
def test_filter_refuses_a_folder_that_is_no_mailbox(model, tmp_path, make, expected):
    folder = tmp_path / "folder"
    folder.mkdir()
    make(folder)
    fails_clearly(["filter", model, folder, "--tag"], expected)


def test_filter_refuses_a_file_that_is_no_mbox(model, tmp_path):
    junk = tmp_path / "junk.mbox"
    junk.write_bytes(b"\x00garbage" + os.urandom(4000).replace(b"\nFrom ", b"\nfrom "))
    fails_clearly(["filter", model, junk, "--tag"], "not an mbox")
    assert junk.stat().st_size > 4000
    empty = tmp_path / "empty.mbox"
    empty.write_bytes(b"")
    result = CliRunner().invoke(cli, ["filter", str(model), str(empty), "--tag"])
    assert result.exit_code == 0 and "0 messages" in result.output      # an empty mbox is a mailbox


def test_an_empty_folder_can_be_a_move_destination(model, tmp_path):
    import mailbox
    inbox = tmp_path / "inbox"
    box = mailbox.Maildir(inbox, create=True)
    for p in sorted((SAMPLE / "spam").iterdir())[:3]:
        box.add(p.read_bytes())
    junk = tmp_path / "Junk"
    junk.mkdir()
    result = CliRunner().invoke(cli, ["filter", str(model), str(inbox), "--move-spam-to", str(junk)])
    assert result.exit_code == 0, result.output
    assert len(os.listdir(junk / "new")) + len(os.listdir(junk / "cur")) == 3


def test_serve_never_deletes_a_regular_file_at_the_socket_path(model, tmp_path):
    precious = tmp_path / "notes.txt"
    precious.write_text("do not delete")
    out = subprocess.run([sys.executable, "-m", "spamkit", "serve", str(model), "--socket", str(precious)],
                         capture_output=True, text=True, env=ENV, timeout=120)
    assert out.returncode == 1 and "is not a socket" in out.stderr and "Traceback" not in out.stderr
    assert precious.read_text() == "do not delete"


def test_serve_replaces_only_a_stale_socket(model, tmp_path):
    stale = tmp_path / "s.sock"
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(stale))
    s.close()                                      # a socket file nobody answers on
    proc = subprocess.Popen([sys.executable, "-m", "spamkit", "serve", str(model), "--socket", str(stale)],
                            env=ENV, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                probe.connect(str(stale))
                break
            except OSError:
                time.sleep(0.1)
            finally:
                probe.close()
        assert proc.poll() is None, proc.stderr.read().decode()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)


def test_a_killed_save_leaves_a_temporary_file_that_the_next_save_removes(model, tmp_path):
    from spamkit import SpamFilter
    target = tmp_path / "learn.spamkit"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()                                    # a pid that is no longer running
    leftover = tmp_path / f".learn.spamkit.spamkit-{dead.pid}-abcd.tmp"
    leftover.write_bytes(b"half a filter")
    alive = tmp_path / f".learn.spamkit.spamkit-{os.getpid()}-efgh.tmp"
    alive.write_bytes(b"another save in progress")
    SpamFilter.load(model).save(target)
    assert target.exists() and not leftover.exists() and alive.exists()


# (a TREC index that names a file which is not there stays an error: index and data disagree)
@pytest.mark.parametrize("layout", ["folders", "maildir", "mh"])
def test_one_unreadable_message_is_named_counted_and_the_run_goes_on(tmp_path, layout):
    import mailbox
    from spamkit.corpus import Corpus
    root = tmp_path / "corpus"
    files = sorted(SAMPLE.rglob("*.eml"))
    if layout == "folders":
        for cls in ("ham", "spam"):
            (root / cls).mkdir(parents=True)
            for p in sorted((SAMPLE / cls).iterdir())[:10]:
                (root / cls / p.name).write_bytes(p.read_bytes())
        bad = root / "ham" / "zz-dangling.eml"
        args = [str(root)]
    else:
        box = (mailbox.Maildir if layout == "maildir" else mailbox.MH)(root, create=True)
        for p in files[:10]:
            box.add(p.read_bytes())
        box.flush()
        bad = (root / "cur" / "zz-dangling:2,S") if layout == "maildir" else root / "99"
        args = ["--class", f"ham={root}"]
    bad.symlink_to(tmp_path / "nowhere")                  # a dangling link: reading it fails
    with Corpus(args[-1].split("=", 1)[-1], label="ham" if layout in ("maildir", "mh") else None) as corpus:
        n = sum(1 for _ in corpus)
        assert corpus.stats.skipped["unreadable"] == 1 and bad.name in corpus.stats.unreadable[0]
    assert n == (20 if layout == "folders" else 10)
    result = CliRunner().invoke(cli, ["corpus", *args])
    assert result.exit_code == 0 and "unreadable: 1" in result.output and bad.name in result.output
    if layout == "folders":
        result = CliRunner().invoke(cli, ["train", *args, "-o", str(tmp_path / "m.spamkit")])
        assert result.exit_code == 0, result.output
        assert bad.name in result.output and "could not be read" in result.output


@pytest.mark.parametrize("args", [
    ["train", "{sample}", "-o", "{missing}/f.spamkit"],
    ["evaluate", "{model}", "{sample}", "--report", "{missing}/r.html"],
    ["compare", "{sample}", "--config", "model=multinomial", "--report", "{missing}/r.html"],
    ["online", "{sample}", "--report", "{missing}/r.html"],
    ["online", "{sample}", "-o", "{missing}/o.spamkit"],
    ["filter", "{model}", "{sample}", "--dry-run", "--summary", "{missing}/s.json"],
])
def test_output_paths_are_checked_before_any_work(tmp_path, args, monkeypatch):
    """A missing output folder is reported when the command line is read (exit 1, no
    traceback), before any corpus is opened."""
    import spamkit.corpus
    opened = []
    monkeypatch.setattr(spamkit.corpus.Corpus, "__init__",
                        lambda self, *a, **k: opened.append(a) or (_ for _ in ()).throw(AssertionError("opened")))
    values = {"sample": str(SAMPLE), "model": str(tmp_path / "any.spamkit"), "missing": str(tmp_path / "nope")}
    (tmp_path / "any.spamkit").write_bytes(b"")
    result = CliRunner().invoke(cli, [a.format(**values) for a in args])
    assert result.exit_code == 1, result.output
    assert f"folder {tmp_path / 'nope'} does not exist" in result.output
    assert "Traceback" not in result.output and not opened


def three_class_tsv(tmp_path):
    path = tmp_path / "three.tsv"
    words = {"a": "apple banana cherry", "b": "car truck engine", "c": "song music guitar"}
    path.write_text("".join(f"{c}\t{words[c]} {i}\n" for i in range(30) for c in "abc"))
    return path


def test_threshold_on_more_classes_says_why(tmp_path):
    corpus = three_class_tsv(tmp_path)
    model = tmp_path / "three.spamkit"
    assert CliRunner().invoke(cli, ["train", str(corpus), "--classes", "any", "--model", "multinomial",
                                    "-o", str(model)]).exit_code == 0
    fails_clearly(["threshold", model, corpus, "--classes", "any"],
                  "threshold choice needs two classes named ham and spam")


def test_evaluate_reports_the_threshold_it_decides_at(tmp_path):
    model = tmp_path / "m.spamkit"
    runner = CliRunner()
    assert runner.invoke(cli, ["train", str(SAMPLE), "-o", str(model)]).exit_code == 0
    saved = runner.invoke(cli, ["threshold", str(model), str(SAMPLE), "--cost", "fp=100,fn=10", "--save", "--json"])
    assert saved.exit_code == 0, saved.output
    p = json.loads(saved.stdout)["chosen"]["p_spam"]
    text = runner.invoke(cli, ["evaluate", str(model), str(SAMPLE), "--cost", "fp=100,fn=10"]).output
    assert f"decided at the saved threshold on P(spam): {p:.4f}" in text and "Bayes threshold would be 0.9091" in text
    data = json.loads(runner.invoke(cli, ["evaluate", str(model), str(SAMPLE), "--cost", "fp=100,fn=10", "--json"]).stdout)
    assert data["costs"]["saved_threshold"] == pytest.approx(p)


def test_a_hold_out_without_a_class_is_refused_before_training(tmp_path):
    corpus = tmp_path / "ordered.tsv"
    corpus.write_text("".join(f"ham\tlunch meeting notes {i}\n" for i in range(40))
                      + "".join(f"spam\tcheap pills now {i}\n" for i in range(20)))
    fails_clearly(["train", corpus, "--test-fraction", "0.3", "--split", "order", "-o", tmp_path / "m.spamkit"],
                  "leaves no ham to test on", "use --split random")
    assert not (tmp_path / "m.spamkit").exists()


def test_k_class_evaluation_text_has_ranking_confusion_and_costs(tmp_path):
    corpus = three_class_tsv(tmp_path)
    model = tmp_path / "three.spamkit"
    costs = tmp_path / "costs.csv"
    costs.write_text("decision,a,b,c\na,0,1,5\nb,1,0,1\nc,5,1,0\nunsure,0.5,0.5,0.5\n")
    assert CliRunner().invoke(cli, ["train", str(corpus), "--classes", "any", "--model", "multinomial",
                                    "-o", str(model)]).exit_code == 0
    result = CliRunner().invoke(cli, ["evaluate", str(model), str(corpus), "--classes", "any", "--cost", str(costs)])
    assert result.exit_code == 0, result.output
    text = result.output
    assert "ROC AUC avg prec" in text and "one-vs-rest     macro AUC" in text
    assert "confusion (rows: true, columns: decided)" in text
    assert "the filter's decisions, under costs" in text and "cost per message" in text
    data = json.loads(CliRunner().invoke(cli, ["evaluate", str(model), str(corpus), "--classes", "any",
                                               "--json"]).stdout)
    assert set(data["one_vs_rest"]) == {"per_class", "macro", "weighted", "micro"}
    assert set(data["one_vs_rest"]["per_class"]) == {"a", "b", "c"}


def _mbox_of(path: Path, labels=("ham", "spam"), n: int = 3) -> Path:
    import mailbox
    box = mailbox.mbox(path)
    for label in labels:
        for p in sorted((SAMPLE / label).iterdir())[:n]:
            box.add(p.read_bytes())
    box.flush()
    box.close()
    return path


@pytest.mark.parametrize("dry_run", [False, True])
def test_an_mbox_never_moves_into_a_folder(model, tmp_path, dry_run):
    source = _mbox_of(tmp_path / "in.mbox")
    before = source.read_bytes()
    junk = tmp_path / "junk"
    junk.mkdir()                          # empty: it was once silently replaced by an mbox file
    fails_clearly(["filter", model, source, "--move-spam-to", junk, *(["--dry-run"] if dry_run else [])],
                  f"{junk}: a folder; mail moved out of an mbox goes to an mbox, a file")
    assert junk.is_dir() and not any(junk.iterdir()) and source.read_bytes() == before


def test_a_dry_run_checks_the_destinations_and_changes_nothing(model, tmp_path):
    import mailbox
    inbox = tmp_path / "inbox"
    box = mailbox.Maildir(inbox, create=True)
    for p in sorted((SAMPLE / "spam").iterdir())[:3]:
        box.add(p.read_bytes())
    result = CliRunner().invoke(cli, ["filter", str(model), str(inbox), "--move-spam-to", str(tmp_path / "junk.mbox"),
                                      "--dry-run"])
    assert result.exit_code == 0 and "3 would be moved to" in result.output, result.output
    assert sorted(os.listdir(tmp_path)) == ["inbox"]
    _mbox_of(tmp_path / "other.mbox")
    fails_clearly(["filter", model, inbox, "--move-spam-to", tmp_path / "other.mbox", "--dry-run"],
                  "is an mbox; moving out of a Maildir needs a Maildir as destination")


@pytest.mark.parametrize("kind", ["mbox", "maildir"])
def test_destinations_that_received_nothing_are_not_left_behind(model, tmp_path, kind):
    import mailbox
    if kind == "mbox":
        source = _mbox_of(tmp_path / "in.mbox", labels=("ham",))
        spam_to, unsure_to = tmp_path / "spam.mbox", tmp_path / "unsure.mbox"
    else:
        source = tmp_path / "inbox"
        box = mailbox.Maildir(source, create=True)
        for p in sorted((SAMPLE / "ham").iterdir())[:3]:
            box.add(p.read_bytes())
        spam_to, unsure_to = tmp_path / "Junk", tmp_path / "Unsure"
    result = CliRunner().invoke(cli, ["filter", str(model), str(source), "--move-spam-to", str(spam_to),
                                      "--move-unsure-to", str(unsure_to)])
    assert result.exit_code == 0 and "spam 0, ham 3, unsure 0" in result.output, result.output
    assert not spam_to.exists() and not unsure_to.exists()
    # a destination that was there before stays, moved into or not
    spam_to.write_bytes(b"") if kind == "mbox" else mailbox.Maildir(spam_to, create=True)
    assert CliRunner().invoke(cli, ["filter", str(model), str(source), "--move-spam-to", str(spam_to)]).exit_code == 0
    assert spam_to.exists()


def test_the_same_mailbox_as_two_classes_is_refused(tmp_path):
    for args, expected in (
            (["--ham", SAMPLE / "ham", "--spam", f"{SAMPLE / 'ham'}/"], "given twice, as ham and as spam"),
            (["--spam", SAMPLE / "spam", "--spam", SAMPLE / "spam"], "given twice; name each mailbox once"),
            ([SAMPLE, "--ham", SAMPLE / "ham"], "one is inside the other, as a corpus and as ham")):
        result = CliRunner().invoke(cli, ["train", *map(str, args), "-o", str(tmp_path / "m.spamkit")])
        assert result.exit_code == 2 and expected in result.output and "would be read twice" in result.output, \
            result.output
    assert not (tmp_path / "m.spamkit").exists()


def test_an_empty_archive_is_no_messages_not_one(model, tmp_path):
    import tarfile
    archive = tmp_path / "empty.tar.gz"
    tarfile.open(archive, "w:gz").close()        # the end-of-archive blocks alone
    fails_clearly(["train", archive, "-o", tmp_path / "m.spamkit"], f"{archive}: an archive with no files, no messages")
    fails_clearly(["classify", model, archive], "an archive with no files, no messages")


def test_evaluate_on_one_class_says_so_without_warnings(model, tmp_path):
    result = subprocess.run([sys.executable, "-m", "spamkit", "evaluate", str(model), "--ham", str(SAMPLE / "ham"),
                             "--report", str(tmp_path / "r.html")], capture_output=True, env=ENV, timeout=300)
    out, err = result.stdout.decode(), result.stderr.decode()
    assert result.returncode == 0 and err == "", err
    assert "nan" not in out and "(1-ROCA)% n/a" in out
    assert "only ham here: ranking measures need messages of both classes" in out
    assert ">nan<" not in (tmp_path / "r.html").read_text() and 'data-value="null">n/a<' in (tmp_path / "r.html").read_text()
    result = subprocess.run([sys.executable, "-m", "spamkit", "evaluate", str(model), "--ham", str(SAMPLE / "ham"),
                             "--json"], capture_output=True, env=ENV, timeout=300)
    data = json.loads(result.stdout)              # JSON any parser reads: no bare NaN
    assert data["auc"] is None and data["one_class"] == ["ham"] and b"NaN" not in result.stdout


def test_classify_without_messages_on_a_terminal_is_a_usage_error(model):
    # under a pseudo-terminal, as a person types it: it once waited silently on standard input
    import pty
    pid, fd = pty.fork()
    if pid == 0:
        os.execve(sys.executable, [sys.executable, "-m", "spamkit", "classify", str(model)], ENV)
    output = b""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        output += chunk
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 2, output
    assert b"no messages to classify" in output and b"'-'" in output
    empty = subprocess.run([sys.executable, "-m", "spamkit", "classify", str(model), "-"], input=b"",
                           capture_output=True, env=ENV, timeout=120)
    assert empty.returncode == 1 and b"standard input: empty, no message to classify" in empty.stderr


def test_learning_nothing_new_leaves_the_file_as_it_was(model, tmp_path):
    import shutil
    mine = tmp_path / "mine.spamkit"
    shutil.copy(model, mine)
    one = tmp_path / "one"
    one.mkdir()
    shutil.copy(sorted((SAMPLE / "ham").iterdir())[0], one / "1.eml")
    first = CliRunner().invoke(cli, ["learn", str(mine), "--ham", str(one)])
    assert first.exit_code == 0 and "filter written to" in first.output, first.output
    stamp = mine.stat()
    again = CliRunner().invoke(cli, ["learn", str(mine), "--ham", str(one)])
    assert again.exit_code == 0 and "1 already learned" in again.output, again.output
    assert f"nothing changed: {mine} left as it was" in again.output and "filter written" not in again.output
    assert (mine.stat().st_mtime_ns, mine.stat().st_ino) == (stamp.st_mtime_ns, stamp.st_ino)


def test_serve_on_a_busy_address_names_it(model):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = subprocess.run([sys.executable, "-m", "spamkit", "serve", str(model), "--spamd", f"127.0.0.1:{port}",
                                 "--workers", "0"], capture_output=True, env=ENV, timeout=120)
    assert result.returncode == 1 and b"Traceback" not in result.stderr
    assert f"Error: 127.0.0.1:{port}: address already in use".encode() in result.stderr, result.stderr


def test_counts_of_one_are_singular(model, tmp_path):
    from spamkit.common.errors import counted
    assert [counted(n, "message") for n in (0, 1, 2, 12_345)] == ["0 messages", "1 message", "2 messages",
                                                                  "12,345 messages"]
    source = _mbox_of(tmp_path / "one.mbox", labels=("ham",), n=1)
    result = CliRunner().invoke(cli, ["filter", str(model), str(source), "--dry-run"])
    assert result.exit_code == 0 and "1 message in " in result.output and "1 messages" not in result.output
