"""``telltale rules``: list, show, validate, test and export detection rules.

``list``, ``show`` and ``test`` work on the *effective pack*: the default pack, the
``rules.d``/``overrides.d``/``policies.d``/``allowlists.d`` files of the configuration
roots and ``--rules`` (see :mod:`telltale.detect.pack`). ``validate`` and ``test FILE``
load the given files together with the default pack (unless ``--no-default-rules``)
because sequences and modifiers may name default rules. Exit codes: 0 fine, 1 a failed
case, 2 an invalid rule or bad usage.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any

import msgspec

from telltale.cli.common import add_sigma_argument, load_pack, sigma_ruleset
from telltale.config.roots import add_config_root_arguments
from telltale.detect.loader import RuleSet, default_rule_texts, resolve_selector
from telltale.detect.model import severity_for
from telltale.detect.sigma.load import NOT_LOADED
from telltale.errors import UsageError
from telltale.exitcodes import ExitCode

if TYPE_CHECKING:
    from telltale.detect.pack import EffectivePack


def _pack_arguments(parser: argparse.ArgumentParser, *, files: bool = True) -> None:
    if files:
        parser.add_argument("--rules", action="append", default=[], metavar="FILE",
                            help="extra rule file (repeatable)")
    parser.add_argument("--no-default-rules", action="store_true", help="leave out the default pack")
    parser.add_argument("--allowlist", action="append", default=[], metavar="FILE", help=argparse.SUPPRESS)
    add_sigma_argument(parser)
    add_config_root_arguments(parser)


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "rules",
        help="list, validate, test and export detection rules",
        description="Work with detection rules: the default pack (package data) and your own YAML files.",
    )
    sub = parser.add_subparsers(dest="rules_command", metavar="ACTION")

    p_list = sub.add_parser(
        "list", help="list the effective pack's rules and sequences (id, kind, severity, category, enabled, "
        "origin, title)",
        description="List the rules and sequences a scan would run: the default pack, --rules files, Sigma rules "
        "and the tuning (overrides, policies) of the configuration roots.")
    _pack_arguments(p_list)
    p_list.add_argument("--json", action="store_true", help="one JSON object per line")
    p_list.set_defaults(handler=run_list)

    p_show = sub.add_parser(
        "show", help="show one rule or sequence of the effective pack, with its tuning",
        description="Show one rule or sequence of the effective pack as a scan would run it, with the overrides "
        "and policies that changed it and where they came from.",
    )
    p_show.add_argument("rule_id", metavar="ID", help="the rule's or sequence's id (see `telltale rules list`)")
    _pack_arguments(p_show)
    p_show.add_argument("--json", action="store_true", help="as one JSON object")
    p_show.set_defaults(handler=run_show)

    p_val = sub.add_parser(
        "validate", help="check rule files; print located errors; exit 1 on error",
        description="Check rule files against the rule schema and compile their patterns; every error is "
        "printed with its file and line.",
    )
    p_val.add_argument("files", nargs="*", metavar="FILE", help="rule YAML files (none: only --sigma rules)")
    p_val.add_argument("--no-default-rules", action="store_true", help="do not resolve names against the default pack")
    add_sigma_argument(p_val)
    p_val.set_defaults(handler=run_validate)

    p_test = sub.add_parser(
        "test",
        help="run the cases embedded in rule files (no FILE: every case of the effective pack), or run the "
        "effective pack over one session file (--transcript)",
        description="Run the positive and negative cases written in rule files (no FILE: every case of the "
        "effective pack); exit 1 when one fails. With --transcript, print what the effective pack matches in one "
        "session file.",
    )
    p_test.add_argument("files", nargs="*", metavar="FILE", help="rule YAML files with test cases")
    p_test.add_argument("--transcript", metavar="FILE",
                        help="a session file of any supported agent: print what the effective pack matches in it")
    p_test.add_argument("--kind", metavar="KIND",
                        help="with --transcript: the source kind, when its place is ambiguous")
    p_test.add_argument("--json", action="store_true", help="with --transcript: the alert documents as JSON lines")
    _pack_arguments(p_test, files=False)
    p_test.add_argument("--verbose", "-v", action="store_true", help="print passing cases too")
    p_test.set_defaults(handler=run_test)

    p_exp = sub.add_parser(
        "export-default", help="write the default rule pack's YAML files to DIR",
        description="Write the default rule pack's YAML files to DIR, to read or to start your own pack from. "
        "Scans keep loading the default pack: to run an edited copy instead, pass it with --rules and add "
        "--no-default-rules (otherwise both run and each rule fires twice).",
    )
    p_exp.add_argument("directory", nargs="?", default=".", metavar="DIR", help="where to write (default: .)")
    p_exp.add_argument("--force", action="store_true", help="overwrite existing files")
    p_exp.set_defaults(handler=run_export)

    p_sx = sub.add_parser(
        "export",
        help="write the effective pack's single-event rules as Sigma rules (--sigma DIR)",
        description="Write every enabled single-event rule of the effective pack (default pack, rules.d and its "
        "tuning, --rules) as a "
        "Sigma rule over Telltale's events (logsource product: telltale), plus telltale_pipeline.yml, the pySigma "
        "processing pipeline for Telltale's event field names. Convert with e.g. "
        "`sigma convert -t splunk -p DIR/telltale_pipeline.yml DIR`.",
    )
    p_sx.add_argument("--sigma", required=True, metavar="DIR", dest="sigma_dir", help="directory to write")
    p_sx.add_argument("--rules", action="append", default=[], metavar="FILE", help="extra rule file (repeatable)")
    p_sx.add_argument("--no-default-rules", action="store_true", help="leave out the default pack")
    p_sx.add_argument("--force", action="store_true", help="overwrite existing files")
    add_config_root_arguments(p_sx)
    p_sx.set_defaults(handler=run_export_sigma)

    parser.set_defaults(handler=lambda _args: _usage(parser))


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return ExitCode.USAGE


def _rows(ruleset: RuleSet, pack: EffectivePack | None = None) -> list[dict[str, Any]]:
    pinned = pack.pinned if pack is not None else {}
    rows: list[dict[str, Any]] = []
    for rule in ruleset.rules:
        spec = rule.spec
        rows.append(
            {
                "id": spec.id,
                "kind": "signal" if spec.signal else "rule",
                "severity": pinned.get(spec.id) or spec.severity or severity_for(spec.score),
                "score": spec.score,
                "category": spec.category,
                "enabled": spec.enabled,
                "title": spec.title,
                "source": rule.path,
                "origin": pack.origin_of(rule.path) if pack is not None else rule.path,
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
                "severity": pinned.get(sspec.id) or severity_for(least),
                "score": sspec.score,
                "min_score": least,
                "category": sspec.category,
                "enabled": sspec.enabled,
                "title": sspec.title,
                "source": seq.path,
                "origin": pack.origin_of(seq.path) if pack is not None else seq.path,
            }
        )
    if pack is not None:
        for row in rows:
            tuned = pack.tuning.get(row["id"])
            if tuned:
                row["tuned"] = [{"setting": t.setting, "value": t.value, "by": t.origin, "reason": t.reason}
                                for t in tuned]
    return rows


def _sigma_paths(args: argparse.Namespace) -> list[str]:
    paths: list[str] = list(args.sigma or ())
    if not args.files and not paths:
        raise UsageError(f"rules {args.rules_command}: give one or more rule files or --sigma FILE|DIR")
    return paths


def run_list(args: argparse.Namespace) -> int:
    pack = load_pack(args)
    rows = _rows(pack.ruleset, pack)
    out = sys.stdout
    if args.json:
        for row in rows:
            out.write(msgspec.json.encode(row).decode() + "\n")
        return 0
    keys = ("id", "kind", "severity", "category", "enabled", "origin", "title")
    table = [[r["id"], r["kind"], r["severity"], r["category"],
              ("yes" if r["enabled"] else "no") + ("*" if r.get("tuned") else ""), r["origin"], r["title"]]
             for r in rows]
    widths = [max([len(str(c[i])) for c in table] + [len(k)]) for i, k in enumerate(keys)]
    out.write("  ".join(k.upper().ljust(w) for k, w in zip(keys, widths, strict=True)).rstrip() + "\n")
    for cells in table:
        out.write("  ".join(str(c).ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip() + "\n")
    if any(r.get("tuned") for r in rows):
        out.write("* tuned by a policy or an override: `telltale rules show ID` says which and why\n")
    return 0


def run_show(args: argparse.Namespace) -> int:
    pack = load_pack(args)
    ident = args.rule_id
    rows = {r["id"]: r for r in _rows(pack.ruleset, pack)}
    if ident not in rows:
        raise UsageError(f"no rule or sequence {ident!r} in the effective pack (see `telltale rules list`)")
    item = next(i for i in [*pack.ruleset.rules, *pack.ruleset.sequences] if i.spec.id == ident)
    shown: dict[str, Any] = {k: v for k, v in rows[ident].items() if k != "tuned"}
    shown["line"] = item.line
    shown["definition"] = msgspec.to_builtins(item.spec)
    shown["tuned"] = rows[ident].get("tuned", [])
    if args.json:
        sys.stdout.write(msgspec.json.encode(shown).decode() + "\n")
        return 0
    import yaml

    sys.stdout.write(yaml.safe_dump(shown, sort_keys=False, allow_unicode=True, width=100))
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

    if args.transcript:
        if args.files:
            raise UsageError("give rule FILEs or --transcript, not both (rules.d and --config-dir add rules)")
        return _run_transcript(args, DetectionEngine.from_pack(load_pack(args)))
    files = [os.fspath(f) for f in args.files]
    if not files and not getattr(args, "sigma", None):
        # The effective pack's own cases (rules.d, tuning, Sigma rules in rules.d included):
        # what the scans will run.
        pack = load_pack(args)
        engine = DetectionEngine.from_pack(pack)
        return _report_cases(args, run_cases(engine, None), "the effective pack")
    _sigma_paths(args)
    ruleset = sigma_ruleset(args, files, include_default=not args.no_default_rules)
    if ruleset.errors:
        for issue in ruleset.errors:
            print(issue)
        return ExitCode.USAGE
    engine = DetectionEngine(ruleset)
    # The cases of the given files and of the Sigma rules (their ``x-telltale-tests``).
    results = run_cases(engine, [*files, *sorted({r.path for r in ruleset.rules if r.sigma is not None})])
    return _report_cases(args, results, ", ".join(files + list(args.sigma or ())))


def _report_cases(args: argparse.Namespace, results: list[Any], what: str) -> int:
    failed = [r for r in results if not r.passed]
    for result in results:
        if args.verbose or not result.passed:
            print(result)
    if not results:
        print("no test cases in " + what)
        return 0
    print(f"{len(results) - len(failed)} passed, {len(failed)} failed")
    return ExitCode.FAILED if failed else ExitCode.OK


def _run_transcript(args: argparse.Namespace, engine: Any) -> int:
    """Print what the effective pack matches in one session file (redacted like alerts)."""
    from telltale.detect.transcript import run_transcript
    from telltale.events.detection import detection_event
    from telltale.events.envelope import base_event, utc_now
    from telltale.events.redaction import redact

    run = run_transcript(engine, os.path.expanduser(args.transcript), args.kind)
    observed = utc_now()
    if args.json:
        for det in run.detections:
            base = base_event(event_id=det.detection_id, dataset="telltale.detection", action="detection",
                              kind="alert", timestamp=det.occurred_at, observed_at=observed)
            sys.stdout.write(msgspec.json.encode(detection_event(det, base)).decode() + "\n")
        for doc in run.rollups:
            sys.stdout.write(msgspec.json.encode(doc).decode() + "\n")
        return 0
    print(f"{redact(args.transcript)}: {run.kind}, {run.records} records, {run.observations} observations"
          + (f", {run.quarantined} quarantined" if run.quarantined else ""))
    for det in run.detections:
        lines = ",".join(str(a.line) for a in det.where if a.line is not None)
        print(f"{det.severity:<13} {det.score:>3}  {det.rule_id}  x{det.count}" + (f"  line {lines}" if lines else ""))
        print(f"    {det.title}")
        if det.evidence:
            doc = detection_event(det, {"event": {}, "telltale": {}})
            print(f"    {doc['telltale']['detection']['excerpt'][:200]}")
    for doc in run.rollups:
        risk = doc["telltale"]["session_risk"]
        print(f"session {doc['gen_ai']['conversation']['id']}: risk {risk['severity']} "
              f"({risk['total_points']} points, max severity {risk['max_severity']})")
    print(f"{len(run.detections)} alert(s)")
    return 0


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
    rules = " ".join(f"--rules {path}" for path, _text in targets)
    print(
        f"telltale: wrote {len(targets)} rule files. Scans still load the default pack; to run your edited copy "
        f"instead of it: telltale scan --no-default-rules {rules}",
        file=sys.stderr,
    )
    return 0


def run_export_sigma(args: argparse.Namespace) -> int:
    from telltale.detect.sigma.export import PIPELINE_FILE, export_sigma

    pack = load_pack(args)  # tuned: overrides and policies decide what is enabled and its severity
    directory = os.path.expanduser(args.sigma_dir)
    if os.path.exists(directory) and not os.path.isdir(directory):
        raise UsageError(f"{directory}: not a directory")
    try:
        written, skipped = export_sigma(pack.ruleset, directory, force=args.force, levels=dict(pack.pinned))
    except FileExistsError as exc:
        raise UsageError(f"{exc.args[0]} exists (use --force to overwrite)") from None
    pipeline = os.path.join(directory, PIPELINE_FILE)
    print(pipeline)
    for item in written:
        print(item.path)
    for rule_id, why in skipped:
        print(f"not exported: {rule_id}: {why}")
    print(f"{len(written)} rule(s) exported, {len(skipped)} not exported; convert with: "
          f"sigma convert -t splunk -p {pipeline} {directory}", file=sys.stderr)
    return 0
