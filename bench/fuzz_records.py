"""Per-record fault isolation under fuzzing: every adapter, real-shaped input, seeded.

    python bench/fuzz_records.py --lines 50000 [--seed 1] [--corpus /work/shared/corpus]

Takes the synthetic stores of ``tests/fixtures/session_stores`` (they mirror the agents'
real formats; ``--corpus`` adds real transcripts), mutates lines of each JSONL source in
place — and JSON columns of the SQLite stores' rows — with a seeded mutator (hostile
values: nesting ~1,000 deep, numbers outside float range, 400-digit integers, duplicate
keys, invalid UTF-8 in keys, lone surrogate escapes, a BOM, trailing commas; and plain
byte damage: flips, cuts, insertions), runs the source's adapter and encodes its
observations as the scan would. It counts:

* ``internal``: an exception other than a ``SourceError`` (must be 0);
* ``lost``: an event of an unmutated line (row) that the clean input had and the mutated
  input does not (must be 0);
* ``source_failed``: whole-source failures for the reasons the seed names (coordinate,
  ownership, identity conflict, a malformed first header), reported, not failures.

Each trial's seed is printed with any failure, so ``--replay SEED`` reruns it alone.
``tests/test_record_fuzz.py`` runs a smaller budget of the same mutator in the suite.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import shutil
import sqlite3
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures" / "session_stores"

#: Whole-source failures the seed allows for one bad record (ownership and coordinates).
SEED_REASONS = frozenset({"coordinate", "ownership", "identity_conflict", "wrapper"})

# -- hostile fragments ------------------------------------------------------------------

_DEEP_ARRAY = b"[" * 1000 + b"]" * 1000
_DEEP_OBJECT = b'{"a":' * 1000 + b"1" + b"}" * 1000
_FRAGMENTS: tuple[bytes, ...] = (
    _DEEP_ARRAY,
    _DEEP_OBJECT,
    b"[" * 40 + b"1" + b"]" * 40,  # over the argument depth bound, under the decoder's
    b"1e999",
    b"-1e999",
    b"1e-999",
    b"9" * 400,
    b"-" + b"9" * 5000,
    b'"\\ud800"',
    b'"a\\udc00b"',
    b'"\\ud83d\\ude00 ok"',
    b'"\\\\ud800 is text"',
    b"null",
    b"true",
    b"[]",
    b"{}",
    b'""',
    b"-0",
    b'"' + b"x" * 70_000 + b'"',
    b'"\xff\xfe"',
    b'"\xc3\x28"',
    b"NaN",
    b"[1,2,]",
    b'{"k":1,}',
)


def _leaves(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _leaves(item, (*path, index))


_MARK = "\x00fuzz\x00"


def _with_raw(obj: Any, path: tuple[Any, ...], raw: bytes) -> bytes:
    """``obj`` encoded with the value at ``path`` replaced by the raw JSON bytes ``raw``."""
    if not path:
        return raw
    target = obj
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = _MARK
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
    return text.replace(json.dumps(_MARK).encode(), raw, 1)


def _object_paths(obj: Any) -> list[tuple[Any, ...]]:
    return [p for p in _leaves(obj) if isinstance(_get(obj, p), dict)]


def _get(obj: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        obj = obj[step]
    return obj


def _insert_key(obj: Any, path: tuple[Any, ...], key_raw: bytes, value_raw: bytes) -> bytes:
    """Insert ``"key": value`` (raw bytes) into the object at ``path`` (after its own keys)."""
    target = _get(obj, path)
    target[_MARK] = 0
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
    return text.replace(json.dumps(_MARK).encode() + b":0", key_raw + b":" + value_raw, 1)


# -- strategies ---------------------------------------------------------------------------

Strategy = Callable[[bytes, Any, random.Random], bytes | None]


def _replace_value(line: bytes, obj: Any, rng: random.Random) -> bytes | None:
    if obj is None:
        return None
    paths = list(_leaves(obj))[1:]
    if not paths:
        return None
    return _with_raw(obj, rng.choice(paths), rng.choice(_FRAGMENTS))


def _duplicate_key(line: bytes, obj: Any, rng: random.Random) -> bytes | None:
    if obj is None:
        return None
    pairs = [(p, k) for p in _object_paths(obj) for k in _get(obj, p)]
    if not pairs:
        return None
    path, key = rng.choice(pairs)
    value = rng.choice((b'"other"', b"1", b"null", b"{}", b"[]", b"1e999"))
    return _insert_key(obj, path, json.dumps(key).encode(), value)


def _bad_key(line: bytes, obj: Any, rng: random.Random) -> bytes | None:
    if obj is None:
        return None
    paths = _object_paths(obj)
    if not paths:
        return None
    key = rng.choice((b'"k\xff"', b'"\xc3\x28"', b'"\\ud800"', b'"\xef\xbb\xbf"', b'"' + b"k" * 5000 + b'"'))
    return _insert_key(obj, rng.choice(paths), key, rng.choice((b"1", b'"v"', _DEEP_ARRAY, b"1e999")))


def _surrogate(line: bytes, obj: Any, rng: random.Random) -> bytes | None:
    starts = [i for i in range(len(line) - 1) if line[i : i + 2] == b':"']
    if not starts:
        return None
    at = rng.choice(starts) + 2
    return line[:at] + rng.choice((b"\\ud800", b"\\udfff", b"\\ud83d")) + line[at:]


def _bom(line: bytes, obj: Any, rng: random.Random) -> bytes | None:
    return b"\xef\xbb\xbf" + line


def _trailing_comma(line: bytes, obj: Any, rng: random.Random) -> bytes | None:
    closes = [i for i, c in enumerate(line) if c in b"}]"]
    if not closes:
        return None
    at = rng.choice(closes)
    return line[:at] + b"," + line[at:]


def _flip(line: bytes, obj: Any, rng: random.Random) -> bytes | None:
    if not line:
        return None
    data = bytearray(line)
    for _ in range(rng.randint(1, 4)):
        at = rng.randrange(len(data))
        data[at] = rng.choice((rng.randrange(256), data[at] ^ (1 << rng.randrange(8))))
    return bytes(data).replace(b"\n", b" ")


def _cut(line: bytes, obj: Any, rng: random.Random) -> bytes | None:
    if len(line) < 2:
        return None
    a = rng.randrange(len(line))
    b = min(len(line), a + rng.randint(1, 64))
    return line[:a] + line[b:]


def _insert(line: bytes, obj: Any, rng: random.Random) -> bytes | None:
    at = rng.randrange(len(line) + 1)
    junk = rng.choice((b"{", b"}", b"[", b'"', b"\\", b"\x00", b"\xff", b",", b":", b"\\u12", rng.choice(_FRAGMENTS)))
    return line[:at] + junk + line[at:]


def _whole(line: bytes, obj: Any, rng: random.Random) -> bytes | None:
    return rng.choice((b"[1,2,]", b"[]", b"{}", b"null", b"1e999", b"9" * 400, b'"x"', _DEEP_ARRAY, _DEEP_OBJECT,
                       b"{" * 3000, b"\xef\xbb\xbf{}", b"{}{}", line + line, line[: len(line) // 2]))


STRATEGIES: dict[str, Strategy] = {
    "replace_value": _replace_value,
    "duplicate_key": _duplicate_key,
    "bad_key": _bad_key,
    "surrogate": _surrogate,
    "bom": _bom,
    "trailing_comma": _trailing_comma,
    "flip": _flip,
    "cut": _cut,
    "insert": _insert,
    "whole": _whole,
}
#: Structural strategies weigh more: they keep the line JSON and reach deeper code.
_WEIGHTS = {"replace_value": 5, "duplicate_key": 2, "bad_key": 2, "surrogate": 2}


def mutate(line: bytes, rng: random.Random) -> tuple[str, bytes]:
    """One mutation of ``line`` (never the same bytes back, never a newline inside)."""
    try:
        obj = json.loads(line)
    except ValueError:
        obj = None
    names = list(STRATEGIES)
    weights = [_WEIGHTS.get(n, 1) for n in names]
    for _ in range(8):
        name = rng.choices(names, weights)[0]
        out = STRATEGIES[name](line, json.loads(line) if obj is not None else None, rng)
        if out is not None and out != line and b"\n" not in out:
            return name, out
    return "whole", b"[1,2,]"


# -- running an adapter ------------------------------------------------------------------


def _key(obs: Any) -> tuple[Any, ...]:
    prov = obs.provenance
    return (prov.line, prov.row, obs.family, obs.stage, obs.call_id)


#: Keys whose values tie records together (one response over several lines, a call and
#: its result): an event of a record tied to a mutated one may change with it.
_LINK_KEYS = frozenset({"id", "call_id", "callId", "toolCallId", "tool_use_id", "requestId", "messageId",
                        "tool_call_id", "responseId", "interactionId", "parentId"})


def _links(line: bytes) -> set[str]:
    """Identity tokens of a line (values of its id-like keys, at any depth)."""
    try:
        obj = json.loads(line)
    except ValueError:
        return set()
    out: set[str] = set()
    stack = [obj]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, value in item.items():
                if key in _LINK_KEYS and isinstance(value, str) and len(value) >= 4:
                    out.add(value)
                elif isinstance(value, str) and value[:1] in "{[":
                    with contextlib.suppress(ValueError):
                        stack.append(json.loads(value))  # JSON carried in a string (OpenCode rows)
                else:
                    stack.append(value)
        elif isinstance(item, list):
            stack.extend(item)
    return out


def _run(source: Any) -> tuple[list[Any], list[Any]]:
    from telltale.events.activity import activity_lines
    from telltale.sources.base import AcquireContext
    from telltale.sources.registry import adapter_for

    observations: list[Any] = []
    quarantined: list[Any] = []
    for batch in adapter_for(source.kind).acquire(source, None, AcquireContext()):
        # Encoded as the scan encodes them: a value an adapter let through must not fail here.
        activity_lines(batch.observations, "full", "2026-01-01T00:00:00Z")
        observations += batch.observations
        quarantined += batch.quarantined
    return observations, quarantined


@dataclass
class Tally:
    trials: int = 0
    mutated: int = 0
    internal: int = 0
    lost: int = 0
    source_failed: Counter[str] = field(default_factory=Counter)
    reasons: Counter[str] = field(default_factory=Counter)
    strategies: Counter[str] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)
    by_kind: Counter[str] = field(default_factory=Counter)

    def fail(self, text: str) -> None:
        if len(self.failures) < 20:
            self.failures.append(text)


def _log_record(line: bytes) -> bool:
    """A process-log line that is one record and no session marker."""
    return b"output items" in line and line.endswith(b"]") and b"Session completed" not in line


class _Jsonl:
    """A JSONL source whose lines are mutated in place (line numbers stay)."""

    def __init__(self, source: Any) -> None:
        self.source = source
        self.path = Path(source.path)
        self.clean = self.path.read_bytes()
        body = self.clean[:-1] if self.clean.endswith(b"\n") else self.clean
        self.lines = body.split(b"\n")
        self.links = [_links(line) for line in self.lines]
        observations, _ = _run(source)
        self.expected = Counter(_key(o) for o in observations)
        # A text process log's context lines (session start, end) frame the records
        # around them: only its JSON record lines are mutated.
        self.record_lines = [
            i for i, line in enumerate(self.lines)
            if line.strip() and (source.kind != "copilot.process_log" or _log_record(line))
        ]

    def trial(self, rng: random.Random, tally: Tally, seed: int) -> None:
        lines = list(self.lines)
        candidates = self.record_lines
        if not candidates:
            return
        count = max(1, min(len(candidates), rng.randint(1, max(1, len(candidates) // 3))))
        chosen = sorted(rng.sample(candidates, count))
        used: list[str] = []
        for i in chosen:
            if i > 0 and rng.random() < 0.1:
                name, lines[i] = "bom", _bom(lines[i], None, rng) or lines[i]
            else:
                name, lines[i] = mutate(lines[i], rng)
            used.append(name)
        self.path.write_bytes(b"\n".join(lines) + b"\n")
        mutated_lines = {i + 1 for i in chosen}
        tokens = set().union(*(self.links[i] for i in chosen))
        related = {n + 1 for n, links in enumerate(self.links) if links & tokens}
        if 0 in chosen:
            # The first line is a header where there is one (Codex session_meta): the
            # records naming its id (a thread id) belong to it.
            named = [t.encode() for t in self.links[0]]
            related |= {n + 1 for n, line in enumerate(self.lines) if any(t in line for t in named)}
        try:
            self._check(tally, seed, mutated_lines | related, used, tokens)
        finally:
            self.path.write_bytes(self.clean)
        tally.mutated += count
        tally.strategies.update(used)

    def _check(self, tally: Tally, seed: int, mutated: set[int], used: list[str], tokens: set[str]) -> None:
        _check(self.source, tally, seed, used, lambda key: key[0] not in mutated and key[4] not in tokens,
               self.expected, header_mutated=1 in mutated)


class _Sqlite:
    """A SQLite store whose rows' JSON columns are mutated (row keys stay).

    ``columns`` names, per table, the row key, the JSON column and the columns that tie a
    row to others (a part's message, a row's session): rows tied to a mutated row are
    part of the same record and may change with it.
    """

    def __init__(self, source: Any, columns: list[tuple[str, str, str, tuple[str, ...]]]) -> None:
        self.source = source
        self.path = Path(source.path)
        self.clean = self.path.read_bytes()
        conn = sqlite3.connect(self.path)
        self.rows: list[tuple[str, str, str, Any, Any, set[str]]] = []
        self.ties: dict[str, set[str]] = {}
        for table, key_col, col, tie_cols in columns:
            tie_sql = "".join(f", {c}" for c in tie_cols)
            try:
                found = conn.execute(f"SELECT rowid, {key_col}, {col}{tie_sql} FROM {table}").fetchall()
            except sqlite3.OperationalError:
                continue  # the table is not in this layout
            for rowid, key, value, *ties in found:
                tied = {str(key), *(str(t) for t in ties if t is not None)}
                self.rows.append((table, col, str(key), rowid, value, tied))
                self.ties[str(key)] = tied
        conn.close()
        observations, _ = _run(source)
        self.expected = Counter(_key(o) for o in observations)

    def trial(self, rng: random.Random, tally: Tally, seed: int) -> None:
        if not self.rows:
            return
        count = rng.randint(1, max(1, len(self.rows) // 3))
        chosen = rng.sample(self.rows, count)
        used: list[str] = []
        conn = sqlite3.connect(self.path, isolation_level=None)
        conn.execute("PRAGMA journal_mode=DELETE")
        tokens: set[str] = set()
        for table, col, _key_text, rowid, value, tied in chosen:
            raw = value.encode("utf-8", "surrogatepass") if isinstance(value, str) else bytes(value)
            tokens |= _links(raw) | tied
            name, new = mutate(raw, rng)
            used.append(name)
            try:
                text: Any = new.decode("utf-8")
            except UnicodeDecodeError:
                text = new  # stored as a BLOB: invalid UTF-8 reaches the adapter as bytes
            update = f"UPDATE {table} SET {col} = ? WHERE rowid = ?"
            try:
                conn.execute(update, (text, rowid))
            except sqlite3.IntegrityError:  # a STRICT TEXT column takes no BLOB
                conn.execute(update, (new.decode("utf-8", "replace"), rowid))
        conn.close()

        def unmutated(key: tuple[Any, ...]) -> bool:
            row = str(key[1] or "")
            own = row.split(":", 1)[-1]
            return not (own in tokens or self.ties.get(own, set()) & tokens or key[4] in tokens
                        or any(t in row for t in tokens if len(t) >= 4))

        try:
            _check(self.source, tally, seed, used, unmutated, self.expected, header_mutated=False)
        finally:
            self.path.write_bytes(self.clean)
        tally.mutated += count
        tally.strategies.update(used)


def _check(source: Any, tally: Tally, seed: int, used: list[str], unmutated: Callable[[tuple[Any, ...]], bool],
           expected: Counter[tuple[Any, ...]], *, header_mutated: bool) -> None:
    from telltale.errors import SourceError

    tally.trials += 1
    tally.by_kind[source.kind] += 1
    try:
        observations, quarantined = _run(source)
    except SourceError as exc:
        if exc.reason in SEED_REASONS and (exc.reason != "wrapper" or header_mutated):
            tally.source_failed[exc.reason] += 1
            return
        tally.internal += 1
        tally.fail(f"seed {seed} {source.kind}: SourceError {exc.reason}: {exc.detail} ({used})")
        return
    except Exception as exc:
        tally.internal += 1
        where = traceback.extract_tb(exc.__traceback__)[-1]
        tally.fail(f"seed {seed} {source.kind}: {type(exc).__name__} at {where.filename}:{where.lineno} ({used})")
        return
    tally.reasons.update(q.reason for q in quarantined)
    got = Counter(_key(o) for o in observations)
    for key, n in expected.items():
        if unmutated(key) and got[key] < n:
            tally.lost += n - got[key]
            tally.fail(f"seed {seed} {source.kind}: lost {key} ({used})")


def _sqlite_columns(kind: str) -> list[tuple[str, str, str, tuple[str, ...]]]:
    if kind == "opencode.sqlite":
        return [("message", "id", "data", ("session_id",)), ("part", "id", "data", ("message_id", "session_id")),
                ("session_message", "id", "data", ("session_id",))]
    if kind == "openclaw.sqlite":
        return [("transcript_events", "session_id || ':' || seq", "event_json", ("session_id",))]
    if kind == "crush.sqlite":
        return [("messages", "id", "parts", ("session_id",))]
    if kind == "goose.sqlite":
        return [("messages", "id", "content_json", ("session_id",))]
    return []


def _local_stores(root: Path) -> list[Any]:
    """Crush and Goose databases (project-local and home stores with no fixture tree
    entry), built with the tests' builders: tool calls, results and zstd parts included."""
    from build_crush import CrushDb
    from build_goose import GooseDb

    from telltale.sources.spec import RootType, Source

    crush = CrushDb(root / "crush" / ".crush" / "crush.db", wal=False)
    goose = GooseDb(root / "goose" / "sessions.db", wal=False)
    for sid in ("s1", "s2"):
        crush.session(sid)
        goose.session(sid)
        for n in (1, 2):
            crush.turn(sid, n, zstd=n == 2)
            goose.turn(sid, n)
    crush.close()
    goose.close()
    return [Source(client=client, kind=kind, path=str(path), root_type=RootType.HOME, store_root=str(path.parent),
                   found_by="fuzz")
            for client, kind, path in (("crush", "crush.sqlite", crush.path), ("goose", "goose.sqlite", goose.path))]


def build_targets(root: Path, corpus: Path | None = None) -> list[Any]:
    """Copy the fixture stores (and ``corpus``'s JSONL files) under ``root``; one target per source."""
    from telltale.discovery import DiscoveryOptions, discover

    tree = root / "tree"
    shutil.copytree(FIXTURES, tree)
    sql = tree / "openclaw" / "agents" / "main" / "agent" / "openclaw-agent.sql"
    if sql.exists():
        conn = sqlite3.connect(sql.with_suffix(".sqlite"))
        conn.executescript(sql.read_text(encoding="utf-8"))
        conn.close()
        sql.unlink()
    sys.path.insert(0, str(REPO / "tests" / "fixtures"))
    try:
        from build_opencode import build  # the v2 OpenCode layout (session_message rows)

        v2 = root / "v2" / "opencode"
        v2.mkdir(parents=True)
        build(v2 / "opencode.db", "both")
    except Exception:
        v2 = None
    try:
        local = _local_stores(root / "local")
    except Exception:
        local = []
    targets: list[Any] = []
    sources = list(discover(DiscoveryOptions(root=str(tree), env={})).sources)
    if v2 is not None:
        sources += discover(DiscoveryOptions(root=str(v2.parent), env={})).sources
    sources += local
    if corpus is not None:
        copied = root / "corpus"
        for path in sorted(corpus.rglob("*.jsonl"))[:200]:
            dest = copied / path.relative_to(corpus)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, dest)
        sources += discover(DiscoveryOptions(root=str(copied), env={})).sources
    for source in sources:
        try:
            if source.kind in ("opencode.sqlite", "openclaw.sqlite", "crush.sqlite", "goose.sqlite"):
                targets.append(_Sqlite(source, _sqlite_columns(source.kind)))
            elif source.path.endswith((".jsonl", ".log")) or ".jsonl." in source.path:
                targets.append(_Jsonl(source))
        except Exception:
            continue
    return targets


def fuzz(targets: list[Any], *, lines: int, seed: int, tally: Tally | None = None) -> Tally:
    """Mutate until ``lines`` lines (rows) were mutated, cycling over ``targets``."""
    tally = tally or Tally()
    master = random.Random(seed)
    while tally.mutated < lines:
        for target in targets:
            trial_seed = master.randrange(1 << 32)
            target.trial(random.Random(trial_seed), tally, trial_seed)
            if tally.mutated >= lines:
                break
    return tally


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", type=int, default=50_000, help="mutated lines (rows) to reach")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--corpus", type=Path, help="also fuzz the JSONL files of a real corpus")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        targets = build_targets(Path(tmp), args.corpus)
        started = time.perf_counter()
        tally = fuzz(targets, lines=args.lines, seed=args.seed)
        elapsed = time.perf_counter() - started
    print(f"targets: {len(targets)} sources; trials by kind: {dict(sorted(tally.by_kind.items()))}")
    print(f"mutated lines/rows: {tally.mutated} in {tally.trials} trials, {elapsed:.1f}s")
    print(f"internal errors: {tally.internal}; lost events of unmutated lines: {tally.lost}")
    print(f"whole-source failures for the seed's reasons: {dict(tally.source_failed)}")
    print(f"strategies: {dict(sorted(tally.strategies.items()))}")
    print(f"quarantine reasons: {dict(tally.reasons.most_common())}")
    for failure in tally.failures:
        print("FAIL", failure)
    return 1 if tally.internal or tally.lost else 0


if __name__ == "__main__":
    sys.exit(main())
