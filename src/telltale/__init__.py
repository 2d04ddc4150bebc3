"""Telltale: host-side scanner for AI coding-agent session stores."""

import sys as _sys

__version__ = "0.1.0"


def _import_msgspec_without_typing_extensions() -> None:
    """Import msgspec before anything else does, without letting it import typing_extensions.

    msgspec imports ``typing_extensions`` when it is installed, only to recognise that
    package's own typing constructs (Telltale uses ``typing``'s), and that import pulls in
    ``inspect``, ``ast``, ``dis`` and ``tokenize``: ~17 ms of every command's start-up
    (``python -X importtime``). It is hidden while msgspec imports (msgspec then uses
    ``typing``'s equivalents) and visible again right after, for any other importer.
    Nothing changes when msgspec or typing_extensions is already imported.
    """
    if "msgspec" in _sys.modules or "typing_extensions" in _sys.modules:
        return
    _sys.modules["typing_extensions"] = None  # type: ignore[assignment]  # "not installed"
    try:
        import msgspec  # noqa: F401
    finally:
        del _sys.modules["typing_extensions"]


_import_msgspec_without_typing_extensions()
