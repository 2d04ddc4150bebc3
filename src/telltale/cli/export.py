"""``telltale export-template elastic``: print the Elasticsearch index template.

Install it once before the first delivery so fields get their intended types (dates,
keywords, token counts as longs) instead of dynamic guesses::

    telltale export-template elastic > telltale.json
    curl -X PUT "$ES/_index_template/telltale" -H 'Content-Type: application/json' -d @telltale.json
"""

from __future__ import annotations

import argparse
import json
import sys
from importlib import resources
from typing import Any

TEMPLATES = {"elastic": "elastic_template.json"}


def template_text(kind: str) -> str:
    return resources.files("telltale.events").joinpath(TEMPLATES[kind]).read_text(encoding="utf-8")


def _export(args: argparse.Namespace) -> int:
    text = template_text(args.kind)
    if args.index_pattern:
        data = json.loads(text)
        data["index_patterns"] = list(args.index_pattern)
        text = json.dumps(data, indent=2) + "\n"
    sys.stdout.write(text)
    return 0


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "export-template", help="print a backend template (elastic index template)",
        description="Print a template a backend needs before it receives Telltale events (the Elasticsearch "
        "index template mapping Telltale's fields).",
    )
    p.add_argument("kind", choices=sorted(TEMPLATES), help="which template: " + ", ".join(sorted(TEMPLATES)))
    p.add_argument("--index-pattern", action="append", metavar="PATTERN",
                   help="index patterns instead of telltale-* (repeatable)")
    p.set_defaults(handler=_export)
