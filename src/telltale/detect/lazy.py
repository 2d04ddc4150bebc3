"""The default rule pack, compiled on first use.

A ``scan --once`` run from cron or a timer usually finds nothing new; compiling the
default pack (YAML, literal extraction, RE2 and Hyperscan databases: ~0.2 s) would then
be most of its cost. The default pack ships with the package and is validated by the
test suite, so nothing is lost by compiling it only when a changed source is about to
be read. Rules or allowlists given on the command line are still loaded up front, so an
error in them is reported at once (see ``cli.common.load_detector``).
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping, Sequence
from typing import Any

from telltale.model import Observation


class LazyDetector:
    """A detector that builds its engine the first time it is needed."""

    def __init__(self, build: Callable[[], Any]) -> None:
        self._build = build
        self._engine: Any = None

    def prepare(self) -> Any:
        """Build the engine now (the pipeline calls this before reading a changed source,
        outside any one source's error handling: a failure here is the scan's)."""
        if self._engine is None:
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
