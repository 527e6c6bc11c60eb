"""The resident filter: a server that loads a filter once and judges messages sent to it.

Takes messages over a socket (spamkit's own protocol, :mod:`~spamkit.serve.server`, and
SpamAssassin's spamd protocol, :mod:`~spamkit.serve.spamd`) and gives each its verdict and tags;
:mod:`~spamkit.serve.client` is the standard-library client, and :mod:`~spamkit.serve.taught`
what users taught over the site filter.
"""
