"""Continue's built-in tools and the facets their arguments carry."""

from __future__ import annotations

from typing import Any

from telltale.sources._jsonl_driver import ToolFacets

#: Arguments that carry authored text (commands, file contents, edits, queries).
AUTHORED_KEYS = ("command", "contents", "changes", "new_string", "old_string", "replacement", "query", "content")

_facets = ToolFacets(
    shell=frozenset({"run_terminal_command"}),
    files=frozenset(
        {
            "read_file", "read_file_range", "create_new_file", "edit_existing_file", "single_find_and_replace",
            "multi_edit", "view_subdirectory", "ls", "create_rule_block",
        }
    ),
    urls=frozenset({"fetch_url_content"}),
    path_keys=("filepath", "filepath", "dirPath", "path"),
)


def tool_name(name: str | None) -> str | None:
    """Older builds prefix built-in tools with ``builtin_``."""
    if name and name.startswith("builtin_"):
        return name[len("builtin_"):]
    return name


def facets(name: str | None, args: Any) -> dict[str, str]:
    return _facets(tool_name(name), args)
