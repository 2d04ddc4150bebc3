"""The health event that says which loaded rules were not loaded, and why.

A scan or watch with ``--sigma`` rules Telltale cannot evaluate prints one line per rule
on stderr and writes one ``operational_alert`` (``alert_type: rules_not_loaded``) listing
them. Like the inventory, the event is written when the list changes (its digest is kept
in the state with the window that writes the event), not on every scan.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from telltale.detect.loader import LoadIssue
from telltale.digest import blake2b

META_DIGEST = "rules.not_loaded.digest"
#: Rules listed in one event at most (the count is always complete).
MAX_LISTED = 200

Commit = Callable[[Any], None]
Hook = Callable[[Any, str], tuple[list[dict[str, Any]], Commit | None]]


def issue_rows(issues: Sequence[LoadIssue]) -> list[dict[str, str]]:
    """Content-free rows: file, rule id and reason (rule files are configuration, not transcripts)."""
    return [{"path": i.path, "rule_id": i.rule_id or "", "reason": i.message} for i in issues]


def _digest(rows: list[dict[str, str]]) -> str:
    h = blake2b(digest_size=16)
    for row in rows:
        h.update("\x1f".join((row["path"], row["rule_id"], row["reason"])).encode("utf-8", "surrogatepass"))
        h.update(b"\x1e")
    return h.hexdigest()


def not_loaded_hook(issues: Sequence[LoadIssue], inner: Hook | None) -> Hook:
    """``inner`` (the scan's other extra events, e.g. inventory) plus the not-loaded event."""
    from telltale.events.health import operational_alert
    from telltale.state import WindowCommit

    rows = issue_rows(issues)
    digest = _digest(rows)

    def events(state: Any, observed_at: str) -> tuple[list[dict[str, Any]], Commit | None]:
        docs, commit = inner(state, observed_at) if inner is not None else ([], None)
        last = state.meta(META_DIGEST) if state is not None else None
        if last is not None and last.decode() == digest:
            return docs, commit
        doc = operational_alert(
            scan_id=digest,
            alert_type="rules_not_loaded",
            severity="warning",
            summary=f"{len(rows)} rule(s) not loaded: Telltale cannot evaluate them on agent tool calls",
            observed_at=observed_at,
            fields={"count": len(rows), "digest": digest, "rules": rows[:MAX_LISTED]},
        )
        # The inner commit runs after ours; its meta travels with the window's intent too.
        meta = {**getattr(commit, "meta", {}), META_DIGEST: digest.encode()}
        return [*docs, doc], WindowCommit(meta, commit)

    return events
