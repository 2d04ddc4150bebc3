"""The one place that says which canonical observation value a rule field means.

Rules never name an Observation attribute; they name one of :data:`FIELD_NAMES`. The
mapping is role-aware on purpose: ``command`` only exists on a tool request, so a shell
line quoted in user text or assistant prose can never satisfy an execution rule.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from operator import attrgetter

from telltale.model import Family, Observation, Provenance, Stage, make_observation

#: Shell command line of a tool request (``Observation.command``).
COMMAND = 0
#: Canonical JSON arguments of a tool request (``Observation.arguments``).
ARGUMENTS = 1
#: File path facet of a tool request (``Observation.file_path``).
FILE_PATH = 2
#: URL facet of a tool request (``Observation.url``).
URL = 3
#: Tool name, on requests and on results (``Observation.tool_name``).
TOOL_NAME = 4
#: Tool result text (``Observation.result``).
TOOL_RESULT = 5
#: The user's own words: user message text that the agent did not inject.
USER_CONTEXT = 6
#: Assistant message text.
ASSISTANT_CONTEXT = 7
#: Context the agent injected (system / developer messages, injected user-role text:
#: instructions files, MCP server instructions, reminders).
INJECTED_CONTEXT = 8
#: The command as the shell will run it (the raw command when nothing changed).
COMMAND_NORMALIZED = 9
#: Lists (one item per line; see MULTI_FIELDS): resolved programs,
PROGRAM = 10
#: argv of each simple command,
ARGV = 11
#: each pipeline's programs joined by ``|``,
PIPELINE = 12
#: files written (shell and file tools alike),
WRITTEN_PATH = 13
#: files read (shell and file tools alike).
READ_PATH = 14
#: The working directory the agent reported for a tool request (``Observation.cwd``).
CWD = 15

FIELD_NAMES: tuple[str, ...] = (
    "command",
    "arguments",
    "file_path",
    "url",
    "tool_name",
    "tool_result",
    "user_context",
    "assistant_context",
    "injected_context",
    "command_normalized",
    "program",
    "argv",
    "pipeline",
    "written_path",
    "read_path",
    "cwd",
)
FIELD_INDEX: dict[str, int] = {name: i for i, name in enumerate(FIELD_NAMES)}

#: Fields that describe what a tool was asked to do (one tool-request observation); in a
#: rule test case, ``file_access`` may stand beside them (the adapter's facet).
REQUEST_FIELDS = frozenset({"command", "arguments", "file_path", "url", "tool_name", "cwd", "file_access"})
#: Fields whose value is a list, one item per line: a matcher holds when it holds for
#: one item (equality, ``startswith``/``endswith`` and ``^``/``$`` work per line).
MULTI_FIELDS = frozenset({PROGRAM, ARGV, PIPELINE, WRITTEN_PATH, READ_PATH})
#: Prose and file content (tool results, messages): long values that RE2 reads whole, where
#: a regex that Hyperscan can find is worth a guard of its own (detect/guards.py).
PROSE_FIELDS = frozenset({TOOL_RESULT, USER_CONTEXT, ASSISTANT_CONTEXT, INJECTED_CONTEXT})
#: Fields the normalisation stage derives: a test case gives the command or path, not them.
DERIVED_FIELDS = frozenset({"command_normalized", "program", "argv", "pipeline", "written_path", "read_path"})

#: The Observation attribute that holds each field's value (index: field id).
FIELD_ATTRS: tuple[str, ...] = (
    "command",
    "arguments",
    "file_path",
    "url",
    "tool_name",
    "result",
    "text",
    "text",
    "text",
    "command_normalized",
    "programs",
    "argv",
    "pipelines",
    "written_paths",
    "read_paths",
    "cwd",
)


def _command_both(obs: Observation) -> str | None:
    """The ``command`` field: the raw command and, when it differs, the normalised one on
    the following line(s), so every command rule sees both forms."""
    normalized = obs.command_normalized
    if normalized is None:
        return obs.command
    command = obs.command
    return normalized if not command else f"{command}\n{normalized}"


def _command_normalized(obs: Observation) -> str | None:
    normalized = obs.command_normalized
    return obs.command if normalized is None else normalized


#: How each field's value is read from an observation (index: field id).
FIELD_GETTERS: tuple[Callable[[Observation], str | None], ...] = tuple(
    _command_both if fid == 0 else _command_normalized if fid == 9 else attrgetter(attr)
    for fid, attr in enumerate(FIELD_ATTRS)
)

#: Observation kinds, by the rule fields they carry (see :func:`field_kind`).
KIND_NONE = 0
KIND_TOOL_REQUEST = 1
KIND_TOOL_RESULT = 2
KIND_ASSISTANT = 3
KIND_INJECTED = 4
KIND_USER = 5
#: The field ids each kind carries, in evaluation order (index: kind).
KIND_FIELDS: tuple[tuple[int, ...], ...] = (
    (),
    (COMMAND, ARGUMENTS, FILE_PATH, URL, TOOL_NAME, COMMAND_NORMALIZED, PROGRAM, ARGV, PIPELINE, WRITTEN_PATH,
     READ_PATH, CWD),
    (TOOL_RESULT, TOOL_NAME),
    (ASSISTANT_CONTEXT,),
    (INJECTED_CONTEXT,),
    (USER_CONTEXT,),
)

_INJECTED_ROLES = frozenset({"system", "developer"})
# Module constants: an enum member lookup per observation is measurable on the hot path.
_TOOL = Family.TOOL
_MESSAGE = Family.MESSAGE
_RESULT = Stage.RESULT


def field_kind(obs: Observation) -> int:
    """Which rule fields ``obs`` carries, as an index into :data:`KIND_FIELDS`.

    A tool observation without a stage counts as a request. Usage, session and other
    families carry no matchable text.
    """
    family = obs.family
    if family is _TOOL:
        return KIND_TOOL_RESULT if obs.stage is _RESULT else KIND_TOOL_REQUEST
    if family is _MESSAGE:
        role = obs.role
        if role == "assistant":
            return KIND_ASSISTANT
        if obs.injected or role in _INJECTED_ROLES:
            return KIND_INJECTED
        if role == "user":
            return KIND_USER
    return KIND_NONE


def field_values(obs: Observation) -> tuple[tuple[int, str | None], ...]:
    """The rule fields an observation carries, as ``(field index, value)`` pairs.

    Values may be ``None``; callers skip those.
    """
    return tuple((fid, FIELD_GETTERS[fid](obs)) for fid in KIND_FIELDS[field_kind(obs)])


def case_observation(
    fields: Mapping[str, str],
    *,
    session_id: str,
    client: str,
    sequence: int,
    occurred_at: str | None,
    source_kind: str = "test.case",
) -> Observation:
    """Build the synthetic observation a rule test case describes (inverse of :func:`field_values`).

    ``fields`` maps rule field names to values; they must all belong to one observation
    (one tool request, one tool result, or one message). Raises ``ValueError`` otherwise.
    """
    names = set(fields)
    unknown = names - set(FIELD_NAMES) - {"file_access"}
    if unknown or names & DERIVED_FIELDS:
        unknown = unknown or names & DERIVED_FIELDS
        raise ValueError(f"unknown field {sorted(unknown)[0]!r}")
    kw: dict[str, object] = {}
    if names and names <= REQUEST_FIELDS:
        kw = {
            "family": Family.TOOL,
            "stage": Stage.REQUESTED,
            "command": fields.get("command"),
            "arguments": fields.get("arguments"),
            "file_path": fields.get("file_path"),
            "url": fields.get("url"),
            "tool_name": fields.get("tool_name"),
            "cwd": fields.get("cwd"),
            "file_access": fields.get("file_access"),
        }
    elif names and names <= {"tool_result", "tool_name"}:
        kw = {
            "family": Family.TOOL,
            "stage": Stage.RESULT,
            "result": fields["tool_result"],
            "tool_name": fields.get("tool_name"),
        }
    elif names == {"user_context"}:
        kw = {"family": Family.MESSAGE, "role": "user", "text": fields["user_context"]}
    elif names == {"assistant_context"}:
        kw = {"family": Family.MESSAGE, "role": "assistant", "text": fields["assistant_context"]}
    elif names == {"injected_context"}:
        kw = {"family": Family.MESSAGE, "role": "user", "injected": True, "text": fields["injected_context"]}
    else:
        raise ValueError("fields " + ", ".join(sorted(names)) + " do not belong to one observation")
    path = f"case://{session_id}"
    # A case goes through the normalisation stage, as an acquired observation does.
    # Imported here: the normaliser loads tree-sitter-bash, which finding the pack's files
    # (a no-change scan imports this module through the rule loader) never needs.
    from telltale.normalize.stage import normalize_observation

    return normalize_observation(make_observation(
        adapter=source_kind,
        source_identity=path,
        coordinate=f"seq:{sequence}",
        client=client,
        session_id=session_id,
        sequence=sequence,
        occurred_at=occurred_at,
        provenance=Provenance(source_kind=source_kind, path=path, line=sequence),
        **{k: v for k, v in kw.items() if v is not None},
    ))
