"""Typed msgspec shapes of Codex rollout lines (the only place Codex field names live).

Only the fields the adapter projects are declared: msgspec skips everything else while
decoding (encrypted reasoning, base instructions, image data, rate limits) without
allocating it. Decoded values are short-lived and hold no reference cycles, so the Structs
are not tracked by the garbage collector (``gc=False``). Payload unions are tagged by
``type``; a record whose tag is not in a union is classified separately (unknown record,
quarantined by itself).

Shapes follow openai/codex ``codex-rs/protocol`` (``RolloutLine``, ``ResponseItem``,
``EventMsg``, ``TurnItem``) and ``codex-rs/history`` (``RolloutItemWire``), plus the
legacy bare-JSONL generation (G1) seen in real 2025 rollouts.
"""

from __future__ import annotations

from typing import Any, Union

import msgspec

# -- line envelope -------------------------------------------------------------------


class Envelope(msgspec.Struct, gc=False):
    """One rollout line: G2 ``{timestamp, type, payload[, ordinal, metadata]}`` or a G1 bare object.

    ``type`` doubles as the G1 response-item tag; ``record_type`` marks G1 state lines;
    ``id`` is the G1 session header's session id.
    """

    type: str | None = None
    #: Empty (falsy) when absent: a G1 line. ``msgspec.Raw`` cannot sit in a union.
    payload: msgspec.Raw = msgspec.Raw()
    timestamp: Any = None
    ordinal: Any = None
    metadata: msgspec.Raw = msgspec.Raw()
    record_type: str | None = None
    id: Any = None


class HarnessMetadata(msgspec.Struct, gc=False):
    """The harness metadata stored next to a ``response_item`` payload (newest rollouts)."""

    inherited_user_message: bool = False
    compaction_output: bool = False


class Kind(msgspec.Struct, gc=False):
    """Just the discriminator (and id), to tell an unknown tag from a malformed known record."""

    type: Any = None
    id: Any = None


# -- session_meta / turn_context -----------------------------------------------------


class SessionMeta(msgspec.Struct, gc=False):
    """``session_meta`` payload (G2) or the G1 header line.

    Fields are untyped on purpose: the header decides ownership of the whole file, so a
    field whose type drifts in a new Codex release must not fail the source. The adapter
    keeps only values of the expected type.
    """

    id: Any = None
    timestamp: Any = None
    cwd: Any = None
    originator: Any = None
    cli_version: Any = None
    source: Any = None
    model_provider: Any = None
    model: Any = None
    agent_nickname: Any = None
    agent_role: Any = None
    forked_from_id: Any = None
    parent_thread_id: Any = None
    thread_source: Any = None
    history_base: Any = None
    subagent_history_start_ordinal: Any = None


class TurnContext(msgspec.Struct, gc=False):
    model: str | None = None
    cwd: str | None = None
    model_provider: str | None = None


# -- response items ------------------------------------------------------------------


class ContentPart(msgspec.Struct, gc=False):
    """A message or tool-output content part; only text is kept (images are counted)."""

    type: str
    text: str | None = None


class _Item(msgspec.Struct, tag_field="type", gc=False):
    pass


class Message(_Item, tag="message"):
    role: str
    content: list[ContentPart] | None = None
    id: str | None = None
    phase: str | None = None


class FunctionCall(_Item, tag="function_call"):
    name: str
    arguments: Any = None
    call_id: str | None = None
    id: str | None = None
    namespace: str | None = None


class OutputObject(msgspec.Struct, gc=False):
    """An early object-shaped ``FunctionCallOutputPayload``."""

    content: str | None = None
    success: bool | None = None


#: A tool output: text, a list of content parts, or the early object shape.
Output = str | list[ContentPart] | OutputObject | None


class FunctionCallOutput(_Item, tag="function_call_output"):
    call_id: str | None = None
    output: Output = None


class CustomToolCall(_Item, tag="custom_tool_call"):
    name: str
    input: str | None = None
    call_id: str | None = None
    id: str | None = None
    status: str | None = None


class CustomToolCallOutput(_Item, tag="custom_tool_call_output"):
    call_id: str | None = None
    output: Output = None


class LocalShellAction(msgspec.Struct, gc=False):
    type: str | None = None
    command: list[str] | None = None
    working_directory: str | None = None
    timeout_ms: int | None = None


class LocalShellCall(_Item, tag="local_shell_call"):
    action: LocalShellAction | None = None
    call_id: str | None = None
    id: str | None = None
    status: str | None = None


class WebSearchAction(msgspec.Struct, gc=False):
    type: str | None = None
    query: str | None = None
    queries: list[str] | None = None
    url: str | None = None
    pattern: str | None = None


class WebSearchCall(_Item, tag="web_search_call"):
    action: WebSearchAction | None = None
    id: str | None = None
    status: str | None = None


class ToolSearchCall(_Item, tag="tool_search_call"):
    call_id: str | None = None
    id: str | None = None
    execution: str | None = None
    arguments: Any = None


class ToolSearchOutput(_Item, tag="tool_search_output"):
    call_id: str | None = None
    status: str | None = None
    tools: Any = None


class ImageGenerationCall(_Item, tag="image_generation_call"):
    id: str | None = None
    status: str | None = None
    revised_prompt: str | None = None


#: Response items counted as bookkeeping: reasoning (never retained), compaction and
#: snapshot markers, tool lists, and inter-agent envelopes.
BOOKKEEPING_ITEMS = (
    "reasoning",
    "ghost_snapshot",
    "compaction",
    "compaction_summary",
    "context_compaction",
    "compaction_trigger",
    "additional_tools",
    "agent_message",
    "other",
)


class BookkeepingItem(_Item):
    """Base of the generated tag-only Structs for bookkeeping items (no field is decoded)."""


def _tagged(base: type[msgspec.Struct], tags: tuple[str, ...]) -> list[type[msgspec.Struct]]:
    return [msgspec.defstruct(f"_T_{t}", [], bases=(base,), tag=t, tag_field="type") for t in tags]


_ITEM_TYPES: list[Any] = [
    Message,
    FunctionCall,
    FunctionCallOutput,
    CustomToolCall,
    CustomToolCallOutput,
    LocalShellCall,
    WebSearchCall,
    ToolSearchCall,
    ToolSearchOutput,
    ImageGenerationCall,
    *_tagged(BookkeepingItem, BOOKKEEPING_ITEMS),
]
KNOWN_ITEM_TAGS = frozenset(
    [
        "message",
        "function_call",
        "function_call_output",
        "custom_tool_call",
        "custom_tool_call_output",
        "local_shell_call",
        "web_search_call",
        "tool_search_call",
        "tool_search_output",
        "image_generation_call",
        *BOOKKEEPING_ITEMS,
    ]
)
item_decoder: msgspec.json.Decoder[Any] = msgspec.json.Decoder(Union[tuple(_ITEM_TYPES)])  # noqa: UP007

# -- tool output payloads ------------------------------------------------------------


class ExecMetadata(msgspec.Struct, gc=False):
    exit_code: int | None = None


class ExecOutputJson(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """The G1 shell output: a JSON document in the output string."""

    output: str
    metadata: ExecMetadata | None = None


# -- event_msg -----------------------------------------------------------------------


class _Event(msgspec.Struct, tag_field="type", gc=False):
    pass


class TokenUsage(msgspec.Struct, gc=False):
    input_tokens: int | None = None
    cached_input_tokens: int | None = None
    cache_write_input_tokens: int | None = None
    output_tokens: int | None = None
    reasoning_output_tokens: int | None = None
    total_tokens: int | None = None


class TokenInfo(msgspec.Struct, gc=False):
    total_token_usage: TokenUsage | None = None
    last_token_usage: TokenUsage | None = None


class TokenCount(_Event, tag="token_count"):
    info: TokenInfo | None = None


class TurnAborted(_Event, tag="turn_aborted"):
    reason: str | None = None


class ItemCompleted(_Event, tag="item_completed"):
    item: msgspec.Raw
    thread_id: str | None = None
    turn_id: str | None = None


class ExecCommandEnd(_Event, tag="exec_command_end"):
    call_id: str | None = None
    aggregated_output: str | None = None
    exit_code: int | None = None


#: Lifecycle, reasoning and duplicate-carrying event payloads, counted but not projected.
#: ``user_message``/``agent_message`` repeat the ``response_item`` messages (one fact,
#: taken from the response item); ``*_end`` events repeat tool outputs already carried
#: by ``function_call_output``/``custom_tool_call_output``.
BOOKKEEPING_EVENTS = (
    # turn and thread lifecycle
    "task_started",
    "task_complete",
    "turn_started",
    "turn_complete",
    "context_compacted",
    "thread_rolled_back",
    "thread_goal_updated",
    "thread_settings_applied",
    "thread_name_updated",
    "entered_review_mode",
    "exited_review_mode",
    "sub_agent_activity",
    "session_configured",
    "shutdown_complete",
    "error",
    "warning",
    "stream_error",
    "background_event",
    "deprecation_notice",
    "plan_update",
    "turn_diff",
    "item_started",
    "undo_started",
    "undo_completed",
    "model_reroute",
    "model_verification",
    "safety_buffering",
    "turn_moderation_metadata",
    "guardian_assessment",
    "guardian_warning",
    "hook_started",
    "hook_completed",
    "mcp_startup_update",
    "mcp_startup_complete",
    "skills_update_available",
    "get_history_entry_response",
    "mcp_list_tools_response",
    "list_custom_prompts_response",
    "list_skills_response",
    "raw_response_item",
    "exec_approval_request",
    "apply_patch_approval_request",
    "elicitation_request",
    "request_user_input",
    "request_permissions",
    "dynamic_tool_call_request",
    "dynamic_tool_call_response",
    "collab_agent_spawn_begin",
    "collab_agent_spawn_end",
    "collab_agent_interaction_begin",
    "collab_agent_interaction_end",
    "collab_waiting_begin",
    "collab_waiting_end",
    "collab_close_begin",
    "collab_close_end",
    "collab_resume_begin",
    "collab_resume_end",
    "realtime_conversation_started",
    "realtime_conversation_sdp",
    "realtime_conversation_realtime",
    "realtime_conversation_closed",
    "realtime_conversation_list_voices_response",
    "exec_command_begin",
    "exec_command_output_delta",
    "terminal_interaction",
    "patch_apply_begin",
    "patch_apply_updated",
    "mcp_tool_call_begin",
    "web_search_begin",
    "image_generation_begin",
    "view_image_tool_call",
    "agent_message_delta",
    "agent_message_content_delta",
    "plan_delta",
    # reasoning
    "agent_reasoning",
    "agent_reasoning_raw_content",
    "agent_reasoning_delta",
    "agent_reasoning_raw_content_delta",
    "agent_reasoning_section_break",
    "reasoning_content_delta",
    "reasoning_raw_content_delta",
    # duplicates of response items
    "user_message",
    "agent_message",
    "patch_apply_end",
    "mcp_tool_call_end",
    "web_search_end",
    "image_generation_end",
)


class BookkeepingEvent(_Event):
    """Base of the generated tag-only Structs for bookkeeping events."""


_EVENT_TYPES: list[Any] = [
    TokenCount,
    TurnAborted,
    ItemCompleted,
    ExecCommandEnd,
    *_tagged(BookkeepingEvent, BOOKKEEPING_EVENTS),
]
KNOWN_EVENT_TAGS = frozenset(["token_count", "turn_aborted", "item_completed", "exec_command_end", *BOOKKEEPING_EVENTS])
event_decoder: msgspec.json.Decoder[Any] = msgspec.json.Decoder(Union[tuple(_EVENT_TYPES)])  # noqa: UP007

# -- completed turn items (event_msg item_completed) -----------------------------------


class _Turn(msgspec.Struct, tag_field="type", gc=False):
    id: str | None = None


class CommandExecution(_Turn, tag="CommandExecution"):
    """Field spelling differs by version: snake_case (core) or camelCase (turn items)."""

    aggregated_output: str | None = None
    aggregated_output_camel: str | None = msgspec.field(default=None, name="aggregatedOutput")
    exit_code: int | None = None
    exit_code_camel: int | None = msgspec.field(default=None, name="exitCode")
    status: str | None = None


class FileChangeEntry(msgspec.Struct, gc=False):
    """One file of a FileChange: ``add``/``delete`` carry content, ``update`` a unified diff."""

    type: str | None = None
    unified_diff: str | None = None
    move_path: str | None = None
    content: str | None = None


class FileChangeListEntry(msgspec.Struct, gc=False):
    """The list-shaped variant (``[{path, kind: {type, move_path}, diff}]``)."""

    path: str
    kind: Any = None
    diff: str | None = None


class FileChange(_Turn, tag="FileChange"):
    changes: dict[str, FileChangeEntry] | list[FileChangeListEntry] | None = None
    status: str | None = None


#: Completed items that are bookkeeping (CODEX-8) or repeat a raw response item.
BOOKKEEPING_TURN_ITEMS = (
    "Reasoning",
    "ContextCompaction",
    "EnteredReviewMode",
    "ExitedReviewMode",
    "Plan",
    "Sleep",
    "UserMessage",
    "AgentMessage",
    "HookPrompt",
    "WebSearch",
    "ImageView",
    "ImageGeneration",
    "DynamicToolCall",
    "CollabAgentToolCall",
    "SubAgentActivity",
    "FunctionCallOutput",
)
#: Completed items the adapter does not map yet (CODEX-13): quarantined by themselves.
UNSUPPORTED_TURN_ITEMS = ("McpToolCall", "Extension")


class BookkeepingTurn(_Turn):
    """Base of tag-only completed-item Structs that are counted, not projected."""


class UnsupportedTurn(_Turn):
    """Base of tag-only completed-item Structs that are quarantined."""


_TURN_TYPES: list[Any] = [
    CommandExecution,
    FileChange,
    *_tagged(BookkeepingTurn, BOOKKEEPING_TURN_ITEMS),
    *_tagged(UnsupportedTurn, UNSUPPORTED_TURN_ITEMS),
]
KNOWN_TURN_TAGS = frozenset(["CommandExecution", "FileChange", *BOOKKEEPING_TURN_ITEMS, *UNSUPPORTED_TURN_ITEMS])
turn_decoder: msgspec.json.Decoder[Any] = msgspec.json.Decoder(Union[tuple(_TURN_TYPES)])  # noqa: UP007

# -- top-level record types ----------------------------------------------------------

#: G2 record types counted as bookkeeping (``turn_context`` is also read for the model).
BOOKKEEPING_RECORDS = frozenset(
    [
        "compacted",
        "token_usage_record",
        "world_state",
        "inter_agent_communication",
        "inter_agent_communication_metadata",
        "retained_context",
        "security_risk_score",
        "realtime_item",
    ]
)

# -- one-pass decoding of the frequent lines ----------------------------------------

#: Response items and event payloads in one tagged union. ``agent_message`` is a tag of both
#: (bookkeeping either way); it decodes as the item.
_PAYLOAD_TYPES: list[Any] = [
    *_ITEM_TYPES,
    *(t for t in _EVENT_TYPES if t.__struct_config__.tag != "agent_message"),
]

#: A G2 line decoded in one pass, payload included (the envelope's fields, with the payload
#: typed). Decoding the envelope first and the payload after reads the payload's bytes
#: twice; this reads them once. It is only a faster way to the same values: a line it
#: cannot decode, or whose payload is not of its record type's kind (an item for
#: ``response_item``, an event for ``event_msg``), takes the two-step path, which defines
#: the adapter's behaviour.
RecordLine: Any = msgspec.defstruct(
    "RecordLine",
    [
        ("type", str | None, None),
        ("payload", Union[tuple(_PAYLOAD_TYPES)] | None, None),  # noqa: UP007
        ("timestamp", Any, None),
        ("ordinal", Any, None),
        ("metadata", msgspec.Raw, msgspec.Raw()),
        ("record_type", str | None, None),
        ("id", Any, None),
    ],
    gc=False,
)
#: The exact classes a one-pass payload can have, by kind (decoded values are never of a
#: subclass, so a set lookup by type answers ``isinstance`` for them): items; events, and
#: the item class that also stands for the ``agent_message`` event (tag-only bookkeeping
#: both ways); and the tag-only bookkeeping classes of both kinds.
ITEM_CLASSES: frozenset[type] = frozenset(_ITEM_TYPES)
EVENT_CLASSES: frozenset[type] = frozenset(
    t for t in _PAYLOAD_TYPES if issubclass(t, _Event) or t.__struct_config__.tag == "agent_message"
)
BOOKKEEPING_CLASSES: frozenset[type] = frozenset(
    t for t in _PAYLOAD_TYPES if issubclass(t, BookkeepingItem | BookkeepingEvent)
)

record_decoder: msgspec.json.Decoder[Any] = msgspec.json.Decoder(RecordLine)
envelope_decoder = msgspec.json.Decoder(Envelope)
kind_decoder = msgspec.json.Decoder(Kind)
meta_decoder = msgspec.json.Decoder(SessionMeta)
turn_context_decoder = msgspec.json.Decoder(TurnContext)
harness_decoder = msgspec.json.Decoder(HarnessMetadata)
exec_output_decoder = msgspec.json.Decoder(ExecOutputJson)
