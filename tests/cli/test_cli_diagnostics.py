"""``herald instance diagnostics`` and ``herald provider readiness`` against a live test server,
and the redaction of tokens, passwords and keys in everything the CLI prints."""

from __future__ import annotations

import platform
from pathlib import Path
from typing import Any

import pytest
import requests

from cli import cli_version
from cli.redact import redact
from config.version import RELEASE, source_revision
from tests.cli_support import (
    Cli,
    closed_port_url,
    forget_remembered_secrets,  # noqa: F401 (autouse fixture)
    json_of,
)

API = "/api/v1"


# --- redaction ---------------------------------------------------------------------------------

SECRETS = {
    "hrld_1a2b3c4d_Zq9xW8vU7tS6rR5qP4oN3mL2kJ1iH0gFeDcBa987654": "an API token",
    "eyJhbGciOiJIUzI1NiJ9.cGF5bG9hZA.c2lnbmF0dXJl": "a bearer JWT",
    "s3cr3t-Db-Pa55": "a database password in a URL",
    "hunter2-correct-horse": "a password field",
    "AKIAEXAMPLEKEY123456secretvalue": "an API key in a query string",
    "wJalrXUtnFEMI-K7MDENG-bPxRfiCYEXAMPLEKEY": "an environment secret",
    "tok_ABCdef123456-webhook_secret": "a webhook token in a URL path",
    "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw": "a Telegram bot token",
    "json-secret-value-42": "a JSON password member",
}

LOG_LINES = [
    "GET /api/v1/me Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.cGF5bG9hZA.c2lnbmF0dXJl",
    "token used: hrld_1a2b3c4d_Zq9xW8vU7tS6rR5qP4oN3mL2kJ1iH0gFeDcBa987654 for workspace",
    "connecting to postgres://herald:s3cr3t-Db-Pa55@db.internal:5432/herald",
    "login failed for admin password=hunter2-correct-horse",
    "calling https://api.example.com/v1/items?limit=5&api_key=AKIAEXAMPLEKEY123456secretvalue",
    "env AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI-K7MDENG-bPxRfiCYEXAMPLEKEY loaded",
    "POST https://discord.com/api/webhooks/123456789/tok_ABCdef123456-webhook_secret?wait=true",
    "POST https://api.telegram.org/bot123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/sendMessage",
    'body {"username": "ann", "password": "json-secret-value-42"}',
]


def test_redact_removes_every_kind_of_secret() -> None:
    for line in LOG_LINES:
        cleaned = redact(line)
        for secret, what in SECRETS.items():
            assert secret not in cleaned, (what, cleaned)
        assert "[REDACTED]" in cleaned
    # What is not secret stays readable.
    assert (
        redact("GET /api/v1/publications?limit=5 200 (12 ms)")
        == "GET /api/v1/publications?limit=5 200 (12 ms)"
    )
    assert redact("postgres://db.internal:5432/herald") == "postgres://db.internal:5432/herald"


def test_log_tail_reads_only_the_end_of_a_large_file(tmp_path: Path) -> None:
    from cli.diagnostics import tail_lines

    path = tmp_path / "big.log"
    path.write_text("".join(f"{n:06d} {'x' * 90}\n" for n in range(20_000)), encoding="utf-8")

    lines = tail_lines(path)

    assert len(lines) == 100
    assert lines[0].startswith("019900 ")
    assert lines[-1].startswith("019999 ")
    assert tail_lines(tmp_path / "big.log", 3) == [
        f"{n:06d} {'x' * 90}" for n in (19997, 19998, 19999)
    ]


def test_log_tail_of_enormous_lines_is_bounded_and_never_starts_mid_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cli import diagnostics

    monkeypatch.setattr(diagnostics, "LOG_TAIL_MAX_BYTES", 200_000)
    path = tmp_path / "wide.log"
    # A line whose secret would be cut in half by the byte limit, then a few huge lines.
    secret_line = "x" * 150_000 + " password=hunter2-cut-in-half"
    path.write_text(
        secret_line + "\n" + "".join(f"{n} {'y' * 60_000}\n" for n in range(3)), encoding="utf-8"
    )

    lines = diagnostics.redacted_tail(path)

    assert [line.split(" ", 1)[0] for line in lines] == ["0", "1", "2"]
    assert all(len(line) < 2100 for line in lines)
    assert lines[0].endswith("… (58002 more characters)")
    assert "hunter2" not in "".join(lines)


def _log_file(tmp_path: Path) -> Path:
    lines = [f"line {n:03d} ordinary request handled" for n in range(1, 121)]
    lines += [f"line {121 + i:03d} {text}" for i, text in enumerate(LOG_LINES)]
    lines += ["line 130 \x1b[31mred\x1b[0m escape"]
    path = tmp_path / "herald.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.django_db(transaction=True)
def test_diagnostics_redacts_the_log_tail(cli: Cli, url: str, token: str, tmp_path: Path) -> None:
    log = _log_file(tmp_path)

    human = cli(
        "instance",
        "diagnostics",
        "--instance",
        url,
        "--logs-file",
        str(log),
        env={"HERALD_TOKEN": token},
    )
    as_json = cli(
        "instance",
        "diagnostics",
        "--instance",
        url,
        "--logs-file",
        str(log),
        "--json",
        env={"HERALD_TOKEN": token},
    )

    assert human.exit_code == as_json.exit_code == 0, human.output + as_json.output
    for output in (human.output, as_json.output):
        for secret, what in SECRETS.items():
            assert secret not in output, what
        assert token not in output
        assert "\x1b[" not in output
    report = json_of(as_json)
    # No workspace selected: the only one the token reaches is the active one (plan and usage).
    assert report["workspace"]["source"] == "the only workspace the token reaches"
    assert report["workspace"]["plan"]["code"] == "self_hosted"
    # Every limit has its usage; storage (media_bytes) is reported without a limit.
    assert set(report["workspace"]["limits"]) <= set(report["workspace"]["usage"])
    lines = report["logs"]["lines"]
    assert len(lines) == 100  # the last 100 of 130
    assert lines[0].startswith("line 031 ")
    assert lines[-1] == "line 130 red escape"
    assert "Log tail: " in human.stdout
    assert "(last 100 lines, redacted)" in human.stdout


# --- diagnostics -------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_diagnostics_without_a_token(cli: Cli, url: str, config_dir: Path) -> None:
    cli("instance", "add", "local", url)

    result = cli("instance", "diagnostics", "--json", "--deployment", "docker-compose")

    assert result.exit_code == 0, result.output
    report = json_of(result)
    assert report["cli_version"] == cli_version()
    assert report["os"] == {
        "system": platform.system(),
        "release": platform.release(),
        "architecture": platform.machine(),
    }
    assert report["deployment"] == "docker-compose"
    assert report["profile"] == {"name": "local", "source": "current profile in config.json"}
    assert report["instance"] == {"url": url, "source": "profile 'local'"}
    assert report["config"]["directory"] == str(config_dir)
    assert report["config"]["profiles_file"] == {
        "path": str(config_dir / "config.json"),
        "exists": True,
        "mode": "0600",
    }
    assert report["config"]["credentials_file"]["exists"] is False
    assert report["probes"] == {
        "instance": url,
        "liveness": "ok",
        "readiness": "ready",
        "database": "ok",
    }
    assert report["server_version"] == {
        "release": RELEASE,
        "source_revision": source_revision(),
    }
    assert report["token"] == {"present": False, "source": "not set"}
    for absent in ("user", "counts", "account_providers", "workspace", "provider"):
        assert absent not in report
    assert report["problems"] == []

    human = cli("instance", "diagnostics", "--deployment", "docker-compose")
    assert human.exit_code == 0
    for label, value in [
        ("CLI version", cli_version()),
        ("Herald version", f"{RELEASE} (source {source_revision()})"),
        ("Profile", "local"),
        ("Instance URL", url),
        ("Deployment", "docker-compose"),
        ("Liveness", "ok"),
        ("Readiness", "ready"),
        ("Database", "ok"),
        ("Token", "absent"),
        ("Profiles file", "mode 0600"),
        ("OS / architecture", platform.machine()),
    ]:
        assert any(
            line.startswith(label) and value in line for line in human.stdout.splitlines()
        ), label


@pytest.mark.django_db(transaction=True)
def test_diagnostics_with_a_token(
    cli: Cli, url: str, token: str, workspace: Any, owner_client: Any
) -> None:
    from tests.publishing_support import make_account

    make_account(workspace, "discord_webhook")
    catalogue = owner_client.get(
        f"{API}/account-providers", {"workspace_id": str(workspace.pk)}
    ).json()
    usage = owner_client.get(f"{API}/workspaces/{workspace.pk}/usage").json()
    projection = owner_client.get(
        f"{API}/provider-readiness", {"workspace_id": str(workspace.pk)}
    ).json()
    discord = next(p for p in projection["providers"] if p["provider"] == "discord_webhook")

    result = cli(
        "instance",
        "diagnostics",
        "--json",
        "--instance",
        url,
        "--workspace",
        str(workspace.pk),
        "--provider",
        "discord_webhook",
        env={"HERALD_TOKEN": token},
    )

    assert result.exit_code == 0, result.output
    assert token not in result.output
    report = json_of(result)
    assert report["token"]["present"] is True
    assert report["token"]["source"] == "environment HERALD_TOKEN"
    assert report["token"]["accepted"] is True
    assert report["token"]["permissions"] == ["api:read", "api:write"]
    assert report["counts"] == {"organizations": 1, "workspaces": 1}
    assert report["user"]["is_instance_admin"] is False

    states: dict[str, int] = {}
    for entry in catalogue["providers"]:
        state = (entry.get("readiness") or entry)["state"]
        states[state] = states.get(state, 0) + 1
    assert report["account_providers"] == {
        "workspace_id": str(workspace.pk),
        "total": len(catalogue["providers"]),
        "states": states,
    }
    assert report["provider"]["name"] == "discord_webhook"
    assert report["provider"]["state"] == discord["state"]
    assert report["provider"]["connected_accounts"] == discord["connected_accounts"] == 1

    assert report["workspace"]["id"] == str(workspace.pk)
    assert report["workspace"]["source"] == "flag --workspace"
    assert report["workspace"]["name"] == "Main"
    assert report["workspace"]["plan"] == usage["plan"]
    assert report["workspace"]["usage"] == usage["usage"]
    assert report["workspace"]["limits"] == usage["limits"]

    human = cli(
        "instance",
        "diagnostics",
        "--instance",
        url,
        "--workspace",
        str(workspace.pk),
        "--provider",
        "discord_webhook",
        env={"HERALD_TOKEN": token},
    )
    assert human.exit_code == 0
    text = human.stdout
    assert token not in human.output
    for label in (
        "Token ",
        "Token scope",
        "User",
        "Organizations",
        "Workspaces",
        "Active workspace",
        "Plan",
        "Usage",
        "Account providers",
        "Provider discord_webhook",
    ):
        assert any(line.startswith(label) for line in text.splitlines()), label
    assert "present (environment HERALD_TOKEN), accepted" in text


@pytest.mark.django_db(transaction=True)
def test_diagnostics_reports_a_refused_token_and_an_unreachable_instance(
    cli: Cli, url: str
) -> None:
    refused = cli(
        "instance",
        "diagnostics",
        "--json",
        "--instance",
        url,
        "--token",
        "hrld_0123abcd_" + "z" * 43,
    )
    report = json_of(refused)
    assert refused.exit_code == 0
    assert report["token"]["accepted"] is False
    assert any(
        problem.startswith("API token refused: 401 Unauthorized") for problem in report["problems"]
    )
    assert "zzzz" not in refused.output

    dead = closed_port_url()
    unreachable = json_of(cli("instance", "diagnostics", "--json", "--instance", dead))
    assert unreachable["probes"]["liveness"] == "unreachable"
    assert any("Connection refused" in problem for problem in unreachable["problems"])


# --- provider readiness ------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_provider_readiness_json_equals_the_api(
    cli: Cli, url: str, token: str, workspace: Any
) -> None:
    from tests.publishing_support import make_account

    make_account(workspace, "discord_webhook")

    result = cli("provider", "readiness", "--json", "--instance", url, "--token", token)
    expected = requests.get(
        f"{url}{API}/provider-readiness",
        params={"workspace_id": str(workspace.pk)},
        headers={"Authorization": f"Bearer {token}"},
        timeout=10,
    )

    assert result.exit_code == 0, result.output
    assert expected.status_code == 200
    assert json_of(result) == expected.json()
    assert any(entry["connected_accounts"] == 1 for entry in expected.json()["providers"])


@pytest.mark.django_db(transaction=True)
def test_provider_readiness_table(
    cli: Cli, url: str, token: str, workspace: Any, owner_client: Any, settings: Any
) -> None:
    settings.HERALD_DISABLED_PROVIDERS = ["telegram"]
    projection = owner_client.get(
        f"{API}/provider-readiness", {"workspace_id": str(workspace.pk)}
    ).json()

    result = cli("provider", "readiness", "--instance", url, "--token", token)

    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["PROVIDER", "STATE", "ACCOUNTS", "BLOCKERS", "NEXT", "ACTION"]
    rows = {line.split()[0]: line for line in lines[1:]}
    assert set(rows) == {entry["provider"] for entry in projection["providers"]}
    telegram = next(entry for entry in projection["providers"] if entry["provider"] == "telegram")
    assert telegram["state"] == "disabled"
    assert rows["telegram"].split()[1:3] == ["disabled", "0"]
    for issue in telegram["blocking_issues"]:
        assert issue["code"] in rows["telegram"]
    assert "re-enable the provider" in rows["telegram"]
