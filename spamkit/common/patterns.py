"""Regular expressions compiled when first used.

A module-level ``re.compile`` runs in every process that imports the module. The ~40 patterns
of the parser, the tokenizer and the filter file's checks took ~10 ms of every one-shot
``spamkit filter MODEL -`` on the project's machine, and with the compiled loops
(``spamkit.common.speedups``) most of them are never used on a message: the HTML scanner, the
word scanner and the MIME header splitter are C. :class:`LazyPattern` is written where the
pattern was (``NAME = LazyPattern(r"...")``) and is used as the pattern is: its first use of a
method or attribute compiles it (through :func:`re.compile` and its cache) and keeps that
bound method or attribute on the instance, so every later use is one instance-dictionary
lookup, what an attribute of a compiled pattern costs.

>>> WORD = LazyPattern(r"[a-z]+", re.IGNORECASE)
>>> "findall" in vars(WORD)
False
>>> WORD.findall("Two words"), "findall" in vars(WORD), WORD.pattern
(['Two', 'words'], True, '[a-z]+')
>>> WORD.compiled() is re.compile(r"[a-z]+", re.IGNORECASE)
True
"""

from __future__ import annotations

import re


class LazyPattern:
    """A regular expression compiled the first time one of its attributes is used."""

    def __init__(self, pattern: str | bytes, flags: int = 0):
        self.source = (pattern, flags)

    def compiled(self) -> re.Pattern:
        """The compiled pattern (for what needs the object itself: ``re.sub(p.compiled(), ...)``)."""
        return re.compile(*self.source)

    def __getattr__(self, name: str):
        # called only for a name not yet kept on the instance: compile, keep, return
        if name.startswith("__") or name == "source":      # (copying, pickling: not a pattern's)
            raise AttributeError(name)
        value = getattr(self.compiled(), name)
        self.__dict__[name] = value
        return value

    def __repr__(self) -> str:
        return f"LazyPattern({self.source[0]!r})"
