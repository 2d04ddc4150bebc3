"""``telltale config validate``: the effective configuration and where each value came from.

Reads what ``scan`` and ``watch`` would read — the roots of the profile (or ``--config-dir``),
``config.yaml``, ``TELLTALE_<KEY>`` variables, ``outputs.yaml`` and ``outputs.d/`` — and prints
every setting with its origin (``flag``, ``env TELLTALE_X``, ``<scope> <file>:<line>``,
``default``), then the outputs with every default filled in, what each one takes, and every
secret replaced by where it comes from, and the effective detection pack (``rules.d``,
``overrides.d``, ``policies.d``, ``allowlists.d``, with the file each piece came from; see
:mod:`telltale.cli.config_detection`). Exit 0 when usable, 2 when a file is invalid or a
secret or an optional package is missing.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import yaml

from telltale.config.roots import add_config_root_arguments, roots_from_args
from telltale.errors import ConfigError
from telltale.exitcodes import ExitCode


def _spec() -> Any:
    """The settings keys of ``scan`` and ``watch`` together (one config.yaml serves both)."""
    from telltale.cli.main import build_parser

    specs = []
    for command in ("scan", "watch"):
        parser = build_parser(command)
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        specs.append(sub.choices[command].get_default("settings_spec"))
    return specs[0].merged(specs[1])


def _validate(args: argparse.Namespace) -> int:
    from telltale.cli.config_detection import detection_view
    from telltale.config.settings import REFUSED, resolve_settings
    from telltale.sinks.config import build_sink, load_outputs, masked_view, secret_origins, selector

    roots = roots_from_args(args)
    settings = resolve_settings(_spec(), roots)
    loaded = load_outputs(args.outputs or settings.values["outputs"].value, roots)
    view = masked_view(loaded)
    problems: list[str] = []
    for name, out in loaded.outputs.items():
        takes = selector(out).describe()
        view[name]["takes"] = takes.get("takes", takes)
        view[name]["defined_in"] = loaded.sources.get(name, [])
    for name, out in loaded.remote().items():
        origins = secret_origins(loaded, name, out)
        view[name]["secrets"] = origins
        problems.extend(f"outputs.{name}.{k}: {v}" for k, v in origins.items() if v.startswith("MISSING"))
        if not any(v.startswith("MISSING") for v in origins.values()):
            try:
                sink = build_sink(loaded, name, out)
            except ConfigError as exc:
                problems.append(str(exc))
            else:
                close = getattr(sink, "close", None)
                if callable(close):
                    close()
    detection, detection_problems = detection_view(args)
    problems.extend(detection_problems)
    shown = {k: s for k, s in settings.values.items() if k not in REFUSED}
    if args.json:
        print(json.dumps({
            "profile": str(roots.profile),
            "roots": roots.describe(),
            "files": settings.files + [f for f in loaded.files if f not in settings.files],
            "settings": {k: {"value": s.value, "origin": s.origin} for k, s in shown.items()},
            # kept for scripts written against the outputs-only view
            "path": str(loaded.path), "exists": loaded.exists,
            "outputs": view, "detection": detection, "warnings": loaded.warnings, "problems": problems,
        }, indent=2, default=str))
    else:
        text = [f"# profile {roots.profile}; configuration roots, highest precedence first:"]
        text += [f"#   {line}" for line in roots.describe()] or ["#   (none)"]
        files = settings.files + [f for f in loaded.files if f not in settings.files]
        text += ["# files read:"] + ([f"#   {f}" for f in files] or ["#   (none: defaults, flags and environment)"])
        text.append("settings:")
        lines = [(f"  {key}: {json.dumps(s.value)}", s.origin) for key, s in sorted(shown.items())]
        column = min(max((len(text) for text, _ in lines), default=0), 56)
        text += [f"{text.ljust(column)}  # {origin}" for text, origin in lines]
        if loaded.outputs:
            text.append(yaml.safe_dump({"outputs": _without_nulls(view)}, sort_keys=False,
                                      default_flow_style=False).rstrip())
        else:
            text.append("outputs: {}  # none configured: the local log only")
        text.append("# detection: the effective rule pack (default, rules.d, policies.d, overrides.d, allowlists.d)")
        text.append(yaml.safe_dump({"detection": detection}, sort_keys=False, default_flow_style=False).rstrip())
        print("\n".join(text))
        for warning in loaded.warnings:
            print(f"warning: {warning}", file=sys.stderr)
        for problem in problems:
            print(f"error: {problem}", file=sys.stderr)
    return ExitCode.USAGE if problems else ExitCode.OK  # a missing secret is a configuration error


def _without_nulls(value: Any) -> Any:
    """Unset optional fields clutter the human view; ``--json`` keeps them."""
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None and v != []}
    return value


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "config", help="check configuration files",
        description="Check Telltale's configuration files and show what a run would use.",
    )
    sub = parser.add_subparsers(dest="config_command", metavar="SUBCOMMAND", required=True)
    p = sub.add_parser(
        "validate",
        help="validate config.yaml and the outputs; print the effective configuration and where each value "
        "came from",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--outputs", metavar="FILE", help="read only this outputs file (default: every root's "
                   "outputs.yaml and outputs.d/*.yaml)")
    p.add_argument("--json", action="store_true", help="print the effective configuration as JSON")
    p.add_argument("--rules", action="append", default=[], metavar="FILE", help="extra rule file (repeatable)")
    p.add_argument("--allowlist", action="append", default=[], metavar="FILE", help="allowlist file (repeatable)")
    p.add_argument("--no-default-rules", action="store_true", help="leave out the default pack")
    add_config_root_arguments(p)
    p.set_defaults(handler=_validate)
