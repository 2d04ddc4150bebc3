"""Where Cursor's agent transcripts sit below ``~/.cursor/projects`` (a walk rule, no I/O).

``<slug>/agent-transcripts/`` holds three generations side by side:

* ``<chatId>/<chatId>.jsonl`` — one chat (2026 layout);
* ``<chatId>/subagents/<subagentId>.jsonl`` — a subagent the chat started;
* ``<chatId>.txt`` / ``<chatId>.jsonl`` directly inside — the older flat layout.

Everything else in a project folder (``terminals/``, ``agent-tools/``, ``mcps/`` …) is not
a transcript, and the walk does not enter it.
"""

from __future__ import annotations

TRANSCRIPT_KIND = "cursor.agent_transcripts"
WORKSPACE_DB_KIND = "cursor.ide_workspace"
CLI_CHATS_KIND = "cursor.cli_chats"
TRANSCRIPTS_DIR = "agent-transcripts"
SUBAGENTS_DIR = "subagents"
#: Levels below the store root at which transcripts sit (``<slug>/…/subagents/<id>.jsonl``).
TRANSCRIPT_DEPTH = 5


def transcript_file(dirs: tuple[str, ...], name: str) -> bool:
    """Whether ``name`` in the directory reached through ``dirs`` is a transcript."""
    if len(dirs) < 2 or dirs[1] != TRANSCRIPTS_DIR:
        return False
    if len(dirs) == 2:
        return name.endswith((".jsonl", ".txt"))
    if len(dirs) == 3:
        return name == dirs[2] + ".jsonl"
    return len(dirs) == 4 and dirs[3] == SUBAGENTS_DIR and name.endswith(".jsonl")


def transcript_dir(dirs: tuple[str, ...], name: str) -> bool:
    """Whether the walk enters subdirectory ``name`` of the directory reached through ``dirs``."""
    if len(dirs) == 1:
        return name == TRANSCRIPTS_DIR
    if len(dirs) == 3:
        return name == SUBAGENTS_DIR
    return len(dirs) in (0, 2)


def transcript_location(relative: tuple[str, ...]) -> tuple[str, str, str | None] | None:
    """``(project slug, session id, parent session id)`` of a transcript from its path parts
    below the store root, or ``None`` when the path is not a transcript's."""
    if len(relative) < 3 or relative[1] != TRANSCRIPTS_DIR:
        return None
    slug, name = relative[0], relative[-1]
    stem = name.rsplit(".", 1)[0]
    if len(relative) == 3:
        return slug, stem, None
    if len(relative) == 4:
        return slug, relative[2], None
    if len(relative) == 5 and relative[3] == SUBAGENTS_DIR:
        return slug, stem, relative[2]
    return None


def workspace_db(dirs: tuple[str, ...], name: str) -> bool:
    """``workspaceStorage/<workspace id>/state.vscdb``, nothing deeper."""
    return len(dirs) == 1


def workspace_dir(dirs: tuple[str, ...], name: str) -> bool:
    return not dirs


def cli_store(dirs: tuple[str, ...], name: str) -> bool:
    """``chats/<md5 of the cwd>/<chatId>/store.db``, nothing else."""
    return len(dirs) == 2
