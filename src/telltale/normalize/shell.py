"""Shell command lines read the way bash reads them, with a real grammar (tree-sitter-bash).

:func:`normalize_shell` parses a command line, evaluates every word as bash would
without running anything — quotes removed, ANSI-C and backslash escapes decoded, quotes
spliced inside words joined, ``$var``/``${var…}`` of assignments made earlier on the same
line substituted — and follows the tricks that hide the command actually run: ``eval``
of a built string, ``bash -c``/``sh <<<`` of a string, a static producer (``echo``,
``printf``, a here-document) piped through decoders (``base64 -d``, ``xxd -r -p``,
``rev``, ``tr``, ``gunzip``) into a shell, and decoding calls inside one-liners.
What it finds is a :class:`ShellFacts`: the normalised text, each simple command's
argv after wrappers (``sudo``, ``env``, ``timeout``…), its program, each pipeline's
programs, and the files read and written.

Everything is bounded deterministically (:class:`Bounds`): re-parse depth, syntax
nesting, nodes visited and characters produced. Past a bound the rest is kept as
written, never dropped, and ``ShellFacts.truncated`` says so.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import msgspec
import tree_sitter_bash
from tree_sitter import Language, Parser

from telltale import lazyre
from telltale.normalize import decode
from telltale.normalize.lexer import AndOr, lex
from telltale.normalize.powershell import is_powershell_program, normalize_powershell, powershell_like
from telltale.normalize.programs import INTERPRETERS, SHELLS, code_paths, file_effects, program_name, unwrap

if TYPE_CHECKING:
    from tree_sitter import Node


class Bounds(msgspec.Struct, frozen=True):
    """Deterministic budget of one normalisation (never time: a re-read gives the same result)."""

    #: Re-parse levels: ``eval``, ``bash -c``, decoded payloads run by a shell.
    depth: int = 4
    #: Syntax nesting followed (substitutions inside substitutions...).
    nesting: int = 48
    #: Syntax nodes visited in all levels together.
    steps: int = 20_000
    #: Characters of the input taken at most (the rest is kept out of the parse).
    input_chars: int = 65_536
    #: Characters of derived text (normalised lines, decoded payloads) produced at most.
    output_chars: int = 131_072
    #: Simple commands recorded at most.
    commands: int = 512


DEFAULT_BOUNDS = Bounds()


class ShellFacts(msgspec.Struct):
    """What one command line (or script body) does, read as bash reads it."""

    #: The command as the shell will run it: one line per statement list, decoded
    #: payloads and re-parsed strings on their own lines after it.
    normalized: str = ""
    #: argv of each simple command (after wrappers), in order of appearance.
    commands: list[list[str]] = msgspec.field(default_factory=list)
    #: Resolved program of each simple command, wrappers included (``sudo``, then ``rm``).
    programs: list[str] = msgspec.field(default_factory=list)
    #: Each pipeline's resolved programs, in stage order.
    pipelines: list[list[str]] = msgspec.field(default_factory=list)
    #: Files written: redirection targets, ``tee``/``cp``/``mv`` targets, ``sed -i``, ``dd of=``...
    writes: list[str] = msgspec.field(default_factory=list)
    #: Files read: reading programs' operands, ``<`` redirections, upload sources.
    reads: list[str] = msgspec.field(default_factory=list)
    #: Text decoded from literals (base64, hex, escapes, char codes) or run by a shell.
    decoded: list[str] = msgspec.field(default_factory=list)
    #: A bound was reached; part of the input was kept as written.
    truncated: bool = False


_PARSER: Parser | None = None


def _parser() -> Parser:
    global _PARSER
    if _PARSER is None:
        _PARSER = Parser(Language(tree_sitter_bash.language()))
    return _PARSER


_NAME = lazyre.compile(r"\A[A-Za-z_][A-Za-z0-9_]*\Z")
#: Directories of installed programs: ``/usr/bin/curl`` is ``curl`` in argv; any other path
#: (``./install.sh``, ``/tmp/x``) stays as written, since where it runs from matters.
_STD_BIN = lazyre.compile(
    r"\A(/usr)?(/local)?/s?bin/|\A/opt/homebrew/bin/|\A/snap/bin/|\A(?i:c:\\windows\\(system32|syswow64)\\)"
)
_EXPANSION = lazyre.compile(
    r"\A\$\{(?P<bang>!)?(?P<name>[A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-])"
    r"(?:(?P<op>:?[-=+?])(?P<word>.*)|:(?P<off>-?\s*\d+)(?::(?P<len>\d+))?|(?P<sub>//?|/#|/%)(?P<pat>[^/]*)(?:/(?P<rep>.*))?"
    r"|(?P<case>\^\^|,,|\^|,|~~|~)|(?P<trim>##?|%%?)(?P<tpat>.*))?\}\Z",
    re.S,
)
#: Substrings (lower case) one of which every match of ``_DECODE_HINT`` contains.
_DECODE_PARTS = ("b64", "atob", "base64", "decode", "hex", "fromcharcode", "[char]", "chr")


def _decode_hint(text: str) -> bool:
    low = text.lower()
    return any(part in low for part in _DECODE_PARTS) and _DECODE_HINT.search(text) is not None


_DECODE_HINT = lazyre.compile(
    r"(?i)(b64decode|atob|frombase64|decode64|decode_base64|base64|fromhex|unhexlify|fromcharcode|\[char\]|chr\s*\()"
)
_REDIRECT_WRITE = frozenset({">", ">>", "&>", "&>>", ">|", ">&"})
_NOT_FILES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "-"})
_SHELL_C = lazyre.compile(r"\A-[a-zA-Z]*c[a-zA-Z]*\Z")
_INTERP_CODE_OPT = frozenset({"-c", "-e", "-E", "-r", "--eval", "-p", "--print", "-x", "-Command", "-command", "-c:"})
_UNKNOWN = object()


class _Walker:
    """One normalisation: a tree walk per (re-)parsed text, sharing budget and facts."""

    def __init__(self, bounds: Bounds) -> None:
        self.bounds = bounds
        self.facts = ShellFacts()
        self.steps = bounds.steps
        self.out_left = bounds.output_chars
        self.env: dict[str, str] = {}
        self.cwd: str | None = None
        self.extra: list[str] = []
        #: The bytes of each text being walked (innermost last): node text is sliced from
        #: them, never read from the tree parsed (see :func:`_ascii`).
        self._data: list[bytes] = []

    # ------------------------------------------------------------ budget

    def _take(self, text: str) -> str:
        if len(text) > self.out_left:
            self.facts.truncated = True
            text = text[: max(self.out_left, 0)]
        self.out_left -= len(text)
        return text

    # ------------------------------------------------------------ entry

    def run(self, text: str, depth: int) -> str:
        """Normalised text of ``text`` (facts recorded); the caller appends it where it belongs."""
        if len(text) > self.bounds.input_chars:
            self.facts.truncated = True
            text = text[: self.bounds.input_chars]
        plain = lex(text)
        if plain is not None:
            return self._plain(plain, depth)
        data = text.encode("utf-8", "surrogatepass")
        tree = _parser().parse(data if data.isascii() else data.translate(_ASCII))
        self._data.append(data)
        try:
            return self._statements(tree.root_node.children, depth, 0, "; ")
        finally:
            self._data.pop()

    def _t(self, node: Node) -> str:
        """The source text of ``node`` (from the original bytes, not the ASCII copy parsed)."""
        data = self._data[-1][node.start_byte : node.end_byte]
        return data.decode("utf-8", "surrogatepass") if data.isascii() else data.decode("utf-8", "replace")

    def again(self, text: str, depth: int) -> None:
        """Parse ``text`` as a shell would run it (``eval``, ``bash -c``, ``| sh``), one level deeper."""
        text = text.strip()
        if not text:
            return
        if depth + 1 > self.bounds.depth or self.out_left <= 0:
            self.facts.truncated = True
            return
        saved_cwd = self.cwd
        normalized = self.run(text, depth + 1)
        self.cwd = saved_cwd
        if normalized:
            self.extra.append(self._take(normalized))

    def payload(self, text: str, depth: int, *, shell: bool) -> None:
        """A decoded literal: recorded, and parsed as shell when a shell runs it or it looks like a command."""
        text = text.strip()
        if not text or self.out_left <= 0:
            return
        self.facts.decoded.append(self._take(text))
        if shell:
            self.again(text, depth)
        else:
            self.extra.append(self._take(text))

    # ------------------------------------------------------------ statements

    def _statements(self, nodes: list[Node], depth: int, nest: int, sep: str) -> str:
        parts: list[str] = []
        for node in nodes:
            if not node.is_named or node.type in ("comment", "heredoc_body", "heredoc_end"):
                continue
            text = self._statement(node, depth, nest)
            if text:
                parts.append(text)
        return sep.join(parts)

    def _statement(self, node: Node, depth: int, nest: int) -> str:
        self.steps -= 1
        if self.steps <= 0 or nest > self.bounds.nesting:
            self.facts.truncated = True
            return self._t(node)
        kind = node.type
        if kind == "command":
            return self._pipeline([node], depth, nest, [])
        if kind == "pipeline":
            return self._pipeline(list(node.named_children), depth, nest, [])
        if kind == "redirected_statement":
            return self._redirected(node, depth, nest)
        if kind == "list":
            parts: list[str] = []
            for child in node.children:
                if child.is_named:
                    parts.append(self._statement(child, depth, nest + 1))
                elif child.type in ("&&", "||", ";", "&"):
                    parts.append(child.type)
            return " ".join(p for p in parts if p)
        if kind == "variable_assignment":
            return self._assign(node, depth, nest)
        if kind == "variable_assignments":
            for child in node.named_children:
                self._assign(child, depth, nest)
            return self._t(node)
        if kind == "declaration_command":
            words = []
            for child in node.children:
                if child.type == "variable_assignment":
                    words.append(self._assign(child, depth, nest))
                elif child.is_named:
                    words.append(self._word(child, depth, nest))
                else:
                    words.append(child.type)
            return " ".join(words)
        if kind == "negated_command":
            return "! " + self._statements(node.named_children, depth, nest + 1, "; ")
        if kind in ("subshell", "compound_statement", "do_group", "else_clause", "elif_clause", "case_item",
                    "if_statement", "while_statement", "until_statement", "case_statement", "function_definition",
                    "program"):
            return self._statements(_bodies(node), depth, nest + 1, "; ")
        if kind in ("for_statement", "select_statement"):
            var = node.child_by_field_name("variable")
            values = node.children_by_field_name("value")
            if var is not None and values:
                first = self._word(values[0], depth, nest + 1)
                self.env[self._t(var)] = first
            return self._statements(_bodies(node), depth, nest + 1, "; ")
        if kind in ("test_command", "c_style_for_statement", "unset_command"):
            return self._t(node)
        # Anything else (an expression on its own, an ERROR node): its words still count.
        if node.named_child_count:
            return self._statements(list(node.named_children), depth, nest + 1, " ")
        return self._word(node, depth, nest)

    def _redirected(self, node: Node, depth: int, nest: int) -> str:
        body = node.child_by_field_name("body")
        redirects: list[str] = []
        stdin: str | None = None
        tail: list[Node] = []
        for child in node.children_by_field_name("redirect"):
            if child.type == "heredoc_redirect":
                body_node = next((c for c in child.named_children if c.type == "heredoc_body"), None)
                if body_node is not None:
                    stdin = self._take(self._t(body_node))
                for inner in child.named_children:
                    if inner.type in ("pipeline", "command"):
                        tail.extend(inner.named_children if inner.type == "pipeline" else [inner])
                    elif inner.type in ("list", "redirected_statement"):
                        tail.append(inner)
                    elif inner.type == "file_redirect":
                        redirects.append(self._redirect(inner, depth, nest))
                redirects.insert(0, "<<")
            elif child.type == "herestring_redirect":
                value = next(iter(child.named_children), None)
                stdin = self._word(value, depth, nest + 1) if value is not None else ""
                redirects.append("<<< " + stdin)
            else:
                redirects.append(self._redirect(child, depth, nest))
        if body is None:
            return " ".join(redirects)
        if body.type in ("command", "pipeline"):
            stages = [body] if body.type == "command" else list(body.named_children)
            stages.extend(t for t in tail if t.type == "command")
            text = self._pipeline(stages, depth, nest, redirects, stdin)
            for extra in tail:
                if extra.type != "command":
                    text += " " + self._statement(extra, depth, nest + 1)
            return text
        body_text = self._statement(body, depth, nest + 1)
        return " ".join([body_text, *redirects])

    def _redirect(self, node: Node, depth: int, nest: int) -> str:
        op = next((c.type for c in node.children if not c.is_named), ">")
        dest = node.child_by_field_name("destination")
        fd = next((c for c in node.named_children if c.type == "file_descriptor"), None)
        target = self._word(dest, depth, nest + 1) if dest is not None else ""
        prefix = self._t(fd) if fd is not None else ""
        if dest is not None and dest.type != "number" and target not in _NOT_FILES and not target.startswith("&"):
            path = self._path(target)
            if op in _REDIRECT_WRITE:
                self.facts.writes.append(path)
            elif op in ("<", "<>"):
                self.facts.reads.append(path)
                if op == "<>":
                    self.facts.writes.append(path)
        return f"{prefix}{op}{target}"

    def _assign(self, node: Node, depth: int, nest: int) -> str:
        """Record ``name=value`` for later words of the line; the assignment's normalised text."""
        name = node.child_by_field_name("name")
        value = node.child_by_field_name("value")
        key = self._t(name) if name is not None else ""
        text = "" if value is None else self._word(value, depth, nest + 1)
        op = next((c.type for c in node.children if not c.is_named), "=")
        if _NAME.match(key):
            self.env[key] = self.env.get(key, "") + text if op == "+=" else text
        return f"{key}{op}{text}"

    # ------------------------------------------------------------ commands

    def _pipeline(
        self,
        stages: list[Node],
        depth: int,
        nest: int,
        redirects: list[str],
        stdin: str | None = None,
    ) -> str:
        texts: list[str] = []
        programs: list[str] = []
        data: str | None = stdin
        for index, (command, own) in enumerate(_flatten(stages)):
            if command.type == "command":
                argv, assigns = self._command_words(command, depth, nest)
                stage_redirects: list[str] = []
                for child in [*command.children_by_field_name("redirect"), *own]:
                    if child.type == "herestring_redirect":
                        value = next(iter(child.named_children), None)
                        data = self._word(value, depth, nest + 1) if value is not None else ""
                        stage_redirects.append("<<< " + data)
                    elif child.type == "file_redirect":
                        stage_redirects.append(self._redirect(child, depth, nest))
                data = self._stage(argv, assigns, data, depth, index, texts, programs)
                if stage_redirects:
                    texts[-1] = " ".join([texts[-1], *stage_redirects]) if texts[-1] else " ".join(stage_redirects)
            else:
                texts.append(self._statement(command, depth, nest + 1))
                data = None
        if programs and len(self.facts.pipelines) < self.bounds.commands:
            self.facts.pipelines.append(programs)
        text = " | ".join(t for t in texts if t)
        if redirects:
            text = " ".join([text, *redirects])
        return text

    def _stage(
        self,
        argv: list[str],
        assigns: list[str],
        data: str | None,
        depth: int,
        index: int,
        texts: list[str],
        programs: list[str],
    ) -> str | None:
        """Record one simple command of a pipeline; what it writes to the next stage when static."""
        wrappers, run = unwrap(argv)
        texts.append(" ".join([*assigns, *argv]))
        if not run:
            return None
        prog = program_name(run[0])
        programs.append(prog)
        self._record(wrappers, run, prog, depth)
        return self._effect(run, prog, data, depth, first=index == 0)

    def _plain(self, statements: list[AndOr], depth: int) -> str:
        """Facts and text of a command in the plain subset (:mod:`telltale.normalize.lexer`).

        The same steps as the tree walk, fed with the lexer's words: both paths give the
        same facts (tests compare them).
        """
        parts: list[str] = []
        for andor in statements:
            items: list[str] = []
            for op, pipeline in andor:
                self.steps -= len(pipeline)
                texts: list[str] = []
                programs: list[str] = []
                data: str | None = None
                for index, stage in enumerate(pipeline):
                    redirects: list[str] = []
                    for assign in stage.assigns:
                        key, _, value = assign.partition("=")
                        if key.endswith("+"):
                            key = key[:-1]
                            self.env[key] = self.env.get(key, "") + value
                        else:
                            self.env[key] = value
                    for fd, rop, target in stage.redirects:
                        redirects.append(f"{fd}{rop}{target}")
                        if target.isdigit() or target in _NOT_FILES or target.startswith("&") or rop in ("<&", ">&"):
                            continue
                        path = self._path(target)
                        if rop in _REDIRECT_WRITE:
                            self.facts.writes.append(path)
                        elif rop in ("<", "<>"):
                            self.facts.reads.append(path)
                            if rop == "<>":
                                self.facts.writes.append(path)
                    data = self._stage(stage.argv, stage.assigns, data, depth, index, texts, programs)
                    if redirects:
                        texts[-1] = " ".join([texts[-1], *redirects]) if texts[-1] else " ".join(redirects)
                if programs and len(self.facts.pipelines) < self.bounds.commands:
                    self.facts.pipelines.append(programs)
                text = " | ".join(t for t in texts if t)
                items.append(f"{op} {text}" if op else text)
            parts.append(" ".join(items))
        return "; ".join(p for p in parts if p)

    def _command_words(self, node: Node, depth: int, nest: int) -> tuple[list[str], list[str]]:
        argv: list[str] = []
        assigns: list[str] = []
        for child in node.children:
            if child.type == "variable_assignment":
                assigns.append(self._assign(child, depth, nest))
            elif child.type == "command_name":
                inner = child.named_children[0] if child.named_child_count else child
                argv.extend(self._split(inner, self._word(inner, depth, nest + 1)))
            elif child.is_named and child.type not in ("file_redirect", "herestring_redirect", "heredoc_redirect",
                                                       "comment", "subscript"):
                argv.extend(self._split(child, self._word(child, depth, nest + 1)))
        return argv, assigns

    def _split(self, node: Node, value: str) -> list[str]:
        """Word splitting: an unquoted expansion's value becomes several words, as in bash."""
        if node.type in ("string", "raw_string", "ansi_c_string", "translated_string", "word"):
            return [value]
        if not any(ch in value for ch in " \t\n"):
            return [value]
        raw = self._t(node)
        if "$" not in raw and "`" not in raw:
            return [value]
        return value.split() or [""]

    def _record(self, wrappers: list[str], run: list[str], prog: str, depth: int) -> None:
        facts = self.facts
        if len(facts.commands) >= self.bounds.commands:
            facts.truncated = True
            return
        facts.programs.extend(wrappers)
        facts.programs.append(prog)
        first = run[0]
        facts.commands.append([prog if ("/" not in first and "\\" not in first) or _STD_BIN.match(first) else first,
                               *run[1:]])
        reads, writes = file_effects(run)
        facts.reads.extend(self._path(p) for p in reads)
        facts.writes.extend(self._path(p) for p in writes)
        if prog == "cd":
            target = run[1] if len(run) > 1 else "~"
            if target != "-":
                self.cwd = self._path(target)

    def _path(self, path: str) -> str:
        """A path as written, with an earlier ``cd`` of the same line applied to a relative one."""
        if self.cwd is None or not path or path.startswith(("/", "~", "$")) or ":" in path[:3]:
            return path
        if path.startswith("./"):
            path = path[2:]
        return f"{self.cwd.rstrip('/')}/{path}"

    def _effect(self, run: list[str], prog: str, data: str | None, depth: int, *, first: bool) -> str | None:
        """What this stage writes to its stdout when it is static, and re-parses what a shell runs."""
        args = run[1:]
        if prog == "eval":
            self.again(" ".join(args), depth)
            return None
        if prog in SHELLS or prog == "busybox":
            code = _shell_code(args)
            if code is not None:
                self.again(code, depth)
            elif data is not None and not any(not a.startswith("-") for a in args):
                self.payload(data, depth, shell=True)
            return None
        if prog in ("su", "runuser") and "-c" in args:
            i = args.index("-c")
            if i + 1 < len(args):
                self.again(args[i + 1], depth)
            return None
        if is_powershell_program(prog):
            for text in normalize_powershell(" ".join(args), encoded_args=args):
                self.payload(text, depth, shell=False)
            return None
        if prog in INTERPRETERS or prog in ("xargs",):
            code = _interpreter_code(args)
            source = code if code is not None else data
            if source is not None:
                reads, writes = code_paths(source)
                self.facts.reads.extend(self._path(p) for p in reads)
                self.facts.writes.extend(self._path(p) for p in writes)
                if data is not None and code is None:
                    self.payload(data, depth, shell=False)
                if _decode_hint(source):
                    for text in decode.embedded_payloads(source):
                        self.payload(text, depth, shell=_looks_like_shell(text))
            return None
        if prog == "printf" and args and args[0] == "-v":
            if len(args) >= 3 and _NAME.match(args[1]):
                self.env[args[1]] = decode.printf(args[2], args[3:])
            return None
        out = _pure_effect(run, prog, data)
        if out is not None and data is not None and prog not in ("cat", "echo", "printf"):
            self.facts.decoded.append(self._take(out))
        return out

    # ------------------------------------------------------------ words

    def _word(self, node: Node | None, depth: int, nest: int) -> str:
        """The value bash gives a word (one argument), without running anything."""
        if node is None:
            return ""
        self.steps -= 1
        if self.steps <= 0 or nest > self.bounds.nesting:
            self.facts.truncated = True
            return self._t(node)
        kind = node.type
        if kind == "word":
            return _unescape(self._t(node))
        if kind in ("raw_string",):
            raw = self._t(node)
            return raw[1:-1] if len(raw) >= 2 else raw
        if kind == "ansi_c_string":
            raw = self._t(node)
            return decode.c_escapes(raw[2:-1] if len(raw) >= 3 else raw)
        if kind == "string":
            return self._dquoted(node, depth, nest)
        if kind == "translated_string":
            inner = node.named_children[0] if node.named_child_count else None
            return self._word(inner, depth, nest + 1) if inner is not None else self._t(node)[1:]
        if kind == "concatenation":
            return self._concatenation(node, depth, nest)
        if kind == "simple_expansion":
            return self._var(self._t(node)[1:], self._t(node))
        if kind == "expansion":
            return self._expansion(node, depth, nest)
        if kind in ("command_substitution", "process_substitution"):
            return self._substitution(node, depth, nest)
        if kind in ("string_content", "heredoc_content", "number", "variable_name", "file_descriptor",
                    "special_variable_name", "regex", "extglob_pattern", "test_operator"):
            return self._t(node)
        if kind == "array":
            return " ".join(self._word(c, depth, nest + 1) for c in node.named_children)
        return self._t(node)

    def _concatenation(self, node: Node, depth: int, nest: int) -> str:
        """A word of several parts. A variable the command never sets, spliced between
        letters (``cu${z}rl``, ``b${u}ash``), is read as unset, as bash expands it: to
        nothing. Elsewhere (``$BUILD_DIR/out``) an unknown variable stays as written, so a
        path is never shortened into another one (``rm -rf $DIR/`` is not ``rm -rf /``)."""
        parts = [(self._word(c, depth, nest + 1), c) for c in node.children]
        return _unsplice(parts, self._t)

    def _dquoted(self, node: Node, depth: int, nest: int) -> str:
        parts: list[tuple[str, Node | None]] = []
        for child in node.children:
            if not child.is_named:
                if child.type not in ('"',):
                    parts.append((child.type if child.type != "$" else "$", None))
                continue
            if child.type == "string_content":
                parts.append((_dq_unescape(self._t(child)), child))
            else:
                parts.append((self._word(child, depth, nest + 1), child))
        return _unsplice(parts, self._t)

    def _var(self, name: str, raw: str) -> str:
        if name in self.env:
            return self.env[name]
        if name in ("HOME",):
            return "~"
        if name == "IFS":
            return " "
        if name in ("@", "*") or (len(name) == 1 and name.isdigit() and name != "0"):
            return ""
        return raw

    def _expansion(self, node: Node, depth: int, nest: int) -> str:
        raw = self._t(node)
        m = _EXPANSION.match(raw)
        if m is None:
            return raw
        name = m.group("name")
        if m.group("bang"):
            target = self.env.get(name)
            if target is None or not _NAME.match(target):
                return raw
            name = target
        known = name in self.env or name in ("HOME", "IFS") or name in ("@", "*") or name.isdigit()
        value = self._var(name, raw) if known else None
        if m.group("op") is not None:
            op = m.group("op")
            word = _unescape(_strip_quotes(m.group("word")))
            word = _simple_vars(word, self)
            unset_or_empty = value is None or (op.startswith(":") and value == "")
            if op.endswith("-") or op.endswith("="):
                if unset_or_empty:
                    if op.endswith("="):
                        self.env[name] = word
                    return word
                return value or ""
            if op.endswith("+"):
                return "" if unset_or_empty else word
            return value if value is not None else raw
        if value is None:
            return raw
        if m.group("off") is not None:
            off = int(m.group("off").replace(" ", ""))
            length = m.group("len")
            part = value[off:]
            return part[: int(length)] if length is not None else part
        if m.group("sub") is not None:
            pat = _strip_quotes(m.group("pat") or "")
            rep = _strip_quotes(m.group("rep") or "")
            sub = m.group("sub")
            if not pat or any(ch in pat for ch in "*?["):
                return value
            if sub == "//":
                return value.replace(pat, rep)
            if sub == "/#":
                return rep + value[len(pat):] if value.startswith(pat) else value
            if sub == "/%":
                return value[: -len(pat)] + rep if value.endswith(pat) else value
            return value.replace(pat, rep, 1)
        if m.group("case") is not None:
            case = m.group("case")
            if case == "^^":
                return value.upper()
            if case == ",,":
                return value.lower()
            if case == "^":
                return value[:1].upper() + value[1:]
            if case == ",":
                return value[:1].lower() + value[1:]
            return value.swapcase()
        if m.group("trim") is not None:
            pat = _strip_quotes(m.group("tpat") or "")
            if any(ch in pat for ch in "*?["):
                return value
            trim = m.group("trim")
            if trim.startswith("#"):
                return value[len(pat):] if pat and value.startswith(pat) else value
            return value[: -len(pat)] if pat and value.endswith(pat) else value
        return value

    def _substitution(self, node: Node, depth: int, nest: int) -> str:
        inner = list(node.named_children)
        saved = self.extra
        self.extra = []
        text = self._statements(inner, depth, nest + 1, "; ")
        nested, self.extra = self.extra, saved
        self.extra.extend(nested)
        if node.type == "command_substitution":
            out = self._static_output(inner, nest + 1)
            if out is not None:
                return out.rstrip("\n")
            return f"$({text})"
        opener = self._t(node)[:2]
        return f"{opener}{text})"

    def _static_output(self, inner: list[Node], nest: int) -> str | None:
        """The output of a substitution whose one pipeline is static (echo | base64 -d ...)."""
        if len(inner) != 1:
            return None
        node = inner[0]
        stdin: str | None = None
        stages: list[Node]
        if node.type == "command":
            stages = [node]
        elif node.type == "pipeline":
            stages = list(node.named_children)
        elif node.type == "redirected_statement":
            body = node.child_by_field_name("body")
            if body is None or body.type not in ("command", "pipeline"):
                return None
            stages = [body] if body.type == "command" else list(body.named_children)
            for child in node.children_by_field_name("redirect"):
                if child.type == "herestring_redirect" and child.named_child_count:
                    stdin = self._word(child.named_children[0], 0, nest + 1)
                elif child.type == "heredoc_redirect":
                    body_node = next((c for c in child.named_children if c.type == "heredoc_body"), None)
                    stdin = self._t(body_node) if body_node is not None else None
        else:
            return None
        data = stdin
        for stage in stages:
            if stage.type != "command":
                return None
            saved = (self.facts, self.extra, self.steps)
            self.facts, self.extra = ShellFacts(), []
            argv, _ = self._command_words(stage, 0, nest + 1)
            self.facts, self.extra, steps = saved[0], saved[1], self.steps
            self.steps = steps
            _, run = unwrap(argv)
            if not run:
                return None
            prog = program_name(run[0])
            if prog in SHELLS or prog in INTERPRETERS or prog == "eval":
                return None
            data = _pure_effect(run, prog, data)
            if data is None:
                return None
        return data


def _unsplice(parts: Sequence[tuple[str, Node | None]], text: Callable[[Node], str]) -> str:
    """Join a word's parts; an unknown variable left as written (``${z}``) between two
    letters or digits is taken as unset and dropped (see ``_Walker._concatenation``)."""
    values = [value for value, _ in parts]
    for i in range(1, len(parts) - 1):
        node = parts[i][1]
        if (node is not None and node.type in ("simple_expansion", "expansion") and values[i] == text(node)
                and values[i - 1][-1:].isalnum() and values[i + 1][:1].isalnum()):
            values[i] = ""
    return "".join(values)


def _flatten(stages: list[Node]) -> list[tuple[Node, list[Node]]]:
    """Pipeline stages as bash groups them: ``(command, its redirections)``.

    tree-sitter-bash reads ``a | b >f | c`` as ``(a | b) >f | c`` and ``a 2>&1 | b`` as a
    redirected statement in a pipeline; bash gives each redirection to its own command.
    """
    out: list[tuple[Node, list[Node]]] = []
    for stage in stages:
        if stage.type != "redirected_statement":
            out.append((stage, []))
            continue
        body = stage.child_by_field_name("body")
        redirects = [r for r in stage.children_by_field_name("redirect") if r.type != "heredoc_redirect"]
        if body is None or len(redirects) != len(stage.children_by_field_name("redirect")):
            out.append((stage, []))
        elif body.type == "command":
            out.append((body, redirects))
        elif body.type == "pipeline":
            inner = _flatten(list(body.named_children))
            if inner:
                last, own = inner[-1]
                inner[-1] = (last, [*own, *redirects])
            out.extend(inner)
        else:
            out.append((stage, []))
    return out


def _pure_effect(run: list[str], prog: str, data: str | None) -> str | None:
    args = run[1:]
    if prog == "echo":
        return _echo(args)
    if prog == "printf":
        return decode.printf(args[0], args[1:]) if args and args[0] != "-v" else None
    if prog == "cat" and not [a for a in args if not a.startswith("-")]:
        return data
    if data is None:
        return None
    if prog in ("base64", "basenc", "b64") and any(a in ("-d", "--decode", "-D", "-di", "--base64") for a in args):
        return decode.b64(data)
    if prog == "openssl" and "-d" in args and any("base64" in a or a == "-a" for a in args):
        return decode.b64(data)
    if prog == "xxd" and any(a.startswith("-r") for a in args):
        return decode.unhex(data)
    if prog == "rev":
        return decode.rev(data.rstrip("\n"))
    if prog == "tr" and len(args) >= 2 and not args[0].startswith("-"):
        return decode.tr(data, args[0], args[1])
    if prog in ("gunzip", "zcat") or (prog == "gzip" and "-d" in args):
        # ``decode.b64`` inflates a gzip payload itself: text arriving here is already plain.
        return data if decode.printable(data) else None
    return None


def _echo(args: list[str]) -> str:
    escapes = False
    newline = True
    i = 0
    while i < len(args) and re.match(r"\A-[neE]+\Z", args[i]):
        flags = args[i][1:]
        newline = newline and "n" not in flags
        if "e" in flags:
            escapes = True
        if "E" in flags:
            escapes = False
        i += 1
    text = " ".join(args[i:])
    if escapes:
        text = decode.c_escapes(text, octal_zero=True)
    return text + ("\n" if newline else "")


def _shell_code(args: list[str]) -> str | None:
    """The string a shell is asked to run with ``-c`` (``bash -lc 'x'``, ``sh -c x``)."""
    for i, word in enumerate(args):
        if _SHELL_C.match(word) and i + 1 < len(args):
            return args[i + 1]
        if not word.startswith("-"):
            return None
    return None


def _interpreter_code(args: list[str]) -> str | None:
    for i, word in enumerate(args):
        if word in _INTERP_CODE_OPT and i + 1 < len(args):
            return args[i + 1]
        if word.lower().startswith(("-command", "-c")) and word.lower() in ("-command", "-c") and i + 1 < len(args):
            return " ".join(args[i + 1 :])
    return None


_SHELLISH = lazyre.compile(r"(?i)\b(curl|wget|bash|sh|nc|ncat|chmod|rm|cat|echo|python3?|perl|sudo|crontab|export)\b")


def _looks_like_shell(text: str) -> bool:
    return _SHELLISH.search(text) is not None


def _simple_vars(text: str, walker: _Walker) -> str:
    if "$" not in text:
        return text
    return re.sub(r"\$(\{)?([A-Za-z_][A-Za-z0-9_]*)(?(1)\})", lambda m: walker._var(m.group(2), m.group(0)), text)


def _strip_quotes(text: str) -> str:
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def _unescape(text: str) -> str:
    """An unquoted word: a backslash quotes the next character (``c\\u\\rl`` is ``curl``)."""
    if "\\" not in text:
        return text
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            if text[i + 1] != "\n":
                out.append(text[i + 1])
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _dq_unescape(text: str) -> str:
    """Inside double quotes only ``\\$ \\` \\" \\\\`` and a newline are escapes."""
    if "\\" not in text:
        return text
    return re.sub(r'\\([$`"\\\n])', lambda m: "" if m.group(1) == "\n" else m.group(1), text)


#: Every non-ASCII byte read as ``x``. tree-sitter-bash 0.25's external scanner can read
#: out of bounds on some non-ASCII input (a crash found by the property tests, not
#: deterministic); bash's grammar treats any non-ASCII character as a word character, as it
#: does ``x``, so the tree is the same, and byte offsets are kept for slicing the original.
_ASCII = bytes(range(128)) + b"x" * 128


def _bodies(node: Node) -> list[Node]:
    """The statements inside a compound node (conditions and bodies), skipping its words."""
    out: list[Node] = []
    for child in node.named_children:
        if child.type in ("word", "variable_name", "string", "raw_string", "concatenation", "simple_expansion",
                          "expansion", "number"):
            continue
        out.append(child)
    return out


def normalize_shell(command: str, bounds: Bounds = DEFAULT_BOUNDS) -> ShellFacts:
    """Read ``command`` as bash would and say what it runs (see :class:`ShellFacts`)."""
    walker = _Walker(bounds)
    main = walker.run(command, 0)
    facts = walker.facts
    lines = [main, *walker.extra]
    if powershell_like(command):
        for text in normalize_powershell(command):
            if text and text not in lines:
                lines.append(walker._take(text))
                facts.decoded.append(text)
    if not facts.decoded and _decode_hint(command):
        for text in decode.embedded_payloads(command):
            walker.payload(text, 0, shell=_looks_like_shell(text))
        lines.extend(x for x in walker.extra if x not in lines)
    facts.normalized = "\n".join(line for line in lines if line)
    return facts
