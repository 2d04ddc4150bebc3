"""Adapters imported on first use.

An agent package's ``__init__`` holds its ``SPECS`` (what discovery needs) and nothing
that imports its wire Structs and adapters: a no-change ``scan --once`` reads every spec
but no adapter, and importing all of them was most of its start-up. Names an agent's
package used to export (``ClaudeAdapter``...) stay importable from it: the package's
module ``__getattr__`` (PEP 562) forwards them to the module that defines them.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any


def export(package: str, name: str, where: Mapping[str, str], rest: str | None = None) -> Any:
    """``name`` from the submodule of ``package`` that ``where`` names (``rest`` for any other)."""
    module = where.get(name, rest)
    if module is None or name.startswith("__"):
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module, package), name)
