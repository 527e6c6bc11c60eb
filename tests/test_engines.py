"""The local engine on several cores (spamkit.jobs.engines.ProcessEngine, ``--jobs N``): worker
processes parse and tokenize, and every result equals the one-process result."""

from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from spamkit.cli import cli
from spamkit.common.compiled import gramloops, speedups
from spamkit.corpus import Corpus
from spamkit.jobs.engines import ProcessEngine
from spamkit.common.errors import CorpusError
from spamkit import BEST, build_filter

from conftest import SAMPLE, compiled_expected, extensions_off


def members(path) -> dict:
    with zipfile.ZipFile(path) as z:
        out = {name: z.read(name) for name in z.namelist() if name != "manifest.json"}
        manifest = json.loads(z.read("manifest.json"))
    out["parse_fallbacks"] = manifest["training"]["parse_fallbacks"]
    out["per_class"] = manifest["training"]["per_class"]
    return out


def test_a_chunk_travels_as_one_string_and_comes_back_the_same(monkeypatch):
    # tokens go back to the driver joined by NUL; a token holding NUL (a URL can) sends the
    # chunk as lists instead, and empty token lists and empty tokens survive either way
    from spamkit.jobs import chunks
    cases = [[["a", "b"], [], ["c"]], [["url:x\x00y", "b"], ["c"]], [[""], ["", "d"]], [[], []]]
    for token_lists in cases:
        it = iter(token_lists)
        monkeypatch.setattr(chunks, "_ANALYZER", lambda msg, it=it: next(it))
        monkeypatch.setattr("spamkit.filterfile.sides.parse_item", lambda item: type("M", (), {"defects": ()})())
        sent = chunks.tokenize_chunk([None] * len(token_lists))
        assert (sent[0] is None) == any("\x00" in t for tokens in token_lists for t in tokens)
        assert chunks.unpack_chunk(sent) == [(tokens, ()) for tokens in token_lists]


def test_tokens_come_back_in_order_with_their_defects():
    f = build_filter(**BEST)
    with Corpus(SAMPLE) as corpus:
        msgs = list(corpus)
    with ProcessEngine(jobs=2, chunk=3) as engine:
        remote = list(f.tokenized(msgs, engine.tokenizer(f.analyzer)))
        remote_fallbacks = dict(f.parse_fallbacks)
    f.parse_fallbacks.clear()
    assert remote == [f.tokens(m) for m in msgs]
    assert remote_fallbacks == dict(f.parse_fallbacks) and remote_fallbacks      # the sample has odd mail


def test_a_chunk_ends_at_its_count_or_once_its_bytes_reach_the_bound():
    # the chunks a pool is given: consecutive, none empty, each at most `chunk` items and closed
    # by the item that took its raw bytes to `chunk_bytes`; results come back in order
    from spamkit.corpus.base import LabelledMessage
    sizes = [10, 10, 100, 1, 1, 1, 1, 1, 50, 50, 0, 7]
    items = [LabelledMessage(str(i), "ham", b"x" * n, str(i)) for i, n in enumerate(sizes)]

    class Pool:
        """Runs each task at once, noting the chunk sizes it was given."""
        given: list = []

        def submit(self, work, chunk):
            from concurrent.futures import Future
            self.given.append([len(item.raw) for item in chunk])
            done = Future()
            done.set_result(work(chunk))
            return done

    engine = ProcessEngine(jobs=2, chunk=4, chunk_bytes=100)
    pool = Pool()
    out = [x for done in engine.ordered(pool, lambda chunk: [item.id for item in chunk], items) for x in done]
    assert out == [str(i) for i in range(len(sizes))]
    assert pool.given == [[10, 10, 100], [1, 1, 1, 1], [1, 50, 50], [0, 7]]


@pytest.mark.parametrize("command", ["train", "evaluate", "cv", "online"])
def test_jobs_give_the_same_results(command, tmp_path):
    runner = CliRunner()
    if command == "train":
        # with a held-out part, and without (where the workers begin before the filter is built:
        # ProcessEngine.count_ahead)
        for held_out in (["--test-fraction", "0.3"], []):
            outputs = []
            for jobs in ("1", "2"):
                out = tmp_path / f"j{jobs}.spamkit"
                result = runner.invoke(cli, ["train", str(SAMPLE), "-o", str(out), "--jobs", jobs, *held_out])
                assert result.exit_code == 0, result.output
                outputs.append(members(out))
            assert outputs[0] == outputs[1]
        return
    model = tmp_path / "m.spamkit"
    assert runner.invoke(cli, ["train", str(SAMPLE), "-o", str(model), "--jobs", "1"]).exit_code == 0
    args = {"evaluate": ["evaluate", str(model), str(SAMPLE)], "cv": ["cv", str(SAMPLE), "--folds", "3"],
            "online": ["online", str(SAMPLE)]}[command]
    results = []
    for jobs in ("1", "2"):
        trec = tmp_path / f"results{jobs}.txt"
        result = runner.invoke(cli, [*args, "--jobs", jobs, "--json", *(["-o", str(trec)] if command == "online" else [])])
        assert result.exit_code == 0, result.output
        data = json.loads(result.stdout)
        for timing in ("seconds", "messages_per_second"):
            data.pop(timing, None)
        if command == "online":
            data["scores"] = trec.read_text()                # every message's score, in order
        results.append(data)
    assert results[0] == results[1]


def test_jobs_give_the_same_filter_and_scores_with_byte_grams(tmp_path):
    # with byte 4-grams the workers make their slots when training and score them when
    # evaluating (ProcessEngine.makes_gram_rows, row_blocks): the same filter file, the same report
    runner = CliRunner()
    outputs, reports = [], []
    for jobs in ("1", "2"):
        out = tmp_path / f"j{jobs}.spamkit"
        result = runner.invoke(cli, ["train", str(SAMPLE), "--byte-grams", "-o", str(out), "--jobs", jobs])
        assert result.exit_code == 0, result.output
        outputs.append(members(out))
        result = runner.invoke(cli, ["evaluate", str(tmp_path / "j1.spamkit"), str(SAMPLE), "--jobs", jobs, "--json"])
        assert result.exit_code == 0, result.output
        data = json.loads(result.stdout)
        for timing in ("seconds", "messages_per_second"):
            data.pop(timing, None)
        reports.append(data)
    assert any("grams" in name for name in outputs[0])              # the 4-gram model is in the file
    assert outputs[0] == outputs[1]
    assert reports[0] == reports[1]


def test_a_bad_message_fails_at_its_place():
    f = build_filter(**BEST)
    with Corpus(SAMPLE) as corpus:
        msgs = list(corpus)

    def items():
        yield from msgs[:10]
        raise CorpusError("bad.eml: unreadable")

    with ProcessEngine(jobs=2, chunk=4) as engine, pytest.raises(CorpusError, match="bad.eml"):
        engine.fit(f, items())


def test_corpus_survey_on_workers_equals_one_process():
    runner = CliRunner()
    out = {}
    for jobs in ("1", "2"):
        result = runner.invoke(cli, ["corpus", str(SAMPLE), "--json", "--jobs", jobs])
        assert result.exit_code == 0, result.output
        surveys = json.loads(result.output)
        for survey in surveys:
            survey.pop("seconds")
        out[jobs] = surveys
    assert out["1"] == out["2"] and out["1"][0]["n_with_fallback"] > 0        # the sample has odd mail
    # --strict names the same first message either way
    errors = {jobs: runner.invoke(cli, ["corpus", str(SAMPLE), "--strict", "--jobs", jobs]).output
              for jobs in ("1", "2")}
    assert errors["1"] == errors["2"] and "parse fallback needed" in errors["1"]


def _in_python(function, *args):
    """``function(*args)`` on the Python definitions (SPAMKIT_PURE_PYTHON=1), not spamkit.common.speedups."""
    with extensions_off():
        return function(*args)


_TOKEN = st.sampled_from(["free", "money", "free!", "é", "\U0001F600", "", "a" * 50]) | st.text(max_size=4)


_COMPILED = pytest.mark.skipif(speedups() is None and not compiled_expected(),
                               reason="spamkit.common.speedups is not in use (not built, or SPAMKIT_PURE_PYTHON=1)")


def _numbered_both_ways(chunks, seed=()):
    """Each chunk numbered by a compiled Numbering and by the Python loop over a dict, in turn
    (each chunk sees the numbers the ones before gave): the results, and the two numberings."""
    from spamkit.features import numbering
    from spamkit.common import speedups as module
    compiled, python = module.Numbering(), {}
    out = []
    for chunk in ([[list(seed)]] if seed else []) + list(chunks):
        got = numbering.number_terms(compiled, chunk)
        expected = _in_python(numbering.number_terms, python, chunk)
        out.append((got, expected))
    return out, compiled, python


@_COMPILED
@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(_TOKEN, max_size=30), max_size=6), st.lists(st.lists(_TOKEN, max_size=30), max_size=6))
def test_the_compiled_numbering_of_terms_is_its_definition(first, second):
    """A worker's numbering in C (speedups.Numbering) against the Python loop over a dict, over
    two chunks in a row (the second sees the numbers the first gave)."""
    results, compiled, python = _numbered_both_ways([first, second])
    for got, expected in results:
        assert got == expected
    assert compiled.terms() == list(python) and len(compiled) == len(python)
    got = results[-1][0]
    ids = np.frombuffer(got[1], dtype=np.int32)                 # and what the numbers mean
    sizes = np.frombuffer(got[3], dtype=np.int64)
    assert sizes.tolist() == [len(set(tokens)) for tokens in second] and len(ids) == sizes.sum()


class _Word(str):
    """A str subclass: counted as its str value, by the Python loop."""


@_COMPILED
@pytest.mark.parametrize("case", ["long documents", "tuples, iterables and str subclasses", "many chunks"])
def test_the_compiled_numbering_of_long_and_unusual_documents_is_its_definition(case):
    # documents longer than any before, repeated tokens far apart, a vocabulary that grows the
    # table many times over; tuples and other iterables, str subclasses equal to a str
    rng = np.random.default_rng(7)
    vocabulary = [f"w{i}" for i in range(3000)] + ["é", "\U0001F600", ""]
    docs = [[vocabulary[i] for i in rng.integers(0, len(vocabulary), size=n)] for n in (5, 4000, 17, 9000, 0, 1)]
    if case == "long documents":
        chunks = [docs]
    elif case == "tuples, iterables and str subclasses":
        # an iterator is used up by the first numbering: each side gets its own
        chunks = [[tuple(docs[0]), docs[1], [_Word("w1"), "w1", _Word("w2")], ("w2", _Word("w3"), "w3")]]
    else:
        big = [f"t{i}" for i in range(200_000)]
        chunks = [[[big[i] for i in rng.integers(0, len(big), size=300)] for _ in range(40)] for _ in range(10)]
    results, compiled, python = _numbered_both_ways(chunks, seed=["w5"])
    for got, expected in results:
        assert got == expected
    assert compiled.terms() == list(python)
    assert [type(t) for t in compiled.terms()] == [type(t) for t in python]   # the first one seen is kept


def test_the_compiled_numbering_refuses_what_python_refuses():
    from spamkit.features import numbering
    if speedups() is None:
        pytest.skip("spamkit.common.speedups is not built")
    from spamkit.common import speedups as module
    for numbers in (module.Numbering(), {}):
        with pytest.raises(TypeError):
            numbering.number_terms(numbers, [["a", ["unhashable"]]])
        with pytest.raises(TypeError):
            numbering.number_terms(numbers, [5])
    assert numbering.number_terms(module.Numbering(), [iter(["a", "b", "a"])]) == \
        numbering.number_terms({}, [iter(["a", "b", "a"])])

    class Sneaky(str):
        """A token whose == numbers again, on the same numbering, while it is being compared."""
        def __eq__(self, other):
            return bool(numbering.number([["x"]]))
        __hash__ = str.__hash__

    class Failing(str):
        def __eq__(self, other):
            raise ValueError("no comparing me")
        __hash__ = str.__hash__

    numbering = module.Numbering()
    numbering.number([["a"]])
    with pytest.raises(RuntimeError, match="called again"):
        numbering.number([[Sneaky("a")]])
    with pytest.raises(ValueError, match="no comparing me"):
        numbering.number([[Failing("a")]])
    assert numbering.number([["a", "b"]])[0] == ["b"]       # still usable, "a" still number 0
    assert numbering.terms() == ["a", "b"]
    with pytest.raises(TypeError):
        module.Numbering(1)


_WHERE_SCRIPT = """
import json, sys, threading
from spamkit.jobs import engines
from spamkit.corpus import Corpus, archives
from spamkit.jobs.engines import ProcessEngine
from spamkit import BEST, build_filter
archive, out, thread = sys.argv[1], sys.argv[2], sys.argv[3] == "thread"
sent, real = [], engines.on_the_wire
def recording(shared=frozenset()):
    wire = real(shared)
    return lambda item: sent.append(wire(item)) or sent[-1]
engines.on_the_wire = recording
stop = threading.Event()
other = threading.Thread(target=stop.wait) if thread else None
if other is not None:
    other.start()                            # a second thread: workers from a forkserver
with Corpus(archive) as corpus:
    msgs = list(corpus)
    located = all(m.where is not None and m.where[0] in archives.complete_spools() for m in msgs)
    again = [archives.read_where(m.where[1:]) for m in msgs] == [m.raw for m in msgs]
    with ProcessEngine(jobs=2, chunk=4) as engine:
        remote = build_filter(**BEST)
        engine.fit(remote, msgs)
closed = archives.complete_spools().isdisjoint({m.where[0] for m in msgs})
stop.set()
remote.save(out)
print(json.dumps({"sent": len(sent), "by_where": sum(isinstance(s[0], tuple) for s in sent), "n": len(msgs),
                  "located": located, "again": again, "closed": closed}))
"""


@pytest.mark.parametrize("thread", [False, True])
def test_archive_members_reach_forked_workers_by_where_they_are_not_through_a_pipe(tmp_path, thread):
    # a member of an open archive goes to a worker as (fd, offset, size) when the workers were
    # forked while its spool was open (they read it there); with workers from a forkserver (a
    # thread was running when they started) as its bytes. The filter is the same either way, and
    # the same as one process makes. In a subprocess: pytest-timeout's thread rules out fork here.
    seen = _on_a_sample_archive(_WHERE_SCRIPT, tmp_path, thread)
    assert seen["located"] and seen["again"] and seen["closed"] and seen["sent"] == seen["n"] == 240
    assert seen["by_where"] == (0 if thread else 240)


_LOCATED_SCRIPT = """
import json, sys, threading
from spamkit.corpus import Corpus, tree
from spamkit.jobs.engines import ProcessEngine
from spamkit.jobs.train import train_filter
from spamkit import BEST, build_filter
archive, out, thread = sys.argv[1], sys.argv[2], sys.argv[3] == "thread"
grams = {"grams": {} if sys.argv[4:] == ["grams"] else None}     # the default has them; or not
reads, real = [], tree.ArchiveTree._member
def counting(self, rel, handle, *a):
    reads.append(rel)
    return real(self, rel, handle, *a)
tree.ArchiveTree._member = counting
stop = threading.Event()
other = threading.Thread(target=stop.wait) if thread else None
if other is not None:
    other.start()                            # a second thread: workers from a forkserver
with Corpus(archive) as corpus:
    list(corpus)                             # (the spool complete, as when the command opens it)
    before = len(reads)
    with corpus.located() as located:
        dated = [m.date for m in corpus]
    with ProcessEngine(jobs=2, chunk=4) as engine:
        f = build_filter(**{**BEST, **grams})
        report = train_filter(f, [corpus], engine=engine)
stop.set()
f.save(out)
print(json.dumps({"listed": before, "read": len(reads) - before, "located": located, "n": report.n_train,
                  "dated": sum(d is not None for d in dated)}))
"""


@pytest.mark.parametrize("grams", [False, True])
@pytest.mark.parametrize("thread", [False, True])
def test_training_on_workers_lists_archive_members_and_the_workers_read_them(tmp_path, thread, grams):
    # spamkit train with worker processes: the members of an archive the forked workers inherited
    # are listed here, not read (Corpus.located), and read by the workers where they lie; with
    # workers from a forkserver (a thread was running) they are read here and travel. The filter
    # is the one a single process makes either way. With byte 4-grams the workers make their
    # slots (ProcessEngine.makes_gram_rows): the messages are still not read here.
    seen = _on_a_sample_archive(_LOCATED_SCRIPT, tmp_path, thread, grams)
    assert seen["located"] and seen["listed"] == seen["n"] == 240
    assert seen["read"] == (240 if thread else 0)                   # forked workers read every member
    assert seen["dated"] == 0                                       # listed: no date from the content


def _on_a_sample_archive(script: str, tmp_path, thread: bool, grams: bool = True) -> dict:
    """Run ``script`` (ARCHIVE OUT thread|-) in a fresh interpreter -- pytest-timeout's thread rules
    out fork here -- on the sample corpus as a .tar.gz of plain members (read by offset); its filter
    OUT must be the one a single process makes (the default filter, or with ``grams`` False the
    default without byte 4-grams). Returns what the script printed last (JSON)."""
    import subprocess
    import sys
    import tarfile
    archive = tmp_path / "sample.tar.gz"
    with tarfile.open(archive, "w:gz", format=tarfile.USTAR_FORMAT) as tf:
        tf.add(SAMPLE, arcname="sample")
    out = tmp_path / "workers.spamkit"
    done = subprocess.run([sys.executable, "-c", script, str(archive), str(out), "thread" if thread else "-",
                           *(["grams"] if grams else [])], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    with Corpus(archive) as corpus:
        build_filter(**{**BEST, "grams": {} if grams else None}).fit(list(corpus)).save(tmp_path / "local.spamkit")
    same = {}
    for path in (out, tmp_path / "local.spamkit"):
        with zipfile.ZipFile(path) as z:
            same[path] = {name: z.read(name) for name in z.namelist() if name != "manifest.json"}
    assert same[out] == same[tmp_path / "local.spamkit"]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_message_read_again_elsewhere_must_come_back_whole(tmp_path):
    from spamkit.corpus import archives
    path = tmp_path / "f"
    path.write_bytes(b"abcdef")
    with open(path, "rb") as fh:
        assert archives.read_where((fh.fileno(), 2, 3)) == b"cde"
        with pytest.raises(OSError, match="short"):
            archives.read_where((fh.fileno(), 4, 10))


_AHEAD_SCRIPT = """
import json, sys
from spamkit.jobs import engines
from spamkit.corpus import Corpus, iter_corpora
from spamkit.text import make_analyzer
archive, out, stream = sys.argv[1], sys.argv[2], sys.argv[3]
engines.AHEAD_MESSAGES = 50                  # 50 of the sample's 240 messages ahead, the rest after
engine = engines.ProcessEngine(jobs=2, chunk=7)
corpora = [Corpus(archive)]
heavy_before = sorted(m for m in ("numpy", "scipy") if m in sys.modules)
from spamkit.common.names import GRAM_BITS, GRAM_BYTES
engine.count_ahead(make_analyzer("mail"), corpora, (GRAM_BYTES, GRAM_BITS))   # as spamkit train does for the default
ahead = [len(chunk) for chunk, _ in engine._ahead.chunks]
pool = next(iter(engine._pools.values()))
worker_heavy = pool.submit(eval, "sorted(m for m in ('numpy', 'scipy') if m in __import__('sys').modules)").result()
resumed = []
real = engine._resume_ahead
def resume(key, source, wire):
    session, pending = real(key, source, wire)
    resumed.append(None if pending is None else len(pending))
    return session, pending
engine._resume_ahead = resume
from spamkit import BEST, build_filter
items = list(iter_corpora(corpora))
if stream == "one message fewer":
    items = items[:12] + items[13:]                # in the second chunk ahead
elif stream == "another order":
    items = items[::-1]
remote = build_filter(**BEST)
with engine:
    engine.fit(remote, iter(items))
corpora[0].close()
remote.save(out)
print(json.dumps({"heavy_before": heavy_before, "worker_heavy": worker_heavy, "ahead": ahead, "resumed": resumed,
                  "ids": [m.id for m in items]}))
"""


@pytest.mark.parametrize("stream", ["the same", "one message fewer", "another order"])
def test_workers_begin_before_numpy_is_imported_and_the_filter_is_the_same(tmp_path, stream):
    """``spamkit train``'s workers start on the first messages of an archive before the command
    imports NumPy and SciPy (ProcessEngine.count_ahead): forked from a process without them,
    they never load them. A training over the same messages takes their chunks first; one over
    other messages (a held-out part taken out, another order) drops them; either way the filter
    is the one a single process makes. In a subprocess: a fresh interpreter, and pytest-timeout's
    thread rules out fork here."""
    import subprocess
    import sys
    import tarfile
    archive = tmp_path / "sample.tar.gz"
    with tarfile.open(archive, "w:gz", format=tarfile.USTAR_FORMAT) as tf:   # plain members, read by offset
        tf.add(SAMPLE, arcname="sample")
    out = tmp_path / "ahead.spamkit"
    done = subprocess.run([sys.executable, "-c", _AHEAD_SCRIPT, str(archive), str(out), stream],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    # (the workers make the byte 4-grams' slots: without the compiled loops, by NumPy's definition)
    assert seen["heavy_before"] == [] and seen["worker_heavy"] == ([] if gramloops() is not None else ["numpy"])
    assert 50 <= sum(seen["ahead"]) < 240 and max(seen["ahead"]) <= 7       # chunks ahead, then the rest
    assert seen["resumed"] == [len(seen["ahead"]) if stream == "the same" else None]
    with Corpus(archive) as corpus:
        by_id = {m.id: m for m in corpus}
        build_filter(**BEST).fit([by_id[i] for i in seen["ids"]]).save(tmp_path / "local.spamkit")
    same = {}
    for path in (out, tmp_path / "local.spamkit"):
        with zipfile.ZipFile(path) as z:
            same[path] = {name: z.read(name) for name in z.namelist() if name != "manifest.json"}
    assert same[out] == same[tmp_path / "local.spamkit"]


_TRAIN_SCRIPT = """
import json, os, sys, threading
from spamkit.jobs import engines
from spamkit.corpus import tree
archive, out, log = sys.argv[1], sys.argv[2], sys.argv[3]
real_start, real_wire, real_open = engines.start_worker, engines.on_the_wire, tree.ArchiveTree.__init__
events, sent = [], []
def start(*args):                            # in each worker, as it starts
    with open(log, "a") as fh:
        fh.write(json.dumps({"numpy": "numpy" in sys.modules}) + "\\n")
    real_start(*args)
engines.start_worker = start
def wire(shared=frozenset()):
    events.append(("workers", sorted(shared)))
    inner = real_wire(shared)
    return lambda item: sent.append(isinstance(inner(item)[0], tuple)) or inner(item)
engines.on_the_wire = wire
def opening(self, path):
    events.append(("open", threading.active_count()))
    real_open(self, path)
tree.ArchiveTree.__init__ = opening
from spamkit.__main__ import main
try:
    main(["train", archive, "-o", out, "--jobs", "2"])
except SystemExit as stop:
    assert not stop.code, stop.code
extras = sorted(m for m in ("numpy.f2py", "numpy.testing", "numpy.polynomial", "unittest") if m in sys.modules)
print(json.dumps({"events": events, "by_where": sum(sent), "sent": len(sent), "extras": extras}))
"""


def test_train_starts_its_workers_before_it_opens_the_archive_and_imports_numpy(tmp_path):
    """``spamkit train --jobs 2``: the workers are forked first (no NumPy in them), holding the spool
    of the archive that decompresses meanwhile; the archive is opened while NumPy is imported in
    the background (a second thread then); every message reaches a worker by where it lies; the
    filter is the one ``--jobs 1`` writes."""
    import subprocess
    import sys
    import tarfile
    archive = tmp_path / "sample.tar.gz"
    with tarfile.open(archive, "w:gz", format=tarfile.USTAR_FORMAT) as tf:
        tf.add(SAMPLE, arcname="sample")
    log = tmp_path / "workers.log"
    done = subprocess.run([sys.executable, "-c", _TRAIN_SCRIPT, str(archive), str(tmp_path / "two.spamkit"), str(log)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    kinds = [kind for kind, _ in seen["events"]]
    assert kinds[:2] == ["workers", "open"] and len(seen["events"][0][1]) == 1    # the archive's spool, shared
    assert seen["events"][1][1] >= 2                                  # opened beside the importing thread
    assert [json.loads(line) for line in log.read_text().splitlines()] == [{"numpy": False}] * 2
    assert seen["by_where"] == seen["sent"] >= 240
    assert seen["extras"] == []                       # NumPy's unused submodules never loaded
    one = CliRunner().invoke(cli, ["train", str(archive), "-o", str(tmp_path / "one.spamkit"), "--jobs", "1"])
    assert one.exit_code == 0, one.output
    assert filter_members(tmp_path / "one.spamkit") == filter_members(tmp_path / "two.spamkit")


def filter_members(path) -> dict:
    """A filter file's members but its manifest (which records the command and the time)."""
    with zipfile.ZipFile(path) as z:
        return {member: z.read(member) for member in z.namelist() if member != "manifest.json"}


_LEAN_IMPORT_SCRIPT = """
import json, sys
import numpy
before_all, before_dir = list(numpy.__all__), dir(numpy)
from spamkit.cli.params import import_without_numpy_extras
sparse = import_without_numpy_extras("scipy.sparse")
again = import_without_numpy_extras("scipy.sparse")           # loaded already: a plain import
loaded = sorted(m for m in ("numpy.f2py", "numpy.testing", "numpy.polynomial", "unittest") if m in sys.modules)
total = float(sparse.csr_matrix(numpy.eye(3)).sum())
import numpy.polynomial                                       # still there when asked for
print(json.dumps({"loaded": loaded, "same": numpy.__all__ == before_all and dir(numpy) == before_dir,
                  "total": total, "again": again is sparse, "asked": hasattr(numpy, "polynomial")}))
"""


def test_scipy_is_imported_without_numpys_unused_submodules():
    """SciPy's array-API layer looks every public NumPy name up, which loads NumPy's test, f2py and
    masked-array submodules; import_without_numpy_extras hides their names for that import only:
    they stay unloaded, SciPy works, NumPy's public names are put back, and NumPy still loads one
    when asked. In a fresh interpreter (this one loaded them long ago)."""
    import subprocess
    import sys
    done = subprocess.run([sys.executable, "-c", _LEAN_IMPORT_SCRIPT], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen == {"loaded": [], "same": True, "total": 3.0, "again": True, "asked": True}


_EARLY_SCRIPT = """
import json, sys
from spamkit.corpus import tree
seen = []
real = tree.Spool.__init__
def spool(self, path, opener=None):
    seen.append({"compressed": opener is not None, "click": "click" in sys.modules, "cli": "spamkit.cli" in sys.modules})
    real(self, path, opener)
tree.Spool.__init__ = spool
from spamkit.__main__ import main
try:
    status = main(sys.argv[1:])
except SystemExit as stop:
    status = stop.code
print(json.dumps({"status": status, "spools": seen}))
"""


def test_train_starts_decompressing_its_archives_before_it_imports_the_command_line(tmp_path):
    """``spamkit train ARCHIVE.tar.gz``: the archive starts decompressing before click and the
    command line are imported (spamkit.__main__.archives_early), once (the command's own
    archives_ahead finds it started), and the filter is the one written without it."""
    import subprocess
    import sys
    import tarfile
    archive = tmp_path / "sample.tar.gz"
    with tarfile.open(archive, "w:gz", format=tarfile.USTAR_FORMAT) as tf:
        tf.add(SAMPLE, arcname="sample")
    done = subprocess.run([sys.executable, "-c", _EARLY_SCRIPT, "train", str(archive), "-o", str(tmp_path / "early.spamkit"),
                           "--jobs", "1"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen == {"status": 0, "spools": [{"compressed": True, "click": False, "cli": False}]}
    late = CliRunner().invoke(cli, ["train", str(archive), "-o", str(tmp_path / "late.spamkit"), "--jobs", "1"])
    assert late.exit_code == 0, late.output
    assert filter_members(tmp_path / "early.spamkit") == filter_members(tmp_path / "late.spamkit")
    from spamkit.__main__ import archive_arguments
    assert archive_arguments(["evaluate", "m.spamkit", str(archive)]) == [str(archive)]
    assert archive_arguments(["online", str(archive)]) == [] == archive_arguments(["train", str(archive), "-h"])


def test_scoring_in_this_process_a_block_of_rows_at_a_time_changes_nothing(monkeypatch):
    """``spamkit evaluate`` scores ROWS_AT_A_TIME messages at a time and keeps only the scores
    (holding every token list, then the matrix, grew with the corpus: 191 MB for trec07p-dev in
    one process); a message's scores depend on it alone, so blocks of 7 give every score and
    familiarity of one block, and the rows read again for the report are the messages' rows."""
    from spamkit.jobs import rows as module
    f = build_filter(**BEST)
    with Corpus(SAMPLE) as corpus:
        f.fit(corpus)
    results = {}
    for rows in (7, 10 ** 6):
        monkeypatch.setattr(module, "ROWS_AT_A_TIME", rows)
        with Corpus(SAMPLE) as corpus:
            labels, ids, log_proba, rows_of, familiarity = module.score_locally(f, [corpus])
        results[rows] = (labels, ids, log_proba, familiarity, rows_of(range(len(ids))))
    blocked, whole = results[7], results[10 ** 6]
    assert len(blocked[0]) > 7 * 3                      # several blocks, and a last one part full
    assert blocked[:2] == whole[:2]
    assert np.array_equal(blocked[2], whole[2]) and np.array_equal(blocked[3], whole[3])
    assert (blocked[4] != whole[4]).nnz == 0 and np.array_equal(blocked[4].indices, whole[4].indices)
    with Corpus(SAMPLE) as corpus:
        direct = f.vectorizer.transform([f.tokens(m) for m in corpus])
    assert (blocked[4] != direct).nnz == 0
    some = [5, 0, len(ids) - 1]
    with Corpus(SAMPLE) as corpus:
        _, _, _, rows_of, _ = module.score_locally(f, [corpus])
        assert (rows_of(some) != direct[some]).nnz == 0
    engine = ProcessEngine(2)
    try:
        with Corpus(SAMPLE) as corpus:
            by_workers = engine.score(f, [corpus])
    finally:
        engine.close()
    assert by_workers[:2] == whole[:2]
    assert np.array_equal(by_workers[2], whole[2]) and np.array_equal(by_workers[4], whole[3])
