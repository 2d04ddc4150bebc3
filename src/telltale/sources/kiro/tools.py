"""Kiro CLI tools (``kiro-cli``, formerly Amazon Q Developer CLI) and their facets."""

from __future__ import annotations

from typing import Any

from telltale.sources._jsonl_driver import ToolFacets

#: Arguments that carry authored text (commands, written content, replacements).
AUTHORED_KEYS = ("command", "file_text", "new_str", "old_str", "content", "text", "patch")

_facets = ToolFacets(
    shell=frozenset({"execute_bash", "executeBash", "execute_cmd", "shell"}),
    files=frozenset({"fs_read", "fs_write", "read", "write", "fsRead", "fsWrite", "glob", "grep"}),
    urls=frozenset({"web_fetch", "fetch"}),
    path_keys=("path", "file_path", "filePath"),
    writes=frozenset({"fs_write", "write", "fsWrite"}),
    reads=frozenset({"fs_read", "read", "fsRead", "glob", "grep"}),
)


def facets(name: str | None, args: Any) -> dict[str, str]:
    """``fs_read`` puts its path inside ``operations[0]`` in newer builds."""
    out = _facets(name, args)
    if not out and name in ("fs_read", "fsRead") and isinstance(args, dict):
        ops = args.get("operations")
        if isinstance(ops, list) and ops and isinstance(ops[0], dict):
            out = _facets(name, ops[0])
    return out
