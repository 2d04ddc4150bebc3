"""Fixture trees: checked-in synthetic stores in the flattened layout (seed "Fixture Behavior").

A root is a fixture tree when it holds an empty ``.telltale-fixtures`` marker file or any
flattened client fixture path (``claude/projects``, ``codex/sessions``, ``copilot``...).
Data-home stores are excluded from the detection: their fixture layout
(``opencode/opencode.db``) is also the layout of a real data home, so a lone OpenCode
database says nothing about whether the root is synthetic.
"""

from __future__ import annotations

import stat
from collections.abc import Iterable

from telltale.discovery.walk import Probe
from telltale.sources.spec import RootType, SourceSpec

#: An empty regular file of this name at a root marks it as a fixture tree.
FIXTURE_MARKER = ".telltale-fixtures"


def fixture_markers(specs: Iterable[SourceSpec]) -> tuple[str, ...]:
    """Flattened fixture paths that identify a fixture tree (data-home layouts excluded)."""
    seen: dict[str, None] = {}
    for spec in specs:
        if spec.root_type is not RootType.DATA_HOME:
            seen.setdefault(spec.fixture_relative_path, None)
    return tuple(seen)


def is_fixture_tree(probe: Probe, root: str, specs: Iterable[SourceSpec]) -> bool:
    """Whether ``root`` is a fixture tree. Only ``lstat``: a linked marker does not count.

    Detection looks at every registered spec, not only the selected clients, so
    ``--client opencode`` on a full fixture tree still gets fixture semantics.
    """
    flavour = probe.flavour
    marker = probe.lstat(flavour.join(root, FIXTURE_MARKER))
    if marker is not None and stat.S_ISREG(marker.st_mode):
        if marker.st_size == 0:
            return True
        probe.report("fixture_marker_not_empty", flavour.join(root, FIXTURE_MARKER), "marker ignored")
    for relative in fixture_markers(specs):
        parts = relative.split("/")
        found = probe.lstat(flavour.join(root, *parts))
        if found is not None and stat.S_ISDIR(found.st_mode):
            return True
    return False
