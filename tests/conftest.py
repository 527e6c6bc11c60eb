"""Shared fixtures: the real corpora in ../shared/corpora, found through one helper.

``SPAMKIT_CORPORA`` overrides the location. Tests that need a corpus skip when it
is absent, except under CI (``CI=true``), where its absence is a failure.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "corpora" / "sample"


def compiled_expected() -> bool:
    """Whether the compiled extensions must be in use: under CI, which builds them, unless the
    run asks for the pure-Python definitions (``SPAMKIT_PURE_PYTHON=1``, the suite's second
    run in CI); tests of the compiled paths skip, with the reason, where they are not."""
    pure = os.environ.get("SPAMKIT_PURE_PYTHON", "") not in ("", "0")
    return os.environ.get("CI", "").lower() == "true" and not pure


@contextlib.contextmanager
def extensions_off(off: bool = True):
    """``SPAMKIT_PURE_PYTHON`` set to 1 (the Python definitions) or 0 (the compiled loops, where
    built) within the block, and put back as it was after it: a test that compares the two
    leaves the run's own setting (CI's pure-Python run sets it for the whole suite) alone."""
    before = os.environ.get("SPAMKIT_PURE_PYTHON")
    os.environ["SPAMKIT_PURE_PYTHON"] = "1" if off else "0"
    try:
        yield
    finally:
        if before is None:
            del os.environ["SPAMKIT_PURE_PYTHON"]
        else:
            os.environ["SPAMKIT_PURE_PYTHON"] = before


def lean_route_of_a_context_model(lean):
    """``lean`` (:func:`spamkit.mail.lean.lean_filter` of a filter with a context model), or a skip:
    pipe mode scores a context model without NumPy by the compiled loop alone, and without it
    (``SPAMKIT_PURE_PYTHON=1``, CI's second run) such a filter takes the full route."""
    from spamkit.common.compiled import speedups
    if speedups() is None:
        assert lean is None, "without the compiled loops a context model takes the full route"
        pytest.skip("a context model's lean route is the compiled loop (SPAMKIT_PURE_PYTHON=1 or not built)")
    return lean


def corpora_root() -> Path:
    return Path(os.environ.get("SPAMKIT_CORPORA", REPO.parent / "shared" / "corpora"))


def installed(program: str, package: str, *alternatives: str) -> str:
    """Path of a real program the tests talk to (the first of ``program`` and ``alternatives``
    found); skip with the reason when it is missing, except under CI (``CI=true``), where its
    absence is a failure (``.ci/run`` installs ``package``)."""
    import shutil
    for name in (program, *alternatives):
        path = shutil.which(name)
        if path is not None:
            return path
    reason = f"{program} is not installed (apt-get install {package})"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(reason)
    pytest.skip(reason)


def shared_corpus(relative: str) -> Path:
    """Path of a real corpus file; skip (or fail under CI) when it is missing."""
    path = corpora_root() / relative
    if not path.exists():
        message = f"real corpus {path} not found (set SPAMKIT_CORPORA)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    return path


@pytest.fixture
def sample_corpus() -> Path:
    return SAMPLE


def start_server(model, sock, *options):
    """``spamkit serve MODEL --socket SOCK OPTIONS`` in a child process, once its socket exists."""
    import subprocess
    import sys
    import time
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "spamkit", "serve", str(model), "--socket", str(sock), *options],
                            env=env, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not Path(sock).exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert Path(sock).exists(), proc.stderr.read().decode()
    return proc


def stop_server(proc) -> None:
    import signal
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)


# the command line in a child that prints its own peak resident memory on stderr: VmHWM of its
# own address space (ru_maxrss would count the parent's peak too: it survives fork and exec)
_PEAK_WRAPPER = ("import sys\nfrom spamkit.cli import cli\n"
                 "try:\n    cli.main(args=sys.argv[1:], prog_name='spamkit')\nexcept SystemExit as e:\n    code = e.code\n"
                 "hwm = [l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM:')][0]\n"
                 "print(f'MAXRSS={hwm}', file=sys.stderr)\nsys.exit(code)\n")


def run_with_peak(*args, env: dict | None = None, timeout: float = 300):
    """``spamkit ARGS`` in a child process: ``(CompletedProcess (text), its peak memory in MB)``.
    ``env``: the child's whole environment (default: this one, with the repository importable)."""
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-c", _PEAK_WRAPPER, *map(str, args)], capture_output=True, text=True,
                         env=env if env is not None else {**os.environ, "PYTHONPATH": str(REPO)}, timeout=timeout)
    peak = [line for line in out.stderr.splitlines() if line.startswith("MAXRSS=")]
    return out, int(peak[0].split("=")[1]) / 1024 if peak else float("nan")


def assert_classify_and_pipe_score_as_the_filter(model: Path, message: Path) -> None:
    """``spamkit classify`` and pipe mode (``spamkit filter MODEL -``) give ``message`` the P(spam)
    of the filter file loaded in this process: what a filter with side models must keep true,
    whichever route scores it."""
    from click.testing import CliRunner

    from spamkit.cli import cli
    from spamkit.filterfile.spamfilter import SpamFilter
    expected = SpamFilter.load(model).p_spam([message.read_bytes()])[0]
    line = CliRunner().invoke(cli, ["classify", str(model), str(message)]).output.strip().split("\t")
    assert float(line[2]) == pytest.approx(expected, abs=1e-6)
    piped = CliRunner().invoke(cli, ["filter", str(model), "-"], input=message.read_bytes())
    assert piped.exit_code == 0 and f"p={expected:.6f}" in piped.output


#: the project's scripts, some of which the tests run as independent references
SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def script_module(name: str):
    """A module of ``scripts/`` (they import their siblings by name), imported with the folder on
    ``sys.path`` only while it is imported."""
    import importlib
    import sys
    sys.path.insert(0, str(SCRIPTS))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(SCRIPTS))


def learned_copy(model: Path, tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the filter file ``model`` that has learned the sample corpus's first ham as spam
    (``spamkit learn``), and that message's path."""
    from click.testing import CliRunner

    from spamkit.cli import cli
    learned = tmp_path / "l.spamkit"
    learned.write_bytes(model.read_bytes())
    ham = sorted((SAMPLE / "ham").iterdir())[0]
    assert CliRunner().invoke(cli, ["learn", str(learned), "--spam", str(ham)]).exit_code == 0
    return learned, ham


def rewritten_filter(path: Path, out: Path, edit) -> Path:
    """A copy of the filter file ``path`` at ``out``, its manifest (a dict) and members (name ->
    bytes) changed first by ``edit(manifest, members)``: a damaged file that still opens."""
    import json
    import zipfile
    with zipfile.ZipFile(path) as z:
        members = {n: z.read(n) for n in z.namelist()}
    manifest = json.loads(members["manifest.json"])
    edit(manifest, members)
    with zipfile.ZipFile(out, "w") as z:
        for name, data in members.items():
            z.writestr(name, json.dumps(manifest) if name == "manifest.json" else data)
    return out
