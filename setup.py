"""The one compiled part of spamkit, optional: without a C compiler the package installs
and runs on its pure-Python equivalents (same results, slower; see docs/design.md). No fused multiply-add
(``-ffp-contract=off``): the compiled sums round as their NumPy definitions do, step by step."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("spamkit.speedups", ["spamkit/speedups.c"], optional=True,
                             extra_compile_args=["-O2", "-ffp-contract=off"])])
