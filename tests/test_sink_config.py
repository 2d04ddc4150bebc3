"""Outputs file: validation with located errors, secrets, masking, and building sinks."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from telltale.cli.main import main
from telltale.errors import ConfigError
from telltale.sinks.config import (
    ElasticOutput,
    JsonlOutput,
    OtlpOutput,
    SplunkHecOutput,
    build_sink,
    load_outputs,
    masked_view,
    parse_outputs,
    policy_of,
)
from telltale.sinks.elastic import ElasticSink
from telltale.sinks.otlp import OtlpSink
from telltale.sinks.splunk_hec import SplunkHecSink

FULL = """
outputs:
  jsonl:
    path: /var/log/telltale/events.jsonl
    rotation: {max_bytes: 1048576, max_files: 3}
  otel:
    type: otlp
    endpoint: http://127.0.0.1:4318
    headers: {x-tenant: blue}
    headers_env: {x-api-key: TT_OTLP_KEY}
  splunk:
    type: splunk_hec
    url: https://splunk.example:8088
    token_env: TT_HEC_TOKEN
    index: security
    batch_size: 200
    max_retries: 10
    tls: {verify: true, ca_file: /etc/ssl/private-ca.pem}
  elastic:
    url: https://es.example:9200
    api_key_file: KEYFILE
    data_stream: telltale-events
"""


def write(tmp_path: Path, text: str, name: str = "outputs.yaml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_full_file_parses_with_defaults(tmp_path: Path) -> None:
    loaded = load_outputs(write(tmp_path, FULL))
    assert list(loaded.outputs) == ["jsonl", "otel", "splunk", "elastic"]
    j = loaded.outputs["jsonl"]
    assert isinstance(j, JsonlOutput) and j.rotation.max_files == 3 and j.fsync
    o = loaded.outputs["otel"]
    assert isinstance(o, OtlpOutput) and o.protocol == "http/protobuf" and o.timeout == 10.0
    s = loaded.outputs["splunk"]
    assert isinstance(s, SplunkHecOutput) and s.sourcetype == "telltale:json" and s.batch_size == 200
    assert s.tls.ca_file == "/etc/ssl/private-ca.pem"
    e = loaded.outputs["elastic"]
    assert isinstance(e, ElasticOutput) and e.data_stream == "telltale-events"
    assert set(loaded.remote()) == {"otel", "splunk", "elastic"}
    assert set(loaded.jsonl()) == {"jsonl"}
    assert policy_of(s).max_retries == 10
    assert loaded.warnings == []


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("outputs:\n  s:\n    type: splunk_hec\n    url: https://x\n    token_env: T\n    batch_size: many\n",
         "outputs.s.batch_size"),
        ("outputs:\n  s:\n    type: splunk_hec\n    url: https://x\n    token_env: T\n    batch_size: 0\n",
         "outputs.s.batch_size"),
        ("outputs:\n  s:\n    type: splunk_hec\n    url: https://x\n    token_env: T\n    colour: red\n",
         "colour"),
        ("outputs:\n  s:\n    type: splunk_hec\n    url: https://x\n", "outputs.s.token_env"),
        ("outputs:\n  s:\n    type: splunk_hec\n    url: ftp://x\n    token_env: T\n", "outputs.s.url"),
        ("outputs:\n  s:\n    type: splunk_hec\n    url: https://u:p@x\n    token_env: T\n", "outputs.s.url"),
        ("outputs:\n  s:\n    type: splunk_hec\n    url: https://x\n    token_env: T\n    token_file: F\n",
         "outputs.s"),
        ("outputs:\n  mystery:\n    url: https://x\n", "outputs.mystery.type"),
        ("outputs:\n  o:\n    type: otlp\n    endpoint: http://x\n    protocol: thrift\n", "outputs.o.protocol"),
        ("outputs:\n  e:\n    type: elastic\n    url: http://x\n    index: a\n    data_stream: b\n", "outputs.e"),
        ("outputs:\n  e:\n    type: elastic\n    url: http://x\n    index: Bad/Name\n", "outputs.e.index"),
        ("outputs:\n  e:\n    type: elastic\n    url: http://x\n    username: u\n", "outputs.e"),
        ("outputs:\n  Bad Name:\n    type: jsonl\n    path: /x\n", "outputs.Bad Name"),
        ("outputs:\n  j:\n    type: jsonl\n", "outputs.j.path"),
        ("outputs: [1, 2]\n", "outputs"),
        ("outputs:\n  j: {type: jsonl, path: /x\n", "not valid YAML"),
    ],
)
def test_errors_name_the_file_and_the_field(tmp_path: Path, text: str, where: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_outputs(path)
    message = str(info.value)
    assert message.startswith(str(path))
    assert where in message


def test_inline_secrets_and_weak_settings_warn(tmp_path: Path) -> None:
    loaded = load_outputs(write(tmp_path, """
outputs:
  s: {type: splunk_hec, url: "http://splunk.example:8088", token: FAKE-TOKEN, tls: {verify: false}}
  e: {type: elastic, url: "http://127.0.0.1:9200"}
  o: {type: otlp, endpoint: "http://127.0.0.1:4318", headers: {Authorization: "Bearer FAKE"}}
"""))
    text = "\n".join(loaded.warnings)
    assert "outputs.s.token is inline" in text
    assert "outputs.s.tls.verify is false" in text
    assert "outputs.s: credentials go over plain http" in text
    assert "outputs.e has no credentials" in text
    assert "outputs.o.headers.Authorization is inline" in text
    view = json.dumps(masked_view(loaded))
    assert "FAKE-TOKEN" not in view and "Bearer FAKE" not in view


def test_default_path_missing_means_no_outputs_but_explicit_missing_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    loaded = load_outputs()
    assert loaded.outputs == {} and not loaded.exists
    assert loaded.path == tmp_path / "cfg" / "telltale" / "outputs.yaml"
    with pytest.raises(ConfigError, match="no such file"):
        load_outputs(tmp_path / "absent.yaml")


def test_build_sinks_resolves_secrets_from_env_and_file(tmp_path: Path) -> None:
    keyfile = tmp_path / "es.key"
    keyfile.write_text("RkFLRTpGQUtF\n")
    os.chmod(keyfile, 0o600)
    loaded = load_outputs(write(tmp_path, FULL.replace("KEYFILE", str(keyfile))))
    env = {"TT_HEC_TOKEN": "FAKE-hec", "TT_OTLP_KEY": "FAKE-otlp"}
    splunk = build_sink(loaded, "splunk", loaded.remote()["splunk"], env)
    assert isinstance(splunk, SplunkHecSink) and splunk.token == "FAKE-hec" and splunk.index == "security"
    assert "FAKE-hec" not in repr(splunk)
    es = build_sink(loaded, "elastic", loaded.remote()["elastic"], env)
    assert isinstance(es, ElasticSink) and es.api_key == "RkFLRTpGQUtF" and es.target == "telltale-events"
    otel = build_sink(loaded, "otel", loaded.remote()["otel"], env)
    assert isinstance(otel, OtlpSink) and otel.headers == {"x-tenant": "blue", "x-api-key": "FAKE-otlp"}
    with pytest.raises(ConfigError, match=r"outputs.splunk.token_env: environment variable TT_HEC_TOKEN"):
        build_sink(loaded, "splunk", loaded.remote()["splunk"], {})


def test_key_that_is_a_type_needs_no_type_field(tmp_path: Path) -> None:
    loaded = parse_outputs("outputs:\n  otlp:\n    endpoint: http://127.0.0.1:4317\n    protocol: grpc\n",
                           tmp_path / "o.yaml")
    assert isinstance(loaded.outputs["otlp"], OtlpOutput)


def test_config_validate_cli_prints_masked_effective_outputs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    keyfile = tmp_path / "es.key"
    keyfile.write_text("RkFLRTpGQUtF")
    os.chmod(keyfile, 0o644)
    path = write(tmp_path, FULL.replace("KEYFILE", str(keyfile)))
    monkeypatch.setenv("TT_HEC_TOKEN", "FAKE-hec-value")
    monkeypatch.setenv("TT_OTLP_KEY", "FAKE-otlp-value")
    assert main(["config", "validate", "--outputs", str(path), "--json"]) == 0
    out = capsys.readouterr().out
    data = json.loads(out)
    assert "FAKE-hec-value" not in out and "RkFLRTpGQUtF" not in out and "FAKE-otlp-value" not in out
    assert data["outputs"]["splunk"]["secrets"]["token"] == "*** (env TT_HEC_TOKEN)"
    assert "readable by others" in data["outputs"]["elastic"]["secrets"]["api_key"]
    assert data["outputs"]["splunk"]["sourcetype"] == "telltale:json"  # defaults filled in
    assert data["problems"] == []

    monkeypatch.delenv("TT_HEC_TOKEN")
    assert main(["config", "validate", "--outputs", str(path)]) == 2  # a configuration error
    captured = capsys.readouterr()
    assert "outputs.splunk.token: MISSING" in captured.err
    assert "outputs:" in captured.out

    bad = write(tmp_path, "outputs:\n  s: {type: splunk_hec, url: https://x, token_env: T, batch_size: -1}\n", "b.yaml")
    assert main(["config", "validate", "--outputs", str(bad)]) == 2
    assert "outputs.s.batch_size" in capsys.readouterr().err
