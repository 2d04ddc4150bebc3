"""What the scan pipeline loads: the detection engine behind its ``Detector`` protocol.

``DetectionEngine`` itself provides ``rule_count``, ``evaluate``, ``decode_window`` and
``detection_document``; this module only keeps the pipeline's import narrow.
"""

from __future__ import annotations

from collections.abc import Sequence

from telltale.detect.engine import DetectionEngine


def load_detector(
    *, rule_files: Sequence[str] = (), include_default: bool = True, allowlist_files: Sequence[str] = ()
) -> DetectionEngine:
    """The engine for ``--rules``/``--no-default-rules``/``--allowlist``; raises ``ConfigError``."""
    return DetectionEngine.load(rule_files, include_default=include_default, allowlist_files=allowlist_files)
