"""The default rule pack, compiled on first use.

A ``scan --once`` run from cron or a timer usually finds nothing new; compiling the
default pack (YAML, literal extraction, RE2 and Hyperscan databases: ~0.2 s) would then
be most of its cost. The default pack ships with the package and is validated by the
test suite, so nothing is lost by compiling it only when a changed source is about to
be read. Rules or allowlists given on the command line are still loaded up front, so an
error in them is reported at once (see ``cli.common.load_detector``).
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable, Iterator, MutableMapping, Sequence
from typing import Any

from telltale.model import Observation


@contextlib.contextmanager
def building(*, for_good: bool) -> Iterator[None]:
    """No cyclic collection while an engine is built (it allocates tens of thousands of
    objects and frees few: the collections it set off walked them for nothing); with
    ``for_good``, everything then alive leaves the collector's generations (``gc.freeze``,
    as the CLI does after start-up), so a scan's later collections never walk the engine.
    Only for an engine that lives as long as the process: a frozen cycle is never
    collected, so a watch that reloads its rules must not freeze the engines it drops."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if for_good:
            gc.freeze()
        if enabled:
            gc.enable()


class LazyDetector:
    """A detector that builds its engine the first time it is needed."""

    def __init__(self, build: Callable[[], Any], *, for_good: bool = False) -> None:
        self._build = build
        self._engine: Any = None
        #: The engine lives as long as the process (see :func:`building`).
        self._for_good = for_good

    def prepare(self) -> Any:
        """Build the engine now (the pipeline calls this before reading a changed source,
        outside any one source's error handling: a failure here is the scan's)."""
        if self._engine is None:
            with building(for_good=self._for_good):
                self._engine = self._build()
        return self._engine

    @property
    def loaded(self) -> bool:
        return self._engine is not None

    @property
    def rule_count(self) -> int:
        count: int = self.prepare().rule_count
        return count

    def evaluate(self, observations: Sequence[Observation], windows: MutableMapping[str, Any]) -> list[Any]:
        found: list[Any] = self.prepare().evaluate(observations, windows)
        return found

    def decode_window(self, data: bytes) -> Any:
        return self.prepare().decode_window(data)

    def rollups(self, windows: Any, observed_at: str) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self.prepare().rollups(windows, observed_at)
        return found

    def detection_document(self, detection: Any, base: dict[str, Any], content: str = "redacted") -> dict[str, Any]:
        document: dict[str, Any] = self.prepare().detection_document(detection, base, content)
        return document
