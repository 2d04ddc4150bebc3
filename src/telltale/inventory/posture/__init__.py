"""Configuration posture of installed agents, read from the agents' own settings files only.

Never a transcript, never a credential file: each reader names its files explicitly. The
package is split so that vendor field names stay in that vendor's module (``claude``,
``codex``, ``opencode``; Gemini CLI's and Qwen Code's reader lives in the Gemini package,
``telltale.sources.gemini.posture``) and ``common`` holds only
vendor-neutral reading and sanitizing. This module keeps the public API in one place.
"""

from __future__ import annotations

from collections.abc import Callable

from telltale.inventory.model import Posture
from telltale.inventory.posture.claude import (
    CLAUDE_DEFAULT_CLEANUP_DAYS,
    CLAUDE_GLOBAL_BOUND,
    MAX_PROJECTS,
    read_claude,
)
from telltale.inventory.posture.codex import read_codex
from telltale.inventory.posture.common import (
    CREDENTIAL_FILE_NAMES,
    MAX_MCP_SERVERS,
    SETTINGS_BOUND,
    PostureContext,
    command_basename,
    env_names,
    header_names,
    read_bounded,
    server_name,
    strip_jsonc,
    token,
    truthy,
    url_host,
)
from telltale.inventory.posture.opencode import read_opencode
from telltale.sources.cline.posture import read_cline, read_kilo, read_roo
from telltale.sources.crush.posture import read_crush
from telltale.sources.cursor.posture import read_cursor
from telltale.sources.gemini.posture import parse_age_days, read_gemini, read_qwen
from telltale.sources.goose.posture import read_goose

#: Posture readers by the key named in ``AgentProbe.posture``.
READERS: dict[str, Callable[[PostureContext], Posture]] = {
    "cline": read_cline,
    "roo": read_roo,
    "kilo": read_kilo,
    "claude": read_claude,
    "codex": read_codex,
    "gemini": read_gemini,
    "qwen": read_qwen,
    "opencode": read_opencode,
    "cursor": read_cursor,
    "goose": read_goose,
    "crush": read_crush,
}

__all__ = [
    "CLAUDE_DEFAULT_CLEANUP_DAYS",
    "CLAUDE_GLOBAL_BOUND",
    "CREDENTIAL_FILE_NAMES",
    "MAX_MCP_SERVERS",
    "MAX_PROJECTS",
    "READERS",
    "SETTINGS_BOUND",
    "PostureContext",
    "command_basename",
    "env_names",
    "header_names",
    "parse_age_days",
    "read_bounded",
    "read_claude",
    "read_codex",
    "read_cursor",
    "read_gemini",
    "read_opencode",
    "read_qwen",
    "server_name",
    "strip_jsonc",
    "token",
    "truthy",
    "url_host",
]
