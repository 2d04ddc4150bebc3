"""Recall per attack class and alert rate per severity on the adversarial corpus.

Writes every session of ``tests/adversarial/sessions*.yaml`` as a real transcript of its
agent (Claude Code, Codex, Qwen Code, Copilot CLI; ``--all-formats`` writes each session
in all four), scans the tree through discovery, the adapters, the normalisation stage and
the default rule pack (the same pipeline as ``telltale scan``), and prints:

- per attack class: sessions, sessions with an alert of at least ``--min-severity``
  (default medium), recall;
- for the hard-benign sessions: the share with an alert of each severity or more;
- with ``--verbose``: each missed attack and each benign session that alerted.

    .venv/bin/python bench/bench_adversarial.py [--all-formats] [--min-severity medium] [--verbose]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from adversarial.render import FORMATS, load_sessions, session_uuid, write_session  # noqa: E402
from telltale.detect.model import SEVERITIES  # noqa: E402

RANK = {name: i for i, name in enumerate(SEVERITIES)}


def scan(home: Path, out: Path) -> dict[str, list[dict[str, Any]]]:
    """Scan ``home`` with the default pack; detection documents by session id."""
    from telltale.detect.engine import DetectionEngine
    from telltale.discovery import DiscoveryOptions, discover
    from telltale.pipeline import Scanner, ScanOptions

    sources = discover(DiscoveryOptions(root=str(home), env={})).sources
    options = ScanOptions(log_path=str(out / "e.jsonl"), state_path=str(out / "s.sqlite"))
    scanner = Scanner(options, detector=DetectionEngine.load())
    try:
        scanner.scan(sources)
    finally:
        scanner.close()
    by_session: dict[str, list[dict[str, Any]]] = defaultdict(list)
    with (out / "e.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            doc = json.loads(line)
            if doc["event"]["dataset"] != "telltale.detection":
                continue
            sid = doc.get("gen_ai", {}).get("conversation", {}).get("id")
            if sid:
                by_session[sid].append(doc)
    return by_session


def severity_of(doc: dict[str, Any]) -> str:
    return str(doc["telltale"]["detection"]["severity"])


def run(all_formats: bool) -> tuple[list[tuple[dict[str, Any], str, list[dict[str, Any]]]],
                                    list[tuple[dict[str, Any], str, list[dict[str, Any]]]]]:
    """``(attacks, benign)``: each session with its format and its detection documents."""
    attacks, benign = load_sessions()
    with tempfile.TemporaryDirectory(prefix="telltale-adv-") as tmp:
        home, out = Path(tmp) / "home", Path(tmp) / "out"
        home.mkdir()
        out.mkdir()
        placed: list[tuple[str, dict[str, Any], str, str]] = []
        for kind, sessions in (("attack", attacks), ("benign", benign)):
            for session in sessions:
                formats = FORMATS if all_formats else (session["format"],)
                for fmt in formats:
                    variant = dict(session, id=f"{session['id']}@{fmt}")
                    write_session(home, variant, fmt)
                    placed.append((kind, session, fmt, session_uuid(variant["id"])))
        found = scan(home, out)
    a_out = [(s, fmt, found.get(sid, [])) for kind, s, fmt, sid in placed if kind == "attack"]
    b_out = [(s, fmt, found.get(sid, [])) for kind, s, fmt, sid in placed if kind == "benign"]
    return a_out, b_out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--all-formats", action="store_true", help="write every session in all four formats")
    ap.add_argument("--min-severity", default="medium", choices=SEVERITIES)
    ap.add_argument("--verbose", "-v", action="store_true")
    args = ap.parse_args()
    floor = RANK[args.min_severity]
    attacks, benign = run(args.all_formats)

    per_class: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    missed: list[str] = []
    for session, fmt, docs in attacks:
        hit = any(RANK[severity_of(d)] >= floor for d in docs)
        cell = per_class[session["class"]]
        cell[0] += 1
        cell[1] += hit
        if not hit:
            missed.append(f"{session['class']:22s} {session['id']}@{fmt}  "
                          f"({', '.join(sorted({d['rule']['id'] + ':' + severity_of(d) for d in docs})) or 'nothing'})")
    print(f"attack recall (an alert of {args.min_severity} or more):")
    total = [0, 0]
    for name in sorted(per_class):
        n, hit = per_class[name]
        total[0] += n
        total[1] += hit
        print(f"  {name:22s} {hit:3d}/{n:<3d} {100.0 * hit / n:6.1f}%")
    print(f"  {'all':22s} {total[1]:3d}/{total[0]:<3d} {100.0 * total[1] / max(total[0], 1):6.1f}%")

    print(f"hard-benign sessions ({len(benign)}) with an alert of at least:")
    alerted: list[str] = []
    for sev in SEVERITIES:
        count = sum(1 for _s, _f, docs in benign if any(RANK[severity_of(d)] >= RANK[sev] for d in docs))
        print(f"  {sev:14s} {count:3d}  {100.0 * count / max(len(benign), 1):5.1f}%")
    for session, fmt, docs in benign:
        if docs:
            rules = ", ".join(sorted({d["rule"]["id"] + ":" + severity_of(d) for d in docs}))
            alerted.append(f"{session['id']}@{fmt}  ({rules})")
    if args.verbose:
        print("missed attacks:")
        for line in missed:
            print("  " + line)
        print("benign sessions with an alert:")
        for line in alerted:
            print("  " + line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
