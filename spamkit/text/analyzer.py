"""The analyzer: a parsed message (or plain text, or raw bytes) to its list of tokens, under one
configuration (:class:`Analyzer`; :meth:`Analyzer.mail` for raw mail); the token kinds are listed
in :mod:`spamkit.text`."""

from __future__ import annotations

import re

from ..common.patterns import LazyPattern
from ..common.errors import ConfigError, check_choice
from ..parse.message import Message, defect_families, parse_message
from ..common.names import TOKENS
from .stem import STEMMERS, CachedStemmer
from .stopwords import english, load_stop_words
from .kinds import (HEADER_NAME_TOKENS, digit_prefixes, digit_shapes, encodable, header_name_token, received_ip_tokens,
                    url_part_tokens)
from .tokenize import (NAMED_PATTERNS, WORD_PATTERN, WORD_PATTERN_MIN2_ASCII, WORD_PATTERN_MIN2_FAST, cjk_bigrams,
                       find_urls, is_number, speedups, url_hosts)

TYPE_CHECKING = False                  # typing's names for the checker only (no import at run time)
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

__all__ = ["ALL_HEADERS", "Analyzer", "DEFAULT_HEADERS", "STEMMERS"]

#: header fields whose words become field-prefixed tokens by default
DEFAULT_HEADERS = ("subject", "from", "reply-to", "to", "cc", "sender", "x-mailer", "user-agent",
                   "content-type")
NUMBER_MODES = ("keep", "drop", "collapse")
#: how a message is cut into tokens: spamkit's analyzer, or bogofilter's lexer (spamkit.text.bogolex)
LEXERS = ("spamkit", "bogofilter")
#: ``headers=ALL_HEADERS`` tokenizes every header field
ALL_HEADERS = ("*",)
_SPACE_RUN = LazyPattern(r"\s+")


def _check_untrusted(config: dict, stop_list) -> None:
    """Refuse an analyzer configuration that would make spamkit open a file or run a foreign regex."""
    pattern = config.get("token_pattern", WORD_PATTERN)
    if pattern not in NAMED_PATTERNS.values():
        raise ConfigError(f"the filter file brings its own token pattern {str(pattern)[:60]!r}; only "
                          f"spamkit's named patterns ({', '.join(NAMED_PATTERNS)}) are run from a filter file")
    stop_words = config.get("stop_words", "none")
    if stop_words not in ("none", "english", "custom"):
        raise ConfigError(f"the filter file names a stop-word file ({str(stop_words)[:60]!r}); a filter file "
                          "must carry its stop words, never a path")
    if stop_list is not None and not (isinstance(stop_list, list) and len(stop_list) <= 1_000_000
                                      and all(isinstance(w, str) and len(w) <= 200 for w in stop_list)):
        raise ConfigError("the filter file's stop-word list is not a list of words")
    if stop_words != "none" and stop_list is None:
        raise ConfigError(f"the filter file uses stop words {stop_words!r} but does not carry the list")
    for key in ("headers", "skip_headers"):
        headers = config.get(key, ())
        if not (isinstance(headers, (list, tuple)) and len(headers) <= 10_000
                and all(isinstance(h, str) and len(h) <= 200 for h in headers)):
            raise ConfigError(f"the filter file's {key} is not a list of field names")


class Analyzer:
    """Message or text to tokens; its configuration is saved in every model.

    Parameters
    ----------
    lowercase : bool
        Lower-case before tokenizing.
    token_pattern : str
        Regular expression of one word (default :data:`~spamkit.text.tokenize.WORD_PATTERN`).
    numbers : {"keep", "drop", "collapse"}
        What to do with tokens that are numbers; "collapse" turns each into ``meta:number``.
    min_len, max_len : int
        Words shorter than ``min_len`` are dropped; longer than ``max_len`` become ``meta:long-token``.
    ngram_max : int
        Also emit word n-grams up to this length (1 = words only), joined by a space.
    stop_words : str
        ``"none"``, ``"english"`` (shipped list), or a path to a file of words.
    stemmer : {"none", "porter", "snowball", "lancaster"}
    language : str
        Snowball language.
    headers : tuple of str
        Header fields tokenized with a ``field:`` prefix; ``("*",)`` (:data:`ALL_HEADERS`)
        for every field.
    skip_headers : tuple of str
        Header fields never tokenized, even with :data:`ALL_HEADERS` (their names still count
        for ``header_names``): fields whose values are new in every message, which bogofilter
        ignores as "MTA cruft" (its man page: "dates and message-IDs are ignored").
    urls : bool
        Emit ``url:host`` tokens.
    meta : bool
        Emit ``attach:``, ``meta:html`` and ``meta:defect:`` tokens.
    header_names : bool
        Emit ``header:NAME`` for each header field present (which fields a mailer writes,
        and in what mix, tells mailers apart).
    received_ips : bool
        Emit ``received:ip:`` tokens for each IPv4 address in the Received fields, with its
        /24 and /16 prefixes (senders' networks, as bogofilter's ``block_on_subnets``).
    digit_shapes : bool
        Emit ``shape:dN`` for each run of N digits in the body (N capped at 20): phone
        numbers, short codes and prices generalise by their length, not their digits. On the
        SMS Spam Collection this takes Platt-calibrated Robinson/Fisher from 97.85% to 98.08%
        accuracy (``scripts/reproduce_almeida.py``).
    digit_prefixes : bool
        Emit ``shape:PPdN`` for each run of five or more digits in the body, PP its first two
        digits and N its length (:func:`digit_prefixes`): the kind of a telephone number
        (premium-rate, freephone, mobile) or of an account number, which its length alone
        does not tell.
    url_parts : bool
        Emit ``url:part:`` tokens for the pieces of each URL's host and path (split at
        ``/ ? # = & . : - _`` and the like), 2 to 30 characters long.
    char_ngrams : int
        0 (off) or n from 3 to 6: also emit ``cn:`` + each distinct run of n characters of the
        first ``char_window`` characters of the body, once per message, in order of first
        appearance. Character n-grams see through the obfuscations a word tokenizer splits
        (``v1agra``, ``f r e e``, words glued to punctuation) and need no idea of a word; the
        best runs of the TREC 2007 spam track learned on overlapping byte 4-grams of each
        message's first 2,500-3,000 bytes (G. V. Cormack, "University of Waterloo
        Participation in the TREC 2007 Spam Track"). spamkit takes them from the decoded
        body text, so base64 and quoted-printable parts give the same grams as plain ones,
        and read each run of white space as one space.
    char_window : int
        How many characters of the body the character n-grams look at.
    lexer : {"spamkit", "bogofilter"}
        ``"bogofilter"``: bogofilter 1.2's tokens from the raw message
        (:mod:`spamkit.text.bogolex`), so that a filter can carry counts imported from a
        bogofilter word list (``spamkit import-wordlist``); every other setting is then unused.

    Examples
    --------
    >>> a = Analyzer(stop_words="english", stemmer="porter")
    >>> a("Winning the lottery: visit http://www.prize.example.com/claim now!")
    ['win', 'lotteri', 'visit', 'http', 'www.prize.example.com', 'claim', 'url:prize.example.com', 'url:example.com']
    >>> m = parse_message(b"Subject: Free money\\nFrom: Bob <bob@spam.example>\\n\\nfree offer")
    >>> Analyzer()(m)
    ['free', 'offer', 'subject:free', 'subject:money', 'from:bob', 'from:bob', 'from:spam.example']
    """

    #: the settings, in the order of ``__init__``'s parameters: what :meth:`get_config` saves,
    #: ``repr`` shows and equality compares
    SETTINGS = ("lowercase", "token_pattern", "numbers", "min_len", "max_len", "ngram_max", "stop_words", "stemmer",
                "language", "headers", "skip_headers", "urls", "meta", "header_names", "received_ips", "url_parts",
                "digit_shapes", "digit_prefixes", "char_ngrams", "char_window", "lexer", "cjk_bigrams")

    def __init__(self, lowercase: bool = True, token_pattern: str = WORD_PATTERN, numbers: str = "keep",
                 min_len: int = 2, max_len: int = 40, ngram_max: int = 1, stop_words: str = "none",
                 stemmer: str = "none", language: str = "english", headers: Sequence[str] = DEFAULT_HEADERS,
                 skip_headers: Sequence[str] = (), urls: bool = True, meta: bool = True, header_names: bool = False,
                 received_ips: bool = False, url_parts: bool = False, digit_shapes: bool = False,
                 digit_prefixes: bool = False, char_ngrams: int = 0, char_window: int = 3000, lexer: str = "spamkit",
                 cjk_bigrams: bool = False, _stop_list: frozenset | None = None):
        # a plain class, not a dataclass: importing dataclasses costs pipe mode ~20 ms of start-up
        self.lowercase, self.token_pattern, self.numbers = lowercase, token_pattern, numbers
        self.min_len, self.max_len, self.ngram_max = min_len, max_len, ngram_max
        self.stop_words, self.stemmer, self.language = stop_words, stemmer, language
        self.headers: tuple[str, ...] = tuple(h.lower() for h in headers)
        self.skip_headers: tuple[str, ...] = tuple(h.lower() for h in skip_headers)
        self.urls, self.meta, self.header_names, self.received_ips = urls, meta, header_names, received_ips
        self.url_parts, self.digit_shapes, self.digit_prefixes = url_parts, digit_shapes, digit_prefixes
        self.char_ngrams, self.char_window, self.lexer, self.cjk_bigrams = char_ngrams, char_window, lexer, cjk_bigrams
        #: the stop words themselves (``stop_words``' list unless given)
        self._stop_list: frozenset = _stop_list if _stop_list is not None else frozenset()
        self._check()
        # the default word pattern and length: the engine itself drops one-character words
        self._min2 = self.token_pattern == WORD_PATTERN and self.min_len == 2
        if _stop_list is None:
            self._stop_list = load_stop_words(self.stop_words)
        self._stem = CachedStemmer(self.stemmer, self.language)

    def __repr__(self) -> str:
        return f"Analyzer({', '.join(f'{name}={getattr(self, name)!r}' for name in self.SETTINGS)})"

    def __eq__(self, other) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in self.SETTINGS)

    __hash__ = None                                      # type: ignore[assignment]  # mutable, as a dataclass

    def _check(self) -> None:
        """Refuse settings out of range (:class:`~spamkit.common.errors.ConfigError`)."""
        if self.numbers not in NUMBER_MODES:
            raise ConfigError(f"numbers must be one of {', '.join(NUMBER_MODES)}, got {self.numbers!r}")
        if not (isinstance(self.min_len, int) and isinstance(self.max_len, int)
                and 1 <= self.min_len <= self.max_len):
            raise ConfigError(f"need 1 <= min_len <= max_len, got {self.min_len}, {self.max_len}")
        if not (isinstance(self.ngram_max, int) and 1 <= self.ngram_max <= 5):
            raise ConfigError(f"ngram_max must be 1 to 5, got {self.ngram_max!r}")
        if not (isinstance(self.char_ngrams, int) and (self.char_ngrams == 0 or 3 <= self.char_ngrams <= 6)):
            raise ConfigError(f"char_ngrams must be 0 (off) or 3 to 6, got {self.char_ngrams!r}")
        if self.lexer not in LEXERS:
            raise ConfigError(f"lexer must be one of {', '.join(LEXERS)}, got {self.lexer!r}")
        if not (isinstance(self.char_window, int) and self.char_window >= 1):
            raise ConfigError(f"char_window must be a positive number of characters, got {self.char_window!r}")
        if self.token_pattern != WORD_PATTERN:            # a pattern of the user's: checked now
            try:
                re.compile(self.token_pattern)
            except re.error as exc:
                raise ConfigError(f"token_pattern is not a regular expression: {exc}") from None

    # The patterns are compiled when first used (re keeps them for the process): with the compiled
    # word scanner (spamkit.common.speedups.words) the default words never need them, and compiling the
    # three took 3-6 ms of every one-shot pipe-mode run.

    @property
    def _regex(self) -> re.Pattern:
        return re.compile(self.token_pattern)

    @property
    def _regex_min(self) -> re.Pattern | None:
        """The default words of two or more characters, or None for other patterns and lengths."""
        return re.compile(WORD_PATTERN_MIN2_FAST) if self._min2 else None

    @classmethod
    def mail(cls, **overrides) -> "Analyzer":
        """The analyzer for raw mail of spamkit's best filter (see the module docstring).

        >>> Analyzer.mail().headers, Analyzer.mail().lowercase
        (('*',), False)
        """
        settings: dict[str, Any] = dict(lowercase=False, headers=ALL_HEADERS, header_names=True, received_ips=True,
                        url_parts=True, digit_shapes=True, cjk_bigrams=True)
        settings.update(overrides)
        return cls(**settings)

    # ----------------------------------------------------------- configuration

    def get_config(self) -> dict:
        """A JSON-serialisable configuration; a user's stop-word file is stored as its words."""
        config = {name: getattr(self, name) for name in self.SETTINGS}
        config["headers"] = list(self.headers)
        config["skip_headers"] = list(self.skip_headers)
        if self.stop_words not in ("none", "english"):
            config["stop_words"] = "custom"
            config["stop_word_list"] = sorted(self._stop_list)
        elif self.stop_words == "english":
            # The shipped list may change between versions; the model keeps the one it used.
            config["stop_word_list"] = sorted(english())
        return config

    @classmethod
    def from_config(cls, config: dict, trusted: bool = True) -> "Analyzer":
        """Rebuild the analyzer a model was trained with.

        ``trusted=False`` (a filter file from elsewhere) accepts data only: the stop words
        must come as a list, never as a file to open, and the token pattern must be one
        of :data:`~spamkit.text.tokenize.NAMED_PATTERNS`.
        """
        config = dict(config)
        stop_list = config.pop("stop_word_list", None)
        known = set(cls.SETTINGS)
        unknown = set(config) - known
        if unknown:
            raise ConfigError(f"unknown analyzer settings {sorted(unknown)}; "
                              "was this model written by a newer spamkit?")
        if not trusted:
            _check_untrusted(config, stop_list)
        if config.get("stop_words") == "custom" or stop_list is not None:
            config["stop_words"] = config.get("stop_words", "custom")
            return cls(**{**config, "headers": tuple(config.get("headers", DEFAULT_HEADERS)),
                          "skip_headers": tuple(config.get("skip_headers", ()))},
                       _stop_list=frozenset(stop_list or ()))
        return cls(**{**config, "headers": tuple(config.get("headers", DEFAULT_HEADERS)),
                      "skip_headers": tuple(config.get("skip_headers", ()))})

    def __getstate__(self):                      # picklable for multiprocessing, not for files
        return self.get_config()

    def __setstate__(self, state):
        self.__dict__.update(Analyzer.from_config(state).__dict__)

    # ----------------------------------------------------------- tokenizing

    def words(self, text: str) -> list[str]:
        """Word tokens of ``text``: pattern, case, numbers, lengths, stop words, stemming, n-grams
        (Han and kana text as character bigrams with ``cjk_bigrams``: :func:`~spamkit.text.tokenize.cjk_bigrams`)."""
        if self.lowercase:
            text = text.lower()
        if self.cjk_bigrams:
            text = cjk_bigrams(text)
        stop, stem = self._stop_list, self._stem
        min_len, max_len, numbers = self.min_len, self.max_len, self.numbers
        if not stop and stem.function is None and numbers == "keep":
            # The common configuration, as one comprehension: same result as the loop below.
            if self._min2 and speedups is not None:
                out = speedups.words(text, max_len, None, "meta:long-token")   # the same words, in C
            elif self._min2:
                out = re.compile(WORD_PATTERN_MIN2_ASCII if text.isascii() else WORD_PATTERN_MIN2_FAST).findall(text)
                if out and max(map(len, out)) > max_len:     # rare: a word too long to keep
                    out = [t if len(t) <= max_len else "meta:long-token" for t in out]
            else:
                out = [t if len(t) <= max_len else "meta:long-token"
                       for t in self._regex.findall(text) if len(t) >= min_len]
            if self.ngram_max > 1:
                self._add_ngrams(out)
            return out
        out = []
        for token in self._regex.findall(text):
            if numbers != "keep" and is_number(token):
                if numbers == "collapse":
                    out.append("meta:number")
                continue
            n = len(token)
            if n < min_len:
                continue
            if n > max_len:
                out.append("meta:long-token")
                continue
            if token in stop:
                continue
            out.append(stem(token))
        if self.ngram_max > 1:
            self._add_ngrams(out)
        return out

    def char_grams(self, text: str) -> list[str]:
        """The distinct character n-grams of the first ``char_window`` characters, prefixed ``cn:``.

        Each run of white space counts as one space (line breaks and tabs are layout, and a
        token never holds a line break).

        >>> Analyzer(char_ngrams=3).char_grams("abcabcd")
        ['c3:abc', 'c3:bca', 'c3:cab', 'c3:bcd']
        """
        n, text = self.char_ngrams, _SPACE_RUN.sub(" ", text[:self.char_window])
        prefix = f"c{n}:"
        return list(dict.fromkeys([prefix + text[i:i + n] for i in range(len(text) - n + 1)]))

    def _add_ngrams(self, out: list[str]) -> None:
        grams = [t for t in out if not t.startswith("meta:")]
        for n in range(2, self.ngram_max + 1):
            out.extend(" ".join(grams[i:i + n]) for i in range(len(grams) - n + 1))

    def _field_tokens(self, fields, wanted, every: bool, skip, scan, tokens: list) -> None:
        """Appends the words of the wanted header ``fields``, each prefixed with its name and a
        colon, markers left out; ``scan`` is the compiled word scanner where it applies."""
        for name, value in fields:
            if (every or name in wanted) and name not in skip:
                if scan is not None:
                    tokens.extend(scan(value.lower() if self.lowercase else value, self.max_len, name + ":",
                                       "meta:long-token"))
                    continue
                words = self.words(value)
                # markers (meta:long-token, meta:number) are not field tokens: drop them
                if self.numbers == "collapse" or "meta:long-token" in words:
                    words = [t for t in words if not t.startswith("meta:")]
                tokens.extend(map((name + ":").__add__, words))

    def __call__(self, doc) -> list[str]:
        """Tokens of a :class:`~spamkit.parse.message.Message`, a ``str`` of plain text, or raw ``bytes``."""
        if self.lexer == "bogofilter":
            from .bogolex import bogofilter_tokens      # (here: only bogofilter's lexer needs it)
            return bogofilter_tokens(doc.raw if isinstance(doc, Message) else
                                     doc.encode("utf-8", "surrogatepass") if isinstance(doc, str) else bytes(doc))
        if isinstance(doc, (bytes, bytearray)):
            doc = parse_message(bytes(doc))
        if isinstance(doc, str):
            doc = Message(body=doc, kind="text", size=len(doc))
        if not isinstance(doc, Message):
            raise ConfigError(f"cannot analyze a {type(doc).__name__}; pass a Message, str or bytes")
        tokens = self.words(doc.body)
        headers: Sequence[tuple[str, str]] = doc.headers
        if self.cjk_bigrams and self.headers and not all(value.isascii() for _, value in headers):
            headers = [(name, cjk_bigrams(value)) for name, value in headers]
        if self.urls or self.url_parts:
            urls = find_urls(doc.body) + list(doc.urls)
            if self.urls and speedups is not None:
                speedups.url_host_tokens(urls, url_hosts, tokens)      # the same tokens, in C
            elif self.urls:
                for url in urls:
                    tokens.extend("url:" + h for h in url_hosts(url))
            if self.url_parts:
                url_part_tokens(urls, tokens)
        if self.headers:
            wanted = self.headers
            every = wanted == ALL_HEADERS
            skip = self.skip_headers
            # the default words of a field, prefixed and without markers, in one call to C
            scan = (speedups.words if speedups is not None and self._min2 and self.ngram_max == 1
                    and not self._stop_list and self._stem.function is None and self.numbers == "keep" else None)
            if (scan is not None and every and not skip and not self.lowercase
                    and isinstance(headers, (list, tuple))):
                # every field as _field_tokens takes them, in one call (speedups.header_words)
                speedups.header_words(headers, self.max_len, "meta:long-token", tokens)
            else:
                self._field_tokens(headers, wanted, every, skip, scan, tokens)
        if self.char_ngrams:
            tokens.extend(self.char_grams(doc.body))
        if self.digit_shapes:
            digit_shapes(doc.body, tokens)
        if self.digit_prefixes:
            digit_prefixes(doc.body, tokens)
        if self.header_names:
            known = HEADER_NAME_TOKENS
            tokens.extend([known.get(name) or header_name_token(name) for name, _ in doc.headers])
        if self.received_ips:
            received_ip_tokens(doc.get_all("received"), tokens)
        if self.meta:
            if doc.html_tags:
                tokens.append("meta:html")
            for att in doc.attachments:
                tokens.append("attach:type:" + att.content_type.lower())
                if "." in att.filename:
                    tokens.append("attach:ext:" + att.filename.rsplit(".", 1)[1].lower()[:10])
            for family in sorted(defect_families(doc)):
                tokens.append("meta:defect:" + family)
        return encodable(tokens)


def analyzer_for(tokens: str = "words", stem: str = "none", language: str = "english", stop_words: str = "none",
                 ngrams: int = 1, char_ngrams: int = 0, digit_prefixes: bool = False) -> Analyzer:
    """The analyzer that ``spamkit train``'s options (and :func:`spamkit.filterfile.config.build_filter`'s)
    name: one mapping for both, so that the analyzer ``train`` gives its workers before the
    filter exists is the filter's own (:meth:`spamkit.jobs.engines.ProcessEngine.count_ahead`)."""
    return make_analyzer(tokens, stemmer=stem, language=language, stop_words=stop_words, ngram_max=ngrams,
                         char_ngrams=char_ngrams, digit_prefixes=digit_prefixes)


def make_analyzer(tokens: str = "words", **settings) -> Analyzer:
    """The analyzer of a token scheme (:data:`TOKENS`), with Analyzer settings on top."""
    if tokens == "mail":
        return Analyzer.mail(**settings)
    if tokens == "words":
        return Analyzer(**{"cjk_bigrams": True, **settings})
    if tokens == "bogofilter":
        return Analyzer(lexer="bogofilter", **settings)
    check_choice(tokens, TOKENS, "token scheme")
    raise AssertionError(f"token scheme {tokens!r} is in TOKENS but make_analyzer does not build it")
