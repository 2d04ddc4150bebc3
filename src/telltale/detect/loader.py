"""YAML rule files → typed rules, with every problem reported by file, line, rule and field.

Loading never stops at the first problem: each rule is converted on its own, so a file
with three broken rules reports three issues (pySigma-style located errors). Issues are
values; :meth:`RuleSet.raise_for_errors` turns the errors into one ``ConfigError``.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Literal

import msgspec
import re2

from telltale.detect import cache
from telltale.detect.fields import FIELD_NAMES, REQUEST_FIELDS
from telltale.detect.literals import required_literals
from telltale.detect.model import (
    ModifierSpec,
    RuleFileSpec,
    RuleSpec,
    Selection,
    SequenceSpec,
    SigmaRef,
    StepCase,
    TagsSpec,
    WithinSpec,
    severity_for,
)
from telltale.errors import ConfigError

#: Largest rule or allowlist file read (bytes): these are configuration, not data.
MAX_RULE_FILE_BYTES = 4 * 1024 * 1024
#: Default step bound of a sequence or session-scoped modifier without ``within.steps``.
DEFAULT_WITHIN_STEPS = 50
#: Issues printed in one ConfigError message at most.
MAX_REPORTED_ISSUES = 20

Op = Literal["equals", "contains", "startswith", "endswith", "re"]
_OPS: frozenset[str] = frozenset({"contains", "startswith", "endswith", "re"})
_FLAGS: frozenset[str] = frozenset({"all", "cased"})
DEFAULT_PACK = "<default>"


class LoadIssue(msgspec.Struct, frozen=True):
    """One problem in a rule file, located as precisely as the YAML allows."""

    path: str
    message: str
    line: int | None = None
    rule_id: str | None = None
    field: str | None = None
    #: ``notice``: nothing wrong, but worth saying (a user rule replacing a default one).
    level: Literal["error", "warning", "notice"] = "error"

    def __str__(self) -> str:
        where = self.path + (f":{self.line}" if self.line else "")
        parts = [where]
        if self.rule_id:
            parts.append(f"rule {self.rule_id!r}")
        if self.field:
            parts.append(f"field {self.field!r}")
        prefix = "" if self.level == "error" else self.level + ": "
        return prefix + ": ".join(parts) + ": " + self.message


class MatcherDef(msgspec.Struct, frozen=True):
    """``field|op|flags: values`` after validation."""

    field: str
    op: Op
    values: tuple[str, ...]
    all: bool
    cased: bool
    key: str


class Rule(msgspec.Struct, frozen=True):
    spec: RuleSpec
    selections: tuple[tuple[MatcherDef, ...], ...]
    filters: tuple[tuple[MatcherDef, ...], ...]
    path: str
    line: int | None
    #: Compiled from this Sigma rule (telltale.detect.sigma), not written in the rule language.
    sigma: SigmaRef | None = None


class SequenceRule(msgspec.Struct, frozen=True):
    spec: SequenceSpec
    path: str
    line: int | None


class Modifier(msgspec.Struct, frozen=True):
    spec: ModifierSpec
    path: str
    line: int | None


class RuleSet(msgspec.Struct):
    """Rules, sequences and modifiers of one or more files, plus what was wrong with them."""

    rules: list[Rule] = msgspec.field(default_factory=list)
    sequences: list[SequenceRule] = msgspec.field(default_factory=list)
    modifiers: list[Modifier] = msgspec.field(default_factory=list)
    issues: list[LoadIssue] = msgspec.field(default_factory=list)

    @property
    def errors(self) -> list[LoadIssue]:
        return [i for i in self.issues if i.level == "error"]

    def extend(self, other: RuleSet) -> None:
        self.rules.extend(other.rules)
        self.sequences.extend(other.sequences)
        self.modifiers.extend(other.modifiers)
        self.issues.extend(other.issues)

    def raise_for_errors(self) -> None:
        errors = self.errors
        if not errors:
            return
        shown = [str(e) for e in errors[:MAX_REPORTED_ISSUES]]
        more = len(errors) - len(shown)
        tail = f"\n  ... and {more} more" if more > 0 else ""
        raise ConfigError(f"{len(errors)} rule error(s):\n  " + "\n  ".join(shown) + tail)


_ruleset_decoder = msgspec.msgpack.Decoder(RuleSet)


# ------------------------------------------------------------------ YAML with lines


@functools.cache
def _line_loader() -> Any:
    """The safe loader (libyaml when present) that remembers the line where each mapping
    starts. Built on first use: a scan whose rule pack comes from the rule-pack cache
    parses no YAML, and importing PyYAML was ~15 ms of it."""
    import yaml

    base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class _LineLoader(base):  # type: ignore[misc]
        def __init__(self, stream: str) -> None:
            super().__init__(stream)
            self.lines: dict[int, int] = {}

        def construct_line_map(self, node: yaml.MappingNode) -> Iterator[dict[Any, Any]]:
            data: dict[Any, Any] = {}
            self.lines[id(data)] = node.start_mark.line + 1
            yield data
            data.update(self.construct_mapping(node))

    _LineLoader.add_constructor("tag:yaml.org,2002:map", _LineLoader.construct_line_map)
    return _LineLoader


def _yaml_load(text: str) -> tuple[Any, dict[int, int]]:
    loader = _line_loader()(text)
    try:
        return loader.get_single_data(), loader.lines
    finally:
        loader.dispose()


def read_config_text(path: str) -> str:
    """Read a small configuration file, bounded, as UTF-8 text."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_RULE_FILE_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read ({exc.strerror or type(exc).__name__})") from None
    if len(data) > MAX_RULE_FILE_BYTES:
        raise ConfigError(f"{path}: larger than {MAX_RULE_FILE_BYTES} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text") from None


# ------------------------------------------------------------------ small validators


def _valid_id(value: str) -> bool:
    if not value or len(value) > 128 or not value[0].isalnum():
        return False
    return all(c.islower() or c.isdigit() or c in "._-" for c in value)


def _valid_category(value: str) -> bool:
    return bool(value) and len(value) <= 64 and all(c.islower() or c.isdigit() or c == "_" for c in value)


def _technique(value: str, prefix: str) -> bool:
    """``T1234`` or ``T1234.001`` after ``prefix`` (case as given)."""
    if not value.startswith(prefix):
        return False
    rest = value[len(prefix) :]
    main, _, sub = rest.partition(".")
    if len(main) != 4 or not main.isdigit():
        return False
    return not sub or (len(sub) == 3 and sub.isdigit())


def _tag_issues(tags: TagsSpec) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for tag in tags.attack:
        low = tag.lower()
        if low.startswith("atlas."):
            out.append(("tags.attack", f"{tag!r} is an ATLAS tag; put it under tags.atlas"))
        elif not low.startswith("attack."):
            out.append(("tags.attack", f"{tag!r} must start with 'attack.'"))
        elif not (
            _technique(low, "attack.t")
            or (len(low) > 7 and all(c.islower() or c == "_" for c in low[7:]))
        ):
            out.append(("tags.attack", f"{tag!r} is neither a technique (attack.t1234[.001]) nor a tactic"))
    for tag in tags.atlas:
        if tag.lower().startswith("attack."):
            out.append(("tags.atlas", f"{tag!r} is an ATT&CK tag; put it under tags.attack"))
        elif not _technique(tag, "atlas.AML.T"):
            out.append(("tags.atlas", f"{tag!r} must look like atlas.AML.T0051 or atlas.AML.T0051.000"))
    return out


def _selections(raw: Selection | list[Selection]) -> list[Selection]:
    return [raw] if isinstance(raw, dict) else list(raw)


def parse_selection(
    sel: Selection, where: str, add: Any
) -> tuple[MatcherDef, ...] | None:
    """Validate one selection; report through ``add(field, message, level)``."""
    if not sel:
        add(where, "empty selection", "error")
        return None
    out: list[MatcherDef] = []
    ok = True
    for key, raw in sel.items():
        name, *mods = key.split("|")
        loc = f"{where}.{key}"
        if name not in FIELD_NAMES:
            add(loc, f"unknown field {name!r} (known: {', '.join(FIELD_NAMES)})", "error")
            ok = False
            continue
        ops = [m for m in mods if m in _OPS]
        bad = [m for m in mods if m not in _OPS and m not in _FLAGS]
        if bad:
            add(loc, f"unknown modifier {bad[0]!r} (known: {', '.join(sorted(_OPS | _FLAGS))})", "error")
            ok = False
            continue
        if len(ops) > 1 or len(set(mods)) != len(mods):
            add(loc, "at most one of contains/startswith/endswith/re, each modifier once", "error")
            ok = False
            continue
        values = [raw] if isinstance(raw, str) else list(raw)
        if not values or any(not v for v in values):
            add(loc, "needs one or more non-empty strings", "error")
            ok = False
            continue
        op: Op = ops[0] if ops else "equals"  # type: ignore[assignment]
        cased = "cased" in mods
        if op == "re":
            for pattern in values:
                try:
                    compile_rule_regex(pattern, cased)
                except re2.error as exc:
                    add(loc, f"invalid RE2 regex: {str(exc)[:200]}", "error")
                    ok = False
                    break
        out.append(MatcherDef(name, op, tuple(values), "all" in mods, cased, key))
    return tuple(out) if ok else None


def _triggerable(m: MatcherDef) -> bool:
    """Whether the engine can prefilter on this matcher (see engine ``_trigger``)."""
    if m.op != "re":
        return True
    found = [required_literals(v) is not None for v in m.values]
    return any(found) if m.all else all(found)


def _re2_options(cased: bool) -> Any:
    options = re2.Options()
    options.case_sensitive = cased
    # Only the whole match's span is ever used: without submatches RE2 stays on its DFA.
    options.never_capture = True
    return options


@functools.lru_cache(maxsize=2048)
def compile_rule_regex(pattern: str, cased: bool) -> Any:
    """A rule regex compiled once for validation and the engine alike (RE2 objects are
    immutable and safe to share). Raises ``re2.error``."""
    return re2.compile(pattern, _re2_options(cased))


def _case_issue(case: StepCase) -> str | None:
    if case.filler is not None:
        if case.filler < 1 or case.filler > 10_000 or case.fields():
            return "filler must be 1..10000 and stand alone"
        return None
    names = set(case.fields())
    if not names:
        return "empty case"
    if (
        names <= REQUEST_FIELDS
        or names <= {"tool_result", "tool_name"}
        or len(names) == 1
    ):
        return None
    return "fields " + ", ".join(sorted(names)) + " do not belong to one observation"


# ------------------------------------------------------------------ file loading


def load_rule_text(text: str, path: str) -> RuleSet:
    """Parse one rule file's text. Never raises for content problems: see ``issues``.

    Through the rule-pack cache (:mod:`telltale.detect.cache`) when one is active: the
    validated rule set of the same name and text is decoded instead of parsed again."""
    key = path.encode("utf-8", "surrogatepass") + b"\0" + text.encode("utf-8", "surrogatepass")
    ruleset: RuleSet = cache.cached(
        "ruleset", key, lambda: _load_rule_text(text, path), cache.encode, _ruleset_decoder.decode
    )
    return ruleset


def _load_rule_text(text: str, path: str) -> RuleSet:
    import yaml

    out = RuleSet()
    try:
        data, lines = _yaml_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(exc, "problem", None) or "malformed YAML"
        out.issues.append(LoadIssue(path, f"YAML: {str(problem)[:200]}", line=line))
        return out
    if data is None:
        return out
    if not isinstance(data, dict):
        out.issues.append(LoadIssue(path, "top level must be a mapping with rules/sequences/modifiers"))
        return out
    known = {"version", "rules", "sequences", "modifiers"}
    for key in data:
        if key not in known and not (isinstance(key, str) and key.startswith("x-")):
            out.issues.append(LoadIssue(path, f"unknown top-level key {key!r}", line=lines.get(id(data))))
    try:
        # Validates the shape; the original lists are used below so that each entry keeps
        # its identity (and so its line number).
        top = msgspec.convert({k: v for k, v in data.items() if k in known}, RuleFileSpec)
    except msgspec.ValidationError as exc:
        out.issues.append(LoadIssue(path, _msgspec_message(exc), field=_msgspec_path(exc)))
        return out
    if top.version != 1:
        out.issues.append(LoadIssue(path, f"unsupported version {top.version}", field="version"))
        return out
    for index, item in enumerate(data.get("rules") or ()):
        _load_rule(item, index, path, lines, out)
    for index, item in enumerate(data.get("sequences") or ()):
        _load_sequence(item, index, path, lines, out)
    for index, item in enumerate(data.get("modifiers") or ()):
        _load_modifier(item, index, path, lines, out)
    return out


def _msgspec_path(exc: msgspec.ValidationError) -> str | None:
    text = str(exc)
    marker = " - at `$"
    at = text.rfind(marker)
    if at < 0:
        return None
    return text[at + len(marker) :].rstrip("`").lstrip(".") or None


def _msgspec_message(exc: msgspec.ValidationError) -> str:
    text = str(exc)
    at = text.rfind(" - at `$")
    return (text[:at] if at >= 0 else text)[:200]


def _item_id(item: object) -> str | None:
    if isinstance(item, dict):
        value = item.get("id")
        if isinstance(value, str):
            return value[:128]
    return None


def _convert(
    item: object, kind: type[Any], what: str, index: int, path: str, lines: dict[int, int], out: RuleSet
) -> tuple[Any, str | None, int | None]:
    rule_id = _item_id(item)
    line = lines.get(id(item))
    label = rule_id or f"{what}[{index}]"
    if not isinstance(item, dict):
        out.issues.append(LoadIssue(path, f"{what} entry must be a mapping", line=line, rule_id=label))
        return None, label, line
    try:
        return msgspec.convert(item, kind), label, line
    except msgspec.ValidationError as exc:
        field_path = _msgspec_path(exc)
        if field_path == "with_":
            field_path = "with"
        out.issues.append(
            LoadIssue(path, _msgspec_message(exc), line=line, rule_id=label, field=field_path)
        )
        return None, label, line


def _common_issues(
    spec: RuleSpec | SequenceSpec, add: Any
) -> None:
    if not _valid_id(spec.id):
        add("id", "ids are lowercase letters, digits, '.', '_' or '-' (at most 128)", "error")
    if not _valid_category(spec.category):
        add("category", "categories are lowercase letters, digits or '_'", "error")
    if not 0 <= spec.score <= 100:
        add("score", "score must be 0..100", "error")
    elif spec.severity is not None and severity_for(spec.score) != spec.severity:
        add("severity", f"score {spec.score} is in band {severity_for(spec.score)!r}, not {spec.severity!r}",
            "error")
    for fld, message in _tag_issues(spec.tags):
        add(fld, message, "error")
    if not spec.title.strip():
        add("title", "title must not be empty", "error")


def _load_rule(item: object, index: int, path: str, lines: dict[int, int], out: RuleSet) -> None:
    spec, label, line = _convert(item, RuleSpec, "rules", index, path, lines, out)
    if spec is None:
        return
    count = len(out.issues)

    def add(fld: str, message: str, level: Literal["error", "warning"]) -> None:
        out.issues.append(LoadIssue(path, message, line=line, rule_id=label, field=fld, level=level))

    _common_issues(spec, add)
    selections = []
    for i, sel in enumerate(_selections(spec.match)):
        parsed = parse_selection(sel, f"match[{i}]", add)
        if parsed is not None:
            selections.append(parsed)
            if not any(_triggerable(m) for m in parsed):
                add(f"match[{i}]", "no matcher has a literal of 3+ bytes to prefilter on: this selection "
                    "runs its regexes on every observation carrying the field", "warning")
    if not _selections(spec.match):
        add("match", "a rule needs at least one selection", "error")
    filters = []
    for i, sel in enumerate(_selections(spec.filter)):
        parsed = parse_selection(sel, f"filter[{i}]", add)
        if parsed is not None:
            filters.append(parsed)
    for kind, cases in (("positive", spec.tests.positive), ("negative", spec.tests.negative)):
        for i, case in enumerate(cases):
            problem = _case_issue(case)
            if problem is None and (case.filler is not None or case.at is not None):
                problem = "rule cases are single observations (no filler/at)"
            if problem:
                add(f"tests.{kind}[{i}]", problem, "error")
    if any(i.level == "error" for i in out.issues[count:]):
        return
    out.rules.append(Rule(spec, tuple(selections), tuple(filters), path, line))


def _within_issues(within: WithinSpec, add: Any) -> None:
    if within.steps is not None and not 1 <= within.steps <= 10_000:
        add("within.steps", "must be 1..10000", "error")
    if within.seconds is not None and not 0 < within.seconds <= 30 * 86_400:
        add("within.seconds", "must be > 0 and at most 30 days", "error")


def _load_sequence(item: object, index: int, path: str, lines: dict[int, int], out: RuleSet) -> None:
    spec, label, line = _convert(item, SequenceSpec, "sequences", index, path, lines, out)
    if spec is None:
        return
    count = len(out.issues)

    def add(fld: str, message: str, level: Literal["error", "warning"]) -> None:
        out.issues.append(LoadIssue(path, message, line=line, rule_id=label, field=fld, level=level))

    _common_issues(spec, add)
    if len(spec.steps) < 2:
        add("steps", "a sequence needs at least two steps", "error")
    for i, step in enumerate(spec.steps):
        if not step or any(not s for s in step):
            add(f"steps[{i}]", "a step names one or more rule ids, 'prefix.*' or 'category:name'", "error")
    _within_issues(spec.within, add)
    for kind, cases in (("positive", spec.tests.positive), ("negative", spec.tests.negative)):
        for i, steps in enumerate(cases):
            if not steps:
                add(f"tests.{kind}[{i}]", "empty case", "error")
            for j, case in enumerate(steps):
                problem = _case_issue(case)
                if problem:
                    add(f"tests.{kind}[{i}][{j}]", problem, "error")
    if any(i.level == "error" for i in out.issues[count:]):
        return
    out.sequences.append(SequenceRule(spec, path, line))


def _load_modifier(item: object, index: int, path: str, lines: dict[int, int], out: RuleSet) -> None:
    spec, label, line = _convert(item, ModifierSpec, "modifiers", index, path, lines, out)
    if spec is None:
        return
    count = len(out.issues)

    def add(fld: str, message: str, level: Literal["error", "warning"]) -> None:
        out.issues.append(LoadIssue(path, message, line=line, rule_id=label, field=fld, level=level))

    if not _valid_id(spec.id):
        add("id", "ids are lowercase letters, digits, '.', '_' or '-' (at most 128)", "error")
    if not 0 <= spec.score <= 100:
        add("score", "score must be 0..100", "error")
    if not spec.when:
        add("when", "names one or more rule or sequence ids", "error")
    if not spec.with_:
        add("with", "names one or more rule ids", "error")
    _within_issues(spec.within, add)
    if any(i.level == "error" for i in out.issues[count:]):
        return
    out.modifiers.append(Modifier(spec, path, line))


# ------------------------------------------------------------------ sets of files


def default_rule_texts() -> list[tuple[str, str]]:
    """``(name, text)`` of every YAML file of the default pack, in name order: from the
    package's directory, or through ``importlib.resources`` where the package is no
    directory (a zip); its readers cost ~4 ms a scan for the same files."""
    folder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rules")
    if not os.path.isdir(folder):
        return _resource_rule_texts()
    out = []
    with os.scandir(folder) as entries:
        names = sorted(e.name for e in entries if e.name.endswith(".yaml") and e.is_file())
    for name in names:
        with open(os.path.join(folder, name), encoding="utf-8") as fh:
            out.append((f"{DEFAULT_PACK}/{name}", fh.read()))
    return out


def _resource_rule_texts() -> list[tuple[str, str]]:
    from importlib import resources

    folder = resources.files("telltale.detect").joinpath("rules")
    out = []
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".yaml") and entry.is_file():
            out.append((f"{DEFAULT_PACK}/{entry.name}", entry.read_text(encoding="utf-8")))
    return out


def load_rule_files(paths: Sequence[str] = (), *, include_default: bool = True) -> RuleSet:
    """Load the default pack (optionally) and ``paths``; check ids and references across them.

    A rule, sequence or modifier in ``paths`` with the id of a default one *replaces* it
    (a ``notice``, not an error): an exported default file, edited and dropped into
    ``rules.d``, takes the place of the shipped rules it holds. Two user files giving one
    id is still an error.
    """
    out = RuleSet()
    if include_default:
        for name, text in default_rule_texts():
            out.extend(load_rule_text(text, name))
    user = RuleSet()
    for path in paths:
        try:
            text = read_config_text(path)
        except ConfigError as exc:
            user.issues.append(LoadIssue(os.fspath(path), str(exc).split(": ", 1)[-1]))
            continue
        user.extend(load_rule_text(text, os.fspath(path)))
    if include_default:
        _replace_defaults(out, user)
    out.extend(user)
    check_references(out)
    return out


def _replace_defaults(defaults: RuleSet, user: RuleSet) -> None:
    """Drop each default item whose id a user item of the same kind gives, with a notice."""
    buckets: tuple[tuple[str, list[Any], list[Any]], ...] = (
        ("rule", user.rules, defaults.rules),
        ("sequence", user.sequences, defaults.sequences),
        ("modifier", user.modifiers, defaults.modifiers),
    )
    for kind, mine, theirs in buckets:
        shipped: dict[str, Any] = {item.spec.id: item for item in theirs}
        replaced: set[str] = set()
        for item in mine:
            ident = item.spec.id
            if ident in shipped and ident not in replaced:
                replaced.add(ident)
                user.issues.append(LoadIssue(
                    item.path, f"replaces the default {kind} (from {shipped[ident].path})",
                    line=item.line, rule_id=ident, field="id", level="notice",
                ))
        if replaced:
            theirs[:] = [item for item in theirs if item.spec.id not in replaced]


def resolve_selector(selector: str, rules: Iterable[Rule]) -> set[str]:
    """Rule ids named by ``id``, ``prefix.*`` or ``category:name``."""
    if selector.startswith("category:"):
        cat = selector[len("category:") :]
        return {r.spec.id for r in rules if r.spec.category == cat}
    if selector.endswith(".*"):
        prefix = selector[:-1]
        return {r.spec.id for r in rules if r.spec.id.startswith(prefix)}
    return {r.spec.id for r in rules if r.spec.id == selector}


def check_references(out: RuleSet) -> None:
    """Duplicate ids anywhere, and step/modifier selectors that name nothing."""
    seen: dict[str, str] = {}
    items: list[tuple[str, str, int | None]] = (
        [(r.spec.id, r.path, r.line) for r in out.rules]
        + [(s.spec.id, s.path, s.line) for s in out.sequences]
        + [(m.spec.id, m.path, m.line) for m in out.modifiers]
    )
    for ident, path, line in items:
        if ident in seen:
            out.issues.append(LoadIssue(path, f"duplicate id (first defined in {seen[ident]})", line=line,
                                        rule_id=ident, field="id"))
        else:
            seen[ident] = path
    sequence_ids = {s.spec.id for s in out.sequences}
    for seq in out.sequences:
        for i, step in enumerate(seq.spec.steps):
            for selector in step:
                if not resolve_selector(selector, out.rules):
                    out.issues.append(LoadIssue(seq.path, f"{selector!r} names no rule", line=seq.line,
                                                rule_id=seq.spec.id, field=f"steps[{i}]"))
    for mod in out.modifiers:
        for fld, selectors in (("when", mod.spec.when), ("with", mod.spec.with_)):
            for selector in selectors:
                found = resolve_selector(selector, out.rules)
                if fld == "when" and selector in sequence_ids:
                    found.add(selector)
                if not found:
                    out.issues.append(LoadIssue(mod.path, f"{selector!r} names no rule", line=mod.line,
                                                rule_id=mod.spec.id, field=fld))
