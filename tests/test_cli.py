"""The command line, driven with click's CliRunner: exit statuses, output, one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from spamkit.cli import cli

from conftest import SAMPLE


def run(*args):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_help_lists_commands():
    result = run("--help")
    assert result.exit_code == 0
    assert "corpus" in result.output


def test_version():
    result = run("--version")
    assert result.exit_code == 0 and "spamkit, version" in result.output


def test_corpus_on_sample_text():
    result = run("corpus", str(SAMPLE))
    assert result.exit_code == 0, result.output
    assert "format     folders (dir)" in result.output
    assert "messages   240  (ham 130, spam 110)" in result.output
    assert "needed a fallback" in result.output


def test_corpus_json_counts_agree_with_files():
    result = run("corpus", "--json", str(SAMPLE))
    assert result.exit_code == 0
    (survey,) = json.loads(result.output)
    files = {p.parent.name: 0 for p in SAMPLE.rglob("*.eml")}
    for p in SAMPLE.rglob("*.eml"):
        files[p.parent.name] += 1
    assert survey["per_class"] == files
    assert survey["n_bytes"] == sum(p.stat().st_size for p in SAMPLE.rglob("*.eml"))
    assert 0 < survey["n_with_fallback"] < survey["n_messages"]


def test_corpus_with_class_options(tmp_path):
    (tmp_path / "in.mbox").write_bytes(b"From a Mon Apr  2 10:00:00 2007\nSubject: x\n\nhi\n")
    result = run("corpus", "--ham", str(tmp_path / "in.mbox"), "--class", f"news={SAMPLE / 'ham'}")
    assert result.exit_code == 0, result.output
    assert "(ham 1)" in result.output
    assert "(news 130)" in result.output


def test_strict_fails_on_fallback():
    result = CliRunner().invoke(cli, ["corpus", "--strict", str(SAMPLE)])
    assert result.exit_code == 1
    assert result.output.startswith("Error: ") and "parse fallback needed" in result.output
    assert "Traceback" not in result.output


def test_bad_inputs_give_one_line_errors(tmp_path):
    runner = CliRunner()
    bad_tsv = tmp_path / "bad.tsv"
    bad_tsv.write_bytes(b"ham\thello\nspma\toops\n")
    result = runner.invoke(cli, ["corpus", str(bad_tsv)])
    assert result.exit_code == 1
    assert result.output.strip() == (f"Error: {bad_tsv}:2: unknown label 'spma'; expected one of ham, spam "
                                     "(name other classes with --classes)")
    result = runner.invoke(cli, ["corpus", str(tmp_path / "missing")])
    assert result.exit_code == 2 and "does not exist" in result.output
    empty = tmp_path / "empty"
    empty.mkdir()
    result = runner.invoke(cli, ["corpus", str(empty)])
    assert result.exit_code == 1 and "empty folder" in result.output
    result = runner.invoke(cli, ["corpus"])
    assert result.exit_code == 2 and "name at least one corpus" in result.output
    result = runner.invoke(cli, ["corpus", "--class", "nonsense", str(SAMPLE)])
    assert result.exit_code == 2 and "expected NAME=PATH" in result.output


def test_console_script_runs_as_a_process(tmp_path):
    # The installed entry point, not only the click object.
    bad = tmp_path / "bad.tsv"
    bad.write_bytes(b"nothing tabbed here\n")
    proc = subprocess.run([sys.executable, "-m", "spamkit", "corpus", "--format", "tsv", str(bad)],
                          capture_output=True, text=True)
    assert proc.returncode == 1
    assert proc.stderr.startswith("Error: ") and "Traceback" not in proc.stderr
    assert "bad.tsv:1: expected '<label><TAB><text>'" in proc.stderr


def test_classify_json_lines_keep_file_names_intact(tmp_path):
    import json as _json
    from conftest import SAMPLE
    model = tmp_path / "m.spamkit"
    assert CliRunner().invoke(cli, ["train", str(SAMPLE), "-o", str(model)]).exit_code == 0
    odd = tmp_path / "a  b.eml"                      # two spaces, which a naive JSON flattening lost
    odd.write_bytes(sorted((SAMPLE / "spam").iterdir())[0].read_bytes())
    result = CliRunner().invoke(cli, ["classify", str(model), str(odd), "--json"])
    assert result.exit_code == 0, result.output
    record = _json.loads(result.output.strip().splitlines()[0])
    assert record["source"] == str(odd)


def test_the_lazy_command_table_matches_the_commands():
    import click
    from spamkit.cli import COMMANDS
    ctx = click.Context(cli)
    for name, (module, short) in COMMANDS.items():
        command = cli.get_command(ctx, name)
        assert command is not None and command.callback.__module__ == f"spamkit.cli.{module}", name
        assert command.get_short_help_str(limit=500) == short, name
    assert set(cli.commands) == set(COMMANDS)          # every command is in the table


def test_help_does_not_load_the_numerical_stack():
    import os
    import subprocess
    import sys
    from conftest import REPO
    code = ("import sys; from spamkit.__main__ import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('numpy', 'scipy', 'sklearn') if m in sys.modules), file=sys.stderr)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(REPO)})
    assert "train" in out.stdout and out.stderr.strip().endswith("[]"), out.stderr


def test_train_with_character_ngrams(tmp_path):
    model = tmp_path / "c4.spamkit"
    result = run("train", str(SAMPLE), "-o", str(model), "--char-ngrams", "4", "--json")
    assert result.exit_code == 0, result.output
    from spamkit import SpamFilter
    f = SpamFilter.load(model)
    assert f.analyzer.char_ngrams == 4
    assert any(t.startswith("c4:") for t in f.tokens(b"Subject: hi\n\nfree money now"))
    bad = CliRunner().invoke(cli, ["train", str(SAMPLE), "-o", str(tmp_path / "x.spamkit"), "--char-ngrams", "2"])
    assert bad.exit_code != 0 and "char_ngrams must be 0 (off) or 3 to 6" in bad.output
    assert "Traceback" not in bad.output


def test_train_with_digit_prefixes_and_pipe_mode_reads_them(tmp_path):
    # the option reaches the filter file, the tokens, and the lean pipe-mode scorer, which
    # scores the message as the full path does
    model = tmp_path / "p.spamkit"
    result = run("train", str(SAMPLE), "-o", str(model), "--digit-prefixes", "--json")
    assert result.exit_code == 0, result.output
    from spamkit.mail.lean import lean_filter
    from spamkit import SpamFilter
    f = SpamFilter.load(model)
    raw = b"Subject: hi\n\ncall 09058094583 now"
    assert f.analyzer.digit_prefixes is True and "shape:09d11" in f.tokens(raw)
    assert f.training["parameters"]["digit_prefixes"] is True
    lean = lean_filter(model)
    assert lean is not None and lean.verdict(raw)[1] == pytest.approx(f.verdict(raw)[1], rel=1e-9, abs=1e-12)


def test_quiet_and_verbose_on_every_command():
    """-q and -v are accepted by every command and by spamkit itself, with the same meaning."""
    from spamkit.cli import COMMANDS
    for name in COMMANDS:
        for flag in ("-q", "-v", "--quiet", "--verbose"):
            result = CliRunner().invoke(cli, [name, flag, "--help"])
            assert result.exit_code == 0, (name, flag, result.output)
    assert CliRunner().invoke(cli, ["-q", "corpus", str(SAMPLE)]).exit_code == 0


def test_progress_by_verbosity():
    import io
    from spamkit.cli.progress import Progress, set_verbosity

    class Terminal(io.StringIO):
        def isatty(self):
            return True
    try:
        set_verbosity(-1)
        quiet = Terminal()
        with Progress("x", stream=quiet) as p:
            p.step()
            p.stage(1, 4, "fold 1 of 3")
        assert quiet.getvalue() == ""
        set_verbosity(0)
        log = io.StringIO()                        # not a terminal: nothing by default
        with Progress("x", stream=log) as p:
            p.stage(1, 4, "fold 1 of 3")
        assert log.getvalue() == ""
        set_verbosity(1)                           # -v: lines even without a terminal
        with Progress("x", stream=log) as p:
            p.stage(1, 4, "fold 1 of 3")
            p.stage(2, 4, "fold 2 of 3")
        lines = log.getvalue().splitlines()
        assert lines[0] == "x: fold 1 of 3 (1 of 4 steps)"
        assert lines[1].startswith("x: fold 2 of 3 (2 of 4 steps, about 0:0") and lines[1].endswith(" left)")
    finally:
        set_verbosity(0)


def test_the_total_is_counted_only_for_a_display_someone_sees():
    # counting lists every corpus once more (or scans an mbox): a run nobody watches skips it
    import io
    from spamkit.cli.progress import Progress, set_verbosity

    class Counted:
        asked = 0

        def __init__(self, answer):
            self.answer = answer

        def estimated_count(self):
            Counted.asked += 1
            return self.answer
    try:
        set_verbosity(0)
        unseen = Progress("x", stream=io.StringIO())           # not a terminal, no -v
        assert unseen.expect_corpora([Counted((5, True))]).total is None and Counted.asked == 0
        set_verbosity(1)
        seen = Progress("x", stream=io.StringIO())
        assert seen.expect_corpora([Counted((5, True)), Counted((7, False))]).total == 12 and not seen.exact
        assert Progress("x", stream=io.StringIO()).expect_corpora([Counted((5, True)), Counted(None)]).total is None
        assert Counted.asked == 4
    finally:
        set_verbosity(0)


def test_long_runs_show_the_total_and_the_time_left_where_it_is_known(tmp_path):
    # a folder corpus and a Maildir are counted by listing them (nothing read); the display
    # then says how many of how many, and when the run will end
    import mailbox
    from spamkit.corpus import Corpus
    with Corpus(SAMPLE) as corpus:
        assert corpus.cheap_count() == 240 == sum(1 for _ in corpus)
    model = tmp_path / "m.spamkit"
    train = CliRunner().invoke(cli, ["-v", "train", str(SAMPLE), "-o", str(model)])
    assert train.exit_code == 0 and "training: 1 of 240 messages (" in train.stderr and " left)" in train.stderr
    box = mailbox.Maildir(tmp_path / "inbox", create=True)
    for p in sorted((SAMPLE / "ham").iterdir())[:7]:
        box.add(p.read_bytes())
    run = CliRunner().invoke(cli, ["-v", "filter", str(model), str(tmp_path / "inbox"), "--tag"])
    assert run.exit_code == 0 and "filtering: 1 of 7 messages (" in run.stderr, run.stderr
    # an archive is listed when it is opened: counted as a folder is
    import tarfile
    archive = tmp_path / "sample.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(SAMPLE, arcname="sample")
    with Corpus(archive) as corpus:
        assert corpus.cheap_count() == 240 and corpus.estimated_count() == (240, True)
    again = CliRunner().invoke(cli, ["-v", "evaluate", str(model), str(archive)])
    first = next(line for line in again.stderr.splitlines() if line.startswith("evaluating: "))
    assert again.exit_code == 0 and first.startswith("evaluating: 1 of 240 messages ("), first
    # an mbox is not split ahead, but its envelope lines are counted: "of about"
    mbox = mailbox.mbox(tmp_path / "box.mbox")
    for p in sorted((SAMPLE / "spam").iterdir())[:9]:
        mbox.add(p.read_bytes())
    mbox.flush()
    with Corpus(tmp_path / "box.mbox", label="spam") as corpus:
        assert corpus.cheap_count() is None and corpus.estimated_count() == (9, False)
    run = CliRunner().invoke(cli, ["-v", "filter", str(model), str(tmp_path / "box.mbox"), "--dry-run"])
    assert run.exit_code == 0 and "filtering: 1 of about 9 messages (" in run.stderr, run.stderr
    run = CliRunner().invoke(cli, ["-v", "evaluate", str(model), "--spam", str(tmp_path / "box.mbox")])
    assert run.exit_code == 0 and "evaluating: 1 of about 9 messages (" in run.stderr, run.stderr
    # a table is not counted: count and rate only
    table = tmp_path / "t.tsv"
    table.write_text("ham\thello there friend\nspam\tbuy cheap pills now\n" * 20)
    run = CliRunner().invoke(cli, ["-v", "evaluate", str(model), str(table)])
    first = next(line for line in run.stderr.splitlines() if line.startswith("evaluating: "))
    assert run.exit_code == 0 and first.startswith("evaluating: 1 message (") and " of " not in first


def test_cv_shows_its_folds_with_verbose():
    result = CliRunner().invoke(cli, ["-v", "cv", str(SAMPLE), "--folds", "3"])
    assert result.exit_code == 0, result.output
    assert "fold 3 of 3 (3 of 4 steps" in result.stderr
    quiet = CliRunner().invoke(cli, ["cv", str(SAMPLE), "--folds", "3", "-q"])
    assert quiet.exit_code == 0 and "fold" not in quiet.stderr
    assert quiet.stdout == CliRunner().invoke(cli, ["cv", str(SAMPLE), "--folds", "3"]).stdout


def test_learn_verbose_lists_each_message(tmp_path):
    model = tmp_path / "m.spamkit"
    assert CliRunner().invoke(cli, ["train", str(SAMPLE), "-o", str(model)]).exit_code == 0
    result = CliRunner().invoke(cli, ["learn", str(model), "--spam", str(SAMPLE / "spam"), "-v"])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stdout.splitlines() if "\t" in line]
    assert len(lines) == len(list((SAMPLE / "spam").iterdir()))
    assert all(line.split("\t")[1] in ("learned as spam", "already learned as spam") for line in lines)


def test_train_and_evaluate_start_decompressing_their_archives_before_anything_else(tmp_path, monkeypatch):
    # archives_ahead: the compressed archives named on the command line are decompressing while
    # the command imports its modules; opening them takes those spools, so none is left over
    import tarfile

    from spamkit.cli import params
    from spamkit.corpus import archives
    archive = tmp_path / "sample.tar.gz"
    with tarfile.open(archive, "w:gz") as tf:
        tf.add(SAMPLE, arcname="sample")
    seen, real = [], params.decompressing_ahead

    def recording(paths):
        seen.append([str(p) for p in paths])
        return real(paths)
    monkeypatch.setattr(params, "decompressing_ahead", recording)
    model = tmp_path / "m.spamkit"
    assert CliRunner().invoke(cli, ["train", str(archive), "-o", str(model)]).exit_code == 0
    assert seen[0] == [str(archive)] and archives._AHEAD == {}
    seen.clear()
    result = CliRunner().invoke(cli, ["evaluate", str(model), str(archive)])
    assert result.exit_code == 0 and seen[0] == [str(archive)] and archives._AHEAD == {}


def test_the_commands_module_examples_hold():
    # pytest's doctest collection leaves out files named __main__.py: the examples of the
    # command's own module (pipe mode's argument forms, the archives read early, the BLAS
    # threads) are run here instead
    import doctest

    import spamkit.__main__ as command
    failed, attempted = doctest.testmod(command, optionflags=doctest.ELLIPSIS)
    assert failed == 0 and attempted >= 7
