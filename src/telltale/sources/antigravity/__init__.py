"""Antigravity (Google's IDE) and the Antigravity CLI (``agy``): ``~/.gemini/antigravity*``.

Only one of their stores is plain text: the CLI's prompt log ``history.jsonl`` (one line
per user prompt), which :mod:`.history` reads. Conversations are kept as per-conversation
SQLite files whose ``steps`` rows are protobuf without a published schema
(``no_decoder``) and, in older builds and the ``implicit/`` folder, as AES-encrypted
``.pb`` files (``encrypted``). Those are discovered and reported ``unsupported``, never
opened, so a host running Antigravity is visible even where its activity is not.
See docs/sources/antigravity.md.
"""

from __future__ import annotations

from typing import Any

from telltale.sources.lazy import export
from telltale.sources.spec import RootType, SourceSpec, UnsupportedReason

CLIENT = "antigravity"
#: The IDE's and the CLI's data folders below the home directory.
_IDE = ".gemini/antigravity"
_CLI = ".gemini/antigravity-cli"

SPECS = (
    SourceSpec(
        client=CLIENT,
        kind="antigravity.history",
        root_type=RootType.HOME,
        relative_path=_CLI,
        file_patterns=("history.jsonl",),
        recursive=False,
        fixture_relative_path="antigravity/cli",
        adapter="telltale.sources.antigravity:AntigravityHistoryAdapter",
        description="Antigravity CLI prompt log (history.jsonl)",
    ),
    SourceSpec(
        client=CLIENT,
        kind="antigravity.conversations",
        root_type=RootType.HOME,
        relative_path=_IDE,
        also_relative_paths=(_CLI,),
        file_patterns=("*.db",),
        parent_dir="conversations",
        recursive=True,
        fixture_relative_path="antigravity/conversations",
        adapter="",
        unsupported=UnsupportedReason.NO_DECODER,
        description="Antigravity conversation databases (protobuf steps, no public schema)",
    ),
    SourceSpec(
        client=CLIENT,
        kind="antigravity.encrypted",
        root_type=RootType.HOME,
        relative_path=_IDE,
        also_relative_paths=(_CLI,),
        file_patterns=("*.pb",),
        recursive=True,
        fixture_relative_path="antigravity/encrypted",
        adapter="",
        unsupported=UnsupportedReason.ENCRYPTED,
        description="Antigravity encrypted conversation and implicit-context files (.pb)",
    ),
)


_LAZY = {"AntigravityHistoryAdapter": ".history"}


def __getattr__(name: str) -> Any:
    return export(__name__, name, _LAZY)

__all__ = ["CLIENT", "SPECS", "AntigravityHistoryAdapter"]
