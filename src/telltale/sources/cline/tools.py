"""Cline-family tools: names, the facets their inputs carry, and the two eras' call syntax.

XML era: the assistant writes ``<execute_command><command>ls</command></execute_command>``
in its text and the next user message answers ``[execute_command for 'ls'] Result:``.
Native era: ``tool_use`` blocks with ids, answered by the same positional text (Cline) or
by ``tool_result`` blocks (Roo). Everything here is pure string work, linear in its input.
"""

from __future__ import annotations

import re
from typing import Any

from telltale.sources._jsonl_driver import first_str

#: Tools of the three forks (Cline, Roo Code, Kilo Code), XML and native names alike.
TOOL_NAMES = frozenset(
    {
        "execute_command", "read_file", "write_to_file", "replace_in_file", "apply_diff",
        "insert_content", "search_and_replace", "search_replace", "edit_file", "apply_patch",
        "search_files", "list_files", "list_code_definition_names", "codebase_search",
        "browser_action", "web_fetch", "web_search", "use_mcp_tool", "access_mcp_resource",
        "load_mcp_documentation", "ask_followup_question", "attempt_completion",
        "plan_mode_respond", "act_mode_respond", "new_task", "switch_mode", "fetch_instructions",
        "new_rule", "condense", "summarize_task", "report_bug", "update_todo_list",
        "run_slash_command", "generate_image", "use_subagents", "focus_chain",
    }
)
_SHELL = frozenset({"execute_command"})
_FILES = frozenset(
    {
        "read_file", "write_to_file", "replace_in_file", "apply_diff", "insert_content",
        "search_and_replace", "search_replace", "edit_file", "search_files", "list_files",
        "list_code_definition_names", "new_rule", "generate_image",
    }
)
_URLS = frozenset({"browser_action", "web_fetch"})
#: Inputs that carry authored text (commands, written content, diffs, prompts).
AUTHORED_KEYS = (
    "command", "content", "diff", "result", "question", "message", "response", "regex",
    "search", "replace", "old_string", "new_string", "args", "arguments", "todos", "prompt", "query",
)
#: Tool calls parsed from one assistant message at most (XML era).
MAX_CALLS = 64
#: Parameters parsed from one XML tool call at most.
MAX_PARAMS = 32

_OPEN_TAG = re.compile(r"<(" + "|".join(sorted(TOOL_NAMES)) + r")>")
_PARAM_TAG = re.compile(r"<([a-z_]{1,64})>")
_PATH_TAG = "<path>"


def facets(tool: str | None, args: Any) -> dict[str, str]:
    """``command`` / ``file_path`` / ``url`` (and MCP names as attributes) of one call."""
    if tool is None or not isinstance(args, dict):
        return {}
    if tool in _SHELL:
        value = first_str(args, ("command",))
        return {"command": value} if value else {}
    if tool in _FILES:
        value = first_str(args, ("path", "file_path", "target_file", "absolutePath"))
        if value is None:
            value = _nested_path(args.get("args"))
        if value is None:
            files = args.get("files")
            if isinstance(files, list) and files and isinstance(files[0], dict):
                value = first_str(files[0], ("path",))
        return {"file_path": value} if value else {}
    if tool in _URLS:
        value = first_str(args, ("url",))
        return {"url": value} if value else {}
    return {}


def mcp_attributes(tool: str | None, args: Any) -> dict[str, str]:
    """The MCP server and tool a ``use_mcp_tool`` / ``access_mcp_resource`` call names."""
    if tool not in ("use_mcp_tool", "access_mcp_resource") or not isinstance(args, dict):
        return {}
    out: dict[str, str] = {}
    server = first_str(args, ("server_name", "serverName"))
    name = first_str(args, ("tool_name", "toolName"))
    if server:
        out["mcp_server"] = server[:256]
    if name:
        out["mcp_tool"] = name[:256]
    return out


def _nested_path(value: object) -> str | None:
    """Roo's multi-file ``read_file``: ``<args><file><path>a.ts</path></file></args>``."""
    if not isinstance(value, str):
        return None
    start = value.find(_PATH_TAG)
    if start < 0:
        return None
    start += len(_PATH_TAG)
    end = value.find("</path>", start)
    return value[start:end].strip() or None if end > start else None


def xml_calls(text: str) -> list[tuple[str, dict[str, str]]]:
    """XML-era tool calls written in assistant text, in order: ``(name, parameters)``.

    Each opening tag of a known tool is matched with the first closing tag after it; an
    unclosed call (the model stopped) is ignored. Parameters are the top-level
    ``<name>value</name>`` children, their values stripped of one surrounding newline.
    """
    calls: list[tuple[str, dict[str, str]]] = []
    pos = 0
    while len(calls) < MAX_CALLS:
        match = _OPEN_TAG.search(text, pos)
        if match is None:
            break
        name = match.group(1)
        close = f"</{name}>"
        end = text.find(close, match.end())
        if end < 0:
            break
        calls.append((name, _params(text[match.end():end])))
        pos = end + len(close)
    return calls


def _params(body: str) -> dict[str, str]:
    params: dict[str, str] = {}
    pos = 0
    while len(params) < MAX_PARAMS:
        match = _PARAM_TAG.search(body, pos)
        if match is None:
            break
        key = match.group(1)
        close = f"</{key}>"
        end = body.find(close, match.end())
        if end < 0:
            break
        value = body[match.end():end]
        if value.startswith("\n"):
            value = value[1:]
        if value.endswith("\n"):
            value = value[:-1]
        params.setdefault(key, value)
        pos = end + len(close)
    return params


def result_header(text: str) -> tuple[str, str, bool] | None:
    """``("execute_command", rest, False)`` for ``[execute_command for 'ls'] Result:<rest>``.

    Also ``[read_file] Result:`` and ``... Error:`` headers (the flag says which); ``rest``
    is what follows the header in the same block (empty in the XML era, where the body is
    the next block).
    """
    if not text.startswith("["):
        return None
    first_line_end = text.find("\n")
    line = text if first_line_end < 0 else text[:first_line_end]
    for marker in ("] Result:", "] Error:"):
        at = line.find(marker)
        if at > 1:
            name = line[1:at].split(" ", 1)[0]
            if not name.replace("_", "").isalnum():
                return None
            return name, text[at + len(marker):].lstrip("\n"), marker == "] Error:"
    return None


_INJECTED_PREFIXES = (
    "<environment_details>", "# TODO LIST", "[TASK RESUMPTION]", "# task_progress", "<explicit_instructions",
)


def injected(text: str) -> bool:
    """Context the extension added to a user message (not the user's words)."""
    return text.lstrip().startswith(_INJECTED_PREFIXES)


_CWD = re.compile(r"# Current (?:Working Directory|Workspace Directory) \(([^)\n]{1,4096})\)")


def working_directory(text: str) -> str | None:
    """The workspace named in ``<environment_details>``: ``# Current Working Directory (X) Files``."""
    match = _CWD.search(text)
    return match.group(1) if match else None
