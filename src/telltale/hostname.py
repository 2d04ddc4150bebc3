"""This host's name, without importing :mod:`socket` where the OS gives it directly.

``socket`` builds its enums of address families and socket types at import (~5 ms), and
every scan needs the host's name (events, the lock record) but no socket. On POSIX
``gethostname(2)`` is the kernel's ``uname`` node name, which ``os.uname()`` returns.
"""

from __future__ import annotations

import functools
import os


@functools.cache
def hostname() -> str:
    """The host's name, as ``socket.gethostname()`` gives it."""
    if hasattr(os, "uname"):
        return os.uname().nodename
    import socket  # Windows: no uname

    return socket.gethostname()
