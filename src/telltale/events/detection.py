"""Detection events: the ECS ``alert`` document of one :class:`~telltale.detect.model.Detection`.

This is the output boundary for detection evidence: every evidence value (raw in the
Detection: rules match raw text in memory) leaves here only through
:func:`telltale.events.redaction.redact_excerpt`, with a keyed hash of the raw value so
analysts can correlate without seeing it.
"""

from __future__ import annotations

import copy
from typing import Any
from urllib.parse import urlsplit

import msgspec

from telltale.detect.model import Anchor, Detection
from telltale.events.envelope import ContentMode, path_hash
from telltale.events.redaction import bounded, redact, redact_excerpt, value_hash

#: ECS ``event.severity`` for each band (the numbers Elastic uses for rule severities).
SEVERITY_NUMBER = {"informational": 1, "low": 21, "medium": 47, "high": 73, "critical": 99}
#: Characters of one redacted evidence value at most.
EVIDENCE_LIMIT = 1_024
#: Evidence fields whose values are JSON text (tool arguments), decoded before redaction.
_JSON_FIELDS = frozenset({"arguments"})
#: Characters of a command, path, cwd or URL in a detection at most (as in activity events).
TEXT_LIMIT = 2_048
#: ECS ``risk_score`` range: the raw score stays in ``telltale.detection.score``.
RISK_SCORE_MAX = 100


def _text(value: str) -> str:
    """A command, path or URL as an alert carries it: redacted, then bounded."""
    return bounded(redact(value), TEXT_LIMIT)[0]


def _domain(url: str) -> str | None:
    try:
        host = urlsplit(url.strip()).hostname
    except ValueError:
        return None
    return host or None


def anchor_document(anchor: Anchor, content: str) -> dict[str, Any]:
    """One anchor's "where": coordinates, agent and model always; command, path, cwd and
    URL text (redacted) unless ``content`` is ``none``, when only their hashes remain."""
    keep = content != ContentMode.NONE
    out: dict[str, Any] = {"observation_id": anchor.observation_id}
    source: dict[str, Any] = {}
    if anchor.source_kind:
        source["kind"] = anchor.source_kind
    if anchor.path:
        source["path_hash"] = path_hash(anchor.path)
        if keep:
            source["path"] = _text(anchor.path)
    for key in ("line", "offset"):
        value = getattr(anchor, key)
        if value is not None:
            source[key] = value
    if anchor.row is not None:
        source["row"] = bounded(redact(anchor.row), 256)[0]
    if source:
        out["source"] = source
    if anchor.record_id:
        out["record_id"] = redact(anchor.record_id)
    if anchor.occurred_at:
        out["occurred_at"] = anchor.occurred_at
    if anchor.cwd:
        out["cwd_hash"] = path_hash(anchor.cwd)
        if keep:
            out["cwd"] = _text(anchor.cwd)
    for key in ("agent", "agent_version", "model", "provider", "tool_name"):
        value = getattr(anchor, key)
        if value:
            out[key] = redact(value)
    if anchor.command:
        out["command_hash"] = value_hash(anchor.command)
        if keep:
            out["command"] = _text(anchor.command)
    if anchor.file_path:
        out["file_path_hash"] = path_hash(anchor.file_path)
        if keep:
            out["file_path"] = _text(anchor.file_path)
    if anchor.url:
        out["url_hash"] = value_hash(anchor.url)
        if keep:
            out["url"] = _text(anchor.url)
    return out


def _ecs_where(anchor: Anchor, content: str) -> dict[str, Any]:
    """The trigger anchor's top-level ECS fields (what SIEM pivots are written against)."""
    keep = content != ContentMode.NONE
    out: dict[str, Any] = {}
    if keep and anchor.command:
        out["process"] = {"command_line": _text(anchor.command)}
    if keep and anchor.file_path:
        out["file"] = {"path": _text(anchor.file_path)}
    if keep and anchor.url:
        out["url"] = {"full": _text(anchor.url)}
        domain = _domain(anchor.url)
        if domain:
            out["destination"] = {"domain": redact(domain)}
    gen_ai: dict[str, Any] = {}
    if anchor.agent or anchor.agent_version:
        agent: dict[str, str] = {}
        if anchor.agent:
            agent["name"] = redact(anchor.agent)
        if anchor.agent_version:
            agent["version"] = redact(anchor.agent_version)
        gen_ai["agent"] = agent
    if anchor.model:
        gen_ai["request"] = {"model": redact(anchor.model)}
    if anchor.provider:
        gen_ai["provider"] = {"name": redact(anchor.provider)}
    if gen_ai:
        out["gen_ai"] = gen_ai
    return out


def _techniques(tags: list[str]) -> tuple[list[str], list[str], list[str]]:
    """Split ``attack.*`` tags into technique ids, sub-technique ids and tactic names."""
    techniques: list[str] = []
    subtechniques: list[str] = []
    tactics: list[str] = []
    for tag in tags:
        body = tag[len("attack.") :] if tag.lower().startswith("attack.") else tag
        if body[:1].lower() == "t" and body[1:5].isdigit():
            ident = "T" + body[1:]
            main = ident.split(".", 1)[0]
            if main not in techniques:
                techniques.append(main)
            if "." in ident and ident not in subtechniques:
                subtechniques.append(ident)
        elif body and body not in tactics:
            tactics.append(body)
    return techniques, subtechniques, tactics


def _merge(target: dict[str, Any], extra: dict[str, Any]) -> None:
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(target.get(key), dict):
            _merge(target[key], value)
        else:
            target[key] = value


def detection_event(det: Detection, base: dict[str, Any], content: str = ContentMode.REDACTED) -> dict[str, Any]:
    """The detection document: ``base`` (common envelope, copied) plus the alert fields.

    ``content`` follows ``--content``: with ``none`` the alert keeps coordinates, agent,
    model, source and hashes, and no command, path, cwd, URL or excerpt text.
    """
    doc = copy.deepcopy(base)
    keep = content != ContentMode.NONE
    techniques, subtechniques, tactics = _techniques(det.attack)
    evidence: list[dict[str, Any]] = []
    for ev in det.evidence:
        item: dict[str, Any] = {"field": ev.field}
        if keep:
            # Decoded first when it is a piece of JSON text; a secret cut at its edge masked.
            item["value"] = bounded(redact_excerpt(ev.value, json_text=ev.field in _JSON_FIELDS), EVIDENCE_LIMIT)[0]
        item.update(hash=value_hash(ev.value), observation_id=ev.observation_id, rule_id=ev.rule_id)
        evidence.append(item)
    rule: dict[str, Any] = {
        "id": det.rule_id,
        "name": det.title,
        "description": det.description,
        "category": det.category,
        "ruleset": "telltale",
    }
    if det.references:
        rule["reference"] = det.references[0]
    if det.sigma is not None:
        # Compiled from a Sigma rule: its own id, title, level and tags name the alert.
        rule.update({"uuid": det.sigma.id, "ruleset": "sigma"})
        if det.sigma.author:
            rule["author"] = [det.sigma.author]
    threat: dict[str, Any] = {"framework": "MITRE ATT&CK", "technique": {"id": techniques}}
    if subtechniques:
        threat["technique"]["subtechnique"] = {"id": subtechniques}
    if tactics:
        threat["tactic"] = {"name": tactics}
    detection: dict[str, Any] = {
        "score": det.score,
        "risk_score": min(det.score, RISK_SCORE_MAX),
        "count": det.count,
        "first_seen": det.first_seen,
        "last_seen": det.last_seen,
        "severity": det.severity,
        "sequence": det.is_sequence,
        "rule_ids": list(det.rule_ids),
        "categories": list(det.categories),
        "modifiers": list(det.modifiers),
        "anchors": list(det.anchors),
        "where": [anchor_document(a, content) for a in det.where],
        "evidence": evidence,
        "recommendation": det.recommendation,
        "suppressed_by": det.suppressed_by,
        "atlas": list(det.atlas),
        "references": list(det.references),
    }
    if det.sigma is not None:
        detection["sigma"] = msgspec.to_builtins(det.sigma)
    if keep and evidence:
        detection["excerpt"] = evidence[0]["value"]
    telltale: dict[str, Any] = {
        "client": det.client, "content_mode": content, "source": {"kind": det.source_kind}, "detection": detection,
    }
    if det.source_path:
        telltale["source"]["path_hash"] = path_hash(det.source_path)
    trigger = det.trigger
    if trigger is not None:
        located = anchor_document(trigger, content)
        telltale["source"].update(located.get("source", {}))
        if "cwd_hash" in located:
            telltale["cwd_hash"] = located["cwd_hash"]
        if "cwd" in located:
            telltale["cwd"] = located["cwd"]
        if "record_id" in located:
            telltale["record_id"] = located["record_id"]
    extra: dict[str, Any] = {
        "event": {
            "kind": "alert",
            "dataset": "telltale.detection",
            "action": "detection",
            "id": det.detection_id,
            "category": ["intrusion_detection"],
            "type": ["indicator"],
            "severity": SEVERITY_NUMBER[det.severity],
            "risk_score": float(min(det.score, RISK_SCORE_MAX)),
            "risk_score_norm": float(min(det.score, RISK_SCORE_MAX)),
        },
        "message": f"{det.title} ({det.severity}, score {det.score}"
        + (f", {det.count} occurrences)" if det.count > 1 else ")"),
        "rule": rule,
        "threat": threat,
        "telltale": telltale,
    }
    gen_ai: dict[str, Any] = {}
    if det.session_id:
        # Session ids are chosen by agents; one that looks like a secret is redacted too.
        gen_ai["conversation"] = {"id": redact(det.session_id)}
    if det.tool_name:
        gen_ai["tool"] = {"name": redact(det.tool_name)}
    if trigger is not None:
        ecs = _ecs_where(trigger, content)
        gen_ai.update(ecs.pop("gen_ai", {}))
        extra.update(ecs)
    if gen_ai:
        extra["gen_ai"] = gen_ai
    _merge(doc, extra)
    return doc
