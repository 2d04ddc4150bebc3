"""Typed rule model (what a rule file may say) and detection output types.

The ``*Spec`` structs are the schema of the YAML rule language: the loader converts the
decoded YAML into them with msgspec, so a wrong type or an unknown key is a located
error rather than a surprise during matching. ``Detection``, ``Evidence`` and
``SessionWindow`` are what the engine produces and keeps.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from telltale.model import Observation

Severity = Literal["informational", "low", "medium", "high", "critical"]

#: Lower score bound of each severity band (documented in docs/detection.md).
SEVERITY_THRESHOLDS: tuple[tuple[int, Severity], ...] = (
    (90, "critical"),
    (70, "high"),
    (50, "medium"),
    (20, "low"),
    (0, "informational"),
)
SEVERITIES: tuple[Severity, ...] = ("informational", "low", "medium", "high", "critical")


def severity_for(score: int) -> Severity:
    """Severity band of a risk score."""
    for floor, name in SEVERITY_THRESHOLDS:
        if score >= floor:
            return name
    return "informational"


# A matcher value: one string or a list of strings.
MatchValue = str | list[str]
# One selection: ``field|modifier|...`` -> value(s); every entry must hold (AND).
Selection = dict[str, MatchValue]


class TagsSpec(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """ATT&CK (``attack.t1552.001`` or a tactic such as ``attack.credential_access``) and
    ATLAS (``atlas.AML.T0051``) tags, kept apart because they are different frameworks."""

    attack: list[str] = []
    atlas: list[str] = []


class StepCase(msgspec.Struct, forbid_unknown_fields=True, kw_only=True, omit_defaults=True):
    """One observation of a test case, in rule-field form, or ``filler`` benign steps."""

    command: str | None = None
    arguments: str | None = None
    file_path: str | None = None
    url: str | None = None
    tool_name: str | None = None
    cwd: str | None = None
    tool_result: str | None = None
    user_context: str | None = None
    assistant_context: str | None = None
    injected_context: str | None = None
    #: The adapter's facet for ``file_path``: ``read`` or ``write``.
    file_access: Literal["read", "write"] | None = None
    #: Seconds after the case's start at which this observation happened.
    at: float | None = None
    #: Instead of an observation: this many ordinary observations (a benign command each).
    filler: int | None = None

    def fields(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for name in (
            "command",
            "arguments",
            "file_path",
            "url",
            "tool_name",
            "cwd",
            "tool_result",
            "user_context",
            "assistant_context",
            "injected_context",
            "file_access",
        ):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        return out


class RuleCases(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Embedded examples: each positive case must fire the rule, each negative must not."""

    positive: list[StepCase] = []
    negative: list[StepCase] = []


class SequenceCases(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Sequence examples: each case is an ordered list of observations of one session."""

    positive: list[list[StepCase]] = []
    negative: list[list[StepCase]] = []


class RuleSpec(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """One single-observation rule."""

    id: str
    title: str
    category: str
    score: int
    match: Selection | list[Selection]
    description: str = ""
    severity: Severity | None = None
    tags: TagsSpec = msgspec.field(default_factory=TagsSpec)
    references: list[str] = []
    falsepositives: list[str] = []
    recommendation: str = ""
    enabled: bool = True
    #: A signal feeds sequences and co-occurrence modifiers but is never reported alone.
    signal: bool = False
    filter: Selection | list[Selection] = []
    tests: RuleCases = msgspec.field(default_factory=RuleCases)


class WithinSpec(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Window bound: observations of the session between first and last step, and/or seconds."""

    steps: int | None = None
    seconds: float | None = None


class SequenceSpec(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Ordered steps within one session; each step names rule ids, ``prefix.*`` or ``category:x``."""

    id: str
    title: str
    category: str
    score: int
    steps: list[list[str]]
    within: WithinSpec = msgspec.field(default_factory=WithinSpec)
    description: str = ""
    severity: Severity | None = None
    tags: TagsSpec = msgspec.field(default_factory=TagsSpec)
    references: list[str] = []
    falsepositives: list[str] = []
    recommendation: str = ""
    enabled: bool = True
    tests: SequenceCases = msgspec.field(default_factory=SequenceCases)


class ModifierSpec(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Co-occurrence: when a ``when`` rule (or sequence) fires and a ``with`` rule matched
    in the same observation (``scope: observation``) or recently in the session
    (``scope: session``, bounded by ``within``), add ``score``."""

    id: str
    when: list[str]
    with_: list[str] = msgspec.field(name="with")
    score: int
    scope: Literal["observation", "session"] = "observation"
    within: WithinSpec = msgspec.field(default_factory=WithinSpec)
    description: str = ""
    enabled: bool = True


class RuleFileSpec(msgspec.Struct, kw_only=True):
    """Top level of a rule file. Keys starting with ``x-`` may hold YAML anchors."""

    version: int = 1
    rules: list[object] = []
    sequences: list[object] = []
    modifiers: list[object] = []


# ---------------------------------------------------------------- output types


class Evidence(msgspec.Struct, frozen=True, kw_only=True):
    """What matched: the RAW field value (bounded excerpt). Redaction happens at output."""

    field: str
    value: str
    observation_id: str
    rule_id: str


class SigmaRef(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Where a rule compiled from a Sigma rule came from: what its alerts name (``rule.uuid``)."""

    id: str
    title: str
    level: str
    tags: tuple[str, ...] = ()
    status: str | None = None
    author: str | None = None
class Anchor(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Where one anchor observation is: the RAW coordinates and context an analyst pivots on.

    Raw like :class:`Evidence`; ``telltale.events.detection`` redacts it (and drops the
    text fields with ``--content none``). An anchor matched in an earlier scan is known
    by ``observation_id`` only: session windows keep no content.
    """

    observation_id: str
    source_kind: str | None = None
    path: str | None = None
    line: int | None = None
    offset: int | None = None
    row: str | None = None
    record_id: str | None = None
    occurred_at: str | None = None
    cwd: str | None = None
    agent: str | None = None
    agent_version: str | None = None
    model: str | None = None
    provider: str | None = None
    tool_name: str | None = None
    command: str | None = None
    file_path: str | None = None
    url: str | None = None


def agent_version_of(obs: Observation) -> str | None:
    """The agent's version as adapters record it (Claude/Qwen ``version``, Codex ``cli_version``)."""
    attributes = obs.attributes
    if not attributes:
        return None
    return attributes.get("version") or attributes.get("cli_version")


def anchor_of(obs: Observation, context: list[str | None] | None = None) -> Anchor:
    """The anchor record of one observation (its provenance and the facets rules read).

    ``context`` is the session's last known ``[agent version, model, provider]``: a tool
    call of an agent that writes them once per session (Codex) takes them from there.
    """
    prov = obs.provenance
    version = agent_version_of(obs)
    model, provider = obs.model, obs.provider
    if context:
        version = version or context[0]
        model = model or context[1]
        provider = provider or context[2]
    return Anchor(
        observation_id=obs.observation_id,
        source_kind=obs.source_kind,
        path=prov.path,
        line=prov.line,
        offset=prov.offset,
        row=prov.row,
        record_id=prov.record_id or obs.call_id,
        occurred_at=obs.occurred_at,
        cwd=obs.cwd,
        agent=obs.agent,
        agent_version=version,
        model=model,
        provider=provider,
        tool_name=obs.tool_name,
        command=obs.command,
        file_path=obs.file_path,
        url=obs.url,
    )


class Detection(msgspec.Struct, kw_only=True):
    """One alert: a rule that fired on one observation, or a completed sequence."""

    detection_id: str
    rule_id: str
    title: str
    description: str
    category: str
    categories: list[str]
    severity: Severity
    score: int
    rule_ids: list[str]
    modifiers: list[str]
    attack: list[str]
    atlas: list[str]
    references: list[str]
    session_id: str | None
    client: str
    source_kind: str
    occurred_at: str | None
    anchors: list[str]
    evidence: list[Evidence]
    recommendation: str
    suppressed_by: str | None = None
    is_sequence: bool = False
    tool_name: str | None = None
    #: Provenance path of the triggering observation (raw; used for allowlist path hashes).
    source_path: str | None = None
    #: The Sigma rule this detection's rule was compiled from (``None``: a Telltale rule).
    sigma: SigmaRef | None = None
    #: Where each anchor is (the first ``MAX_ANCHORS`` occurrences of an aggregated alert).
    where: list[Anchor] = []
    #: The anchor the alert's top-level ECS fields describe (a rule's first occurrence, a
    #: sequence's completing step).
    trigger: Anchor | None = None
    #: Occurrences of this rule in this session folded into this alert when it was emitted.
    count: int = 1
    first_seen: str | None = None
    last_seen: str | None = None
    #: Set on a later occurrence of a rule that already alerted in this session: the id is
    #: that first alert's, and the occurrence is folded into it or into the session ledger.
    repeat: bool = False


class LedgerEntry(msgspec.Struct, kw_only=True, array_like=True):
    """One rule or sequence in a session's risk ledger: no content, ids, points and times."""

    id: str
    kind: Literal["rule", "sequence"]
    #: The highest score this rule or sequence reached in the session.
    points: int
    #: Occurrences in the session (each observation or completed chain once).
    count: int
    category: str
    #: The session's alert for it (its first occurrence).
    detection_id: str
    first_seen: str | None = None
    last_seen: str | None = None


class WindowEntry(msgspec.Struct, frozen=True, array_like=True):
    """One rule match remembered for sequences: no content, only ids, position and time."""

    rule_id: str
    observation_id: str
    position: int
    at: float | None


#: Entries a session window keeps at most (oldest dropped first).
WINDOW_MAX_ENTRIES = 256
#: Sequence detection ids remembered per session to avoid re-alerting.
WINDOW_MAX_FIRED = 256
WINDOW_VERSION = 1


class SessionWindow(msgspec.Struct, kw_only=True):
    """Bounded per-session memory of matched steps, kept across scans by the pipeline.

    ``position`` counts the observations of the session the engine has evaluated since
    the window was created; step bounds are differences of positions. The window holds
    rule ids, observation ids, positions and times only, never transcript content.
    """

    version: int = WINDOW_VERSION
    position: int = 0
    last_at: float | None = None
    entries: list[WindowEntry] = []
    fired: list[str] = []
    #: The session's last known ``[agent version, model, provider]`` (alerts' "where").
    context: list[str | None] = []
    #: The additive risk ledger: each rule or sequence that alerted, its points and count.
    ledger: list[LedgerEntry] = []
    #: Digest of the ledger the last ``session_risk_summary`` was written for.
    reported: str = ""

    def encode(self) -> bytes:
        return _window_encoder.encode(self)

    @classmethod
    def decode(cls, data: bytes) -> SessionWindow:
        """Decode a stored window; malformed or other-version data gives a fresh one.

        A window is a cache of sequence memory: losing it can only miss a sequence that
        spans the loss, so a bad window must not stop a scan.
        """
        try:
            window = _window_decoder.decode(data)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return cls()
        if window.version != WINDOW_VERSION or window.position < 0:
            return cls()
        window.entries = window.entries[-WINDOW_MAX_ENTRIES:]
        window.fired = window.fired[-WINDOW_MAX_FIRED:]
        return window


_window_encoder = msgspec.msgpack.Encoder()
_window_decoder = msgspec.msgpack.Decoder(SessionWindow)
