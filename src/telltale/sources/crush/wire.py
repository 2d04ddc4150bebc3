"""Crush's ``messages.parts``: ``[{"type": …, "data": {…}}]``, JSON or a zstd frame of it.

Part types (charmbracelet/crush ``internal/message``): ``text{text, hidden?}``,
``reasoning{thinking, …}``, ``image_url{url}``, ``binary{Path, MIMEType, Data}``,
``tool_call{id, name, input (JSON text), provider_executed, finished}``,
``tool_result{tool_call_id, name, content, data, mime_type, metadata, is_error}``,
``finish{reason, time, message?, details?}`` and ``shell_command{command, output,
exit_code}`` (a ``!`` command the user ran). The newest builds zstd-compress the column:
a frame starts with ``28 b5 2f fd``; plain JSON always starts with ``[``.
"""

from __future__ import annotations

import io

import msgspec
import zstandard

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
#: Decompressed bytes of one ``parts`` cell at most.
MAX_PARTS_BYTES = 64 << 20


class Wrapper(msgspec.Struct):
    type: str
    data: msgspec.Raw = msgspec.Raw(b"null")


class Text(msgspec.Struct):
    text: str = ""
    hidden: bool = False


class ToolCall(msgspec.Struct):
    id: str = ""
    name: str = ""
    input: str = ""
    provider_executed: bool = False
    finished: bool = False


class ToolResult(msgspec.Struct):
    tool_call_id: str = ""
    name: str = ""
    content: str = ""
    is_error: bool = False


class Finish(msgspec.Struct):
    reason: str = ""
    time: int | float | None = None
    message: str = ""


class ShellCommand(msgspec.Struct):
    command: str = ""
    output: str = ""
    exit_code: int | None = None


parts_decoder = msgspec.json.Decoder(list[Wrapper])
text_decoder = msgspec.json.Decoder(Text)
tool_call_decoder = msgspec.json.Decoder(ToolCall)
tool_result_decoder = msgspec.json.Decoder(ToolResult)
finish_decoder = msgspec.json.Decoder(Finish)
shell_decoder = msgspec.json.Decoder(ShellCommand)
any_decoder = msgspec.json.Decoder()


class TooLarge(ValueError):
    """A zstd frame that inflates beyond :data:`MAX_PARTS_BYTES`."""


def stored_parts(cell: bytes) -> bytes:
    """The JSON of a stored ``parts`` cell, inflating a zstd frame (bounded)."""
    if not cell.startswith(ZSTD_MAGIC):
        return cell
    reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(cell), read_across_frames=True)
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = reader.read(1 << 20)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > MAX_PARTS_BYTES:
            raise TooLarge(MAX_PARTS_BYTES)
        chunks.append(chunk)
