"""The compiled inner loops, or None: what the hot paths ask for.

``pip install`` builds ``spamkit.common.speedups`` (``spamkit/common/speedups.c`` and one source per area: setup.py's
``SPEEDUPS``), ``spamkit.features.gramloops``
(``spamkit/features/gramloops.c``, the byte 4-gram model's loops) and ``spamkit.scoring.chisquare``
(``spamkit/scoring/chisquare.c``, the chi-square tails of the scoring core) where a C compiler is present; without
it, or with ``SPAMKIT_PURE_PYTHON=1`` in the environment (to measure or rule out the
extensions), every caller runs its pure-Python definition instead, with the same results.
"""

from __future__ import annotations

import importlib
import os


def _extension(name: str):
    if os.environ.get("SPAMKIT_PURE_PYTHON", "") not in ("", "0"):
        return None
    try:
        return importlib.import_module(f"spamkit.{name}")
    except ImportError:
        return None


def speedups():
    """The ``spamkit.common.speedups`` module, or None."""
    return _extension("common.speedups")


def chisquare():
    """The ``spamkit.scoring.chisquare`` module (Fisher combining's chi-square tails), or None."""
    return _extension("scoring.chisquare")


def gramloops():
    """The ``spamkit.features.gramloops`` module (the byte 4-gram model's loops), or None."""
    return _extension("features.gramloops")
