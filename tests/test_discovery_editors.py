"""Editor user directories (``telltale.discovery.editors``) and ``EDITOR_USER`` stores in ``discover()``.

Platform layouts are simulated on this host through the injected environment, platform
and ``host_path`` seam, as in ``test_discovery_roots``.
"""

from __future__ import annotations

import ntpath
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from telltale.discovery import DiscoveryOptions, discover
from telltale.discovery.editors import EDITOR_IDS, EDITORS, editor_user_dirs, resolve_below
from telltale.discovery.roots import EnvView, Flavour, Platform
from telltale.discovery.walk import Probe
from telltale.sources import registry
from telltale.sources.spec import RootType, SourceSpec

LINUX, DARWIN, WINDOWS = Platform.LINUX, Platform.DARWIN, Platform.WINDOWS


def windows_mapper(base: Path) -> Callable[[str], str]:
    def host(path: str) -> str:
        drive, rest = ntpath.splitdrive(path)
        parts = [drive.rstrip(":")] + [p for p in rest.replace("/", "\\").split("\\") if p]
        return str(base.joinpath(*[p for p in parts if p]))

    return host


def dirs(platform: Platform, env: dict[str, str] | None, home: str) -> dict[str, str]:
    flavour = Flavour(platform)
    view = EnvView(env, platform) if env is not None else None
    return {d.found_by: d.path for d in editor_user_dirs(flavour, view, home)}


def test_eight_editors_in_a_fixed_order() -> None:
    assert EDITOR_IDS == (
        "vscode", "vscode-insiders", "vscodium", "cursor", "windsurf", "trae", "kiro", "antigravity",
    )


def test_linux_layout_default_and_xdg_config_home() -> None:
    found = dirs(LINUX, {}, "/home/u")
    assert found["editor:vscode"] == "/home/u/.config/Code/User"
    assert found["editor:vscode-insiders"] == "/home/u/.config/Code - Insiders/User"
    assert found["editor:cursor"] == "/home/u/.config/Cursor/User"
    assert found["editor:vscode:server"] == "/home/u/.vscode-server/data/User"
    assert found["editor:vscode:flatpak"] == "/home/u/.var/app/com.visualstudio.code/config/Code/User"
    moved = dirs(LINUX, {"XDG_CONFIG_HOME": "/cfg"}, "/home/u")
    assert moved["editor:windsurf"] == "/cfg/Windsurf/User"
    # An empty XDG_CONFIG_HOME is unset, as for every other variable.
    assert dirs(LINUX, {"XDG_CONFIG_HOME": ""}, "/home/u")["editor:kiro"] == "/home/u/.config/Kiro/User"


def test_macos_layout_has_no_flatpak() -> None:
    found = dirs(DARWIN, {}, "/Users/u")
    assert found["editor:trae"] == "/Users/u/Library/Application Support/Trae/User"
    assert found["editor:antigravity"] == "/Users/u/Library/Application Support/Antigravity/User"
    assert not any(key.endswith(":flatpak") for key in found)


def test_windows_layout_appdata_then_default() -> None:
    found = dirs(WINDOWS, {"appdata": "D:\\Roam"}, "C:\\Users\\u")
    assert found["editor:vscodium"] == "D:\\Roam\\VSCodium\\User"
    default = dirs(WINDOWS, {}, "C:\\Users\\u")
    assert default["editor:vscode"] == "C:\\Users\\u\\AppData\\Roaming\\Code\\User"
    assert default["editor:cursor:server"] == "C:\\Users\\u\\.cursor-server\\data\\User"


def test_explicit_root_ignores_the_environment() -> None:
    # env=None is an explicit --root: the copied home's own defaults apply.
    found = dirs(LINUX, None, "/copy")
    assert found["editor:vscode"] == "/copy/.config/Code/User"
    assert "editor:vscode:portable" not in found


def test_vscode_portable_only_from_the_environment() -> None:
    found = dirs(LINUX, {"VSCODE_PORTABLE": "/opt/code/data"}, "/home/u")
    assert found["editor:vscode:portable"] == "/opt/code/data/user-data/User"


def test_resolve_below_matches_lower_cased_extension_ids(tmp_path: Path) -> None:
    user = tmp_path / "User"
    (user / "globalStorage" / "rooveterinaryinc.roo-cline" / "tasks").mkdir(parents=True)
    probe = Probe(Flavour(LINUX))
    got = resolve_below(probe, str(user), "globalStorage/RooVeterinaryInc.roo-cline/tasks")
    assert got == str(user / "globalStorage" / "rooveterinaryinc.roo-cline" / "tasks")
    # Missing: the given spelling comes back, so watch can wait for it.
    missing = resolve_below(probe, str(user), "globalStorage/Other.Ext/tasks")
    assert missing == str(user / "globalStorage" / "Other.Ext" / "tasks")
    assert probe.issues == []


def test_resolve_below_never_takes_a_link(tmp_path: Path) -> None:
    user = tmp_path / "User"
    (user / "globalStorage").mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (user / "globalStorage" / "vendor.ext").symlink_to(elsewhere)
    got = resolve_below(Probe(Flavour(LINUX)), str(user), "globalStorage/Vendor.Ext")
    assert got == str(user / "globalStorage" / "Vendor.Ext")


FAKE = SourceSpec(
    client="fakeext",
    kind="fakeext.tasks",
    root_type=RootType.EDITOR_USER,
    relative_path="globalStorage/Vendor.FakeExt/tasks",
    file_patterns=("*.json",),
    recursive=True,
    fixture_relative_path="fakeext/tasks",
    adapter="telltale.sources.claude:ClaudeAdapter",
)
ONLY_CURSOR = SourceSpec(
    client="fakeext",
    kind="fakeext.cursor_only",
    root_type=RootType.EDITOR_USER,
    relative_path="globalStorage",
    file_patterns=("state.vscdb",),
    recursive=False,
    fixture_relative_path="fakeext/cursor",
    adapter="telltale.sources.claude:ClaudeAdapter",
    editors=("cursor",),
)


@pytest.fixture
def fake_registry(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    specs = (*registry.REGISTRY, FAKE, ONLY_CURSOR)
    monkeypatch.setattr(registry, "REGISTRY", specs)
    monkeypatch.setattr(registry, "CLIENTS", (*registry.CLIENTS, "fakeext"))
    monkeypatch.setattr(registry, "KINDS", tuple(s.kind for s in specs))
    yield


def touch(base: Path, relative: str) -> None:
    path = base.joinpath(*relative.split("/"))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"[]")


@pytest.mark.usefixtures("fake_registry")
def test_discover_finds_an_extension_store_in_every_editor_layout(tmp_path: Path) -> None:
    home = tmp_path / "home"
    touch(home, ".config/Code/User/globalStorage/vendor.fakeext/tasks/t1/a.json")
    touch(home, ".config/Cursor/User/globalStorage/Vendor.FakeExt/tasks/t2/a.json")
    touch(home, ".vscode-server/data/User/globalStorage/vendor.fakeext/tasks/t3/a.json")
    touch(home, ".config/Code/User/globalStorage/state.vscdb")  # not Cursor: not searched
    touch(home, ".config/Cursor/User/globalStorage/state.vscdb")
    result = discover(DiscoveryOptions(env={"HOME": str(home)}, platform="linux", clients=("fakeext",)))
    got = {(s.kind, s.found_by, Path(s.path).relative_to(home).as_posix()) for s in result.sources}
    assert got == {
        ("fakeext.tasks", "editor:vscode", ".config/Code/User/globalStorage/vendor.fakeext/tasks/t1/a.json"),
        ("fakeext.tasks", "editor:cursor", ".config/Cursor/User/globalStorage/Vendor.FakeExt/tasks/t2/a.json"),
        ("fakeext.tasks", "editor:vscode:server",
         ".vscode-server/data/User/globalStorage/vendor.fakeext/tasks/t3/a.json"),
        ("fakeext.cursor_only", "editor:cursor", ".config/Cursor/User/globalStorage/state.vscdb"),
    }
    assert all(s.root_type is RootType.EDITOR_USER for s in result.sources)
    assert result.errors == []
    # Editors not installed are pending roots for watch, in their given spelling.
    assert str(home / ".config/Windsurf/User/globalStorage/Vendor.FakeExt/tasks") in result.pending_roots


@pytest.mark.usefixtures("fake_registry")
@pytest.mark.parametrize(
    ("platform", "env", "relative"),
    [
        ("darwin", {"HOME": "/Users/me"}, "Users/me/Library/Application Support/Kiro/User"),
        ("windows", {"USERPROFILE": "C:\\Users\\me"}, "C/Users/me/AppData/Roaming/Kiro/User"),
        ("windows", {"USERPROFILE": "C:\\Users\\me", "APPDATA": "E:\\roam"}, "E/roam/Kiro/User"),
    ],
)
def test_discover_simulated_platform_layouts(
    tmp_path: Path, platform: str, env: dict[str, str], relative: str
) -> None:
    touch(tmp_path / relative, "globalStorage/vendor.fakeext/tasks/t/ui.json")
    if platform == "windows":
        mapper = windows_mapper(tmp_path)
    else:
        def mapper(path: str) -> str:
            return str(tmp_path) + path
    result = discover(
        DiscoveryOptions(env=env, platform=platform, clients=("fakeext.tasks",), host_path=mapper)
    )
    assert [(s.kind, s.found_by) for s in result.sources] == [("fakeext.tasks", "editor:kiro")]
    assert result.errors == []


def test_editor_table_folders_are_unique() -> None:
    assert len({e.folder for e in EDITORS}) == len(EDITORS)
    assert len({e.server for e in EDITORS if e.server}) == len([e for e in EDITORS if e.server])
