"""The outputs file (``outputs.yaml``): named outputs, validated, secrets kept out of it.

Shape::

    outputs:
      local:                      # a name of your choice ...
        type: jsonl               # ... and its type; a name that *is* a type may omit it
        path: /var/log/telltale/events.jsonl
      siem:
        type: splunk_hec
        url: https://splunk.example:8088
        token_env: TELLTALE_HEC_TOKEN

Secrets come from an environment variable (``*_env``) or a file (``*_file``); an inline
secret works but is reported as a warning, because outputs files get copied around.
Errors raise ``ConfigError`` naming the file and the field (``outputs.siem.batch_size``).
"""

from __future__ import annotations

import os
import re
import stat
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec

from telltale.config.roots import ConfigRoots, resolve_roots, user_config_dir
from telltale.config.yamlfile import YamlDoc, load_yaml, parse_yaml
from telltale.errors import ConfigError
from telltale.sinks.select import Selector, check_selectors, selector_of

OUTPUT_TYPES = ("jsonl", "otlp", "splunk_hec", "elastic")
REMOTE_TYPES = ("otlp", "splunk_hec", "elastic")
_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}$")
MAX_SECRET_FILE = 16 * 1024

PositiveInt = Annotated[int, msgspec.Meta(ge=1)]
BatchSize = Annotated[int, msgspec.Meta(ge=1, le=10_000)]
Seconds = Annotated[float, msgspec.Meta(gt=0, le=3600)]


def default_outputs_path() -> Path:
    return user_config_dir() / "outputs.yaml"


class Tls(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    verify: bool = True
    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None


class Rotation(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """Parsed here, applied by the JSONL sink."""

    max_bytes: Annotated[int, msgspec.Meta(ge=1024)] = 100 * 1024 * 1024
    max_files: Annotated[int, msgspec.Meta(ge=1, le=1000)] = 10


Severity = Literal["informational", "low", "medium", "high", "critical"]


class _Output(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True, tag_field="type"):
    enabled: bool = True
    #: What this output takes (see :mod:`telltale.sinks.select`): ``dataset`` or ``dataset:action``.
    include: list[str] = []
    exclude: list[str] = []
    #: Events carrying an ``event.severity`` below this band are not taken.
    min_severity: Severity | None = None
    #: This output's own content mode (``None``: as the local log); never more than the log has.
    content: Literal["none", "redacted", "full"] | None = None


class JsonlOutput(_Output, frozen=True, tag="jsonl", kw_only=True):
    """An *additional* JSONL file fed from the outbox (the local log is ``log_path``)."""

    path: str
    rotation: Rotation = Rotation()
    #: ``false``: lines are acknowledged once written, before they reach the disk.
    fsync: bool = True


class _RemoteOutput(_Output, frozen=True, kw_only=True):
    """Delivery policy every remote output shares."""

    tls: Tls = Tls()
    timeout: Seconds = 10.0
    batch_size: BatchSize = 500
    #: ``None``: retry transient failures for ever (the outbox capacity bounds storage).
    max_retries: PositiveInt | None = None
    backoff_initial: Seconds = 1.0
    backoff_max: Seconds = 300.0


class OtlpOutput(_RemoteOutput, frozen=True, tag="otlp", kw_only=True):
    endpoint: str
    protocol: Literal["http/protobuf", "grpc"] = "http/protobuf"
    headers: dict[str, str] = {}
    #: header name -> environment variable holding its value (for API keys).
    headers_env: dict[str, str] = {}


class SplunkHecOutput(_RemoteOutput, frozen=True, tag="splunk_hec", kw_only=True):
    url: str
    token: str | None = None
    token_env: str | None = None
    token_file: str | None = None
    index: str | None = None
    sourcetype: str = "telltale:json"
    source: str = "telltale"
    #: Overrides the event's ``host.name`` as the HEC ``host``.
    host: str | None = None
    #: ``X-Splunk-Request-Channel``, only needed when the token requires a channel.
    channel: str | None = None


class ElasticOutput(_RemoteOutput, frozen=True, tag="elastic", kw_only=True):
    url: str
    api_key: str | None = None
    api_key_env: str | None = None
    api_key_file: str | None = None
    username: str | None = None
    username_env: str | None = None
    password_env: str | None = None
    password_file: str | None = None
    index: str | None = None
    data_stream: str | None = None


Output = JsonlOutput | OtlpOutput | SplunkHecOutput | ElasticOutput
RemoteOutput = OtlpOutput | SplunkHecOutput | ElasticOutput


@dataclass(frozen=True)
class Secret:
    """A resolved secret and where it came from (the latter is safe to print)."""

    value: str = field(repr=False)
    origin: str

    def masked(self) -> str:
        return f"*** ({self.origin})"


@dataclass
class LoadedOutputs:
    path: Path
    outputs: dict[str, Output]
    warnings: list[str]
    exists: bool = True
    #: Every file read, lowest precedence first (``<scope> <path>``).
    files: list[str] = field(default_factory=list)
    #: Output name -> where it was defined (``<scope> <file>:<line>``), in merge order.
    sources: dict[str, list[str]] = field(default_factory=dict)

    def remote(self) -> dict[str, RemoteOutput]:
        return {
            name: out
            for name, out in self.outputs.items()
            if out.enabled and not isinstance(out, JsonlOutput)
        }

    def delivered(self) -> dict[str, Output]:
        """Every enabled output fed from the outbox: the remote ones and the additional JSONL files."""
        return {name: out for name, out in self.outputs.items() if out.enabled}

    def jsonl(self) -> dict[str, JsonlOutput]:
        return {n: o for n, o in self.outputs.items() if o.enabled and isinstance(o, JsonlOutput)}


def _where(msg: str) -> tuple[str, str]:
    """``Expected `int` - at `$.batch_size``` -> (``Expected `int```, ``batch_size``)."""
    text, sep, loc = msg.partition(" - at `")
    loc = loc.rstrip("`").lstrip("$").lstrip(".") if sep else ""
    missing = re.match(r"Object missing required field `([^`]+)`", text)
    if missing:
        loc, text = ".".join(p for p in (loc, missing.group(1)) if p), "required"
    unknown = re.match(r"Object contains unknown field `([^`]+)`", text)
    if unknown:
        loc, text = ".".join(p for p in (loc, unknown.group(1)) if p), "unknown key"
    return text, re.sub(r"\[(\d+)\]", r".\1", loc)


def load_outputs(path: str | Path | None = None, roots: ConfigRoots | None = None) -> LoadedOutputs:
    """Read and validate the outputs.

    ``path`` (``--outputs``) names the one file to read; a missing named file is an error.
    Otherwise every root's ``outputs.yaml`` and then ``outputs.d/*.yaml`` are merged by
    output name (roots lowest precedence first, see :mod:`telltale.config.roots`): a later
    definition of a name overrides the fields it sets, or replaces the output when it
    changes its ``type``. No file anywhere means "no outputs".
    """
    if path is not None:
        p = Path(path)
        return _merge([(load_yaml(p), f"file {p}")], p)
    roots = resolve_roots() if roots is None else roots
    docs: list[tuple[YamlDoc, str]] = []
    for root in roots:
        one = ConfigRoots((root,), roots.profile)
        for f in (*one.files("outputs.yaml"), *one.dropins("outputs.d")):
            docs.append((load_yaml(f.path), f.origin))
    highest = roots.highest()
    primary = highest.path / "outputs.yaml" if highest is not None else default_outputs_path()
    if not docs:
        return LoadedOutputs(primary, {}, [], exists=False)
    return _merge(docs, primary if len(docs) > 1 else docs[0][0].path)


def parse_outputs(raw: bytes | str, path: Path) -> LoadedOutputs:
    """One outputs document (tests, and ``--outputs``)."""
    return _merge([(parse_yaml(raw, path), f"file {path}")], path)


def _merge(docs: Sequence[tuple[YamlDoc, str]], primary: Path) -> LoadedOutputs:
    specs: dict[str, dict[str, Any]] = {}
    #: output name -> field -> the document that set it (for file:line in errors)
    setters: dict[str, dict[str, YamlDoc]] = {}
    last: dict[str, YamlDoc] = {}
    sources: dict[str, list[str]] = {}
    for doc, origin in docs:
        data = doc.data if doc.data is not None else {}
        if not isinstance(data, dict):
            raise ConfigError(f"{doc.where()}: top level must be a mapping with an `outputs` key")
        doc.unknown_keys(("version", "outputs"))
        if data.get("version", 1) != 1:
            raise doc.error("only version 1 is known", "version")
        outputs = data.get("outputs") or {}
        if not isinstance(outputs, dict):
            raise doc.error("must be a mapping of output names to settings", "outputs")
        for name, spec in outputs.items():
            if not _NAME.match(name):
                raise doc.error("names are 1-64 of a-z 0-9 _ . - (starting with a letter or digit)", "outputs", name)
            if not isinstance(spec, dict):
                raise doc.error("must be a mapping of settings", "outputs", name)
            before = specs.get(name)
            if before is None or ("type" in spec and spec["type"] != before.get("type", name)):
                specs[name], setters[name] = dict(spec), {}
            else:
                specs[name] = {**before, **spec}
            setters[name].update({key: doc for key in spec})
            last[name] = doc
            sources.setdefault(name, []).append(f"{origin.split(' ', 1)[0]} {doc.where('outputs', name)}")
    converted: dict[str, Output] = {}
    for name, spec in specs.items():
        if "type" not in spec:
            if name not in OUTPUT_TYPES:
                raise last[name].error(f"missing (one of {', '.join(OUTPUT_TYPES)})", "outputs", name, "type")
            spec = {**spec, "type": name}
        try:
            # One output at a time, so an error can name it (msgspec elides dict keys).
            converted[name] = msgspec.convert(spec, Output)
        except msgspec.ValidationError as exc:
            text, loc = _where(str(exc))
            doc = setters[name].get(loc.split(".", 1)[0], last[name]) if loc else last[name]
            keys = ("outputs", name, *loc.split(".")) if loc else ("outputs", name)
            raise ConfigError(f"{doc.where(*keys)}: {'.'.join(keys)}: {text}") from None
    warnings: list[str] = []
    for name, out in converted.items():
        for rule in ("include", "exclude"):
            problem = check_selectors(getattr(out, rule))
            if problem is not None:
                doc = setters[name].get(rule, last[name])
                raise ConfigError(f"{doc.where('outputs', name, rule)}: outputs.{name}.{rule}: {problem}")
        _check_output(last[name].where("outputs", name), name, out, warnings)
    files = [origin for _, origin in docs]
    return LoadedOutputs(primary, converted, warnings, files=files, sources=sources)


def _check_url(path: Path | str, where: str, url: str, schemes: Sequence[str] = ("http", "https")) -> None:
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in schemes or not parts.hostname:
        raise ConfigError(f"{path}: {where}: must be an {' or '.join(s + '://' for s in schemes)} URL with a host")
    if parts.username or parts.password:
        raise ConfigError(f"{path}: {where}: credentials in the URL are not accepted; use the *_env/*_file fields")
    try:
        _ = parts.port
    except ValueError:
        raise ConfigError(f"{path}: {where}: bad port") from None


def _is_loopback(url: str) -> bool:
    host = urllib.parse.urlsplit(url).hostname or ""
    return host in ("localhost", "::1") or host.startswith("127.")


def _one_of(path: Path | str, name: str, out: object, fields: Sequence[str], required: bool) -> str | None:
    given = [f for f in fields if getattr(out, f) is not None]
    if len(given) > 1:
        raise ConfigError(f"{path}: outputs.{name}: give only one of {', '.join(given)}")
    if not given and required:
        raise ConfigError(f"{path}: outputs.{name}.{fields[1]}: required (or one of {', '.join(fields)})")
    return given[0] if given else None


def _check_output(path: Path | str, name: str, out: Output, warnings: list[str]) -> None:
    pre = f"outputs.{name}"
    if isinstance(out, JsonlOutput):
        if not out.path:
            raise ConfigError(f"{path}: {pre}.path: required")
        return
    if out.tls.key_file and not out.tls.cert_file:
        raise ConfigError(f"{path}: {pre}.tls.key_file: needs tls.cert_file")
    if not out.tls.verify:
        warnings.append(f"{pre}.tls.verify is false: the receiver's certificate is not checked")
    if out.backoff_initial > out.backoff_max:
        raise ConfigError(f"{path}: {pre}.backoff_initial: larger than backoff_max")
    url: str
    secret_given = False
    if isinstance(out, OtlpOutput):
        url = out.endpoint
        if out.protocol == "grpc" and "://" not in url:
            url = "http://" + url
        _check_url(path, f"{pre}.endpoint", url)
        for header in (*out.headers, *out.headers_env):
            if not re.match(r"^[A-Za-z0-9!#$%&'*+.^_`|~-]+$", header):
                raise ConfigError(f"{path}: {pre}.headers: `{header[:40]}` is not a header name")
        for header in out.headers:
            if _looks_secret(header):
                warnings.append(f"{pre}.headers.{header} is inline; prefer headers_env")
        secret_given = bool(out.headers_env) or any(_looks_secret(h) for h in out.headers)
    elif isinstance(out, SplunkHecOutput):
        url = out.url
        _check_url(path, f"{pre}.url", url)
        which = _one_of(path, name, out, ("token", "token_env", "token_file"), required=True)
        if which == "token":
            warnings.append(f"{pre}.token is inline; prefer token_env or token_file")
        secret_given = True
    else:
        url = out.url
        _check_url(path, f"{pre}.url", url)
        key = _one_of(path, name, out, ("api_key", "api_key_env", "api_key_file"), required=False)
        user = _one_of(path, name, out, ("username", "username_env"), required=False)
        pw = _one_of(path, name, out, ("password_env", "password_file"), required=False)
        if key and (user or pw):
            raise ConfigError(f"{path}: {pre}: give an API key or basic auth, not both")
        if bool(user) != bool(pw):
            raise ConfigError(f"{path}: {pre}: basic auth needs a username and a password_env/password_file")
        if key == "api_key":
            warnings.append(f"{pre}.api_key is inline; prefer api_key_env or api_key_file")
        if not key and not user:
            warnings.append(f"{pre} has no credentials; the cluster must accept anonymous writes")
        if out.index is not None and out.data_stream is not None:
            raise ConfigError(f"{path}: {pre}: give index or data_stream, not both")
        target = out.index or out.data_stream
        if target is not None and not re.match(r"^[a-z0-9][a-z0-9_.+-]{0,254}$", target):
            raise ConfigError(f"{path}: {pre}.{'index' if out.index else 'data_stream'}: not a valid index name")
        secret_given = bool(key or user)
    if secret_given and urllib.parse.urlsplit(url).scheme == "http" and not _is_loopback(url):
        warnings.append(f"{pre}: credentials go over plain http to a non-loopback host")


def _looks_secret(header: str) -> bool:
    h = header.lower()
    return any(word in h for word in ("auth", "key", "token", "secret", "password"))


def resolve_secret(
    path: Path,
    where: str,
    *,
    inline: str | None = None,
    env: str | None = None,
    file: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> Secret | None:
    """Fetch a secret from its one configured origin; ``ConfigError`` if it is not there."""
    environ = os.environ if environ is None else environ
    if inline is not None:
        return Secret(inline, "inline")
    if env is not None:
        value = environ.get(env)
        if not value:
            raise ConfigError(f"{path}: {where}_env: environment variable {env} is not set")
        return Secret(value, f"env {env}")
    if file is not None:
        fp = Path(file).expanduser()
        try:
            st = fp.stat()
            with fp.open("rb") as fh:
                raw = fh.read(MAX_SECRET_FILE + 1)
        except OSError as exc:
            raise ConfigError(f"{path}: {where}_file: cannot read {fp} ({exc.strerror})") from None
        if len(raw) > MAX_SECRET_FILE:
            raise ConfigError(f"{path}: {where}_file: {fp} is larger than {MAX_SECRET_FILE} bytes")
        try:
            value = raw.decode("utf-8").strip()
        except UnicodeDecodeError:
            raise ConfigError(f"{path}: {where}_file: {fp} is not UTF-8 text") from None
        if not value:
            raise ConfigError(f"{path}: {where}_file: {fp} is empty")
        origin = f"file {fp}"
        if os.name == "posix" and st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
            origin += " (readable by others)"
        return Secret(value, origin)
    return None


def masked_view(loaded: LoadedOutputs) -> dict[str, Any]:
    """The effective outputs as plain data with every secret replaced by its origin."""
    view: dict[str, Any] = {}
    for name, out in loaded.outputs.items():
        data = msgspec.to_builtins(out)
        assert isinstance(data, dict)
        for key in ("token", "api_key"):
            if data.get(key) is not None:
                data[key] = "*** (inline)"
        headers = data.get("headers")
        if isinstance(headers, dict):
            data["headers"] = {h: ("***" if _looks_secret(h) else v) for h, v in headers.items()}
        view[name] = data
    return view


def _tls(out: RemoteOutput) -> Any:
    from telltale.sinks.http import TlsOptions

    return TlsOptions(
        verify=out.tls.verify, ca_file=out.tls.ca_file, cert_file=out.tls.cert_file, key_file=out.tls.key_file
    )


def build_sink(
    loaded: LoadedOutputs, name: str, out: Output, environ: Mapping[str, str] | None = None
) -> Any:
    """One outbox-fed sink from its validated output, with its secrets resolved now.

    Returns a ``RemoteSink``; raises ``ConfigError`` for a missing secret or a missing
    optional package (OTLP).
    """
    sink = _build_sink(loaded, name, out, environ)
    if out.content is not None:
        from telltale.sinks.content import ContentSink

        return ContentSink(sink, out.content)
    return sink


def _build_sink(loaded: LoadedOutputs, name: str, out: Output, environ: Mapping[str, str] | None) -> Any:
    where = f"outputs.{name}"
    if isinstance(out, JsonlOutput):
        from telltale.sinks.jsonl_output import JsonlOutputSink

        return JsonlOutputSink(
            name, os.path.abspath(os.path.expanduser(out.path)), max_bytes=out.rotation.max_bytes,
            max_files=out.rotation.max_files, fsync=out.fsync,
        )
    if isinstance(out, OtlpOutput):
        from telltale.sinks.otlp import OtlpSink

        env = os.environ if environ is None else environ
        headers = dict(out.headers)
        for header, var in out.headers_env.items():
            value = env.get(var)
            if not value:
                raise ConfigError(f"{loaded.path}: {where}.headers_env.{header}: environment variable {var} is not set")
            headers[header] = value
        return OtlpSink(
            name=name, endpoint=out.endpoint, protocol=out.protocol, headers=headers,
            timeout=out.timeout, tls=_tls(out),
        )
    if isinstance(out, SplunkHecOutput):
        from telltale.sinks.splunk_hec import SplunkHecSink

        token = resolve_secret(
            loaded.path, f"{where}.token", inline=out.token, env=out.token_env, file=out.token_file, environ=environ
        )
        assert token is not None  # validated: one origin is required
        return SplunkHecSink(
            name=name, url=out.url, token=token.value, index=out.index, sourcetype=out.sourcetype,
            source=out.source, host=out.host, channel=out.channel, timeout=out.timeout, tls=_tls(out),
        )
    from telltale.sinks.elastic import DEFAULT_TARGET, ElasticSink

    key = resolve_secret(
        loaded.path, f"{where}.api_key", inline=out.api_key, env=out.api_key_env, file=out.api_key_file,
        environ=environ,
    )
    user = resolve_secret(loaded.path, f"{where}.username", inline=out.username, env=out.username_env,
                          environ=environ)
    password = resolve_secret(loaded.path, f"{where}.password", env=out.password_env, file=out.password_file,
                              environ=environ)
    return ElasticSink(
        name=name, url=out.url, target=out.index or out.data_stream or DEFAULT_TARGET,
        api_key=key.value if key else None, username=user.value if user else None,
        password=password.value if password else None, timeout=out.timeout, tls=_tls(out),
    )


def selector(out: Output) -> Selector:
    """What ``out`` takes from the events of a scan."""
    return selector_of(out.include, out.exclude, out.min_severity)


def policy_of(out: Output) -> Any:
    from telltale.sinks.outbox import SinkPolicy

    if isinstance(out, JsonlOutput):
        return SinkPolicy(batch_size=5_000)
    return SinkPolicy(
        batch_size=out.batch_size, max_retries=out.max_retries,
        backoff_initial=out.backoff_initial, backoff_max=out.backoff_max,
    )


def secret_origins(loaded: LoadedOutputs, name: str, out: RemoteOutput,
                   environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Where each secret of an output comes from and whether it resolves (never its value)."""
    where = f"outputs.{name}"
    found: dict[str, str] = {}
    checks: list[tuple[str, dict[str, str | None]]] = []
    if isinstance(out, SplunkHecOutput):
        checks.append(("token", {"inline": out.token, "env": out.token_env, "file": out.token_file}))
    elif isinstance(out, ElasticOutput):
        checks.append(("api_key", {"inline": out.api_key, "env": out.api_key_env, "file": out.api_key_file}))
        checks.append(("password", {"env": out.password_env, "file": out.password_file}))
    else:
        env = os.environ if environ is None else environ
        for header, var in out.headers_env.items():
            found[f"headers.{header}"] = f"*** (env {var})" if env.get(var) else f"MISSING (env {var} not set)"
    for label, origin in checks:
        try:
            secret = resolve_secret(loaded.path, f"{where}.{label}", environ=environ, **origin)
        except ConfigError as exc:
            found[label] = f"MISSING ({str(exc).split(': ', 2)[-1]})"
            continue
        if secret is not None:
            found[label] = secret.masked()
    return found
