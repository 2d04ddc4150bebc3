"""``telltale show SESSION``: everything a session did, in order, subagents nested under
the call that spawned them, detections inline. A unique prefix of the id is enough."""

from __future__ import annotations

import argparse
from typing import Any

from telltale.cli import readside

_CONTENT = ("none", "redacted", "full")


def register(sub: Any) -> None:
    p = sub.add_parser(
        "show", help="a session's timeline (a unique prefix of its id is enough)",
        description="One session's timeline from the local index and log: messages, tool calls and results, "
        "detections, usage.",
    )
    p.add_argument("session", metavar="SESSION", help="a session id or a unique prefix of it (see `telltale sessions`)")
    p.add_argument(
        "--content", choices=_CONTENT, default="redacted",
        help="how much to show: none (actions, sizes), redacted (default: commands, paths, URLs), full (text too: "
        "from the log, or from the agent's store when its record still matches the log's hash)",
    )  # fmt: skip
    p.add_argument(
        "--log-only", action="store_true",
        help="with --content full: show only what the log holds, never read the agent's store",
    )  # fmt: skip
    readside.add_paths(p)
    p.add_argument("--timezone", metavar="TZ", help="times in this IANA zone (default: local)")
    readside.add_output(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import sys

    from telltale.index.sessions import resolve
    from telltale.index.timeline import build

    filters = readside.filters_of(args)  # a bad --since is reported before a missing index
    conn = readside.open_index(args)
    filters = readside.with_clients(filters, args, conn)
    try:
        session = resolve(conn, args.session)
        timeline = build(conn, session, readside.require_log(readside.log_path_of(args, conn)))
        if args.content == "full" and not args.log_only:
            _from_stores(conn, timeline.entries)
    finally:
        conn.close()
    out = sys.stdout
    if args.json:
        import msgspec

        encode = msgspec.json.Encoder().encode
        out.buffer.write(
            b"".join(encode({"depth": depth, "event": _shown(doc, args.content)}) + b"\n"
                     for depth, doc in timeline.entries)
        )  # fmt: skip
        return 0
    paint = _Paint(readside.is_terminal())
    s = session
    who = f"{s.client} {s.agent or ''} {s.agent_version or ''}"
    head = [
        f"{paint.bold(s.session_id)}  {paint.clean(who)}  {paint.clean(s.project)}",
        f"{readside.short_time(s.first_at, filters)} → {readside.short_time(s.last_at, filters)}  "
        f"{s.messages} messages, {s.tool_calls} tool calls, {s.detections} detections, "
        f"{readside.number(s.total)} tokens",
    ]
    if s.risk_points is not None:
        band = s.risk_band
        risk = f"risk {s.risk_points} points{f' ({band})' if band else ''} from {s.risk_occurrences or 0} occurrences"
        head.append(paint.red(risk) if band in ("high", "critical") else risk)
    body = [("  " * depth) + _line(doc, args.content, filters, paint) for depth, doc in timeline.entries]
    if timeline.missing_spans:
        body.append(paint.yellow(f"{timeline.missing_spans} part(s) of this session were in log files rotated away"))
    out.write("\n".join(head + body) + "\n")
    return 0


def _from_stores(conn: Any, entries: list[tuple[int, dict[str, Any]]]) -> None:
    """Fill in texts the log holds only as hashes, from stores whose records still match."""
    from telltale.index.storetext import texts

    found = texts(conn, (doc for _, doc in entries))
    for _, doc in entries:
        text = found.get((doc.get("event") or {}).get("id", ""))
        if text is None:
            continue
        tt = doc["telltale"]
        if isinstance(tt.get("message"), dict):
            tt["message"]["text"] = text
            tt["message"]["text_from"] = "store"
        elif isinstance(tt.get("tool"), dict):
            tt["tool"]["result"] = text
            tt["tool"]["result_from"] = "store"


#: C0 controls and DEL (an agent's text may carry terminal escapes): shown as "?".
_CONTROLS = {c: "?" for c in (*range(0x20), 0x7F) if c != 0x09}


class _Paint:
    """Minimal ANSI styling, only on a terminal; every text from the log is cleaned first."""

    def __init__(self, color: bool) -> None:
        self.color = color

    @staticmethod
    def clean(text: str) -> str:
        return text.translate(_CONTROLS)

    def _wrap(self, code: str, text: str) -> str:
        text = self.clean(text)
        return f"\x1b[{code}m{text}\x1b[0m" if self.color else text

    def bold(self, text: str) -> str:
        return self._wrap("1", text)

    def red(self, text: str) -> str:
        return self._wrap("1;31", text)

    def cyan(self, text: str) -> str:
        return self._wrap("36", text)

    def dim(self, text: str) -> str:
        return self._wrap("2", text)

    def yellow(self, text: str) -> str:
        return self._wrap("33", text)


def _shown(doc: dict[str, Any], content: str) -> dict[str, Any]:
    """The document cut down to the chosen content level (JSON output)."""
    if content == "full":
        return doc
    out = {k: v for k, v in doc.items() if k not in ("process", "file", "url")} if content == "none" else dict(doc)
    tt = dict(out.get("telltale") or {})
    if "message" in tt and isinstance(tt["message"], dict):
        tt["message"] = {k: v for k, v in tt["message"].items() if k != "text"}
    if isinstance(tt.get("tool"), dict):
        drop = {"result"} if content == "redacted" else {"result", "arguments"}
        tt["tool"] = {k: v for k, v in tt["tool"].items() if k not in drop}
    if content == "none":
        tt.pop("cwd", None)
    out["telltale"] = tt
    return out


def _line(doc: dict[str, Any], content: str, filters: Any, paint: _Paint) -> str:
    event = doc.get("event", {})
    tt = doc.get("telltale", {})
    gen_ai = doc.get("gen_ai") or {}
    when = readside.short_time(doc.get("@timestamp"), filters)[11:]
    action = event.get("action", "?")
    clean = paint.clean
    if event.get("dataset") == "telltale.detection":
        det = tt.get("detection", {})
        rule = doc.get("rule", {})
        evidence = "; ".join(f"{e.get('field')}: {e.get('value')}" for e in det.get("evidence", [])[:2])
        where = f" — {clean(_cut(evidence, 400))}" if content != "none" and evidence else ""
        return f"{when} " + paint.red(f"⚠ {det.get('severity', '')} {rule.get('id', '')}") + where
    tool = gen_ai.get("tool") or {}
    if action == "tool_call":
        what = ""
        if content != "none":
            what = ((doc.get("process") or {}).get("command_line") or (doc.get("file") or {}).get("path")
                    or (doc.get("url") or {}).get("full") or (tt.get("tool") or {}).get("arguments") or "")  # fmt: skip
        return f"{when} " + paint.cyan(f"→ {tool.get('name', '?')}") + f" {clean(_cut(what, 240))}"
    if action == "tool_result":
        t = tt.get("tool") or {}
        outcome = event.get("outcome", "")
        code = (doc.get("process") or {}).get("exit_code")
        text = t.get("result") if content == "full" else None
        tail = f" {clean(_cut(text, 400))}" if text else ""
        extra = f" exit {code}" if code is not None else ""
        return f"{when} ← {clean(str(tool.get('name', '')))} {outcome}{extra} ({t.get('result_length', 0)} bytes){tail}"
    if action == "message":
        m = tt.get("message") or {}
        text = m.get("text") if content == "full" else None
        body = clean(_cut(text, 2000)) if text else f"({m.get('length', 0)} bytes)"
        mark = " (injected)" if m.get("injected") else ""
        return f"{when} " + paint.bold(f"{m.get('role', '?')}{mark}:") + f" {body}"
    if action == "usage":
        u = gen_ai.get("usage") or {}
        model = (gen_ai.get("request") or {}).get("model", "")
        counts = f"in {u.get('input_tokens', 0):,} out {u.get('output_tokens', 0):,}"
        return f"{when} " + paint.dim(f"usage {model}: {counts}")
    if action == "session":
        agent = (gen_ai.get("agent") or {}).get("name", "")
        return f"{when} " + paint.dim(f"session {(gen_ai.get('conversation') or {}).get('id', '')} ({agent})")
    return f"{when} {clean(str(action))}"


def _cut(text: str | None, limit: int) -> str:
    if not text:
        return ""
    text = text.replace("\n", " ⏎ ")
    return text if len(text) <= limit else text[: limit - 1] + "…"
