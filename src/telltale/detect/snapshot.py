"""The engine's compiled rules, kept in the rule-pack cache.

Compiling the enabled rules into field indexes (atoms, triggers, gates, regex factors:
:class:`~telltale.detect.match.MatchMixin`) walks every matcher value, escapes and dedupes
thousands of literals and looks each regex's factors and guards up in the cache, the same
result each time for the same rules (the engine's ``__init__`` took 128 M instructions in
a fresh process, 73 M with this; ~22 M less inside a cold scan, where much of it is
warm-up shared with the rest). So the result is kept as plain data (atom indices, patterns,
literals), keyed by the enabled rules' matchers, and the objects are rebuilt from it. A
miss compiles, exports and rebuilds from the export too, and so does an entry that does
not fit the rules: both ways make the same objects from the same data
(``tests/test_rule_pack_cache.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from telltale.detect import cache
from telltale.detect.fields import FIELD_NAMES
from telltale.detect.literal_scan import Literal, ScanPlan
from telltale.detect.loader import MatcherDef, Rule
from telltale.detect.match import _FieldIndex, _Matcher, _Rule, bare_matcher

if TYPE_CHECKING:
    from telltale.detect.match import MatchMixin


class _MatcherData(msgspec.Struct, array_like=True, frozen=True):
    """What compiling one matcher added to its definition."""

    atoms: tuple[int, ...] = ()
    regex_atoms: tuple[tuple[int, ...], ...] = ()
    regex_factors: tuple[tuple[tuple[int, ...], ...], ...] = ()


class _FieldData(msgspec.Struct, array_like=True):
    """One field index: its atoms and which selections they trigger and gate."""

    patterns: list[str]
    chunk_patterns: list[str]
    literals: list[Literal | None]
    triggers: dict[int, list[int]]
    residual: list[int]
    #: Trigger atom -> (rule index, selection index, positions of the gate's matchers).
    gate_refs: dict[int, list[tuple[int, int, tuple[int, ...]]]]
    #: The literal scanner's plan (``None``: none possible) and the anchored atoms.
    scan_plan: ScanPlan | None
    anchored: list[int]


class Compiled(msgspec.Struct, array_like=True):
    """The enabled rules compiled: field indexes, and per rule its selections' and
    filters' matcher data (in the rules' order)."""

    fields: list[_FieldData | None]
    rules: list[tuple[list[list[_MatcherData]], list[list[_MatcherData]]]]


_decoder = msgspec.msgpack.Decoder(Compiled)


def compile_rules(engine: MatchMixin, enabled: list[Rule]) -> None:
    """Set ``engine._fields`` and ``engine._rules`` for the ``enabled`` rules, from the
    rule-pack cache when it holds them (fields not yet ``compile``d)."""
    key = cache.encode([[rule.selections, rule.filters] for rule in enabled])
    data = cache.cached("compiled", key, lambda: _compiled(engine, enabled), cache.encode, _decoder.decode)
    try:
        _build(engine, data, enabled)
    except (IndexError, KeyError, ValueError, TypeError):  # an entry that does not fit: never trusted
        _build(engine, _compiled(engine, enabled), enabled)


def _compiled(engine: MatchMixin, enabled: list[Rule]) -> Compiled:
    engine._fields = [None] * len(FIELD_NAMES)
    engine._rules = []
    for rule in enabled:
        engine._rules.append(engine._compile_rule(len(engine._rules), rule))
    return export(engine)


def export(engine: MatchMixin) -> Compiled:
    """The engine's compiled rules as data."""
    fields: list[_FieldData | None] = []
    for fx in engine._fields:
        if fx is None:
            fields.append(None)
            continue
        fields.append(_FieldData(list(fx.patterns), list(fx.chunk_patterns), list(fx.literals),
                                 {atom: list(rules) for atom, rules in fx.triggers.items()}, list(fx.residual),
                                 {atom: list(refs) for atom, refs in fx.gate_refs.items()},
                                 fx.scan_plan(), sorted(fx.anchored())))
    rules = [([[_data(m) for m in sel] for sel in r.selections], [[_data(m) for m in sel] for sel in r.filters])
             for r in engine._rules]
    return Compiled(fields, rules)


def _data(m: _Matcher) -> _MatcherData:
    return _MatcherData(
        m.atoms, m.regex_atoms, tuple(tuple(tuple(sorted(f)) for f in factors) for factors in m.regex_factors)
    )


def _build(engine: MatchMixin, data: Compiled, enabled: list[Rule]) -> None:
    fields: list[_FieldIndex | None] = []
    for fd in data.fields:
        if fd is None:
            fields.append(None)
            continue
        fx = _FieldIndex()
        fx.patterns = fd.patterns
        fx.chunk_patterns = fd.chunk_patterns
        fx.literals = fd.literals
        fx.by_pattern = {pattern: i for i, pattern in enumerate(fd.patterns)}
        fx.triggers = fd.triggers
        fx.residual = fd.residual
        fx.gate_refs = fd.gate_refs
        plan = fd.scan_plan
        if plan is not None and not (plan.folds == len(fd.literals) == len(fd.patterns)
                                     and len(plan.expressions) == len(plan.flags) > plan.folds):
            raise ValueError("scan plan")
        if fd.anchored and not 0 <= min(fd.anchored) <= max(fd.anchored) < len(fd.patterns):
            raise ValueError("anchored atom out of range")
        fx._scan_plan, fx._planned = plan, True
        fx._anchored = frozenset(fd.anchored)
        fields.append(fx)
    if len(fields) != len(FIELD_NAMES):
        raise ValueError("fields")
    sizes = [0 if fx is None else len(fx.patterns) for fx in fields]
    rules: list[_Rule] = []
    for index, (rule, (selections, filters)) in enumerate(zip(enabled, data.rules, strict=True)):
        rules.append(_Rule(index, rule, _matchers(rule.selections, selections, sizes),
                           _matchers(rule.filters, filters, sizes)))
    gates: dict[tuple[int, int, tuple[int, ...]], tuple[int, tuple[_Matcher, ...]]] = {}
    for built in fields:
        if built is None:
            continue
        named = [*built.residual, *(i for indices in built.triggers.values() for i in indices)]
        if named and not 0 <= min(named) <= max(named) < len(rules):
            raise ValueError("rule out of range")
        gated: dict[int, list[tuple[int, tuple[_Matcher, ...]]]] = {}
        for atom, refs in built.gate_refs.items():
            entries = gated[atom] = []
            for ref in refs:
                gate = gates.get(ref)
                if gate is None:
                    ri, si, on_field = ref
                    selection = rules[ri].selections[si]
                    gate = gates[ref] = (ri, tuple(selection[i] for i in on_field))
                entries.append(gate)
        built.gated = gated
    engine._fields = fields
    engine._rules = rules


def _matchers(
    definitions: tuple[tuple[MatcherDef, ...], ...], data: list[list[_MatcherData]], sizes: list[int]
) -> tuple[tuple[_Matcher, ...], ...]:
    """The matchers of selections (or filters), each checked to name only atoms its field
    has: an atom out of range would never hit, a rule silently lost."""
    out: list[tuple[_Matcher, ...]] = []
    for sel_defs, sel_data in zip(definitions, data, strict=True):
        sel: list[_Matcher] = []
        for definition, made in zip(sel_defs, sel_data, strict=True):
            m = bare_matcher(definition)
            named = [*made.atoms, *(a for atoms in made.regex_atoms for a in atoms),
                     *(a for factors in made.regex_factors for f in factors for a in f)]
            if named and not 0 <= min(named) <= max(named) < sizes[m.field]:
                raise ValueError("atom out of range")
            m.atoms = made.atoms
            m.regex_atoms = made.regex_atoms
            m.regex_factors = tuple(tuple(frozenset(f) for f in factors) for factors in made.regex_factors)
            m.seal()
            sel.append(m)
        out.append(tuple(sel))
    return tuple(out)
