"""What a trained filter carries beside its model, in its file: the costs and the decision
layer, the calibration, a chosen threshold, the familiarity guard, the messages ``spamkit
learn`` added, the hashed columns seen in training, the IMAP folders learned from, and the
side models' settings and arrays, and the messages ``spamkit learn --all-mail`` judged (with
the spam cut they teach).

Takes a :class:`~spamkit.filterfile.spamfilter.SpamFilter` and gives the manifest's ``extra``
fields and the filter's own arrays (:func:`carried_state`), and puts them back on a loaded
filter, each checked (:func:`restore_carried`: a damaged one raises a ModelFormatError naming
the file and what is damaged). The model's own arrays and the file's format are
:mod:`spamkit.filterfile.persist`.
"""

from __future__ import annotations

import numpy as np

from ..common.errors import ConfigError, ModelFormatError
from ..decide.calibration import calibration_from_dict
from ..decide.decision import CostMatrix
from ..decide.guard import FamiliarityGuard
from .manifest import judged_shapes_problem


def carried_state(f) -> tuple[dict, dict]:
    """``(extra, arrays)``: the manifest's fields and the arrays of what ``f`` carries beside its model."""
    extra = {"decision": f.costs.as_dict()} if f.costs is not None else {}
    if f.calibration is not None:
        extra["calibration"] = f.calibration.as_dict()
    if f.threshold is not None:
        extra["threshold"] = {"p_spam": float(f.threshold), **f.threshold_info}
    if f.guard is not None:
        extra["familiarity"] = f.guard.as_dict()
    if f.imap_seen:
        extra["imap_seen"] = {k: [int(v[0]), int(v[1])] for k, v in f.imap_seen.items()}
    # 16-byte digests as rows of uint8 (a bytes dtype would drop trailing zero bytes)
    keys = np.frombuffer(b"".join(sorted(f.learned)), dtype=np.uint8).reshape(-1, 16)
    labels = np.array([str(f.learned[k]) for k in sorted(f.learned)], dtype=str)
    arrays = {"learned_keys": keys, "learned_labels": labels} if f.learned else {}
    if f.seen_columns is not None:
        arrays["seen_columns"] = np.packbits(f.seen_columns)
    if f.guard is not None and f.guard_reference is not None:
        arrays["guard_familiarity"] = np.asarray(f.guard_reference, dtype=np.float64)
    if f.judged is not None:
        arrays["judged_p_spam"] = np.asarray(f.judged[0], dtype=np.float64)
        arrays["judged_spam"] = np.asarray(f.judged[1], dtype=np.uint8)
        if f.judged[2]:
            arrays["judged_rows"] = np.vstack(f.judged[2])
        if f.judged[3]:
            arrays["judged_familiarity"] = np.asarray(f.judged[3], dtype=np.float64)
        cut = f.learned_spam_cut()
        if cut is not None:            # kept so that pipe mode does not choose it again
            extra["spam_cut"] = {"p_spam": cut, "judged": len(f.judged[0])}
    if f.context is not None:
        extra["context"] = {**f.context.get_params(), "max_bytes": f.context_bytes}
        arrays.update({f"context_{k}": v for k, v in f.context.state_arrays().items()})
    if f.grams is not None:
        extra["grams"] = f.grams.get_params()
        arrays.update({f"grams_{k}": v for k, v in f.grams.state_arrays().items()})
    return extra, arrays


def restore_carried(f, path, manifest: dict, learned: dict) -> None:
    """Put on the loaded filter ``f`` what :func:`carried_state` stored (``learned``: the file's
    filter arrays), each part checked."""
    model = f.model
    if "learned_keys" in learned:
        keys = learned["learned_keys"]
        if keys.ndim != 2 or keys.shape[1] != 16 or len(keys) != len(learned.get("learned_labels", [])):
            raise ModelFormatError(f"{path}: damaged list of learned messages")
        f.learned = dict(zip((row.tobytes() for row in keys), learned["learned_labels"].tolist()))
    threshold = manifest.get("extra", {}).get("threshold")
    if threshold:
        try:
            f.threshold = float(threshold["p_spam"])
            f.threshold_info = {k: v for k, v in threshold.items() if k != "p_spam"}
        except (KeyError, TypeError, ValueError):
            raise ModelFormatError(f"{path}: damaged threshold") from None
    calibration = manifest.get("extra", {}).get("calibration")
    if calibration:
        try:
            f.calibration = calibration_from_dict(calibration)
            f.calibrate = calibration["method"]
        except (KeyError, TypeError, ValueError, ConfigError) as exc:
            raise ModelFormatError(f"{path}: damaged calibration ({exc})") from None
    if "seen_columns" in learned:
        bits = learned["seen_columns"]
        if bits.dtype != np.uint8 or bits.ndim != 1 or len(bits) != (model.n_features_in_ + 7) // 8:
            raise ModelFormatError(f"{path}: damaged list of seen columns")
        f.seen_columns = np.unpackbits(bits)[:model.n_features_in_].astype(bool)
    _restore_judged(f, path, manifest, learned)
    if "guard_familiarity" in learned:
        reference = learned["guard_familiarity"]
        if reference.dtype != np.float64 or reference.ndim != 1:
            raise ModelFormatError(f"{path}: damaged familiarities of the training messages")
        f.guard_reference = np.clip(reference, 0.0, 1.0)
    familiar = manifest.get("extra", {}).get("familiarity")
    if familiar:
        try:
            f.guard = FamiliarityGuard.from_dict(familiar)
        except (KeyError, TypeError, ValueError, ConfigError) as exc:
            raise ModelFormatError(f"{path}: damaged familiarity guard ({exc})") from None
    seen = manifest.get("extra", {}).get("imap_seen") or {}
    if not (isinstance(seen, dict) and all(isinstance(k, str) and isinstance(v, list) and len(v) == 2
                                           and all(isinstance(x, int) and x >= 0 for x in v)
                                           for k, v in seen.items())):
        raise ModelFormatError(f"{path}: damaged list of IMAP folders learned from")
    f.imap_seen = {k: list(v) for k, v in seen.items()}
    decision = manifest.get("extra", {}).get("decision")
    if decision:
        try:
            f.set_costs(CostMatrix(decision["costs"], decision["classes"], decision["decisions"]))
        except (KeyError, TypeError) as exc:
            raise ModelFormatError(f"{path}: damaged decision layer ({exc})") from None
    cut = manifest.get("extra", {}).get("spam_cut")
    if cut:
        try:
            p_spam, judged = float(cut["p_spam"]), int(cut["judged"])
        except (KeyError, TypeError, ValueError):
            raise ModelFormatError(f"{path}: damaged learned spam cut") from None
        if not f.keep_learned_cut(judged, p_spam):
            raise ModelFormatError(f"{path}: damaged learned spam cut (P(spam) {p_spam:g} after {judged} judged "
                                   "messages does not fit the file's decision layer and judged messages)")


def _restore_judged(f, path, manifest: dict, learned: dict) -> None:
    """The judged messages of ``spamkit learn --all-mail`` (their P(spam), labels, combiner rows
    and familiarities), checked for what pipe mode's lean route checks too (the arrays' types
    and lengths, :func:`judged_shapes_problem`; their values are finite as every array's)."""
    if not any(name.startswith("judged_") for name in learned):
        return
    problem = judged_shapes_problem({name: (str(a.dtype), list(a.shape)) for name, a in learned.items()})
    if problem:
        raise ModelFormatError(f"{path}: damaged list of judged messages ({problem})")
    p, y = np.clip(learned["judged_p_spam"], 0.0, 1.0), learned["judged_spam"] != 0
    rows, familiar = learned.get("judged_rows"), learned.get("judged_familiarity")
    f.judged = (p.tolist(), y.tolist(), list(rows) if rows is not None else [],
                np.clip(familiar, 0.0, 1.0).tolist() if familiar is not None else [])

