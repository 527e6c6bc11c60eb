"""spamkit: text classification and spam filtering.

Data flows one way through the package::

    corpus -> message -> text -> features -> models -> decision -> report

``spamkit.corpus`` reads labelled corpora in every common format,
``spamkit.parse.message`` turns raw mail into decoded header fields and body text.
The command line (``spamkit.cli``) only wires these stages together.
"""

__version__ = "0.1.0"
