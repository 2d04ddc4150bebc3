"""Sigma rules out: the single-event rules of a rule set as Sigma rules over Telltale's events.

Each enabled, reported (not ``signal``) Telltale rule becomes one Sigma rule with log
source ``product: telltale`` and a category for the observation it matches (``tool_call``,
``tool_result`` or ``message``); its fields are Telltale's rule fields, which
``telltale_pipeline.yml`` (written beside the rules) maps onto the event field names. A
SIEM team converts them with the usual backends and runs them centrally over a fleet's
events. Sequences, co-occurrence modifiers and allowlists need Telltale's session memory
and are not exported (the rules a sequence names are).

Telltale's matching carries over as Sigma says it: case-insensitive by default; a
``cased`` literal becomes a case-sensitive regex (Splunk and Elasticsearch backends refuse
cased strings); a regex is ``re`` with ``i`` unless ``cased``.
"""

from __future__ import annotations

import os
import re
import uuid
from dataclasses import dataclass
from importlib import resources
from typing import Any

import yaml

from telltale.detect.loader import MatcherDef, Rule, RuleSet
from telltale.detect.model import severity_for

#: Namespace of the Sigma ids of exported rules: the same Telltale id, the same Sigma id.
ID_NAMESPACE = uuid.UUID("5f0b6c1e-7d1a-4b8e-9a57-7e11a1e5a0c1")
PIPELINE_FILE = "telltale_pipeline.yml"
PRODUCT = "telltale"
#: Fields of a tool request (``event.action: tool_call``).
_REQUEST_FIELDS = frozenset({
    "command", "arguments", "file_path", "url", "tool_name", "cwd", "command_normalized", "program", "argv",
    "pipeline", "written_path", "read_path",
})
#: Message-text fields: the event field is one, the role says which.
_MESSAGE_FIELDS: dict[str, dict[str, Any]] = {
    "user_context": {"message_role": "user", "message_injected": False},
    "assistant_context": {"message_role": "assistant"},
    "injected_context": {"message_injected": True},
}


_KIND_TITLES = {"tool_call": "tool call", "tool_result": "tool result", "message": "message"}


class NotExportable(Exception):
    """A rule that has no faithful Sigma form (one message)."""


@dataclass(frozen=True, slots=True)
class Exported:
    rule_id: str
    path: str


def sigma_id(rule_id: str) -> str:
    return str(uuid.uuid5(ID_NAMESPACE, rule_id))


def pipeline_text() -> str:
    """The pySigma processing pipeline for Telltale's event field names (YAML)."""
    return resources.files("telltale.detect.sigma").joinpath(PIPELINE_FILE).read_text(encoding="utf-8")


def _escape(value: str) -> str:
    """A literal as a Sigma string: wildcards and the escape character escaped."""
    return value.replace("\\", "\\\\").replace("*", "\\*").replace("?", "\\?")


def _category(fields: set[str]) -> str:
    if fields <= _REQUEST_FIELDS:
        return "tool_call"
    if fields <= {"tool_result", "tool_name"}:
        return "tool_result"
    if len(fields) == 1 and next(iter(fields)) in _MESSAGE_FIELDS:
        return "message"
    raise NotExportable("a selection mixes fields of different observations: " + ", ".join(sorted(fields)))


def portable_regex(pattern: str) -> str:
    r"""An RE2 rule regex in the syntax Sigma tools accept (pySigma checks regexes with
    Python's ``re``; PCRE reads the same): ``\x{HHHH}`` becomes the character itself and
    ``\z`` becomes ``\Z``. Raises :class:`NotExportable` for what has no such form
    (``\pL`` classes, POSIX classes ...)."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c != "\\" or i + 1 >= len(pattern):
            out.append(c)
            i += 1
            continue
        nxt = pattern[i + 1]
        if nxt == "z":
            out.append("\\Z")
            i += 2
        elif nxt == "x" and pattern.startswith("{", i + 2) and "}" in pattern[i + 3 :]:
            end = pattern.index("}", i + 3)
            try:
                out.append(re.escape(chr(int(pattern[i + 3 : end], 16))))
            except ValueError:
                raise NotExportable(f"regex escape {pattern[i:end + 1]!r}") from None
            i = end + 1
        else:
            out.append(pattern[i : i + 2])
            i += 2
    text = "".join(out)
    try:
        re.compile(text)
    except re.error as exc:
        raise NotExportable(f"regex {pattern[:60]!r} has no portable form ({exc})") from None
    return text


def _item(m: MatcherDef) -> tuple[str, list[str]]:
    """One matcher as ``field|modifiers`` and its values."""
    field = "message_text" if m.field in _MESSAGE_FIELDS else m.field
    if m.op == "re":
        mods = ["re"] + ([] if m.cased else ["i"])
        values = [portable_regex(v) for v in m.values]
    elif m.cased:
        # Backends refuse cased strings: a case-sensitive regex says the same.
        body = {"equals": r"\A{}\Z", "startswith": r"\A{}", "endswith": r"{}\Z", "contains": "{}"}[m.op]
        mods = ["re"]
        values = [body.format(re.escape(v)) for v in m.values]
    else:
        mods = [] if m.op == "equals" else [m.op]
        values = [_escape(v) for v in m.values]
    if m.all and len(values) > 1:
        mods.append("all")
    return "|".join([field, *mods]), values


def _selection(matchers: tuple[MatcherDef, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for m in matchers:
        key, values = _item(m)
        if key in out:
            raise NotExportable(f"two matchers on {key!r} in one selection")
        out[key] = values[0] if len(values) == 1 else values
        extra = _MESSAGE_FIELDS.get(m.field)
        if extra:
            out.update(extra)
    return out


def sigma_rules(rule: Rule, level: str | None = None) -> list[tuple[str, dict[str, Any]]]:
    """One Telltale rule as Sigma rule documents, ``(file stem, document)``; raises
    :class:`NotExportable`.

    A Sigma rule has one log source. A Telltale rule whose selections look at different
    observations (a tool result or an injected message, say) becomes one Sigma rule per
    observation kind, each with that kind's selections and filters (a filter on a field the
    observation does not carry never holds, so leaving it out changes nothing).
    """
    groups: dict[str, tuple[list[tuple[MatcherDef, ...]], list[tuple[MatcherDef, ...]]]] = {}
    for sel in rule.selections:
        groups.setdefault(_category({m.field for m in sel}), ([], []))[0].append(sel)
    for sel in rule.filters:
        category = _category({m.field for m in sel})
        if category in groups:
            groups[category][1].append(sel)
    split = len(groups) > 1
    out = []
    for category, (selections, filters) in groups.items():
        stem = f"{rule.spec.id}.{category}" if split else rule.spec.id
        doc = _document(rule, category, selections, filters, split)
        if level is not None:
            doc["level"] = level
        out.append((stem, doc))
    return out


def _document(
    rule: Rule,
    category: str,
    selections: list[tuple[MatcherDef, ...]],
    filters: list[tuple[MatcherDef, ...]],
    split: bool,
) -> dict[str, Any]:
    spec = rule.spec
    detection: dict[str, Any] = {}
    for i, sel in enumerate(selections):
        detection[f"selection_{i}"] = _selection(sel)
    for i, sel in enumerate(filters):
        detection[f"filter_{i}"] = _selection(sel)
    condition = "1 of selection_*" if len(selections) > 1 else "selection_0"
    if filters:
        condition += " and not 1 of filter_*"
    detection["condition"] = condition
    doc: dict[str, Any] = {
        "title": spec.title + (f" ({_KIND_TITLES[category]})" if split else ""),
        "id": sigma_id(f"{spec.id}#{category}" if split else spec.id),
        "status": "test",
        "description": spec.description or spec.title,
    }
    if spec.references:
        doc["references"] = list(spec.references)
    doc["author"] = "Telltale"
    if spec.tags.attack:
        doc["tags"] = [t.lower() for t in spec.tags.attack]
    doc["logsource"] = {"product": PRODUCT, "category": category}
    doc["detection"] = detection
    if spec.falsepositives:
        doc["falsepositives"] = list(spec.falsepositives)
    doc["level"] = spec.severity or severity_for(spec.score)
    # Custom attributes (ignored by backends): where the rule came from and how it scores.
    doc["x-telltale"] = {"rule_id": spec.id, "category": spec.category, "score": spec.score}
    return doc


def exportable(ruleset: RuleSet) -> tuple[list[Rule], list[tuple[str, str]]]:
    """The rules to export, and ``(rule id, why not)`` for enabled rules left out."""
    rules: list[Rule] = []
    skipped: list[tuple[str, str]] = []
    for rule in ruleset.rules:
        if not rule.spec.enabled:
            continue
        if rule.spec.signal:
            skipped.append((rule.spec.id, "a signal (feeds sequences, never reported alone)"))
        elif rule.sigma is not None:
            skipped.append((rule.spec.id, "already a Sigma rule (loaded with --sigma)"))
        else:
            rules.append(rule)
    return rules, skipped


def _dump(doc: dict[str, Any]) -> str:
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=120, default_flow_style=False)


def export_sigma(
    ruleset: RuleSet, directory: str, *, force: bool = False, levels: dict[str, str] | None = None
) -> tuple[list[Exported], list[tuple[str, str]]]:
    """Write one ``<rule id>.yml`` per exportable rule and the pipeline to ``directory``.

    ``levels`` fixes the level of some rules (an override's pinned severity).
    Returns what was written and what was left out with why. Raises ``FileExistsError``
    (before writing anything) when a target exists and ``force`` is not set.
    """
    rules, skipped = exportable(ruleset)
    texts: list[tuple[str, str, str]] = []
    for rule in rules:
        try:
            for stem, doc in sigma_rules(rule, (levels or {}).get(rule.spec.id)):
                texts.append((rule.spec.id, os.path.join(directory, f"{stem}.yml"), _dump(doc)))
        except NotExportable as exc:
            skipped.append((rule.spec.id, str(exc)))
    targets = [(PIPELINE_FILE, os.path.join(directory, PIPELINE_FILE), pipeline_text()), *texts]
    if not force:
        for _rid, path, _text in targets:
            if os.path.lexists(path):
                raise FileExistsError(path)
    os.makedirs(directory, exist_ok=True)
    out: list[Exported] = []
    for rid, path, text in targets:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
        if rid != PIPELINE_FILE:
            out.append(Exported(rid, path))
    return out, skipped

