"""One parsed Sigma rule -> Telltale selections and filters (RE2 matchers), or why not.

pySigma has already applied the modifiers: ``contains``/``startswith``/``endswith`` are
wildcards around a string, ``windash`` and ``base64offset`` are expansions (alternatives),
``all`` is an AND of values, ``cased`` a cased string, ``re`` a regular expression with its
flags, ``cidr`` a network. This module turns each ``field = value`` into a matcher on a
Telltale field (:mod:`~telltale.detect.sigma.mapping`), merges alternatives on one field
into one matcher, and brings the condition to the engine's shape: any of the selections
(each an AND of matchers) and none of the filters. A condition that does not fit — a
negation inside a selection, a rule that is only a negation — raises :class:`Unsupported`.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import re2

from telltale.detect.loader import MatcherDef, Op, compile_rule_regex
from telltale.detect.sigma.mapping import Target, field_target

#: Selections (or filters) one rule may expand to; beyond, the condition is reported.
MAX_TERMS = 256

# A URL scheme, and optional user info, before the host (hosts and ports are matched in
# the fetched URL and in URLs inside a shell command alike).
_SCHEME = r"[a-z][a-z0-9+.-]*://"
_USERINFO = r"(?:[^/?#@\s]*@)?"
_HOST_CHAR = r"[^/?#:@\s]"
#: After the host or port: in the URL field, the end or the next part of the URL; in a
#: command, also whitespace or a quote.
_URL_END = r"(?:[:/?#]|\z)"
_CMD_END = "(?:[:/?#\\s'\"]|$)"


class Unsupported(Exception):
    """A construct the rule needs that Telltale cannot evaluate faithfully (one message)."""


# ------------------------------------------------------------------ boolean form


@dataclass(frozen=True, slots=True)
class Leaf:
    matcher: MatcherDef


@dataclass(frozen=True, slots=True)
class And:
    args: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Or:
    args: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Not:
    arg: Node


Node = Leaf | And | Or | Not
Term = tuple[MatcherDef, ...]


def _key(field: str, op: Op, all_: bool, cased: bool) -> str:
    return field + ("" if op == "equals" else f"|{op}") + ("|all" if all_ else "") + ("|cased" if cased else "")


def matcher(field: str, op: Op, values: tuple[str, ...], *, cased: bool = False, all_: bool = False) -> MatcherDef:
    """A matcher as the loader would build it from ``field|op|...: values`` (regexes checked)."""
    if op == "re":
        for pattern in values:
            try:
                compile_rule_regex(pattern, cased)
            except re2.error as exc:
                raise Unsupported(f"regex {pattern[:80]!r} is not RE2: {str(exc)[:120]}") from None
    return MatcherDef(field, op, values, all_, cased, _key(field, op, all_, cased))


# ------------------------------------------------------------------ values


@dataclass(frozen=True, slots=True)
class _Pattern:
    """A Sigma string as anchors plus a literal (no inner wildcard) or a regex body."""

    start: bool
    end: bool
    literal: str | None
    parts: tuple[str | int, ...]  # str: literal text; 1: any run; 2: any one character
    cased: bool

    def op(self) -> Op:
        if self.start and self.end:
            return "equals"
        if self.start:
            return "startswith"
        return "endswith" if self.end else "contains"

    def body(self, any_run: str = ".*", any_one: str = ".") -> str:
        return "".join(re2.escape(p) if isinstance(p, str) else any_run if p == 1 else any_one for p in self.parts)


def _pattern(value: Any) -> _Pattern:
    from sigma.types import SigmaCasedString, SigmaNumber, SigmaString, SpecialChars

    if isinstance(value, SigmaNumber):
        return _Pattern(True, True, str(value.number), (str(value.number),), False)
    if not isinstance(value, SigmaString):
        raise Unsupported(f"value type {type(value).__name__} is not supported")
    parts: list[str | int] = []
    for part in value.s:
        if isinstance(part, str):
            if parts and isinstance(parts[-1], str):
                parts[-1] += part
            else:
                parts.append(part)
        elif part is SpecialChars.WILDCARD_MULTI:
            if not parts or parts[-1] != 1:
                parts.append(1)
        elif part is SpecialChars.WILDCARD_SINGLE:
            parts.append(2)
        else:
            raise Unsupported(f"placeholder {getattr(part, 'name', part)!r} is not supported (no expansion is set)")
    start = not (parts and parts[0] == 1)
    end = not (parts and parts[-1] == 1)
    core = tuple(parts[(0 if start else 1) : (len(parts) if end else len(parts) - 1)])
    if not core:
        raise Unsupported("a value that is only wildcards matches anything (not supported)")
    literal = core[0] if len(core) == 1 and isinstance(core[0], str) else None
    return _Pattern(start, end, literal, core, isinstance(value, SigmaCasedString))


def _regex(value: Any) -> tuple[str, bool]:
    """A Sigma ``re`` value as (RE2 pattern, cased)."""
    from sigma.types import SigmaRegularExpressionFlag as Flag

    pattern = str(value.regexp.original if hasattr(value.regexp, "original") else value.regexp)
    flags = set(value.flags or ())
    inline = "".join(c for f, c in ((Flag.MULTILINE, "m"), (Flag.DOTALL, "s")) if f in flags)
    cased = Flag.IGNORECASE not in flags  # Sigma regexes are case-sensitive unless |i
    return (f"(?{inline}){pattern}" if inline else pattern), cased


def _cidr_patterns(value: Any) -> list[_Pattern]:
    network = value.network
    if network.version != 4:
        raise Unsupported(f"cidr {value.cidr!r}: only IPv4 networks are supported")
    out = []
    for prefix in value.expand(wildcard="*"):
        head = prefix.rstrip("*")
        if not head:
            raise Unsupported(f"cidr {value.cidr!r} matches every address (not supported)")
        out.append(_Pattern(True, not prefix.endswith("*"), head, (head,), False))
    return out


# ------------------------------------------------------------------ per target


def _direct(field: str, pat: _Pattern, *, line_field: bool) -> MatcherDef:
    """A matcher on a Telltale field that holds the value itself."""
    if pat.literal is not None and (pat.op() == "contains" or not line_field):
        return matcher(field, pat.op(), (pat.literal,), cased=pat.cased)
    # On ``command`` (raw and normalised form, one per line) anchors are line anchors, as
    # on list fields; a wildcard does not cross a line.
    start = "^" if line_field else r"\A"
    end = "$" if line_field else r"\z"
    regex = ("(?m)" if field == "command" else "") + (start if pat.start else "") + pat.body() + (
        end if pat.end else "")
    return matcher(field, "re", (regex,), cased=pat.cased)


def _program(pat: _Pattern) -> MatcherDef:
    """``Image`` values on the resolved program name: a path is cut to its base name."""
    if pat.literal is None:
        raise Unsupported("Image/OriginalFileName with inner wildcards is not supported (programs are names)")
    value = pat.literal.replace("\\", "/")
    op = pat.op()
    if "/" in value:
        if op not in ("equals", "endswith"):
            raise Unsupported(f"Image|{op} with a directory is not supported (the program field holds names)")
        value, op = value.rsplit("/", 1)[1], "equals"
    if value.lower().endswith(".exe"):
        value = value[:-4]
    if not value:
        raise Unsupported("Image value names a directory, not a program")
    return matcher("program", op, (value.lower(),), cased=False)


def _host(pat: _Pattern) -> Node:
    host_run = _HOST_CHAR + "*"
    host = ("" if pat.start else host_run) + pat.body(host_run, _HOST_CHAR) + ("" if pat.end else host_run)
    in_url = r"\A" + _SCHEME + _USERINFO + host + _URL_END
    in_command = "(?m)" + _SCHEME + _USERINFO + host + _CMD_END
    return Or((Leaf(matcher("url", "re", (in_url,))), Leaf(matcher("command", "re", (in_command,)))))


def _port(pat: _Pattern) -> Node:
    if pat.literal is None or not pat.literal.isdigit() or not pat.start or not pat.end:
        raise Unsupported("DestinationPort supports exact port numbers only")
    tail = _USERINFO + _HOST_CHAR + "*:" + pat.literal
    return Or((
        Leaf(matcher("url", "re", (r"\A" + _SCHEME + tail + r"(?:[/?#]|\z)",))),
        Leaf(matcher("command", "re", ("(?m)" + _SCHEME + tail + "(?:[/?#\\s'\"]|$)",))),
    ))


def _uri(pat: _Pattern) -> Node:
    if pat.literal is not None and pat.op() in ("contains", "endswith"):
        url = Leaf(matcher("url", pat.op(), (pat.literal,), cased=pat.cased))
        if pat.op() == "endswith":
            return url
        in_command = "(?m)" + _SCHEME + r"\S*" + re2.escape(pat.literal)
        return Or((url, Leaf(matcher("command", "re", (in_command,), cased=pat.cased))))
    # Anchored at the start: the path (and query) after scheme and host, as a proxy logs it.
    regex = (r"\A" + _SCHEME + r"[^/?#\s]*" if pat.start else "") + pat.body() + (r"\z" if pat.end else "")
    return Leaf(matcher("url", "re", (regex,), cased=pat.cased))


def _leaf(target: Target, value: Any) -> Node:
    from sigma.types import SigmaCIDRExpression, SigmaRegularExpression

    if isinstance(value, SigmaRegularExpression):
        regex, cased = _regex(value)
        if target in ("host", "port", "program"):
            raise Unsupported(f"regular expressions on {target} fields are not supported")
        field = "url" if target == "uri" else target
        return Leaf(matcher(field, "re", ((f"(?m){regex}" if field == "command" else regex),), cased=cased))
    if isinstance(value, SigmaCIDRExpression):
        if target != "host":
            raise Unsupported("cidr applies to DestinationIp only")
        return Or(tuple(_host(p) for p in _cidr_patterns(value)))
    pat = _pattern(value)
    if target == "program":
        return Leaf(_program(pat))
    if target == "host":
        return _host(pat)
    if target == "port":
        return _port(pat)
    if target == "uri":
        return _uri(pat)
    return Leaf(_direct(target, pat, line_field=target == "command"))


# ------------------------------------------------------------------ condition tree


def to_node(cond: Any, category: str) -> Node:
    """pySigma's parsed condition (identifiers resolved) -> :data:`Node`."""
    from sigma.conditions import (
        ConditionAND,
        ConditionFieldEqualsValueExpression,
        ConditionNOT,
        ConditionOR,
        ConditionValueExpression,
    )
    from sigma.types import SigmaExpansion, SigmaNull

    if isinstance(cond, ConditionAND):
        return _merge_and(tuple(to_node(a, category) for a in cond.args))
    if isinstance(cond, ConditionOR):
        return merge_or(tuple(to_node(a, category) for a in cond.args))
    if isinstance(cond, ConditionNOT):
        return Not(to_node(cond.args[0], category))
    if isinstance(cond, ConditionValueExpression):
        raise Unsupported("keyword (field-less) detections are not supported")
    if isinstance(cond, ConditionFieldEqualsValueExpression):
        target = field_target(category, cond.field)
        if target not in ("command", "program", "cwd", "written_path", "read_path", "host", "port", "uri"):
            raise Unsupported(target)
        value = cond.value
        if isinstance(value, SigmaNull):
            raise Unsupported(f"field {cond.field!r}: null (field absent) is not supported")
        if isinstance(value, SigmaExpansion):
            return merge_or(tuple(_leaf(target, v) for v in value.values))  # type: ignore[arg-type]
        return _leaf(target, value)  # type: ignore[arg-type]
    raise Unsupported(f"condition element {type(cond).__name__} is not supported")


def merge_or(args: tuple[Node, ...]) -> Node:
    """Alternatives on one field with one operator become one matcher with several values."""
    flat: list[Node] = []
    for arg in args:
        flat.extend(arg.args if isinstance(arg, Or) else (arg,))
    merged: dict[tuple[str, str, bool], MatcherDef] = {}
    rest: list[Node] = []
    for arg in flat:
        if isinstance(arg, Leaf) and not arg.matcher.all:
            m = arg.matcher
            key = (m.field, m.op, m.cased)
            prior = merged.get(key)
            values = m.values if prior is None else prior.values + tuple(v for v in m.values if v not in prior.values)
            merged[key] = matcher(m.field, m.op, values, cased=m.cased) if prior is not None else m
        else:
            rest.append(arg)
    out: list[Node] = [Leaf(m) for m in merged.values()] + rest
    return out[0] if len(out) == 1 else Or(tuple(out))


def _merge_and(args: tuple[Node, ...]) -> Node:
    """Single values on one field with one operator, all required, become one ``|all`` matcher."""
    flat: list[Node] = []
    for arg in args:
        flat.extend(arg.args if isinstance(arg, And) else (arg,))
    groups: dict[tuple[str, str, bool], list[str]] = {}
    rest: list[Node] = []
    for arg in flat:
        if isinstance(arg, Leaf) and len(arg.matcher.values) == 1 and not arg.matcher.all:
            m = arg.matcher
            groups.setdefault((m.field, m.op, m.cased), []).append(m.values[0])
        else:
            rest.append(arg)
    out: list[Node] = []
    for (field, op, cased), values in groups.items():
        unique = tuple(dict.fromkeys(values))
        all_ = len(unique) > 1
        out.append(Leaf(matcher(field, op, unique, cased=cased, all_=all_)))  # type: ignore[arg-type]
    out += rest
    return out[0] if len(out) == 1 else And(tuple(out))


def _positive(node: Node) -> bool:
    if isinstance(node, Leaf):
        return True
    if isinstance(node, Not):
        return False
    return all(_positive(a) for a in node.args)


def _dnf(node: Node) -> list[Term]:
    """Disjunctive normal form of a negation-free node, bounded by :data:`MAX_TERMS`."""
    if isinstance(node, Leaf):
        return [(node.matcher,)]
    if isinstance(node, Or):
        out: list[Term] = []
        for arg in node.args:
            out.extend(_dnf(arg))
            if len(out) > MAX_TERMS:
                raise Unsupported(f"the condition expands to more than {MAX_TERMS} selections")
        return out
    if isinstance(node, And):
        terms: list[Term] = [()]
        for arg in node.args:
            terms = [a + b for a, b in itertools.product(terms, _dnf(arg))]
            if len(terms) > MAX_TERMS:
                raise Unsupported(f"the condition expands to more than {MAX_TERMS} selections")
        return terms
    raise Unsupported("a negation inside a selection is not supported")


def _strip_double_negation(node: Node) -> Node:
    while isinstance(node, Not) and isinstance(node.arg, Not):
        node = node.arg.arg
    return node


def split_condition(node: Node) -> tuple[list[Term], list[Term]]:
    """``node`` as (selections, filters): it holds when a selection holds and no filter does.

    Fits ``A and not B and not (C or D) ...`` with negation-free A, B, C, D — the shape of
    Sigma's ``selection and not filter`` and ``1 of selection_* and not 1 of filter_*``.
    """
    conjuncts = node.args if isinstance(node, And) else (node,)
    positive: list[Node] = []
    filters: list[Term] = []
    for raw in conjuncts:
        part = _strip_double_negation(raw)
        if isinstance(part, Not):
            if not _positive(part.arg):
                raise Unsupported("nested negations (not ... not ...) are not supported")
            filters.extend(_dnf(part.arg))
        elif _positive(part):
            positive.append(part)
        else:
            raise Unsupported("a negation under 'or' is not supported (use 'selection and not filter')")
    if not positive:
        raise Unsupported("a condition that is only negations matches almost everything (not supported)")
    selections = _dnf(_merge_and(tuple(positive)) if len(positive) > 1 else positive[0])
    if len(filters) > MAX_TERMS:
        raise Unsupported(f"the condition expands to more than {MAX_TERMS} filters")
    return selections, filters
