"""``config.yaml`` and ``TELLTALE_<KEY>``: every scan/watch option a flag has, from one place.

A key is a long flag's name with ``_`` (``--log-path`` -> ``log_path``); its value is what the
flag would take (a list for a repeatable flag, ``true``/``false`` for a switch). Precedence,
highest first::

    flag  ->  TELLTALE_<KEY> environment  ->  config.yaml of the roots (last root first)  ->  default

so in the user profile a user's ``config.yaml`` beats the system one, and in the system profile
only the system root is read (see :mod:`telltale.config.roots`). Run-mode flags (``--once``,
``--dry-run``, ``--backfill``, ``--history``) describe one invocation and are refused in a file
or the environment, as are the flags that choose the configuration itself.

Wiring a command::

    parser = sub.add_parser("scan", ...)
    ...                                  # add its arguments
    configurable(parser)                 # last: its flags become settings keys

    def run(args):
        apply_settings(args)             # first: fills every flag not given on the command line
        ...

``apply_settings`` leaves ``args`` exactly as if the winning values had been typed as flags,
and records where each came from in ``args.settings`` (shown by ``config validate``).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import msgspec

from telltale.config.roots import ConfigFile, ConfigRoots, roots_from_args
from telltale.config.yamlfile import YamlDoc, load_yaml
from telltale.errors import ConfigError, UsageError

__all__ = [
    "CONFIG_FILE",
    "ENV_PREFIX",
    "REFUSED",
    "Setting",
    "Settings",
    "SettingsSpec",
    "apply_settings",
    "configurable",
    "resolve_settings",
]

CONFIG_FILE = "config.yaml"
ENV_PREFIX = "TELLTALE_"

#: Keys a file or the environment may not set, and why.
REFUSED: dict[str, str] = {
    "once": "a run-mode flag: give it on the command line",
    "dry_run": "a run-mode flag: give it on the command line",
    "backfill": "a run-mode flag: give it on the command line",
    "history": "a run-mode flag: give it on the command line",
    "profile": "chooses which configuration is read: give it on the command line",
    "config_dir": "chooses which configuration is read: give it on the command line",
    "no_local_config": "chooses which configuration is read: give it on the command line",
}

#: Keys holding paths: relative values in a file are relative to that file's directory, and
#: list values in the environment are split on the platform's path separator.
PATH_KEYS = frozenset({"log_path", "state_path", "outputs", "rules", "allowlist", "project_config"})

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off", ""})


class _Unset:
    """The default of a configurable flag until :func:`apply_settings` decides it."""

    __slots__ = ("default",)

    def __init__(self, default: Any) -> None:
        self.default = default

    def __repr__(self) -> str:
        return repr(self.default)

    def __str__(self) -> str:  # ``%(default)s`` in a flag's help shows the real default
        return str(self.default)


class _Key(msgspec.Struct, frozen=True):
    name: str
    flag: str
    kind: str  # "switch" | "list" | "value"
    default: Any
    convert: Callable[[str], Any] | None
    choices: tuple[Any, ...] | None


class SettingsSpec(msgspec.Struct, frozen=True):
    """The settings keys of one command, taken from its parser."""

    command: str
    keys: dict[str, _Key]

    def merged(self, other: SettingsSpec) -> SettingsSpec:
        return SettingsSpec(f"{self.command}+{other.command}", {**other.keys, **self.keys})


class Setting(msgspec.Struct, frozen=True):
    """One effective value and where it came from: ``flag``, ``env TELLTALE_X``, ``<scope> <file>:<line>``
    or ``default``."""

    key: str
    value: Any
    origin: str


class Settings(msgspec.Struct):
    """The effective settings of a run, in key order, with the files that were read."""

    roots: ConfigRoots
    values: dict[str, Setting] = msgspec.field(default_factory=dict)
    files: list[str] = msgspec.field(default_factory=list)

    def origin(self, key: str) -> str:
        setting = self.values.get(key)
        return setting.origin if setting is not None else "default"


def configurable(parser: argparse.ArgumentParser, command: str | None = None) -> SettingsSpec:
    """Make every long flag of ``parser`` a settings key (call after adding its arguments)."""
    keys: dict[str, _Key] = {}
    for action in parser._actions:
        longs = [o for o in action.option_strings if o.startswith("--")]
        if not longs or action.dest in ("help", "version") or action.help == argparse.SUPPRESS:
            continue
        if isinstance(action, argparse._StoreTrueAction):
            kind = "switch"
        elif isinstance(action, argparse._AppendAction):
            kind = "list"
        elif type(action) is argparse._StoreAction:
            kind = "value"
        else:
            continue
        keys[action.dest] = _Key(
            name=action.dest,
            flag=longs[0],
            kind=kind,
            default=action.default,
            convert=action.type if callable(action.type) else None,
            choices=tuple(action.choices) if action.choices is not None else None,
        )
        if kind != "list":  # an append flag starts from None already: None means "not given"
            action.default = _Unset(action.default)
    spec = SettingsSpec(command or parser.prog.split()[-1], keys)
    parser.set_defaults(settings_spec=spec)
    return spec


def _is_unset(args: argparse.Namespace, key: _Key) -> bool:
    value = getattr(args, key.name, None)
    return value is None if key.kind == "list" else isinstance(value, _Unset)


def _coerce(key: _Key, value: Any, *, from_env: bool, base: Path | None) -> Any:
    """A file or environment value as the flag would have produced it; ``ValueError`` says why not."""
    if key.kind == "switch":
        if isinstance(value, bool):
            return value
        if from_env and isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
            return value.strip().lower() in _TRUE
        raise ValueError("must be true or false")
    if key.kind == "list":
        if from_env:
            sep = os.pathsep if key.name in PATH_KEYS else ","
            items: list[Any] = [v.strip() for v in str(value).split(sep) if v.strip()]
        elif isinstance(value, list):
            items = value
        elif isinstance(value, str):
            items = [value]
        else:
            raise ValueError("must be a list of strings")
        out = []
        for item in items:
            if not isinstance(item, str):
                raise ValueError("must be a list of strings")
            out.append(_one(key, _path(key, item, base), from_env=from_env))
        return out
    if isinstance(value, str):
        value = _path(key, value, base)
    return _one(key, value, from_env=from_env)


def _path(key: _Key, value: str, base: Path | None) -> str:
    if key.name not in PATH_KEYS:
        return value
    value = os.path.expanduser(value)
    if base is not None and not os.path.isabs(value):
        return str(base / value)
    return value


def _one(key: _Key, value: Any, *, from_env: bool) -> Any:
    if isinstance(value, bool) or value is None or isinstance(value, (list, dict)):
        raise ValueError(f"must be a {'number' if key.convert in (int, float) else 'single value'}")
    convert = key.convert
    if convert is float and isinstance(value, int):
        value = float(value)
    elif convert is int and isinstance(value, float):
        raise ValueError("must be a whole number")
    elif convert is not None and (isinstance(value, str) or convert not in (int, float)):
        # A flag's own parser (``--jobs``, sizes, durations) checks a file's number as it
        # checks the flag's text: a range is never skipped because YAML gave an int.
        try:
            value = convert(value if isinstance(value, str) else str(value))
        except (argparse.ArgumentTypeError, ValueError, TypeError) as exc:
            raise ValueError(str(exc) or f"not a valid value for {key.flag}") from None
    elif convert is not None and not isinstance(value, (int, float)):
        raise ValueError(f"not a valid value for {key.flag}")
    elif convert is None and not isinstance(value, str):
        value = str(value) if isinstance(value, (int, float)) and from_env else value
        if not isinstance(value, str):
            raise ValueError("must be a string")
    if key.choices is not None and value not in key.choices:
        raise ValueError(f"must be one of {', '.join(map(str, key.choices))}")
    return value


def _read_files(files: Iterable[ConfigFile], spec: SettingsSpec) -> list[tuple[ConfigFile, YamlDoc]]:
    docs = []
    for f in files:
        doc = load_yaml(f.path)
        if doc.data is None:
            docs.append((f, doc))
            continue
        if not isinstance(doc.data, dict):
            raise ConfigError(f"{doc.where()}: the top level must be a mapping of settings")
        for name in doc.data:
            if name in REFUSED:
                raise doc.error(f"not allowed in {CONFIG_FILE}: {REFUSED[name]}", name)
            if name not in spec.keys:
                raise doc.error("unknown key (keys are long flag names with _, e.g. log_path)", name)
        docs.append((f, doc))
    return docs


def resolve_settings(
    spec: SettingsSpec,
    roots: ConfigRoots,
    *,
    given: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
) -> Settings:
    """Every key's effective value and origin. ``given``: the values typed as flags."""
    env = os.environ if environ is None else environ
    given = given or {}
    docs = _read_files(roots.files(CONFIG_FILE), spec)
    settings = Settings(roots, files=[f.origin for f, _ in docs])
    for name, key in spec.keys.items():
        if name in given:
            settings.values[name] = Setting(name, given[name], "flag")
            continue
        var = ENV_PREFIX + name.upper()
        if name not in REFUSED and env.get(var) is not None:
            try:
                value = _coerce(key, env[var], from_env=True, base=None)
            except ValueError as exc:
                raise UsageError(f"environment {var}: {exc}") from None
            settings.values[name] = Setting(name, value, f"env {var}")
            continue
        for f, doc in reversed(docs):  # the highest-precedence root first
            if isinstance(doc.data, dict) and name in doc.data:
                try:
                    value = _coerce(key, doc.data[name], from_env=False, base=f.path.parent)
                except ValueError as exc:
                    raise doc.error(str(exc), name) from None
                settings.values[name] = Setting(name, value, f"{f.root.scope} {doc.where(name)}")
                break
        else:
            settings.values[name] = Setting(name, key.default, "default")
    return settings


def apply_settings(args: argparse.Namespace, *, environ: Mapping[str, str] | None = None) -> Settings:
    """Fill every flag of ``args`` not given on the command line from env, files or its default."""
    spec: SettingsSpec | None = getattr(args, "settings_spec", None)
    if spec is None:
        raise TypeError("apply_settings needs a parser prepared with configurable()")
    given = {name: getattr(args, name) for name, key in spec.keys.items() if not _is_unset(args, key)}
    for name in REFUSED:  # flag or default only; the roots depend on some of them
        key = spec.keys.get(name)
        if key is not None and name not in given:
            setattr(args, name, key.default)
    settings = resolve_settings(spec, roots_from_args(args), given=given, environ=environ)
    for name, setting in settings.values.items():
        setattr(args, name, setting.value)
    args.settings = settings
    return settings
