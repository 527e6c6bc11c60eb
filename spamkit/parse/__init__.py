"""Raw mail to a parsed message: MIME structure, decoded text, HTML to text.

Takes bytes (RFC 822/MIME, any charset) and gives a :class:`~spamkit.parse.message.Message` with
its header fields, decoded text parts, attachments' names and sizes, and the defects met on the
way; nothing is dropped silently.
"""
