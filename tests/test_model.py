"""Canonical model helpers: the fast paths give exactly what the plain definitions give.

``observation_id``, ``encode_arguments`` and ``make_observation`` were sped up (one hash
update, a leaf walk only for documents that could fail); ``ObservationTemplate`` builds
observations from shared fields checked once. The oracles below are the plain forms: the
ids, texts and bound errors must match them for any input.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from telltale.model import (
    AUTHORED_TEXT_BOUND,
    MAX_ARGUMENT_DEPTH,
    STRING_BOUND,
    BoundExceeded,
    Family,
    Observation,
    ObservationTemplate,
    Provenance,
    Stage,
    check_field,
    encode_arguments,
    make_observation,
    observation_id,
)

# -- oracles: the plain definitions ----------------------------------------------------------


def _oracle_id(adapter: str, source_identity: str, coordinate: str) -> str:
    digest = hashlib.blake2b(digest_size=16)
    digest.update(adapter.encode())
    digest.update(b"\x1f")
    digest.update(source_identity.encode("utf-8", "surrogateescape"))
    digest.update(b"\x1f")
    digest.update(coordinate.encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


def _utf8(value: str) -> int:
    return len(value.encode("utf-8", "surrogatepass"))


def _oracle_check(field: str, value: str | None, bound: int) -> None:
    if value is not None and _utf8(value) > bound:
        raise BoundExceeded(field, bound, _utf8(value))


def _oracle_leaves(value: Any, path: str, authored: frozenset[str], depth: int) -> None:
    if depth > MAX_ARGUMENT_DEPTH:
        raise BoundExceeded(path, MAX_ARGUMENT_DEPTH, depth)
    if isinstance(value, str):
        _oracle_check(path, value, STRING_BOUND)
    elif isinstance(value, Mapping):
        for key, item in value.items():
            _oracle_check(f"{path}.key", str(key), STRING_BOUND)
            child = f"{path}.{key}"
            if depth == 0 and key in authored and isinstance(item, str):
                _oracle_check(child, item, AUTHORED_TEXT_BOUND)
            else:
                _oracle_leaves(item, child, authored, depth + 1)
    elif isinstance(value, list | tuple):
        for item in value:
            _oracle_leaves(item, f"{path}[]", authored, depth + 1)


_encoder = msgspec.json.Encoder(order="deterministic")


def _oracle_arguments(arguments: Any, authored_keys: Iterable[str] = ()) -> str | None:
    if arguments is None:
        return None
    authored = frozenset(authored_keys)
    if isinstance(arguments, str):
        _oracle_check("arguments", arguments, AUTHORED_TEXT_BOUND if "*" in authored else STRING_BOUND)
        return arguments
    _oracle_leaves(arguments, "arguments", authored, 0)
    return _encoder.encode(arguments).decode("utf-8")


def _outcome(fn: Any, *args: Any, **kwargs: Any) -> tuple[str, Any]:
    """A call's result, or the bound error it raised (field, bound, size)."""
    try:
        return "ok", fn(*args, **kwargs)
    except BoundExceeded as exc:
        return "bound", (exc.field, exc.bound, exc.size)


# -- strategies ------------------------------------------------------------------------------

# Short texts, texts around every bound (ASCII and 2- and 4-byte UTF-8), lone surrogates.
_SIZES = [0, 1, 1023, 1024, 1025, 2048, 4095, 4096, 4097, 16384, 16385, 65536, 65537, 69632, 69633]
_big = st.builds(lambda n, c: c * n, st.sampled_from(_SIZES), st.sampled_from(["a", "é", "😀", "\n"]))
_text = st.one_of(st.text(max_size=40), _big)
_leaf = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), _text)
_json = st.recursive(
    _leaf,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_text, inner, max_size=4)),
    max_leaves=12,
)


def _nested(depth: int) -> Any:
    value: Any = "leaf"
    for i in range(depth):
        value = [value] if i % 2 else {"k": value}
    return value


# -- observation ids -------------------------------------------------------------------------


# Any code point, lone surrogates included (path bytes come back as \udc80-\udcff).
_any_text = st.text(alphabet=st.characters(blacklist_categories=()), max_size=30)


def _id_outcome(fn: Any, adapter: str, identity: str, coordinate: str) -> tuple[str, Any]:
    try:
        return "ok", fn(adapter, identity, coordinate)
    except UnicodeEncodeError as exc:
        return "error", (exc.encoding, exc.object, exc.start, exc.end, exc.reason)


@settings(max_examples=300)
@given(_any_text, _any_text, _any_text)
def test_observation_id_matches_the_part_by_part_hash(adapter: str, identity: str, coordinate: str) -> None:
    assert _id_outcome(observation_id, adapter, identity, coordinate) == _id_outcome(
        _oracle_id, adapter, identity, coordinate
    )


def _raises_same(adapter: str, identity: str, coordinate: str) -> bool:
    """Text that cannot be encoded raises the same error both ways."""
    got = _id_outcome(observation_id, adapter, identity, coordinate)
    return got[0] == "error" and got == _id_outcome(_oracle_id, adapter, identity, coordinate)


def test_observation_id_escaped_bytes_and_unencodable_text() -> None:
    # Path bytes decoded with surrogateescape hash as the original bytes.
    assert observation_id("k", "/tmp/\udcff", "c") == _oracle_id("k", "/tmp/\udcff", "c")
    # A lone surrogate outside the escape range is an error, the same one as before.
    assert _raises_same("k", "bad\ud800", "c")
    assert _raises_same("k", "ok", "bad\ud800")
    assert _raises_same("ké\ud800", "ok", "c")


@given(_any_text, _any_text)
def test_template_ids_match_observation_id(identity: str, coordinate: str) -> None:
    template = ObservationTemplate("claude.projects", identity, client="claude")
    try:
        expected = _oracle_id("claude.projects", identity, coordinate)
    except UnicodeEncodeError:
        with pytest.raises(UnicodeEncodeError):
            template.observation_id(coordinate)
        return
    assert template.observation_id(coordinate) == expected


# -- encode_arguments ------------------------------------------------------------------------


@settings(max_examples=300)
@given(_json, st.sampled_from([(), ("command",), ("content", "k"), ("*",)]))
def test_encode_arguments_matches_the_full_leaf_walk(value: Any, authored: tuple[str, ...]) -> None:
    assert _outcome(encode_arguments, value, authored) == _outcome(_oracle_arguments, value, authored)


@given(st.dictionaries(st.sampled_from(["command", "content", "x"]), _text, max_size=3))
def test_encode_arguments_authored_top_level_keys(value: dict[str, str]) -> None:
    for authored in ((), ("command",), ("content",), ("command", "content")):
        assert _outcome(encode_arguments, value, authored) == _outcome(_oracle_arguments, value, authored)


@pytest.mark.parametrize("depth", [MAX_ARGUMENT_DEPTH - 1, MAX_ARGUMENT_DEPTH, MAX_ARGUMENT_DEPTH + 1, 40])
def test_encode_arguments_depth_limit_in_small_documents(depth: int) -> None:
    value = _nested(depth)
    assert len(_encoder.encode(value)) < STRING_BOUND  # the fast path's size test alone would pass it
    assert _outcome(encode_arguments, value) == _outcome(_oracle_arguments, value)


def test_encode_arguments_unencodable_value_raises_after_the_bound_checks() -> None:
    # Over a bound and not encodable: the bound error comes first, as before.
    with pytest.raises(BoundExceeded):
        encode_arguments({"a": "x" * (STRING_BOUND + 1), "b": object()})
    with pytest.raises(TypeError):
        encode_arguments({"b": object()})


def test_encode_arguments_string_budget() -> None:
    free = "y" * (STRING_BOUND + 1)
    with pytest.raises(BoundExceeded) as exc:
        encode_arguments(free)
    assert (exc.value.field, exc.value.bound) == ("arguments", STRING_BOUND)
    assert encode_arguments(free, ["*"]) == free
    assert encode_arguments("short", iter(["*"])) == "short"


# -- make_observation and templates ----------------------------------------------------------

_PROV = Provenance(source_kind="claude.projects", path="/x.jsonl", line=3, offset=10, record_id="r")
_shared_text = st.one_of(st.none(), st.sampled_from(["s", "a" * 4097, "é" * 2049, "😀" * 1025, "b" * 1024]))
_own_text = st.one_of(st.none(), st.sampled_from(["t", "a" * 4097, "a" * 65537, "é" * 32769, "😀" * 16385]))


@settings(max_examples=200)
@given(
    sid=_shared_text,
    cwd=_shared_text,
    parent=_shared_text,
    version=_shared_text,
    tool_name=_own_text,
    call_id=_own_text,
    result=_own_text,
)
def test_template_observation_equals_make_observation(
    sid: str | None,
    cwd: str | None,
    parent: str | None,
    version: str | None,
    tool_name: str | None,
    call_id: str | None,
    result: str | None,
) -> None:
    """Shared fields, then own fields, then attributes: the first error is the same one."""
    attributes = {"version": version} if version is not None else {}
    shared: dict[str, Any] = {
        "client": "claude",
        "session_id": sid,
        "agent": "claude-code",
        "attributes": attributes,
        "cwd": cwd,
        "parent_session_id": parent,
    }
    own: dict[str, Any] = {"stage": Stage.RESULT, "tool_name": tool_name, "call_id": call_id, "result": result}
    expected = _outcome(
        make_observation,
        adapter="claude.projects",
        source_identity="claude:s",
        coordinate="uuid:r:block:1",
        sequence=3,
        provenance=_PROV,
        **shared,
        family=Family.TOOL,
        occurred_at="2026-01-01T00:00:00.000Z",
        **own,
    )

    def derive() -> Observation:
        template = ObservationTemplate("claude.projects", "claude:s", **shared)
        if template.error is not None:
            raise template.error
        for name in ("tool_name", "call_id", "result"):
            check_field(name, own[name])
        if template.attribute_error is not None:
            raise template.attribute_error
        return msgspec.structs.replace(
            template.observation,
            observation_id=template.observation_id("uuid:r:block:1"),
            family=Family.TOOL,
            sequence=3,
            provenance=_PROV,
            occurred_at="2026-01-01T00:00:00.000Z",
            **own,
        )

    got = _outcome(derive)
    assert got[0] == expected[0]
    if got[0] == "ok":
        assert msgspec.json.encode(got[1]) == msgspec.json.encode(expected[1])
    else:
        assert got[1] == expected[1]


def test_make_observation_bounds_each_field_and_attribute() -> None:
    base: dict[str, Any] = {
        "adapter": "k",
        "source_identity": "s",
        "coordinate": "c",
        "family": Family.MESSAGE,
        "client": "x",
        "sequence": 1,
        "provenance": _PROV,
    }
    assert make_observation(**base, text="é" * (AUTHORED_TEXT_BOUND // 2)).text is not None
    with pytest.raises(BoundExceeded) as exc:
        make_observation(**base, text="é" * (AUTHORED_TEXT_BOUND // 2 + 1))
    assert (exc.value.field, exc.value.bound, exc.value.size) == ("text", AUTHORED_TEXT_BOUND, AUTHORED_TEXT_BOUND + 2)
    with pytest.raises(BoundExceeded) as exc:
        make_observation(**base, attributes={"k": "x" * (STRING_BOUND + 1)})
    assert exc.value.field == "attributes.k"
    with pytest.raises(BoundExceeded) as exc:
        make_observation(**base, model="m" * (STRING_BOUND + 1), attributes={"k": "x" * (STRING_BOUND + 1)})
    assert exc.value.field == "model"  # fields before attributes
    observation = make_observation(**base, source_kind="other")
    assert observation.source_kind == "other"
    assert make_observation(**base).source_kind == "k"
    assert make_observation(**base).observation_id == _oracle_id("k", "s", "c")
