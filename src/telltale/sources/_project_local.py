"""Project-local stores (Aider's chat files, Crush's ``.crush/crush.db``): own or cloned?

A store found inside a repository may be the user's own activity, or history someone
else committed by accident and the user merely cloned (thousands of public repositories
carry ``.aider.chat.history.md`` or ``.crush/crush.db``). Telltale cannot know who wrote
the bytes, but it can tell whether git tracks the file: a tracked store came (or will go)
through git, so it may be another person's history. Every observation of such a source
carries ``attributes["project_store"]``:

* ``tracked`` – the repository's index lists the file: committed, possibly cloned history;
* ``untracked`` – the project is a git work tree whose index does not list it (the usual
  case: Aider and Crush add themselves to ``.gitignore``), so it was written here;
* ``no_git`` – no ``.git`` directory at the project root;
* ``unknown`` – the index could not be read within bounds (a ``.git`` file of a linked
  work tree, an index over :data:`MAX_INDEX_BYTES`, an unknown index version).

Only ``<project>/.git/index`` is read (bounded, no link followed); nothing else in ``.git``
is opened, and nothing is ever written.
"""

from __future__ import annotations

import os
import stat

#: A larger index is not read (``unknown``): huge monorepos are not worth the bytes.
MAX_INDEX_BYTES = 64 << 20

TRACKED = "tracked"
UNTRACKED = "untracked"
NO_GIT = "no_git"
UNKNOWN = "unknown"

_ENTRY_FIXED = 62  # ctime, mtime, dev, ino, mode, uid, gid, size (4 bytes each but times 8), sha1, flags
_EXTENDED = 0x4000


def git_status(project: str, relative: str) -> str:
    """Whether ``<project>/.git/index`` lists ``relative`` (``/``-separated); see module doc."""
    git_dir = os.path.join(project, ".git")
    try:
        st = os.lstat(git_dir)
    except OSError:
        return NO_GIT
    if not stat.S_ISDIR(st.st_mode):
        return UNKNOWN  # a linked work tree's ``.git`` file, or a link: not followed
    index = os.path.join(git_dir, "index")
    try:
        fd = os.open(index, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0))
    except FileNotFoundError:
        return UNTRACKED  # a fresh repository without an index tracks nothing
    except OSError:
        return UNKNOWN
    try:
        size = os.fstat(fd).st_size
        if size > MAX_INDEX_BYTES:
            return UNKNOWN
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(MAX_INDEX_BYTES + 1)
    except OSError:
        return UNKNOWN
    finally:
        os.close(fd)
    paths = index_paths(data)
    if paths is None:
        return UNKNOWN
    return TRACKED if relative.encode("utf-8", "surrogateescape") in paths else UNTRACKED


def index_paths(data: bytes) -> set[bytes] | None:
    """The paths a git index (versions 2-4) lists, or ``None`` when it cannot be parsed.

    Bounded by the data: every step consumes bytes, and the entry count in the header is
    checked against what is there.
    """
    if len(data) < 12 or data[:4] != b"DIRC":
        return None
    version = int.from_bytes(data[4:8], "big")
    count = int.from_bytes(data[8:12], "big")
    if version not in (2, 3, 4) or count > len(data) // _ENTRY_FIXED + 1:
        return None
    paths: set[bytes] = set()
    pos = 12
    previous = b""
    for _ in range(count):
        if pos + _ENTRY_FIXED > len(data):
            return None
        flags = int.from_bytes(data[pos + 60:pos + 62], "big")
        start = pos + _ENTRY_FIXED
        if version >= 3 and flags & _EXTENDED:
            start += 2
        if version == 4:
            strip, start = _varint(data, start)
            if strip is None or strip > len(previous):
                return None
            end = data.find(b"\x00", start)
            if end < 0:
                return None
            path = previous[:len(previous) - strip] + data[start:end]
            pos = end + 1
        else:
            end = data.find(b"\x00", start)
            if end < 0:
                return None
            path = data[start:end]
            # Entries are padded with 1-8 NULs to a multiple of 8 bytes from the entry start.
            length = end - pos
            pos += (length + 8) & ~7
        paths.add(path)
        previous = path
    return paths


def _varint(data: bytes, pos: int) -> tuple[int | None, int]:
    """Git's offset varint (index v4 path prefix length)."""
    if pos >= len(data):
        return None, pos
    byte = data[pos]
    value = byte & 0x7F
    pos += 1
    steps = 0
    while byte & 0x80:
        if pos >= len(data) or steps > 8:
            return None, pos
        byte = data[pos]
        value = ((value + 1) << 7) | (byte & 0x7F)
        pos += 1
        steps += 1
    return value, pos
