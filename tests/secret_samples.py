"""Secret-shaped test values, generated at test time (never a real key, never a vendor's
documented example): one generator per shape, each giving the text as it is written
(with the key, flag or header a context-only shape needs) and the secret inside it.

The values are random in the shape's alphabet and length, from a seeded generator so a
failure can be replayed; ``SAMPLES`` lists (name, expected marker kind, generator).
"""

from __future__ import annotations

import base64
import random
import string
from collections.abc import Callable
from typing import NamedTuple

ALNUM = string.ascii_letters + string.digits
UPPER_DIGITS = string.ascii_uppercase + string.digits
LOWER_DIGITS = string.ascii_lowercase + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"


class Sample(NamedTuple):
    text: str  # as written in a file, a command or a prompt
    secret: str  # what must never leave


Maker = Callable[[random.Random], Sample]


def _r(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _bare(prefix: str, alphabet: str, n: int, suffix: str = "") -> Maker:
    def make(rng: random.Random) -> Sample:
        value = prefix + _r(rng, alphabet, n) + suffix
        return Sample(value, value)

    return make


def _keyed(template: str, alphabet: str, n: int) -> Maker:
    """A value only its key names: ``template`` holds ``{v}``."""

    def make(rng: random.Random) -> Sample:
        value = _r(rng, alphabet, n)
        return Sample(template.format(v=value), value)

    return make


def _password(rng: random.Random) -> str:
    # Random letters and digits with a symbol: long enough for the fragment check.
    return _r(rng, ALNUM, 12) + rng.choice("!%^*~") + _r(rng, ALNUM, 13)


def _with_password(template: str) -> Maker:
    def make(rng: random.Random) -> Sample:
        value = _password(rng)
        return Sample(template.format(v=value), value)

    return make


def _pem(label: str) -> Maker:
    def make(rng: random.Random) -> Sample:
        body = "\n".join(_r(rng, B64, 64) for _ in range(4))
        return Sample(f"-----BEGIN {label}-----\n{body}\n-----END {label}-----\n", body)

    return make


def _gcp_service_account(rng: random.Random) -> Sample:
    body = "\\n".join(_r(rng, B64, 64) for _ in range(3))
    text = (
        '{"type": "service_account", "project_id": "demo-project", "private_key_id": "'
        + _r(rng, HEX, 40)
        + '", "private_key": "-----BEGIN PRIVATE KEY-----\\n'
        + body
        + '\\n-----END PRIVATE KEY-----\\n", "client_email": "svc@demo-project.iam.gserviceaccount.com"}'
    )
    return Sample(text, body.split("\\n")[0])


def _docker_auth(rng: random.Random) -> Sample:
    auth = base64.b64encode(f"builder:{_password(rng)}".encode()).decode()
    return Sample('{"auths": {"registry.example.test": {"auth": "' + auth + '"}}}', auth)


def _kubeconfig(rng: random.Random) -> Sample:
    key = base64.b64encode(("-----BEGIN EC PRIVATE KEY-----\n" + _r(rng, B64, 96)).encode()).decode()
    return Sample(f"users:\n- name: dev\n  user:\n    client-key-data: {key}\n", key)


def _jwt(rng: random.Random) -> Sample:
    head = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').decode().rstrip("=")
    claims = base64.urlsafe_b64encode(('{"sub":"' + _r(rng, ALNUM, 12) + '","iat":1700000000}').encode())
    value = f"{head}.{claims.decode().rstrip('=')}.{_r(rng, URLSAFE, 43)}"
    return Sample(value, value)


def _discord_token(rng: random.Random) -> Sample:
    value = rng.choice("MN") + _r(rng, ALNUM, 23) + "." + _r(rng, URLSAFE, 6) + "." + _r(rng, URLSAFE, 27)
    return Sample(value, value)


def _slack_bot(rng: random.Random) -> Sample:
    value = f"xoxb-{_r(rng, string.digits, 12)}-{_r(rng, string.digits, 13)}-{_r(rng, ALNUM, 24)}"
    return Sample(value, value)


def _slack_webhook(rng: random.Random) -> Sample:
    path = f"T{_r(rng, UPPER_DIGITS, 8)}/B{_r(rng, UPPER_DIGITS, 10)}/{_r(rng, ALNUM, 24)}"
    value = f"https://hooks.slack.com/services/{path}"
    return Sample(value, value)


def _discord_webhook(rng: random.Random) -> Sample:
    value = f"https://discord.com/api/webhooks/{_r(rng, string.digits, 18)}/{_r(rng, URLSAFE, 68)}"
    return Sample(value, value)


def _telegram(rng: random.Random) -> Sample:
    value = f"{rng.randint(100000000, 999999999)}:AA{_r(rng, URLSAFE, 33)}"
    return Sample(value, value)


def _sendgrid(rng: random.Random) -> Sample:
    value = f"SG.{_r(rng, URLSAFE, 22)}.{_r(rng, URLSAFE, 43)}"
    return Sample(value, value)


def _sentry_dsn(rng: random.Random) -> Sample:
    key = _r(rng, HEX, 32)
    return Sample(f"https://{key}@o{rng.randint(10000, 99999)}.ingest.sentry.io/{rng.randint(1000, 9999)}", key)


def _grafana_sa(rng: random.Random) -> Sample:
    value = f"glsa_{_r(rng, ALNUM, 32)}_{_r(rng, HEX, 8)}"
    return Sample(value, value)


def _azure_storage(rng: random.Random) -> Sample:
    key = _r(rng, B64, 86) + "=="
    return Sample(
        f"DefaultEndpointsProtocol=https;AccountName=demoacct;AccountKey={key};EndpointSuffix=core.windows.net",
        key,
    )


def _azure_sas(rng: random.Random) -> Sample:
    sig = _r(rng, ALNUM, 40) + "%3D"
    return Sample(f"https://demoacct.blob.core.windows.net/c/f.txt?sv=2022-11-02&sr=b&sp=r&sig={sig}", sig)


def _azure_service_bus(rng: random.Random) -> Sample:
    sig = _r(rng, ALNUM, 43) + "%3D"
    return Sample(
        "Endpoint=sb://demo.servicebus.windows.net/;SharedAccessSignature=SharedAccessSignature "
        f"sr=demo&sig={sig}&se=1700000000&skn=RootManageSharedAccessKey",
        sig,
    )


def _azure_client_secret(rng: random.Random) -> Sample:
    value = _r(rng, ALNUM, 3) + str(rng.randint(0, 9)) + "Q~" + _r(rng, ALNUM + "_~.-", 34)
    return Sample(value, value)


def _url_userinfo(scheme: str, suffix: str) -> Maker:
    def make(rng: random.Random) -> Sample:
        pw = _r(rng, ALNUM, 26)
        return Sample(f"{scheme}://app_user:{pw}@{suffix}", pw)

    return make


def _ado(rng: random.Random) -> Sample:
    pw = _password(rng)
    return Sample(f"Server=db.internal;Database=app;User Id=app;Password={pw};Encrypt=true", pw)


def _authorization(header: str, scheme: str) -> Maker:
    def make(rng: random.Random) -> Sample:
        value = _r(rng, URLSAFE, 40)
        return Sample(f"{header}: {scheme} {value}", value)

    return make


def _netrc(rng: random.Random) -> Sample:
    pw = _password(rng)
    return Sample(f"machine api.example.test login deploy password {pw}", pw)


def _yaml_nested(rng: random.Random) -> Sample:
    value = _r(rng, B64, 40)
    return Sample(f"credentials:\n  aws_secret_access_key: {value}\n  region: eu-west-1", value)


def _curl_user(rng: random.Random) -> Sample:
    pw = _password(rng)
    return Sample(f"curl -u deploy:{pw} https://api.example.test/v1/items", pw)


def _github_fine_grained(rng: random.Random) -> Sample:
    value = f"github_pat_11{_r(rng, UPPER_DIGITS, 20)}_{_r(rng, ALNUM, 59)}"
    return Sample(value, value)


def _putty(rng: random.Random) -> Sample:
    lines = "\n".join(_r(rng, B64, 64) for _ in range(3))
    text = (
        "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: dev\nPublic-Lines: 2\n"
        + _r(rng, B64, 64) + "\n" + _r(rng, B64, 20) + "\nPrivate-Lines: 3\n" + lines
        + "\nPrivate-MAC: " + _r(rng, HEX, 64) + "\n"
    )
    return Sample(text, lines.split("\n")[1])


def _pinecone(rng: random.Random) -> Sample:
    value = f"pcsk_{_r(rng, ALNUM, 6)}_{_r(rng, ALNUM, 60)}"
    return Sample(value, value)


def _langsmith(rng: random.Random) -> Sample:
    value = f"lsv2_pt_{_r(rng, HEX, 32)}_{_r(rng, HEX, 10)}"
    return Sample(value, value)


def _braintree(rng: random.Random) -> Sample:
    value = f"access_token$production${_r(rng, LOWER_DIGITS, 16)}${_r(rng, HEX, 32)}"
    return Sample(value, value)


def _airtable(rng: random.Random) -> Sample:
    value = f"pat{_r(rng, ALNUM, 14)}.{_r(rng, HEX, 64)}"
    return Sample(value, value)


def _postman(rng: random.Random) -> Sample:
    value = f"PMAK-{_r(rng, HEX, 24)}-{_r(rng, HEX, 34)}"
    return Sample(value, value)


def _mailchimp(rng: random.Random) -> Sample:
    value = _r(rng, HEX, 32) + f"-us{rng.randint(1, 21)}"
    return Sample(value, value)


SAMPLES: tuple[tuple[str, str, Maker], ...] = (
    # cloud providers
    ("aws_access_key", "aws_access_key", _bare("AKIA", UPPER_DIGITS, 16)),
    ("aws_secret_key", "secret", _keyed("aws_secret_access_key = {v}", B64, 40)),
    ("azure_storage_key", "azure_storage_key", _azure_storage),
    ("azure_sas", "query_credential", _azure_sas),
    ("azure_client_secret", "azure_client_secret", _azure_client_secret),
    ("azure_service_bus_sas", "azure_sas", _azure_service_bus),
    ("gcp_service_account", "private_key", _gcp_service_account),
    ("google_api_key", "google_api_key", _bare("AIza", URLSAFE, 35)),
    ("google_oauth_secret", "google_oauth_secret", _bare("GOCSPX-", URLSAFE, 28)),
    ("google_oauth_token", "google_oauth_token", _bare("ya29.", URLSAFE, 60)),
    ("digitalocean_token", "digitalocean_token", _bare("dop_v1_", HEX, 64)),
    ("hashicorp_vault_token", "hashicorp_token", _bare("hvs.", URLSAFE, 90)),
    ("doppler_token", "doppler_token", _bare("dp.pt.", ALNUM, 43)),
    # code hosts
    ("github_classic", "github_token", _bare("ghp_", ALNUM, 36)),
    ("github_fine_grained", "github_token", _github_fine_grained),
    ("github_app", "github_token", _bare("ghs_", ALNUM, 36)),
    ("github_oauth", "github_token", _bare("gho_", ALNUM, 36)),
    ("gitlab_pat", "gitlab_token", _bare("glpat-", URLSAFE, 20)),
    ("gitlab_deploy", "gitlab_token", _bare("gldt-", URLSAFE, 20)),
    ("gitlab_runner", "gitlab_token", _bare("glrt-", URLSAFE, 20)),
    ("bitbucket_app_password", "atlassian_token", _bare("ATBB", ALNUM, 32)),
    ("atlassian_api_token", "atlassian_token", _bare("ATATT3xFfGF0", URLSAFE, 60)),
    # registries
    ("npm_token", "npm_token", _bare("npm_", ALNUM, 36)),
    ("pypi_token", "pypi_token", _bare("pypi-AgEIcHlwaS5vcmc", URLSAFE, 64)),
    ("docker_config_auth", "auth", _docker_auth),
    ("rubygems_key", "rubygems_key", _bare("rubygems_", HEX, 48)),
    ("nuget_key", "nuget_key", _bare("oy2", LOWER_DIGITS, 43)),
    # chat and payment
    ("slack_bot_token", "slack_token", _slack_bot),
    ("slack_app_token", "slack_token", _bare("xapp-1-", UPPER_DIGITS, 40)),
    ("slack_webhook", "slack_webhook", _slack_webhook),
    ("discord_token", "discord_token", _discord_token),
    ("discord_webhook", "discord_webhook", _discord_webhook),
    ("telegram_bot_token", "telegram_bot_token", _telegram),
    ("stripe_secret", "stripe_key", _bare("sk_live_", ALNUM, 24)),
    ("stripe_restricted", "stripe_key", _bare("rk_live_", ALNUM, 24)),
    ("stripe_webhook_secret", "stripe_key", _bare("whsec_", ALNUM, 32)),
    ("twilio_api_key", "twilio_key", _bare("SK", HEX, 32)),
    ("sendgrid_key", "sendgrid_key", _sendgrid),
    ("mailgun_key", "mailgun_key", _bare("key-", ALNUM, 32)),
    ("mailchimp_key", "mailchimp_key", _mailchimp),
    ("shopify_access_token", "shopify_token", _bare("shpat_", HEX, 32)),
    ("shopify_shared_secret", "shopify_token", _bare("shpss_", HEX, 32)),
    ("square_secret", "square_token", _bare("sq0csp-", URLSAFE, 43)),
    ("linear_key", "linear_key", _bare("lin_api_", ALNUM, 40)),
    # AI providers
    ("openai_project", "openai_key", _bare("sk-proj-", URLSAFE, 64)),
    ("openai_legacy", "openai_key", _bare("sk-", ALNUM, 48)),
    ("anthropic_key", "anthropic_key", _bare("sk-ant-api03-", URLSAFE, 80)),
    ("huggingface_token", "huggingface_token", _bare("hf_", ALNUM, 34)),
    ("groq_key", "groq_key", _bare("gsk_", ALNUM, 52)),
    ("xai_key", "xai_key", _bare("xai-", ALNUM, 80)),
    ("replicate_token", "replicate_token", _bare("r8_", ALNUM, 37)),
    ("perplexity_key", "perplexity_key", _bare("pplx-", ALNUM, 48)),
    ("openrouter_key", "openrouter_key", _bare("sk-or-v1-", HEX, 64)),
    ("cohere_key", "api_key", _keyed("export COHERE_API_KEY={v}", ALNUM, 40)),
    ("mistral_key", "api_key", _keyed("MISTRAL_API_KEY={v}", ALNUM, 32)),
    # observability
    ("datadog_api_key", "api_key", _keyed("DD_API_KEY={v}", HEX, 32)),
    ("datadog_app_key", "key", _keyed("DD_APP_KEY={v}", HEX, 40)),
    ("newrelic_user_key", "newrelic_key", _bare("NRAK-", UPPER_DIGITS, 27)),
    ("sentry_dsn", "sentry_dsn", _sentry_dsn),
    ("grafana_service_account", "grafana_token", _grafana_sa),
    ("grafana_cloud", "grafana_token", _bare("glc_", ALNUM, 48)),
    # private keys and certificates
    ("rsa_private_key", "private_key", _pem("RSA PRIVATE KEY")),
    ("openssh_private_key", "private_key", _pem("OPENSSH PRIVATE KEY")),
    ("pkcs8_private_key", "private_key", _pem("PRIVATE KEY")),
    ("kubeconfig_client_key", "key", _kubeconfig),
    ("age_secret_key", "age_secret_key", _bare("AGE-SECRET-KEY-1", UPPER_DIGITS, 58)),
    # tokens and connection strings
    ("jwt", "jwt", _jwt),
    ("postgres_url", "url_credentials", _url_userinfo("postgres", "db.internal:5432/app")),
    ("mongodb_srv_url", "url_credentials", _url_userinfo("mongodb+srv", "cluster0.example.test/app")),
    ("https_userinfo", "url_credentials", _url_userinfo("https", "git.example.test/org/repo.git")),
    ("ado_connection_string", "password", _ado),
    ("authorization_bearer", "http_authorization", _authorization("Authorization", "Bearer")),
    ("proxy_authorization", "http_authorization", _authorization("Proxy-Authorization", "Basic")),
    ("query_access_token", "query_credential", _keyed("https://api.test/cb?state=1&access_token={v}", ALNUM, 32)),
    # context: keys, flags, files
    ("env_secret_key_base", "secret", _keyed("SECRET_KEY_BASE={v}", HEX, 64)),
    ("shell_export_password", "password", _with_password("export DB_PASSWORD='{v}'")),
    ("json_password", "password", _with_password('{{"user": "app", "password": "{v}"}}')),
    ("yaml_nested_secret", "secret", _yaml_nested),
    ("toml_api_token", "token", _keyed('[service]\napi_token = "{v}"', ALNUM, 32)),
    ("ini_password", "password", _with_password("[database]\npassword = {v}\nport = 5432")),
    ("netrc", "netrc_password", _netrc),
    ("flag_password_space", "password", _with_password("mysqladmin --password {v} status")),
    ("flag_token_equals", "token", _keyed("deploy --token={v} --env prod", ALNUM, 36)),
    ("curl_user", "basic_auth_password", _curl_user),
    ("cloudflare_token", "token", _keyed("CLOUDFLARE_API_TOKEN={v}", URLSAFE, 40)),
    # more vendor shapes, one each
    ("certificate", "certificate", _pem("CERTIFICATE")),
    ("putty_private_key", "putty_private_key", _putty),
    ("pinecone_key", "pinecone_key", _pinecone),
    ("tavily_key", "tavily_key", _bare("tvly-dev-", ALNUM, 32)),
    ("langsmith_key", "langsmith_key", _langsmith),
    ("alibaba_key", "alibaba_key", _bare("LTAI", ALNUM, 20)),
    ("supabase_token", "supabase_token", _bare("sbp_", HEX, 40)),
    ("flyio_token", "flyio_token", _bare("fo1_", URLSAFE, 43)),
    ("netlify_token", "netlify_token", _bare("nfp_", ALNUM, 40)),
    ("braintree_token", "braintree_token", _braintree),
    ("notion_token", "notion_token", _bare("ntn_", ALNUM, 46)),
    ("airtable_token", "airtable_token", _airtable),
    ("postman_key", "postman_key", _postman),
    ("sentry_auth_token", "sentry_token", _bare("sntryu_", HEX, 64)),
    ("pulumi_token", "pulumi_token", _bare("pul-", HEX, 40)),
    ("openai_service_account", "openai_key", _bare("sk-svcacct-", URLSAFE, 64)),
)


def generate(seed: int = 20261201) -> list[tuple[str, str, Sample]]:
    """Every sample once: (name, expected kind, sample), fresh values per seed."""
    rng = random.Random(seed)
    return [(name, kind, make(rng)) for name, kind, make in SAMPLES]
