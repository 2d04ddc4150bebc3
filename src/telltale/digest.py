"""BLAKE2b without importing :mod:`hashlib`.

Importing ``hashlib`` loads OpenSSL's binding (~5 ms of every run, a no-change scan's
included), while Telltale hashes with BLAKE2b everywhere (ids, path hashes, fingerprints),
which is CPython's own ``_blake2`` (``hashlib.blake2b`` is that very type). Only the
redaction key's SHA-256 needs ``hashlib``, and imports it when a value is first hashed.
"""

from __future__ import annotations

try:
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - an interpreter built without it: hashlib's
    from hashlib import blake2b

__all__ = ["blake2b"]
