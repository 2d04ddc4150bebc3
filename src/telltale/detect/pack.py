"""The effective rule pack: the default pack, local rule files, overrides and policies.

Tuning without forking (issue 21): a team adds rules (``rules.d/*.yaml``), replaces a
default rule by giving its id (a notice, not an error), switches rules and categories on
or off (``policies.d``) and changes one rule's ``enabled``/``score``/``severity`` with a
stated ``reason`` (``overrides.d``). Order: the rules are loaded, then policies apply in
file order, then overrides (an override by rule id beats any policy). Every rule keeps
where it came from, and every change names the file that made it, so ``rules list``,
``rules show`` and ``config validate`` can say why a rule is what it is.

File shapes (one or more entries per file)::

    # overrides.d/50-ci.yaml
    overrides:
      - rule: secret.env.read          # a rule or sequence id
        enabled: false                 # and/or score: 0..100, severity: low|...
        reason: CI reads .env.test on purpose      # required

    # policies.d/10-team.yaml
    policies:
      - name: no-lateral
        disable: [category:lateral_movement, 'exfil.*']   # id, prefix.* or category:name
        enable: [network.request]
        risk_bands: {medium: 40, high: 80}                 # session_risk_summary bands

Sigma rules (``--sigma``, ``rules.d/*.yml``) are added to the same :class:`RuleSet`
before tuning, so overrides and policies apply to them alike.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import msgspec
import yaml

from telltale.detect.inputs import (  # noqa: F401 - where the pack's files are found (re-exported)
    ALLOWLISTS_DIR,
    OVERRIDES_DIR,
    POLICIES_DIR,
    RULES_DIR,
    PackInputs,
    inputs_from_roots,
)
from telltale.detect.ledger import DEFAULT_RISK_BANDS
from telltale.detect.loader import (
    LoadIssue,
    RuleSet,
    _msgspec_message,
    _yaml_load,
    load_rule_files,
    read_config_text,
)
from telltale.detect.model import SEVERITIES, Severity
from telltale.errors import ConfigError


class OverrideSpec(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """One rule's tuning: at least one of ``enabled``, ``score``, ``severity``, and why."""

    rule: str
    reason: str
    enabled: bool | None = None
    score: int | None = None
    severity: Severity | None = None


class PolicySpec(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Rules and categories switched on or off together, and the session risk bands."""

    name: str
    reason: str = ""
    enable: list[str] = []
    disable: list[str] = []
    risk_bands: dict[str, int] | None = None


class _OverrideFile(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    version: int = 1
    overrides: list[object] = []


class _PolicyFile(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    version: int = 1
    policies: list[object] = []


@dataclass(frozen=True, slots=True)
class Tuned:
    """A change made to one rule: which setting, its new value, by which file, and why."""

    rule_id: str
    setting: str
    value: Any
    origin: str
    reason: str


@dataclass
class EffectivePack:
    ruleset: RuleSet
    inputs: PackInputs
    #: Rule or sequence id -> every change tuning made to it, in order.
    tuning: dict[str, list[Tuned]] = field(default_factory=dict)
    #: Rule or sequence id -> a severity fixed by an override (whatever the score).
    pinned: dict[str, Severity] = field(default_factory=dict)
    risk_bands: dict[str, int] = field(default_factory=lambda: dict(DEFAULT_RISK_BANDS))
    #: Rule file path -> its provenance ("user ~/.config/telltale/rules.d/x.yaml").
    origins: dict[str, str] = field(default_factory=dict)
    #: What loading the Sigma rules reported (warnings: rules not loaded, and why).
    sigma_issues: list[LoadIssue] = field(default_factory=list)

    @property
    def issues(self) -> list[LoadIssue]:
        return self.ruleset.issues

    def raise_for_errors(self) -> None:
        self.ruleset.raise_for_errors()

    def notices(self) -> list[LoadIssue]:
        return [i for i in self.ruleset.issues if i.level == "notice"]

    def origin_of(self, path: str) -> str:
        if path.startswith("<default>"):
            return "default"
        return self.origins.get(path, path)


def load_pack(inputs: PackInputs) -> EffectivePack:
    """Load and tune the pack; every problem is a located issue in ``pack.issues``."""
    ruleset = load_rule_files([p for p, _ in inputs.rule_files], include_default=inputs.include_default)
    pack = EffectivePack(ruleset, inputs, origins={p: o for p, o in [*inputs.rule_files, *inputs.sigma_files]})
    if inputs.sigma_files:
        from telltale.detect.sigma.load import add_sigma

        pack.sigma_issues = add_sigma(ruleset, [p for p, _ in inputs.sigma_files])
    for path, origin in inputs.policy_files:
        for spec, line in _entries(path, "policies", _PolicyFile, PolicySpec, pack):
            _apply_policy(pack, spec, path, origin, line)
    for path, origin in inputs.override_files:
        for spec, line in _entries(path, "overrides", _OverrideFile, OverrideSpec, pack):
            _apply_override(pack, spec, path, origin, line)
    return pack


def _entries(path: str, key: str, file_type: type[Any], entry_type: type[Any], pack: EffectivePack) -> list[Any]:
    issues = pack.ruleset.issues
    try:
        data, lines = _yaml_load(read_config_text(path))
    except ConfigError as exc:
        issues.append(LoadIssue(path, str(exc).split(": ", 1)[-1]))
        return []
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or "malformed YAML"
        issues.append(LoadIssue(path, f"YAML: {str(problem)[:200]}", line=mark.line + 1 if mark else None))
        return []
    if data is None:
        return []
    try:
        top = msgspec.convert(data, file_type)
    except msgspec.ValidationError as exc:
        issues.append(LoadIssue(path, _msgspec_message(exc)))
        return []
    if top.version != 1:
        issues.append(LoadIssue(path, f"unsupported version {top.version}", field="version"))
        return []
    out: list[Any] = []
    for index, item in enumerate(data.get(key) or ()):
        line = lines.get(id(item)) if isinstance(item, dict) else None
        try:
            out.append((msgspec.convert(item, entry_type), line))
        except msgspec.ValidationError as exc:
            issues.append(LoadIssue(path, _msgspec_message(exc), line=line, field=f"{key}[{index}]"))
    return out


def _targets(ruleset: RuleSet, selector: str) -> list[Any]:
    """Rules and sequences named by an id, ``prefix.*`` or ``category:name``."""
    items: Iterable[Any] = [*ruleset.rules, *ruleset.sequences]
    if selector.startswith("category:"):
        cat = selector[len("category:") :]
        return [r for r in items if r.spec.category == cat]
    if selector.endswith(".*"):
        prefix = selector[:-1]
        return [r for r in items if r.spec.id.startswith(prefix)]
    return [r for r in items if r.spec.id == selector]


def _replace(ruleset: RuleSet, item: Any, **changes: Any) -> None:
    spec = msgspec.structs.replace(item.spec, **changes)
    new = msgspec.structs.replace(item, spec=spec)
    for bucket in (ruleset.rules, ruleset.sequences):
        for i, existing in enumerate(bucket):
            if existing is item:
                bucket[i] = new
                return


def _apply_policy(pack: EffectivePack, spec: PolicySpec, path: str, origin: str, line: int | None) -> None:
    issues = pack.ruleset.issues
    label = f"policy {spec.name!r} ({origin})"
    for setting, selectors in (("disable", spec.disable), ("enable", spec.enable)):
        for selector in selectors:
            found = _targets(pack.ruleset, selector)
            if not found:
                issues.append(LoadIssue(path, f"{selector!r} names no rule or sequence", line=line,
                                        rule_id=spec.name, field=setting))
            for item in found:
                _replace(pack.ruleset, item, enabled=setting == "enable")
                pack.tuning.setdefault(item.spec.id, []).append(
                    Tuned(item.spec.id, "enabled", setting == "enable", label, spec.reason))
    if spec.risk_bands is not None:
        unknown = sorted(set(spec.risk_bands) - set(SEVERITIES[1:]))
        if unknown:
            issues.append(LoadIssue(path, f"unknown band(s) {unknown} (known: {list(SEVERITIES[1:])})",
                                    line=line, rule_id=spec.name, field="risk_bands"))
            return
        bands = {**pack.risk_bands, **spec.risk_bands}
        floors = [bands[name] for name in SEVERITIES[1:]]
        if any(v < 0 for v in floors) or floors != sorted(floors):
            issues.append(LoadIssue(path, f"bands must rise from low to critical and be >= 0 (got {bands})",
                                    line=line, rule_id=spec.name, field="risk_bands"))
            return
        pack.risk_bands = bands


def _apply_override(pack: EffectivePack, spec: OverrideSpec, path: str, origin: str, line: int | None) -> None:
    issues = pack.ruleset.issues

    def problem(message: str, fld: str) -> None:
        issues.append(LoadIssue(path, message, line=line, rule_id=spec.rule, field=fld))

    if not spec.reason.strip():
        problem("an override needs a reason (who changed it and why)", "reason")
        return
    if spec.enabled is None and spec.score is None and spec.severity is None:
        problem("an override changes at least one of enabled, score, severity", "rule")
        return
    if spec.score is not None and not 0 <= spec.score <= 100:
        problem(f"score {spec.score} is outside 0..100", "score")
        return
    found = [item for item in _targets(pack.ruleset, spec.rule) if item.spec.id == spec.rule]
    if not found:
        problem("names no rule or sequence of the effective pack (overrides name one id)", "rule")
        return
    item = found[0]
    label = f"override ({origin})"
    changes: dict[str, Any] = {}
    if spec.enabled is not None:
        changes["enabled"] = spec.enabled
    if spec.score is not None:
        changes["score"] = spec.score
    if spec.severity is not None:
        pack.pinned[spec.rule] = spec.severity
    elif spec.score is not None:
        pack.pinned.pop(spec.rule, None)  # the new score decides the severity again
    if spec.score is not None or spec.severity is not None:
        changes["severity"] = None  # the file's severity agreed with the old score only
    _replace(pack.ruleset, item, **changes)
    for setting in ("enabled", "score", "severity"):
        value = getattr(spec, setting)
        if value is not None:
            pack.tuning.setdefault(spec.rule, []).append(Tuned(spec.rule, setting, value, label, spec.reason))
