"""The compiled rule pack, cached beside the state (DECISIONS "Configuration").

Building the engine is YAML parsing and validation, literal extraction, RE2 compiles and
Hyperscan database compiles: ~0.3-0.4 s a scan with changed sources pays again and again
for the same pack. What can be kept is kept: a rule file's validated :class:`RuleSet`,
each pattern's literal analysis, and each Hyperscan database (serialised by Hyperscan
itself). RE2 objects cannot be serialised; they are compiled again (a small part).

Entries are keyed by the SHA-256 of their whole input (a rule file's text and name, a
pattern, a database's literals and flags); the file as a whole by the versions of the
libraries that produce or read its entries (telltale, msgspec, PyYAML, hyperscan, RE2)
and of the detection code itself, so a changed pack, library or compiler never reads an
old entry. The file is verified on load — its owner, that no one else may write it, a
SHA-256 of its payload, a typed decode — and anything that does not verify is ignored
and rebuilt, never trusted. It is written 0600 next to the state, atomically, and only
when an entry was missing; entries the run did not use are dropped then.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import os
import stat
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import msgspec

T = TypeVar("T")

#: The cache file's name in the state's directory.
FILE_NAME = "rules.cache"
#: A larger file is not read (a default pack's cache is ~0.3 MB).
MAX_BYTES = 64 << 20
_MAGIC = b"telltale-rules-cache-1\n"
#: The modules whose output is cached: a change to any of them is a new cache.
_CODE = ("loader.py", "literals.py", "literal_scan.py", "guards.py", "match.py", "snapshot.py", "model.py", "fields.py")
_LIBRARIES = ("telltale", "msgspec", "PyYAML", "hyperscan", "google-re2")
#: Each library's module (its ``__version__``, or for google-re2 its extension's file).
_MODULES = {"PyYAML": "yaml", "google-re2": "re2._re2"}
#: Libraries named by their package's file, found without importing it: a scan whose pack
#: comes from the cache parses no YAML, and importing PyYAML for its version was ~15 ms.
_BY_FILE = frozenset({"PyYAML"})


class _File(msgspec.Struct, array_like=True):
    key: bytes
    digest: bytes
    payload: bytes


_entries_decoder = msgspec.msgpack.Decoder(dict[str, bytes])
_file_decoder = msgspec.msgpack.Decoder(_File)


def _version(name: str) -> str:
    """A library as the key names it: its module's ``__version__``, or (google-re2 has
    none) its extension file's path, size and mtime, which a reinstall changes. Asking
    ``importlib.metadata`` instead (importing it, searching the path for distributions)
    cost more than reading the cache saves on a small scan; it is the last resort."""
    if name in _BY_FILE:
        return _file_identity(_MODULES.get(name, name))
    try:
        module = importlib.import_module(_MODULES.get(name, name))
    except ImportError:
        return "-"
    version = getattr(module, "__version__", None)
    if isinstance(version, str):
        return version
    path = getattr(module, "__file__", None)
    if path:
        with contextlib.suppress(OSError):
            st = os.stat(path)
            return f"build {path}:{st.st_size}:{st.st_mtime_ns}"
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "-"


def _file_identity(module: str) -> str:
    """A module's file (path, size, mtime: a reinstall changes them), found, not imported."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return "-"
    path = spec.origin if spec is not None else None
    if not path:
        return "-"
    try:
        st = os.stat(path)
    except OSError:
        return "-"
    return f"file {path}:{st.st_size}:{st.st_mtime_ns}"


def cache_key() -> bytes:
    """Library versions and the detection code: what every entry was produced by."""
    h = hashlib.sha256()
    for name in _LIBRARIES:
        h.update(f"{name}={_version(name)}\n".encode())
    here = Path(__file__).parent
    for name in _CODE:
        with contextlib.suppress(OSError):
            h.update(name.encode() + b"\0" + (here / name).read_bytes())
    return h.digest()


class PackCache:
    """Entries read from one cache file, those used this run, and whether any was new."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self.key = cache_key()
        self._old: dict[str, bytes] = self._read() if path else {}
        self._used: dict[str, bytes] = {}
        self.hits = 0
        self.misses = 0
        self._saved_misses = 0

    def _read(self) -> dict[str, bytes]:
        assert self.path is not None
        try:
            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            return {}
        try:
            st = os.fstat(fd)
            # Ours, a regular file, nobody else may write it: else it is not trusted.
            if (not stat.S_ISREG(st.st_mode) or st.st_mode & 0o022 or st.st_size > MAX_BYTES
                    or (hasattr(os, "geteuid") and st.st_uid != os.geteuid())):
                return {}
            with os.fdopen(fd, "rb", closefd=False) as fh:
                data = fh.read(MAX_BYTES + 1)
        except OSError:
            return {}
        finally:
            os.close(fd)
        if not data.startswith(_MAGIC):
            return {}
        try:
            record = _file_decoder.decode(data[len(_MAGIC):])
            if record.key != self.key or hashlib.sha256(record.payload).digest() != record.digest:
                return {}
            return _entries_decoder.decode(record.payload)
        except msgspec.DecodeError:
            return {}

    def get(self, kind: str, data: bytes, build: Callable[[], T], encode: Callable[[T], bytes],
            decode: Callable[[bytes], T]) -> T:
        """The value for ``data`` (an entry's whole input) from the cache, else built and kept."""
        name = kind + ":" + hashlib.sha256(data).hexdigest()
        raw = self._old.get(name)
        if raw is not None:
            try:
                value = decode(raw)
            except Exception:  # an entry that does not decode is rebuilt, never trusted
                self._old.pop(name)
            else:
                self._used[name] = raw
                self.hits += 1
                return value
        value = build()
        with contextlib.suppress(Exception):  # a value that cannot be kept is simply not kept
            self._used[name] = encode(value)
        self.misses += 1
        return value

    def save(self) -> None:
        """Write the entries this run used, when one was missing since the last save (0600,
        atomically)."""
        if not self.path or self.misses == self._saved_misses:
            return
        self._saved_misses = self.misses
        payload = msgspec.msgpack.encode(self._used)
        data = _MAGIC + msgspec.msgpack.encode(_File(self.key, hashlib.sha256(payload).digest(), payload))
        directory = os.path.dirname(self.path) or "."
        try:
            fd, tmp = tempfile.mkstemp(prefix=".rules.cache.", dir=directory)  # 0600
        except OSError:
            return  # a read-only or missing directory: the next run compiles again
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, self.path)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


_active: PackCache | None = None


def cached(kind: str, data: bytes, build: Callable[[], T], encode: Callable[[T], bytes],
           decode: Callable[[bytes], T]) -> T:
    """Through the active cache (see :func:`using`), or just ``build()`` without one."""
    cache = _active
    if cache is None:
        return build()
    return cache.get(kind, data, build, encode, decode)


def current() -> PackCache | None:
    """The active cache (inside :func:`using`), for what is compiled later (:func:`resumed`)."""
    return _active


@contextlib.contextmanager
def resumed(pack: PackCache | None) -> Iterator[None]:
    """Compile more with a cache an earlier :func:`using` opened (the screen's Hyperscan
    databases, built on the first large batch); entries it gains are saved."""
    global _active
    if pack is None:
        yield
        return
    previous, _active = _active, pack
    try:
        yield
        pack.save()
    finally:
        _active = previous


@contextlib.contextmanager
def using(path: str | None) -> Iterator[PackCache | None]:
    """Compile with the cache at ``path`` (``None``: no cache, everything is compiled)."""
    global _active
    if not path:
        yield None
        return
    previous, _active = _active, PackCache(path)
    try:
        yield _active
        _active.save()
    finally:
        _active = previous


def path_beside(state_path: str) -> str:
    """The cache file for a state: in the state's directory (same owner, 0700)."""
    return os.path.join(os.path.dirname(os.path.abspath(state_path)), FILE_NAME)


def encode(value: Any) -> bytes:
    return msgspec.msgpack.encode(value)
