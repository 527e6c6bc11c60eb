"""Text analysis: a parsed message (or plain text) to a list of tokens.

Owns tokenizing, stop words and stemming; the only user of nltk. Takes
:class:`spamkit.parse.message.Message` objects (or text, or raw bytes, which are
parsed first) and returns ``list[str]``; building matrices is left to
:mod:`spamkit.features.vectorizer`.

Tokens from different places are different features:

========================  =================================================
token                     from
========================  =================================================
``free``                  a word of the body (after stop words and stemming)
``subject:free``          a word of the Subject (likewise any header field
                          named in ``headers``: ``from:example.com``)
``url:example.com``       the host (and parent domain) of a URL in the body
                          or in an HTML attribute
``attach:type:image/gif``  an attachment's MIME type; ``attach:ext:exe``
``meta:html``             the message has HTML; ``meta:defect:charset-unknown``
                          a parse fallback; ``meta:long-token`` a word
                          longer than ``max_len``; ``meta:number`` a number
                          (with ``numbers="collapse"``)
``free money``            a word bigram (with ``ngram_max=2``)
``header:x-mailer``       the message has this header field (``header_names``)
``received:ip:10.1.2``    an IPv4 address in a Received field, and its /24 and /16
                          prefixes (``received_ips``)
``url:part:claim``        a piece of a URL's host or path (``url_parts``)
``shape:d11``             a run of 11 digits in the body: a phone number, whatever its
                          digits (``digit_shapes``)
========================  =================================================

:meth:`Analyzer.mail` (:mod:`spamkit.text.analyzer`) is the configuration for raw mail that spamkit's best filter uses:
every header field as its own token space, case kept, header names, Received addresses
and URL pieces. Each of these was measured on the TREC 2007 stream (docs/results.md, "Beating
bogofilter", ``scripts/ablation_trec.py``): with Robinson/Fisher combining, every header
field took (1-ROCA)% from 0.346 to 0.164; keeping case, header names, Received addresses
and URL pieces each helped on their own, and all together reached 0.079; word pairs did
not help and are off.
"""

from __future__ import annotations

from .analyzer import ALL_HEADERS, DEFAULT_HEADERS, LEXERS, NUMBER_MODES, Analyzer, analyzer_for, make_analyzer
from .kinds import digit_prefixes, digit_shapes, encodable, received_ip_tokens, url_part_tokens

__all__ = ["ALL_HEADERS", "Analyzer", "DEFAULT_HEADERS", "LEXERS", "NUMBER_MODES", "analyzer_for", "digit_prefixes",
           "digit_shapes", "encodable", "make_analyzer", "received_ip_tokens", "url_part_tokens"]
