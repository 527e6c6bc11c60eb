"""Setting up bogofilter and spamkit serve for the benchmarks (standard library only, so a measuring parent stays small)."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys


def ensure_bogofilter(install: bool) -> str:
    """The path of bogofilter, installing the Debian/Ubuntu package first if allowed and needed."""
    found = shutil.which("bogofilter")
    if found or not install:
        return found
    apt = shutil.which("apt-get")
    if apt is None:
        return None
    prefix = [] if os.geteuid() == 0 else (["sudo", "-n"] if shutil.which("sudo") else None)
    if prefix is None:
        return None
    print("setup: installing bogofilter with apt-get ...", file=sys.stderr)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    result = subprocess.run(prefix + [apt, "install", "-y", "bogofilter"], capture_output=True, env=env)
    if result.returncode != 0:
        subprocess.run(prefix + [apt, "update"], capture_output=True, env=env)
        subprocess.run(prefix + [apt, "install", "-y", "bogofilter"], capture_output=True, env=env)
    return shutil.which("bogofilter")


def trained_wordlist(exe: str, folder, messages) -> str:
    """A bogofilter word list in ``folder/bogo`` trained on labelled messages, one ``-s``/``-n`` run each."""
    wordlist = os.path.join(str(folder), "bogo")
    os.makedirs(wordlist, exist_ok=True)
    for m in messages:
        subprocess.run([exe, "-C", "-d", wordlist, "-s" if m.label == "spam" else "-n"],
                       input=m.raw, check=True, capture_output=True)
    return wordlist


def online_spamicities(exe: str, messages, progress=None) -> list:
    """bogofilter's spamicity of each ``(raw, label)`` in order, learning each after scoring it (the
    TREC protocol): ``-TT`` prints the score to 16 digits, then ``-s``/``-n`` registers the message.
    Before its word list exists bogofilter cannot score (exit 3): those messages get 0.5. A fresh
    word list in a temporary folder, compiled-in defaults (``-C``: no configuration file is read)."""
    import tempfile
    scores = []
    with tempfile.TemporaryDirectory(prefix="bogofilter-online-") as wordlist:
        for raw, label in messages:
            out = subprocess.run([exe, "-C", "-d", wordlist, "-TT"], input=raw, capture_output=True)
            text = out.stdout.decode().strip()
            if out.returncode in (0, 1, 2) and text:
                scores.append(float(text.split()[-1]))
            elif out.returncode == 3 and not os.path.exists(os.path.join(wordlist, "wordlist.db")):
                scores.append(0.5)                      # nothing learned yet
            else:
                raise RuntimeError(f"bogofilter failed (exit {out.returncode}): {out.stderr.decode()}")
            subprocess.run([exe, "-C", "-d", wordlist, "-s" if label == "spam" else "-n"], input=raw,
                           check=True, capture_output=True)
            if progress is not None:
                progress()
    return scores


def start_serve(model, sock, *options):
    """``spamkit serve`` on socket ``sock`` (extra ``options``), returned once the socket exists."""
    import time
    server = subprocess.Popen([sys.executable, "-m", "spamkit", "serve", str(model), "--socket", str(sock), *options],
                              stderr=subprocess.DEVNULL)
    while not os.path.exists(sock):
        if server.poll() is not None:
            sys.exit("spamkit serve did not start")
        time.sleep(0.05)
    return server


@contextlib.contextmanager
def serving(model, sock, *options):
    """``spamkit serve`` running for the length of a ``with`` block (:func:`start_serve`), then stopped."""
    server = start_serve(model, sock, *options)
    try:
        yield server
    finally:
        server.terminate()
        server.wait()
