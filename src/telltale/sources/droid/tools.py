"""Droid's built-in tools and the facets their arguments carry."""

from __future__ import annotations

from typing import Any

from telltale.sources._jsonl_driver import ToolFacets

#: Arguments that carry authored text (commands, written content, edits, patches).
AUTHORED_KEYS = ("command", "content", "old_str", "new_str", "old_string", "new_string", "edits", "patch", "input")

_facets = ToolFacets(
    shell=frozenset({"Execute"}),
    files=frozenset({"Read", "LS", "Grep", "Glob", "Create", "Edit", "MultiEdit"}),
    urls=frozenset({"FetchUrl"}),
    path_keys=("file_path", "path", "directory_path", "filePath"),
    writes=frozenset({"Create", "Edit", "MultiEdit"}),
    reads=frozenset({"Read", "LS", "Grep", "Glob"}),
)


def facets(name: str | None, args: Any) -> dict[str, str]:
    return _facets(name, args)
