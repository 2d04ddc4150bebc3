"""OpenCode discovery: every OC-DISC bullet, CAND-11..13 and the store roots watch uses."""

from __future__ import annotations

import ntpath
import os
import re
import string
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from telltale.discovery import DiscoveryOptions, DiscoveryResult, StoreRoot, discover
from telltale.discovery.opencode import is_candidate_name, resolve_override
from telltale.discovery.roots import Platform, explicit_roots
from telltale.errors import DiscoveryError

KIND = "opencode.sqlite"


def touch(base: Path, relative: str) -> Path:
    path = base.joinpath(*relative.split("/"))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch()
    return path


def run(
    env: dict[str, str],
    *,
    platform: str = "linux",
    root: str = ".",
    bounded: bool = False,
    budget: int = 100_000,
    host_path: Callable[[str], str] | None = None,
) -> DiscoveryResult:
    return discover(
        DiscoveryOptions(
            root=root,
            env=env,
            platform=platform,
            clients=("opencode",),
            bounded=bounded,
            budget=budget,
            host_path=host_path,
        )
    )


def found(result: DiscoveryResult) -> list[tuple[str, str]]:
    return [(s.path, s.found_by) for s in result.sources]


def reasons(result: DiscoveryResult) -> list[tuple[str, str]]:
    return [(e.reason, e.path) for e in result.errors]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


# ---------------------------------------------------------------- XDG and retained candidates


def test_OC_DISC_1_2_default_xdg_dir_under_home(home: Path) -> None:
    db = touch(home, ".local/share/opencode/opencode.db")
    result = run({"HOME": str(home)})
    assert found(result) == [(str(db), "opencode_xdg")]
    assert result.errors == []


def test_OC_DISC_2_nonempty_xdg_data_home_wins(home: Path, tmp_path: Path) -> None:
    xdg_db = touch(tmp_path, "xdg/opencode/opencode.db")
    touch(home, ".local/share/opencode/opencode.db")  # not searched on Linux when XDG is set
    result = run({"HOME": str(home), "XDG_DATA_HOME": str(tmp_path / "xdg")})
    assert found(result) == [(str(xdg_db), "opencode_xdg")]


def test_OC_DISC_2_empty_xdg_data_home_is_unset(home: Path) -> None:
    db = touch(home, ".local/share/opencode/opencode.db")
    assert found(run({"HOME": str(home), "XDG_DATA_HOME": ""})) == [(str(db), "opencode_xdg")]


@pytest.mark.parametrize("platform", ["darwin", "windows"])
def test_OC_DISC_2_xdg_dir_applies_on_every_platform(tmp_path: Path, platform: str) -> None:
    # XDG_DATA_HOME is honoured for OpenCode even where DataHome ignores it.
    touch(tmp_path, "xdg/opencode/opencode-dev.db")
    env = {"HOME": str(tmp_path / "home"), "XDG_DATA_HOME": str(tmp_path / "xdg")}
    host = None
    if platform == "windows":
        env = {"USERPROFILE": "C:\\Users\\me", "XDG_DATA_HOME": "C:\\xdg"}
        touch(tmp_path, "C/xdg/opencode/opencode-dev.db")
        host = windows_mapper(tmp_path)
    result = run(env, platform=platform, host_path=host)
    assert [fb for _, fb in found(result)] == ["opencode_channel"]


def test_CAND_12_OC_DISC_3_macos_application_support_retained(home: Path) -> None:
    xdg = touch(home, ".local/share/opencode/opencode.db")
    app = touch(home, "Library/Application Support/opencode/opencode.db")
    result = run({"HOME": str(home)}, platform="darwin")
    assert sorted(found(result)) == sorted([(str(xdg), "opencode_xdg"), (str(app), "data_home")])


def test_OC_DISC_5_no_channels_in_retained_macos_dir(home: Path) -> None:
    touch(home, "Library/Application Support/opencode/opencode-beta.db")
    assert run({"HOME": str(home)}, platform="darwin").sources == []


def test_OC_DISC_28_macos_xdg_relocation_is_additive(home: Path, tmp_path: Path) -> None:
    app = touch(home, "Library/Application Support/opencode/opencode.db")
    xdg = touch(tmp_path, "xdg/opencode/opencode.db")
    result = run({"HOME": str(home), "XDG_DATA_HOME": str(tmp_path / "xdg")}, platform="darwin")
    assert sorted(p for p, _ in found(result)) == sorted([str(app), str(xdg)])


def windows_mapper(base: Path) -> Callable[[str], str]:
    def host(path: str) -> str:
        drive, rest = ntpath.splitdrive(path)
        parts = [drive.rstrip(":")] + [p for p in rest.replace("/", "\\").split("\\") if p]
        return str(base.joinpath(*[p for p in parts if p]))

    return host


WINDOWS_TABLE = [
    # (id, env, files created (posix, under the mapped drive tree), expected (path, found_by))
    (
        "localappdata",
        {"USERPROFILE": "C:\\Users\\me", "LOCALAPPDATA": "C:\\Users\\me\\AppData\\Local"},
        ["C/Users/me/AppData/Local/opencode/opencode.db"],
        [("C:\\Users\\me\\AppData\\Local\\opencode\\opencode.db", "data_home")],
    ),
    (
        "appdata_when_no_localappdata",
        {"USERPROFILE": "C:\\Users\\me", "APPDATA": "C:\\Users\\me\\AppData\\Roaming"},
        ["C/Users/me/AppData/Roaming/opencode/opencode.db", "C/Users/me/AppData/Local/opencode/opencode.db"],
        [("C:\\Users\\me\\AppData\\Roaming\\opencode\\opencode.db", "data_home")],
    ),
    (
        "profile_fallback",
        {"USERPROFILE": "C:\\Users\\me"},
        ["C/Users/me/AppData/Local/opencode/opencode.db"],
        [("C:\\Users\\me\\AppData\\Local\\opencode\\opencode.db", "data_home")],
    ),
    (
        "xdg_default_under_profile",
        {"USERPROFILE": "C:\\Users\\me"},
        ["C/Users/me/.local/share/opencode/opencode.db", "C/Users/me/.local/share/opencode/opencode-beta.db"],
        [
            ("C:\\Users\\me\\.local\\share\\opencode\\opencode-beta.db", "opencode_channel"),
            ("C:\\Users\\me\\.local\\share\\opencode\\opencode.db", "opencode_xdg"),
        ],
    ),
    (
        "local_share_retained_when_xdg_set",
        {"USERPROFILE": "C:\\Users\\me", "XDG_DATA_HOME": "D:\\xdg"},
        [
            "C/Users/me/.local/share/opencode/opencode.db",
            "C/Users/me/.local/share/opencode/opencode-beta.db",
            "D/xdg/opencode/opencode.db",
        ],
        [
            ("C:\\Users\\me\\.local\\share\\opencode\\opencode.db", "data_home"),
            ("D:\\xdg\\opencode\\opencode.db", "opencode_xdg"),
        ],
    ),
    (
        "no_channels_in_appdata",
        {"USERPROFILE": "C:\\Users\\me", "LOCALAPPDATA": "C:\\L"},
        ["C/L/opencode/opencode-beta.db"],
        [],
    ),
]


@pytest.mark.parametrize(
    ("env", "files", "expected"), [t[1:] for t in WINDOWS_TABLE], ids=[t[0] for t in WINDOWS_TABLE]
)
def test_CAND_13_OC_DISC_3_windows_candidates(
    tmp_path: Path, env: dict[str, str], files: list[str], expected: list[tuple[str, str]]
) -> None:
    for rel in files:
        touch(tmp_path, rel)
    result = run(env, platform="windows", host_path=windows_mapper(tmp_path))
    assert found(result) == expected
    assert result.errors == []


def test_CAND_11_linux_has_no_other_platform_candidates(home: Path) -> None:
    touch(home, "Library/Application Support/opencode/opencode.db")
    touch(home, "AppData/Local/opencode/opencode.db")
    assert run({"HOME": str(home)}).sources == []


def test_OC_DISC_4_desktop_install_metadata_is_not_a_store(home: Path) -> None:
    touch(home, "AppData/Local/Programs/@opencode-aidesktop/OpenCode.exe")
    touch(home, "AppData/Roaming/ai.opencode.desktop/cli/1.0/opencode-cli.exe")
    touch(home, "AppData/Roaming/ai.opencode.desktop/opencode.db")
    env = {"USERPROFILE": str(home)}
    # Posix paths on a "windows" run: map separators back for the host.
    result = run(env, platform="windows", host_path=lambda p: p.replace("\\", "/"))
    assert result.sources == []


# ---------------------------------------------------------------- channels

ACCEPTED = [
    "opencode.db",
    "opencode-beta.db",
    "opencode-A.b_c-9.db",
    "opencode-x.db.db",
    "opencode-..db",
    "opencode--.db",
]
REJECTED = [
    "opencode-.db",  # empty channel
    "Opencode.db",  # case-sensitive
    "OPENCODE.DB",
    "opencode-beta.DB",
    "opencode.db-wal",  # sidecars
    "opencode.db-shm",
    "opencode.db-journal",
    "opencode-beta.db-wal",
    "opencode.db.bak",  # extra extensions
    "opencode-beta.db.bak",
    "opencode.sqlite",
    "opencode-b eta.db",  # not in the channel alphabet
    "opencode-bêta.db",
    "opencode-beta/x.db",
    "opencode-beta.db\n",
    "xopencode.db",
    "opencode_beta.db",
]


@pytest.mark.parametrize("name", ACCEPTED)
def test_OC_DISC_6_accepted_channel_names(name: str) -> None:
    assert is_candidate_name(name, channels=True)


@pytest.mark.parametrize("name", REJECTED)
def test_OC_DISC_6_7_8_rejected_names(name: str) -> None:
    assert not is_candidate_name(name, channels=True)


def test_OC_DISC_6_channels_off_is_exact_opencode_db() -> None:
    assert is_candidate_name("opencode.db", channels=False)
    assert not is_candidate_name("opencode-beta.db", channels=False)


_REFERENCE = re.compile(r"\Aopencode(-[A-Za-z0-9._-]+)?\.db\Z")


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.text(max_size=30),
        st.builds(
            lambda mid, tail: f"opencode-{mid}{tail}",
            st.text(alphabet=string.ascii_letters + string.digits + "._-é \n/", max_size=12),
            st.sampled_from([".db", ".DB", ".db-wal", ".db.db", "", ".db\n"]),
        ),
    )
)
def test_OC_DISC_6_channel_predicate_property(name: str) -> None:
    assert is_candidate_name(name, channels=True) == bool(_REFERENCE.match(name))


def test_OC_DISC_5_6_7_10_directory_scan(home: Path) -> None:
    data = home / ".local/share/opencode"
    for name in ACCEPTED:
        touch(data, name)
    for name in REJECTED:
        if "/" in name or "\n" in name:
            continue
        touch(data, name)
    touch(data, "nested/opencode.db")  # nested: not a candidate
    touch(data, "storage/opencode-beta.db")
    result = run({"HOME": str(home), "OPENCODE_CHANNEL": "beta"})  # OC-DISC-9: ignored
    assert sorted(Path(p).name for p, _ in found(result)) == sorted(ACCEPTED)
    assert result.errors == []


def test_OC_DISC_8_case_variants_on_disk_are_not_matched(home: Path) -> None:
    data = home / ".local/share/opencode"
    touch(data, "OpenCode.db")
    assert run({"HOME": str(home)}).sources == []


# ---------------------------------------------------------------- symlinks


def test_OC_DISC_12_symlinked_default_db_rejected(home: Path, tmp_path: Path) -> None:
    real = touch(tmp_path, "elsewhere/real.db")
    data = home / ".local/share/opencode"
    data.mkdir(parents=True)
    (data / "opencode.db").symlink_to(real)
    healthy = touch(data, "opencode-stable.db")
    result = run({"HOME": str(home)})
    assert found(result) == [(str(healthy), "opencode_channel")]  # OC-DISC-13: healthy kept
    assert reasons(result) == [("symlink", str(data / "opencode.db"))]


def test_OC_DISC_12_dangling_and_channel_symlinks_rejected(home: Path) -> None:
    data = home / ".local/share/opencode"
    data.mkdir(parents=True)
    (data / "opencode.db").symlink_to(home / "missing.db")
    (data / "opencode-beta.db").symlink_to(home / "missing2.db")
    result = run({"HOME": str(home)})
    assert result.sources == []
    assert sorted(reasons(result)) == [
        ("symlink", str(data / "opencode-beta.db")),
        ("symlink", str(data / "opencode.db")),
    ]
    assert result.store_roots == [StoreRoot(path=str(data), recursive=False, kinds=(KIND,))]


@pytest.mark.parametrize("link_at", [".local", ".local/share", ".local/share/opencode"])
def test_OC_DISC_11_symlinked_directory_component_rejected(home: Path, tmp_path: Path, link_at: str) -> None:
    target = tmp_path / "target"
    full = target / ".local/share/opencode"
    full.mkdir(parents=True)
    (full / "opencode.db").touch()
    # Link one component of ~/.local/share/opencode to the matching place in target.
    link = home.joinpath(*link_at.split("/"))
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target.joinpath(*link_at.split("/")), target_is_directory=True)
    result = run({"HOME": str(home)})
    assert result.sources == []
    assert reasons(result) == [("symlink_component", str(link))]
    assert result.store_roots == []  # WATCH-2: never a linked directory target


def test_OC_DISC_11_symlinked_xdg_data_home_rejected(tmp_path: Path) -> None:
    touch(tmp_path, "real/opencode/opencode.db")
    (tmp_path / "xdg").symlink_to(tmp_path / "real", target_is_directory=True)
    result = run({"HOME": str(tmp_path / "home"), "XDG_DATA_HOME": str(tmp_path / "xdg")})
    assert result.sources == []
    assert reasons(result) == [("symlink_component", str(tmp_path / "xdg"))]


def test_OC_DISC_11_13_rejected_dir_keeps_other_candidates(home: Path, tmp_path: Path) -> None:
    touch(tmp_path, "real/opencode/opencode.db")
    (home / "Library").mkdir(parents=True)
    (home / "Library/Application Support").symlink_to(tmp_path / "real", target_is_directory=True)
    xdg_db = touch(home, ".local/share/opencode/opencode.db")
    result = run({"HOME": str(home)}, platform="darwin")
    assert found(result) == [(str(xdg_db), "opencode_xdg")]
    assert reasons(result) == [("symlink_component", str(home / "Library/Application Support"))]


def test_OC_DISC_11_component_that_is_a_file(home: Path) -> None:
    touch(home, ".local/share")  # a file where a directory is expected
    result = run({"HOME": str(home)})
    assert result.sources == []
    assert reasons(result) == [("not_a_directory", str(home / ".local/share"))]


def test_OC_DISC_7_candidate_that_is_a_directory(home: Path) -> None:
    (home / ".local/share/opencode/opencode.db").mkdir(parents=True)
    result = run({"HOME": str(home)})
    assert result.sources == []
    assert reasons(result) == [("not_regular_file", str(home / ".local/share/opencode/opencode.db"))]


# ---------------------------------------------------------------- OPENCODE_DB


def test_OC_DISC_14_15_absolute_override_any_basename(home: Path, tmp_path: Path) -> None:
    db = touch(tmp_path, "custom/place/my-store.sqlite3")
    touch(tmp_path, "custom/place/opencode.db")  # OC-DISC-19: the parent is never enumerated
    touch(tmp_path, "custom/place/opencode-beta.db")
    result = run({"HOME": str(home), "OPENCODE_DB": str(db)})
    assert found(result) == [(str(db), "opencode_db")]
    assert result.store_roots == [
        StoreRoot(path=str(db.parent), recursive=False, kinds=(KIND,), exact_files=("my-store.sqlite3",))
    ]


def test_OC_DISC_16_relative_override_against_xdg_dir_not_cwd(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = touch(home, ".local/share/opencode/sub/rel.db")
    touch(tmp_path, "cwd/sub/rel.db")
    monkeypatch.chdir(tmp_path / "cwd")
    result = run({"HOME": str(home), "OPENCODE_DB": "sub/rel.db"})
    assert found(result) == [(str(db), "opencode_db")]


def test_OC_DISC_16_relative_override_uses_xdg_data_home(home: Path, tmp_path: Path) -> None:
    db = touch(tmp_path, "xdg/opencode/rel.db")
    result = run({"HOME": str(home), "XDG_DATA_HOME": str(tmp_path / "xdg"), "OPENCODE_DB": "rel.db"})
    assert found(result) == [(str(db), "opencode_db")]


def test_OC_DISC_16_relative_override_not_macos_application_support(home: Path) -> None:
    touch(home, "Library/Application Support/opencode/rel.db")
    xdg = touch(home, ".local/share/opencode/rel.db")
    result = run({"HOME": str(home), "OPENCODE_DB": "rel.db"}, platform="darwin")
    assert found(result) == [(str(xdg), "opencode_db")]


def test_OC_DISC_17_dotdot_is_lexical_and_may_leave_the_dir(home: Path, tmp_path: Path) -> None:
    db = touch(home, ".local/share/outside.db")
    # A link inside the data dir must not be resolved: "link/.." folds lexically.
    elsewhere = tmp_path / "elsewhere/deep"
    elsewhere.mkdir(parents=True)
    (tmp_path / "elsewhere/outside.db").touch()
    (home / ".local/share/opencode").mkdir(parents=True)
    (home / ".local/share/opencode/link").symlink_to(elsewhere, target_is_directory=True)
    result = run({"HOME": str(home), "OPENCODE_DB": "link/../../outside.db"})
    assert found(result) == [(str(db), "opencode_db")]
    assert result.errors == []


def test_OC_DISC_18_tilde_is_literal(home: Path) -> None:
    literal = touch(home, ".local/share/opencode/~/x.db")
    touch(home, "x.db")  # what an expanded ~/x.db would have named
    result = run({"HOME": str(home), "OPENCODE_DB": "~/x.db"})
    assert found(result) == [(str(literal), "opencode_db")]


@pytest.mark.parametrize("value", ["", ":memory:"])
def test_OC_DISC_20_empty_and_memory_add_nothing(home: Path, value: str) -> None:
    touch(home, ".local/share/opencode/:memory:")
    result = run({"HOME": str(home), "OPENCODE_DB": value})
    assert result.sources == []  # not even the default database (none exists here)
    assert result.errors == []


def test_OC_DISC_20_empty_value_keeps_default_discovery(home: Path) -> None:
    db = touch(home, ".local/share/opencode/opencode.db")
    assert found(run({"HOME": str(home), "OPENCODE_DB": ""})) == [(str(db), "opencode_xdg")]


def test_OC_DISC_21_missing_override_target_is_silent(home: Path, tmp_path: Path) -> None:
    (tmp_path / "dir").mkdir()
    result = run({"HOME": str(home), "OPENCODE_DB": str(tmp_path / "dir/none.db")})
    assert result.sources == []
    assert result.errors == []
    # The validated parent is still watched, for that one name only.
    assert result.store_roots == [
        StoreRoot(path=str(tmp_path / "dir"), recursive=False, kinds=(KIND,), exact_files=("none.db",))
    ]


def test_OC_DISC_21_override_with_symlinked_component(home: Path, tmp_path: Path) -> None:
    touch(tmp_path, "real/x.db")
    (tmp_path / "link").symlink_to(tmp_path / "real", target_is_directory=True)
    result = run({"HOME": str(home), "OPENCODE_DB": str(tmp_path / "link/x.db")})
    assert result.sources == []
    assert reasons(result) == [("symlink_component", str(tmp_path / "link"))]
    assert result.store_roots == []


@pytest.mark.parametrize("dangling", [False, True])
def test_OC_DISC_21_override_symlinked_file(home: Path, tmp_path: Path, dangling: bool) -> None:
    (tmp_path / "d").mkdir()
    target = tmp_path / "real.db"
    if not dangling:
        target.touch()
    (tmp_path / "d/x.db").symlink_to(target)
    result = run({"HOME": str(home), "OPENCODE_DB": str(tmp_path / "d/x.db")})
    assert result.sources == []
    assert reasons(result) == [("symlink", str(tmp_path / "d/x.db"))]


def test_OC_DISC_21_override_not_a_regular_file(home: Path, tmp_path: Path) -> None:
    (tmp_path / "d/x.db").mkdir(parents=True)
    result = run({"HOME": str(home), "OPENCODE_DB": str(tmp_path / "d/x.db")})
    assert reasons(result) == [("not_regular_file", str(tmp_path / "d/x.db"))]


def test_OC_DISC_14_override_same_as_default_is_one_source(home: Path) -> None:
    db = touch(home, ".local/share/opencode/opencode.db")
    result = run({"HOME": str(home), "OPENCODE_DB": "opencode.db"})
    assert found(result) == [(str(db), "opencode_xdg")]


def test_OC_DISC_14_override_is_additive(home: Path, tmp_path: Path) -> None:
    default = touch(home, ".local/share/opencode/opencode.db")
    extra = touch(tmp_path, "other/custom.db")
    result = run({"HOME": str(home), "OPENCODE_DB": str(extra)})
    assert sorted(found(result)) == sorted([(str(default), "opencode_xdg"), (str(extra), "opencode_db")])


OVERRIDE_TABLE = [
    # (platform, xdg dir, value, expected)
    ("linux", "/h/.local/share/opencode", "/abs/x.db", "/abs/x.db"),
    ("linux", "/h/.local/share/opencode", "/abs/../y/./x.db", "/y/x.db"),
    ("linux", "/h/.local/share/opencode", "x.db", "/h/.local/share/opencode/x.db"),
    ("linux", "/h/.local/share/opencode", "../../x.db", "/h/.local/x.db"),
    ("linux", "/h/.local/share/opencode", "~/x.db", "/h/.local/share/opencode/~/x.db"),
    ("linux", "/h/.local/share/opencode", "", None),
    ("linux", "/h/.local/share/opencode", ":memory:", None),
    ("linux", "/h/.local/share/opencode", "./:memory:", "/h/.local/share/opencode/:memory:"),
    ("linux", None, "x.db", None),
    ("windows", "C:\\h\\.local\\share\\opencode", "D:\\abs\\x.db", "D:\\abs\\x.db"),
    ("windows", "C:\\h\\.local\\share\\opencode", "x.db", "C:\\h\\.local\\share\\opencode\\x.db"),
    ("windows", "C:\\h\\.local\\share\\opencode", "..\\x.db", "C:\\h\\.local\\share\\x.db"),
    ("windows", "C:\\h\\.local\\share\\opencode", "sub/x.db", "C:\\h\\.local\\share\\opencode\\sub\\x.db"),
]


@pytest.mark.parametrize(("platform", "xdg", "value", "expected"), OVERRIDE_TABLE)
def test_OC_DISC_15_to_18_override_resolution(
    platform: str, xdg: str | None, value: str, expected: str | None
) -> None:
    roots = explicit_roots("/unused" if platform == "linux" else "C:\\unused", Platform(platform))
    assert resolve_override(value, xdg, roots) == expected


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["a", "b", "..", ".", "~", "x.db", ""]), min_size=1, max_size=8))
def test_OC_DISC_17_override_resolution_property(parts: list[str]) -> None:
    value = "/".join(parts)
    roots = explicit_roots("/unused", Platform.LINUX)
    resolved = resolve_override(value, "/h/d/opencode", roots)
    if value in ("", ":memory:"):
        assert resolved is None
        return
    assert resolved is not None
    assert resolved.startswith("/")
    assert "/./" not in resolved + "/" and "/../" not in resolved + "/"
    assert resolved == os.path.normpath(os.path.join("/h/d/opencode", value))


# ---------------------------------------------------------------- bounded discovery


def test_OC_DISC_23_26_bounded_raises_on_symlink_and_lists_nothing(home: Path, tmp_path: Path) -> None:
    touch(home, ".local/share/opencode/opencode-ok.db")
    (home / ".local/share/opencode/opencode.db").symlink_to(tmp_path / "nowhere.db")
    with pytest.raises(DiscoveryError) as info:
        run({"HOME": str(home)}, bounded=True)
    assert info.value.reason == "symlink"
    # Best effort on the same tree keeps the healthy candidate.
    assert [Path(p).name for p, _ in found(run({"HOME": str(home)}))] == ["opencode-ok.db"]


def test_OC_DISC_25_bounded_rejected_root_is_an_error(home: Path, tmp_path: Path) -> None:
    touch(tmp_path, "real/opencode/opencode.db")
    (tmp_path / "xdg").symlink_to(tmp_path / "real", target_is_directory=True)
    with pytest.raises(DiscoveryError) as info:
        run({"HOME": str(home), "XDG_DATA_HOME": str(tmp_path / "xdg")}, bounded=True)
    assert info.value.reason == "symlink_component"


def test_OC_DISC_24_budget_charges_directory_entries(home: Path) -> None:
    data = home / ".local/share/opencode"
    for i in range(50):
        touch(data, f"opencode-c{i}.db")
    probes_for_components = len(Path(data).parts) - len(Path(home).parts) + 1  # home, .local, share, opencode
    with pytest.raises(DiscoveryError) as info:
        run({"HOME": str(home)}, bounded=True, budget=50 + probes_for_components - 1)
    assert info.value.reason == "budget_exceeded"
    ok = run({"HOME": str(home)}, bounded=True, budget=50 + probes_for_components)
    assert len(ok.sources) == 50


def test_OC_DISC_24_budget_charges_configured_path_components(home: Path, tmp_path: Path) -> None:
    db = touch(tmp_path, "a/b/c/d/e/f/g/h/x.db")
    components = len(db.parts)  # "/", "/tmp", ... , "x.db"
    env = {"HOME": str(home), "OPENCODE_DB": str(db)}
    # home itself is probed (missing ~/.local stops the XDG chain after two probes).
    baseline = run(env, bounded=True)
    assert [p for p, _ in found(baseline)] == [str(db)]
    with pytest.raises(DiscoveryError, match="budget_exceeded"):
        run(env, bounded=True, budget=components)


# ---------------------------------------------------------------- explicit root (OC-DISC-27)


def test_OC_DISC_27_explicit_root_ignores_override_and_channels(tmp_path: Path) -> None:
    root = tmp_path / "root"
    default = touch(root, ".local/share/opencode/opencode.db")
    touch(root, ".local/share/opencode/opencode-beta.db")
    override = touch(tmp_path, "custom.db")
    touch(tmp_path, "xdg/opencode/opencode.db")
    env = {"OPENCODE_DB": str(override), "XDG_DATA_HOME": str(tmp_path / "xdg"), "HOME": str(tmp_path)}
    result = run(env, root=str(root))
    assert found(result) == [(str(default), "explicit_root")]
    assert result.store_roots == [
        StoreRoot(path=str(default.parent), recursive=False, kinds=(KIND,), exact_files=("opencode.db",))
    ]


@pytest.mark.parametrize(
    ("platform", "relative"),
    [
        ("linux", ".local/share/opencode/opencode.db"),
        ("darwin", "Library/Application Support/opencode/opencode.db"),
        ("darwin", ".local/share/opencode/opencode.db"),
        ("linux", "opencode/opencode.db"),  # the root used as a data home
    ],
)
def test_OC_DISC_27_explicit_root_home_and_data_home_candidates(
    tmp_path: Path, platform: str, relative: str
) -> None:
    db = touch(tmp_path / "root", relative)
    touch(tmp_path / "root", ".claude/settings.json")  # a real-looking home, not a fixture tree
    result = run({}, root=str(tmp_path / "root"), platform=platform)
    assert found(result) == [(str(db), "explicit_root")]
    assert result.fixture_tree is False


def test_OC_DISC_27_explicit_root_windows_appdata(tmp_path: Path) -> None:
    touch(tmp_path, "D/r/AppData/Local/opencode/opencode.db")
    result = run(
        {"LOCALAPPDATA": "C:\\ignored"}, root="D:\\r", platform="windows", host_path=windows_mapper(tmp_path)
    )
    assert found(result) == [("D:\\r\\AppData\\Local\\opencode\\opencode.db", "explicit_root")]


def test_OC_DISC_27_explicit_root_symlinked_db_still_rejected(tmp_path: Path) -> None:
    data = tmp_path / "root/.local/share/opencode"
    data.mkdir(parents=True)
    (data / "opencode.db").symlink_to(tmp_path / "missing.db")
    result = run({}, root=str(tmp_path / "root"))
    assert result.sources == []
    assert reasons(result) == [("symlink", str(data / "opencode.db"))]


# ---------------------------------------------------------------- store roots (OC-DISC-30, WATCH-1)


def test_OC_DISC_30_store_roots_non_recursive_and_exact(home: Path, tmp_path: Path) -> None:
    touch(home, ".local/share/opencode/opencode.db")
    (home / "Library/Application Support/opencode").mkdir(parents=True)
    env = {"HOME": str(home), "OPENCODE_DB": str(touch(tmp_path, "o/custom.db"))}
    result = run(env, platform="darwin")
    assert result.store_roots == sorted(
        [
            StoreRoot(path=str(home / ".local/share/opencode"), recursive=False, kinds=(KIND,)),
            StoreRoot(
                path=str(home / "Library/Application Support/opencode"),
                recursive=False,
                kinds=(KIND,),
                exact_files=("opencode.db",),
            ),
            StoreRoot(path=str(tmp_path / "o"), recursive=False, kinds=(KIND,), exact_files=("custom.db",)),
        ],
        key=lambda r: r.path,
    )


def test_WATCH_1_override_parent_inside_xdg_dir_merges_to_pattern_root(home: Path) -> None:
    touch(home, ".local/share/opencode/custom.db")
    result = run({"HOME": str(home), "OPENCODE_DB": "custom.db"})
    assert result.store_roots == [
        StoreRoot(path=str(home / ".local/share/opencode"), recursive=False, kinds=(KIND,))
    ]


def test_WATCH_1_recursion_only_when_another_source_needs_it(home: Path) -> None:
    # An override whose parent is the (recursive) Codex sessions root: one merged root that
    # recurses and is not name-filtered; the XDG directory stays non-recursive.
    touch(home, ".local/share/opencode/opencode.db")
    touch(home, ".codex/sessions/2026/r.jsonl")
    custom = touch(home, ".codex/sessions/custom.db")
    env = {"HOME": str(home), "OPENCODE_DB": str(custom)}
    result = discover(DiscoveryOptions(env=env, platform="linux", clients=("opencode", "codex.sessions")))
    roots = {r.path: r for r in result.store_roots}
    assert roots[str(home / ".local/share/opencode")] == StoreRoot(
        path=str(home / ".local/share/opencode"), recursive=False, kinds=(KIND,)
    )
    assert roots[str(home / ".codex/sessions")] == StoreRoot(
        path=str(home / ".codex/sessions"), recursive=True, kinds=("codex.sessions", KIND)
    )
    assert {(s.kind, Path(s.path).name) for s in result.sources} == {
        (KIND, "opencode.db"),
        (KIND, "custom.db"),
        ("codex.sessions", "r.jsonl"),
    }
