"""Where Crush keeps its databases: per project, listed in its global ``projects.json``.

Crush writes ``<project>/.crush/crush.db`` (the data directory can be configured per
project) and records every project it ran in ``<global data>/projects.json``:
``{"projects": [{"path": …, "data_dir": …, "last_accessed": …}]}``. The global data
directory is ``$CRUSH_GLOBAL_DATA``, else ``$XDG_DATA_HOME/crush``, else
``~/.local/share/crush`` (Linux, macOS) or ``%LOCALAPPDATA%\\crush`` (Windows)
(formats-more.md §7). The index lets discovery find databases outside the configured
project roots; the project roots find the rest (``.crush`` below each root).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from telltale.discovery.roots import Platform

if TYPE_CHECKING:
    from telltale.discovery.locate import LocatorContext

INDEX_FILE = "projects.json"
DATA_DIR = ".crush"
#: Projects read from one index (newest first is not guaranteed: the first ones).
MAX_PROJECTS = 10_000

_decoder = msgspec.json.Decoder()


def global_data_dirs(ctx: LocatorContext) -> list[tuple[str, str]]:
    """Candidate global data directories, each with how it was found."""
    flavour = ctx.flavour
    out: list[tuple[str, str]] = []
    for name in ("CRUSH_GLOBAL_DATA",):
        value = ctx.getenv(name)
        if value:
            out.append((value, f"env:{name}"))
    xdg = ctx.getenv("XDG_DATA_HOME")
    if xdg:
        out.append((flavour.join(xdg, "crush"), "env:XDG_DATA_HOME"))
    home = ctx.roots.home
    if flavour.platform is Platform.WINDOWS:
        local = ctx.getenv("LOCALAPPDATA")
        if local:
            out.append((flavour.join(local, "crush"), "env:LOCALAPPDATA"))
        if home:
            out.append((flavour.join(home, "AppData", "Local", "crush"), "home"))
    elif home:
        out.append((flavour.join(home, ".local", "share", "crush"), "home"))
    return out


def project_data_dirs(data: bytes, flavour: Any) -> list[str]:
    """The data directories an index lists (``data_dir`` absolute, or relative to ``path``)."""
    try:
        doc = _decoder.decode(data)
    except (msgspec.DecodeError, RecursionError):
        return []
    projects = doc.get("projects") if isinstance(doc, dict) else None
    if not isinstance(projects, list):
        return []
    dirs: list[str] = []
    for entry in projects[:MAX_PROJECTS]:
        if not isinstance(entry, dict):
            continue
        path, data_dir = entry.get("path"), entry.get("data_dir")
        if not isinstance(path, str) or not path or "\x00" in path:
            continue
        if not isinstance(data_dir, str) or not data_dir or "\x00" in data_dir:
            data_dir = DATA_DIR
        dirs.append(flavour.normpath(data_dir if flavour.isabs(data_dir) else flavour.join(path, data_dir)))
    return dirs


def locate(ctx: LocatorContext) -> list[tuple[str, str]]:
    """Every project data directory the Crush indexes on this host name."""
    pairs: list[tuple[str, str]] = []
    seen: set[str] = set()
    for directory, _found_by in global_data_dirs(ctx):
        data = ctx.read_small(ctx.flavour.join(directory, INDEX_FILE))
        if data is None:
            continue
        for data_dir in project_data_dirs(data, ctx.flavour):
            key = ctx.flavour.key(data_dir)
            if key not in seen:
                seen.add(key)
                pairs.append((data_dir, "crush_index"))
    return pairs
