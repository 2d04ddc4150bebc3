"""Editor user directories: where VS Code-family editors keep per-user data.

Extension-based agents (Cline, Roo Code, Kilo Code, Continue's IDE side) and editors
with a built-in agent (Cursor, Windsurf, Trae, Kiro, Antigravity) write below an
editor's ``User`` directory (``User/globalStorage/<extension id>/``,
``User/globalStorage/state.vscdb``, ``User/workspaceStorage/<hash>/``). One editor is
one entry of :data:`EDITORS`; the platform rules live here once, so every agent package
only names the path below ``User``.

Everything here is pure (an injected environment and platform flavour) except
:func:`resolve_below`, which probes the filesystem through discovery's :class:`Probe`.
"""

from __future__ import annotations

import stat

import msgspec

from telltale.discovery.roots import EnvView, Flavour, Platform
from telltale.discovery.walk import Probe


class Editor(msgspec.Struct, frozen=True):
    """One VS Code-family editor.

    ``folder`` is its directory name under the platform's application-data root
    (``~/.config/<folder>`` on Linux, ``~/Library/Application Support/<folder>`` on macOS,
    ``%APPDATA%\\<folder>`` on Windows). ``server`` is the home-relative directory its
    remote server (SSH, WSL, dev containers) keeps user data in, where one exists;
    ``flatpak`` the Flatpak application id on Linux.
    """

    id: str
    name: str
    folder: str
    server: str | None = None
    flatpak: str | None = None


#: Every editor whose user directory is searched, in a fixed order.
EDITORS: tuple[Editor, ...] = (
    Editor("vscode", "Visual Studio Code", "Code", ".vscode-server", "com.visualstudio.code"),
    Editor("vscode-insiders", "Visual Studio Code - Insiders", "Code - Insiders", ".vscode-server-insiders"),
    Editor("vscodium", "VSCodium", "VSCodium", ".vscodium-server", "com.vscodium.codium"),
    Editor("cursor", "Cursor", "Cursor", ".cursor-server"),
    Editor("windsurf", "Windsurf", "Windsurf", ".windsurf-server"),
    Editor("trae", "Trae", "Trae", ".trae-server"),
    Editor("kiro", "Kiro", "Kiro", ".kiro-server"),
    Editor("antigravity", "Antigravity", "Antigravity", ".antigravity-server"),
)

EDITOR_IDS: tuple[str, ...] = tuple(editor.id for editor in EDITORS)


class EditorUserDir(msgspec.Struct, frozen=True):
    """One candidate ``User`` directory of one editor, and how it was found.

    ``found_by`` becomes ``Source.found_by``: ``editor:<id>`` for the platform's
    application-data root, ``editor:<id>:server``, ``editor:<id>:flatpak`` or
    ``editor:<id>:portable`` for the other layouts.
    """

    editor: Editor
    path: str
    found_by: str


def app_data_root(flavour: Flavour, env: EnvView | None, home: str | None) -> str | None:
    """Where editors put their folder: XDG config home, Application Support or APPDATA.

    With ``env`` (host discovery) ``XDG_CONFIG_HOME`` (Linux) and ``APPDATA`` (Windows)
    decide when set; without it (an explicit ``--root`` home) the defaults below the home
    apply, so a copied home is read as it would be on its own machine.
    """
    platform = flavour.platform
    if platform is Platform.LINUX:
        value = env.get("XDG_CONFIG_HOME") if env is not None else None
        if value is not None:
            return value
        return flavour.join(home, ".config") if home is not None else None
    if platform is Platform.WINDOWS:
        value = env.get("APPDATA") if env is not None else None
        if value is not None:
            return value
        return flavour.join(home, "AppData", "Roaming") if home is not None else None
    return flavour.join(home, "Library", "Application Support") if home is not None else None


def editor_user_dirs(
    flavour: Flavour, env: EnvView | None, home: str | None, editors: tuple[Editor, ...] = EDITORS
) -> list[EditorUserDir]:
    """Every candidate ``User`` directory of ``editors`` on this platform, existing or not.

    Order: per editor, the desktop layout, then its remote-server layout (any platform:
    a Linux host reached over SSH, a WSL distribution), then Flatpak (Linux), then
    ``VSCODE_PORTABLE`` (host discovery only, VS Code only).
    """
    out: list[EditorUserDir] = []
    base = app_data_root(flavour, env, home)
    portable = env.get("VSCODE_PORTABLE") if env is not None else None
    for editor in editors:
        if base is not None:
            out.append(EditorUserDir(editor, flavour.join(base, editor.folder, "User"), f"editor:{editor.id}"))
        if home is not None and editor.server is not None:
            path = flavour.join(home, editor.server, "data", "User")
            out.append(EditorUserDir(editor, path, f"editor:{editor.id}:server"))
        if home is not None and editor.flatpak is not None and flavour.platform is Platform.LINUX:
            path = flavour.join(home, ".var", "app", editor.flatpak, "config", editor.folder, "User")
            out.append(EditorUserDir(editor, path, f"editor:{editor.id}:flatpak"))
        if portable is not None and editor.id == "vscode":
            out.append(EditorUserDir(editor, flavour.join(portable, "user-data", "User"), "editor:vscode:portable"))
    return out


def resolve_below(probe: Probe, user_dir: str, relative: str) -> str:
    """The path of ``relative`` (``/``-separated) below a ``User`` directory.

    Editors lower-case extension ids in ``globalStorage`` (``saoudrizwan.claude-dev``),
    while marketplace ids are mixed case (``RooVeterinaryInc.roo-cline``). A component
    that does not exist with the given spelling is matched case-insensitively against
    the real directory's entries (real directories only; a link is never taken). When
    nothing matches, the path is returned with the given spelling so that ``watch`` can
    wait for it to appear.
    """
    flavour = probe.flavour
    current = user_dir
    parts = [part for part in relative.split("/") if part]
    for index, part in enumerate(parts):
        exact = flavour.join(current, part)
        if probe.lstat(exact) is not None:
            current = exact
            continue
        match = _casefold_match(probe, current, part)
        if match is None:
            return flavour.join(current, *parts[index:])
        current = match
    return current


def _casefold_match(probe: Probe, directory: str, name: str) -> str | None:
    st = probe.lstat(directory)
    if st is None or not stat.S_ISDIR(st.st_mode):
        return None
    wanted = name.casefold()
    for entry in probe.scandir(directory) or ():
        if entry.name.casefold() != wanted:
            continue
        try:
            if entry.is_dir(follow_symlinks=False):
                return probe.flavour.join(directory, entry.name)
        except OSError:
            continue
    return None
