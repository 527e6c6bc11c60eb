"""Hand-built hostile messages: each one crashed or stalled an earlier spamkit (issue "Hostile inputs").

Every entry is (name, raw bytes). They are built here, never copied from a corpus.
"""

from __future__ import annotations

HEAD = b"From: a@example.org\nTo: b@example.org\nSubject: hi\nMIME-Version: 1.0\n"


def nested_multipart(depth: int) -> bytes:
    """``depth`` multipart/mixed parts, each inside the previous one (the stdlib parser recursed)."""
    parts = [HEAD]
    for i in range(depth):
        parts.append(b'Content-Type: multipart/mixed; boundary="b%d"\n\n--b%d\n' % (i, i))
    parts.append(b"Content-Type: text/plain\n\nthe innermost words\n")
    parts.extend(b"--b%d--\n" % i for i in reversed(range(depth)))
    return b"".join(parts)


def many_parts(n: int) -> bytes:
    body = b"".join(b"--x\nContent-Type: text/plain\n\npart %d\n" % i for i in range(n))
    return HEAD + b'Content-Type: multipart/mixed; boundary="x"\n\n' + body + b"--x--\n"


def many_parameters(size: int) -> bytes:
    params = b"".join(b"; a%d=b" % i for i in range(size // 8))
    return HEAD + b"Content-Type: text/plain" + params + b"\n\nhello\n"


def big_html(size: int) -> bytes:
    unit = b'<div><p class="x">Cheap <b>meds</b> <a href="http://shop.example/%d">here</a></p></div>\n'
    body = b"<html><body>" + b"".join(unit % i for i in range(size // len(unit))) + b"</body></html>\n"
    return HEAD + b"Content-Type: text/html; charset=utf-8\n\n" + body


def unclosed_html(size: int) -> bytes:
    """Markup that never closes: '<' with no '>' makes a naive tag scanner rescan the rest."""
    return HEAD + b"Content-Type: text/html\n\n" + b"<a href='x " * (size // 11) + b"\n"


CRASHERS = [
    ("rfc2231-charset", HEAD + b"Content-Type: text/plain; charset*=utf-8''x\n\nhello there\n"),
    ("rfc2231-charset-language", HEAD + b"Content-Type: text/plain; charset*=us-ascii'en'utf-8\n\nhello\n"),
    ("rfc2231-continuations", HEAD + b"Content-Type: application/octet-stream;\n name*0*=utf-8''%E2%82%AC;"
                              b" name*1=.pdf\nContent-Transfer-Encoding: base64\n\naGVsbG8=\n"),
    ("rfc2231-bad-percent", HEAD + b"Content-Type: text/plain; charset*=%ZZ''%FF%\n\nhello\n"),
    ("nested-1000", nested_multipart(1000)),
    ("parts-1000", many_parts(1000)),
    ("parameters-320k", many_parameters(320_000)),
    ("html-256k", big_html(256_000)),
    ("html-unclosed-64k", unclosed_html(64_000)),
    ("nul-bytes", HEAD + b"Content-Type: text/plain; charset=utf-8\n\n\x00\x00hello\x00world\n"),
    ("bogus-charset", HEAD + b"Content-Type: text/plain; charset=\"x-\x00\xff\"\n\n\xe9t\xe9\n"),
    ("bad-boundary", HEAD + b"Content-Type: multipart/mixed; boundary=\"\"\n\n--\n\nbody\n----\n"),
    ("no-body", HEAD.rstrip(b"\n")),
    ("huge-header", HEAD + b"X-Junk: " + b"a" * 2_000_000 + b"\n\nbody\n"),
    ("folded-forever", HEAD + b"X-Fold: a\n" + b" b\n" * 100_000 + b"\nbody\n"),
    ("binary", bytes(range(256)) * 40),
    # html.unescape raised ValueError on a decimal reference past int()'s 4,300 digits
    ("reference-5000-digits", HEAD + b"Content-Type: text/html\n\n<p title='&#" + b"7" * 5000 + b"'>x &#"
                              + b"9" * 5000 + b"; y &#" + b"0" * 5000 + b"65;</p>\n"),
    ("empty", b""),
]
