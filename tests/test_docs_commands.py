"""Every ``spamkit ...`` command shown in the README and in docs/ parses against the command
line: the command exists, every option is one it has, options that take a value get one, and
a value from a fixed list is on the list. (The README's first command runs for real in CI.)"""

from __future__ import annotations

import re
import shlex

import click
import pytest

from spamkit.cli import cli

from conftest import REPO

DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
#: shell syntax that ends a spamkit command's own arguments
SHELL_STOPS = {"<", ">", "|", "&", "&&", ";", "2>", ">>"}


def _words(part: str) -> list[str]:
    words = []
    for word in shlex.split(part, comments=True)[1:]:
        if word in SHELL_STOPS or word.startswith((">", "<", "2>")):
            break
        words.append(word)
    return words


def _looks_like_a_command(words, names) -> bool:
    """``spamkit`` followed by a command name, or by options of spamkit itself and then a command
    name (or nothing): not a line of output that happens to start with the program's name."""
    rest = list(words)
    while rest and rest[0].startswith("-"):
        rest.pop(0)
    return bool(words) and (not rest or rest[0] in names or rest[0] == "...")


def shown_commands():
    """(file, line, argv after 'spamkit') of each command in a code block or an inline code span.

    In blocks marked ``sh`` every ``spamkit`` line is a command; elsewhere (blocks that mix
    commands and their output, inline spans) a line counts when its second word is a command
    name or an option, so that output such as ``spamkit best: ...`` is left alone.
    """
    names = set(cli.list_commands(click.Context(cli)))
    found = []
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        for block in re.finditer(r"```(\w*)\n(.*?)```", text, re.S):
            strict = block.group(1) in ("sh", "bash", "shell")
            body = block.group(2).replace("\\\n", " ")
            first_line = text[:block.start()].count("\n") + 2
            for offset, line in enumerate(body.splitlines()):
                line = line.strip().removeprefix("$ ")
                for part in re.split(r"&&|;|\|", line):
                    part = part.strip()
                    if not part.startswith("spamkit "):
                        continue
                    words = _words(part)
                    if strict or _looks_like_a_command(words, names):
                        found.append((path.name, first_line + offset, words, False))
        prose = re.sub(r"```.*?```", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
        for span in re.finditer(r"`(spamkit [^`]+)`", prose):
            words = _words(span.group(1))
            if _looks_like_a_command(words, names):
                found.append((path.name, prose[:span.start()].count("\n") + 1, words, True))
    return found


COMMANDS = shown_commands()


def check_parses(words: list[str], in_prose: bool = False) -> None:
    """``in_prose``: a command named in a sentence may leave an option's value out or give the
    choices as ``a|b``."""
    ctx = click.Context(cli)
    group_options = {name for p in cli.params for name in p.opts} | {"--help", "-h", "--version"}
    while words and words[0].startswith("-"):
        assert words[0] in group_options, f"spamkit has no option {words[0]}"
        words = words[1:]
    if not words or words[0] == "...":
        return
    command = cli.get_command(ctx, words[0])
    assert command is not None, f"no command {words[0]!r}"
    options = {}
    for param in command.params:
        if isinstance(param, click.Option):
            for name in param.opts + param.secondary_opts:
                options[name] = param
    options.update({"--help": None, "-h": None})
    rest = words[1:]
    i = 0
    while i < len(rest):
        word = rest[i]
        if word.startswith("-") and word != "-":
            name, eq, value = word.partition("=")
            assert name in options, f"{words[0]} has no option {name}"
            param = options[name]
            if param is not None and not (param.is_flag or param.count):
                if not eq:
                    i += 1
                    if i >= len(rest) and in_prose:
                        break
                    assert i < len(rest), f"{name} needs a value"
                    value = rest[i]
                if isinstance(param.type, click.Choice):
                    for choice in value.split("|") if in_prose else [value]:
                        assert choice in param.type.choices, f"{name} {choice!r} is not one of {param.type.choices}"
        i += 1


def test_the_docs_show_commands():
    assert len(COMMANDS) > 60
    assert {name for name, _, _, _ in COMMANDS} >= {"README.md", "mail-filtering.md"}


@pytest.mark.parametrize("where,words,in_prose", [(f"{n}:{line}", w, p) for n, line, w, p in COMMANDS])
def test_command_parses(where, words, in_prose):
    check_parses(words, in_prose)


def test_the_check_can_fail():
    with pytest.raises(AssertionError, match="no option --bogus"):
        check_parses(["train", "corpora/sample", "--bogus", "-o", "x.spamkit"])
    with pytest.raises(AssertionError, match="not one of"):
        check_parses(["train", "corpora/sample", "--model", "svm", "-o", "x.spamkit"])
    with pytest.raises(AssertionError, match="no command"):
        check_parses(["trian", "corpora/sample"])
