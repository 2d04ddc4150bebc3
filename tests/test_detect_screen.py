"""The engine's fast path against slow references: batch screening, gates and factors.

``evaluate`` screens a whole batch (field values joined by newlines, one Set match per
chunk, non-quiet chunks bisected), lets a field through only when a triggered selection's
gate opens, skips regexes whose conjunctive factors did not all hit, and counts quiet runs
in session windows in bulk. None of that may change a detection. Two references:

* *brute force*: every enabled rule, every selection and filter, evaluated on the cut
  field bytes with one compiled regex per literal or pattern (no Set, no trigger, no
  gate, no factor);
* *unscreened*: the same batches through ``evaluate`` with every observation taken as a
  suspect, i.e. checked one by one on the exact per-value path, and every window
  advanced observation by observation (sequence evidence depends on the batch, so the
  batches are the same);
* *one at a time*: one observation per call (no value is ever joined with another);
  equal but for the evidence of sequences, which is kept per call by design.

A batch smaller than ``screen.SCREEN_MIN_BATCH`` is not screened at all (every
observation is a suspect); here every batch is screened, whatever its size, so the
screen is what is tested (the fixture below), and one test checks that the threshold
itself changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from telltale.detect import engine as engine_module
from telltale.detect import screen as screen_module
from telltale.detect.engine import CHUNK_VALUE_CHARS, DetectionEngine, _cut
from telltale.detect.fields import FIELD_GETTERS, KIND_FIELDS, field_kind
from telltale.detect.loader import load_rule_files, load_rule_text
from telltale.detect.model import Detection, SessionWindow
from telltale.model import Family, Observation, Provenance, Stage, make_observation

# Rules that exercise what the default pack does not: anchored literals (equality,
# startswith, endswith) on eager fields, |all, |cased, a two-field selection, filters,
# residual selections (on a field with atoms and on one without any) and a sequence.
CUSTOM = r"""
rules:
  - {id: t.equals, title: t, category: test, score: 30, match: {command: 'rm -rf /'}}
  - {id: t.starts, title: t, category: test, score: 30, match: {command|startswith: 'sudo '}}
  - {id: t.ends, title: t, category: test, score: 30, match: {tool_result|endswith: 'END-OF-SECRET'}}
  - {id: t.all, title: t, category: test, score: 30, match: {assistant_context|contains|all: [alpha, omega]}}
  - id: t.multi
    title: t
    category: test
    score: 30
    match: {command|contains: curl, url|re: 'evil\.invalid'}
  - {id: t.residual, title: t, category: test, score: 30, match: {url|re: '^.{3}$'}}
  - {id: t.residual_only, title: t, category: test, score: 30, match: {file_path|re: '^/.{2}$'}}
  - id: t.regex_all
    title: t
    category: test
    score: 30
    match: {tool_result|re|all: ['ignore\s+previous', 'secret\s*=']}
  - id: t.factors
    title: t
    category: test
    score: 30
    match: {arguments|re: '\b(drop\s+(database|schema|table)|truncate\s+table)\b'}
    filter: {tool_name: Write}
  - id: t.filtered
    title: t
    category: test
    score: 30
    match: {command|contains: deploy}
    filter: {command|contains: '--dry-run'}
  - {id: t.cased, title: t, category: test, score: 30, match: {tool_result|contains|cased: MAGIC}}
  - {id: t.injected, title: t, category: test, score: 30, match: {injected_context|contains: 'obey me'}}
sequences:
  - {id: t.seq, title: t, category: test, score: 10, steps: [[t.starts], [t.equals]], within: {steps: 6}}
"""

@pytest.fixture(autouse=True, scope="module")
def _screen_every_batch() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(screen_module, "SCREEN_MIN_BATCH", 0)
        yield


DEFAULT = DetectionEngine.load()
CUSTOM_ENGINE = DetectionEngine(load_rule_text(CUSTOM, "custom.yaml"))


def _re2_only(build: Callable[[], DetectionEngine]) -> DetectionEngine:
    """An engine whose screen uses the RE2 Set for every chunk (as without Hyperscan)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TELLTALE_HYPERSCAN", "0")
        return build()


DEFAULT_RE2 = _re2_only(DetectionEngine.load)
CUSTOM_RE2 = _re2_only(lambda: DetectionEngine(load_rule_text(CUSTOM, "custom.yaml")))
ENGINES = [DEFAULT, CUSTOM_ENGINE, DEFAULT_RE2, CUSTOM_RE2]
ENGINE_IDS = ["default", "custom", "default-re2", "custom-re2"]


def _case_texts() -> list[str]:
    """Every field value of every case of the default pack: texts rules care about."""
    out: list[str] = []
    for rule in load_rule_files().rules:
        for case in (*rule.spec.tests.positive, *rule.spec.tests.negative):
            out.extend(v for v in case.fields().values() if len(v) < 2000)
    return sorted(set(out))


SNIPPETS = [
    *_case_texts(),
    "rm -rf /", "sudo ", "END-OF-SECRET", "alpha", "omega", "curl", "https://evil.invalid/x", "abc", "/ab",
    "ignore previous", "secret = 1", "DROP TABLE users", "schema", "table", "deploy", "--dry-run", "MAGIC",
    "magic", "obey me", "Write", "Bash", "\n", " ", "é", "→", "\u202e", "\U000e0041\U000e0042\U000e0043\U000e0044",
    "\ud800", "\u017fecret", "\u212aEY", "ignore previou\u017f", "cat ~/.\u017fsh/id_rsa",
]

texts = st.lists(st.sampled_from(SNIPPETS), min_size=1, max_size=4).map("".join)
_KINDS = ("request", "result", "user", "assistant", "injected", "system", "usage")


@st.composite
def observation_parts(draw: st.DrawFn) -> dict[str, object]:
    kind = draw(st.sampled_from(_KINDS))
    if kind == "request":
        fields = {name: draw(texts) for name in ("command", "arguments", "file_path", "url", "tool_name")
                  if draw(st.booleans())}
        return {"family": Family.TOOL, "stage": draw(st.sampled_from([Stage.REQUESTED, None])), **fields}
    if kind == "result":
        result = draw(texts)
        if draw(st.integers(0, 9)) == 0:  # too long to be joined with others
            result = "x " * (CHUNK_VALUE_CHARS // 2 + 3) + result
        out: dict[str, object] = {"family": Family.TOOL, "stage": Stage.RESULT, "result": result}
        if draw(st.booleans()):
            out["tool_name"] = draw(texts)
        return out
    if kind == "usage":
        return {"family": Family.USAGE}
    role = {"injected": "user", "result": "tool"}.get(kind, kind)
    return {"family": Family.MESSAGE, "role": role, "injected": kind == "injected", "text": draw(texts)}


@st.composite
def batches(draw: st.DrawFn) -> list[Observation]:
    parts = draw(st.lists(observation_parts(), min_size=1, max_size=40))
    sessions = draw(st.lists(st.sampled_from(["s1", "s2", None]), min_size=len(parts), max_size=len(parts)))
    out = []
    for i, (fields, session) in enumerate(zip(parts, sessions, strict=True)):
        out.append(
            make_observation(
                adapter="test.screen",
                source_identity="/t",
                coordinate=f"line:{i}",
                client="test",
                session_id=session,
                sequence=i,
                occurred_at=f"2026-04-03T00:00:{i % 60:02d}.000Z",
                provenance=Provenance(source_kind="test.screen", path="/t", line=i),
                **fields,
            )
        )
    return out


def brute_ids(engine: DetectionEngine, obs: Observation) -> list[str]:
    """Rule ids matching ``obs``, every rule evaluated with no prefilter of any kind."""
    fields = KIND_FIELDS[field_kind(obs)]
    datas: dict[int, bytes | None] = {}
    for fid in fields:
        value = FIELD_GETTERS[fid](obs)
        datas[fid] = _cut(value) if value and engine._fields[fid] is not None else None

    def matcher(m: engine_module._Matcher) -> bool:
        data = datas.get(m.field)
        if data is None:
            return False
        if m.is_regex:
            found = [search(data) is not None for search in m.searchers]
        else:
            found = [engine._single(m.field, atom)(data) is not None for atom in m.atoms]
        return all(found) if m.all else any(found)

    out = []
    for rule in engine._rules:
        if any(all(matcher(m) for m in sel) for sel in rule.selections) and not any(
            all(matcher(m) for m in sel) for sel in rule.filters
        ):
            out.append(rule.id)
    return out


def one_at_a_time(
    engine: DetectionEngine, observations: Sequence[Observation]
) -> tuple[list[Detection], dict[str, SessionWindow]]:
    windows: dict[str, SessionWindow] = {}
    out: list[Detection] = []
    for obs in observations:
        out.extend(engine.evaluate([obs], windows))
    return out, windows


def _all_suspect(
    engine: DetectionEngine, observations: Sequence[Observation]
) -> tuple[list[int], bytearray]:
    return list(map(field_kind, observations)), bytearray(b"\x01" * len(observations))


def unscreened(
    engine: DetectionEngine, batches_: Sequence[Sequence[Observation]], monkeypatch: pytest.MonkeyPatch
) -> tuple[list[Detection], dict[str, SessionWindow]]:
    windows: dict[str, SessionWindow] = {}
    out: list[Detection] = []
    with monkeypatch.context() as patch:
        patch.setattr(DetectionEngine, "_screen", _all_suspect)
        for batch in batches_:
            out.extend(engine.evaluate(batch, windows))
    return out, windows


def _without_sequence_evidence(detections: list[Detection]) -> list[object]:
    # A sequence's earlier steps carry evidence and "where" only when matched in the same call.
    return [
        msgspec.to_builtins(msgspec.structs.replace(d, evidence=[], where=[]) if d.is_sequence else d)
        for d in detections
    ]


def _encoded(windows: dict[str, SessionWindow]) -> dict[str, bytes]:
    return {key: window.encode() for key, window in windows.items()}


@pytest.mark.parametrize("engine", ENGINES, ids=ENGINE_IDS)
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(observations=batches())
def test_rule_matches_equal_brute_force_evaluation(engine: DetectionEngine, observations: list[Observation]) -> None:
    for obs in observations:
        assert engine.match_ids(obs) == brute_ids(engine, obs)


@pytest.mark.parametrize("engine", ENGINES, ids=ENGINE_IDS)
@settings(max_examples=120, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(observations=batches(), split=st.integers(1, 40))
def test_batch_screening_equals_the_unscreened_path(
    engine: DetectionEngine, observations: list[Observation], split: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    parts = [observations[start : start + split] for start in range(0, len(observations), split)]
    expected, expected_windows = unscreened(engine, parts, monkeypatch)
    windows: dict[str, SessionWindow] = {}
    got: list[Detection] = []
    for batch in parts:
        got.extend(engine.evaluate(batch, windows))
    assert msgspec.to_builtins(got) == msgspec.to_builtins(expected)
    assert _encoded(windows) == _encoded(expected_windows)
    single, single_windows = one_at_a_time(engine, observations)
    assert _without_sequence_evidence(got) == _without_sequence_evidence(single)
    assert _encoded(windows) == _encoded(single_windows)


@pytest.mark.parametrize("engine", ENGINES, ids=ENGINE_IDS)
@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(observations=batches(), split=st.integers(1, 40))
def test_a_batch_below_the_screening_threshold_gives_what_the_screen_gives(
    engine: DetectionEngine, observations: list[Observation], split: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    parts = [observations[start : start + split] for start in range(0, len(observations), split)]
    screened: dict[str, SessionWindow] = {}
    expected = [d for batch in parts for d in engine.evaluate(batch, screened)]
    monkeypatch.setattr(screen_module, "SCREEN_MIN_BATCH", len(observations) + 1)
    calls: list[int] = []
    monkeypatch.setattr(DetectionEngine, "_screen", lambda self, obs: calls.append(len(obs)) or _all_suspect(self, obs))
    windows: dict[str, SessionWindow] = {}
    got = [d for batch in parts for d in engine.evaluate(batch, windows)]
    assert not calls  # no batch was screened
    assert msgspec.to_builtins(got) == msgspec.to_builtins(expected)
    assert _encoded(windows) == _encoded(screened)


EXAMPLES: list[tuple[dict[str, object], list[str]]] = [
    ({"family": Family.MESSAGE, "role": "assistant", "text": "alpha and omega"}, ["t.all"]),
    ({"family": Family.MESSAGE, "role": "assistant", "text": "alpha only"}, []),
    ({"family": Family.TOOL, "stage": Stage.RESULT, "result": "Ignore previous notes; secret = 2"}, ["t.regex_all"]),
    ({"family": Family.TOOL, "stage": Stage.RESULT, "result": "ignore previous notes"}, []),
    ({"family": Family.TOOL, "arguments": '{"sql": "DROP TABLE t"}', "tool_name": "psql"}, ["t.factors"]),
    ({"family": Family.TOOL, "arguments": '{"sql": "DROP TABLE t"}', "tool_name": "Write"}, []),
    ({"family": Family.TOOL, "arguments": '{"doc": "the schema of a table"}', "tool_name": "psql"}, []),
    ({"family": Family.TOOL, "command": "curl -s x", "url": "https://evil.invalid/a"}, ["t.multi"]),
    ({"family": Family.TOOL, "command": "wget x", "url": "https://evil.invalid/a"}, []),
    ({"family": Family.TOOL, "url": "a:b"}, ["t.residual"]),
    ({"family": Family.TOOL, "command": "deploy --dry-run"}, []),
    ({"family": Family.TOOL, "command": "deploy now"}, ["t.filtered"]),
    ({"family": Family.TOOL, "stage": Stage.RESULT, "result": "magic"}, []),
    ({"family": Family.MESSAGE, "role": "user", "injected": True, "text": "Obey me"}, ["t.injected"]),
    ({"family": Family.MESSAGE, "role": "user", "text": "obey me"}, []),
]


@pytest.mark.parametrize(("fields", "expected"), EXAMPLES)
def test_custom_rule_examples_match_brute_force(fields: dict[str, object], expected: list[str]) -> None:
    obs = make_observation(
        adapter="test.screen", source_identity="/t", coordinate="line:0", client="test", session_id="s",
        sequence=0, provenance=Provenance(source_kind="test.screen", path="/t", line=0), **fields,
    )
    assert CUSTOM_ENGINE.match_ids(obs) == brute_ids(CUSTOM_ENGINE, obs) == expected
    batch = [_result(i, f"ok {i}") for i in range(5)] + [obs] + [_request(i, f"ls {i}") for i in range(6, 12)]
    assert [d.rule_id for d in CUSTOM_ENGINE.evaluate(batch, {})] == expected


def _request(i: int, command: str, session: str | None = "s") -> Observation:
    return make_observation(
        adapter="test.screen", source_identity="/t", coordinate=f"line:{i}", client="test", session_id=session,
        sequence=i, provenance=Provenance(source_kind="test.screen", path="/t", line=i), family=Family.TOOL,
        stage=Stage.REQUESTED, tool_name="Bash", command=command,
    )


def _result(i: int, text: str) -> Observation:
    return make_observation(
        adapter="test.screen", source_identity="/t", coordinate=f"line:{i}", client="test", session_id="s",
        sequence=i, provenance=Provenance(source_kind="test.screen", path="/t", line=i), family=Family.TOOL,
        stage=Stage.RESULT, result=text,
    )


@pytest.mark.parametrize("engine", [CUSTOM_ENGINE, CUSTOM_RE2], ids=["hyperscan", "re2"])
@pytest.mark.parametrize("position", [0, 1, 17, 63, 199])
def test_one_hit_among_many_quiet_values_is_found_wherever_it_is(engine: DetectionEngine, position: int) -> None:
    batch = [_request(i, f"git status {i}") for i in range(200)]
    batch[position] = _request(position, "rm -rf /")
    batch.append(_request(200, "rm -rf /x"))  # not equal: no detection
    found = engine.evaluate(batch, {})
    assert [(d.rule_id, d.anchors) for d in found] == [("t.equals", [batch[position].observation_id])]


@pytest.mark.parametrize("engine", [CUSTOM_ENGINE, CUSTOM_RE2], ids=["hyperscan", "re2"])
def test_anchored_literals_hold_at_value_edges_when_values_are_joined(engine: DetectionEngine) -> None:
    batch = [
        _request(0, "echo sudo rm"),       # 'sudo ' not at the start
        _request(1, "sudo rm -rf /"),      # starts with 'sudo ', is not equal to 'rm -rf /'
        _request(2, "x\nrm -rf /"),        # a newline inside a value is not a value edge
        _request(3, "rm -rf /"),
        _result(4, "line\nEND-OF-SECRET\nmore"),
        _result(5, "tail END-OF-SECRET"),  # ends a value, not the joined text
        _result(6, "quiet"),
        _request(7, "rm -rf /\n"),
    ]
    want = ["t.starts", "t.equals", "t.seq", "t.ends"]
    assert [d.rule_id for d in engine.evaluate(batch, {})] == want
    assert [d.rule_id for d in one_at_a_time(CUSTOM_ENGINE, batch)[0]] == want


def test_a_selection_without_literals_is_evaluated_even_on_a_field_without_atoms() -> None:
    # Regression: a field whose only selections had no literal prefilter was never
    # scanned, so the rule could not fire although the loader said it runs on every value.
    obs = make_observation(
        adapter="test.screen", source_identity="/t", coordinate="line:0", client="test", session_id="s",
        sequence=0, provenance=Provenance(source_kind="test.screen", path="/t", line=0), family=Family.TOOL,
        stage=Stage.REQUESTED, tool_name="Read", file_path="/ab",
    )
    assert "t.residual_only" in CUSTOM_ENGINE.residual_rules()
    assert [d.rule_id for d in CUSTOM_ENGINE.evaluate([obs], {})] == ["t.residual_only"]


def test_long_and_non_ascii_values_are_screened_and_matched() -> None:
    long_hit = "x " * CHUNK_VALUE_CHARS + "MAGIC"
    batch = [_result(0, "plain"), _result(1, long_hit), _result(2, "→ MAGIC"), _result(3, "→ quiet"), _result(4, "ok")]
    assert [d.anchors[0] for d in DEFAULT.evaluate(batch, {}) + CUSTOM_ENGINE.evaluate(batch, {})
            if d.rule_id == "t.cased"] == [batch[1].observation_id, batch[2].observation_id]


def test_quiet_runs_advance_each_session_window_like_single_steps() -> None:
    batch = [_request(0, "sudo make")] + [_request(i, f"ls {i}", session=("s" if i % 3 else "t")) for i in range(1, 9)]
    batch += [_request(9, "rm -rf /"), _request(10, "ls", session=None), _request(11, "sudo x", session="t")]
    windows = {"test:t": SessionWindow(position=5)}
    got = CUSTOM_ENGINE.evaluate(batch, windows)
    stepwise = {"test:t": SessionWindow(position=5)}
    expected = [d for obs in batch for d in CUSTOM_ENGINE.evaluate([obs], stepwise)]
    assert [d.rule_id for d in got] == [d.rule_id for d in expected] == ["t.starts", "t.equals", "t.starts"]
    # s: its window is created by the first observation, then 6 quiet ones and the match;
    # t: an existing window, 2 quiet observations and the match. None: no window.
    assert windows["test:s"].position == stepwise["test:s"].position == 8
    assert windows["test:t"].position == stepwise["test:t"].position == 8
    assert _encoded(windows) == _encoded(stepwise)


def test_gates_keep_a_common_word_from_making_candidates() -> None:
    # 'schema' is a trigger atom of destructive.database_drop; without 'drop'/'table'
    # (its second factor) the selection cannot match, so the field stays quiet.
    fx = DEFAULT._fields[1]
    assert fx is not None and fx.match is not None
    found = fx.match(b'{"content": "a json schema for the api"}')
    assert found and not frozenset(fx.triggers).isdisjoint(found)
    assert fx.opens(found) is False
    dropped = fx.match(b'{"sql": "DROP SCHEMA app"}')
    assert dropped and fx.opens(dropped) is True


def test_a_rule_literal_with_a_nul_or_a_surrogate_loads_and_matches_exactly() -> None:
    pack = load_rule_text(
        "rules:\n"
        "  - {id: t.nul, title: t, category: test, score: 30, match: {tool_result|re: 'e\\x00PAYLOAD'}}\n"
        "  - {id: t.sur, title: t, category: test, score: 30, match: {command|re: '\\x{D800}abc'}}\n",
        "odd.yaml",
    )
    engine = DetectionEngine(pack)
    batch = [_result(i, f"ordinary output {i} with the letter e") for i in range(300)]
    batch.append(_result(300, "here e\x00PAYLOAD is"))
    _kinds, suspects = engine._screen(batch)
    assert sum(suspects) <= 1  # the screen is not flooded by a literal cut at its NUL
    assert [d.rule_id for d in engine.evaluate(batch, {})] == ["t.nul"]
