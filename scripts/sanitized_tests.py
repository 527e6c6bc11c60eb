#!/usr/bin/env python3
"""The tests that reach spamkit's C code, run once more with the extensions built under
AddressSanitizer and UndefinedBehaviorSanitizer.

The compiled loops parse hostile mail (MIME headers, HTML, URLs, tar headers) and index tables
with numbers read from files; a read past a buffer or an overflowing shift there is silent in
an optimised build. This script copies the package to a temporary folder, builds
``spamkit.common.speedups`` (from its sources, as setup.py lists them), ``spamkit.features.gramloops`` and
``spamkit.scoring.chisquare`` there with ``-fsanitize=address,undefined``
(every undefined-behaviour report fatal), checks that Python imports those builds, and runs
:data:`TESTS` against the copy with the sanitizer runtimes preloaded. Exit status: pytest's
(0: every test passed and no sanitizer report), 2 when no C compiler or sanitizer runtime is
found (CI installs gcc with the distribution's packages, which include both).

Leak detection is off: the interpreter keeps memory to the end on purpose, which is not a
spamkit leak. CI runs it after the suite (``.ci/run``); a user can run it the same way::

    python scripts/sanitized_tests.py [-k EXPR] [TEST_FILE ...]
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def setup_list(name: str) -> list[str]:
    """A list of strings assigned to ``name`` in setup.py (read, not run: running it would build)."""
    import ast
    for node in ast.parse((REPO / "setup.py").read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return ast.literal_eval(node.value)
    raise SystemExit(f"sanitized_tests: setup.py has no {name}")


#: spamkit.common.speedups's sources, as setup.py lists them
SPEEDUPS = setup_list("SPEEDUPS")
#: the test files whose tests call the compiled loops most: the tokenizer, HTML, MIME and URL
#: parsing, the vocabulary's numbering and hashing, archives, the stack's sums, the context
#: model's tables, the byte 4-grams, worker processes, hostile filter files and the chi-square tails
TESTS = ["tests/test_text.py", "tests/test_htmltext.py", "tests/test_mime.py", "tests/test_message.py",
         "tests/test_features.py", "tests/test_stack.py", "tests/test_context.py", "tests/test_context_filter.py",
         "tests/test_corpus.py", "tests/test_engines.py", "tests/test_bytegrams.py", "tests/test_persist_hostile.py",
         "tests/test_scoring.py", "tests/test_robinson.py"]
#: (module under spamkit/, its sources, extra flags): setup.py's extensions
EXTENSIONS = [("common/speedups", SPEEDUPS, ["-pthread", "-Ispamkit/common"]),
              ("features/gramloops", ["spamkit/features/gramloops.c"], []),
              ("scoring/chisquare", ["spamkit/scoring/chisquare.c"], [])]
FLAGS = ["-shared", "-fPIC", "-O1", "-g", "-fno-omit-frame-pointer", "-fsanitize=address,undefined",
         "-fno-sanitize-recover=undefined", "-ffp-contract=off"]


def runtime(cc: str, name: str) -> str | None:
    """The path of a sanitizer runtime library the compiler links (None if it has none)."""
    found = subprocess.run([cc, f"-print-file-name={name}"], capture_output=True, text=True).stdout.strip()
    return found if found and os.path.isabs(found) and os.path.exists(found) else None


def main(argv: list[str]) -> int:
    cc = os.environ.get("CC") or shutil.which("gcc") or shutil.which("cc")
    libs = [runtime(cc, name) for name in ("libasan.so", "libubsan.so")] if cc else [None]
    if cc is None or None in libs:
        print("sanitized_tests: no C compiler with the AddressSanitizer and UndefinedBehaviorSanitizer runtimes "
              "(gcc from the distribution's packages has both)", file=sys.stderr)
        return 2
    include = sysconfig.get_paths()["include"]
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    with tempfile.TemporaryDirectory(prefix="spamkit-sanitized-") as tmp:
        # the copy in tmp/pkg, found through PYTHONPATH; the tests run from tmp/run, a folder
        # without a package in it (a test's own subprocess with another PYTHONPATH then imports
        # what it names, not the sanitized copy without its preloaded runtimes)
        lib, run = Path(tmp) / "pkg", Path(tmp) / "run"
        run.mkdir()
        package = lib / "spamkit"
        shutil.copytree(REPO / "spamkit", package, ignore=shutil.ignore_patterns("*.so", "*.pyd", "__pycache__"))
        for module, sources, extra in EXTENSIONS:
            built = subprocess.run([cc, *FLAGS, *extra, f"-I{include}", *(str(REPO / source) for source in sources),
                                    "-o", str(package / f"{module}{suffix}")], capture_output=True, text=True,
                                   cwd=REPO)
            if built.returncode != 0:
                print(f"sanitized_tests: {', '.join(sources)} did not build:\n{built.stderr}", file=sys.stderr)
                return built.returncode
        env = {**os.environ, "PYTHONPATH": str(lib), "LD_PRELOAD": ":".join(libs),
               "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=1",
               "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1"}
        env.pop("SPAMKIT_PURE_PYTHON", None)
        check = subprocess.run([sys.executable, "-c", "import spamkit.common.compiled as c; "
                                "print(c.speedups().__file__); print(c.gramloops().__file__); print(c.chisquare().__file__)"],
                               env=env, capture_output=True, text=True, cwd=run)
        loaded = check.stdout.split()
        if check.returncode != 0 or len(loaded) != len(EXTENSIONS) or not all(path.startswith(str(lib)) for path in loaded):
            print(f"sanitized_tests: the sanitized builds were not the ones imported: {check.stdout}{check.stderr}",
                  file=sys.stderr)
            return 1
        print(f"sanitized_tests: {', '.join(loaded)}", flush=True)
        # the tests named by their absolute paths (the repository's pytest settings still apply)
        args = [str(REPO / a) if a.endswith(".py") or "::" in a else a for a in argv]
        if not any(a.endswith(".py") or "::" in a for a in argv):
            args += [str(REPO / t) for t in TESTS]
        # --capture=sys: a sanitizer's report, written to file descriptor 2 as it stops the process,
        # reaches the terminal; captured at the descriptor it would be lost with the process
        return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--capture=sys",
                               "--rootdir", str(REPO), *args], env=env, cwd=run).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
