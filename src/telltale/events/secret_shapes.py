"""What a secret looks like: vendor token shapes and the names of secret-holding keys.

Facts only, no engine: :mod:`telltale.events.redaction` compiles these into one RE2
alternation. Shapes are written for RE2 (linear time on hostile input: no backreferences,
no lookaround); ``detect-secrets``' plugins were read as a catalogue of prefixes and
lengths, not run.

Pattern conventions (placeholders the engine fills in):

* ``{S}`` marks the secret's group, ``(?P<{S}>...)``; it may appear in several branches of
  one pattern. A pattern without it masks its whole match.
* ``{K}`` marks the key's group of a *context* rule, whose value is judged by
  :func:`judge` before it is masked.
* ``{B}`` and ``{E}`` are word boundaries before and after (not ``\\b``, which would keep
  RE2 off its DFA: see the engine); a shape without ``{S}`` masks what is between them.

Bare hex strings, UUIDs and hashes are never a shape on their own (session ids, commit
SHAs and path hashes are not secrets): vendors whose keys have no prefix (Datadog,
Cohere, Mistral, Cloudflare ...) are caught by the key or flag that names them.
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from typing import NamedTuple


class Shape(NamedTuple):
    """One catalogue entry: the marker's kind and its RE2 pattern."""

    kind: str
    pattern: str
    #: ``None`` for a vendor shape (always masked); else how :func:`judge` reads the key.
    context: str | None = None


# -- vendor shapes -------------------------------------------------------------------
# Order matters only where two shapes can start at the same place: the more specific
# one comes first (``sk-ant-`` before ``sk-``).
VENDOR_SHAPES: tuple[Shape, ...] = (
    # Private keys and certificates (a cut-off block is masked to the end of the text).
    Shape(
        "private_key",
        r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
        r"(?:-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----|\z)",
    ),
    Shape(
        "certificate",
        r"-----BEGIN (?:CERTIFICATE|PKCS7|TRUSTED CERTIFICATE)-----[\s\S]*?(?:-----END[A-Z0-9 ]{0,40}-----|\z)",
    ),
    Shape("putty_private_key", r"PuTTY-User-Key-File-[0-9]:[\s\S]*?(?:Private-MAC: [0-9a-f]{0,64}|\z)"),
    Shape("age_secret_key", r"AGE-SECRET-KEY-1[0-9A-Z]{58}"),
    # AI providers.
    Shape("anthropic_key", r"{B}sk-ant-[A-Za-z0-9_-]{16,}"),
    Shape("openrouter_key", r"{B}sk-or-v[0-9]-[A-Za-z0-9]{32,}"),
    Shape("openai_key", r"{B}sk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_-]{20,}"),
    Shape("huggingface_token", r"{B}(?:hf_[A-Za-z0-9]{30,}|api_org_[A-Za-z0-9]{30,})"),
    Shape("groq_key", r"{B}gsk_[A-Za-z0-9]{40,}"),
    Shape("xai_key", r"{B}xai-[A-Za-z0-9]{40,}"),
    Shape("replicate_token", r"{B}r8_[A-Za-z0-9]{30,}"),
    Shape("perplexity_key", r"{B}pplx-[A-Za-z0-9]{40,}"),
    Shape("langsmith_key", r"{B}lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}"),
    Shape("pinecone_key", r"{B}pcsk_[A-Za-z0-9]{5,8}_[A-Za-z0-9]{40,}"),
    Shape("tavily_key", r"{B}tvly-(?:dev-|prod-)?[A-Za-z0-9]{24,}"),
    # Code hosts.
    Shape("github_token", r"{B}(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"),
    Shape(
        "gitlab_token",
        r"{B}(?:gl(?:pat|dt|ptt|rt|cbt|imt|soat|ft|ffct|oas|agent|wt)-[A-Za-z0-9_-]{20,}|GR1348941[A-Za-z0-9_-]{20,})",
    ),
    Shape("atlassian_token", r"{B}(?:ATBB[A-Za-z0-9_=.-]{28,}|ATATT3[A-Za-z0-9_=.-]{30,}|ATCTT3[A-Za-z0-9_=.-]{30,})"),
    # Cloud providers.
    Shape("aws_access_key", r"{B}(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|APKA)[0-9A-Z]{16}{E}"),
    Shape("azure_storage_key", r"(?i:{B}(?:AccountKey|SharedAccessKey)=)(?P<{S}>[A-Za-z0-9+/=]{20,})"),
    Shape("azure_sas", r"(?i:{B}SharedAccessSignature=(?:SharedAccessSignature )?)(?P<{S}>[^;\s\"'\\]{8,})"),
    Shape("azure_client_secret", r"{B}[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34}"),
    Shape("google_api_key", r"{B}AIza[0-9A-Za-z_-]{35}"),
    Shape("google_oauth_secret", r"{B}GOCSPX-[A-Za-z0-9_-]{24,}"),
    Shape("google_oauth_token", r"{B}(?:ya29\.[0-9A-Za-z_-]{20,}|1//0[0-9A-Za-z_-]{30,})"),
    Shape("digitalocean_token", r"{B}do[opr]_v1_[a-f0-9]{64}"),
    Shape("alibaba_key", r"{B}LTAI[A-Za-z0-9]{12,20}{E}"),
    Shape("hashicorp_token", r"{B}(?:hv[sbr]\.[A-Za-z0-9_-]{24,}|[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,})"),
    Shape("doppler_token", r"{B}dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,}"),
    Shape("pulumi_token", r"{B}pul-[a-f0-9]{40}"),
    Shape("supabase_token", r"{B}sbp_[a-f0-9]{40}"),
    Shape("flyio_token", r"{B}fo1_[A-Za-z0-9_-]{40,}"),
    Shape("netlify_token", r"{B}nfp_[A-Za-z0-9]{36,}"),
    # Package registries.
    Shape("npm_token", r"{B}npm_[A-Za-z0-9]{36}{E}"),
    Shape("pypi_token", r"{B}pypi-[A-Za-z0-9_-]{50,}"),
    Shape("rubygems_key", r"{B}rubygems_[a-f0-9]{48}"),
    Shape("nuget_key", r"{B}oy2[a-z0-9]{43}{E}"),
    # Chat and payment APIs.
    Shape("slack_token", r"{B}(?:xox[abposre]-[A-Za-z0-9-]{10,}|xapp-[0-9]-[A-Za-z0-9-]{10,})"),
    Shape("slack_webhook", r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_-]{10,}"),
    Shape("discord_webhook", r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/[0-9]{5,20}/[A-Za-z0-9_-]{20,}"),
    Shape("discord_token", r"{B}[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6,7}\.[A-Za-z0-9_-]{27,40}{E}"),
    Shape("telegram_bot_token", r"{B}[0-9]{8,10}:AA[0-9A-Za-z_-]{33}{E}"),
    Shape("stripe_key", r"{B}(?:(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9]{24,})"),
    Shape("twilio_key", r"{B}SK[0-9a-fA-F]{32}{E}"),
    Shape("sendgrid_key", r"{B}SG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{16,64}"),
    Shape("mailgun_key", r"{B}key-[0-9a-zA-Z]{32}{E}"),
    Shape("mailchimp_key", r"{B}[0-9a-f]{32}-us[0-9]{1,2}{E}"),
    Shape("shopify_token", r"{B}shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}{E}"),
    Shape("square_token", r"{B}(?:sq0atp-[0-9A-Za-z_-]{22}|sq0csp-[0-9A-Za-z_-]{43}|EAAA[A-Za-z0-9_-]{60})"),
    Shape("braintree_token", r"access_token\$production\$[a-z0-9]{16}\$[a-f0-9]{32}"),
    Shape("linear_key", r"{B}lin_(?:api|oauth)_[A-Za-z0-9]{40}"),
    Shape("notion_token", r"{B}(?:secret_[A-Za-z0-9]{43}|ntn_[A-Za-z0-9]{40,})"),
    Shape("airtable_token", r"{B}pat[A-Za-z0-9]{14}\.[a-f0-9]{64}"),
    Shape("postman_key", r"{B}PMAK-[a-f0-9]{24}-[a-f0-9]{34}"),
    # Observability.
    Shape(
        "newrelic_key",
        r"{B}(?:NRAK-[A-Z0-9]{27}|NRII-[A-Za-z0-9_-]{32}|NRJS-[a-f0-9]{19}|NRAA-[a-f0-9]{27}|[a-f0-9]{36}NRAL)",
    ),
    Shape("sentry_dsn", r"https?://(?P<{S}>[0-9a-f]{32})(?::[0-9a-f]{32})?@[A-Za-z0-9.-]*sentry"),
    Shape("sentry_token", r"{B}(?:sntrys_[A-Za-z0-9+/=_-]{50,}|sntryu_[a-f0-9]{64})"),
    Shape(
        "grafana_token",
        r"{B}(?:glc_[A-Za-z0-9+/]{32,}={0,2}|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|eyJrIjoi[A-Za-z0-9+/=_-]{30,})",
    ),
    # Generic structures.
    Shape("jwt", r"{B}eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
    Shape("url_credentials", r"{B}[A-Za-z][A-Za-z0-9+.-]{1,20}://[^\s/:@\"'\\]*:(?P<{S}>[^\s@/\"'\\]+)@"),
)

# -- context: keys, flags and headers that name a secret ------------------------------

#: Substrings that make a key a candidate; :func:`judge` decides from its words.
_KEY_WORDS = r"pass|pwd|secret|token|key|auth|cred|cookie"
_KEY = r"(?P<{K}>[A-Za-z0-9_.-]*(?i:" + _KEY_WORDS + r")[A-Za-z0-9_.-]*)"
_FLAG = r"(?P<{K}>[A-Za-z0-9_-]*(?i:" + _KEY_WORDS + r")[A-Za-z0-9_-]*)"
#: A value: double-quoted, single-quoted (an escaped quote inside JSON text too) or bare.
_VALUE = (
    r"(?:\\*\"(?P<{S}>[^\"\\\r\n]+)|\\*'(?P<{S}>[^'\\\r\n]+)"
    r"|(?P<{S}>[^\s\"'\\,;{}()\[\]<>`|&]+))"
)
_KEY_END = r"(?:\\*[\"'`])?[ \t]*"

CONTEXT_SHAPES: tuple[Shape, ...] = (
    # ``key: rest of the line`` (YAML, INI, HTTP headers) when a space follows the colon.
    Shape(
        "key_line",
        _KEY + r"[ \t]*:[ \t]+(?P<{S}>[^\s\"'\\#`][^\r\n\"'\\#`]*)",
        "key",
    ),
    # ``key=value``, ``"key": "value"``, ``key := value``, TOML/INI ``key = "value"``.
    Shape("key_value", _KEY + _KEY_END + r"(?::=|=>|\+=|[:=])[ \t]*" + _VALUE, "key"),
    # ``--password value`` / ``-token value``: a secret-naming flag and its next argument.
    Shape(
        "flag_value",
        r"(?:^|[\s\"']|\\[nrt])--?" + _FLAG + r"[ \t]+(?:\\*\"(?P<{S}>[^\"\\\r\n]+)"
        r"|\\*'(?P<{S}>[^'\\\r\n]+)|(?P<{S}>[^\s\"'\\;|&<>`-][^\s\"'\\;|&<>`]*))",
        "key",
    ),
    # ``.netrc``: ``login <user> password <pw>``, or ``password <pw>`` on its own line.
    Shape(
        "netrc_password",
        r"(?i:{B}login[ \t]+[^\s]+[ \t]+(?:password|passwd)[ \t]+)(?P<{S}>[^\s\"'\\=:][^\s\"'\\]*)"
        r"|(?:(?m:^)|\\n)[ \t]*(?i:password|passwd)[ \t]+(?P<{S}>[^\s\"'\\=:][^\s\"'\\]*)",
        "netrc",
    ),
    # ``curl -u user:password`` (also ``--user``, ``--proxy-user``).
    Shape(
        "basic_auth",
        r"(?:^|[\s\"']|\\[nrt])(?:-u|-U|--user|--proxy-user)(?:[ \t]+|=)?[\"']?(?P<{K}>[^\s:\"'/\\]*):"
        r"(?P<{S}>[^\s\"'@\\]+)",
        "curl_user",
    ),
    # ``Bearer <token>`` / ``Basic <b64>`` outside a header: only a long random value.
    Shape("bearer", r"(?i:{B}(?:bearer|basic)[ \t]+)(?P<{S}>[A-Za-z0-9._~+/=-]{12,})", "entropy"),
    # ``?access_token=...`` and friends in URLs.
    Shape(
        "query_credential",
        r"(?i:[?&](?:access_token|refresh_token|id_token|token|api_key|apikey|key|secret|password|passwd|pwd"
        r"|sig|signature|client_secret|auth|x-amz-signature|x-amz-credential|x-amz-security-token)=)"
        r"(?P<{S}>[^&\s\"'#\\]{4,})",
        None,
    ),
)

# -- judging a key --------------------------------------------------------------------

#: A key holding any of these words holds a secret, whatever its value looks like.
_STRONG = {
    "password": "password", "passwd": "password", "passphrase": "password", "passcode": "password",
    "pwd": "password", "pass": "password", "secret": "secret", "secrets": "secret", "token": "token",
    "apikey": "api_key", "credential": "credential", "credentials": "credential", "creds": "credential",
    "cred": "credential", "privatekey": "private_key", "auth": "auth", "authorization": "http_authorization",
    "cookie": "cookie", "authtoken": "token", "accesskey": "key", "secretkey": "secret",
}
#: Words that end a strong word written as one (``dbpassword``, ``identitytoken``).
_STRONG_SUFFIXES = ("password", "passwd", "secret", "token", "apikey", "credentials")
#: A key with one of these words is about a secret, not one (``public_key``, ``token_type``).
_NOT_SECRET_WORDS = frozenset({"public", "pub"})
_NOT_SECRET_LAST = frozenset({
    "name", "names", "id", "ids", "type", "types", "length", "len", "count", "size", "file", "files",
    "path", "paths", "dir", "url", "uri", "env", "var", "field", "fields", "header", "prefix", "suffix",
    "format", "method", "mode", "hint", "label", "ref", "source", "kind", "policy", "expires", "expiry",
    "expiration", "ttl", "timeout", "max", "min", "limit", "enabled", "required", "rotation", "version",
    "algorithm", "alg", "provider", "helper", "store", "command", "cmd", "location", "lifetime", "storage",
    "usage", "endpoint", "scope", "scopes", "index", "manager", "strategy", "flow", "status", "at",
})
#: ``<word>_key`` that names a lookup key, not a credential.
_NOT_SECRET_KEY_QUALIFIER = frozenset({
    "primary", "foreign", "sort", "partition", "cache", "idempotency", "hot", "object", "lookup", "map",
    "unique", "composite", "row", "column", "group", "dedup", "dedupe", "hash", "routing", "shard",
    "registry", "translation", "i18n", "react", "monkey", "sign",
})
#: Literal values that are settings, not secrets.
_NOT_A_VALUE = frozenset({
    "true", "false", "null", "none", "nil", "undefined", "yes", "no", "on", "off", "required", "optional",
    "string", "str", "bool", "boolean", "int", "object", "redacted", "[redacted]", "***", "******",
})
#: Placeholders and references: a variable, a template, a marker already there.
_REFERENCE_STARTS = ("$", "{{", "%(", "<", "[REDACTED", "${", "process.env", "os.environ", "env.", "secrets.")

#: The entropy fallback: at least this many characters and bits per character.
ENTROPY_MIN_LENGTH = 16
ENTROPY_MIN_BITS = 3.5


@functools.lru_cache(maxsize=4_096)
def words(name: str) -> tuple[str, ...]:
    """Split a key into lower-case words at ``_``, ``-``, ``.``, digits and camelCase humps."""
    out: list[str] = []
    current = ""
    prev = ""
    for i, ch in enumerate(name):
        if not ch.isalpha():
            if current:
                out.append(current.lower())
            current = ""
        elif ch.isupper() and current and (prev.islower() or (i + 1 < len(name) and name[i + 1].islower())):
            out.append(current.lower())
            current = ch
        else:
            current += ch
        prev = ch
    if current:
        out.append(current.lower())
    return tuple(out)


@functools.lru_cache(maxsize=4_096)
def key_kind(name: str) -> tuple[str, bool] | None:
    """``(kind, strong)`` when ``name`` names a secret, else ``None``.

    A strong key masks any value; a weak one (a lone ``key``) only a random-looking one.
    """
    parts = words(name)
    if not parts or any(p in _NOT_SECRET_WORDS for p in parts):
        return None
    if len(parts) > 1 and parts[-1] in _NOT_SECRET_LAST:
        return None
    for part in parts:
        kind = _STRONG.get(part)
        if kind is not None:
            return kind, True
    for part in parts:
        if part.endswith(_STRONG_SUFFIXES):
            return ("password" if "pass" in part else "secret" if "secret" in part else "token"), True
    if "key" in parts or "keys" in parts:
        if len(parts) == 1:
            return "key", False
        index = parts.index("key") if "key" in parts else parts.index("keys")
        if index > 0 and parts[index - 1] in _NOT_SECRET_KEY_QUALIFIER:
            return None
        return ("api_key" if "api" in parts else "key"), True
    if "tokens" in parts:
        return "token", True
    return None


def entropy(value: str) -> float:
    """Shannon entropy of ``value`` in bits per character."""
    if not value:
        return 0.0
    size = len(value)
    return -sum(n / size * math.log2(n / size) for n in Counter(value).values())


def looks_random(value: str) -> bool:
    """The entropy fallback, used only where a key, flag or header names a secret."""
    return len(value) >= ENTROPY_MIN_LENGTH and entropy(value) >= ENTROPY_MIN_BITS


def is_reference(value: str) -> bool:
    """A placeholder, a variable reference or a setting word, not a secret value."""
    stripped = value.strip()
    return not stripped or stripped.lower() in _NOT_A_VALUE or stripped.startswith(_REFERENCE_STARTS)


def judge_key_value(key: str, value: str, quoted: bool) -> str | None:
    """The kind to mask ``value`` as, given the key it follows; ``None`` keeps it."""
    found = key_kind(key)
    if found is None or is_reference(value):
        return None
    kind, strong = found
    if value.startswith("-----BEGIN"):
        return None  # the PEM shape takes the whole block, not its first line
    if not strong:
        return kind if looks_random(value) else None
    if not quoted and value.isdigit() and len(value) <= 15 and words(key)[-1] == "tokens":
        return None  # ``max_tokens: 4096``: a count
    return kind
