"""Stemmers from nltk (Porter, Snowball, Lancaster), cached per distinct token.

nltk's stemmers are pure code: they need none of nltk's downloadable data.
Each distinct token is stemmed once and the result is remembered, so the
cost grows with the vocabulary, not with the length of the text. nltk is
imported only when a stemmer is asked for.
"""

from __future__ import annotations

from ..common.errors import ConfigError, check_choice

STEMMERS = ("none", "porter", "snowball", "lancaster")
SNOWBALL_LANGUAGES = ("arabic", "danish", "dutch", "english", "finnish", "french", "german",
                      "hungarian", "italian", "norwegian", "porter", "portuguese", "romanian",
                      "russian", "spanish", "swedish")

#: cache entries per stemmer; the cache is cleared when full (real vocabularies stay well below)
CACHE_SIZE = 1 << 20


class CachedStemmer:
    """A stemmer with a per-token cache.

    Parameters
    ----------
    name : {"none", "porter", "snowball", "lancaster"}
    language : str
        For Snowball: one of :data:`SNOWBALL_LANGUAGES`.

    Attributes
    ----------
    function : callable or None
        The stemmer's own word -> stem function (None for ``"none"``: words are kept as they are).

    Examples
    --------
    >>> s = CachedStemmer("porter")
    >>> [s(w) for w in ["running", "runs", "easily"]]
    ['run', 'run', 'easili']
    >>> CachedStemmer("snowball", "german")("katzen")
    'katz'
    """

    def __init__(self, name: str = "none", language: str = "english"):
        check_choice(name, STEMMERS, "stemmer")
        if name == "snowball" and language not in SNOWBALL_LANGUAGES:
            raise ConfigError(f"Snowball has no {language!r} stemmer; choose one of "
                              f"{', '.join(SNOWBALL_LANGUAGES)}")
        self.name = name
        self.language = language
        self._cache: dict[str, str] = {}
        self.function = None
        if name == "porter":
            from nltk.stem.porter import PorterStemmer
            # NLTK_EXTENSIONS is nltk's default mode; recorded so models say which one they used.
            self.function = PorterStemmer(mode=PorterStemmer.NLTK_EXTENSIONS).stem
        elif name == "snowball":
            from nltk.stem.snowball import SnowballStemmer
            self.function = SnowballStemmer(language).stem
        elif name == "lancaster":
            from nltk.stem.lancaster import LancasterStemmer
            self.function = LancasterStemmer().stem

    def __call__(self, token: str) -> str:
        if self.function is None:
            return token
        stem = self._cache.get(token)
        if stem is None:
            if len(self._cache) >= CACHE_SIZE:
                self._cache.clear()
            stem = self.function(token) or token
            self._cache[token] = stem
        return stem

    @property
    def cache_size(self) -> int:
        """How many distinct tokens have been stemmed (and remembered)."""
        return len(self._cache)
