"""The plain subset of the shell language, lexed without building a syntax tree.

Most commands an agent runs (``git status``, ``pytest -q tests/x.py 2>&1 | tail -20``,
``rg -n 'def load' src/``) use nothing but words, single quotes, double quotes without
expansions, pipes, lists and file redirections. For that subset bash's grammar is this
lexer's: words split at blanks and operators, quotes removed, redirections taken apart.
Anything outside it — an expansion, a backslash, a substitution, a group, a reserved
word, a here-document, a comment — makes :func:`lex` return ``None`` and the command
goes through the tree-sitter grammar (:mod:`telltale.normalize.shell`). Tests check
that both paths give the same facts on generated commands of the subset.
"""

from __future__ import annotations

import msgspec

from telltale import lazyre

#: Words that start a compound command or a declaration: the full grammar reads them.
_RESERVED = frozenset({
    "if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case", "esac", "select",
    "function", "in", "[[", "]]", "[", "time", "coproc", "export", "declare", "typeset", "local", "readonly",
    "unset", "let", "!",
})
_ASSIGNMENT = lazyre.compile(r"\A[A-Za-z_][A-Za-z0-9_]*\+?=")


class Stage(msgspec.Struct):
    """One simple command: its words (quotes removed), leading assignments and redirections."""

    argv: list[str] = msgspec.field(default_factory=list)
    assigns: list[str] = msgspec.field(default_factory=list)
    #: ``(descriptor, operator, target)`` of each redirection, in order.
    redirects: list[tuple[str, str, str]] = msgspec.field(default_factory=list)


#: A pipeline is a list of stages; a list is pipelines joined by ``&&``/``||``.
Pipeline = list[Stage]
AndOr = list[tuple[str, Pipeline]]


def lex(command: str) -> list[AndOr] | None:
    """Statements of ``command`` when it is in the plain subset, else ``None``.

    Each statement is a list of ``(operator, pipeline)`` (the first operator is ``""``).
    """
    tokens = _tokens(command)
    if tokens is None:
        return None
    statements: list[AndOr] = []
    current: AndOr = []
    pipeline: Pipeline = []
    stage = Stage()
    op = ""
    pending_redirect: tuple[str, str] | None = None
    for kind, value in tokens:
        if pending_redirect is not None:
            if kind != "word":
                return None
            fd, rop = pending_redirect
            stage.redirects.append((fd, rop, value))
            pending_redirect = None
            continue
        if kind == "word":
            if not stage.argv and _ASSIGNMENT.match(value):
                stage.assigns.append(value)
                continue
            if not stage.argv and value in _RESERVED:
                return None
            stage.argv.append(value)
        elif kind == "redirect":
            fd, _, rop = value.partition(":")
            pending_redirect = (fd, rop)
        elif kind == "op":
            if not stage.argv and not stage.assigns and not stage.redirects:
                if value == "\n" and not pipeline and not current:
                    continue  # a blank line
                return None
            pipeline.append(stage)
            stage = Stage()
            if value in ("|", "|&"):
                continue
            current.append((op, pipeline))
            pipeline = []
            if value in ("&&", "||"):
                op = value
                continue
            statements.append(current)
            current, op = [], ""
    if pending_redirect is not None:
        return None
    if stage.argv or stage.assigns or stage.redirects:
        pipeline.append(stage)
    elif pipeline or current:
        return None  # a dangling ``|`` or ``&&``: the full grammar reports what it makes of it
    if pipeline:
        current.append((op, pipeline))
    if current:
        statements.append(current)
    return statements


_TOKEN = lazyre.compile(
    r"""(?P<blank>[ \t]+)"""
    r"""|(?P<redir>(?P<fd>\d*)(?P<rop>&>>|&>|>>|>&|>\||<>|<&|>|<))"""
    r"""|(?P<op>\n|&&|\|\||\|&|[|&;])"""
    r"""|(?P<word>(?:[^\s|&;<>'"$`\\(){}#!\r]+|'[^']*'|"[^"$`\\!]*")+)"""
)
_DUP_TARGET = lazyre.compile(r"[ \t]*(\d+|-)(?=[\s|&;<>]|\Z)")
_QUOTED = lazyre.compile(r"'([^']*)'|\"([^\"]*)\"")


def _unquote(word: str) -> str:
    if "'" not in word and '"' not in word:
        return word
    return _QUOTED.sub(lambda m: m.group(1) if m.group(1) is not None else m.group(2), word)


def _tokens(command: str) -> list[tuple[str, str]] | None:
    out: list[tuple[str, str]] = []
    i = 0
    n = len(command)
    match = _TOKEN.match
    while i < n:
        m = match(command, i)
        if m is None:
            return None
        i = m.end()
        kind = m.lastgroup
        if kind == "blank":
            continue
        if kind == "op":
            out.append(("op", m.group("op")))
        elif kind == "word" or kind is None:
            out.append(("word", _unquote(m.group("word"))))
        else:
            rop = m.group("rop")
            fd = m.group("fd")
            if rop in ("<", "<>", ">") and command.startswith(("<", "(") if rop == "<" else "(", i):
                return None  # a here-document, a here-string or a process substitution
            if command.startswith("(", i):
                return None
            out.append(("redirect", f"{fd}:{rop}"))
            if rop in (">&", "<&"):
                # A descriptor duplication: its target is a number or '-'.
                dup = _DUP_TARGET.match(command, i)
                if dup is None:
                    return None
                out.append(("word", dup.group(1)))
                i = dup.end()
    return out
