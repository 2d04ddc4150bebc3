"""Project roots (PROJ-1..7) and project-local Copilot logs (COP-1..4, CAND-14)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from telltale.discovery import DiscoveryOptions, DiscoveryResult, discover
from telltale.discovery.projects import expand_user, parse_project_config
from telltale.discovery.roots import Flavour, Platform
from telltale.errors import ConfigError

CANARY = "PRIVATE_CANARY_ghp_FAKEFAKEFAKEFAKE"


def touch(base: Path, relative: str) -> Path:
    path = base.joinpath(*relative.split("/"))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch()
    return path


def write_config(path: Path, projects: list[tuple[str, str]]) -> Path:
    lines = ["projects:"] + [f"  - name: {name}\n    path: '{p}'" for name, p in projects]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def copilot(
    env: dict[str, str], *, root: str = ".", configs: tuple[str, ...] = (), platform: str = "linux"
) -> DiscoveryResult:
    return discover(
        DiscoveryOptions(root=root, env=env, platform=platform, project_configs=configs, clients=("copilot",))
    )


def logs(result: DiscoveryResult) -> list[tuple[str, str]]:
    return [(s.path, s.found_by) for s in result.sources if s.kind == "copilot.process_log"]


# ---------------------------------------------------------------- defaults


def test_PROJ_2_default_roots_when_they_exist(tmp_path: Path) -> None:
    home = tmp_path / "home"
    a = touch(home, "github/repo/logs/copilot/process-1.log")
    b = touch(home, "projects/logs/copilot/p.log")
    result = copilot({"HOME": str(home)})
    assert logs(result) == [(str(a), "project:github"), (str(b), "project:projects")]
    assert all(s.root_type.value == "project_local" for s in result.sources)


def test_PROJ_2_missing_defaults_are_silent(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    result = copilot({"HOME": str(home)})
    assert result.sources == [] and result.errors == []


def test_PROJ_7_config_replaces_defaults(tmp_path: Path) -> None:
    home = tmp_path / "home"
    touch(home, "github/repo/logs/copilot/default.log")
    configured = touch(tmp_path, "work/proj/logs/copilot/cfg.log")
    cfg = write_config(tmp_path / "p.yaml", [("proj", str(tmp_path / "work/proj"))])
    result = copilot({"HOME": str(home)}, configs=(str(cfg),))
    assert logs(result) == [(str(configured), "project:proj")]


def test_PROJ_1_project_discovery_is_additive_to_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    touch(home, ".claude/projects/p/s.jsonl")
    touch(home, "github/r/logs/copilot/x.log")
    result = discover(DiscoveryOptions(env={"HOME": str(home)}, platform="linux"))
    assert [s.kind for s in result.sources] == ["claude.projects", "copilot.process_log"]


# ---------------------------------------------------------------- precedence


def test_PROJ_4_6_flags_win_over_environment_list(tmp_path: Path) -> None:
    a = touch(tmp_path, "a/logs/copilot/a.log")
    b = touch(tmp_path, "b/logs/copilot/b.log")
    cfg_a = write_config(tmp_path / "a.yaml", [("a", str(tmp_path / "a"))])
    cfg_b = write_config(tmp_path / "b.yaml", [("b", str(tmp_path / "b"))])
    env = {"HOME": str(tmp_path / "home"), "TELLTALE_PROJECT_CONFIG": str(cfg_b)}
    assert logs(copilot(env, configs=(str(cfg_a),))) == [(str(a), "project:a")]
    assert logs(copilot(env)) == [(str(b), "project:b")]


def test_PROJ_4_repeated_flags_accumulate(tmp_path: Path) -> None:
    a = touch(tmp_path, "a/logs/copilot/a.log")
    b = touch(tmp_path, "b/logs/copilot/b.log")
    cfg_a = write_config(tmp_path / "a.yaml", [("a", str(tmp_path / "a"))])
    cfg_b = write_config(tmp_path / "b.yaml", [("b", str(tmp_path / "b"))])
    result = copilot({}, configs=(str(cfg_a), str(cfg_b)))
    assert logs(result) == [(str(a), "project:a"), (str(b), "project:b")]


def test_PROJ_6_environment_path_list_uses_platform_separator(tmp_path: Path) -> None:
    a = touch(tmp_path, "a/logs/copilot/a.log")
    b = touch(tmp_path, "b/logs/copilot/b.log")
    cfg_a = write_config(tmp_path / "a.yaml", [("a", str(tmp_path / "a"))])
    cfg_b = write_config(tmp_path / "b.yaml", [("b", str(tmp_path / "b"))])
    env = {"HOME": str(tmp_path / "home"), "TELLTALE_PROJECT_CONFIG": f"{cfg_a}:{cfg_b}:"}
    assert logs(copilot(env)) == [(str(a), "project:a"), (str(b), "project:b")]


def test_PROJ_6_windows_path_list(tmp_path: Path) -> None:
    cfg = tmp_path / "C/cfg/a.yaml"
    cfg.parent.mkdir(parents=True)
    cfg.write_text("projects:\n  - name: w\n    path: 'C:\\work\\w'\n", encoding="utf-8")
    touch(tmp_path, "C/work/w/logs/copilot/w.log")

    def host(path: str) -> str:
        drive, _, rest = path.partition(":")
        return str(tmp_path.joinpath(drive, *[p for p in rest.split("\\") if p]))

    env = {
        "USERPROFILE": "C:\\Users\\me",
        "TELLTALE_PROJECT_CONFIG": "C:\\cfg\\a.yaml;C:\\cfg\\missing-but-unused",
    }
    with pytest.raises(ConfigError, match="missing-but-unused"):  # every list entry is loaded
        discover(DiscoveryOptions(env=env, platform="windows", clients=("copilot",), host_path=host))
    env["TELLTALE_PROJECT_CONFIG"] = "C:\\cfg\\a.yaml;"
    result = discover(DiscoveryOptions(env=env, platform="windows", clients=("copilot",), host_path=host))
    assert logs(result) == [("C:\\work\\w\\logs\\copilot\\w.log", "project:w")]


def test_PROJ_7_empty_environment_value_means_defaults(tmp_path: Path) -> None:
    home = tmp_path / "home"
    a = touch(home, "projects/logs/copilot/a.log")
    assert logs(copilot({"HOME": str(home), "TELLTALE_PROJECT_CONFIG": ""})) == [(str(a), "project:projects")]


# ---------------------------------------------------------------- config file contents


def test_PROJ_3_tilde_and_relative_paths(tmp_path: Path) -> None:
    home = tmp_path / "home"
    a = touch(home, "github/my-project/logs/copilot/a.log")
    b = touch(tmp_path, "cfgdir/rel/logs/copilot/b.log")
    cfg = tmp_path / "cfgdir/p.yaml"
    cfg.write_text(
        "projects:\n  - name: mine\n    path: ~/github/my-project\n  - name: rel\n    path: rel\n",
        encoding="utf-8",
    )
    result = copilot({"HOME": str(home)}, configs=(str(cfg),))
    assert sorted(logs(result)) == sorted([(str(a), "project:mine"), (str(b), "project:rel")])


def test_PROJ_3_tilde_in_explicit_root_mode_is_the_root(tmp_path: Path) -> None:
    root = tmp_path / "root"
    a = touch(root, "github/p/logs/copilot/a.log")
    cfg = tmp_path / "p.yaml"
    cfg.write_text("projects:\n  - name: p\n    path: ~/github/p\n", encoding="utf-8")
    result = copilot({"HOME": str(tmp_path / "other")}, root=str(root), configs=(str(cfg),))
    assert logs(result) == [(str(a), "project:p")]


def test_PROJ_3_expand_user_rules() -> None:
    posix, win = Flavour(Platform.LINUX), Flavour(Platform.WINDOWS)
    assert expand_user("~", "/h", posix) == "/h"
    assert expand_user("~/x", "/h", posix) == "/h/x"
    assert expand_user("~user/x", "/h", posix) == "~user/x"
    assert expand_user("a/~/x", "/h", posix) == "a/~/x"
    assert expand_user("~\\x", "C:\\h", win) == "C:\\h\\x"
    assert expand_user("~\\x", "/h", posix) == "~\\x"
    assert expand_user("~/x", None, posix) is None


MALFORMED = [
    ("empty", "", "empty file"),
    ("scalar", f"projects: {CANARY}\n", "'projects' must be a list"),
    ("list_top", f"- {CANARY}\n", "top level must be a mapping"),
    ("missing_projects", "other: 1\n", "unknown top-level key 'other'"),
    ("no_projects_key", "{}\n", "missing 'projects' list"),
    ("entry_not_mapping", f"projects:\n  - {CANARY}\n", "projects[0] must be a mapping"),
    ("missing_path", "projects:\n  - name: a\n", "projects[0].path must be a non-empty string"),
    ("empty_name", "projects:\n  - name: ''\n    path: /x\n", "projects[0].name must be a non-empty string"),
    ("number_path", "projects:\n  - name: a\n    path: 12\n", "projects[0].path must be a non-empty string"),
    (
        "unknown_key",
        "projects:\n  - name: a\n    path: /x\n    subpath: y\n",
        "projects[0]: unknown key 'subpath'",
    ),
    ("bad_yaml", f"projects: [\n  {CANARY}: {{\n", "invalid YAML at line"),
    ("null_projects", "projects:\n", "'projects' must be a list"),
    ("tab_indent", f"projects:\n\t- name: {CANARY}\n", "invalid YAML"),
    ("python_tag", "projects: !!python/object/apply:os.system ['true']\n", "invalid YAML"),
]


@pytest.mark.parametrize(("text", "problem"), [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED])
def test_PROJ_3_malformed_config_is_a_config_error(tmp_path: Path, text: str, problem: str) -> None:
    cfg = tmp_path / "bad.yaml"
    cfg.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        copilot({"HOME": str(tmp_path)}, configs=(str(cfg),))
    message = str(info.value)
    assert str(cfg) in message
    assert problem in message
    assert CANARY not in message


def test_PROJ_3_unreadable_and_oversized_configs(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="file not found"):
        copilot({}, configs=(str(tmp_path / "none.yaml"),))
    with pytest.raises(ConfigError, match="is a directory"):
        copilot({}, configs=(str(tmp_path),))
    big = tmp_path / "big.yaml"
    big.write_bytes(b"#" * (2 << 20))
    with pytest.raises(ConfigError, match="larger than"):
        copilot({}, configs=(str(big),))
    binary = tmp_path / "bin.yaml"
    binary.write_bytes(b"projects: \xff\xfe\n")
    with pytest.raises(ConfigError, match="not valid UTF-8"):
        copilot({}, configs=(str(binary),))


def test_PROJ_3_malformed_config_in_environment_list(tmp_path: Path) -> None:
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("projects: 3\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"bad\.yaml"):
        copilot({"TELLTALE_PROJECT_CONFIG": str(cfg)})


def test_PROJ_3_empty_projects_list_is_valid(tmp_path: Path) -> None:
    home = tmp_path / "home"
    touch(home, "github/r/logs/copilot/x.log")
    cfg = tmp_path / "p.yaml"
    cfg.write_text("projects: []\n", encoding="utf-8")
    assert copilot({"HOME": str(home)}, configs=(str(cfg),)).sources == []  # and no defaults


def test_PROJ_3_missing_project_directory_is_an_issue(tmp_path: Path) -> None:
    a = touch(tmp_path, "a/logs/copilot/a.log")
    cfg = write_config(tmp_path / "p.yaml", [("gone", str(tmp_path / "gone")), ("a", str(tmp_path / "a"))])
    result = copilot({"HOME": str(tmp_path)}, configs=(str(cfg),))
    assert logs(result) == [(str(a), "project:a")]
    assert [(e.reason, e.path) for e in result.errors] == [("missing_project_root", str(tmp_path / "gone"))]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=200) | st.text(max_size=200).map(lambda t: t.encode("utf-8")))
def test_PROJ_3_parser_only_raises_config_error(data: bytes) -> None:
    try:
        projects = parse_project_config(
            data, config_path="/c/p.yaml", home="/h", flavour=Flavour(Platform.LINUX)
        )
    except ConfigError as exc:
        assert "/c/p.yaml" in str(exc)
    else:
        assert all(p.path.startswith("/") and p.name for p in projects)


# ---------------------------------------------------------------- project-local layout and Copilot


def test_COP_1_workspace_depth_and_hidden_directories(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    direct = touch(ws, "logs/copilot/0.log")
    one = touch(ws, "repo/logs/copilot/1.log")
    two = touch(ws, "org/repo/logs/copilot/2.log")
    touch(ws, "a/b/c/logs/copilot/3.log")  # too deep
    touch(ws, ".hidden/logs/copilot/h.log")  # hidden workspace dirs are skipped
    touch(ws, "repo/logs/copilot/nested/n.log")  # not recursive
    touch(ws, "repo/logs/copilot/notes.txt")
    cfg = write_config(tmp_path / "p.yaml", [("ws", str(ws))])
    result = copilot({}, configs=(str(cfg),))
    assert sorted(p for p, _ in logs(result)) == sorted([str(direct), str(one), str(two)])
    assert {r.path for r in result.store_roots} == {str(p.parent) for p in (direct, one, two)}
    assert all(not r.recursive for r in result.store_roots)


def test_COP_1_linked_repositories_and_components_not_followed(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    touch(tmp_path, "outside/logs/copilot/o.log")
    (ws / "linked-repo").symlink_to(tmp_path / "outside", target_is_directory=True)
    (ws / "repo").mkdir()
    (ws / "repo/logs").symlink_to(tmp_path / "outside/logs", target_is_directory=True)
    cfg = write_config(tmp_path / "p.yaml", [("ws", str(ws))])
    result = copilot({"HOME": str(tmp_path)}, configs=(str(cfg),))
    assert result.sources == []
    assert [(e.reason, e.path) for e in result.errors] == [("symlink", str(ws / "repo/logs"))]


def test_COP_2_3_home_and_copilot_home_logs_never_discovered(tmp_path: Path) -> None:
    home = tmp_path / "home"
    touch(home, ".copilot/logs/process-1700000000000-42.log")
    touch(tmp_path, "ch/logs/process-1700000000000-43.log")
    state = touch(tmp_path, "ch/session-state/s1/events.jsonl")
    result = copilot({"HOME": str(home), "COPILOT_HOME": str(tmp_path / "ch")})
    assert [(s.kind, s.path, s.found_by) for s in result.sources] == [
        ("copilot.session_state", str(state), "env:COPILOT_HOME")
    ]
    explicit = copilot({}, root=str(home))
    assert explicit.sources == []


def test_COP_4_explicit_root_finds_project_local_logs_under_its_defaults(tmp_path: Path) -> None:
    root = tmp_path / "root"
    a = touch(root, "projects/app/logs/copilot/a.log")
    touch(root, "logs/copilot/not-a-project.log")  # the root itself is a home, not a project
    touch(tmp_path / "envhome", "github/r/logs/copilot/env.log")
    result = copilot({"HOME": str(tmp_path / "envhome")}, root=str(root))
    assert logs(result) == [(str(a), "project:projects")]


def test_COP_4_fixture_tree_copilot_logs_and_no_host_projects(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    fixture_log = touch(tree, "copilot/process-multi-session.log")
    touch(tree, "copilot/nested/deeper.log")
    home = tmp_path / "home"
    touch(home, "github/r/logs/copilot/host.log")
    env_cfg = write_config(tmp_path / "env.yaml", [("envp", str(home / "github/r"))])
    env = {"HOME": str(home), "TELLTALE_PROJECT_CONFIG": str(env_cfg)}
    result = copilot(env, root=str(tree))
    assert result.fixture_tree is True
    assert logs(result) == [(str(fixture_log), "fixture")]
    # A project config named on the command line still applies to a fixture tree.
    flag_cfg = write_config(tmp_path / "flag.yaml", [("flagp", str(home / "github/r"))])
    with_flag = copilot(env, root=str(tree), configs=(str(flag_cfg),))
    assert sorted(fb for _, fb in logs(with_flag)) == ["fixture", "project:flagp"]


def test_PROJ_5_registry_subpath_only(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    touch(ws, "log/copilot/a.log")
    touch(ws, "logs/Copilot/a.log")
    touch(ws, "logs/copilot-old/a.log")
    cfg = write_config(tmp_path / "p.yaml", [("ws", str(ws))])
    assert copilot({}, configs=(str(cfg),)).sources == []


def test_PROJ_4_duplicate_project_paths_found_once(tmp_path: Path) -> None:
    a = touch(tmp_path, "a/logs/copilot/a.log")
    cfg = write_config(
        tmp_path / "p.yaml", [("one", str(tmp_path / "a")), ("two", str(tmp_path / "a") + os.sep)]
    )
    assert logs(copilot({}, configs=(str(cfg),))) == [(str(a), "project:one")]
