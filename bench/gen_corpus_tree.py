"""Build a home directory from the real corpus (``/work/shared/corpus``), copied ``--copies`` times.

Each agent's files go to its real layout (as ``tests/test_corpus_scan.py`` lays them out);
every copy gets its own project, session or agent directory, so each file is a source of
its own. The OpenCode database is copied once (its discovery reads one database per
data directory). Nothing of the corpus is written into the repository.

``--agents claude`` lays out one agent's files only (the Claude-only variant of the
benchmarks); ``--size-mb`` picks the number of copies that reaches a size.

    python bench/gen_corpus_tree.py CORPUS HOME [--copies 12 | --size-mb 54] [--agents claude,codex]
"""

from __future__ import annotations

import argparse
import math
import shutil
from collections.abc import Collection
from pathlib import Path

#: The agents this generator lays out (names for ``--agents``).
AGENTS = ("claude", "codex", "qwen", "openclaw", "copilot", "cursor", "gemini", "opencode")


def _copy(src: Path, dest: Path) -> int:
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dest)
    return src.stat().st_size


def build(corpus: Path, home: Path, copies: int = 1, agents: Collection[str] = AGENTS) -> int:
    """Lay the corpus out under ``home``, ``copies`` times; the bytes written."""
    total = 0
    for k in range(copies):
        total += _one_copy(corpus, home, k, agents)
    if "opencode" in agents:
        for path in (corpus / "opencode").rglob("opencode.db"):
            total += _copy(path, home / ".local" / "share" / "opencode" / "opencode.db")
            break
    return total


def copies_for(corpus: Path, size_mb: float, agents: Collection[str] = AGENTS) -> int:
    """How many copies of the corpus reach ``size_mb`` (at least one)."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        one = _one_copy(corpus, Path(tmp), 0, agents)
    return max(1, math.ceil(size_mb * 1e6 / max(one, 1)))


def _one_copy(corpus: Path, home: Path, k: int, agents: Collection[str]) -> int:
    total = 0
    if "claude" in agents:
        for path in (corpus / "claude-code").rglob("*.jsonl"):
            parts = path.relative_to(corpus / "claude-code").parts
            slug = parts[2] if parts[1:2] == ("projects",) else f"-corpus-{parts[0]}"
            tail = parts[3:] if parts[1:2] == ("projects",) else parts[1:]
            total += _copy(path, home / ".claude" / "projects" / f"{slug}-{k}" / Path(*tail))
    if "codex" in agents:
        for i, path in enumerate(sorted((corpus / "codex").rglob("*.jsonl"))):
            if path.name != "history.jsonl":
                day = home / ".codex" / "sessions" / "2026" / f"{k // 28 + 1:02d}" / f"{k % 28 + 1:02d}"
                total += _copy(path, day / f"{i:02d}-{path.name}")
    if "qwen" in agents:
        for path in (corpus / "qwen-code").rglob("chats/*.jsonl"):
            project = f"{path.parent.parent.name}-{k}"
            total += _copy(path, home / ".qwen" / "projects" / project / "chats" / path.name)
    if "openclaw" in agents:
        for path in (corpus / "openclaw").rglob("*"):
            if path.is_file() and "/agents/" in str(path):
                rel = str(path).split("/agents/", 1)[1]
                owner = path.relative_to(corpus / "openclaw").parts[0]
                total += _copy(path, home / ".openclaw" / "agents" / f"{owner}-{k}-{rel}")
    if "copilot" in agents:
        for path in (corpus / "copilot-cli").rglob("events.jsonl"):
            total += _copy(path, home / ".copilot" / "session-state" / f"{path.parent.name}-{k}" / "events.jsonl")
        for path in (corpus / "copilot-cli").rglob("logs/process-*.log"):
            # project-local: ``~/projects/<repo>/logs/copilot`` is a default project root
            total += _copy(path, home / "projects" / f"corpus-{k}" / "logs" / "copilot" / path.name)
    if "cursor" in agents:
        for path in (corpus / "cursor").rglob("*.jsonl"):
            rel = path.relative_to(corpus / "cursor").parts
            project = rel[2] if rel[1:2] == ("projects",) else rel[0]
            total += _copy(path, home / ".cursor" / "projects" / f"{project}-{k}" / Path(*rel[3:]))
    if "gemini" in agents:
        for path in (corpus / "gemini-cli").rglob("chats/*.jsonl"):
            project = f"{path.parent.parent.name}-{k}"
            total += _copy(path, home / ".gemini" / "tmp" / project / "chats" / path.name)
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("home", type=Path)
    parser.add_argument("--copies", type=int, default=12)
    parser.add_argument("--size-mb", type=float, default=None, help="copies enough to reach this size")
    parser.add_argument("--agents", default=",".join(AGENTS), help=f"comma-separated, of {','.join(AGENTS)}")
    args = parser.parse_args()
    agents = [a for a in args.agents.split(",") if a]
    copies = copies_for(args.corpus, args.size_mb, agents) if args.size_mb else args.copies
    size = build(args.corpus, args.home, copies, agents)
    print(f"{size / 1e6:.1f} MB in {args.home}")


if __name__ == "__main__":
    main()
