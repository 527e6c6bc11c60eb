"""The command line starts without the heavy libraries: ``spamkit --help``, every
``spamkit COMMAND --help`` and ``spamkit info`` import neither SciPy, scikit-learn,
matplotlib, Dask nor nltk (checked in a fresh interpreter, so nothing a test imported
earlier hides it)."""

from __future__ import annotations

import ast
import subprocess
import sys

import pytest
from click.testing import CliRunner

from spamkit.cli import COMMANDS, cli

from conftest import REPO, SAMPLE

HEAVY = ("scipy", "sklearn", "matplotlib", "dask", "nltk")


def heavy_modules_after(args) -> list[str]:
    code = ("import sys\nsys.argv = ['spamkit'] + %r\nfrom spamkit.cli import cli\n"
            "try:\n    cli(standalone_mode=False)\nexcept SystemExit:\n    pass\n"
            "print('HEAVY', sorted(m for m in %r if m in sys.modules))" % (list(args), HEAVY))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True).stdout
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
