"""Detection events: the ECS ``alert`` document of one :class:`~telltale.detect.model.Detection`.

This is the output boundary for detection evidence: every evidence value (raw in the
Detection: rules match raw text in memory) leaves here only through
:func:`telltale.events.redaction.redact_excerpt`, with a keyed hash of the raw value so
analysts can correlate without seeing it.
"""

from __future__ import annotations

import copy
from typing import Any

import msgspec

from telltale.detect.model import Detection
from telltale.events.envelope import path_hash
from telltale.events.redaction import bounded, redact, redact_excerpt, value_hash

#: ECS ``event.severity`` for each band (the numbers Elastic uses for rule severities).
SEVERITY_NUMBER = {"informational": 1, "low": 21, "medium": 47, "high": 73, "critical": 99}
#: Characters of one redacted evidence value at most.
EVIDENCE_LIMIT = 1_024
#: Evidence fields whose values are JSON text (tool arguments), decoded before redaction.
_JSON_FIELDS = frozenset({"arguments"})


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


def detection_event(det: Detection, base: dict[str, Any]) -> dict[str, Any]:
    """The detection document: ``base`` (common envelope, copied) plus the alert fields."""
    doc = copy.deepcopy(base)
    techniques, subtechniques, tactics = _techniques(det.attack)
    evidence = [
        {
            "field": ev.field,
            # Decoded first when it is a piece of JSON text; a secret cut at its edge masked.
            "value": bounded(redact_excerpt(ev.value, json_text=ev.field in _JSON_FIELDS), EVIDENCE_LIMIT)[0],
            "hash": value_hash(ev.value),
            "observation_id": ev.observation_id,
            "rule_id": ev.rule_id,
        }
        for ev in det.evidence
    ]
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
        "severity": det.severity,
        "sequence": det.is_sequence,
        "rule_ids": list(det.rule_ids),
        "categories": list(det.categories),
        "modifiers": list(det.modifiers),
        "anchors": list(det.anchors),
        "evidence": evidence,
        "recommendation": det.recommendation,
        "suppressed_by": det.suppressed_by,
        "atlas": list(det.atlas),
        "references": list(det.references),
    }
    if det.sigma is not None:
        detection["sigma"] = msgspec.to_builtins(det.sigma)
    telltale: dict[str, Any] = {"client": det.client, "source": {"kind": det.source_kind}, "detection": detection}
    if det.source_path:
        telltale["source"]["path_hash"] = path_hash(det.source_path)
    extra: dict[str, Any] = {
        "event": {
            "kind": "alert",
            "dataset": "telltale.detection",
            "action": "detection",
            "id": det.detection_id,
            "category": ["intrusion_detection"],
            "type": ["indicator"],
            "severity": SEVERITY_NUMBER[det.severity],
            "risk_score": float(det.score),
            "risk_score_norm": float(min(det.score, 100)),
        },
        "message": f"{det.title} ({det.severity}, score {det.score})",
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
    if gen_ai:
        extra["gen_ai"] = gen_ai
    _merge(doc, extra)
    return doc
