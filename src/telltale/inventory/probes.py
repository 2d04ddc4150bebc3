"""The install-probe table, as data: which names are evidence of which agent, and where.

DESIGN.md places install probes in each vendor's module under ``telltale.sources``; while
those modules are being rewritten, the table lives here and ``signals.py`` interprets it.
Names were checked against public sources (see docs/inventory.md). Every location is a
home-relative (``~``) or system-relative path template; ``*`` matches one directory level.
"""

from __future__ import annotations

import msgspec

#: Launcher suffixes tried on Windows PATH entries, after the bare name (INV-8).
WINDOWS_LAUNCHER_SUFFIXES: tuple[str, ...] = (".exe", ".com", ".cmd", ".bat", ".ps1")


class DesktopProbe(msgspec.Struct, frozen=True, kw_only=True):
    """A fixed executable location of a desktop bundle, Windows only (INV-4..7).

    ``parts`` are home-relative segments; ``"*"`` segments match one directory level and
    the first ``*`` segment's name is reported as the version when ``version_from_glob``.
    """

    name: str
    parts: tuple[str, ...]
    version_from_glob: bool = False


class AppDataProbe(msgspec.Struct, frozen=True, kw_only=True):
    """A directory whose presence shows an editor product was run on this account."""

    name: str
    location: str
    parts: tuple[str, ...]


class AgentProbe(msgspec.Struct, frozen=True, kw_only=True):
    """Everything that counts as install evidence for one agent.

    ``ambiguous_executables`` are launcher names other products also install (the
    ``copilot`` name, shared with AWS Copilot CLI): alone they give ``partial`` and
    ``installed=false`` (INV-10); every other signal is definitive.
    """

    agent: str
    display_name: str
    executables: tuple[str, ...] = ()
    ambiguous_executables: tuple[str, ...] = ()
    packages: tuple[str, ...] = ()
    extensions: tuple[str, ...] = ()
    desktop: tuple[DesktopProbe, ...] = ()
    app_data: tuple[AppDataProbe, ...] = ()
    posture: str | None = None  # key of the posture reader in posture.READERS


#: The agents, in report order: the registry's clients first, then the others.
AGENTS: tuple[AgentProbe, ...] = (
    AgentProbe(
        agent="codex",
        display_name="Codex",
        executables=("codex",),
        packages=("@openai/codex",),
        extensions=("openai.chatgpt",),
        posture="codex",
    ),
    AgentProbe(
        agent="claude",
        display_name="Claude Code",
        executables=("claude",),
        packages=("@anthropic-ai/claude-code",),
        extensions=("anthropic.claude-code",),
        desktop=(
            # INV-5: the Claude desktop app's bundled Claude Code.
            DesktopProbe(
                name="claude-desktop",
                parts=("AppData", "Roaming", "Claude", "claude-code", "*", "*", "claude.exe"),
                version_from_glob=True,
            ),
            # INV-6: the MSIX package's mirror of the same layout.
            DesktopProbe(
                name="claude-desktop-packaged",
                parts=(
                    "AppData", "Local", "Packages", "Claude_pzs8sxrjxfjjc", "LocalCache", "Roaming",
                    "Claude", "claude-code", "*", "*", "claude.exe",
                ),
                version_from_glob=True,
            ),
        ),
        posture="claude",
    ),
    AgentProbe(
        agent="qwen",
        display_name="Qwen Code",
        executables=("qwen",),
        packages=("@qwen-code/qwen-code",),
        extensions=("qwenlm.qwen-code-vscode-ide-companion",),
        posture="qwen",
    ),
    AgentProbe(
        agent="openclaw",
        display_name="OpenClaw",
        executables=("openclaw",),
        packages=("openclaw",),
    ),
    AgentProbe(
        agent="opencode",
        display_name="OpenCode",
        executables=("opencode",),
        packages=("opencode-ai",),
        desktop=(
            # INV-4: OpenCode Desktop, exact paths from the seed.
            DesktopProbe(
                name="opencode-desktop",
                parts=("AppData", "Local", "Programs", "@opencode-aidesktop", "OpenCode.exe"),
            ),
            DesktopProbe(
                name="opencode-desktop-cli",
                parts=("AppData", "Roaming", "ai.opencode.desktop", "cli", "*", "opencode-cli.exe"),
                version_from_glob=True,
            ),
        ),
        posture="opencode",
    ),
    AgentProbe(
        agent="copilot",
        display_name="GitHub Copilot",
        ambiguous_executables=("copilot",),
        packages=("@github/copilot",),
        extensions=("github.copilot", "github.copilot-chat"),
    ),
    AgentProbe(
        agent="gemini",
        display_name="Gemini CLI",
        executables=("gemini",),
        packages=("@google/gemini-cli",),
        extensions=("google.gemini-cli-vscode-ide-companion",),
        posture="gemini",
    ),
    AgentProbe(
        agent="antigravity",
        display_name="Antigravity",
        executables=("agy", "antigravity"),
        app_data=(
            AppDataProbe(name="antigravity", location="antigravity", parts=(".gemini", "antigravity")),
            AppDataProbe(name="antigravity-cli", location="antigravity-cli", parts=(".gemini", "antigravity-cli")),
        ),
    ),
    AgentProbe(
        agent="cursor",
        display_name="Cursor",
        executables=("cursor", "cursor-agent"),
        app_data=(
            AppDataProbe(name="cursor", location="cursor", parts=(".cursor", "extensions")),
            # cursor-agent keeps its chats here (the CLI need not be on PATH to have run).
            AppDataProbe(name="cursor-agent", location="cursor", parts=(".cursor", "chats")),
        ),
        posture="cursor",
    ),
    AgentProbe(
        agent="windsurf",
        display_name="Windsurf",
        executables=("windsurf",),
        app_data=(
            AppDataProbe(name="windsurf", location="windsurf", parts=(".windsurf", "extensions")),
            # Cascade's (encrypted) conversations: the agent ran here even if the editor moved.
            AppDataProbe(name="windsurf-cascade", location="windsurf", parts=(".codeium", "windsurf")),
        ),
    ),
    AgentProbe(
        agent="trae",
        display_name="Trae",
        executables=("trae",),
        app_data=(
            AppDataProbe(name="trae", location="trae", parts=("Library", "Application Support", "Trae")),
            AppDataProbe(name="trae", location="trae", parts=("AppData", "Roaming", "Trae")),
            AppDataProbe(name="trae", location="trae", parts=(".config", "Trae")),
            AppDataProbe(name="trae-cli", location="trae", parts=(".trae",)),
        ),
    ),
    AgentProbe(
        agent="zed",
        display_name="Zed",
        executables=("zed", "zeditor"),
        app_data=(
            AppDataProbe(name="zed", location="zed", parts=(".local", "share", "zed")),
            AppDataProbe(name="zed", location="zed", parts=("Library", "Application Support", "Zed")),
            AppDataProbe(name="zed", location="zed", parts=("AppData", "Local", "Zed")),
        ),
    ),
    AgentProbe(
        agent="amp",
        display_name="Amp",
        executables=("amp",),
        packages=("@sourcegraph/amp",),
        extensions=("sourcegraph.amp",),
        app_data=(AppDataProbe(name="amp", location="amp", parts=(".local", "share", "amp")),),
    ),
    AgentProbe(
        agent="droid",
        display_name="Factory Droid",
        executables=("droid",),
        app_data=(AppDataProbe(name="factory", location="factory", parts=(".factory", "sessions")),),
    ),
    AgentProbe(
        agent="kiro",
        display_name="Kiro",
        executables=("kiro", "kiro-cli"),
        app_data=(
            AppDataProbe(name="kiro", location="kiro", parts=(".kiro",)),
            AppDataProbe(name="kiro-ide", location="kiro", parts=("Library", "Application Support", "Kiro")),
            AppDataProbe(name="kiro-ide", location="kiro", parts=("AppData", "Roaming", "Kiro")),
            AppDataProbe(name="kiro-ide", location="kiro", parts=(".config", "Kiro")),
        ),
    ),
    AgentProbe(
        agent="cline",
        display_name="Cline",
        extensions=("saoudrizwan.claude-dev",),
        posture="cline",
    ),
    AgentProbe(
        agent="roo-code",
        display_name="Roo Code",
        extensions=("rooveterinaryinc.roo-cline",),
        posture="roo",
    ),
    AgentProbe(
        agent="kilo-code",
        display_name="Kilo Code",
        executables=("kilocode", "kilo"),
        packages=("@kilocode/cli",),
        extensions=("kilocode.kilo-code",),
        posture="kilo",
    ),
    AgentProbe(
        agent="aider",
        display_name="Aider",
        # pip/pipx/uv install the ``aider`` launcher (package aider-chat); aider-install too.
        executables=("aider",),
    ),
    AgentProbe(
        agent="goose",
        display_name="Goose",
        # pressly/goose, a database migration tool, installs a ``goose`` launcher too.
        ambiguous_executables=("goose",),
        app_data=(
            AppDataProbe(name="goose-sessions", location="goose", parts=(".local", "share", "goose", "sessions")),
            AppDataProbe(name="goose-sessions-windows", location="goose",
                         parts=("AppData", "Roaming", "Block", "goose", "data", "sessions")),
        ),
        posture="goose",
    ),
    AgentProbe(
        agent="crush",
        display_name="Crush",
        executables=("crush",),
        packages=("@charmland/crush",),
        app_data=(
            AppDataProbe(name="crush", location="crush", parts=(".local", "share", "crush")),
            AppDataProbe(name="crush-windows", location="crush", parts=("AppData", "Local", "crush")),
        ),
        posture="crush",
    ),
)


# --- where the evidence lives -------------------------------------------------------------

class Root(msgspec.Struct, frozen=True, kw_only=True):
    """A directory template: ``base`` is ``home``, ``system`` or ``env:<VAR>``."""

    location: str
    base: str
    parts: tuple[str, ...]
    platforms: tuple[str, ...] = ("linux", "darwin", "win32")


_ALL = ("linux", "darwin", "win32")
_POSIX = ("linux", "darwin")

#: Global Node package roots (each holds ``<package>`` or ``@scope/<name>`` directories).
NODE_ROOTS: tuple[Root, ...] = (
    Root(location="npm", base="home", parts=(".npm-global", "lib", "node_modules"), platforms=_POSIX),
    Root(location="npm", base="home", parts=(".local", "lib", "node_modules"), platforms=_POSIX),
    Root(location="npm", base="system", parts=("usr", "local", "lib", "node_modules"), platforms=_POSIX),
    Root(location="npm", base="system", parts=("usr", "lib", "node_modules"), platforms=_POSIX),
    Root(location="npm", base="system", parts=("opt", "homebrew", "lib", "node_modules"), platforms=("darwin",)),
    Root(location="npm", base="env:NPM_CONFIG_PREFIX", parts=("lib", "node_modules"), platforms=_POSIX),
    Root(location="npm", base="env:NPM_CONFIG_PREFIX", parts=("node_modules",), platforms=("win32",)),
    Root(location="npm", base="home", parts=("AppData", "Roaming", "npm", "node_modules"), platforms=("win32",)),
    Root(location="npm", base="env:APPDATA", parts=("npm", "node_modules"), platforms=("win32",)),
    Root(location="nvm", base="home", parts=(".nvm", "versions", "node", "*", "lib", "node_modules"),
         platforms=_POSIX),
    Root(location="nvm", base="env:NVM_DIR", parts=("versions", "node", "*", "lib", "node_modules"),
         platforms=_POSIX),
    Root(location="nvm", base="home", parts=("AppData", "Roaming", "nvm", "*", "node_modules"),
         platforms=("win32",)),
    Root(location="fnm", base="home",
         parts=(".local", "share", "fnm", "node-versions", "*", "installation", "lib", "node_modules"),
         platforms=_POSIX),
    Root(location="pnpm", base="home", parts=(".local", "share", "pnpm", "global", "*", "node_modules"),
         platforms=("linux",)),
    Root(location="pnpm", base="home", parts=("Library", "pnpm", "global", "*", "node_modules"),
         platforms=("darwin",)),
    Root(location="pnpm", base="home", parts=("AppData", "Local", "pnpm", "global", "*", "node_modules"),
         platforms=("win32",)),
    Root(location="pnpm", base="env:PNPM_HOME", parts=("global", "*", "node_modules"), platforms=_ALL),
    Root(location="bun", base="home", parts=(".bun", "install", "global", "node_modules"), platforms=_ALL),
    Root(location="bun", base="env:BUN_INSTALL", parts=("install", "global", "node_modules"), platforms=_ALL),
)

#: VS Code-style extension folders (entries named ``<publisher>.<name>-<version>``).
EXTENSION_ROOTS: tuple[Root, ...] = (
    Root(location="vscode", base="home", parts=(".vscode", "extensions")),
    Root(location="vscode-insiders", base="home", parts=(".vscode-insiders", "extensions")),
    Root(location="vscodium", base="home", parts=(".vscode-oss", "extensions")),
    Root(location="cursor", base="home", parts=(".cursor", "extensions")),
    Root(location="windsurf", base="home", parts=(".windsurf", "extensions")),
    Root(location="vscode-server", base="home", parts=(".vscode-server", "extensions")),
    Root(location="vscode-server-insiders", base="home", parts=(".vscode-server-insiders", "extensions")),
    Root(location="vscode-remote", base="home", parts=(".vscode-remote", "extensions")),
    Root(location="cursor-server", base="home", parts=(".cursor-server", "extensions")),
    Root(location="windsurf-server", base="home", parts=(".windsurf-server", "extensions")),
)

#: Editors' user-data folder names (under the platform's configuration directory).
EDITOR_USER_DIRS: tuple[tuple[str, str], ...] = (
    ("vscode", "Code"),
    ("vscode-insiders", "Code - Insiders"),
    ("vscodium", "VSCodium"),
    ("cursor", "Cursor"),
    ("windsurf", "Windsurf"),
)


def _global_storage_roots() -> tuple[Root, ...]:
    roots: list[Root] = []
    for location, folder in EDITOR_USER_DIRS:
        tail = (folder, "User", "globalStorage")
        roots.append(Root(location=location, base="home", parts=(".config", *tail), platforms=("linux",)))
        roots.append(Root(location=location, base="env:XDG_CONFIG_HOME", parts=tail, platforms=("linux",)))
        roots.append(Root(location=location, base="home", parts=("Library", "Application Support", *tail),
                          platforms=("darwin",)))
        roots.append(Root(location=location, base="home", parts=("AppData", "Roaming", *tail),
                          platforms=("win32",)))
        roots.append(Root(location=location, base="env:APPDATA", parts=tail, platforms=("win32",)))
    for location, folder in (
        ("vscode-server", ".vscode-server"),
        ("vscode-server-insiders", ".vscode-server-insiders"),
        ("cursor-server", ".cursor-server"),
        ("windsurf-server", ".windsurf-server"),
    ):
        roots.append(Root(location=location, base="home", parts=(folder, "data", "User", "globalStorage")))
    return tuple(roots)


#: ``<user-data>/User/globalStorage`` folders; entries are extension ids (INV-1).
GLOBAL_STORAGE_ROOTS: tuple[Root, ...] = _global_storage_roots()
