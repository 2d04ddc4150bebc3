"""What a simple command means: the program it runs and the files it reads or writes.

Knowledge of ordinary Unix and PowerShell commands (not of any agent): which words are
wrappers that run another command (``sudo``, ``env``, ``timeout``, ``xargs``), which
programs read their file operands, and where a program writes (``tee``, ``cp`` and
``mv`` targets, ``sed -i``, ``dd of=``, ``curl -o``). Rules then test paths, whoever
spelled them.
"""

from __future__ import annotations

import fnmatch

from telltale import lazyre

#: Programs a glob in a command name (``/???/b??h``, ``/usr/bin/w?et``) is resolved against.
KNOWN_PROGRAMS: tuple[str, ...] = (
    "bash", "sh", "zsh", "dash", "ksh", "curl", "wget", "nc", "ncat", "netcat", "socat", "python",
    "python3", "perl", "ruby", "node", "php", "base64", "xxd", "cat", "rm", "dd", "chmod", "openssl",
    "telnet", "ssh", "scp", "rsync", "tar", "crontab", "sudo", "env", "eval", "git",
)

SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "ash", "mksh", "fish", "busybox-sh", "csh", "tcsh"})
INTERPRETERS = frozenset({
    "python", "python2", "python3", "perl", "ruby", "node", "nodejs", "deno", "bun", "php", "lua", "osascript",
    "powershell", "pwsh", "tclsh", "r", "rscript", "jshell", "groovy", "awk", "gawk",
})
#: Options that take the next word as their value, per wrapper.
_WRAPPER_VALUE_OPTS: dict[str, frozenset[str]] = {
    "sudo": frozenset({"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T", "--user", "--group",
                       "--chdir", "--prompt", "--host", "--role", "--type", "--other-user", "--close-from"}),
    "doas": frozenset({"-u", "-C"}),
    "env": frozenset({"-u", "-C", "-S", "--unset", "--chdir", "--split-string"}),
    "nice": frozenset({"-n", "--adjustment"}),
    "ionice": frozenset({"-c", "-n", "-p", "--class", "--classdata"}),
    "timeout": frozenset({"-s", "-k", "--signal", "--kill-after"}),
    "stdbuf": frozenset({"-i", "-o", "-e"}),
    "xargs": frozenset({"-I", "-n", "-P", "-L", "-d", "-E", "-s", "-a", "--max-args", "--max-procs",
                        "--delimiter", "--arg-file", "--replace"}),
    "exec": frozenset({"-a"}),
    "chroot": frozenset({"--userspec", "--groups"}),
    "watch": frozenset({"-n", "--interval", "-d"}),
    "runuser": frozenset({"-u", "-g", "--user", "--group"}),
    "setpriv": frozenset(),
    "nohup": frozenset(),
    "time": frozenset({"-f", "-o", "--format", "--output"}),
    "command": frozenset(),
    "builtin": frozenset(),
    "setsid": frozenset(),
    "unbuffer": frozenset(),
    "caffeinate": frozenset(),
    "torsocks": frozenset(),
    "proxychains": frozenset({"-f"}),
    "proxychains4": frozenset({"-f"}),
    "busybox": frozenset(),
    "firejail": frozenset(),
    "flock": frozenset({"-w", "-E", "--timeout"}),
}
#: Wrappers whose first operand is not the command (a duration, a directory, a lock file).
_WRAPPER_FIRST_OPERAND = frozenset({"timeout", "chroot", "flock"})

#: Programs that read (the content of) each file operand.
READERS = frozenset({
    "cat", "tac", "head", "tail", "less", "more", "most", "bat", "batcat", "nl", "od", "xxd", "hexdump",
    "hd", "strings", "base64", "base32", "sed", "awk", "gawk", "mawk", "cut", "sort", "uniq", "wc", "diff",
    "cmp", "md5sum", "sha1sum", "sha256sum", "sha512sum", "file", "view", "vi", "vim", "nvim", "nano",
    "emacs", "code", "jq", "yq", "tomlq", "xq", "column", "fold", "fmt", "pr", "paste", "join", "comm",
    "iconv", "gpg", "openssl", "source", ".", "type", "get-content", "gc", "bzcat", "zcat", "xzcat",
    "zless", "zmore", "pbcopy", "xclip", "xsel", "wl-copy", "sqlite3", "readlink", "grep", "egrep", "fgrep",
    "rg", "ag", "ack", "zgrep", "expand", "unexpand", "tr", "split", "csplit", "look",
    "mail", "mailx", "sendmail", "ssh-keygen", "ssh-add", "security", "plutil", "defaults", "envsubst",
    "select-string", "sls", "import-csv", "gci", "dir", "ls", "find", "stat", "tree", "zip", "7z",
    "gzip", "bzip2", "xz", "zstd",
})
#: Search programs whose first operand is the pattern, not a file.
_PATTERN_FIRST = frozenset({"grep", "egrep", "fgrep", "rg", "ag", "ack", "zgrep", "look", "sed", "awk", "gawk",
                            "mawk", "jq", "yq", "tomlq", "xq", "tr", "select-string", "sls"})
#: Options of readers that take a value (so the value is not a file operand), per program.
_COMMON_VALUE_OPTS = frozenset({"-e", "-f", "--encoding", "--format"})
_READER_VALUE_OPTS: dict[str, frozenset[str]] = {
    "head": frozenset({"-n", "-c", "--lines", "--bytes"}),
    "tail": frozenset({"-n", "-c", "--lines", "--bytes", "-s", "--pid"}),
    "grep": frozenset({"-e", "-f", "-m", "-A", "-B", "-C", "--include", "--exclude", "--exclude-dir", "-d", "-D",
                       "--regexp", "--file", "--max-count", "--label", "--color"}),
    "rg": frozenset({"-e", "-f", "-m", "-A", "-B", "-C", "-g", "--glob", "-t", "--type", "-T", "--type-not",
                     "--max-count", "-M", "--max-columns", "-j", "--threads", "--regexp", "--file", "-E"}),
    "sed": frozenset({"-e", "-f", "-l", "--expression", "--file"}),
    "awk": frozenset({"-F", "-v", "-f", "--field-separator", "--assign", "--file"}),
    "jq": frozenset({"--arg", "--argjson", "--slurpfile", "--rawfile", "--indent", "-L", "--tab", "--args"}),
    "yq": frozenset({"-o", "--output-format", "-p", "--input-format", "-I", "--indent"}),
    "sort": frozenset({"-k", "-t", "-o", "-S", "-T", "--key", "--field-separator", "--output"}),
    "cut": frozenset({"-d", "-f", "-c", "-b", "--delimiter", "--fields"}),
    "od": frozenset({"-t", "-N", "-j", "-A", "-w"}),
    "xxd": frozenset({"-l", "-s", "-c", "-g", "-o"}),
    "hexdump": frozenset({"-n", "-s", "-e", "-f"}),
    "gpg": frozenset({"-r", "--recipient", "-u", "--local-user", "-o", "--output", "--passphrase"}),
    "openssl": frozenset({"-in", "-out", "-pass", "-k", "-md", "-passin"}),
    "sqlite3": frozenset({"-cmd", "-separator"}),
    "security": frozenset({"-s", "-a", "-l", "-c", "-D", "-j", "-r"}),
    "find": frozenset({"-name", "-iname", "-path", "-ipath", "-type", "-newer", "-maxdepth", "-mindepth",
                       "-mtime", "-size", "-perm", "-user", "-regex", "-exec", "-execdir"}),
    "diff": frozenset({"-U", "-C", "--label", "-x", "--exclude"}),
    "base64": frozenset({"-w", "--wrap", "-b", "--break", "-i", "--input", "-o", "--output"}),
    "get-content": frozenset({"-Tail", "-TotalCount", "-Head", "-Encoding", "-Delimiter", "-ReadCount"}),
}
for _alias, _real in (("egrep", "grep"), ("fgrep", "grep"), ("zgrep", "grep"), ("ag", "rg"), ("ack", "rg"),
                      ("gawk", "awk"), ("mawk", "awk"), ("gc", "get-content"), ("type", "get-content"),
                      ("tomlq", "yq"), ("xq", "yq"), ("less", "head"), ("more", "head")):
    _READER_VALUE_OPTS[_alias] = _READER_VALUE_OPTS[_real]

_VALUE_EQ = lazyre.compile(r"\A--?[A-Za-z][\w-]*=")


def program_name(word: str) -> str:
    """The program a command word runs: its base name without ``.exe``, lower case.

    A glob (``/???/b??h``) is resolved against :data:`KNOWN_PROGRAMS` when exactly one fits.
    """
    name = word.rsplit("/", 1)[-1].rsplit("\\", 1)[-1].lower()
    if name.endswith(".exe"):
        name = name[:-4]
    if ("*" in name or "?" in name or "[" in name) and name:
        fits = [p for p in KNOWN_PROGRAMS if fnmatch.fnmatchcase(p, name)]
        if len(fits) == 1:
            return fits[0]
        if fits:
            return fits[0]
    return name


def unwrap(argv: list[str]) -> tuple[list[str], list[str]]:
    """``(wrappers, argv)``: the wrapper programs in front and the command they run.

    ``sudo -u root env X=1 timeout 5 curl …`` gives ``(["sudo", "env", "timeout"], ["curl", …])``.
    ``command -v x`` only looks a name up, so it is not unwrapped.
    """
    wrappers: list[str] = []
    rest = argv
    for _ in range(8):
        if not rest:
            break
        name = program_name(rest[0])
        opts = _WRAPPER_VALUE_OPTS.get(name)
        if opts is None:
            break
        if name == "command" and len(rest) > 1 and rest[1] in ("-v", "-V"):
            break
        i = 1
        operand_skipped = name not in _WRAPPER_FIRST_OPERAND
        while i < len(rest):
            word = rest[i]
            if word == "--":
                i += 1
                break
            if name == "env" and "=" in word and not word.startswith("-"):
                i += 1
                continue
            if word.startswith("-") and len(word) > 1:
                i += 2 if word in opts else 1
                continue
            if not operand_skipped:
                operand_skipped = True
                i += 1
                continue
            break
        if i >= len(rest):
            break
        wrappers.append(name)
        rest = rest[i:]
    return wrappers, rest


def _operands(args: list[str], value_opts: frozenset[str] = _COMMON_VALUE_OPTS) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(args):
        word = args[i]
        if word == "--":
            out.extend(args[i + 1 :])
            break
        if word.startswith("-") and len(word) > 1:
            i += 2 if word in value_opts else 1
            continue
        out.append(word)
        i += 1
    return out


def _curl_files(args: list[str], reads: list[str], writes: list[str]) -> None:
    i = 0
    while i < len(args):
        word = args[i]
        value: str | None = None
        key = word
        if word.startswith("--") and "=" in word:
            key, value = word.split("=", 1)
        elif i + 1 < len(args):
            value = args[i + 1]
        if key in ("-d", "--data", "--data-binary", "--data-raw", "--data-urlencode", "--json", "-F", "--form",
                   "--form-string"):
            if value is not None:
                if key in ("-F", "--form", "--data-urlencode"):
                    at = value.find("@")
                else:
                    at = 0 if value.startswith("@") else -1
                if at >= 0 and value[at + 1 :] and value[at + 1 :] != "-":
                    reads.append(value[at + 1 :].split(";", 1)[0])
        elif key in ("-T", "--upload-file", "--post-file", "--body-file", "--input-file", "-i") and value:
            reads.append(value)
        elif key in ("-o", "--output", "-O", "--output-document") and value and value != "-":
            writes.append(value)
        elif key.startswith("-d@") or key.startswith("--data@"):
            reads.append(key.split("@", 1)[1])
        i += 1


_HTTP_CLIENTS = frozenset({
    "curl", "wget", "http", "https", "xh", "curlie", "invoke-webrequest", "iwr", "invoke-restmethod", "irm",
})


def _in_place(arg: str, name: str) -> bool:
    """``sed -i``/``-i.bak``/``--in-place``, ``perl -pi -e`` (a bundle with ``i``)."""
    if arg == "--in-place" or arg.startswith(("-i", "--in-place=")):
        return True
    return name != "sed" and arg.startswith("-") and not arg.startswith("--") and "i" in arg[1:]


def file_effects(argv: list[str]) -> tuple[list[str], list[str]]:
    """``(reads, writes)``: the file operands a simple command reads and writes.

    Best effort over well-known programs; an unknown program's operands are neither.
    """
    if not argv:
        return [], []
    name = program_name(argv[0])
    args = argv[1:]
    reads: list[str] = []
    writes: list[str] = []
    if name in ("cp", "mv", "install", "ln", "rsync", "scp", "copy-item", "move-item", "cpi", "copy", "ditto"):
        ops = _operands(args, frozenset({"-t", "--target-directory", "-S", "--suffix", "-m", "--mode", "-e",
                                          "-i", "-P", "-o", "-g", "--exclude", "--include", "-Path",
                                          "-Destination"}))
        if len(ops) >= 2:
            reads.extend(ops[:-1])
            writes.append(ops[-1])
        elif ops:
            reads.extend(ops)
        return reads, writes
    if name in ("tee", "tee-object", "touch", "truncate", "set-content", "add-content", "out-file", "sc", "ac"):
        ops = _operands(args, frozenset({"-s", "--size", "-d", "-r", "-Value", "-Encoding", "-FilePath", "-Path"}))
        if name in ("set-content", "add-content", "sc", "ac", "out-file"):
            ops = ops[:1]
        writes.extend(ops)
        return reads, writes
    if name in ("rm", "unlink", "shred", "srm", "remove-item", "ri", "del", "erase", "rmdir"):
        # Deleting is changing: ``written_paths`` holds files created, changed or removed.
        writes.extend(_operands(args, frozenset({"-n", "--iterations", "-s", "--size", "-Path"})))
        return reads, writes
    if name == "dd":
        for word in args:
            if word.startswith("of="):
                writes.append(word[3:])
            elif word.startswith("if="):
                reads.append(word[3:])
        return reads, writes
    if name in ("sed", "perl", "ruby") and any(_in_place(a, name) for a in args):
        ops = _operands(args, frozenset({"-e", "-f", "-E"}))
        has_script = not any(
            a in ("-e", "-f") or (a.startswith("-") and "e" in a[1:] and not a.startswith("--")) for a in args
        )
        files = ops[1:] if has_script else ops
        writes.extend(files)
        reads.extend(files)
        return reads, writes
    if name in _HTTP_CLIENTS:
        _curl_files(args, reads, writes)
        return reads, writes
    if name in ("tar", "bsdtar", "gtar"):
        bundle = args[0] if args and not args[0].startswith("--") else ""
        create = "--create" in args or any(
            a.startswith("-") and not a.startswith("--") and "c" in a for a in args
        ) or (bool(bundle) and not bundle.startswith("-") and "c" in bundle)
        archive: str | None = None
        skip = {0} if bundle and not bundle.startswith("-") else set()
        for i, a in enumerate(args):
            if a.startswith("--file="):
                archive = a[7:]
            elif i + 1 < len(args) and (a == "--file" or (
                not a.startswith("--") and "f" in a and (a.startswith("-") or i == 0)
            )):
                archive = args[i + 1]
                skip.add(i + 1)
        if create:
            if archive and archive != "-":
                writes.append(archive)
            reads.extend(a for i, a in enumerate(args) if i not in skip and not a.startswith("-"))
        return reads, writes
    if name in ("zip", "7z", "7za"):
        ops = _operands(args, frozenset({"-x", "-i", "-P", "--password"}))
        if name.startswith("7") and ops and ops[0] in ("a", "u"):
            ops = ops[1:]
        if ops:
            writes.append(ops[0])
            reads.extend(ops[1:])
        return reads, writes
    if name in READERS:
        ops = _operands(args, _READER_VALUE_OPTS.get(name, _COMMON_VALUE_OPTS))
        if name == "security":
            ops = [a for i, a in enumerate(args) if (i and args[i - 1] in ("-k",)) or a.endswith(".keychain-db")]
        if name in _PATTERN_FIRST and not any(a in ("-e", "-f", "--regexp", "--file") for a in args):
            ops = ops[1:]
        reads.extend(o for o in ops if not _VALUE_EQ.match(o))
        return reads, writes
    return reads, writes


_CODE_READ = lazyre.compile(
    r"(?i)(?:\bopen|readfilesync|readfile|read_text|read_bytes|file\.read|io\.read|file_get_contents|get-content|"
    r"\bslurp|\bfile\(|\bpath\()\s*\(?\s*[rbu]?['\"]([^'\"\n]{2,256})['\"]"
)
_CODE_WRITE = lazyre.compile(
    r"(?i)(?:\bopen\s*\(\s*[rbu]?['\"]([^'\"\n]{2,256})['\"]\s*,\s*[rbu]?['\"][wax]|"
    r"(?:writefilesync|writefile|appendfilesync|appendfile|write_text|write_bytes|file_put_contents|set-content|"
    r"add-content|out-file)\s*\(?\s*(?:-path\s+)?['\"]([^'\"\n]{2,256})['\"])"
)


def code_paths(code: str) -> tuple[list[str], list[str]]:
    """``(reads, writes)``: literal paths an interpreter one-liner opens (``open('…')``, ``readFileSync``…)."""
    writes = [a or b for a, b in _CODE_WRITE.findall(code)]
    reads = [p for p in _CODE_READ.findall(code) if p not in writes]
    return reads, writes
