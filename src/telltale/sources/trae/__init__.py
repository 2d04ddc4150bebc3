"""Trae (ByteDance): the agent database of current builds, encrypted at rest.

Current builds keep the agent's conversations in ``<Trae data>/ModularData/ai-agent/database.db``
beside the editor's ``User`` folder (``~/Library/Application Support/Trae``,
``%APPDATA%\\Trae``, ``~/.config/Trae``; ``Trae CN`` for the Chinese edition). The file
has no SQLite header: it is encrypted (SQLCipher-like), with no public key. Telltale
finds it and reports it ``unsupported`` (``encrypted``), never opening it. TRAE CLI
writes Codex-format rollouts under ``~/.trae/cli``, which a Codex root could read. See
docs/sources/trae.md.
"""

from __future__ import annotations

from telltale.sources.spec import RootType, SourceSpec, UnsupportedReason

_AGENT_DB = "ModularData/ai-agent"
_PRODUCTS = ("Trae", "Trae CN")
_BASES = ("Library/Application Support", "AppData/Roaming", ".config")

SPECS = (
    SourceSpec(
        client="trae",
        kind="trae.agent_db",
        root_type=RootType.HOME,
        relative_path=f"{_BASES[0]}/{_PRODUCTS[0]}/{_AGENT_DB}",
        also_relative_paths=tuple(
            f"{base}/{product}/{_AGENT_DB}" for base in _BASES for product in _PRODUCTS
        )[1:],
        env_paths=(("APPDATA", f"Trae/{_AGENT_DB}"), ("XDG_CONFIG_HOME", f"Trae/{_AGENT_DB}")),
        file_patterns=("database.db",),
        recursive=False,
        fixture_relative_path="trae/ai-agent",
        adapter="",
        unsupported=UnsupportedReason.ENCRYPTED,
        description="Trae agent database (encrypted, no SQLite header)",
    ),
)

__all__ = ["SPECS"]
