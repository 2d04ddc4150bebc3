"""Canonical observation model shared by every source adapter.

Adapters translate vendor records into these types and nothing downstream knows a
vendor field name. Canonical bounds are enforced here, in one place: a value over its
bound is never truncated silently; ``BoundExceeded`` is raised and the adapter
quarantines the record that carried it.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

from telltale.digest import blake2b

#: Ordinary canonical strings (names, ids, paths, models, ...), in UTF-8 bytes.
STRING_BOUND = 4_096
#: Authored text (shell commands, written file content, edit strings, prompts) and
#: direct message / tool-result text, in UTF-8 bytes.
AUTHORED_TEXT_BOUND = 65_536
#: Nesting depth accepted in structured tool arguments.
MAX_ARGUMENT_DEPTH = 32


class Family(enum.StrEnum):
    MESSAGE = "message"
    TOOL = "tool"
    USAGE = "usage"
    SESSION = "session"
    OTHER = "other"


class Stage(enum.StrEnum):
    REQUESTED = "requested"
    RESULT = "result"


class Coverage(enum.StrEnum):
    """How much of a source an acquisition accounts for."""

    COMPLETE = "complete"
    PARTIAL = "partial"
    EMPTY = "empty"


class BoundExceeded(ValueError):
    """A value is larger than its canonical bound; the carrying record is quarantined."""

    def __init__(self, field: str, bound: int, size: int) -> None:
        super().__init__(f"{field} is {size} bytes, over the {bound}-byte canonical bound")
        self.field = field
        self.bound = bound
        self.size = size


class TokenUsage(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, gc=False):
    """Token counts of one model response, in OpenTelemetry GenAI meaning.

    ``input_tokens`` counts every input token, cached ones included; the cache fields
    are parts of it. ``output_tokens`` includes reasoning tokens.
    """

    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_input_tokens: int | None = None
    cache_creation_input_tokens: int | None = None
    reasoning_output_tokens: int | None = None
    total_tokens: int | None = None

    def is_empty(self) -> bool:
        return all(
            v is None
            for v in (
                self.input_tokens,
                self.output_tokens,
                self.cache_read_input_tokens,
                self.cache_creation_input_tokens,
                self.reasoning_output_tokens,
                self.total_tokens,
            )
        )


class Provenance(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, gc=False):
    """Where a fact came from: enough to find the native record again, never its content."""

    source_kind: str
    path: str
    line: int | None = None
    offset: int | None = None
    row: str | None = None
    record_id: str | None = None


class Observation(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One canonical fact about agent activity.

    Build with :func:`make_observation`, which enforces the canonical bounds and
    derives the deterministic ``observation_id``.
    """

    observation_id: str
    family: Family
    client: str
    source_kind: str
    sequence: int
    provenance: Provenance
    session_id: str | None = None
    stage: Stage | None = None
    role: str | None = None
    agent: str | None = None
    model: str | None = None
    provider: str | None = None
    occurred_at: str | None = None
    cwd: str | None = None
    text: str | None = None
    injected: bool = False
    tool_name: str | None = None
    call_id: str | None = None
    arguments: str | None = None
    command: str | None = None
    file_path: str | None = None
    #: What the tool does with ``file_path``: ``"read"`` or ``"write"`` (the adapter's facet;
    #: ``None``: not said, the normalisation stage decides from the arguments).
    file_access: str | None = None
    url: str | None = None
    result: str | None = None
    exit_code: int | None = None
    is_error: bool | None = None
    interrupted: bool = False
    usage: TokenUsage | None = None
    #: The agent's own identity of the provider response a usage observation counts
    #: (Claude: ``message.id:requestId``): the read side counts each response once by it.
    response_id: str | None = None
    parent_session_id: str | None = None
    parent_call_id: str | None = None
    ambiguous: tuple[str, ...] = ()
    attributes: dict[str, str] = {}
    # -- set by the normalisation stage (telltale.normalize.stage), never by adapters --
    #: The command as the shell will run it, when that differs from ``command`` (decoded
    #: payloads and re-parsed strings on their own lines); a written shell script's too.
    command_normalized: str | None = None
    #: Newline-separated lists, one item per line:
    #: resolved program of every simple command (wrappers included),
    programs: str | None = None
    #: argv of every simple command after wrappers (words joined by spaces),
    argv: str | None = None
    #: the programs of every pipeline of two stages or more, joined by ``|``,
    pipelines: str | None = None
    #: files written (redirections, ``tee``/``cp``/``sed -i`` targets, file tools' written paths),
    written_paths: str | None = None
    #: files read (reading commands' operands, upload sources, file tools' read paths).
    read_paths: str | None = None


class Quarantine(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One native record set aside, named by coordinate and reason, never by content."""

    source_kind: str
    path: str
    reason: str
    session_id: str | None = None
    record_id: str | None = None
    sequence: int | None = None
    line: int | None = None
    offset: int | None = None
    row: str | None = None
    field: str | None = None
    bound: int | None = None


# Fields whose canonical bound is the authored-text budget.
_AUTHORED_FIELDS = frozenset({"text", "result", "command"})
# Fields checked against the ordinary string bound.
_STRING_FIELDS = (
    "session_id",
    "role",
    "agent",
    "model",
    "provider",
    "occurred_at",
    "cwd",
    "tool_name",
    "call_id",
    "file_path",
    "url",
    "parent_session_id",
    "parent_call_id",
    "response_id",
)


# The bound of every string field of an Observation.
_BOUNDS: dict[str, int] = {
    **dict.fromkeys(_STRING_FIELDS, STRING_BOUND),
    **dict.fromkeys(_AUTHORED_FIELDS, AUTHORED_TEXT_BOUND),
    # The arguments document carries authored leaves, so its envelope shares that budget
    # plus room for the ordinary leaves around them.
    "arguments": AUTHORED_TEXT_BOUND + STRING_BOUND,
}


#: No string of at most this many characters can exceed any bound (4 UTF-8 bytes each at most).
_SHORT = STRING_BOUND // 4
_blake2b = blake2b
_BLAKE2B_16 = blake2b(digest_size=16)


def utf8_len(value: str) -> int:
    """UTF-8 byte length without allocating for pure-ASCII fast paths."""
    if value.isascii():
        return len(value)
    return len(value.encode("utf-8", "surrogatepass"))


def check_bound(field: str, value: str | None, bound: int) -> None:
    # len(value) * 4 >= utf8 length: skip the encode for short strings.
    if value is not None and len(value) * 4 > bound and utf8_len(value) > bound:
        raise BoundExceeded(field, bound, utf8_len(value))


def observation_id(adapter: str, source_identity: str, coordinate: str) -> str:
    """Deterministic id: re-reading the same native record yields the same id."""
    if adapter.isascii():
        # One update over one joined text: the same bytes as the parts in turn. A text that
        # cannot be encoded takes the part-by-part path, which raises the error it always did.
        try:
            data = (adapter + "\x1f" + source_identity + "\x1f" + coordinate).encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:
            pass
        else:
            digest = _BLAKE2B_16.copy()  # cheaper than a constructor call with its keyword
            digest.update(data)
            return digest.hexdigest()
    digest = _blake2b(digest_size=16)
    digest.update(adapter.encode())
    digest.update(b"\x1f")
    digest.update(source_identity.encode("utf-8", "surrogateescape"))
    digest.update(b"\x1f")
    digest.update(coordinate.encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


_json_encoder = msgspec.json.Encoder(order="deterministic")


def encode_arguments(
    arguments: Mapping[str, Any] | list[Any] | str | None,
    authored_keys: Iterable[str] = (),
) -> str | None:
    """Canonical JSON text of tool arguments, each leaf checked against its bound.

    Top-level keys named in ``authored_keys`` get the authored-text budget; every other
    string leaf gets the ordinary string bound. A string argument (free-form tool input)
    gets the authored-text budget when ``authored_keys`` contains ``"*"``.
    """
    if arguments is None:
        return None
    if isinstance(arguments, str):
        if len(arguments) <= _SHORT:
            return arguments  # within every bound, whatever the budget
        check_bound("arguments", arguments, AUTHORED_TEXT_BOUND if "*" in frozenset(authored_keys) else STRING_BOUND)
        return arguments
    try:
        encoded: bytes | None = _json_encoder.encode(arguments)
    except Exception:  # raised again below, after the bound checks, as before
        encoded = None
    # A document of at most STRING_BOUND bytes holds no string (key or leaf) over any bound,
    # and one with fewer brackets than MAX_ARGUMENT_DEPTH nests no deeper: only a document
    # that could fail pays for the walk, which raises exactly what it always raised.
    if (
        encoded is None
        or len(encoded) > STRING_BOUND
        or (not _flat(arguments) and encoded.count(b"{") + encoded.count(b"[") > MAX_ARGUMENT_DEPTH)
    ):
        _check_leaves(arguments, "arguments", frozenset(authored_keys), 0)
        if encoded is None:
            encoded = _json_encoder.encode(arguments)
    return encoded.decode("utf-8")


#: Scalar types of decoded JSON.
_SCALARS = frozenset({str, int, float, bool, type(None)})


def _flat(value: Any) -> bool:
    """A dict or list of scalars: one level deep, far within the depth bound (most tool
    arguments are; a loop over a few values costs less than counting brackets, and less
    than ``all()`` over a generator)."""
    items: Iterable[Any]
    if value.__class__ is dict:
        items = value.values()
    elif value.__class__ is list:
        items = value
    else:
        return False
    for item in items:  # noqa: SIM110
        if item.__class__ not in _SCALARS:
            return False
    return True


def _check_leaves(value: Any, path: str, authored: frozenset[str], depth: int) -> None:
    if depth > MAX_ARGUMENT_DEPTH:
        raise BoundExceeded(path, MAX_ARGUMENT_DEPTH, depth)
    if isinstance(value, str):
        check_bound(path, value, STRING_BOUND)
    elif isinstance(value, Mapping):
        for key, item in value.items():
            check_bound(f"{path}.key", str(key), STRING_BOUND)
            child = f"{path}.{key}"
            if depth == 0 and key in authored and isinstance(item, str):
                check_bound(child, item, AUTHORED_TEXT_BOUND)
            else:
                _check_leaves(item, child, authored, depth + 1)
    elif isinstance(value, list | tuple):
        for item in value:
            _check_leaves(item, f"{path}[]", authored, depth + 1)


def make_observation(
    *,
    adapter: str,
    source_identity: str,
    coordinate: str,
    **fields: Any,
) -> Observation:
    """Build an Observation, enforcing every canonical bound.

    ``adapter`` is the source kind that produced it, ``source_identity`` a stable name
    of the store (its path), ``coordinate`` the native position of the fact inside it
    (for example ``"line:12:tool_use:toolu_1"``). Raises :class:`BoundExceeded`.
    """
    for name, value in fields.items():
        # Only strings long enough to possibly exceed a bound pay for a byte count.
        if value.__class__ is str and len(value) > _SHORT:
            bound = _BOUNDS.get(name)
            if bound is not None:
                check_bound(name, value, bound)
    attributes = fields.get("attributes")
    if attributes:
        check_attributes(attributes)
    if "source_kind" not in fields:
        fields["source_kind"] = adapter
    return Observation(
        observation_id=observation_id(adapter, source_identity, coordinate),
        **fields,
    )


class ObservationTemplate:
    """Fields shared by many observations (one session, one record), bound-checked once.

    ``make_observation`` takes every field as a keyword on each call; in a transcript most
    of them repeat, and passing them costs more than building the observation. A hot
    adapter builds a template per set of shared fields and derives each observation with
    ``msgspec.structs.replace(template.observation, observation_id=template.observation_id(c), ...)``
    after three checks, in this order, which give exactly what ``make_observation`` with
    the shared fields first and the own fields after would raise:

    1. ``template.error``: the first shared string field over its bound, or ``None``;
    2. :func:`check_field` on each own string field, in order;
    3. ``template.attribute_error``: the first attribute over its bound, or ``None``.

    ``observation`` carries placeholder ``observation_id``/``family``/``sequence`` (and a
    placeholder ``provenance`` unless one is shared): every derived observation sets them.
    """

    __slots__ = ("adapter", "attribute_error", "error", "observation", "prefix", "source_identity")

    def __init__(self, adapter: str, source_identity: str, **shared: Any) -> None:
        self.adapter = adapter
        self.source_identity = source_identity
        self.error: BoundExceeded | None = None
        self.attribute_error: BoundExceeded | None = None
        try:
            for name, value in shared.items():
                if value.__class__ is str and len(value) > _SHORT:
                    bound = _BOUNDS.get(name)
                    if bound is not None:
                        check_bound(name, value, bound)
        except BoundExceeded as exc:
            self.error = exc
        attributes = shared.get("attributes")
        if attributes:
            try:
                check_attributes(attributes)
            except BoundExceeded as exc:
                self.attribute_error = exc
        shared.setdefault("source_kind", adapter)
        shared.setdefault("family", Family.OTHER)
        shared.setdefault("sequence", 0)
        shared.setdefault("provenance", _NO_PROVENANCE)
        self.observation = Observation(observation_id="", **shared)
        #: The id's hash state after the bytes before the coordinate (copying it is cheaper
        #: than hashing them again); ``None`` when they cannot be encoded, so that
        #: ``observation_id`` raises there exactly as ``make_observation`` would.
        self.prefix: blake2b | None = None
        if adapter.isascii():
            try:
                data = (adapter + "\x1f" + source_identity + "\x1f").encode("utf-8", "surrogateescape")
            except UnicodeEncodeError:
                pass
            else:
                self.prefix = _blake2b(data, digest_size=16)

    def observation_id(self, coordinate: str) -> str:
        """``observation_id(adapter, source_identity, coordinate)`` with the prefix hashed once."""
        return template_observation_id(self, coordinate)


def template_observation_id(template: ObservationTemplate, coordinate: str) -> str:
    """``template.observation_id(coordinate)`` as a plain function (hot loops skip the method lookup)."""
    digest = template.prefix
    if digest is None:
        return observation_id(template.adapter, template.source_identity, coordinate)
    digest = digest.copy()
    digest.update(coordinate.encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


def field_error(name: str, value: str) -> BoundExceeded | None:
    """The bound error of one own field of a templated observation, or ``None``."""
    try:
        check_field(name, value)
    except BoundExceeded as exc:
        return exc
    return None


def check_attributes(attributes: Mapping[str, str]) -> None:
    """``make_observation``'s check of an observation's attributes, each against the string bound."""
    for key, val in attributes.items():
        # The field name is built only for a value that may be over the bound.
        if val.__class__ is not str or len(val) > _SHORT:
            check_bound(f"attributes.{key}", val, STRING_BOUND)


def check_field(name: str, value: str | None) -> None:
    """``make_observation``'s check of one own string field of a templated observation."""
    if value is not None and len(value) > _SHORT:
        bound = _BOUNDS.get(name)
        if bound is not None:
            check_bound(name, value, bound)


_NO_PROVENANCE = Provenance(source_kind="", path="")


def iso_time(value: object) -> str | None:
    """Normalise a source timestamp to ISO-8601 UTC with milliseconds, or ``None``.

    Accepts ISO-8601 strings (``Z`` or an offset) and epoch numbers (seconds or
    milliseconds, told apart by magnitude). Never invents a time: unparseable input
    gives ``None``.
    """
    import datetime as _dt

    if value is None or isinstance(value, bool):
        return None
    try:
        if isinstance(value, int | float):
            seconds = float(value) / 1000.0 if abs(value) >= 1e11 else float(value)
            moment = _dt.datetime.fromtimestamp(seconds, tz=_dt.UTC)
        elif isinstance(value, str):
            text = value.strip()
            if not text or len(text) > 64:
                return None
            moment = _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=_dt.UTC)
        else:
            return None
        moment = moment.astimezone(_dt.UTC)
    except (ValueError, OverflowError, OSError):
        return None
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
