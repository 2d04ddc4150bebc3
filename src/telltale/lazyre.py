"""Regular expressions compiled on first use.

Python's ``re`` compiles in Python: the normalisation stage's ~45 patterns took ~15 ms of
every scan that read a changed source, most of them for commands they never see
(PowerShell, encoded payloads). A :func:`compile` pattern is compiled when one of its
methods is first looked up; its methods are then the compiled pattern's own, bound once.
"""

from __future__ import annotations

import re
from typing import Any, cast

#: What callers use of a pattern: bound onto the object when it is compiled.
_METHODS = ("search", "match", "fullmatch", "sub", "subn", "finditer", "findall", "split")


class _LazyPattern:
    def __init__(self, pattern: str, flags: int) -> None:
        self._source = (pattern, flags)

    def __getattr__(self, name: str) -> Any:
        # Only reached for a name not yet set: the first use compiles and binds them all.
        if name.startswith("__") or name == "_source":  # copy/pickle probes; a half-built object
            raise AttributeError(name)
        compiled = re.compile(*self._source)
        for method in _METHODS:
            setattr(self, method, getattr(compiled, method))
        return getattr(compiled, name)

    def __repr__(self) -> str:
        return f"lazyre.compile({self._source[0]!r}, {self._source[1]!r})"


def compile(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """``re.compile(pattern, flags)``, done when the pattern is first used."""
    return cast("re.Pattern[str]", _LazyPattern(pattern, flags))
