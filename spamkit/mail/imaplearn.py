"""Learning from an IMAP server: a folder's messages as labelled messages (only those new since
the last run), and the corrections a person made by moving mail in and out of the Junk folder.

Takes an open IMAP client and the folders' URLs (:class:`spamkit.mail.imap.ImapURL`) and
gives :class:`~spamkit.corpus.base.LabelledMessage` for ``spamkit learn`` to learn, read
with ``BODY.PEEK[]`` (learning never marks a message read); after the filter file is saved,
:meth:`Corrections.commit` records on the server what each correction was learned as. Filtering
a folder is :mod:`spamkit.mail.imap`.
"""

from __future__ import annotations

from ..corpus.base import LabelledMessage
from .imap import BATCH, KEYWORDS, MAX_SIZE, ImapURL, batches, select
from .imapmoves import MOVING


def folder_key(url: ImapURL) -> str:
    """How a filter file remembers an IMAP folder it learned from: ``USER@HOST:PORT/FOLDER``."""
    return f"{url.user}@{url.host}:{url.port}/{url.folder}"


def imap_messages(client, url: ImapURL, label: str, seen: dict | None = None, batch: int = BATCH,
                  max_size: int = MAX_SIZE):
    """The messages of an IMAP folder as ``LabelledMessage`` (``label``), read with BODY.PEEK[].

    ``seen`` (``folder_key -> [UIDVALIDITY, highest UID]``, kept in the filter file) makes a
    later run read only the messages that arrived since; it is updated as messages are read.
    Messages over ``max_size`` are skipped.
    """
    info = select(client, url, readonly=True)
    validity = int(info.get(b"UIDVALIDITY", 0))
    key = folder_key(url)
    since = 0
    if seen is not None and key in seen and seen[key][0] == validity:
        since = int(seen[key][1])
    uids = sorted(u for u in client.search(["UID", f"{since + 1}:*"] if since else ["ALL"]) if u > since)
    for chunk in batches(uids, batch):
        sizes = client.fetch(chunk, ["RFC822.SIZE"])
        small = [u for u in chunk if sizes.get(u, {}).get(b"RFC822.SIZE", max_size + 1) <= max_size]
        bodies = client.fetch(small, ["BODY.PEEK[]"]) if small else {}
        for uid in chunk:
            raw = bodies.get(uid, {}).get(b"BODY[]")
            if raw is not None:
                yield LabelledMessage(f"{validity}:{uid}", label, raw, f"{url}#{uid}")
            if seen is not None:
                seen[key] = [validity, uid]


class Corrections:
    """What a person corrected by moving mail in and out of the Junk folder, as labelled messages.

    The filter runs ``--tag --move-spam-to JUNK``, so every message it judged carries its
    verdict keyword, and the folder a message is in is the person's judgment: in ``inbox``
    (where the filter leaves ham) a message with ``$Junk`` was moved back out of Junk by hand —
    ham; in ``junk`` a message without ``$Junk`` (``$NotJunk``, ``$SpamkitUnsure``, or no verdict
    at all) was moved in by hand, or filed there by a mail client — spam. After the filter file
    is saved, :meth:`commit` sets each learned message's keyword to what it was learned as, so
    the next run finds nothing new (and the filter's message hashes would skip it anyway).
    Messages with no verdict keyword in ``inbox`` are not corrections (the filter has not seen
    them yet).
    """

    def __init__(self, client, inbox: ImapURL, junk: str):
        self.client, self.inbox, self.junk = client, inbox, inbox.at(junk)
        self.learned: list[tuple[str, int, str]] = []       # (folder, uid, label)

    def messages(self, batch: int = BATCH, max_size: int = MAX_SIZE):
        # a message still marked MOVING is a move cut short (imapmoves), not a person's correction
        inbox = ["KEYWORD", KEYWORDS["spam"], "NOT", "KEYWORD", MOVING]
        for url, criteria in ((self.inbox, inbox), (self.junk, ["NOT", "KEYWORD", KEYWORDS["spam"]])):
            if url.folder != self.inbox.folder and not self.client.folder_exists(url.folder):
                continue
            select(self.client, url, readonly=True)
            uids = sorted(self.client.search(criteria))
            for chunk in batches(uids, batch):
                data = self.client.fetch(chunk, ["RFC822.SIZE"])
                small = [u for u in chunk if data.get(u, {}).get(b"RFC822.SIZE", max_size + 1) <= max_size]
                bodies = self.client.fetch(small, ["BODY.PEEK[]"]) if small else {}
                for uid in small:
                    raw = bodies.get(uid, {}).get(b"BODY[]")
                    if raw is None:
                        continue
                    label = "ham" if url is self.inbox else "spam"
                    self.learned.append((url.folder, uid, label))
                    yield LabelledMessage(f"correction:{url.folder}:{uid}", label, raw, f"{url}#{uid}")

    def commit(self) -> dict:
        """Set the verdict keywords of the learned messages to what they were learned as."""
        done = {"ham": 0, "spam": 0}
        by_folder: dict = {}
        for folder, uid, label in self.learned:
            by_folder.setdefault((folder, label), []).append(uid)
        for (folder, label), uids in by_folder.items():
            self.client.select_folder(folder)
            others = [k for v, k in KEYWORDS.items() if v != label]
            self.client.remove_flags(uids, others, silent=True)
            self.client.add_flags(uids, [KEYWORDS[label]], silent=True)
            done[label] += len(uids)
        return done
