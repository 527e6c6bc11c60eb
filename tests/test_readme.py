"""The README's two commands are what CI runs and what the project ships."""

from __future__ import annotations

import re

from conftest import REPO


def _commands():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    return re.findall(r"```sh\n(.+?)\n```", text)[:2]


def test_readme_opens_with_two_commands():
    main, tests = _commands()
    assert "pip install ." in main and "spamkit " in main
    assert "pip install -e '.[test]'" in tests and tests.endswith("pytest -n 2 --dist loadfile")


def test_ci_runs_the_readme_test_command_verbatim():
    _, tests = _commands()
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert tests in ci.splitlines()
