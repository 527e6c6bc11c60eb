"""Data flows one way: corpus -> message -> text -> features -> models -> decision -> report.

Each module may import only the spamkit modules its stage is allowed to see
(the table in ../shared/STYLE.md, section 1). A new module must be added here.
"""

from __future__ import annotations

import ast
from pathlib import Path

import spamkit

PACKAGE = Path(spamkit.__file__).parent

# stage -> spamkit stages it may import (its own stage is always allowed)
ALLOWED = {
    "errors": set(),
    # the names users choose from (models, tokens, representations, ...) and the default rate,
    # standard library only, so that --help lists choices without importing the libraries
    "names": set(),
    # a filter file's manifest, read and checked (standard library only: all spamkit info needs)
    "manifest": {"errors", "version"},
    # the scoring core: every formula from counts and weights to log-odds, standard library only
    # (its package's arrays module: the same over NumPy arrays, for the models); compiled: its C loop
    "scoring": {"compiled"},
    # pipe mode's fast path: a counting filter's file read and one message scored, standard library only
    "lean": {"compiled", "errors", "manifest", "message", "names", "scoring", "text"},
    # how worker processes start: fork only from a one-thread process (standard library only)
    "processes": set(),
    # fsync helpers shared by filter files and mailboxes (standard library only)
    "durable": {"errors"},
    "labels": set(),
    # (compiled: an archive member read without letting go of the GIL)
    "corpus": {"compiled", "errors", "labels", "names"},
    # the compiled inner loops (a C extension, optional) and the one place that loads them
    "speedups": set(),
    "gramloops": set(),
    "compiled": {"speedups", "gramloops"},
    "htmltext": {"compiled"},
    # MIME structure from bytes (header blocks, parameters, multipart spans), for message
    # (compiled: a well-formed header block read in C; message: the top block's names and values)
    "mime": {"compiled"},
    "message": {"compiled", "errors", "htmltext", "mime"},
    "text": {"compiled", "errors", "message", "mime", "names"},
    # the terms a worker process numbers and sends back (standard library and compiled only: the
    # workers of spamkit train start before NumPy is imported)
    "numbering": {"compiled"},
    "features": {"compiled", "errors", "names", "numbering"},
    # bytes -> hashed context keys and 4-gram slots, the features of byte-level models
    # (models.context, models.bytegrams; compiled: the 4-gram slots in C)
    "bytekeys": {"compiled", "errors", "names"},
    # (bytekeys: the 4-gram model unpacks a packed row of slots where the compiled loops are not built)
    "models": {"bytekeys", "compiled", "errors", "labels", "names", "scoring"},
    "decision": {"errors", "labels", "scoring"},
    "metrics": {"errors", "labels"},
    # scores -> probabilities (Platt scaling), between the models and the decisions
    "calibration": {"errors", "names", "scoring"},
    # the trained filter: stages in order, its calibration, decision layer and file; selection
    # holds protocols over matrices (cross-validation, tuning) that it calls when it trains (kNN's
    # --k auto, calibration), so the arrow is spamfilter -> selection, never back.
    "spamfilter": {"bytekeys", "errors", "labels", "corpus", "message", "text", "features", "models", "decision",
                   "persist", "selection", "calibration", "scoring"},
    # settings -> an untrained filter: the registry of names and the defaults
    "config": {"calibration", "errors", "features", "models", "names", "spamfilter", "text"},
    # corpus-level jobs (train, evaluate, cross-validate, online, learn, survey)
    "jobs": {"bytekeys", "errors", "labels", "corpus", "message", "text", "features", "models", "decision", "metrics",
             "evaluation", "selection", "version", "spamfilter", "config", "scoring"},
    # the local engine on several cores: worker processes parse and tokenize for the jobs
    # (corpus: a corpus record travels to a worker as its bytes and kind; bytekeys, compiled: the
    # workers make the byte 4-grams' slots)
    "engines": {"bytekeys", "compiled", "corpus", "errors", "features", "jobs", "message", "numbering", "processes",
                "spamfilter"},
    # bogofilter word lists in and out: counts -> a filter (spamkit.wordlist)
    # (manifest: the longest line a filter file holds, which a token must fit)
    "wordlist": {"decision", "errors", "features", "labels", "manifest", "models", "spamfilter", "text"},
    # the one-import facade for scripts: re-exports spamfilter, config and jobs
    "pipeline": {"spamfilter", "config", "jobs", "decision", "models"},
    # (bytekeys: the online protocol with a context model, which reads each message's bytes)
    "evaluation": {"bytekeys", "corpus", "decision", "errors", "features", "labels", "message", "metrics", "models", "names", "persist", "scoring", "selection", "text"},
    # model selection over matrices (folds, out-of-fold scores, kNN tuning, thresholds)
    "selection": {"errors", "models", "decision", "scoring"},
    # a zip archive written member by member, deflated by ISA-L (standard library and isal)
    "ziparchive": set(),
    # (compiled: the vocabulary's hash keys in C)
    "persist": {"compiled", "decision", "durable", "errors", "features", "labels", "manifest", "models", "text", "ziparchive",
                "version"},
    "report": {"errors", "labels"},
    "htmlreport": set(),
    # writing mailboxes: verdicts in (from the CLI's SpamFilter), tagged and moved mail out; IMAP
    # folders read for learning come out as the corpus stage's LabelledMessage
    "mailfilter": {"errors", "version", "message", "durable", "passthrough", "corpus", "processes"},
    # the resident filter process (takes a classify function) and its standard-library-only client
    "server": {"mailfilter", "client", "passthrough"},
    # SpamAssassin's spamd protocol on the server's machinery; TELL learns through the jobs
    "spamd": {"mailfilter", "message", "server", "corpus", "durable", "errors", "jobs", "taught"},
    # what a user taught over the site filter (spamkit serve --user-models): messages, not counts
    "taught": {"durable", "errors"},
    "client": {"passthrough"},
    # pipe mode's never-lose-a-message guard (standard library only)
    "passthrough": set(),
    # the console script: guards pipe mode before importing the command line, and starts the
    # archives of train and evaluate decompressing before it (corpus.tree.decompressing_ahead)
    "launch": {"passthrough", "cli", "lean", "mailfilter", "corpus"},
    # the Dask engine: the pipeline's stages run on workers; the pipeline never imports it
    # (jobs: the engine interface it implements, spamkit.jobs.engine; scoring: log-odds to probabilities)
    "distributed": {"errors", "labels", "corpus", "jobs", "message", "scoring", "text", "features", "models",
                    "spamfilter", "selection"},
    # the CLI parses --cost into the decision module's CostMatrix itself
    "cli": {"config", "corpus", "decision", "distributed", "durable", "engines", "errors", "evaluation", "htmlreport", "jobs", "labels", "lean", "mailfilter", "manifest", "names", "passthrough", "persist", "report", "selection", "server", "spamd", "spamfilter", "taught", "text", "version", "wordlist"},
    "__main__": {"launch"},
    "__init__": set(),
}


def stage_of(path: Path) -> str:
    rel = path.relative_to(PACKAGE)
    return rel.parts[0].removesuffix(".py")


def imported_stages(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package_parts = path.relative_to(PACKAGE).parent.parts
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:            # relative: resolve against this module's package
                base = list(package_parts[: len(package_parts) - (node.level - 1)])
                target = base + (node.module.split(".") if node.module else [])
                if not target:        # "from .. import x" at the top: x is the stage
                    found.update("version" if a.name == "__version__" else a.name for a in node.names)
                    continue
                found.add(target[0])
            elif node.module and node.module.split(".")[0] == "spamkit":
                parts = node.module.split(".")
                found.add(parts[1] if len(parts) > 1 else "version")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "spamkit" and len(parts) > 1:
                    found.add(parts[1])
    return found


def test_every_module_respects_the_module_map():
    violations = []
    for path in sorted(PACKAGE.rglob("*.py")):
        stage = stage_of(path)
        assert stage in ALLOWED, f"{path}: stage {stage!r} is not in the module map; add it to ALLOWED"
        for imported in imported_stages(path) - {stage}:
            if imported not in ALLOWED[stage]:
                violations.append(f"{path.relative_to(PACKAGE)} imports {imported}")
    assert violations == []


def test_the_checker_catches_a_violation(tmp_path):
    # The checker must be able to fail: a corpus module importing a model is caught.
    fake = PACKAGE / "corpus" / "_layering_probe.py"
    try:
        fake.write_text("from ..models import naive_bayes\n")
        assert imported_stages(fake) == {"models"}
    finally:
        fake.unlink()


def test_the_default_engine_never_imports_dask(tmp_path):
    # Dask is optional: training and classifying with the default engine must not load it.
    import subprocess
    import sys
    from conftest import SAMPLE
    code = ("import sys; from click.testing import CliRunner; from spamkit.cli import cli; "
            f"r = CliRunner().invoke(cli, ['train', {str(SAMPLE)!r}, '-o', {str(tmp_path / 'm.spamkit')!r}]); "
            "assert r.exit_code == 0, r.output; "
            "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')); "
            "assert not loaded, loaded")
    subprocess.run([sys.executable, "-c", code], check=True)


#: the standard library's documented names that begin with an underscore (a forked child ends
#: with ``os._exit``, so that the parent's ``atexit`` handlers and buffers are not run twice)
PUBLIC_UNDERSCORED = {("os", "_exit")}


def private_reach_ins(path: Path) -> list[str]:
    """Uses of another module's ``_``-names: ``from x import _name`` and ``obj._name`` on anything
    but ``self``, ``cls`` or ``super()`` (an object's private members belong to its own class)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("spamkit")):
            found += [f"import {a.name}" for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
        elif isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            owner = node.value
            if isinstance(owner, ast.Name) and owner.id in ("self", "cls"):
                continue
            if isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name) and owner.func.id == "super":
                continue
            if isinstance(owner, ast.Name) and (owner.id, node.attr) in PUBLIC_UNDERSCORED:
                continue
            found.append(f"{ast.unparse(owner)}.{node.attr} (line {node.lineno})")
    return found


def test_no_module_reaches_into_another_modules_private_names():
    offenders = {str(p.relative_to(PACKAGE)): private_reach_ins(p) for p in sorted(PACKAGE.rglob("*.py"))}
    assert {p: found for p, found in offenders.items() if found} == {}


def test_the_private_name_check_can_fail(tmp_path):
    sample = tmp_path / "m.py"
    sample.write_text("from .features import _count\nx = model._restore\ny = self._ok\nz = super()._ok\n")
    assert private_reach_ins(sample) == ["import _count", "model._restore (line 2)"]


def test_every_relative_import_resolves():
    """Also the imports inside functions (loaded only when a path runs, e.g. on a Dask worker)."""
    import importlib.util
    missing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        package = ["spamkit", *path.relative_to(PACKAGE).parent.parts]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level:
                base = package[: len(package) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
                if importlib.util.find_spec(target) is None:
                    missing.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: {target}")
    assert missing == []


def engine_duck_typing(path: Path) -> list[str]:
    """Where a module asks which engine it was given instead of asking the interface
    (:class:`spamkit.jobs.engine.Engine`): ``hasattr``/``getattr``/``isinstance`` on a name with
    "engine" or "chosen" in it, or such a name compared with ``is None``/``is not None``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in (
                "hasattr", "getattr", "isinstance") and node.args:
            subject = ast.unparse(node.args[0])
            if "engine" in subject or "chosen" in subject:
                found.append(f"{ast.unparse(node)} (line {node.lineno})")
        elif isinstance(node, ast.Compare) and any(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops):
            subject = ast.unparse(node.left)
            if ("engine" in subject or "chosen" in subject) and any(
                    isinstance(c, ast.Constant) and c.value is None for c in node.comparators):
                found.append(f"{ast.unparse(node)} (line {node.lineno})")
    return found


def test_jobs_and_commands_ask_the_engine_interface_not_which_engine():
    # one declared interface (spamkit.jobs.engine.Engine, run in this process by default): no
    # job or command branches on engine=None or on what an engine happens to have
    paths = sorted((PACKAGE / "jobs").glob("*.py")) + sorted((PACKAGE / "cli").glob("*.py")) + [
        PACKAGE / "spamfilter.py", PACKAGE / "evaluation.py"]
    offenders = {str(p.relative_to(PACKAGE)): engine_duck_typing(p) for p in paths}
    assert {p: found for p, found in offenders.items() if found} == {}


def test_the_engine_check_can_fail(tmp_path):
    sample = tmp_path / "m.py"
    sample.write_text("if engine is None:\n    pass\nx = hasattr(chosen, 'count_ahead')\ny = engine.fit(1)\n")
    assert engine_duck_typing(sample) == ["engine is None (line 1)", "hasattr(chosen, 'count_ahead') (line 3)"]


def test_the_engines_implement_the_interface_and_call_no_job():
    # the engines give the interface its primitives (ProcessEngine) or whole operations (Dask);
    # the jobs' own logic (scoring, cross-validation) is the jobs', never called back from an
    # engine: of spamkit.jobs, an engine module imports the interface alone
    from spamkit.distributed import DaskEngine
    from spamkit.engines import ProcessEngine
    from spamkit.jobs.engine import Engine
    assert issubclass(ProcessEngine, Engine) and issubclass(DaskEngine, Engine)
    for path in (PACKAGE / "engines.py", *sorted((PACKAGE / "distributed").glob("*.py"))):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and "jobs" in node.module.split("."):
                assert node.module.endswith("jobs.engine"), f"{path.name} imports {node.module}"
