"""SHA-256 and BLAKE2b for the modules pipe mode imports, without OpenSSL's start-up.

``hashlib`` loads ``_hashlib`` (OpenSSL's bindings) on import, about 3-4 ms of a one-shot
``spamkit filter MODEL -`` of ~40 ms; CPython also builds its own implementations of both
digests into the interpreter (``_sha2`` since 3.12, ``_sha256`` before it; ``_blake2``), which
give the same digests (FIPS 180-4; RFC 7693) and load in a fraction of that. Where a build
lacks them, hashlib's are used: the digests are the same either way
(``tests/test_manifest.py`` compares them with hashlib's).
"""

from __future__ import annotations

try:
    from _sha2 import sha256  # type: ignore[import-not-found]  # CPython 3.12 and later (no stubs)
except ImportError:
    try:
        from _sha256 import sha256  # type: ignore[import-not-found]  # CPython 3.11 (no stubs)
    except ImportError:
        from hashlib import sha256
try:
    from _blake2 import blake2b
except ImportError:
    from hashlib import blake2b

__all__ = ["blake2b", "sha256"]
