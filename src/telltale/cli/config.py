"""``telltale config validate``: check an outputs file and show what it means.

Prints the effective outputs with every default filled in and every secret replaced by
where it comes from, then the warnings. Exit 0 when usable, 1 when a secret or an
optional package is missing, 2 when the file itself is invalid.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import yaml

from telltale.errors import ConfigError
from telltale.exitcodes import ExitCode


def _validate(args: argparse.Namespace) -> int:
    from telltale.sinks.config import build_sink, load_outputs, masked_view, secret_origins

    loaded = load_outputs(args.outputs)
    view = masked_view(loaded)
    problems: list[str] = []
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
    if args.json:
        print(json.dumps({"path": str(loaded.path), "exists": loaded.exists, "outputs": view,
                          "warnings": loaded.warnings, "problems": problems}, indent=2))
    else:
        print(f"# {loaded.path}" + ("" if loaded.exists else " (not found: no outputs configured)"))
        shown = {"outputs": _without_nulls(view)}
        print(yaml.safe_dump(shown, sort_keys=False, default_flow_style=False).rstrip())
        for warning in loaded.warnings:
            print(f"warning: {warning}", file=sys.stderr)
        for problem in problems:
            print(f"error: {problem}", file=sys.stderr)
    return ExitCode.USAGE if problems else ExitCode.OK  # a missing secret is a configuration error


def _without_nulls(value: Any) -> Any:
    """Unset optional fields clutter the human view; ``--json`` keeps them."""
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    return value


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("config", help="check configuration files")
    sub = parser.add_subparsers(dest="config_command", metavar="SUBCOMMAND", required=True)
    p = sub.add_parser("validate", help="validate the outputs file and print the effective outputs")
    p.add_argument("--outputs", metavar="FILE", help="outputs file (default: the user config dir)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_validate)
