"""One message through a filter file with the standard library alone: pipe mode's fast path.

A mail delivery agent starts ``spamkit filter MODEL -`` once per message, so what matters
there is start-up: importing NumPy costs ~100 ms, SciPy's sparse matrices another ~130 ms and
scikit-learn about a second, while scoring one message needs a few hundred table lookups.
:class:`LeanFilter` reads the filter file and scores a message with ``math``, ``array`` and
``zipfile`` only, for the filters that are counting tables over a vocabulary -- the default
stack (:class:`~spamkit.models.stack.FisherNBStack`) and Robinson/Fisher
(:class:`~spamkit.models.robinson.RobinsonFisher`) -- with the same decision layer as
:class:`~spamkit.filterfile.spamfilter.SpamFilter` (calibration, prior correction, saved threshold,
costs with an unsure decision, the familiarity floor) -- and the accurate configuration,
that stack with a byte-context model as a side input (``spamkit train --context-model``;
:mod:`spamkit.mail.leansides` scores the side inputs), whose score of one message is the
compiled loop ``spamkit.common.speedups.context_ratios`` over the counts of that message's slots alone, copied from the file's packed table
(``context_index``, ``context_gather``; no NumPy, and never the 128 MB table). Any other
filter (:func:`lean_filter` returns None) takes the full path, which gives the same answer.

The formulas are the scoring core's (:mod:`spamkit.scoring`, standard library only), the
same definitions the models' array forms are tested against; this module finds a message's
columns and the file's numbers and hands them to it. ``tests/test_lean.py`` holds the two
routes together: on messages of every shared mail corpus and for every configuration this
module accepts, P(spam) agrees with :meth:`SpamFilter.verdict` to 1e-9 and the verdicts are
the same.

The file is checked as :func:`spamkit.filterfile.persist.load_filter` checks it (it is hostile data):
the manifest's structure, each member's size against what the manifest implies and its
SHA-256, array types and shapes, counts finite and non-negative.
"""

from __future__ import annotations

import array
import bisect
import math
import os
import sys

from ..decide.familiar import discount, discounted_row, guard_settings
from ..decide.rules import STREAM_CUT_AFTER, spam_cut_layer
from ..common.errors import ConfigError, ModelFormatError
from ..filterfile.manifest import (check_manifest, dtype_of, format_error, judged_shapes_problem, manifest_sha256,
                                  open_zip, read_lines, read_member, term_hash, whole_file)
from ..filterfile.budget import expected_sizes
from ..parse.message import parse_message
from .leansides import LeanContext, LeanGrams
from .leanarrays import DTYPES, check_values, finite_sum, npy_bytes, npy_uint32, npy_values
from ..common.names import FISHER_MODEL, FISHER_MAX_CLUES, FISHER_MIN_DEV, FISHER_PRIOR, FISHER_STRENGTH, STACK_MODEL
from ..scoring import (LOGISTIC_LIMIT, PRIOR_WARMUP, clip, combined_log_odds, finite_log_odds,
                      fisher_clue_sums, fisher_log_probabilities, isotonic_log_proba, length_input, nb_log_odds,
                      normalised, platt_log_proba, two_class_log_proba)

TYPE_CHECKING = False                  # typing's names for the checker only (pipe mode's start-up)
if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

#: the model types scored here (file names, as :func:`spamkit.filterfile.persist.model_type_of` writes them)
LEAN_MODELS = (STACK_MODEL, FISHER_MODEL)


class LeanFilter:
    """A two-class counting filter read from its file, scoring one message at a time.

    :func:`lean_filter` makes one (or says this file needs the full path); :meth:`verdict`
    is :meth:`spamkit.filterfile.spamfilter.SpamFilter.verdict`.
    """

    #: the hex SHA-256 of the filter's manifest, its id (:func:`lean_filter`'s ``with_sha256``), or None
    sha256: str | None = None

    def __init__(self, path: Path, manifest: dict, arrays: dict, terms: list[str] | None, analyzer):
        model = manifest["model"]
        self.path = path
        self.kind = model["type"]
        self.params = model["params"]
        self.classes = [str(c) for c in model["classes"]]
        self.spam = self.classes.index("spam")
        self.analyzer = analyzer
        self.n_features = d = model["n_features"]
        #: the vocabulary as a dict (without a hash index), else the index's (sorted keys, columns)
        self.index = dict(zip(terms, range(d))) if terms is not None else None
        self.hash_index = None if terms is not None else (arrays["filter.term_hash"],
                                                          arrays["filter.term_hash_column"])
        shapes = {"model.class_count_": [2], "model.feature_count_": [2, d]}
        if self.kind == STACK_MODEL:
            with_logistic = bool(self.params.get("logistic"))
            self.length_aware = bool(self.params.get("length_aware", False))
            self.side_inputs = int(self.params.get("side_inputs", 0) or 0)
            shapes["model.combiner_"] = [(4 if with_logistic else 3) + 2 * self.length_aware + self.side_inputs]
            if self.length_aware:
                shapes["model.length_range_"] = [2]
            if with_logistic:
                shapes.update({"model.logistic_coef_": [d], "model.logistic_intercept_": [1]})
        for name, shape in shapes.items():
            if name not in arrays:
                format_error(path, f"array {name} is missing")
            if manifest["arrays"][name]["shape"] != shape:
                format_error(path, f"array {name} has shape {manifest['arrays'][name]['shape']}; "
                             f"{self.kind} with {d} features makes it {shape}")
        self.class_count = arrays["model.class_count_"]
        fc = arrays["model.feature_count_"]
        self.counts = (fc[:d], fc[d:])                         # rows of class 0 and class 1
        # integer-valued counts: these sums are exact whatever the order (every array's values
        # were checked as the full route checks them: lean_filter, check_values)
        self.totals = tuple(finite_sum(row, path, "model.feature_count_") for row in self.counts)
        if self.kind == STACK_MODEL:
            combiner = list(arrays["model.combiner_"])
            self.coef, self.intercept = combiner[:-1], combiner[-1]
            if self.length_aware:
                self.length_range = tuple(arrays["model.length_range_"])
                if not self.length_range[0] <= self.length_range[1]:
                    format_error(path, "array model.length_range_ is not two numbers, the smaller first")
            self.logistic = None
            if with_logistic:
                self.logistic = (arrays["model.logistic_coef_"], arrays["model.logistic_intercept_"][0])
        extra = manifest.get("extra", {})
        self.context = self.grams = None
        if self.kind == STACK_MODEL and self.side_inputs:
            if "context" in extra:
                self.context = LeanContext(path, extra.get("context"), arrays)
            if "grams" in extra:
                self.grams = LeanGrams(path, extra["grams"], arrays)
        center = self.params.get("combiner_center") if self.kind == STACK_MODEL else None
        #: a stack with a combiner prior is less sure until it has learned PRIOR_WARMUP messages
        self.warmup = min(1.0, math.fsum(self.class_count) / PRIOR_WARMUP) if center is not None else 1.0
        self.calibration = extra.get("calibration")
        threshold = extra.get("threshold")
        self.threshold = float(threshold["p_spam"]) if threshold else None
        familiar = extra.get("familiarity")
        try:
            self.guard = guard_settings(familiar) if familiar else None
        except (KeyError, TypeError, ValueError) as exc:
            format_error(path, f"damaged familiarity guard ({exc})")
        self.costs: tuple[list[list[float]], list[str]] | None = None
        decision = extra.get("decision")
        if decision:
            self.set_costs(decision["costs"], decision["classes"], decision["decisions"])
        self.spam_cut = self._learned_cut(path, manifest, extra.get("spam_cut"), decision)
        self.prior_shift = 0.0

    def _learned_cut(self, path, manifest: dict, cut, decision) -> float | None:
        """The spam cut ``spamkit learn --all-mail`` chose, checked as the full route checks it
        (``SpamFilter.keep_learned_cut``: the number of judged messages the file holds, a decision
        layer it applies to, not below the costs' own cut); None if the file has none."""
        if not cut:
            return None
        try:
            p_spam, judged = float(cut["p_spam"]), int(cut["judged"])
        except (KeyError, TypeError, ValueError):
            format_error(path, "damaged learned spam cut")
        layer = None if self.threshold is not None or not decision else spam_cut_layer(
            decision["costs"], decision["classes"], decision["decisions"])
        held = manifest["arrays"].get("filter.judged_p_spam", {}).get("shape")
        if held != [judged] or judged < STREAM_CUT_AFTER or layer is None or not layer[1] <= p_spam <= 1.0:
            format_error(path, f"damaged learned spam cut (P(spam) {p_spam:g} after {judged} judged messages does "
                               "not fit the file's decision layer and judged messages)")
        return p_spam

    # ------------------------------------------------------------- settings (as SpamFilter's)

    def set_costs(self, costs, classes, decisions) -> None:
        """Decide by minimum expected cost: ``costs[d][c]`` for decision d and true class c."""
        classes = [str(c) for c in classes]
        if sorted(classes) != sorted(self.classes) or len(classes) != len(self.classes):
            raise ModelFormatError(f"{self.path}: the costs name classes {classes}, the model has {self.classes}")
        order = [classes.index(c) for c in self.classes]
        self.costs = ([[float(row[j]) for j in order] for row in costs], [str(d) for d in decisions])

    def set_spam_rate(self, rate: float | None) -> None:
        """The prior correction of :meth:`SpamFilter.set_spam_rate` (log-odds move by
        logit(rate) - logit(training rate))."""
        if rate is None:
            self.prior_shift = 0.0
            return
        if self.kind == FISHER_MODEL and self.calibration is None:
            raise ConfigError("an uncalibrated fisher filter ignores class priors, so its prior cannot be "
                              "corrected; train it with --calibrate platt (or use fisher-nb)")
        train = self.class_count[self.spam] / math.fsum(self.class_count)
        for name, r in (("training", train), ("deployment", rate)):
            if not 0.0 < r < 1.0:
                raise ConfigError(f"the {name} spam rate must be strictly between 0 and 1, got {r}")
        self.prior_shift = math.log(rate / (1 - rate)) - math.log(train / (1 - train))

    # ------------------------------------------------------------- scoring

    def columns(self, tokens: list[str]) -> list[int]:
        """The distinct known columns of a token list, in column order."""
        if self.index is not None:
            index = self.index
            cols = sorted({index[t] for t in tokens if t in index})
        else:
            assert self.hash_index is not None       # a hashed filter: no vocabulary, an index
            keys, columns = self.hash_index
            found = set()
            for t in set(tokens):
                h = term_hash(t)
                i = bisect.bisect_left(keys, h)
                if i < len(keys) and keys[i] == h:
                    found.add(columns[i])
            cols = sorted(found)
            if cols and not (0 <= cols[0] and cols[-1] < self.n_features):
                format_error(self.path, "the term index (filter.term_hash_column) points outside the vocabulary")
        return cols

    def fisher(self, cols: list[int]) -> tuple[float, float]:
        """(log P(c0), log P(c1)) of Robinson/Fisher (``RobinsonFisher.joint_log_likelihood``)."""
        p = self.params
        s, x = float(p.get("strength", FISHER_STRENGTH)), float(p.get("prior", FISHER_PRIOR))
        min_dev, max_clues = float(p.get("min_dev", FISHER_MIN_DEV)), int(p.get("max_clues", FISHER_MAX_CLUES))
        (ham_counts, spam_counts), (n_ham, n_spam) = self.counts, self.class_count
        n, log_f, log_1mf = fisher_clue_sums(cols, ham_counts, spam_counts, n_ham, n_spam, s, x, min_dev, max_clues)
        return fisher_log_probabilities(log_f, log_1mf, n)

    def nb_log_odds(self, cols: list[int]) -> float:
        """Multinomial NB on presence (``FisherNBStack._nb_log_odds``)."""
        return nb_log_odds(cols, *self.counts, self.class_count, self.totals, float(self.params.get("alpha", 1.0)),
                           self.n_features)

    def log_proba(self, cols: list[int], side=None) -> tuple[float, float]:
        """log P(c0 | x), log P(c1 | x) of the model (``predict_log_proba``); ``side``: the
        side models' scores (the context model's, then the 4-gram model's), for a stack with
        those side inputs: a number for one, a tuple for several."""
        log_c0, log_c1 = self.fisher(cols)
        if self.kind == "fisher":
            return normalised(log_c0, log_c1)
        components = [finite_log_odds(log_c1 - log_c0), self.nb_log_odds(cols)]
        if self.logistic is not None:
            coef, intercept = self.logistic
            components.append(clip(math.fsum(coef[j] for j in cols) + intercept, LOGISTIC_LIMIT))
        length = length_input(len(cols), self.length_range) if self.length_aware else None   # distinct columns
        side = side if isinstance(side, tuple) else () if side is None else (side,)
        z = combined_log_odds(components, self.coef, self.intercept, self.params.get("squash", "clip"), length, side,
                              self.warmup)
        return normalised(*two_class_log_proba(z))

    def adjusted(self, lp: tuple[float, float]) -> tuple[float, float]:
        """After the calibration and the prior correction (``SpamFilter.adjust_log_proba``)."""
        cal = self.calibration
        if cal is not None:
            score = lp[1] - lp[0]
            if cal["method"] == "platt":
                lp = platt_log_proba(score, float(cal["a"]), float(cal["b"]))
            else:
                lp = isotonic_log_proba(score, cal["x"], cal["p"], int(cal["n"]))
        if self.prior_shift:
            s = self.spam
            z = lp[s] - lp[1 - s] + self.prior_shift
            lp = two_class_log_proba(z) if s == 1 else two_class_log_proba(-z)
        return lp

    def decide(self, proba: tuple[float, float], familiarity: float) -> str:
        """``SpamFilter.decide`` for one message (the guard sees only this message: no stream)."""
        if self.threshold is not None:
            return self.classes[self.spam] if proba[self.spam] > self.threshold else self.classes[1 - self.spam]
        if self.costs is None:
            return self.classes[0] if proba[0] >= proba[1] else self.classes[1]
        decision = self._cheapest(proba)
        if self.guard is not None and "unsure" in self.costs[1] and decision == "spam":
            g = self.guard
            extra = discount(familiarity, g["floor"], g["typical"], g["margin"])
            if extra is None:
                return "unsure"
            if extra and self._cheapest(discounted_row(proba, self.spam, extra)) != "spam":
                return "unsure"
        if decision == "spam" and self.spam_cut is not None and proba[self.spam] <= self.spam_cut:
            return "unsure"                          # the cut learned from all the mail
        return decision

    def _cheapest(self, proba: Sequence[float]) -> str:
        """The decision of least expected cost (``CostMatrix.decide_row``)."""
        assert self.costs is not None                # decide() asks only a filter with costs
        rows, decisions = self.costs
        expected = [proba[0] * row[0] + proba[1] * row[1] for row in rows]
        return decisions[expected.index(min(expected))]

    def spam_threshold(self) -> float:
        """The P(spam) above which :meth:`decide` says spam (``SpamFilter.spam_threshold``)."""
        if self.threshold is not None:
            return float(self.threshold)
        low, high = 0.0, 1.0
        for _ in range(50):
            mid = (low + high) / 2
            proba = [0.0, 0.0]
            proba[self.spam], proba[1 - self.spam] = mid, 1 - mid
            if self.decide((proba[0], proba[1]), 1.0) == "spam":
                high = mid
            else:
                low = mid
        return high

    def verdict(self, raw: bytes) -> tuple[str, float]:
        """``(verdict, P(spam))`` of one raw message: "spam", "ham" or "unsure"."""
        msg = parse_message(raw)
        tokens = self.analyzer(msg)
        cols = self.columns(tokens)
        distinct = len(set(tokens))
        familiarity = min(len(cols) / distinct, 1.0) if distinct else 1.0
        # the side models read the bytes parsed (without spamkit's own tags: message.parsed_bytes)
        side = tuple(model.score(msg.raw) for model in (self.context, self.grams) if model is not None) or None
        lp = self.adjusted(self.log_proba(cols, side))
        proba = (math.exp(lp[0]), math.exp(lp[1]))
        decision = self.decide(proba, familiarity)
        label = decision if decision in ("spam", "unsure") else "ham"
        return label, proba[self.spam]


#: the arrays of the file this module reads (the rest serve learning and explaining)
_ARRAYS = ("model.class_count_", "model.feature_count_", "model.combiner_", "model.logistic_coef_",
           "model.logistic_intercept_", "model.length_range_")
#: the hash index of the vocabulary (see :func:`term_hash`), read instead of ``terms.txt`` when present
_INDEX = {"filter.term_hash": "uint64", "filter.term_hash_column": "int64"}


#: the context model's arrays (``ByteContextModel.state_arrays``, saved among the filter's arrays),
#: and its table: packed, or dense as older files hold it (both are read)
_CONTEXT = {"filter.context_class_count": "float64", "filter.context_symbol_count": "float64"}
_CONTEXT_TABLE = {"filter.context_packed": "uint8", "filter.context_table": "uint32"}


#: arrays of other types that a learned filter carries and this module does not use (the messages
#: ``spamkit learn`` added, the labels of those it judged): read, checksummed and their shapes
#: checked as the full route checks them (spamkit.filterfile.carried), so that both routes accept
#: the same files
_CARRIED = {"filter.learned_keys": "uint8", "filter.learned_labels": "<U", "filter.judged_spam": "uint8"}


def _carried(name: str, meta: dict) -> bool:
    return name in _CARRIED and str(meta["dtype"]).startswith(_CARRIED[name])


def _check_carried(path, described: dict) -> None:
    """The shape checks the full route makes of the learned messages and the judged ones
    (:func:`spamkit.filterfile.carried.restore_carried`), from the manifest's shapes."""
    keys, labels = described.get("filter.learned_keys"), described.get("filter.learned_labels")
    if keys is not None:
        shape = keys["shape"]
        if len(shape) != 2 or shape[1] != 16 or labels is None or labels["shape"] != [shape[0]]:
            format_error(path, "damaged list of learned messages")
    judged = {name[len("filter."):]: (meta["dtype"], meta["shape"]) for name, meta in described.items()
              if name.startswith("filter.judged_")}
    problem = judged_shapes_problem(judged) if judged else None
    if problem:
        format_error(path, f"damaged list of judged messages ({problem})")


def _accepts_context(manifest: dict) -> bool:
    """Whether the side inputs this file's stack weighs (if any) are ones this module scores: a
    context model (its arrays as saved, and the compiled loop) and byte 4-grams (their float32
    weights), as many as the stack has side inputs."""
    side = manifest["model"]["params"].get("side_inputs") or 0
    extra = manifest.get("extra", {})
    has_context, has_grams = "context" in extra, "grams" in extra
    if not side and not has_context and not has_grams:
        return True
    described = manifest["arrays"]
    if side != has_context + has_grams or manifest["model"]["type"] != STACK_MODEL:
        return False
    if has_grams and not (described.get("filter.grams_weights", {}).get("dtype") == "float32"
                          and array.array("f").itemsize == 4):
        return False
    if not has_context:
        return True
    from ..common.compiled import speedups
    return (speedups() is not None
            and array.array("I").itemsize == 4 and sys.byteorder == "little"
            and all(name in described and described[name]["dtype"] == dtype for name, dtype in _CONTEXT.items())
            and any(name in described and described[name]["dtype"] == dtype for name, dtype in _CONTEXT_TABLE.items()))


def _accepts(manifest: dict) -> bool:
    """Whether this module scores the filter: a two-class counting model over a vocabulary (and
    a context model as the stack's side input where the compiled loops are built)."""
    model, vectorizer = manifest["model"], manifest["vectorizer"]
    classes = [str(c) for c in model["classes"]]
    calibration = manifest.get("extra", {}).get("calibration")
    return (model["type"] in LEAN_MODELS and len(classes) == 2 and "spam" in classes and _accepts_context(manifest)
            and manifest.get("terms") is not None and vectorizer.get("hashing") is None
            and not model.get("texts") and (calibration is None or calibration.get("method") in ("platt", "isotonic"))
            and all(dtype_of(meta["dtype"]) == ("f", 8) for name, meta in manifest["arrays"].items()
                    if name in _ARRAYS))


def lean_failed(exc: BaseException) -> None:
    """Say on standard error that the lean route failed on a message and the full route scores it
    (a bug of this module's: the two must agree; the line is what a report needs)."""
    sys.stderr.write(f"spamkit filter: the lean route failed ({type(exc).__name__}: {exc}); the full route "
                     "scores this message\n")


def lean_filter(path, trusted: bool = False, with_sha256: bool = False) -> LeanFilter | None:
    """The filter file at ``path`` as a :class:`LeanFilter`, or None when it needs the full path
    (or when the environment sets ``SPAMKIT_LEAN=0``). The file is read once, whole; with
    ``with_sha256`` the filter's ``sha256`` is that of its manifest (the id its tags carry:
    :func:`spamkit.mail.tags.model_id_of`), else None.

    Raises :class:`~spamkit.common.errors.ModelFormatError` for a damaged or hostile file, as
    :func:`spamkit.filterfile.persist.load_filter` does.
    """
    from ..text import Analyzer
    if os.environ.get("SPAMKIT_LEAN") == "0":            # the full path, for comparison or as an escape hatch
        return None
    path = os.fspath(path)                               # a str: pathlib is not imported in pipe mode
    data = whole_file(path)
    with open_zip(path, data) as z:
        manifest = check_manifest(z, path)
        if not _accepts(manifest):
            return None
        sizes = expected_sizes(manifest, path, z)
        d = manifest["model"]["n_features"]
        described = manifest["arrays"]
        indexed = all(name in described and described[name]["dtype"] == dtype and described[name]["shape"] == [d]
                      for name, dtype in _INDEX.items())
        # every array of numbers is read and its values checked by the rule the full route applies
        # (spamkit.filterfile.manifest.value_problem), those this module does not use among them: both routes
        # accept the same files; the vocabulary's hash keys only when indexed (they are not values)
        wanted = [name for name, meta in described.items()
                  if name not in _INDEX or indexed] if all(meta["dtype"] in DTYPES or name in _CONTEXT_TABLE
                                                          or _carried(name, meta) for name, meta in described.items()) else None
        if wanted is None:
            return None                                  # an array of another type: the full route reads it
        _check_carried(path, described)
        readers = {"filter.context_table": npy_uint32, "filter.context_packed": npy_bytes}
        try:
            for name in [name for name in wanted if name in _CARRIED]:
                read_member(z, path, described[name], sizes[described[name]["file"]])   # checksummed, not used
            arrays = {name: (readers[name](z, path, name, meta, sizes[meta["file"]]) if name in readers
                             else npy_values(read_member(z, path, meta, sizes[meta["file"]]), path, name, meta))
                      for name, meta in described.items() if name in wanted and name not in _CARRIED}
            for name, values in arrays.items():
                if name not in _INDEX and name not in readers:
                    check_values(values, path, name, described[name]["dtype"])
            terms = None
            if not indexed:
                terms = read_lines(z, path, manifest["terms"], sizes[manifest["terms"]["file"]])
                if len(terms) != d:
                    format_error(path, f"model has {d} features, the vocabulary {len(terms)}; the file is inconsistent")
            analyzer = Analyzer.from_config(manifest["analyzer"], trusted=trusted)
            lean = LeanFilter(path, manifest, arrays, terms, analyzer)
            lean.sha256 = manifest_sha256(z) if with_sha256 else None
        except ModelFormatError:
            raise
        except (KeyError, TypeError, ValueError, IndexError, AttributeError, EOFError, OSError,
                MemoryError, OverflowError, ConfigError) as exc:
            raise ModelFormatError(f"{path}: damaged filter file ({type(exc).__name__}: {exc})") from None
    if lean.index is not None and terms is not None and len(lean.index) != len(terms):
        format_error(path, "the vocabulary (terms.txt) lists a term twice")
    return lean
