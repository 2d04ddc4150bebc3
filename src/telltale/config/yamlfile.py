"""YAML configuration files read with their line numbers, so an error can say ``file:line: key``.

PyYAML's safe constructor drops positions; this loader keeps the line of every mapping key
and sequence item, addressed by its key path::

    doc = load_yaml(path)                   # ConfigError with file and line on bad YAML
    doc.data                                # plain dicts, lists and scalars (safe types only)
    doc.where("outputs", "siem", "url")     # "/etc/telltale/outputs.d/siem.yaml:4"
    doc.unknown_keys(allowed, "outputs", "siem")  # raise for a key that is not allowed

Files are bounded (1 MiB) and must be UTF-8; aliases are resolved by the safe loader, and
a mapping key that is not a string is an error (configuration keys are names).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import msgspec

from telltale.errors import ConfigError

__all__ = ["MAX_CONFIG_FILE", "KeyPath", "YamlDoc", "load_yaml", "parse_yaml"]

MAX_CONFIG_FILE = 1024 * 1024

KeyPath = tuple[str | int, ...]


class YamlDoc(msgspec.Struct, frozen=True):
    """A parsed file: its data and the 1-based line of every key path in it."""

    path: Path
    data: Any
    lines: dict[KeyPath, int] = msgspec.field(default_factory=dict)

    def line(self, *keys: str | int) -> int | None:
        """The line of ``keys`` or of its nearest ancestor that has one."""
        path: KeyPath = tuple(keys)
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return None

    def where(self, *keys: str | int) -> str:
        """``file:line`` of a key path (``file`` alone when it has no line)."""
        line = self.line(*keys)
        return f"{self.path}:{line}" if line is not None else str(self.path)

    def error(self, message: str, *keys: str | int) -> ConfigError:
        """A ``ConfigError`` reading ``file:line: a.b.c: message``."""
        dotted = ".".join(str(k) for k in keys)
        return ConfigError(f"{self.where(*keys)}: {dotted}: {message}" if dotted else f"{self.where()}: {message}")

    def unknown_keys(self, allowed: Iterable[str], *keys: str | int) -> None:
        """Raise for the first key of the mapping at ``keys`` that is not in ``allowed``."""
        node = self.data
        for key in keys:
            node = node[key]
        if not isinstance(node, dict):
            return
        known = set(allowed)
        for key in node:
            if key not in known:
                raise self.error("unknown key", *keys, key)


@functools.cache
def _loader_class() -> Any:
    """The safe loader, recording the line of every key and item as it constructs. Built
    on first use: PyYAML is imported only when a configuration file is read (a scheduled
    scan with no configuration file never pays for it)."""
    import yaml

    class _LineLoader(yaml.SafeLoader):
        def __init__(self, stream: Any) -> None:
            super().__init__(stream)
            self.positions: dict[int, dict[Any, int]] = {}

    def construct_mapping(loader: _LineLoader, node: yaml.MappingNode) -> dict[Any, Any]:
        loader.flatten_mapping(node)
        result: dict[Any, Any] = {}
        lines: dict[Any, int] = {}
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            if not isinstance(key, str):
                raise yaml.constructor.ConstructorError(
                    None, None,
                    f"a key must be a name, not {type(key).__name__}"
                    + (f" (quote it: '{key_node.value}')" if isinstance(key_node, yaml.ScalarNode) else ""),
                    key_node.start_mark,
                )
            if key in result:
                raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
            result[key] = loader.construct_object(value_node, deep=True)
            lines[key] = key_node.start_mark.line + 1
        loader.positions[id(result)] = lines
        return result

    def construct_sequence(loader: _LineLoader, node: yaml.SequenceNode) -> list[Any]:
        result = [loader.construct_object(child, deep=True) for child in node.value]
        loader.positions[id(result)] = {i: child.start_mark.line + 1 for i, child in enumerate(node.value)}
        return result

    _LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, construct_mapping)
    _LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, construct_sequence)
    return _LineLoader


def _collect(value: Any, prefix: KeyPath, positions: dict[int, dict[Any, int]], out: dict[KeyPath, int]) -> None:
    lines = positions.get(id(value))
    if lines is None:
        return
    items = value.items() if isinstance(value, dict) else enumerate(value)
    for key, child in items:
        out[(*prefix, key)] = lines[key]
        _collect(child, (*prefix, key), positions, out)


def parse_yaml(raw: bytes | str, path: Path) -> YamlDoc:
    """Parse one document; ``ConfigError`` with the file and line for anything malformed."""
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    import yaml

    loader = _loader_class()(raw)
    try:
        data = loader.get_single_data()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        if isinstance(exc, yaml.constructor.ConstructorError) and problem and "key" in problem:
            raise ConfigError(f"{where}: {problem}") from None
        raise ConfigError(f"{where}: not valid YAML" + (f" ({problem})" if problem else "")) from None
    finally:
        loader.dispose()
    lines: dict[KeyPath, int] = {}
    _collect(data, (), loader.positions, lines)
    return YamlDoc(path, data, lines)


def load_yaml(path: str | Path) -> YamlDoc:
    """Read and parse a configuration file (bounded); ``ConfigError`` names the file."""
    p = Path(path)
    try:
        with p.open("rb") as fh:
            raw = fh.read(MAX_CONFIG_FILE + 1)
    except FileNotFoundError:
        raise ConfigError(f"{p}: no such file") from None
    except OSError as exc:
        raise ConfigError(f"{p}: cannot read ({exc.strerror})") from None
    if len(raw) > MAX_CONFIG_FILE:
        raise ConfigError(f"{p}: larger than {MAX_CONFIG_FILE} bytes")
    return parse_yaml(raw, p)
