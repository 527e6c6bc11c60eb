"""An IMAP server that lies: the red team's hostile peers, for tests/test_imap_hostile.py.

It speaks just enough IMAP4rev1 over TLS (imaps, a self-signed certificate made with the
``openssl`` command) for ``spamkit filter imaps://...`` to log in, select INBOX, search and
fetch one message, then misbehaves as ``mode`` says:

``huge-literal``   the message's ``BODY[]`` literal announced as 3 GiB (RFC822.SIZE 4,928), then
                   bytes as fast as the client takes them
``big-body``       a 40 MB body behind RFC822.SIZE 4,928
``over-size``      a body of 17 MiB + 10 bytes behind RFC822.SIZE 4,928 (under the literal cap)
``exists-flood``   SELECT answered by ``* 1 EXISTS`` lines without end
``dribble``        SELECT answered one byte every half second, without end

Real servers cannot be made to do this; the behaviour is the point of the test.
"""

from __future__ import annotations

import socket
import ssl
import subprocess
import threading
import time
from pathlib import Path

MESSAGE = (b"From: a@example.org\r\nTo: b@example.org\r\nSubject: hello\r\n\r\n" + b"some words " * 440 + b"\r\n")


class HostileImap:
    def __init__(self, folder: Path, mode: str):
        self.mode = mode
        self.cert, key = folder / "cert.pem", folder / "key.pem"
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out",
                        str(self.cert), "-days", "2", "-subj", "/CN=localhost",
                        "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"], check=True, capture_output=True)
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(str(self.cert), str(key))
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(8)
        self.port = self.listener.getsockname()[1]
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def url(self) -> str:
        return f"imaps://user@127.0.0.1:{self.port}/INBOX"

    def stop(self) -> None:
        self.stopped.set()
        self.listener.close()

    def _serve(self) -> None:
        while not self.stopped.is_set():
            try:
                raw, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._session, args=(raw,), daemon=True).start()

    def _session(self, raw) -> None:
        try:
            conn = self.context.wrap_socket(raw, server_side=True)
            f = conn.makefile("rb")
            conn.sendall(b"* OK [CAPABILITY IMAP4rev1 MOVE UIDPLUS] hostile ready\r\n")
            while not self.stopped.is_set():
                line = f.readline()
                if not line:
                    return
                tag, _, rest = line.decode("latin-1").strip().partition(" ")
                command = rest.upper()
                if command.startswith("CAPABILITY"):
                    conn.sendall(b"* CAPABILITY IMAP4rev1 MOVE UIDPLUS\r\n" + tag.encode() + b" OK done\r\n")
                elif command.startswith("LOGIN"):
                    conn.sendall(tag.encode() + b" OK [CAPABILITY IMAP4rev1 MOVE UIDPLUS] logged in\r\n")
                elif command.startswith(("SELECT", "EXAMINE")):
                    self._select(conn, tag)
                elif command.startswith("UID SEARCH"):
                    conn.sendall(b"* SEARCH 1\r\n" + tag.encode() + b" OK done\r\n")
                elif command.startswith("UID FETCH") and "RFC822.SIZE" in command:
                    conn.sendall(b"* 1 FETCH (UID 1 RFC822.SIZE 4928)\r\n" + tag.encode() + b" OK done\r\n")
                elif command.startswith("UID FETCH"):
                    self._body(conn, tag)
                elif command.startswith("LOGOUT"):
                    conn.sendall(b"* BYE\r\n" + tag.encode() + b" OK bye\r\n")
                    return
                else:
                    conn.sendall(tag.encode() + b" OK done\r\n")
        except (OSError, ssl.SSLError):
            return

    def _select(self, conn, tag: str) -> None:
        if self.mode == "exists-flood":
            while not self.stopped.is_set():
                conn.sendall(b"* 1 EXISTS\r\n" * 1000)
        if self.mode == "dribble":
            for byte in b"* 1 EXISTS\r\n" * 1000:
                if self.stopped.is_set():
                    return
                conn.sendall(bytes([byte]))
                time.sleep(0.5)
        conn.sendall(b"* 1 EXISTS\r\n* 0 RECENT\r\n* OK [UIDVALIDITY 7] ok\r\n* OK [UIDNEXT 2] ok\r\n"
                     b"* FLAGS (\\Seen \\Deleted)\r\n* OK [PERMANENTFLAGS (\\Seen \\Deleted \\*)] ok\r\n"
                     + tag.encode() + b" OK [READ-WRITE] selected\r\n")

    def _body(self, conn, tag: str) -> None:
        size = {"huge-literal": 3 << 30, "big-body": 40 << 20, "over-size": (17 << 20) + 10}.get(self.mode)
        if size is None:
            body = MESSAGE
            conn.sendall(b"* 1 FETCH (UID 1 BODY[] {%d}\r\n" % len(body) + body + b")\r\n"
                         + tag.encode() + b" OK done\r\n")
            return
        conn.sendall(b"* 1 FETCH (UID 1 BODY[] {%d}\r\n" % size)
        block = b"x" * (1 << 20)
        sent = 0
        while sent < size and not self.stopped.is_set():
            piece = block[:min(len(block), size - sent)]
            conn.sendall(piece)
            sent += len(piece)
        conn.sendall(b")\r\n" + tag.encode() + b" OK done\r\n")
