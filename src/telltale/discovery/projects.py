"""Project roots: where project-local stores (Copilot ``logs/copilot``) are searched.

Sources of project roots, in precedence order (seed "Project Roots", PROJ-4..7):

1. every ``--project-config FILE`` flag, in order;
2. otherwise ``TELLTALE_PROJECT_CONFIG``, a platform-native path list;
3. otherwise the defaults ``~/github`` and ``~/projects``, each only if it exists.

A config file is YAML ``projects: [{name, path}]``. A malformed file is a
:class:`~telltale.errors.ConfigError` naming the file and the problem (never its
content); a project directory that is missing is a discovery issue, not a config error.
"""

from __future__ import annotations

import stat
from typing import Any

import msgspec

from telltale.discovery.roots import Flavour
from telltale.discovery.walk import Probe
from telltale.errors import ConfigError


def _safe_load(text: str) -> Any:
    """YAML through a safe loader (the C one when PyYAML has it), imported only when a
    project config exists: most scans have none."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(text, Loader=loader)  # a safe loader (CSafeLoader or SafeLoader)


#: Project configs are small; a larger file is rejected before parsing.
MAX_CONFIG_BYTES = 1 << 20
#: Default project roots below the home directory (PROJ-2).
DEFAULT_PROJECT_DIRS: tuple[str, ...] = ("github", "projects")
#: How many directory levels below a project root are searched for the store subpath
#: (so ``~/github/<repo>/logs/copilot`` and ``~/github/<org>/<repo>/logs/copilot`` are found).
WORKSPACE_DEPTH = 2
#: The environment variable naming project config files when no flag is given.
PROJECT_CONFIG_ENV = "TELLTALE_PROJECT_CONFIG"

_ENTRY_KEYS = frozenset({"name", "path"})


class ProjectRoot(msgspec.Struct, frozen=True):
    """A project (or workspace) directory; ``origin`` is the config file or ``default``."""

    name: str
    path: str
    origin: str


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 64 else text[:61] + "..."


def expand_user(path: str, home: str | None, flavour: Flavour) -> str | None:
    """Expand a leading ``~`` (alone or followed by a separator); ``~user`` stays literal."""
    seps = ("/", "\\") if flavour.windows else ("/",)
    if path == "~" or (path.startswith("~") and len(path) > 1 and path[1] in seps):
        if home is None:
            return None
        rest = path[2:]
        return flavour.join(home, rest) if rest else home
    return path


def parse_project_config(
    data: bytes, *, config_path: str, home: str | None, flavour: Flavour
) -> list[ProjectRoot]:
    """Validate a project config's bytes; raise ConfigError naming the file and the problem."""

    def fail(problem: str) -> ConfigError:
        return ConfigError(f"project config {config_path}: {problem}")

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise fail("not valid UTF-8") from None
    import yaml

    try:
        doc = _safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        raise fail(f"invalid YAML{where}") from None
    except yaml.YAMLError:
        raise fail("invalid YAML") from None
    if doc is None:
        raise fail("empty file; expected a mapping with a 'projects' list")
    if not isinstance(doc, dict):
        raise fail("top level must be a mapping with a 'projects' list")
    for key in doc:
        if key != "projects":
            raise fail(f"unknown top-level key {_short(key)}")
    if "projects" not in doc:
        raise fail("missing 'projects' list")
    entries = doc["projects"]
    if not isinstance(entries, list):
        raise fail("'projects' must be a list")
    base = flavour.dirname(config_path)
    projects: list[ProjectRoot] = []
    for index, entry in enumerate(entries):
        where = f"projects[{index}]"
        if not isinstance(entry, dict):
            raise fail(f"{where} must be a mapping with 'name' and 'path'")
        for key in entry:
            if key not in _ENTRY_KEYS:
                raise fail(f"{where}: unknown key {_short(key)}")
        for key in ("name", "path"):
            value = entry.get(key)
            if not isinstance(value, str) or not value.strip():
                raise fail(f"{where}.{key} must be a non-empty string")
            if "\x00" in value:
                raise fail(f"{where}.{key} contains a NUL character")
        expanded = expand_user(entry["path"], home, flavour)
        if expanded is None:
            raise fail(f"{where}.path starts with '~' but no home directory is known")
        if not flavour.isabs(expanded):
            expanded = flavour.join(base, expanded) if base else expanded
        projects.append(ProjectRoot(name=entry["name"], path=flavour.normpath(expanded), origin=config_path))
    return projects


def load_project_config(probe: Probe, config_path: str, home: str | None) -> list[ProjectRoot]:
    """Read and validate one project config file (a missing file is a ConfigError too)."""
    host = probe.host(config_path)
    try:
        with open(host, "rb") as handle:
            data = handle.read(MAX_CONFIG_BYTES + 1)
    except FileNotFoundError:
        raise ConfigError(f"project config {config_path}: file not found") from None
    except IsADirectoryError:
        raise ConfigError(f"project config {config_path}: is a directory") from None
    except OSError as exc:
        raise ConfigError(f"project config {config_path}: cannot read ({type(exc).__name__})") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(f"project config {config_path}: larger than {MAX_CONFIG_BYTES} bytes")
    return parse_project_config(data, config_path=config_path, home=home, flavour=probe.flavour)


def configured_files(
    flags: tuple[str, ...], env_value: str | None, flavour: Flavour
) -> tuple[list[str], bool]:
    """Config files to load and whether any were given (flags win over the variable)."""
    if flags:
        return list(flags), True
    if env_value:
        files = flavour.split_list(env_value)
        return files, bool(files)
    return [], False


def resolve_project_roots(
    probe: Probe,
    *,
    flags: tuple[str, ...],
    env_value: str | None,
    home: str | None,
    use_defaults: bool,
) -> list[ProjectRoot]:
    """Project roots per the precedence above (``env_value``: the variable, or ``None``)."""
    flavour = probe.flavour
    files, configured = configured_files(flags, env_value, flavour)
    roots: list[ProjectRoot] = []
    if configured:
        for config_path in files:
            roots.extend(load_project_config(probe, config_path, home))
    elif use_defaults and home is not None:
        for name in DEFAULT_PROJECT_DIRS:
            path = flavour.join(home, name)
            found = probe.stat(path)
            if found is not None and stat.S_ISDIR(found.st_mode):
                roots.append(ProjectRoot(name=name, path=path, origin="default"))
    unique: dict[str, ProjectRoot] = {}
    for root in roots:
        unique.setdefault(flavour.key(root.path), root)
    return list(unique.values())


def project_store_dirs(probe: Probe, project: str, relative: str) -> list[str]:
    """Existing ``relative`` store directories at and below a project root.

    The project root itself, then up to :data:`WORKSPACE_DEPTH` levels of non-hidden,
    non-linked subdirectories (workspace layouts). Every component of ``relative`` must
    be a real directory: a linked ``logs`` or ``copilot`` is reported, not followed.
    """
    flavour = probe.flavour
    parts = [part for part in relative.split("/") if part]
    found: list[str] = []

    def check(base: str) -> None:
        current = base
        for part in parts:
            current = flavour.join(current, part)
            st = probe.lstat(current)
            if st is None:
                return
            if stat.S_ISLNK(st.st_mode):
                probe.report("symlink", current, "symbolic link not followed")
                return
            if not stat.S_ISDIR(st.st_mode):
                return
        found.append(current)

    level = [project]
    for depth in range(WORKSPACE_DEPTH + 1):
        next_level: list[str] = []
        for base in level:
            check(base)
            if depth == WORKSPACE_DEPTH:
                continue
            entries = probe.scandir(base)
            for entry in entries or ():
                if entry.name.startswith("."):
                    continue
                try:
                    if entry.is_dir(follow_symlinks=False):
                        next_level.append(flavour.join(base, entry.name))
                except OSError:
                    continue
        level = next_level
    return found
