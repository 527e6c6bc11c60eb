"""Data flows one way, and the package's folders are its stages:

    corpus -> parse -> text -> features -> models (scoring) -> decide -> filterfile -> jobs
           -> mail (mail.serve) -> cli

Each stage (a folder of ``spamkit/``, two of them nested in the stage they extend, and
``common``, shared below them all) may import
only the stages the table allows, checked on every import, those inside functions too; a few
modules that must stay light (pipe mode's lean route, the filter file's manifest, the worker
processes' numbering, the client) have a list of their own. A new stage must be added here.
"""

from __future__ import annotations

import ast
from pathlib import Path

import spamkit

PACKAGE = Path(spamkit.__file__).parent

#: folders below a stage that are stages of their own (their own rules below)
NESTED = {("jobs", "distributed"): "distributed", ("mail", "serve"): "serve"}

#: stage -> the stages it may import (its own is always allowed), in the order of the flow
ALLOWED = {
    # -- shared below every stage, standard library only: errors, the names users choose from (and
    #    each model's defaults, so that --help lists choices without importing the libraries),
    #    labels, fsync helpers (filter files and mailboxes), how worker processes start, pipe
    #    mode's never-lose-a-message guard and its exit statuses (mail and serve), and the one
    #    place that loads the compiled loops --
    "common": set(),
    # -- the stages --
    # labelled corpora in every format (compiled: an archive member read without the GIL)
    "corpus": {"common"},
    # raw mail -> a parsed message (MIME, decoding, HTML to text)
    "parse": {"common"},
    # a parsed message -> tokens
    "text": {"common", "parse"},
    # tokens -> matrices; bytes -> hashed contexts and 4-gram slots
    "features": {"common"},
    # every formula from counts and weights to log-odds, standard library only (its arrays module:
    # the same over NumPy arrays)
    "scoring": {"common"},
    # matrices -> class probabilities (features: the 4-gram model unpacks its slots)
    "models": {"common", "features", "scoring"},
    # scores -> calibrated probabilities, decisions, thresholds, measures
    "decide": {"common", "models", "scoring"},
    # the trained filter, its settings and its file (and the estimators as scikit-learn's own)
    "filterfile": {"common", "corpus", "decide", "features", "models", "parse", "scoring", "text", "version"},
    # what each command does over corpora, and the engines it runs on
    "jobs": {"common", "corpus", "decide", "features", "filterfile", "models", "parse", "scoring", "text", "version"},
    # the Dask engine: the pipeline's stages on a cluster (jobs: the engine interface it implements)
    "distributed": {"common", "corpus", "decide", "features", "filterfile", "jobs", "models", "parse", "scoring",
                    "text"},
    # filtering mailboxes and pipe mode (filterfile: its lean route reads the file's manifest)
    "mail": {"common", "corpus", "decide", "filterfile", "parse", "scoring", "text", "version"},
    # the resident filter: spamkit's protocol and spamd's (jobs: TELL learns through them)
    "serve": {"common", "corpus", "jobs", "mail", "parse"},
    # the command line, its reports
    "cli": {"common", "corpus", "decide", "distributed", "filterfile", "jobs", "mail", "serve", "text", "version"},
    # the command: guards pipe mode before importing the command line
    "__main__": {"cli", "common", "corpus", "mail"},
    # the one-import facade (its names are imported by name, when first asked for)
    "__init__": set(),
}


#: modules that must stay lighter than their stage: the spamkit modules each may import (a name
#: ending in ".*" allows its subtree; any other name that module alone)
MODULE_RULES = {
    # pipe mode's fast path: the standard library, the file's manifest, the message, the scoring
    # core's definitions (not its NumPy forms)
    "mail/lean.py": {"common.compiled", "common.errors", "common.names", "decide.familiar", "decide.rules",
                     "filterfile.budget", "filterfile.manifest",
                     "mail.leanarrays", "mail.leansides", "parse.message", "scoring", "text"},
    "mail/leanarrays.py": {"common.compiled", "common.patterns", "filterfile.manifest"},
    # the decision rules' numbers that pipe mode's fast path shares with the full route
    "decide/rules.py": {"common.errors", "common.labels"},
    "mail/leansides.py": {"common.compiled", "filterfile.manifest", "mail.leanarrays", "scoring"},
    # a filter file's manifest, read and checked with the standard library alone (and the zip
    # reader made of it)
    "filterfile/manifest.py": {"common.errors", "common.patterns", "filterfile.zipread", "version"},
    # what loading a filter file may cost, checked by both loaders (pipe mode's too)
    "filterfile/budget.py": {"filterfile.manifest", "filterfile.zipread"},
    # the terms a worker process numbers (the workers start before NumPy is imported)
    "features/numbering.py": {"common.compiled"},
    # spamkit-pipe's client: the standard library and the guard
    "mail/serve/client.py": {"common.passthrough"},
    # the engine interface imports neither NumPy nor the filter at import (its whole operations
    # import what they run)
    "jobs/engine.py": {"parse.message", "jobs.folds", "jobs.rows"},
    # the engines implement the interface and call no job back
    "jobs/engines.py": {"common.errors", "common.processes", "corpus.*", "jobs.chunks", "jobs.engine"},
    # what a worker does with a chunk: parse, tokenize, number, make rows (no job, no engine)
    "jobs/chunks.py": {"common.compiled", "corpus.*", "features.*", "filterfile.sides", "filterfile.verdicts",
                       "parse.message"},
}


def stage_of_parts(parts) -> str:
    """The stage of a module or package, from its dotted parts below ``spamkit``."""
    parts = [part.removesuffix(".py") for part in parts]
    return NESTED.get(tuple(parts[:2]), parts[0])


def stage_of(path: Path) -> str:
    return stage_of_parts(path.relative_to(PACKAGE).parts)


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
                found.add(stage_of_parts(target))
            elif node.module and node.module.split(".")[0] == "spamkit":
                parts = node.module.split(".")
                found.add(stage_of_parts(parts[1:]) if len(parts) > 1 else "version")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "spamkit" and len(parts) > 1:
                    found.add(stage_of_parts(parts[1:]))
    return found


def imported_modules(path: Path) -> set[str]:
    """The spamkit modules ``path`` imports, dotted below ``spamkit`` (``from X import name``
    counts as X), imports inside functions too."""
    package_parts = list(path.relative_to(PACKAGE).parent.parts)
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package_parts[: len(package_parts) - (node.level - 1)]
                target = base + (node.module.split(".") if node.module else [])
                if not target:
                    found.update("version" if a.name == "__version__" else a.name for a in node.names)
                else:
                    found.add(".".join(target))
            elif node.module and node.module.split(".")[0] == "spamkit":
                found.add(".".join(node.module.split(".")[1:]) or "version")
        elif isinstance(node, ast.Import):
            found.update(".".join(a.name.split(".")[1:]) for a in node.names
                         if a.name.split(".")[0] == "spamkit" and "." in a.name)
    return found


def allowed_by(rules: set[str], module: str) -> bool:
    return any(module == r or (r.endswith(".*") and (module == r[:-2] or module.startswith(r[:-1])))
               for r in rules)


def test_the_light_modules_import_only_their_own_list():
    violations = []
    for rel, rules in MODULE_RULES.items():
        path = PACKAGE / rel
        assert path.exists(), f"{rel} is in MODULE_RULES but does not exist"
        own = rel.removesuffix(".py").replace("/", ".")
        for module in sorted(imported_modules(path) - {own}):
            if not allowed_by(rules, module):
                violations.append(f"{rel} imports {module}")
    assert violations == []


def test_the_module_rules_can_fail():
    assert not allowed_by({"scoring"}, "scoring.arrays") and allowed_by({"corpus.*"}, "corpus.tree")
    assert allowed_by({"corpus.*"}, "corpus") and not allowed_by({"parse.message"}, "parse.mime")


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
        assert imported_stages(fake) == {"models"} and "models" not in ALLOWED["corpus"]
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
        PACKAGE / "filterfile" / "spamfilter.py", PACKAGE / "jobs" / "evaluation.py"]
    offenders = {str(p.relative_to(PACKAGE)): engine_duck_typing(p) for p in paths}
    assert {p: found for p, found in offenders.items() if found} == {}


def test_the_engine_check_can_fail(tmp_path):
    sample = tmp_path / "m.py"
    sample.write_text("if engine is None:\n    pass\nx = hasattr(chosen, 'count_ahead')\ny = engine.fit(1)\n")
    assert engine_duck_typing(sample) == ["engine is None (line 1)", "hasattr(chosen, 'count_ahead') (line 3)"]


def test_the_engines_implement_the_interface_and_call_no_job():
    # the engines give the interface its primitives (ProcessEngine) or whole operations (Dask);
    # the jobs' own logic (scoring, cross-validation) is the jobs', never called back from an
    # engine: of spamkit.jobs, an engine module imports the interface alone (MODULE_RULES for
    # jobs/engines.py; here the Dask engine's modules)
    from spamkit.jobs.distributed import DaskEngine
    from spamkit.jobs.engine import Engine
    from spamkit.jobs.engines import ProcessEngine
    assert issubclass(ProcessEngine, Engine) and issubclass(DaskEngine, Engine)
    for path in sorted((PACKAGE / "distributed").glob("*.py")):
        jobs = {m for m in imported_modules(path) if m.split(".")[0] == "jobs"}
        assert jobs <= {"jobs.engine"}, f"{path.name} imports {jobs}"
