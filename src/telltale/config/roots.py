"""The configuration roots: which directories Telltale reads its configuration from, in which order.

A *root* is a directory that may hold ``config.yaml``, ``outputs.yaml`` and named drop-in
directories (``outputs.d/``, ``rules.d/``, ``overrides.d/``, ``policies.d/``,
``allowlists.d/`` ...). The roots of a run come from the profile and two flags:

=====================  ======================================================================
how                    roots (lowest precedence first)
=====================  ======================================================================
``--profile user``     system root, then the user root (a user setting beats the system one)
``--profile system``   the system root only: a monitored user (or an agent running as that
                       user) cannot turn rules off, allowlist itself or change outputs
``--config-dir D``     exactly the given directories, in the given order (repeatable; the
                       last one given wins); replaces both default roots
``--no-local-config``  no default root is read (``--config-dir`` roots still are)
=====================  ======================================================================

System roots: ``/etc/telltale`` (Linux and other Unix), ``/Library/Application
Support/Telltale`` (macOS), ``%ProgramData%\\Telltale`` (Windows). ``TELLTALE_SYSTEM_CONFIG_DIR``
moves it (tests, packagers). The user root is platformdirs' user config directory
(``~/.config/telltale`` on Linux, honouring ``XDG_CONFIG_HOME``).

Using it from a command::

    from telltale.config.roots import add_config_root_arguments, roots_from_args

    add_config_root_arguments(parser)              # --config-dir, --no-local-config
    roots = roots_from_args(args)                  # honours --profile when the parser has it
    for f in roots.dropins("rules.d"):             # every rules.d/*.yaml|*.yml, in precedence order
        load(f.path)                               # f.origin: "user ~/.config/telltale/rules.d/x.yaml"
    for f in roots.files("config.yaml"):           # the config.yaml of each root that has one
        ...

Drop-in order: roots lowest precedence first; within a root, file names in byte order (so
``10-base.yaml`` comes before ``50-site.yaml``). Additive kinds (rules) use every file;
"last one wins" kinds (overrides by id, outputs by name) apply them in this order. Hidden
files and editor leftovers (``.x.yaml``, ``x.yaml~``, ``x.yaml.swp``) are never read
because only the named suffixes are.
"""

from __future__ import annotations

import argparse
import enum
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import msgspec
import platformdirs

__all__ = [
    "SYSTEM_CONFIG_ENV",
    "ConfigFile",
    "ConfigRoot",
    "ConfigRoots",
    "Profile",
    "RootScope",
    "add_config_root_arguments",
    "resolve_roots",
    "roots_from_args",
    "system_config_dir",
    "user_config_dir",
]

#: Environment variable that moves the system root (tests, packagers). Not a ``config.yaml`` key.
SYSTEM_CONFIG_ENV = "TELLTALE_SYSTEM_CONFIG_DIR"

#: Suffixes read from drop-in directories unless a caller asks for others.
YAML_SUFFIXES: tuple[str, ...] = (".yaml", ".yml")


class Profile(enum.StrEnum):
    """Whose machine view a run takes: one user's (default) or the host's, as a service."""

    USER = "user"
    SYSTEM = "system"


class RootScope(enum.StrEnum):
    """Where a root came from; printed with every value so an operator knows which file to edit."""

    SYSTEM = "system"
    USER = "user"
    CONFIG_DIR = "config-dir"


class ConfigRoot(msgspec.Struct, frozen=True):
    """One directory Telltale reads configuration from (it need not exist)."""

    path: Path
    scope: RootScope

    def __str__(self) -> str:
        return f"{self.scope} {self.path}"


class ConfigFile(msgspec.Struct, frozen=True):
    """A configuration file found in a root, with its provenance."""

    path: Path
    root: ConfigRoot

    @property
    def origin(self) -> str:
        """``"system /etc/telltale/rules.d/10-site.yaml"``: scope and file, for messages and provenance."""
        return f"{self.root.scope} {self.path}"


class ConfigRoots(msgspec.Struct, frozen=True):
    """The roots of one run, lowest precedence first."""

    roots: tuple[ConfigRoot, ...]
    profile: Profile = Profile.USER

    def __iter__(self) -> Iterator[ConfigRoot]:
        return iter(self.roots)

    def __len__(self) -> int:
        return len(self.roots)

    def files(self, name: str) -> list[ConfigFile]:
        """The file ``name`` (e.g. ``config.yaml``) of every root that has it, lowest precedence first."""
        found: list[ConfigFile] = []
        for root in self.roots:
            path = root.path / name
            if path.is_file():
                found.append(ConfigFile(path, root))
        return found

    def dropins(self, directory: str, suffixes: Sequence[str] = YAML_SUFFIXES) -> list[ConfigFile]:
        """Every file of ``<root>/<directory>/`` with one of ``suffixes``, lowest precedence first.

        Roots in order; within a root, by file name. Subdirectories and other files are
        ignored; a missing directory contributes nothing; an unreadable one is an error for
        the caller to report (``OSError`` is not swallowed: a configuration that cannot be
        read must not silently shrink).
        """
        found: list[ConfigFile] = []
        for root in self.roots:
            base = root.path / directory
            try:
                names = sorted(os.listdir(base))
            except (FileNotFoundError, NotADirectoryError):
                continue
            for name in names:
                if name.startswith(".") or not name.endswith(tuple(suffixes)):
                    continue
                path = base / name
                if path.is_file():
                    found.append(ConfigFile(path, root))
        return found

    def highest(self) -> ConfigRoot | None:
        """The root a user edit belongs in (the last, highest-precedence one), if any."""
        return self.roots[-1] if self.roots else None

    def describe(self) -> list[str]:
        """One line per root, highest precedence first, for ``config validate``."""
        return [str(root) for root in reversed(self.roots)]


def system_config_dir(platform: str | None = None, environ: dict[str, str] | None = None) -> Path:
    """The host-wide root for this platform (``TELLTALE_SYSTEM_CONFIG_DIR`` moves it)."""
    env = os.environ if environ is None else environ
    override = env.get(SYSTEM_CONFIG_ENV)
    if override:
        return Path(override)
    platform = sys.platform if platform is None else platform
    if platform == "darwin":
        return Path("/Library/Application Support/Telltale")
    if platform.startswith("win"):
        return Path(env.get("PROGRAMDATA") or env.get("ProgramData") or r"C:\ProgramData") / "Telltale"
    return Path("/etc/telltale")


def user_config_dir() -> Path:
    """The user's root (platformdirs; ``XDG_CONFIG_HOME`` on Linux). Where ``outputs.yaml`` always lived."""
    return Path(platformdirs.user_config_dir("telltale"))


def resolve_roots(
    profile: Profile | str = Profile.USER,
    config_dirs: Sequence[str | os.PathLike[str]] = (),
    *,
    no_local_config: bool = False,
) -> ConfigRoots:
    """The roots of a run, lowest precedence first (see the module docstring for the table)."""
    profile = Profile(profile)
    if config_dirs:
        roots = tuple(
            ConfigRoot(Path(os.path.abspath(os.path.expanduser(os.fspath(d)))), RootScope.CONFIG_DIR)
            for d in config_dirs
        )
        return ConfigRoots(roots, profile)
    if no_local_config:
        return ConfigRoots((), profile)
    system = ConfigRoot(system_config_dir(), RootScope.SYSTEM)
    if profile is Profile.SYSTEM:
        return ConfigRoots((system,), profile)
    return ConfigRoots((system, ConfigRoot(user_config_dir(), RootScope.USER)), profile)


def add_config_root_arguments(parser: argparse.ArgumentParser, *, profile: bool = True) -> None:
    """``--profile``, ``--config-dir`` (repeatable) and ``--no-local-config`` on a command that reads
    configuration (``profile=False`` when the command has its own ``--profile``)."""
    group = parser.add_argument_group("configuration")
    if profile:
        group.add_argument(
            "--profile",
            choices=tuple(Profile),
            default=Profile.USER.value,
            help="user (default): this user's state, log and configuration (system root, then user root); "
            "system: the host's (/var/lib/telltale, /var/log/telltale, the system root only)",
        )
    group.add_argument(
        "--config-dir",
        action="append",
        metavar="DIR",
        help="read configuration (config.yaml, outputs.d/, rules.d/ ...) from DIR instead of the system and "
        "user roots (repeatable; a later DIR wins)",
    )
    group.add_argument(
        "--no-local-config",
        action="store_true",
        help="read no configuration from the system and user roots (only --config-dir, flags and environment)",
    )


def roots_from_args(args: argparse.Namespace) -> ConfigRoots:
    """The roots named by a parsed command line (``--profile`` when the command has it, else user)."""
    return resolve_roots(
        getattr(args, "profile", None) or Profile.USER,
        tuple(getattr(args, "config_dir", None) or ()),
        no_local_config=bool(getattr(args, "no_local_config", False)),
    )
