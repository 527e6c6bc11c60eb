"""The resident filter: a server that loads a filter once and judges messages sent to it.

Takes messages over a socket (spamkit's own protocol, :mod:`~spamkit.mail.serve.wire`, and
SpamAssassin's spamd protocol, :mod:`~spamkit.mail.serve.spamd`) and gives each its verdict and tags;
:mod:`~spamkit.mail.serve.client` is the standard-library client, and :mod:`~spamkit.mail.serve.taught`
what users taught over the site filter.
"""
