"""Two versions of spamkit run the same command in turns: which is faster, beyond the noise?

    python scripts/ab_commits.py HEAD~1 HEAD --pairs 12 -- train ../shared/corpora/trec07p-dev/trec07p-dev.tar.gz -o X --jobs 2

Each version (a commit, or ``WORKTREE`` for the files as they are now) is checked out into a
temporary git worktree, its C extension built and its bytecode compiled, then the command
(``python -m spamkit ARGS``, ``X`` replaced by a temporary output file) runs ``--pairs`` times
per version, the order in each pair alternating, each run **from a temporary folder** with
``PYTHONPATH`` at the version's tree. Two traps this avoids, which made session 25's comparisons
run the same code in both arms: ``python -m`` puts the *current folder* first on ``sys.path``
(run from the repository, every arm imports the working tree whatever ``PYTHONPATH`` says), and
with ``PYTHONDONTWRITEBYTECODE`` set a tree whose bytecode is not compiled compiles its edited
modules again in every run.

Prints each version's medians (seconds, CPU of the process and the children it waited for,
peak MB) and the median of the pairwise differences (B - A) with how many pairs B won: on a
machine whose speed moves by a fifth from one minute to the next, the pairwise difference is
what says something. Relative corpus paths are made absolute. ``--stdin FILE``: each run reads
FILE on its standard input (pipe mode: ``-- filter MODEL -``). Standard library and git only.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WORKTREE = "WORKTREE"


def prepare(version: str, where: Path) -> Path:
    """A tree of ``version`` at ``where`` (the repository itself for WORKTREE), built and compiled."""
    if version == WORKTREE:
        tree = REPO
    else:
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "-f", str(where), version],
                       check=True, capture_output=True)
        tree = where
    subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace", "-q"], cwd=tree, check=True,
                   capture_output=True)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "spamkit")], check=True,
                   capture_output=True)
    return tree


def absolute(args: list[str], out: Path) -> list[str]:
    """The command's arguments: ``X`` is the output file, existing relative paths made absolute."""
    fixed = []
    for arg in args:
        if arg == "X":
            fixed.append(str(out))
        elif not arg.startswith("-") and os.path.exists(arg):
            fixed.append(str(Path(arg).resolve()))
        else:
            fixed.append(arg)
    return fixed


def run(tree: Path, args: list[str], folder: Path, stdin: Path | None = None) -> tuple[float, float, float]:
    """(seconds, CPU seconds, peak MB) of ``python -m spamkit ARGS`` run from ``folder`` (reading
    ``stdin``, a file, where given): the process's and its workers' (wait4's usage covers the
    children it waited for)."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    with open(stdin if stdin is not None else os.devnull, "rb") as source:
        started = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "spamkit", *args], cwd=folder, env=env,
                                stdin=source, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - started
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{tree}: spamkit {' '.join(args)} failed: {err[-800:]}")
    return seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("a", help="the version compared against: a commit, or WORKTREE")
    parser.add_argument("b", help="the version measured: a commit, or WORKTREE")
    parser.add_argument("--pairs", type=int, default=12)
    parser.add_argument("--stdin", type=Path, default=None, help="a file each run reads on its standard input")
    argv = sys.argv[1:]
    if "--" not in argv:
        parser.parse_args(argv)                    # --help, or what is wrong with the options
        parser.error("give the spamkit command after --  (X stands for the output file)")
    cut = argv.index("--")
    opts, args = parser.parse_args(argv[:cut]), argv[cut + 1:]
    if not args:
        parser.error("give the spamkit command after --")
    with tempfile.TemporaryDirectory(prefix="ab-") as tmp:
        tmp = Path(tmp)
        trees, made = {}, []
        try:
            for name, version in (("A", opts.a), ("B", opts.b)):
                trees[name] = prepare(version, tmp / f"tree-{name}")
                if version != WORKTREE:
                    made.append(tmp / f"tree-{name}")
            folder = tmp / "run"
            folder.mkdir()
            command = absolute(args, tmp / "out.spamkit")
            results: dict = {"A": [], "B": []}
            for i in range(opts.pairs):
                for name in (("A", "B") if i % 2 else ("B", "A")):
                    results[name].append(run(trees[name], command, folder,
                                             opts.stdin.resolve() if opts.stdin else None))
        finally:
            for tree in made:
                subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(tree)],
                               capture_output=True)
    for name, version in (("A", opts.a), ("B", opts.b)):
        seconds, cpu, peak = (statistics.median(r[k] for r in results[name]) for k in range(3))
        print(f"{name} {version:<12} seconds {seconds:.3f}  cpu {cpu:.2f}  peak MB {peak:.1f}")
    diffs = [b[0] - a[0] for a, b in zip(results["A"], results["B"])]
    cpu_diffs = [b[1] - a[1] for a, b in zip(results["A"], results["B"])]
    print(f"B - A: seconds {statistics.median(diffs):+.3f} (median of {len(diffs)} pairs; mean "
          f"{statistics.mean(diffs):+.3f}; B faster in {sum(d < 0 for d in diffs)}), "
          f"cpu {statistics.median(cpu_diffs):+.3f}")


if __name__ == "__main__":
    main()
