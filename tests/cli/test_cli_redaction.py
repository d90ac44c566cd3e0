"""Secrets never reach the terminal: adversarial redaction cases, and a misbehaving instance
(a real HTTP server on 127.0.0.1) whose problem details, redirects and bodies echo tokens,
passwords and keys, driven through every error path of the ``herald`` command."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any

import pytest

from cli.errors import NotSignedIn, UsageProblem
from cli.redact import REDACTED, redact
from tests.cli_support import (
    Cli,
    LeakyInstance,
    closed_port_url,
    forget_remembered_secrets,  # noqa: F401 (autouse fixture)
    json_of,
)

TOKEN = "hrld_0a1b2c3d_" + "S3cretTokenValue" * 2 + "abcdefghijk"
PROBLEM = {"Content-Type": "application/problem+json"}

# (text, the secret in it): every kind the brief names, in the shapes logs and servers use.
LEAKS = [
    ("Authorization: Bearer abc.def-ghi_JKLsecret1", "abc.def-ghi_JKLsecret1"),
    ("authorization: bearer   lowercaseSecret2", "lowercaseSecret2"),
    ("Authorization: Token opaqueSecret3", "opaqueSecret3"),
    ("Proxy-Authorization: Basic cHJveHk6c2VjcmV0NA==", "cHJveHk6c2VjcmV0NA=="),
    ('{"Authorization": "Bearer jsonHeaderSecret5"}', "jsonHeaderSecret5"),
    ("headers={'Authorization': 'Bearer reprSecret6'}", "reprSecret6"),
    ("curl -H 'Authorization: Bearer curlSecret7' https://h", "curlSecret7"),
    ("used hrld_1a2b3c4d_tokenSecret8xyz for the call", "tokenSecret8xyz"),
    ("HRLD_1A2B3C4D_UPPERSECRET9", "UPPERSECRET9"),
    ("token=hrld_deadbeef_Zq9xW8vU7tS6rR5qP4oN3mL2kJ1iH0gFeDcBa98765", "Zq9xW8vU7tS6"),
    ("postgres://herald:dbSecret10@db:5432/herald", "dbSecret10"),
    ("redis://:redisSecret11@cache:6379/0", "redisSecret11"),
    ("amqp://user:pa@ss12@broker/", "ss12"),
    ("https://user:slash/Secret13@host/", "Secret13"),
    ("DATABASE_URL=postgres://u:envDbSecret14@h/db", "envDbSecret14"),
    ("GET https://api.example/v1?limit=5&api_key=querySecret15", "querySecret15"),
    ("https://x.example/cb?access_token=ya29.querySecret16&x=1", "querySecret16"),
    ("https://x.example/cb#access_token=fragmentSecret17", "fragmentSecret17"),
    ("https://x.example/cb?client_secret=cs18&code=oauthCode18", "oauthCode18"),
    ("https://s3.example/o?X-Amz-Signature=sigSecret19&X-Amz-Credential=AKIAX", "sigSecret19"),
    ("https://x.example/?key=shortKey20", "shortKey20"),
    ("https://x.example/?auth=authSecret21", "authSecret21"),
    ("https://x.example/?pwd=pwdSecret22", "pwdSecret22"),
    ("POST https://discord.com/api/webhooks/123456789/hookSecret23?wait=true", "hookSecret23"),
    ("https://hooks.slack.com/services/T0001/B0001/slackSecret24", "slackSecret24"),
    ("https://api.telegram.org/bot123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/getMe", "AAHdq"),
    ('{"password": "jsonPassword25"}', "jsonPassword25"),
    ('{"password": "with \\"quote\\" Secret26"}', "Secret26"),
    ('{"client_secret":"jsonSecret27","refresh_token":"jsonRefresh27"}', "jsonRefresh27"),
    ('{"token": 1234567890028}', "1234567890028"),
    ("{'api_key': 'pyReprSecret29'}", "pyReprSecret29"),
    ("login failed password=plainPassword30", "plainPassword30"),
    ("password = 'spaced secret 31'", "spaced secret 31"),
    ("PGPASSWORD=pgSecret32 pg_dump", "pgSecret32"),
    ("DJANGO_SECRET_KEY=django-insecure-Secret33", "Secret33"),
    ("HERALD_CREDENTIALS_KEY=credentialsKey34", "credentialsKey34"),
    ("AWS_SECRET_ACCESS_KEY=wJalr/XUtn+FEMISecret35", "FEMISecret35"),
    ("AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
    ("password: yamlSecret36", "yamlSecret36"),
    ("psql --password pgFlagSecret37", "pgFlagSecret37"),
    ("herald --token=flagSecret38 workspace list", "flagSecret38"),
    ("Cookie: sessionid=cookieSecret39; csrftoken=x", "cookieSecret39"),
    ("GITHUB_TOKEN ghp_abcdefghijklmnopqrstuvwxyz0123456789", "ghp_abcdefghij"),
    ("slack xoxb-1234-5678-slackBotSecret40", "slackBotSecret40"),
    ("model key sk-proj-abcdefghijklmnop41", "sk-proj-abcdefghijklmnop41"),
    ("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJlNDI", "c2lnbmF0dXJlNDI"),
]

PEM = """before the key
-----BEGIN RSA PRIVATE KEY-----
MIIEowIBAAKCAQEApemSecretLine1abcdefghijklmnopqrstuv
pemSecretLine2ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/
-----END RSA PRIVATE KEY-----
after the key"""


@pytest.mark.parametrize(("text", "secret"), LEAKS, ids=[s for _, s in LEAKS])
def test_redaction_hides_the_secret(text: str, secret: str) -> None:
    cleaned = redact(text)

    assert secret not in cleaned, cleaned
    assert REDACTED in cleaned
    assert redact(cleaned) == cleaned  # redacting twice changes nothing more


def test_private_key_blocks_are_hidden_whole_even_when_cut_off() -> None:
    whole = redact(PEM)
    assert "pemSecretLine" not in whole
    assert whole.startswith("before the key\n")
    assert whole.endswith("\nafter the key")

    tail_without_begin = "\n".join(PEM.splitlines()[3:])  # a log tail that starts mid-key
    assert "pemSecretLine2" not in redact(tail_without_begin)
    head_without_end = "\n".join(PEM.splitlines()[:3])  # a key still being written
    assert "pemSecretLine1" not in redact(head_without_end)


def test_ordinary_text_and_the_clis_own_messages_stay_readable() -> None:
    for text in (
        "GET /api/v1/publications?limit=5&cursor=abc 200 (12 ms)",
        "postgres://db.internal:5432/herald",
        "https://mastodon.example:8443/@ann/109",
        "password reset e-mail sent to ann",
        "the token reaches 2 workspaces: choose one with --workspace ID",
        "Cannot reach https://herald.example.com:8443: Connection refused.",
        "Cannot write /home/ann/.config/herald/credentials.json: Permission denied.",
        str(NotSignedIn()),
        str(UsageProblem("No token read: paste the whole token (hrld_…) on one line.")),
    ):
        assert redact(text) == text


# --- a misbehaving instance -------------------------------------------------------------------


def _assert_clean(output: str, *secrets: str) -> None:
    for secret in (TOKEN, *secrets):
        assert secret not in output, (secret, output)


def test_a_failing_probe_that_echoes_secrets(cli: Cli) -> None:
    routes = {
        "GET /api/v1/health": (200, {}, {"status": "ok"}),
        "GET /api/v1/ready": (
            503,
            PROBLEM,
            {
                "title": "Service Unavailable",
                "status": 503,
                "detail": "postgres://herald:probePass1@db:5432 refused; "
                "AWS_SECRET_ACCESS_KEY=probeAwsSecret2",
                "failing": ["database"],
            },
        ),
    }
    with LeakyInstance(routes) as leaky:
        human = cli("instance", "health", "--instance", leaky.url)
        as_json = cli("instance", "health", "--json", "--instance", leaky.url)

    assert human.exit_code == as_json.exit_code == 1
    assert json_of(as_json) == {
        "instance": leaky.url,
        "liveness": "ok",
        "readiness": "not_ready",
        "database": "unavailable",
    }
    assert "ready: 503" in as_json.stderr
    _assert_clean(human.output + as_json.output, "probePass1", "probeAwsSecret2")


def test_problem_details_that_echo_the_token_and_keys(cli: Cli) -> None:
    opaque = "opaque-not-hrld-shaped-Secret3"
    routes = {
        # Echoes a key in a URL and the bearer token itself.
        "GET /api/v1/publications": (
            401,
            PROBLEM,
            {
                "title": "Unauthorized",
                "status": 401,
                "detail": f"Token {TOKEN} unknown; see https://auth.example/?api_key=problemKey4",
                "code": "not_authenticated",
            },
        ),
        # 422 whose errors[] quote a submitted secret.
        "POST /api/v1/publications": (
            422,
            PROBLEM,
            {
                "title": "Unprocessable Entity",
                "status": 422,
                "detail": "Request validation failed.",
                "code": "invalid",
                "errors": [
                    {"location": "body.text", "message": "contains password=bodyPass5"},
                ],
            },
        ),
        # A token of any shape is hidden once the CLI has used it.
        "GET /api/v1/me": (
            403,
            PROBLEM,
            {"title": "Forbidden", "status": 403, "detail": f"{opaque} may not do this"},
        ),
    }
    with LeakyInstance(routes) as leaky:
        base = ["--instance", leaky.url, "--token", TOKEN, "--workspace", "w1"]
        unauthorized = cli(*base, "publication", "list")
        invalid = cli(*base, "publication", "create", "--text", "x", "--account", "a1")
        echoed = cli(*base, "workspace", "list")  # unknown route: echoes the Authorization header
        forbidden = cli("--instance", leaky.url, "--token", opaque, "auth", "status")

    assert unauthorized.exit_code == 3
    assert invalid.exit_code == 4
    assert echoed.exit_code == 4
    assert forbidden.exit_code == 3
    for result in (unauthorized, invalid, echoed, forbidden):
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        assert len(lines) == 1, result.stderr
        assert lines[0].startswith("herald: error: ")
        assert result.stdout == ""
    assert "body.text: contains password=[REDACTED]" in invalid.stderr
    _assert_clean(
        unauthorized.output + invalid.output + echoed.output + forbidden.output,
        "problemKey4",
        "bodyPass5",
        opaque,
    )


def test_a_redirect_to_a_url_with_credentials(cli: Cli) -> None:
    routes = {
        "GET /api/v1/me": (
            302,
            {"Location": "https://login.example/cb?token=redirectToken6&sig=redirectSig7"},
            b"",
        ),
    }
    with LeakyInstance(routes) as leaky:
        result = cli("--instance", leaky.url, "--token", TOKEN, "auth", "status")

    assert result.exit_code == 5
    assert "redirected /me to https://login.example/cb?token=[REDACTED]" in result.stderr
    _assert_clean(result.output, "redirectToken6", "redirectSig7")


def test_diagnostics_of_an_instance_that_echoes_secrets(cli: Cli, tmp_path: Path) -> None:
    routes = {
        "GET /api/v1/health": (200, {}, {"status": "ok"}),
        "GET /api/v1/ready": (200, {}, {"status": "ready", "database": "ok"}),
        "GET /api/v1/me": (
            200,
            {},
            {
                "user": {"id": "u1", "is_instance_admin": False},
                "organizations": [],
                "workspaces": [{"id": "w1", "name": "Main"}],
                "token": {"name": "deploy password=tokenNamePass8", "permissions": ["api:read"]},
            },
        ),
        "GET /api/v1/workspaces/w1/usage": (
            500,
            PROBLEM,
            {
                "title": "Internal Server Error",
                "status": 500,
                "detail": "redis://:usagePass9@c:6379",
            },
        ),
        "GET /api/v1/provider-readiness": (
            502,
            PROBLEM,
            {"title": "Bad Gateway", "status": 502, "detail": f"upstream said Bearer {TOKEN}"},
        ),
        "GET /api/v1/account-providers": (
            200,
            {},
            {
                "providers": [
                    {
                        "provider": "telegram",
                        "readiness": {
                            "state": "degraded",
                            "blockers": [
                                {
                                    "code": "provider_error",
                                    "detail": "bot123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/getMe",
                                }
                            ],
                        },
                    }
                ]
            },
        ),
    }
    log = tmp_path / "herald.log"
    log.write_text(PEM + "\nAuthorization: Bearer logBearer10\n", encoding="utf-8")
    with LeakyInstance(routes) as leaky:
        args = ["instance", "diagnostics", "--instance", leaky.url, "--provider", "telegram"]
        args += ["--logs-file", str(log)]
        human = cli(*args, env={"HERALD_TOKEN": TOKEN})
        as_json = cli(*args, "--json", env={"HERALD_TOKEN": TOKEN})

    assert human.exit_code == as_json.exit_code == 0, human.output
    report = json_of(as_json)
    assert report["workspace"]["source"] == "the only workspace the token reaches"
    assert report["provider"]["state"] == "degraded"
    assert any(problem.startswith("workspace w1: 500") for problem in report["problems"])
    assert any(problem.startswith("provider readiness: 502") for problem in report["problems"])
    assert report["logs"]["lines"][-1] == "Authorization: Bearer [REDACTED]"
    _assert_clean(
        human.output + as_json.output,
        "tokenNamePass8",
        "usagePass9",
        "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw",
        "pemSecretLine",
        "logBearer10",
    )


def test_a_proxy_failure_never_shows_the_proxy_password(cli: Cli) -> None:
    proxy = closed_port_url().replace("http://", "http://proxyuser:proxyPass11@")
    env: dict[str, str | None] = {"HTTP_PROXY": proxy, "http_proxy": proxy}
    env.update({"NO_PROXY": None, "no_proxy": None, "ALL_PROXY": None, "all_proxy": None})

    result = cli(
        "--instance", "http://herald.invalid", "--token", TOKEN, "workspace", "list", env=env
    )

    assert result.exit_code == 5
    assert result.stderr.startswith("herald: error: Cannot reach http://herald.invalid")
    _assert_clean(result.output, "proxyPass11")


def test_an_unexpected_failure_is_one_redacted_line(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cli.client import HeraldClient

    def broken(self: HeraldClient) -> list[Any]:
        raise RuntimeError(f"boom while sending Authorization: Bearer {TOKEN}\nsecond line")

    monkeypatch.setattr(HeraldClient, "workspaces", broken)

    result = cli("--instance", "http://127.0.0.1:9", "--token", TOKEN, "workspace", "list")

    assert result.exit_code == 1
    assert result.stderr.startswith("herald: error: unexpected RuntimeError: boom while sending")
    assert len(result.stderr.strip().splitlines()) == 1
    _assert_clean(result.output)


def test_a_mistyped_command_line_does_not_echo_a_token(cli: Cli) -> None:
    extra = cli("workspace", "list", TOKEN)
    unknown = cli("--instance", "http://127.0.0.1:9", TOKEN, "workspace", "list")
    bad_value = cli("publication", "list", "--limit", TOKEN)

    for result in (extra, unknown, bad_value):
        assert result.exit_code == 2
        assert "[REDACTED]" in result.stderr
        _assert_clean(result.output)


def test_the_tool_interface_logs_are_redacted(caplog: pytest.LogCaptureFixture) -> None:
    from cli.commands.mcp import RedactingFormatter

    formatter = RedactingFormatter("%(levelname)s %(name)s: %(message)s")
    try:
        raise ValueError(f"request to https://h/?api_key=logKey12 with {TOKEN}")
    except ValueError:
        record = logging.getLogger("herald.mcp").makeRecord(
            "herald.mcp", logging.ERROR, __file__, 1, "Tool %s failed", ("x",), sys.exc_info()
        )
    text = formatter.format(record)

    assert "Traceback" in text
    assert "ValueError" in text
    _assert_clean(text, "logKey12")
    json.dumps(text)  # a plain string


def test_redaction_takes_linear_time_on_pathological_lines() -> None:
    import time

    # Long runs that made earlier patterns backtrack quadratically (minutes for 100 kB).
    lines = [
        "password" * 12_500,
        "a://" * 25_000,
        "ab-c_d." * 14_000,
        "x://a:" + "b@" * 50_000,
        '"password"' * 10_000,
        "--password" * 10_000,
    ]
    started = time.perf_counter()
    for line in lines:
        redact(line)

    assert time.perf_counter() - started < 5  # about 0.1 s; quadratic patterns took minutes
