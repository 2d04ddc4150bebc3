"""Where Gemini CLI's files sit below ``~/.gemini/tmp`` (walk rules, no I/O).

``<project>/chats/session-*.jsonl`` (and legacy ``session-*.json``), subagent chats in
``<project>/chats/<parent session id>/<id>.jsonl``, ``<project>/logs.json``. The walk
enters nothing else (``tool-outputs/``, ``checkpoints/``, ``plans/``, ``memory/`` …).
"""

from __future__ import annotations

CHATS_KIND = "gemini.chats"
LEGACY_KIND = "gemini.legacy_chats"
LOGS_KIND = "gemini.logs"
CHATS_DIR = "chats"


def chats_file(dirs: tuple[str, ...], name: str) -> bool:
    if len(dirs) == 2:
        return dirs[1] == CHATS_DIR and name.startswith("session-")
    return len(dirs) == 3 and dirs[1] == CHATS_DIR


def chats_dir(dirs: tuple[str, ...], name: str) -> bool:
    if len(dirs) == 1:
        return name == CHATS_DIR
    return len(dirs) == 0 or (len(dirs) == 2 and dirs[1] == CHATS_DIR)


def legacy_file(dirs: tuple[str, ...], name: str) -> bool:
    return len(dirs) == 2 and dirs[1] == CHATS_DIR


def legacy_dir(dirs: tuple[str, ...], name: str) -> bool:
    return len(dirs) == 0 or (len(dirs) == 1 and name == CHATS_DIR)


def logs_file(dirs: tuple[str, ...], name: str) -> bool:
    return len(dirs) == 1


def logs_dir(dirs: tuple[str, ...], name: str) -> bool:
    return len(dirs) == 0


def location(relative: tuple[str, ...]) -> tuple[str | None, str | None]:
    """``(project id, parent session id)`` of a file from its path parts below ``tmp``."""
    project = relative[0] if len(relative) >= 2 else None
    parent = relative[2] if len(relative) == 4 and relative[1] == CHATS_DIR else None
    return project, parent
