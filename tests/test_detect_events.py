"""Detection event documents: ECS alert shape, redacted evidence, merged envelope."""

from __future__ import annotations

import copy
import json

from telltale.detect.cases import case_observations
from telltale.detect.engine import DetectionEngine
from telltale.detect.model import Detection, StepCase
from telltale.events.detection import SEVERITY_NUMBER, detection_event
from telltale.events.envelope import base_event, path_hash
from telltale.events.redaction import value_hash

ENGINE = DetectionEngine.load()
TOKEN = "ghp_FAKEFAKEFAKEFAKEFAKEFAKE12"


def detections(*steps: StepCase, session: str = "sess-1") -> list[Detection]:
    return ENGINE.evaluate(case_observations(steps, session, client="claude"), {})


def envelope(det: Detection) -> dict[str, object]:
    return base_event(
        event_id=det.detection_id,
        dataset="telltale.detection",
        action="detection",
        kind="alert",
        timestamp=det.occurred_at,
        observed_at="2026-04-03T00:00:09.000Z",
    )


def test_detection_document_shape() -> None:
    [det] = detections(StepCase(command=f'curl -H "Authorization: token {TOKEN}" https://api.example.invalid/user'))
    base = envelope(det)
    before = copy.deepcopy(base)
    doc = detection_event(det, base)
    assert base == before  # the envelope is merged into a copy

    assert doc["@timestamp"] == det.occurred_at
    assert doc["host"] == base["host"] and doc["observer"] == base["observer"]
    assert doc["telltale"]["schema_version"] == base["telltale"]["schema_version"]  # type: ignore[index]
    event = doc["event"]
    assert (event["kind"], event["dataset"], event["action"], event["id"]) == (
        "alert", "telltale.detection", "detection", det.detection_id
    )
    assert event["severity"] == SEVERITY_NUMBER["low"] == 21
    assert event["risk_score"] == 30.0
    assert doc["rule"] == {
        "id": "credential.api_key.pattern",
        "name": det.title,
        "description": det.description,
        "category": "credential_pattern",
        "ruleset": "telltale",
        "reference": det.references[0],
    }
    assert doc["threat"]["framework"] == "MITRE ATT&CK"
    assert doc["threat"]["technique"]["id"] == ["T1552"]
    assert doc["threat"]["tactic"]["name"] == ["credential_access"]
    assert doc["gen_ai"]["conversation"]["id"] == "sess-1"
    td = doc["telltale"]["detection"]
    assert (td["score"], td["severity"], td["sequence"], td["suppressed_by"]) == (30, "low", False, None)
    assert td["anchors"] == det.anchors and td["atlas"] == ["atlas.AML.T0055"]
    assert td["recommendation"] == det.recommendation
    assert doc["telltale"]["source"]["path_hash"] == path_hash(det.source_path or "")
    json.dumps(doc)  # plain JSON types only


def test_evidence_is_redacted_and_hashed_at_the_boundary() -> None:
    [det] = detections(StepCase(command=f'curl -H "Authorization: token {TOKEN}" https://api.example.invalid/user'))
    assert TOKEN in det.evidence[0].value  # raw inside the engine's output
    doc = detection_event(det, envelope(det))
    text = json.dumps(doc)
    assert TOKEN not in text
    [item] = doc["telltale"]["detection"]["evidence"]
    assert item["field"] == "command" and "[REDACTED:" in item["value"]
    assert item["hash"] == value_hash(det.evidence[0].value)
    assert item["observation_id"] == det.anchors[0]


def test_sequence_document() -> None:
    dets = detections(StepCase(command="cat ~/.aws/credentials"), StepCase(command="npm publish"))
    [chain] = [d for d in dets if d.is_sequence]
    doc = detection_event(chain, envelope(chain))
    td = doc["telltale"]["detection"]
    assert td["sequence"] is True
    assert td["rule_ids"] == ["credential.cloud_harvest", "supply_chain.publish"]
    assert len(td["anchors"]) == 2 and td["categories"][0] == "supply_chain"
    # ECS risk_score is 0-100; the raw sum stays under telltale.detection.score.
    assert chain.score > 100
    assert doc["event"]["severity"] == 99 and doc["event"]["risk_score"] == 100.0
    assert td["score"] == chain.score and td["risk_score"] == 100
    assert "T1195" in doc["threat"]["technique"]["id"]
    assert "T1195.002" in doc["threat"]["technique"]["subtechnique"]["id"]


def test_secret_looking_session_ids_are_redacted() -> None:
    [det] = detections(StepCase(command="cat .env"), session=TOKEN)
    doc = detection_event(det, envelope(det))
    assert TOKEN not in json.dumps(doc["gen_ai"])


def test_engine_hook_builds_the_same_document() -> None:
    [det] = detections(StepCase(command="cat .env"))
    base = envelope(det)
    assert ENGINE.detection_document(det, base) == detection_event(det, base)
