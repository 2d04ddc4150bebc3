"""PowerShell, where reading it is cheap: encoded commands, concatenated strings, ``iex``.

Not a PowerShell parser: a few bounded rewrites that undo the common hiding tricks —
``-EncodedCommand`` (base64 of UTF-16LE), backtick escapes inside names (``i`e`x``),
string concatenation (``'Down'+'loadString'``), ``[char]`` codes, ``FromBase64String``
literals and ``-f`` format strings — and spell the download-and-run cmdlets by their
full names, so rules see ``Invoke-Expression`` however it was written.
"""

from __future__ import annotations

import re

from telltale import lazyre
from telltale.normalize import decode

_PS_PROGRAMS = frozenset({"powershell", "pwsh", "powershell_ise"})
#: ``-EncodedCommand`` and every prefix PowerShell accepts for it (``-e``, ``-enc``, ``-ec``).
_ENCODED_OPT = lazyre.compile(
    r"(?i)\A[-/]e(?:n(?:c(?:o(?:d(?:e(?:d(?:c(?:o(?:m(?:m(?:a(?:n(?:d)?)?)?)?)?)?)?)?)?)?)?)?|c)?\Z"
)
_COMMAND_OPT = lazyre.compile(r"(?i)\A[-/]c(?:o(?:m(?:m(?:a(?:n(?:d)?)?)?)?)?)?\Z")
_MARKERS = lazyre.compile(
    r"(?i)(\biex\b|invoke-expression|invoke-webrequest|\biwr\b|\birm\b|invoke-restmethod|downloadstring|"
    r"downloadfile|frombase64string|-enc(odedcommand)?\b|net\.webclient|start-process|\[char\]|`[a-z]|"
    r"['\"]\s*\+\s*['\"]|-join\b|\bset-content\b|\bget-content\b|\$env:)"
)
_TICK = lazyre.compile(r"`(?=[A-Za-z0-9\-])")
_CONCAT = lazyre.compile(r"(['\"])([^'\"\n]*)\1\s*\+\s*(['\"])([^'\"\n]*)\3")
_CHAR = lazyre.compile(r"(?i)\[char\]\s*(0x[0-9a-f]+|\d{1,5})")
_B64_CALL = lazyre.compile(r"(?i)frombase64string\s*\(\s*['\"]([A-Za-z0-9+/=\s]{8,})['\"]\s*\)")
_FORMAT = lazyre.compile(r"(['\"])((?:[^'\"]*\{\d+\}[^'\"]*)+)\1\s*-f\s*((?:['\"][^'\"]*['\"]\s*,?\s*)+)", re.I)
_ALIASES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (lazyre.compile(rf"(?i)(?<![\w-]){alias}(?![\w-])"), full)
    for alias, full in (
        ("iex", "Invoke-Expression"),
        ("iwr", "Invoke-WebRequest"),
        ("irm", "Invoke-RestMethod"),
        ("wget", "Invoke-WebRequest"),
        ("saps", "Start-Process"),
        ("gc", "Get-Content"),
        ("sc", "Set-Content"),
        ("ac", "Add-Content"),
    )
)
_ASSIGN = lazyre.compile(r"\$(\w{1,64})\s*=\s*'([^'\n]{0,256})'\s*(?:;|\n|$)")
_USE = lazyre.compile(r"\$(\w{1,64})\b(?!\s*=)")
#: Rewrites of one text at most (each is a bounded regex pass).
_MAX_ROUNDS = 16


def is_powershell_program(program: str) -> bool:
    return program in _PS_PROGRAMS


#: Substrings (lower case) one of which every match of ``_MARKERS`` contains: a cheap
#: first test, since nearly no command is PowerShell.
_MARKER_PARTS = ("iex", "invoke-", "iwr", "irm", "download", "frombase64", "-enc", "webclient", "start-process",
                 "[char]", "`", "+", "-join", "-content", "$env:")


def powershell_like(text: str) -> bool:
    """Whether ``text`` has a PowerShell hiding or download-and-run trick worth rewriting."""
    low = text.lower()
    for part in _MARKER_PARTS:
        if part in low:
            return _MARKERS.search(text) is not None
    return False


def _char(m: re.Match[str]) -> str:
    raw = m.group(1)
    try:
        code = int(raw, 16) if raw.lower().startswith("0x") else int(raw)
        return "'" + chr(code).replace("'", "''") + "'"
    except (ValueError, OverflowError):
        return m.group(0)


def _format(m: re.Match[str]) -> str:
    args = re.findall(r"['\"]([^'\"]*)['\"]", m.group(3))
    try:
        return "'" + re.sub(r"\{(\d+)\}", lambda x: args[int(x.group(1))], m.group(2)) + "'"
    except IndexError:
        return m.group(0)


def rewrite(text: str) -> str:
    """One PowerShell text with its hiding tricks undone (bounded rounds of rewrites)."""
    text = _TICK.sub("", text)
    text = _CHAR.sub(_char, text)
    for _ in range(_MAX_ROUNDS):
        joined = _CONCAT.sub(lambda m: m.group(1) + m.group(2) + m.group(4) + m.group(1), text)
        joined = _FORMAT.sub(_format, joined)
        if joined == text:
            break
        text = joined
    text = _substitute_variables(text)
    for pattern, full in _ALIASES:
        text = pattern.sub(full, text)
    return text


def _substitute_variables(text: str) -> str:
    """``$c = 'iex'; & $c …`` → ``& 'iex' …``: string variables assigned earlier in the text."""
    values: dict[str, str] = {}
    for m in _ASSIGN.finditer(text):
        values.setdefault(m.group(1).lower(), m.group(2))
    if not values:
        return text
    return _USE.sub(lambda m: "'" + values[m.group(1).lower()] + "'" if m.group(1).lower() in values else m.group(0),
                    text)


def normalize_powershell(text: str, encoded_args: list[str] | None = None) -> list[str]:
    """PowerShell texts hidden in ``text``: itself rewritten, then every decoded payload.

    ``encoded_args`` are a ``powershell``/``pwsh`` invocation's arguments, searched for
    ``-EncodedCommand`` (any unambiguous prefix, ``-e``, ``-ec``) and ``-Command``.
    """
    out: list[str] = []
    pending: list[str] = []
    if encoded_args:
        for i, word in enumerate(encoded_args):
            if i + 1 >= len(encoded_args):
                break
            if _ENCODED_OPT.match(word):
                decoded = decode.b64(encoded_args[i + 1])
                if decoded is not None:
                    pending.append(decoded)
            elif _COMMAND_OPT.match(word):
                pending.append(" ".join(encoded_args[i + 1 :]))
    if not pending:
        pending.append(text)
    budget = decode.MAX_DECODED * 2
    rounds = 0
    while pending and rounds < 8 and budget > 0:
        rounds += 1
        current = pending.pop(0)[:budget]
        rewritten = rewrite(current)
        budget -= len(rewritten)
        out.append(rewritten)
        for m in _B64_CALL.finditer(rewritten):
            decoded = decode.b64(m.group(1))
            if decoded is not None:
                pending.append(decoded)
    return out
