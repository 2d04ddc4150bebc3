"""Store directories an agent names itself: its own index file or its own variables.

A :class:`~telltale.sources.spec.SourceSpec` whose stores cannot all be reached from a
fixed path below a host root (Crush keeps one database per project and lists the projects
in an index; Goose re-roots its data with ``GOOSE_PATH_ROOT``) names a *locator*:
``"module:function"``, a function taking a :class:`LocatorContext` and returning
``(directory, found_by)`` pairs. Discovery walks those directories with the spec's own
patterns, like any other store directory, in environment-resolved and explicit-root
modes (never in a fixture tree). The vendor knowledge (file names, variables, the index
format) stays in the agent's package.

A locator may read small files (an index) through :meth:`LocatorContext.read_small`:
bounded, a link never followed, a failure a discovery issue — never a crash.
"""

from __future__ import annotations

import importlib
import os
import stat
from collections.abc import Callable

import msgspec

from telltale.discovery.roots import EnvView, Flavour, RootSet
from telltale.discovery.walk import Probe, error_token

#: The largest index file a locator reads.
MAX_INDEX_BYTES = 1 << 20


class LocatorContext(msgspec.Struct, frozen=True):
    """What a locator may use: the host roots, the environment (``None`` when an explicit
    ``--root`` says no environment is read) and bounded reads through the probe."""

    probe: Probe
    roots: RootSet
    env: EnvView | None

    @property
    def flavour(self) -> Flavour:
        return self.roots.flavour

    def getenv(self, name: str) -> str | None:
        return self.env.get(name) if self.env is not None else None

    def read_small(self, path: str, limit: int = MAX_INDEX_BYTES) -> bytes | None:
        """A small regular file's bytes; ``None`` (and an issue unless it is absent) otherwise."""
        st = self.probe.lstat(path)
        if st is None:
            return None
        if not stat.S_ISREG(st.st_mode):
            reason = "symlink" if stat.S_ISLNK(st.st_mode) else "not_regular_file"
            self.probe.report(reason, path, "index not read")
            return None
        if st.st_size > limit:
            self.probe.report("too_large", path, f"index larger than {limit} bytes")
            return None
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
        try:
            fd = os.open(self.probe.host(path), flags)
            with os.fdopen(fd, "rb") as handle:
                return handle.read(limit + 1)[:limit]
        except OSError as exc:
            self.probe.report("unreadable", path, error_token(exc))
            return None


Locator = Callable[[LocatorContext], list[tuple[str, str]]]


def load_locator(name: str) -> Locator:
    """The function a spec's ``locator`` names (``"module:function"``)."""
    module_name, _, attr = name.partition(":")
    locator: Locator = getattr(importlib.import_module(module_name), attr)
    return locator
