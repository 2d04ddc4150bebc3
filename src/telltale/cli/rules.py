"""``telltale rules``: list, validate, test and export detection rules.

``validate`` and ``test`` load the given files together with the default pack (unless
``--no-default-rules``) because sequences and modifiers may name default rules. Exit
codes: 0 fine, 1 a rule error or a failed case, 2 bad usage.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

import msgspec

from telltale.cli.common import add_sigma_argument, sigma_ruleset
from telltale.detect.loader import RuleSet, default_rule_texts, resolve_selector
from telltale.detect.model import severity_for
from telltale.detect.sigma.load import NOT_LOADED
from telltale.errors import UsageError
from telltale.exitcodes import ExitCode


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "rules",
        help="list, validate, test and export detection rules",
        description="Work with detection rules: the default pack (package data) and your own YAML files.",
    )
    sub = parser.add_subparsers(dest="rules_command", metavar="ACTION")

    p_list = sub.add_parser("list", help="list rules and sequences (id, kind, severity, category, enabled)")
    p_list.add_argument("--rules", action="append", default=[], metavar="FILE", help="extra rule file (repeatable)")
    p_list.add_argument("--no-default-rules", action="store_true", help="leave out the default pack")
    add_sigma_argument(p_list)
    p_list.add_argument("--json", action="store_true", help="one JSON object per line")
    p_list.set_defaults(handler=run_list)

    p_val = sub.add_parser("validate", help="check rule files; print located errors; exit 1 on error")
    p_val.add_argument("files", nargs="*", metavar="FILE")
    p_val.add_argument("--no-default-rules", action="store_true", help="do not resolve names against the default pack")
    add_sigma_argument(p_val)
    p_val.set_defaults(handler=run_validate)

    p_test = sub.add_parser("test", help="run the positive/negative cases embedded in rule files")
    p_test.add_argument("files", nargs="*", metavar="FILE")
    p_test.add_argument("--no-default-rules", action="store_true", help="load only FILE")
    add_sigma_argument(p_test)
    p_test.add_argument("--verbose", "-v", action="store_true", help="print passing cases too")
    p_test.set_defaults(handler=run_test)

    p_exp = sub.add_parser("export-default", help="write the default rule pack's YAML files to DIR")
    p_exp.add_argument("directory", nargs="?", default=".", metavar="DIR")
    p_exp.add_argument("--force", action="store_true", help="overwrite existing files")
    p_exp.set_defaults(handler=run_export)

    parser.set_defaults(handler=lambda _args: _usage(parser))


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return ExitCode.USAGE


def _rows(ruleset: RuleSet) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for rule in ruleset.rules:
        spec = rule.spec
        rows.append(
            {
                "id": spec.id,
                "kind": "signal" if spec.signal else "rule",
                "severity": spec.severity or severity_for(spec.score),
                "score": spec.score,
                "category": spec.category,
                "enabled": spec.enabled,
                "title": spec.title,
                "source": rule.path,
            }
        )
    scores = {r.spec.id: r.spec.score for r in ruleset.rules}
    for seq in ruleset.sequences:
        sspec = seq.spec
        # A sequence detection adds its steps' rule scores: list the least it can score.
        least = sspec.score + sum(
            min((scores[i] for sel in step for i in resolve_selector(sel, ruleset.rules)), default=0)
            for step in sspec.steps
        )
        rows.append(
            {
                "id": sspec.id,
                "kind": "sequence",
                "severity": severity_for(least),
                "score": sspec.score,
                "min_score": least,
                "category": sspec.category,
                "enabled": sspec.enabled,
                "title": sspec.title,
                "source": seq.path,
            }
        )
    return rows


def _sigma_paths(args: argparse.Namespace) -> list[str]:
    paths: list[str] = list(args.sigma or ())
    if not args.files and not paths:
        raise UsageError(f"rules {args.rules_command}: give one or more rule files or --sigma FILE|DIR")
    return paths


def run_list(args: argparse.Namespace) -> int:
    ruleset = sigma_ruleset(args, args.rules, include_default=not args.no_default_rules)
    ruleset.raise_for_errors()
    rows = _rows(ruleset)
    out = sys.stdout
    if args.json:
        for row in rows:
            out.write(msgspec.json.encode(row).decode() + "\n")
        return 0
    widths = [max([len(str(r[k])) for r in rows] + [len(k)]) for k in ("id", "kind", "severity", "category")]
    header = ("ID", "KIND", "SEVERITY", "CATEGORY", "ENABLED")
    out.write("  ".join(h.ljust(w) for h, w in zip(header, [*widths, 7], strict=True)).rstrip() + "\n")
    for r in rows:
        cells = [r["id"], r["kind"], r["severity"], r["category"], "yes" if r["enabled"] else "no"]
        out.write("  ".join(str(c).ljust(w) for c, w in zip(cells, [*widths, 7], strict=True)).rstrip() + "\n")
    return 0


def run_validate(args: argparse.Namespace) -> int:
    files = [os.fspath(f) for f in args.files]
    sigma = _sigma_paths(args)
    ruleset = sigma_ruleset(args, files, include_default=not args.no_default_rules, report=False)
    for issue in ruleset.issues:
        print(issue)
    if ruleset.errors:
        print(f"{len(ruleset.errors)} error(s)", file=sys.stderr)
        return ExitCode.USAGE  # invalid rules are a configuration error
    for path in files:
        rules = sum(1 for r in ruleset.rules if r.path == path)
        seqs = sum(1 for s in ruleset.sequences if s.path == path)
        mods = sum(1 for m in ruleset.modifiers if m.path == path)
        print(f"{path}: ok ({rules} rules, {seqs} sequences, {mods} modifiers)")
    if sigma:
        loaded = sum(1 for r in ruleset.rules if r.sigma is not None)
        skipped = sum(1 for i in ruleset.issues if i.message.startswith(NOT_LOADED))
        print(f"sigma: {loaded} rule(s) loaded, {skipped} not loaded from " + ", ".join(sigma))
    return 0


def run_test(args: argparse.Namespace) -> int:
    from telltale.detect.cases import run_cases
    from telltale.detect.engine import DetectionEngine

    files = [os.fspath(f) for f in args.files]
    _sigma_paths(args)
    ruleset = sigma_ruleset(args, files, include_default=not args.no_default_rules)
    if ruleset.errors:
        for issue in ruleset.errors:
            print(issue)
        return ExitCode.USAGE
    engine = DetectionEngine(ruleset)
    # The cases of the given files and of the Sigma rules (their ``x-telltale-tests``).
    results = run_cases(engine, [*files, *sorted({r.path for r in ruleset.rules if r.sigma is not None})])
    failed = [r for r in results if not r.passed]
    for result in results:
        if args.verbose or not result.passed:
            print(result)
    if not results:
        print("no test cases in " + ", ".join(files + list(args.sigma or ())))
        return 0
    print(f"{len(results) - len(failed)} passed, {len(failed)} failed")
    return ExitCode.FAILED if failed else ExitCode.OK


def run_export(args: argparse.Namespace) -> int:
    directory = os.path.expanduser(args.directory)
    if os.path.exists(directory) and not os.path.isdir(directory):
        raise UsageError(f"{directory}: not a directory")
    texts = default_rule_texts()
    targets = [(os.path.join(directory, name.rsplit("/", 1)[-1]), text) for name, text in texts]
    existing = [path for path, _text in targets if os.path.lexists(path)]
    if existing and not args.force:
        raise UsageError(f"{existing[0]} exists (use --force to overwrite)")
    os.makedirs(directory, exist_ok=True)
    for path, text in targets:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
        print(path)
    return 0
