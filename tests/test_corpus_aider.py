"""Real Aider chat histories from the shared corpus (only when TELLTALE_CORPUS names it).

Every ``$TELLTALE_CORPUS/aider/*/.aider.chat.history.md`` is acquired whole, and what the
adapter emits is checked against counts taken independently with whole-file regular
expressions (no line state machine, no adapter code), the files left as they were.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from pathlib import Path

import pytest

from telltale.model import Family, Stage
from telltale.sources.aider.chat import AiderChatAdapter
from telltale.sources.base import AcquireContext, HistoryMode
from telltale.sources.spec import RootType, Source

CORPUS = os.environ.get("TELLTALE_CORPUS")
FILES = sorted(Path(CORPUS, "aider").glob("*/.aider.chat.history.md")) if CORPUS else []

pytestmark = [
    pytest.mark.corpus,
    pytest.mark.skipif(not CORPUS, reason="TELLTALE_CORPUS is not set"),
]


#: A SEARCH head with a file name on the line before it (or before its fence): an edit
#: aider can apply. A head after a blank line names no file and is not one.
_NAMED_HEAD = r"^[^\n]*\S[^\n]*\n(?:```[^\n]*\n)?<{5,9} SEARCH>?[ \t]*$"


def independent_counts(text: str) -> dict[str, int]:
    """Counted over the whole text with multiline regexes."""
    prompts = [m.group(0) for m in re.finditer(r"(?:^#### .*  \n)+", text, re.M)]
    confirmations = [p for p in prompts if re.search(r"\(Y\)es/\(N\)o", p)]
    # SEARCH heads quoted inside an edit-error message (after the "failed to match" status
    # line, up to the next aider line) are not the model's edits.
    quoted = 0
    for section in re.finditer(r"^> # \d+ SEARCH/REPLACE blocks? failed to match!.*?(?=^#### |^> .*  $)",
                               text, re.M | re.S):
        quoted += len(re.findall(_NAMED_HEAD, section.group(0), re.M))
    return {
        "runs": len(re.findall(r"^# aider chat started at ", text, re.M)),
        "prompts": len(prompts) - len(confirmations),
        "tokens": len(re.findall(r"^> Tokens: .* sent, .* received\..*  $", text, re.M)),
        "applied": len(re.findall(r"^> Applied edit to .+  $", text, re.M)),
        "running": len(re.findall(r"^> Running .+  $", text, re.M)),
        "search_heads": len(re.findall(_NAMED_HEAD, text, re.M)) - quoted,
        "run_commands": len(re.findall(r"^#### (?:/run|/test|!)\S", text, re.M)),
    }


def _digest(path: Path) -> tuple[int, int, str]:
    st = path.stat()
    return st.st_size, st.st_mtime_ns, hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("path", FILES, ids=[p.parent.name for p in FILES])
def test_corpus_history_matches_independent_counts(path: Path) -> None:
    before = (_digest(path), sorted(os.listdir(path.parent)))
    want = independent_counts(path.read_text(encoding="utf-8"))
    src = Source(client="aider", kind="aider.chat", path=str(path), root_type=RootType.PROJECT_LOCAL,
                 store_root=str(path.parent), found_by="project:corpus")
    batches = list(AiderChatAdapter().acquire(src, None, AcquireContext(history=HistoryMode.ALL, now=time.time())))
    assert (_digest(path), sorted(os.listdir(path.parent))) == before
    got = [o for b in batches for o in b.observations]
    assert [q for b in batches for q in b.quarantined] == []
    of = lambda **kw: [o for o in got if all(getattr(o, k) == v for k, v in kw.items())]  # noqa: E731
    assert len(of(family=Family.SESSION)) == want["runs"]
    assert len(of(family=Family.MESSAGE, role="user")) == want["prompts"]
    # In these samples every reply got a token report.
    assert len(of(family=Family.MESSAGE, role="assistant")) == want["tokens"]
    assert len(of(family=Family.USAGE)) == want["tokens"]
    results = of(family=Family.TOOL, stage=Stage.RESULT)
    assert len(results) == want["applied"] + want["running"]
    requested = of(family=Family.TOOL, stage=Stage.REQUESTED)
    assert len([o for o in requested if o.tool_name == "run"]) == want["run_commands"]
    # Every result closes a call that was requested; a result without a block of its own
    # (a whole-file reply) stands with a call requested at its own line.
    assert {o.call_id for o in results} <= {o.call_id for o in requested}
    standalone = {r.call_id for r in results if r.call_id == f"aider-{r.provenance.offset}"}
    reply_edits = [o for o in requested if o.tool_name == "edit" and o.call_id not in standalone]
    assert len(reply_edits) == want["search_heads"]
    assert {o.session_id for o in got} and all(o.agent == "aider" for o in got)


def test_corpus_has_aider_histories() -> None:
    assert FILES, "TELLTALE_CORPUS is set but holds no aider/*/.aider.chat.history.md"
