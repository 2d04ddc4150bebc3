"""The normalisation stage: canonical meaning fields on each tool request.

Runs between acquisition and detection (the pipeline calls :func:`normalize_batch` on
each batch). A tool request with a shell command, or one that writes a shell script,
gets the command as the shell will run it and its programs, argv, pipelines and file
paths; a file tool's path goes to ``written_paths`` or ``read_paths`` by its access, so
rules test one field whether a shell redirection or an agent's Write tool wrote it.
Other observations pass through untouched (the same object).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import msgspec

from telltale import lazyre
from telltale.model import Family, Observation, Stage
from telltale.normalize.shell import DEFAULT_BOUNDS, Bounds, ShellFacts, normalize_shell

_TOOL = Family.TOOL
_RESULT = Stage.RESULT

#: Argument keys that carry content a file tool writes (any agent's spelling). A file tool
#: whose adapter did not say its access writes when its arguments have one of them.
_WRITE_KEYS = lazyre.compile(
    r'"(content|contents|new_string|newString|new_str|file_text|newText|new_content|new_source|patch|patchText|'
    r'edits|diff|text_to_insert|insert_text|code_edit|replacement|fileContent)"\s*:'
)
#: apply_patch headers (Codex, OpenCode and others use this patch format).
_PATCH_FILE = lazyre.compile(r"\*\*\* (?:Add|Update|Delete) File: ([^\n\"\\]+)|\*\*\* Move to: ([^\n\"\\]+)")
_SCRIPT_PATH = lazyre.compile(r"(?i)\.(sh|bash|zsh|ksh|command)$")
_SHEBANG_SHELL = lazyre.compile(r"\A#!\s*(/usr)?/bin/(env\s+)?(ba|z|k|da)?sh\b")
#: Written script bodies read at most (bytes of the arguments document decoded).
SCRIPT_ARGUMENTS_LIMIT = 262_144
_content_decoder = msgspec.json.Decoder()


def _lines(items: Iterable[str]) -> str | None:
    seen: dict[str, None] = {}
    for item in items:
        item = item.replace("\n", " ").strip()
        if item:
            seen.setdefault(item, None)
    return "\n".join(seen) if seen else None


def _written_script(obs: Observation) -> str | None:
    """The body of a shell script a file tool writes, when it writes one."""
    arguments = obs.arguments
    path = obs.file_path or ""
    if not arguments or len(arguments) > SCRIPT_ARGUMENTS_LIMIT:
        return None
    if not _SCRIPT_PATH.search(path) and "#!" not in arguments:
        return None
    try:
        args = _content_decoder.decode(arguments)
    except msgspec.DecodeError:
        return None
    if not isinstance(args, dict):
        return None
    for key in ("content", "contents", "file_text", "new_string", "newString", "new_str", "newText", "fileContent"):
        value = args.get(key)
        if isinstance(value, str) and value and (_SCRIPT_PATH.search(path) or _SHEBANG_SHELL.match(value)):
            return value
    return None


def facts_fields(facts: ShellFacts, raw: str | None) -> dict[str, str | None]:
    """The observation fields a :class:`ShellFacts` gives (see ``Observation``)."""
    normalized = facts.normalized
    same = raw is not None and (normalized == raw or "".join(normalized.split()) == "".join(raw.split()))
    return {
        "command_normalized": normalized if normalized and not same else None,
        "programs": _lines(p for p in facts.programs if p),
        "argv": _lines(" ".join(argv) for argv in facts.commands),
        "pipelines": _lines("|".join(p) for p in facts.pipelines if len(p) > 1),
        "written_paths": _lines(facts.writes),
        "read_paths": _lines(facts.reads),
    }


#: Commands remembered with their fields (agents run ``git status`` again and again).
#: A pure function's cache: it changes nothing but time.
COMMAND_CACHE_SIZE = 4_096
_cache: dict[tuple[str, Bounds], dict[str, str | None]] = {}


def _command_fields(command: str, bounds: Bounds) -> dict[str, str | None]:
    key = (command, bounds)
    found = _cache.get(key)
    if found is None:
        found = facts_fields(normalize_shell(command, bounds), command)
        if len(command) <= 4_096:
            if len(_cache) >= COMMAND_CACHE_SIZE:
                del _cache[next(iter(_cache))]
            _cache[key] = found
    return dict(found)


def normalize_observation(obs: Observation, bounds: Bounds = DEFAULT_BOUNDS) -> Observation:
    """``obs`` with its meaning fields set (the same object when it has none)."""
    if obs.family is not _TOOL or obs.stage is _RESULT:
        return obs
    command = obs.command
    path = obs.file_path
    arguments = obs.arguments
    if not command and not path and not (arguments and "*** " in arguments):
        return obs
    fields: dict[str, str | None] = {}
    writes: list[str] = []
    reads: list[str] = []
    if command:
        fields = _command_fields(command, bounds)
    access = obs.file_access
    if path or (arguments and "*** " in arguments):
        if access is None and arguments:
            access = "write" if _WRITE_KEYS.search(arguments) else None
        if arguments and "*** " in arguments:
            patched = [a or b for a, b in _PATCH_FILE.findall(arguments[:SCRIPT_ARGUMENTS_LIMIT])]
            if patched:
                writes.extend(p.strip() for p in patched)
                access = access or "write"
        if path:
            (writes if access == "write" else reads).append(path)
        if access == "write" and not command:
            script = _written_script(obs)
            if script is not None:
                facts = normalize_shell(script, bounds)
                fields = facts_fields(facts, None)
    if writes:
        fields["written_paths"] = _lines([*writes, *(fields.get("written_paths") or "").split("\n")])
    if reads:
        fields["read_paths"] = _lines([*reads, *(fields.get("read_paths") or "").split("\n")])
    if access is not None and obs.file_access is None and path:
        fields["file_access"] = access
    present = {k: v for k, v in fields.items() if v is not None}
    if not present:
        return obs
    return msgspec.structs.replace(obs, **present)


def normalize_batch(observations: Sequence[Observation], bounds: Bounds = DEFAULT_BOUNDS) -> list[Observation]:
    """Each observation of a batch with its meaning fields (see :func:`normalize_observation`).

    Only tool requests can change; the others are passed through without a call.
    """
    return [
        normalize_observation(obs, bounds) if obs.family is _TOOL and obs.stage is not _RESULT else obs
        for obs in observations
    ]
