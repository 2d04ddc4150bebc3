"""The line-keeping YAML loader: errors name file and line; data stays plain and safe."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from telltale.config.yamlfile import MAX_CONFIG_FILE, load_yaml, parse_yaml
from telltale.errors import ConfigError

DOC = """\
# comment
log_path: /var/log/x.jsonl
outputs:
  siem:
    type: otlp
    include:
      - detection
      - health
"""


def test_lines_of_keys_and_items() -> None:
    doc = parse_yaml(DOC, Path("c.yaml"))
    assert doc.data == {"log_path": "/var/log/x.jsonl",
                        "outputs": {"siem": {"type": "otlp", "include": ["detection", "health"]}}}
    assert doc.line("log_path") == 2
    assert doc.where("outputs", "siem", "type") == "c.yaml:5"
    assert doc.line("outputs", "siem", "include", 1) == 8
    # a missing leaf falls back to its nearest ancestor
    assert doc.where("outputs", "siem", "nope") == "c.yaml:4"
    assert doc.where() == "c.yaml"


def test_unknown_key_error_names_file_line_and_key() -> None:
    doc = parse_yaml(DOC, Path("/etc/telltale/config.yaml"))
    with pytest.raises(ConfigError, match=r"^/etc/telltale/config\.yaml:5: outputs\.siem\.type: unknown key$"):
        doc.unknown_keys({"include"}, "outputs", "siem")
    doc.unknown_keys({"log_path", "outputs"})


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("a: 1\na: 2\n", "c.yaml:2: duplicate key 'a'"),
        ("a: [\n", "c.yaml:2:"),
        ("1: x\n", "c.yaml:1: a key must be a name"),
        ("off: x\n", "c.yaml:1: a key must be a name, not bool (quote it: 'off')"),
        ("a: !!python/object:os.system x\n", "c.yaml:1:"),
    ],
)
def test_malformed_yaml_is_one_config_error_with_a_line(text: str, needle: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_yaml(text, Path("c.yaml"))
    assert str(info.value).startswith(needle), str(info.value)


def test_anchors_and_merge_keys_still_work() -> None:
    doc = parse_yaml("base: &b {x: 1}\nother:\n  <<: *b\n  y: 2\n", Path("c.yaml"))
    assert doc.data["other"] == {"x": 1, "y": 2}
    assert doc.line("other", "y") == 4


def test_files_are_bounded_and_utf8(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    big.write_bytes(b"#" * (MAX_CONFIG_FILE + 1))
    with pytest.raises(ConfigError, match="larger than"):
        load_yaml(big)
    bad = tmp_path / "bad.yaml"
    bad.write_bytes(b"a: \xff\n")
    with pytest.raises(ConfigError, match="not UTF-8"):
        load_yaml(bad)
    with pytest.raises(ConfigError, match="no such file"):
        load_yaml(tmp_path / "absent.yaml")
    assert load_yaml(_empty(tmp_path)).data is None


def _empty(tmp_path: Path) -> Path:
    p = tmp_path / "empty.yaml"
    p.write_text("")
    return p


_keys = st.from_regex(r"[a-z][a-z_]{0,8}", fullmatch=True)
_tree = st.recursive(
    st.integers() | st.text(alphabet="abc xyz", max_size=5),
    lambda children: st.dictionaries(_keys, children, max_size=4) | st.lists(children, max_size=3),
    max_leaves=12,
)


@settings(max_examples=40, deadline=None)
@given(st.dictionaries(_keys, _tree, max_size=5))
def test_round_trip_keeps_data_and_every_path_has_a_line(data: dict[str, object]) -> None:
    import yaml

    text = yaml.safe_dump(data, default_flow_style=False)
    doc = parse_yaml(text, Path("c.yaml"))
    assert doc.data == data
    lines = text.count("\n") + 1

    def walk(value: object, path: tuple[str | int, ...]) -> None:
        if path:
            assert path in doc.lines and 1 <= doc.lines[path] <= lines
        if isinstance(value, dict):
            for k, v in value.items():
                walk(v, (*path, k))
        elif isinstance(value, list):
            for i, v in enumerate(value):
                walk(v, (*path, i))

    walk(data, ())
