"""Entry point: ``telltale <command>``. Each command lives in its own module.

A command module exposes ``register(subparsers)``, which adds its parser and sets
``handler`` (a function taking the parsed namespace and returning an exit code).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from telltale import __version__
from telltale.errors import TelltaleError, UsageError

#: Command modules under ``telltale.cli``, in help order.
COMMANDS: tuple[str, ...] = ("sources", "scan", "watch", "inventory", "config", "delivery", "export", "rules")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="telltale",
        description="Find AI coding-agent session stores, acquire their activity, detect risky "
        "behaviour and emit redacted telemetry.",
    )
    parser.add_argument("--version", action="version", version=f"telltale {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"telltale.cli.{name}").register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        code: int = handler(args)
        return code
    except UsageError as exc:
        print(f"telltale: error: {exc}", file=sys.stderr)
        return 2
    except TelltaleError as exc:
        print(f"telltale: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
