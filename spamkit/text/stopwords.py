"""Stop-word lists: the English list shipped with spamkit, or a user's file.

Never downloads anything (nltk's stop-word corpus is a separate download
that many machines do not have). The English list is
``spamkit/text/stopwords_english.txt``: function words, plus the fragments a
tokenizer leaves from contractions (``don``, ``t``, ``ll``).
"""

from __future__ import annotations

from ..common.errors import ResourceMissingError


def _parse(text: str) -> frozenset[str]:
    words = set()
    for line in text.splitlines():
        word = line.split("#", 1)[0].strip().lower()
        if word:
            words.add(word)
    return frozenset(words)


def english() -> frozenset[str]:
    """The English stop-word list shipped with spamkit.

    >>> sw = english()
    >>> "the" in sw, "free" in sw
    (True, False)
    """
    from importlib import resources     # (here: importing it costs pipe mode 4 ms it rarely needs)
    text = resources.files("spamkit.text").joinpath("stopwords_english.txt").read_text(encoding="utf-8")
    return _parse(text)


def load_stop_words(spec: str | None) -> frozenset[str]:
    """``"english"``, ``"none"``/``None``, or a path to a file of one word per line (``#`` comments).

    >>> load_stop_words("none")
    frozenset()
    """
    if spec is None or spec == "none":
        return frozenset()
    if spec == "english":
        return english()
    path = spec                              # a str, not a Path: pathlib is not imported in pipe mode
    try:
        with open(path, encoding="utf-8") as fh:
            return _parse(fh.read())
    except FileNotFoundError:
        raise ResourceMissingError(f"stop-word file not found: {path}; use --stop-words english "
                                   "for the built-in list") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ResourceMissingError(f"stop-word file {path} cannot be read: {exc}") from None
