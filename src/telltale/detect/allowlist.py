"""Allowlists: named exceptions that downgrade a detection, never drop it.

A suppressed detection stays in the output as ``informational`` with ``suppressed_by``
naming the entry, so an allowlist can be audited and a too-broad entry noticed.

File shape (YAML)::

    allowlist:
      - name: release-bot-publishes        # required, unique
        reason: CI publishes from this session   # free text, not used for matching
        client: codex                      # each criterion: one value or a list (any of)
        session: [sess-1, sess-2]
        tool_name: Bash
        rules: [supply_chain.publish, "secret.*"]
        categories: [supply_chain]
        path_hash: 0123456789abcdef         # telltale.events.envelope.path_hash of the
                                            # transcript path or of a file_path evidence

An entry matches when every criterion it gives matches (AND); a criterion matches when
any of its values does (OR). An entry with no criterion is an error: it would silence
everything.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import msgspec

from telltale.detect.model import Detection
from telltale.errors import ConfigError
from telltale.events.envelope import path_hash

StrOrList = str | list[str]


class AllowEntrySpec(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    name: str
    reason: str = ""
    client: StrOrList | None = None
    session: StrOrList | None = None
    tool_name: StrOrList | None = None
    rules: StrOrList | None = None
    categories: StrOrList | None = None
    path_hash: StrOrList | None = None


class AllowFileSpec(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    allowlist: list[object] = []


def _norm(value: StrOrList | None) -> frozenset[str] | None:
    if value is None:
        return None
    return frozenset([value] if isinstance(value, str) else value)


class AllowEntry(msgspec.Struct, frozen=True):
    name: str
    client: frozenset[str] | None = None
    session: frozenset[str] | None = None
    tool_name: frozenset[str] | None = None
    rules: frozenset[str] | None = None
    categories: frozenset[str] | None = None
    path_hash: frozenset[str] | None = None

    def _rule_matches(self, rule_id: str) -> bool:
        assert self.rules is not None
        if rule_id in self.rules:
            return True
        return any(r.endswith(".*") and rule_id.startswith(r[:-1]) for r in self.rules)

    def matches(self, det: Detection) -> bool:
        if self.client is not None and det.client not in self.client:
            return False
        if self.session is not None and (det.session_id or "") not in self.session:
            return False
        if self.tool_name is not None and (det.tool_name or "") not in self.tool_name:
            return False
        if self.rules is not None and not self._rule_matches(det.rule_id):
            return False
        if self.categories is not None and det.category not in self.categories:
            return False
        if self.path_hash is not None:
            hashes = {path_hash(e.value) for e in det.evidence if e.field == "file_path"}
            if det.source_path:
                hashes.add(path_hash(det.source_path))
            if not hashes & self.path_hash:
                return False
        return True


class Allowlist(msgspec.Struct):
    entries: list[AllowEntry] = msgspec.field(default_factory=list)

    def apply(self, det: Detection) -> Detection:
        """``det`` marked suppressed (informational, named entry) when an entry covers it.

        A suppressed detection is kept, score and all, so analysts see what was silenced.
        """
        name = self.match(det)
        if name is not None:
            det.suppressed_by = name
            det.severity = "informational"
        return det

    def match(self, det: Detection) -> str | None:
        """Name of the first entry that covers ``det``, or ``None``."""
        for entry in self.entries:
            if entry.matches(det):
                return entry.name
        return None


def parse_allowlist(text: str, path: str) -> Allowlist:
    """Parse one allowlist file; problems raise ``ConfigError`` naming file, entry and field."""
    import yaml  # only when an allowlist file exists: a scan without one imports no YAML

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else path
        raise ConfigError(f"{where}: malformed YAML") from None
    if data is None:
        return Allowlist()
    try:
        top = msgspec.convert(data, AllowFileSpec)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"{path}: {str(exc)[:200]}") from None
    out = Allowlist()
    names: set[str] = set()
    problems: list[str] = []
    for index, item in enumerate(top.allowlist):
        label = item.get("name") if isinstance(item, dict) else None
        where = f"{path}: entry {label!r}" if isinstance(label, str) else f"{path}: allowlist[{index}]"
        try:
            spec = msgspec.convert(item, AllowEntrySpec)
        except msgspec.ValidationError as exc:
            problems.append(f"{where}: {str(exc)[:200]}")
            continue
        if not spec.name.strip():
            problems.append(f"{where}: field 'name': must not be empty")
            continue
        if spec.name in names:
            problems.append(f"{where}: field 'name': duplicate entry name")
            continue
        names.add(spec.name)
        entry = AllowEntry(
            name=spec.name,
            client=_norm(spec.client),
            session=_norm(spec.session),
            tool_name=_norm(spec.tool_name),
            rules=_norm(spec.rules),
            categories=_norm(spec.categories),
            path_hash=_norm(spec.path_hash),
        )
        criteria = (entry.client, entry.session, entry.tool_name, entry.rules, entry.categories, entry.path_hash)
        if all(c is None for c in criteria):
            problems.append(f"{where}: needs at least one of client, session, tool_name, rules, categories, "
                            "path_hash")
            continue
        if any(c is not None and (not c or "" in c) for c in criteria):
            problems.append(f"{where}: criteria must be non-empty strings")
            continue
        out.entries.append(entry)
    if problems:
        raise ConfigError("allowlist error(s):\n  " + "\n  ".join(problems[:20]))
    return out


def load_allowlists(paths: Sequence[str]) -> Allowlist:
    """All entries of ``paths``, in order; entry names must be unique across files."""
    from telltale.detect.loader import read_config_text

    out = Allowlist()
    names: set[str] = set()
    for path in paths:
        part = parse_allowlist(read_config_text(os.fspath(path)), os.fspath(path))
        for entry in part.entries:
            if entry.name in names:
                raise ConfigError(f"{path}: entry {entry.name!r}: field 'name': duplicate entry name")
            names.add(entry.name)
            out.entries.append(entry)
    return out
