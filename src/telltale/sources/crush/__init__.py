"""Crush (charmbracelet): one SQLite store per project, ``<project>/.crush/crush.db``.

Found below the project roots (``.crush`` at each root and two levels of workspaces) and
through Crush's own index of the projects it ran in (``projects.json`` in its global data
directory, :mod:`.index`). :mod:`.adapter` reads the database read-only; :mod:`.wire`
holds the ``parts`` shapes (JSON, or a zstd frame of it in the newest builds);
:mod:`.tools` the facets of Crush's tools. A database committed to its repository (often
someone else's, cloned) is marked ``project_store: tracked``. See docs/sources/crush.md.
"""

from __future__ import annotations

from typing import Any

from telltale.sources.lazy import export
from telltale.sources.spec import RootType, SourceSpec, StoreLayout

SPECS = (
    SourceSpec(
        client="crush",
        kind="crush.sqlite",
        root_type=RootType.PROJECT_LOCAL,
        relative_path=".crush",
        file_patterns=("crush.db",),
        recursive=False,
        layout=StoreLayout.SQLITE,
        fixture_relative_path="crush/project/.crush",
        adapter="telltale.sources.crush:CrushAdapter",
        locator="telltale.sources.crush.index:locate",
        description="Crush SQLite store (.crush/crush.db in a project; projects.json index)",
    ),
)


_LAZY = {"CrushAdapter": ".adapter"}


def __getattr__(name: str) -> Any:
    return export(__name__, name, _LAZY)


__all__ = ["SPECS", "CrushAdapter"]
