"""The compiled inner loops (``spamkit/speedups.c``), or None: what the hot paths ask for.

``pip install`` builds ``spamkit.speedups`` where a C compiler is present; without it, or with
``SPAMKIT_PURE_PYTHON=1`` in the environment (to measure or rule out the extension), every
caller runs its pure-Python definition instead, with the same results.
"""

from __future__ import annotations

import os


def speedups():
    """The ``spamkit.speedups`` module, or None."""
    if os.environ.get("SPAMKIT_PURE_PYTHON", "") not in ("", "0"):
        return None
    try:
        from . import speedups as module
    except ImportError:
        return None
    return module
