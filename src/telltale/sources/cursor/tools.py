"""Cursor's tool vocabulary: which arguments are a command line, a file path or a URL.

Two generations name the same tools differently: the agent (transcripts, 2026 IDE
bubbles) uses ``Shell``/``Read``/``Write``/``StrReplace``…, the older IDE composer uses
``run_terminal_cmd``/``read_file``/``edit_file``…. Both map to the canonical facets here,
so detection never sees a vendor argument name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: Tools whose ``command`` is a shell command line.
SHELL_TOOLS = frozenset({
    "Shell", "run_terminal_cmd", "run_terminal_command", "run_terminal_command_v2",
})
#: File tools that only read (or list, or search) their path: the ``file_access`` facet.
READ_TOOLS = frozenset({
    "Read", "Glob", "Grep", "LS", "ReadLints",
    "read_file", "read_file_v2", "list_dir", "list_directory", "grep", "ripgrep", "grep_search",
    "file_search", "glob_file_search",
})
#: File tools that create, edit, patch or delete their path.
WRITE_TOOLS = frozenset({
    "Write", "StrReplace", "Delete", "EditNotebook", "ApplyPatch", "MultiEdit", "Edit",
    "edit_file", "edit_file_v2", "search_replace", "write", "reapply", "delete_file", "apply_patch",
    "edit_notebook",
})
FILE_TOOLS = READ_TOOLS | WRITE_TOOLS
#: Tools that fetch a URL.
URL_TOOLS = frozenset({"WebFetch", "mcp_web_fetch", "fetch", "web_fetch", "fetch_url"})

#: Argument keys holding a path, in preference order.
PATH_KEYS = (
    "path", "file_path", "target_file", "relativeWorkspacePath", "relative_workspace_path",
    "target_notebook", "target_directory", "targetFile", "filePath",
)
#: Argument keys holding a command line / URL.
COMMAND_KEYS = ("command", "cmd")
URL_KEYS = ("url", "uri")
#: Arguments that carry authored text (commands, written content, edit strings, prompts).
AUTHORED_KEYS = (
    "command", "contents", "content", "code_edit", "old_string", "new_string", "patch", "prompt",
    "instructions", "streamingContent",
)


def _first(args: Mapping[str, Any], keys: tuple[str, ...]) -> str | None:
    for key in keys:
        value = args.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def facets(tool: str | None, *argument_sets: object) -> dict[str, str]:
    """The canonical facets of one tool call, from the first argument set that has them.

    A listed file tool also says whether it reads or writes its path (``file_access``),
    so written and read paths reach the same rules as shell redirections do.

    A tool we do not list still gets a path or URL facet when its arguments carry an
    unambiguous key for one (MCP tools and new tools keep feeding path and URL rules);
    only a listed shell tool gets a ``command``.
    """
    if tool is None:
        return {}
    for args in argument_sets:
        if not isinstance(args, Mapping):
            continue
        if tool in SHELL_TOOLS:
            value = _first(args, COMMAND_KEYS)
            if value is not None:
                return {"command": value}
            continue
        if tool in URL_TOOLS:
            value = _first(args, URL_KEYS)
            if value is not None:
                return {"url": value}
            continue
        value = _first(args, PATH_KEYS)
        if value is not None:
            if tool in WRITE_TOOLS:
                return {"file_path": value, "file_access": "write"}
            if tool in READ_TOOLS:
                return {"file_path": value, "file_access": "read"}
            return {"file_path": value}  # the normalisation stage decides from the arguments
        if tool not in FILE_TOOLS:
            value = _first(args, ("url",))
            if value is not None:
                return {"url": value}
    return {}
