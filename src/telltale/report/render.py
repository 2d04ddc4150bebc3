"""The page: a jinja2 template (autoescape on) with the stylesheet, the script and the
data inlined, so one file works from ``file://`` with no network request.

The data goes in two ``<script type="application/json">`` elements: the overview's
(small, before the script, so the overview is drawn while the browser still reads the
rest) and the sessions' and detections' (after it, parsed when a view needs it). Its JSON has every
``<``, ``>`` and ``&`` written as a ``\\u`` escape, so no text in it (a prompt holding
``</script>`` or ``<!--``) can end the element; the page's script reads it with
``JSON.parse`` and puts every value into the page as text, never as markup. A
Content-Security-Policy allows no fetch, image, font or frame from anywhere and only
the page's own script (by its hash): a defect that let markup through would still run
nothing and load nothing.
"""

from __future__ import annotations

import base64
import hashlib
from importlib import resources
from typing import Any

import msgspec

_ESCAPES = ((b"<", b"\\u003c"), (b">", b"\\u003e"), (b"&", b"\\u0026"), ("\u2028".encode(), b"\\u2028"),
            ("\u2029".encode(), b"\\u2029"))  # fmt: skip


def embed_json(data: Any) -> str:
    """``data`` as JSON safe inside a ``<script>`` element (no ``<``, ``>`` or ``&`` left)."""
    raw = msgspec.json.encode(data)
    for plain, escaped in _ESCAPES:
        raw = raw.replace(plain, escaped)
    return raw.decode("utf-8")


def _asset(name: str) -> str:
    return resources.files("telltale.report").joinpath("assets", name).read_text(encoding="utf-8")


def _hash(source: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(source.encode("utf-8")).digest()).decode() + "'"


def render(data: dict[str, Any]) -> str:
    """The whole page as text."""
    try:
        import jinja2
    except ImportError as exc:  # an optional extra: say how to get it
        from telltale.errors import UsageError

        raise UsageError("telltale report needs jinja2: pip install 'telltale[report]'") from exc
    env = jinja2.Environment(
        loader=jinja2.FunctionLoader(lambda name: _asset(name)),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )
    script = _asset("report.js")
    style = _asset("report.css")
    csp = (
        "default-src 'none'; "
        f"script-src {_hash(script)}; "
        "style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"
    )
    counts = data["overview"]["counts"]
    return env.get_template("report.html.j2").render(
        csp=csp,
        style=_markup(style),
        script=_markup(script),
        head=_markup(embed_json({"meta": data["meta"], "overview": data["overview"]})),
        data=_markup(embed_json({"sessions": data["sessions"], "detections": data["detections"]})),
        meta=data["meta"],
        counts=counts,
    )


def _markup(text: str) -> Any:
    from markupsafe import Markup

    return Markup(text)  # our own asset, or JSON with <, > and & escaped
