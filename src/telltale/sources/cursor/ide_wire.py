"""Cursor IDE ``state.vscdb`` rows as msgspec Structs: only the fields Telltale reads.

Field names are Cursor's (formats-more.md §1.2; getspecstory ``cursoride/types.go``);
everything else in a row is skipped by the decoder without being kept.
"""

from __future__ import annotations

from typing import Any

import msgspec

#: ``cursorDiskKV`` key prefixes (the only rows ever selected there).
COMPOSER_PREFIX = "composerData:"
BUBBLE_PREFIX = "bubbleId:"
#: ``ItemTable`` keys read, by exact name (never a prefix, never ``cursorAuth/*``).
LEGACY_CHAT_KEY = "workbench.panel.aichat.view.aichat.chatdata"
WORKSPACE_COMPOSERS_KEY = "composer.composerData"
ITEM_KEYS = (LEGACY_CHAT_KEY, WORKSPACE_COMPOSERS_KEY)

#: Bubble ``type``.
USER, ASSISTANT = 1, 2
#: Composer ``status`` while a response is still being produced.
GENERATING = frozenset({"generating", "streaming", "running"})
#: Tool ``status`` values that are not final yet.
TOOL_PENDING = frozenset({"loading", "pending", "running", "streaming", "generating"})
#: Tool ``status`` values that mean the call failed / was stopped.
TOOL_ERROR = frozenset({"error", "failed"})
TOOL_STOPPED = frozenset({"cancelled", "canceled", "aborted", "rejected"})


class ModelConfig(msgspec.Struct):
    modelName: str | None = None
    maxMode: bool | None = None


class ModelInfo(msgspec.Struct):
    modelName: str | None = None


class TimingInfo(msgspec.Struct):
    clientStartTime: float | None = None
    clientRpcSendTime: float | None = None
    clientSettleTime: float | None = None
    clientEndTime: float | None = None


class TokenCount(msgspec.Struct):
    inputTokens: int | None = None
    outputTokens: int | None = None


class ToolFormer(msgspec.Struct):
    """``toolFormerData``: one tool call and its result, in one object."""

    tool: int | None = None
    name: str | None = None
    toolCallId: str | None = None
    rawArgs: str | None = None
    params: str | None = None
    result: str | None = None
    status: str | None = None
    error: Any = None
    userDecision: str | None = None


class Bubble(msgspec.Struct):
    """``bubbleId:<composer>:<bubble>`` (or an entry of an embedded ``conversation[]``)."""

    bubbleId: str | None = None
    type: int | None = None
    text: str | None = None
    capabilityType: int | None = None
    toolFormerData: ToolFormer | None = None
    modelInfo: ModelInfo | None = None
    timingInfo: TimingInfo | None = None
    tokenCount: TokenCount | None = None
    createdAt: str | float | None = None
    isAgentic: bool | None = None
    unifiedMode: int | None = None


class Header(msgspec.Struct):
    bubbleId: str | None = None
    type: int | None = None


class WorkspaceUri(msgspec.Struct):
    fsPath: str | None = None
    path: str | None = None


class WorkspaceIdentifier(msgspec.Struct):
    id: str | None = None
    uri: WorkspaceUri | None = None


class CapabilityData(msgspec.Struct):
    bubbleDataMap: Any = None  # a JSON string or an object: bubble id -> ToolFormer


class Capability(msgspec.Struct):
    type: int | None = None
    data: CapabilityData | None = None


#: ``capabilities[].type`` of the tool capability (``_v`` < 3 composers keep tool data there).
TOOL_CAPABILITY = 15


class Composer(msgspec.Struct, rename={"version": "_v"}):
    """``composerData:<id>``: conversation metadata and the ordered bubble manifest."""

    composerId: str | None = None
    version: int | None = None
    name: str | None = None
    createdAt: float | None = None
    lastUpdatedAt: float | None = None
    status: str | None = None
    unifiedMode: str | int | None = None
    forceMode: str | None = None
    isAgentic: bool | None = None
    modelConfig: ModelConfig | None = None
    fullConversationHeadersOnly: list[Header] | None = None
    conversation: list[Bubble] | None = None
    workspaceIdentifier: WorkspaceIdentifier | None = None
    subComposerIds: list[str] | None = None
    #: Kept raw and decoded apart, so a capability of an unexpected shape spoils only itself.
    capabilities: msgspec.Raw = msgspec.Raw()


class LegacyBubble(msgspec.Struct):
    """A bubble of the pre-composer chat panel (``type`` ``user`` / ``ai``)."""

    id: str | None = None
    type: str | None = None
    text: str | None = None
    rawText: str | None = None
    modelType: str | None = None


class LegacyTab(msgspec.Struct):
    tabId: str | None = None
    chatTitle: str | None = None
    lastSendTime: float | None = None
    bubbles: list[LegacyBubble] | None = None


class LegacyChat(msgspec.Struct):
    tabs: list[LegacyTab] | None = None


class ComposerRef(msgspec.Struct):
    composerId: str | None = None


class WorkspaceComposers(msgspec.Struct):
    """Workspace ``ItemTable`` ``composer.composerData`` (Cursor 2: ``allComposers``;
    Cursor 3: ``selectedComposerIds``)."""

    allComposers: list[ComposerRef] | None = None
    selectedComposerIds: list[str] | None = None


class WorkspaceFile(msgspec.Struct):
    """``workspace.json`` beside a workspace database."""

    folder: str | None = None
    workspace: str | None = None


composer_decoder = msgspec.json.Decoder(Composer)
bubble_decoder = msgspec.json.Decoder(Bubble)
legacy_decoder = msgspec.json.Decoder(LegacyChat)
workspace_composers_decoder = msgspec.json.Decoder(WorkspaceComposers)
workspace_file_decoder = msgspec.json.Decoder(WorkspaceFile)
any_decoder = msgspec.json.Decoder()
capabilities_decoder = msgspec.json.Decoder(list[Capability])
tool_map_decoder = msgspec.json.Decoder(dict[str, msgspec.Raw])
tool_decoder = msgspec.json.Decoder(ToolFormer)


def capability_tools(composer: Composer) -> dict[str, ToolFormer]:
    """Tool data of a ``_v`` < 3 composer: ``capabilities[type 15].data.bubbleDataMap``.

    The map may be an object or a JSON string of one; an entry that does not decode is
    left out (its bubble then shows as a message without a tool call).
    """
    if (composer.version or 0) >= 3 or not composer.capabilities:
        return {}
    try:
        capabilities = capabilities_decoder.decode(composer.capabilities)
    except msgspec.DecodeError:
        return {}
    out: dict[str, ToolFormer] = {}
    for capability in capabilities:
        if capability.type != TOOL_CAPABILITY or capability.data is None:
            continue
        raw = capability.data.bubbleDataMap
        try:
            if isinstance(raw, str):
                entries = tool_map_decoder.decode(raw)
            elif isinstance(raw, dict):
                entries = {k: msgspec.Raw(msgspec.json.encode(v)) for k, v in raw.items()}
            else:
                continue
        except msgspec.DecodeError:
            continue
        for bubble_id, entry in entries.items():
            try:
                out[bubble_id] = tool_decoder.decode(entry)
            except msgspec.DecodeError:
                continue
    return out
