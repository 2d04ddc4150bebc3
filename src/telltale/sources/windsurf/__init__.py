"""Windsurf (Codeium): Cascade conversations, encrypted at rest.

Cascade keeps each conversation as ``~/.codeium/windsurf/cascade/<id>.pb`` (Windsurf Next:
``~/.codeium/windsurf-next``; ``%USERPROFILE%\\.codeium`` on Windows), with ``implicit/``
and ``memories/`` ``.pb`` siblings. The files are high-entropy, neither compressed nor
plain protobuf: encrypted, with no public key. Telltale finds them and reports them
``unsupported`` (``encrypted``) so a host running Windsurf is visible; it never opens
them. See docs/sources/windsurf.md.
"""

from __future__ import annotations

from telltale.sources.spec import RootType, SourceSpec, UnsupportedReason

SPECS = (
    SourceSpec(
        client="windsurf",
        kind="windsurf.cascade",
        root_type=RootType.HOME,
        relative_path=".codeium/windsurf",
        also_relative_paths=(".codeium/windsurf-next",),
        file_patterns=("*.pb",),
        recursive=True,
        fixture_relative_path="windsurf/cascade",
        adapter="",
        unsupported=UnsupportedReason.ENCRYPTED,
        description="Windsurf Cascade conversations and memories (encrypted .pb)",
    ),
)

__all__ = ["SPECS"]
