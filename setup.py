"""The compiled parts of spamkit, optional: without a C compiler the package installs
and runs on its pure-Python equivalents (same results, slower; see docs/design.md). No fused multiply-add
(``-ffp-contract=off``): the compiled sums round as their NumPy definitions do, step by step.
Long loops over a whole training matrix run in parts on POSIX threads (``-pthread``), the same
bits as one loop."""

import os

from setuptools import Extension, setup

#: POSIX threads for the loops that run in parts (speedups.c, run_parts)
THREADS = ["-pthread"] if os.name == "posix" else []

#: the sources of spamkit.common.speedups: what they share (spamkit/common/speedups.c, speedups.h), then one
#: source per area, next to the Python it speeds up
SPEEDUPS = ["spamkit/common/speedups.c", "spamkit/parse/entities.c", "spamkit/parse/html.c", "spamkit/parse/headers.c",
            "spamkit/text/words.c", "spamkit/text/mailtokens.c", "spamkit/corpus/tar.c", "spamkit/features/columns.c",
            "spamkit/features/numbering.c", "spamkit/features/terms.c", "spamkit/models/loops.c",
            "spamkit/models/context.c", "spamkit/filterfile/values.c"]

#: no fused multiply-add, so that compiled sums round as their NumPy definitions do
FLAGS = ["-O2", "-ffp-contract=off"]

setup(ext_modules=[
    Extension("spamkit.common.speedups", SPEEDUPS, optional=True, include_dirs=["spamkit/common"], depends=["spamkit/common/speedups.h"],
              extra_compile_args=[*FLAGS, *THREADS], extra_link_args=THREADS),
    # the byte 4-gram model's features and steps (spamkit.features.bytekeys, spamkit.models.bytegrams)
    Extension("spamkit.features.gramloops", ["spamkit/features/gramloops.c"], optional=True, extra_compile_args=FLAGS),
    # the scoring core's chi-square tails (spamkit.scoring)
    Extension("spamkit.scoring.chisquare", ["spamkit/scoring/chisquare.c"], optional=True, extra_compile_args=FLAGS),
])
