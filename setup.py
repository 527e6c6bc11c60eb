"""The one compiled part of spamkit, optional: without a C compiler the package installs
and runs on its pure-Python equivalents (same results, slower; see docs/design.md)."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("spamkit.speedups", ["spamkit/speedups.c"], optional=True,
                             extra_compile_args=["-O2"])])
