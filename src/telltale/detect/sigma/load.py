"""Sigma rule files and directories -> a :class:`~telltale.detect.loader.RuleSet`.

Every Sigma rule becomes one Telltale rule with id ``sigma.<Sigma id>``, category
``sigma``, the Sigma title, description, references and ATT&CK tags, and a score from its
level (so its detections carry the level as severity). pySigma errors (an invalid rule)
are errors, as for Telltale's own rule files; a valid rule that Telltale cannot evaluate
is a warning naming the rule and the reason, and it is not loaded.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Any, Literal

import msgspec

from telltale.detect.loader import (
    LoadIssue,
    Rule,
    RuleSet,
    _case_issue,
    _tag_issues,
    _valid_id,
    read_config_text,
)
from telltale.detect.model import RuleCases, RuleSpec, SigmaRef, TagsSpec
from telltale.detect.sigma.compile import Unsupported, merge_or, split_condition, to_node
from telltale.detect.sigma.mapping import category_issue
from telltale.errors import ConfigError

#: File names read from a ``--sigma`` directory (recursively; SigmaHQ uses ``.yml``).
SIGMA_SUFFIXES = (".yml", ".yaml")
#: Files read from one ``--sigma`` directory at most (a SigmaHQ checkout has ~3,000 rules).
MAX_SIGMA_FILES = 20_000
#: Rule score of each Sigma level: the floor of the matching severity band (docs/detection.md).
LEVEL_SCORES = {"informational": 10, "low": 30, "medium": 50, "high": 70, "critical": 90}
CATEGORY = "sigma"
#: How the message of a rule that was reported and not loaded starts.
NOT_LOADED = "not loaded: "
ID_PREFIX = "sigma."
#: The custom attribute holding a Sigma rule's Telltale test cases (see ``rules test``).
TESTS_KEY = "x-telltale-tests"


def sigma_files(paths: Iterable[str]) -> list[str]:
    """Each given file, and the ``.yml``/``.yaml`` files under each given directory, sorted."""
    out: list[str] = []
    for raw in paths:
        path = os.path.expanduser(os.fspath(raw))
        if os.path.isdir(path):
            found = []
            for root, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                found += [os.path.join(root, f) for f in files if f.endswith(SIGMA_SUFFIXES)]
                if len(found) > MAX_SIGMA_FILES:
                    raise ConfigError(f"{path}: more than {MAX_SIGMA_FILES} Sigma files")
            out += sorted(found)
        else:
            out.append(path)
    return out


def _require_pysigma() -> None:
    try:
        import sigma.collection  # noqa: F401
    except ImportError:
        raise ConfigError("Sigma rules need pySigma: install the extra, pip install 'telltale[sigma]'") from None


def load_sigma_paths(paths: Sequence[str]) -> RuleSet:
    """Load Sigma rule files and directories; problems are issues, never exceptions
    (except a missing pySigma or an oversized directory: ``ConfigError``)."""
    _require_pysigma()
    out = RuleSet()
    for path in sigma_files(paths):
        try:
            text = read_config_text(path)
        except ConfigError as exc:
            out.issues.append(LoadIssue(path, str(exc).split(": ", 1)[-1]))
            continue
        out.extend(load_sigma_text(text, path))
    return out


def add_sigma(ruleset: RuleSet, paths: Sequence[str]) -> list[LoadIssue]:
    """Add the Sigma rules of ``paths`` to ``ruleset``; returns the issues added.

    A Sigma id loaded twice (the same rule in two places) is an error, as a duplicate
    Telltale id is.
    """
    if not paths:
        return []
    sigma = load_sigma_paths(paths)
    seen = {r.spec.id: r.path for r in ruleset.rules}
    accepted = []
    for rule in sigma.rules:
        first = seen.get(rule.spec.id)
        if first is not None:
            sigma.issues.append(LoadIssue(rule.path, f"duplicate id (first defined in {first})", rule_id=rule.spec.id,
                                          field="id"))
        else:
            seen[rule.spec.id] = rule.path
            accepted.append(rule)
    before = len(ruleset.issues)
    ruleset.rules.extend(accepted)
    ruleset.issues.extend(sigma.issues)
    return ruleset.issues[before:]


def load_sigma_text(text: str, path: str) -> RuleSet:
    """One Sigma file (one or more YAML documents, as pySigma reads them)."""
    from sigma.collection import SigmaCollection
    from sigma.exceptions import SigmaError
    from sigma.rule import SigmaRule

    out = RuleSet()
    try:
        collection = SigmaCollection.from_yaml(text, collect_errors=True)
    except (SigmaError, ValueError, TypeError) as exc:  # pySigma raises these for malformed YAML
        out.issues.append(LoadIssue(path, f"not a Sigma rule file: {_short(exc)}"))
        return out
    for index, item in enumerate(collection.rules):
        label = _label(item, index)
        errors = list(getattr(item, "errors", ()) or ())
        if errors:
            for error in errors:
                out.issues.append(LoadIssue(path, f"invalid Sigma rule: {_short(error)}", rule_id=label))
            continue
        if not isinstance(item, SigmaRule):
            kind = type(item).__name__.removeprefix("Sigma")
            out.issues.append(_unsupported(path, label, f"{kind} rules are not supported (single-event rules only)"))
            continue
        try:
            rule = compile_rule(item, path)
        except Unsupported as exc:
            out.issues.append(_unsupported(path, label, str(exc)))
            continue
        except (SigmaError, InvalidCases) as exc:
            out.issues.append(LoadIssue(path, f"invalid Sigma rule: {_short(exc)}", rule_id=label))
            continue
        out.rules.append(rule)
    return out


def _short(exc: object) -> str:
    return " ".join(str(exc).split())[:240]


def _label(item: Any, index: int) -> str:
    ident = getattr(item, "id", None)
    if ident is not None:
        return ID_PREFIX + str(ident).lower()
    title = getattr(item, "title", None)
    return str(title)[:128] if title else f"rule[{index}]"


def _unsupported(path: str, label: str, message: str) -> LoadIssue:
    level: Literal["warning"] = "warning"
    return LoadIssue(path, NOT_LOADED + message, rule_id=label, level=level)


class InvalidCases(Exception):
    """The rule's ``x-telltale-tests`` block is malformed (an error, not an unsupported construct)."""


def _cases(item: Any) -> RuleCases:
    """``x-telltale-tests`` (a custom attribute, ignored by other Sigma tools): the rule's
    positive and negative observations, in the form of the rule language's ``tests:``."""
    raw = (getattr(item, "custom_attributes", None) or {}).get(TESTS_KEY)
    if raw is None:
        return RuleCases()
    try:
        cases = msgspec.convert(raw, RuleCases)
    except msgspec.ValidationError as exc:
        raise InvalidCases(f"{TESTS_KEY}: {_short(exc)}") from None
    for kind, items in (("positive", cases.positive), ("negative", cases.negative)):
        for i, case in enumerate(items):
            problem = _case_issue(case)
            if problem is None and (case.filler is not None or case.at is not None):
                problem = "rule cases are single observations (no filler/at)"
            if problem:
                raise InvalidCases(f"{TESTS_KEY}.{kind}[{i}]: {problem}")
    return cases


def compile_rule(item: Any, path: str) -> Rule:
    """One valid pySigma rule -> a Telltale rule; raises :class:`Unsupported`."""
    logsource = item.logsource
    category = logsource.category
    problem = category_issue(category, logsource.product, logsource.service)
    if problem is not None:
        raise Unsupported(problem)
    assert category is not None
    if item.id is None:
        raise Unsupported("a Sigma rule without an id cannot name its detections (add 'id: <uuid>')")
    rule_id = ID_PREFIX + str(item.id).lower()
    if not _valid_id(rule_id):
        raise Unsupported(f"id {item.id!r} is not usable as a rule id")
    conditions = [c.parsed for c in item.detection.parsed_condition]
    nodes = [to_node(c, category) for c in conditions]
    # Several conditions: the rule matches when any does.
    node = merge_or(tuple(nodes)) if len(nodes) > 1 else nodes[0]
    selections, filters = split_condition(node)
    level = item.level.name.lower() if item.level is not None else "medium"
    tags = [f"{t.namespace}.{t.name}" for t in item.tags]
    attack = [t for t in tags if t.lower().startswith("attack.")]
    valid_attack = [t for t in attack if not _tag_issues(TagsSpec(attack=[t]))]
    tests = _cases(item)
    spec = RuleSpec(
        id=rule_id,
        title=str(item.title),
        category=CATEGORY,
        score=LEVEL_SCORES.get(level, 50),
        match=[],
        description=str(item.description or ""),
        tags=TagsSpec(attack=[t.lower() for t in valid_attack]),
        references=[str(r) for r in item.references],
        falsepositives=[str(f) for f in item.falsepositives],
        tests=tests,
    )
    status = item.status.name.lower() if item.status is not None else None
    ref = SigmaRef(
        id=str(item.id),
        title=str(item.title),
        level=level,
        tags=tuple(tags),
        status=status,
        author=str(item.author) if item.author else None,
    )
    return Rule(spec, tuple(selections), tuple(filters), path, None, ref)
