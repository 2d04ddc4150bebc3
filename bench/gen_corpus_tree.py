"""Build a home directory from the real corpus (``/work/shared/corpus``), copied ``--copies`` times.

Each agent's files go to its real layout (as ``tests/test_corpus_scan.py`` lays them out);
every copy gets its own project, session or agent directory, so each file is a source of
its own. The OpenCode database is copied once (its discovery reads one database per
data directory). Nothing of the corpus is written into the repository.

    python bench/gen_corpus_tree.py CORPUS HOME [--copies 12]
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path


def _copy(src: Path, dest: Path) -> int:
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dest)
    return src.stat().st_size


def build(corpus: Path, home: Path, copies: int = 1) -> int:
    """Lay the corpus out under ``home``, ``copies`` times; the bytes written."""
    total = 0
    for k in range(copies):
        for path in (corpus / "claude-code").rglob("*.jsonl"):
            parts = path.relative_to(corpus / "claude-code").parts
            slug = parts[2] if parts[1:2] == ("projects",) else f"-corpus-{parts[0]}"
            tail = parts[3:] if parts[1:2] == ("projects",) else parts[1:]
            total += _copy(path, home / ".claude" / "projects" / f"{slug}-{k}" / Path(*tail))
        for i, path in enumerate(sorted((corpus / "codex").rglob("*.jsonl"))):
            if path.name != "history.jsonl":
                total += _copy(path, home / ".codex" / "sessions" / "2026" / f"{k + 1:02d}" / f"{i:02d}" / path.name)
        for path in (corpus / "qwen-code").rglob("chats/*.jsonl"):
            project = f"{path.parent.parent.name}-{k}"
            total += _copy(path, home / ".qwen" / "projects" / project / "chats" / path.name)
        for path in (corpus / "openclaw").rglob("*"):
            if path.is_file() and "/agents/" in str(path):
                rel = str(path).split("/agents/", 1)[1]
                owner = path.relative_to(corpus / "openclaw").parts[0]
                total += _copy(path, home / ".openclaw" / "agents" / f"{owner}-{k}-{rel}")
        for path in (corpus / "copilot-cli").rglob("events.jsonl"):
            total += _copy(path, home / ".copilot" / "session-state" / f"{path.parent.name}-{k}" / "events.jsonl")
        for path in (corpus / "copilot-cli").rglob("logs/process-*.log"):
            # project-local: ``~/projects/<repo>/logs/copilot`` is a default project root
            total += _copy(path, home / "projects" / f"corpus-{k}" / "logs" / "copilot" / path.name)
    for path in (corpus / "opencode").rglob("opencode.db"):
        total += _copy(path, home / ".local" / "share" / "opencode" / "opencode.db")
        break
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("home", type=Path)
    parser.add_argument("--copies", type=int, default=12)
    args = parser.parse_args()
    size = build(args.corpus, args.home, args.copies)
    print(f"{size / 1e6:.1f} MB in {args.home}")


if __name__ == "__main__":
    main()
