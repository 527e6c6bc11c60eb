"""Moves on an IMAP server that end with each message in one folder, whatever cuts them short.

A server's ``MOVE`` (RFC 6851) looks atomic to the client, but servers carry it out as a copy
and an expunge: a Dovecot ``imap`` process killed between the two leaves the message in both
folders (measured: ``tests/test_imap.py``, a session killed mid-run left 50 spam in INBOX and
in Junk). Without ``MOVE``, the client's own ``UID COPY``, ``\\Deleted`` and ``UID EXPUNGE``
have the same gap. So a move is recorded on the server, where the next run finds it:

1. Before a batch is moved its messages get the keyword :data:`MOVING` (``ImapFilter`` stores
   it with their verdict keywords: no extra round trip); then :func:`move` moves them.
2. :func:`settle` — after the moves, the keyword is taken off the copies in the destination
   folders (a copy keeps its flags), so that a message a person later moves back is theirs.
3. :func:`finish_moves` — at the start of the next run on the folder (and after each
   reconnection of a watch), a message of the source that still carries the keyword was cut
   short. If a destination folder holds a message with exactly its bytes (candidates found
   by size with ``SEARCH LARGER n-1 SMALLER n+1``, then compared by SHA-256), the copy was
   made: the source's message is flagged ``\\Deleted`` and expunged by UID. If none does,
   the copy never happened: the message is moved again if its verdict keyword is still one
   the run moves, and otherwise keeps its place and loses the keyword.

The comparison is by content, not by the keyword on the copy, so a destination that keeps no
keywords is handled the same. A source folder that keeps none gets no marks: its moves are the
server's alone (``ImapFilter.marks``). A message that was flagged ``\\Deleted`` and has no copy is
left as it is (its copy was removed from the destination by someone else; the deletion
stands). Without UIDPLUS (RFC 4315) nothing is expunged: the duplicate is flagged
``\\Deleted`` and said in the run's notes, as the copy path does.
"""

from __future__ import annotations

import hashlib

#: the keyword a message carries while spamkit moves it
MOVING = "$SpamkitMoving"
DELETED = b"\\Deleted"
#: bodies fetched at a time when comparing
_CHUNK = 50


def move(client, uids: list, dest: str, can_move: bool, uidplus: bool, marked: bool = True) -> None:
    """Move ``uids`` of the selected folder to ``dest`` (``marked``: they carry :data:`MOVING`):
    ``MOVE``, or ``COPY`` then ``\\Deleted`` and ``UID EXPUNGE`` of those UIDs alone."""
    if can_move:
        client.move(uids, dest)
        return
    client.copy(uids, dest)
    client.add_flags(uids, [DELETED], silent=True)
    if uidplus:
        client.uid_expunge(uids)
    elif marked:                                      # left flagged; the mark is done with
        client.remove_flags(uids, [MOVING], silent=True)


def settle(client, folder: str, dests) -> None:
    """Take :data:`MOVING` off the messages of each folder in ``dests``, then select ``folder``
    again (the one being filtered)."""
    for dest in sorted(set(dests)):
        if dest == folder:
            continue
        client.select_folder(dest)
        marked = client.search(["KEYWORD", MOVING])
        if marked:
            client.remove_flags(marked, [MOVING], silent=True)
    client.select_folder(folder)


def _digests(client, uids: list) -> dict:
    """uid -> SHA-256 of the message's bytes, for ``uids`` of the selected folder."""
    out = {}
    for i in range(0, len(uids), _CHUNK):
        chunk = uids[i:i + _CHUNK]
        for uid, data in client.fetch(chunk, ["BODY.PEEK[]"]).items():
            raw = data.get(b"BODY[]")
            if raw is not None:
                out[uid] = hashlib.sha256(raw).digest()
    return out


def finish_moves(client, folder: str, moves: dict, keywords: dict, can_move: bool, uidplus: bool) -> str | None:
    """Finish the moves a cut left in ``folder`` (selected, writable) — see the module docstring.

    ``moves``: verdict -> destination folder (existing) of this run; ``keywords``: verdict ->
    its keyword. Returns a note of what was done, or None when nothing was cut short. The
    destination folders are left with no message carrying :data:`MOVING`, and ``folder`` is
    selected again.
    """
    dests = sorted({d for d in moves.values() if d != folder})
    stranded = sorted(client.search(["KEYWORD", MOVING]))
    if stranded and not dests:                        # where their copies went is not known now
        return (f"{len(stranded)} messages whose move was cut short, left as they are: run again "
                "with the options that moved them (--move-spam-to ...) to finish")
    info = client.fetch(stranded, ["RFC822.SIZE", "FLAGS"]) if stranded else {}
    sizes = {uid: int(data.get(b"RFC822.SIZE", -1)) for uid, data in info.items()}
    # the destinations' messages of those sizes, by content; and the marks there, taken off
    pool: dict = {}
    matched: set = set()                              # sizes some destination has
    for dest in dests:
        client.select_folder(dest)
        marked = client.search(["KEYWORD", MOVING])
        if marked:
            client.remove_flags(marked, [MOVING], silent=True)
        candidates: set = set()
        for size in sorted(set(sizes.values())):
            found = client.search(["NOT", "DELETED", "LARGER", str(size - 1), "SMALLER", str(size + 1)]) if size > 0 else []
            if found:
                matched.add(size)
                candidates.update(found)
        for digest in _digests(client, sorted(candidates)).values():
            pool[digest] = pool.get(digest, 0) + 1
    if dests:
        client.select_folder(folder)
    if not stranded:
        return None
    own = _digests(client, [u for u in stranded if sizes.get(u) in matched])
    copied: list = []
    kept: list = []
    to_move: dict[str, list] = {}
    by_keyword = {k.encode(): v for v, k in keywords.items()}
    for uid in stranded:
        digest = own.get(uid)
        if digest is not None and pool.get(digest, 0) > 0:
            pool[digest] -= 1
            copied.append(uid)
            continue
        flags = set(info.get(uid, {}).get(b"FLAGS", ()))
        verdicts = [by_keyword[f] for f in flags if f in by_keyword]
        dest = moves.get(verdicts[0]) if len(verdicts) == 1 else None
        if DELETED in flags or dest is None or dest == folder:
            kept.append(uid)
        else:
            to_move.setdefault(dest, []).append(uid)
    if copied:
        client.add_flags(copied, [DELETED], silent=True)
        if uidplus:
            client.uid_expunge(copied)
        else:
            client.remove_flags(copied, [MOVING], silent=True)
    if kept:
        client.remove_flags(kept, [MOVING], silent=True)
    for dest, group in to_move.items():
        move(client, group, dest, can_move, uidplus)
    if to_move:
        settle(client, folder, to_move)
    said = []
    if copied:
        said.append(f"{len(copied)} already in {'/'.join(dests)}: removed from {folder}" if uidplus else
                    f"{len(copied)} already in {'/'.join(dests)}: flagged \\Deleted in {folder} (no UIDPLUS to "
                    "expunge them alone)")
    if to_move:
        said.append(f"{sum(len(group) for group in to_move.values())} moved again")
    if kept:
        said.append(f"{len(kept)} left in {folder} (their verdict is not moved, or they were deleted)")
    return f"{len(stranded)} messages whose move was cut short: " + "; ".join(said)
