"""The command line starts without the heavy libraries: ``spamkit --help``, every
``spamkit COMMAND --help`` and ``spamkit info`` import neither SciPy, scikit-learn,
matplotlib, Dask nor nltk, and the commands that use a trained filter (``classify``,
``filter``, ``learn``) or train the default one import neither scikit-learn nor SciPy's
statistics, optimisers or linear algebra (checked in a fresh interpreter, so nothing a test imported earlier hides it)."""

from __future__ import annotations

import ast
import mailbox
import shutil
import subprocess
import sys

import pytest
from click.testing import CliRunner

from spamkit.cli import COMMANDS, cli

from conftest import REPO, SAMPLE

HEAVY = ("scipy", "sklearn", "matplotlib", "dask", "nltk")
#: what scoring with a trained filter must not need: NumPy and scipy.sparse are its arithmetic
#: (the logistic function and the chi-square tails are the scoring core's, not scipy.special's,
#: whose array-API layer costs a tenth of a second); scikit-learn (0.5 s and 60 MB, with
#: scipy.stats) is for training and research
SCORING_HEAVY = ("sklearn", "scipy.special", "scipy.stats", "scipy.optimize", "scipy.linalg", "matplotlib", "dask",
                 "nltk")


def heavy_modules_after(args, heavy=HEAVY) -> list[str]:
    code = ("import sys\nsys.argv = ['spamkit'] + %r\nfrom spamkit.cli import cli\n"
            "try:\n    cli(standalone_mode=False)\nexcept SystemExit:\n    pass\n"
            "print('HEAVY', sorted(m for m in %r if m in sys.modules))" % (list(args), heavy))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True,
                         stdin=subprocess.DEVNULL).stdout
    line = [x for x in out.splitlines() if x.startswith("HEAVY ")][-1]
    return ast.literal_eval(line[len("HEAVY "):])


@pytest.mark.parametrize("args", [["--help"], *[[name, "--help"] for name in sorted(COMMANDS)]])
def test_help_imports_no_heavy_library(args):
    assert heavy_modules_after(args) == []


def test_info_imports_no_heavy_library(tmp_path):
    model = tmp_path / "m.spamkit"
    assert CliRunner().invoke(cli, ["train", str(SAMPLE), "-o", str(model)]).exit_code == 0
    assert heavy_modules_after(["info", str(model)]) == []


def test_the_check_sees_a_heavy_import():
    assert "sklearn" in heavy_modules_after(["tune", str(SAMPLE), "--k", "1", "--folds", "2"])


def test_scoring_with_a_trained_filter_imports_no_scikit_learn(tmp_path):
    model = tmp_path / "m.spamkit"
    assert CliRunner().invoke(cli, ["train", str(SAMPLE), "-o", str(model)]).exit_code == 0
    box = mailbox.Maildir(tmp_path / "box", create=True)
    for path in sorted((SAMPLE / "spam").iterdir())[:3] + sorted((SAMPLE / "ham").iterdir())[:3]:
        box.add(path.read_bytes())
    shutil.copy(model, tmp_path / "learned.spamkit")
    for args in (["classify", str(model), str(SAMPLE / "spam")],
                 ["filter", str(model), str(tmp_path / "box"), "--dry-run"],
                 ["filter", str(model), str(tmp_path / "box"), "--tag", "--move-spam-to", str(tmp_path / "junk")],
                 ["learn", str(tmp_path / "learned.spamkit"), "--spam", str(SAMPLE / "spam")]):
        assert heavy_modules_after(args, SCORING_HEAVY) == [], args
    assert len(box) + len(mailbox.Maildir(tmp_path / "junk", create=False)) == 6


def test_training_the_default_filter_imports_no_scikit_learn(tmp_path):
    # the goal of 150 MB for training on 10,000 messages leaves no room for its 60 MB
    args = ["train", str(SAMPLE), "-o", str(tmp_path / "m.spamkit")]
    assert heavy_modules_after(args, SCORING_HEAVY) == []
    assert heavy_modules_after(args + ["--jobs", "2"], SCORING_HEAVY) == []


def test_the_scoring_check_sees_a_training_import():
    assert "sklearn" in heavy_modules_after(["tune", str(SAMPLE), "--k", "1", "--folds", "2"], SCORING_HEAVY)


def test_the_command_line_ends_without_walking_its_objects_for_cycles():
    """``spamkit.__main__.main`` freezes the garbage collector's generations when the command ends
    (success, an error or ``sys.exit``), so that the interpreter's shutdown does not spend a tenth
    of a second collecting what the ending process need not free; the command's output and its
    status are unchanged."""
    code = ("import gc, sys\nfrom spamkit.__main__ import main\n"
            "try:\n    main(%r)\nexcept SystemExit as exc:\n    print('STATUS', exc.code)\n"
            "print('FROZEN', gc.get_freeze_count() > 0)")
    for args, status in ((["--help"], 0), (["info", "no-such-file.spamkit"], 2)):
        out = subprocess.run([sys.executable, "-c", code % (args,)], capture_output=True, text=True, cwd=REPO,
                             stdin=subprocess.DEVNULL).stdout
        assert f"STATUS {status}" in out and "FROZEN True" in out, out
    assert "Usage: spamkit" in subprocess.run([sys.executable, "-c", code % (["--help"],)], capture_output=True,
                                              text=True, cwd=REPO).stdout


def _blas_threads_after(args, env) -> list:
    """The thread counts of the BLAS libraries loaded in a fresh interpreter after
    ``spamkit.__main__.main(args)`` (threadpoolctl's report), under environment ``env``."""
    code = ("import sys\nfrom spamkit.__main__ import main\n"
            "try:\n    main(%r)\nexcept SystemExit:\n    pass\n"
            "from threadpoolctl import threadpool_info\n"
            "print('BLAS', [p['num_threads'] for p in threadpool_info() if p['user_api'] == 'blas'])" % (list(args),))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, env=env,
                         stdin=subprocess.DEVNULL).stdout
    line = [x for x in out.splitlines() if x.startswith("BLAS ")][-1]
    return ast.literal_eval(line[len("BLAS "):])


def test_the_command_line_runs_blas_on_one_thread_unless_told(tmp_path, monkeypatch):
    """spamkit's parallelism is its own worker processes: the BLAS libraries NumPy and SciPy load
    start with one thread (their default, one per core, spins on the cores the workers need), and
    a thread count the user set is kept."""
    import os
    model = tmp_path / "m.spamkit"
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS")}
    args = ["train", str(SAMPLE), "-o", str(model)]
    threads = _blas_threads_after(args, env)
    assert threads and set(threads) == {1}, threads
    assert model.exists()
    if (os.cpu_count() or 1) > 1:
        told = _blas_threads_after(args, {**env, "OPENBLAS_NUM_THREADS": "2", "MKL_NUM_THREADS": "2"})
        assert told and set(told) == {2}, told
