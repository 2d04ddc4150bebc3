"""The three forks of the Cline family as data: client id, agent name, extension ids."""

from __future__ import annotations

import msgspec


class Fork(msgspec.Struct, frozen=True):
    """One extension of the family.

    ``extension_ids`` are the ``globalStorage`` folder names (editors lower-case them;
    discovery matches them case-insensitively), the first being the marketplace id.
    """

    client: str
    kind: str
    agent: str
    extension_ids: tuple[str, ...]
    fixture: str
    description: str


FORKS: tuple[Fork, ...] = (
    Fork(
        client="cline",
        kind="cline.tasks",
        agent="Cline",
        extension_ids=("saoudrizwan.claude-dev",),
        fixture="cline/tasks",
        description="Cline tasks (VS Code-family globalStorage)",
    ),
    Fork(
        client="roo",
        kind="roo.tasks",
        agent="Roo Code",
        extension_ids=("rooveterinaryinc.roo-cline", "roo-code.roo-cline"),
        fixture="roo/tasks",
        description="Roo Code tasks (VS Code-family globalStorage)",
    ),
    Fork(
        client="kilo",
        kind="kilo.legacy_tasks",
        agent="Kilo Code",
        extension_ids=("kilocode.kilo-code",),
        fixture="kilo-legacy/tasks",
        description="Kilo Code tasks from the extension before its OpenCode core (globalStorage)",
    ),
)

_BY_KIND = {fork.kind: fork for fork in FORKS}


def fork_for_kind(kind: str) -> Fork:
    return _BY_KIND[kind]
