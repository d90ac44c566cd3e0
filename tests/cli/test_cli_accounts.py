"""``herald account providers|connect|disconnect`` and ``herald publication create --publish-now
--follow`` against a live test server (pytest-django ``live_server``) and the stand-in providers
on 127.0.0.1: credential providers connect at once, an OAuth provider is authorized by a real
"browser" (the ``BROWSER`` command Python's ``webbrowser`` runs) while the installed ``herald``
polls for the account, and credential field values are never printed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import requests

from publishing.models import Account
from tests.cli_support import (
    Cli,
    LeakyInstance,
    forget_remembered_secrets,  # noqa: F401 (autouse fixture)
    json_of,
    one_line,
)
from tests.providers.bluesky.standin import BlueskyStandIn
from tests.providers.discord_webhook.standin import DiscordWebhookStandIn
from tests.providers.mastodon.standin import MastodonStandIn
from tests.publishing_support import connect_fields
from workspaces.models import User

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def base(live_server: Any, make_token: Callable[..., str], user: User, workspace: Any) -> list[str]:
    """``--instance URL --token TOKEN`` of the workspace owner (the only workspace)."""
    return ["--instance", str(live_server.url), "--token", make_token(user)]


def labelled(stdout: str) -> dict[str, str]:
    """``Label  value`` lines of a detail view."""
    found = {}
    for line in stdout.splitlines():
        label, separator, value = line.partition("  ")
        if separator and label.strip() and not label.startswith(" "):
            found[label.strip()] = value.strip()
    return found


# --- providers ---------------------------------------------------------------------------------


def test_providers_lists_the_catalogue_with_readiness(
    cli: Cli, base: list[str], workspace: Any
) -> None:
    api = requests.get(
        f"{base[1]}/api/v1/account-providers",
        params={"workspace_id": str(workspace.pk)},
        headers={"Authorization": f"Bearer {base[3]}"},
        timeout=10,
    ).json()

    as_json = cli(*base, "account", "providers", "--json")
    assert as_json.exit_code == 0, as_json.output
    assert json_of(as_json) == api  # exactly the API's catalogue

    human = cli(*base, "account", "providers")
    assert human.exit_code == 0, human.output
    lines = human.stdout.splitlines()
    assert lines[0].split() == [
        "PROVIDER",
        "CONNECTION",
        "CONNECTABLE",
        "STATE",
        "CONNECT",
        "WITH",
        "BLOCKERS",
    ]
    rows = {line.split()[0]: line for line in lines[1:]}
    assert set(rows) == {entry["provider"] for entry in api["providers"]}
    for entry in api["providers"]:
        row = rows[entry["provider"]].split()
        assert row[1] == entry["connection"]
        assert row[2] == ("yes" if entry["readiness"]["connectable"] else "no")
        assert row[3] == entry["readiness"]["state"]
    assert "--field title=…" in rows["feed"]
    assert "--field handle=… --field app_password=…" in rows["bluesky"]
    assert "--instance-url URL" in rows["mastodon"]


# --- connect: credential providers -------------------------------------------------------------


def test_connect_a_credential_provider_prints_the_account_never_the_secret(
    cli: Cli, base: list[str], discord: DiscordWebhookStandIn
) -> None:
    webhook_url = connect_fields("discord_webhook", discord)["webhook_url"]

    result = cli(
        *base, "account", "connect", "discord_webhook", "--field", f"webhook_url={webhook_url}"
    )

    assert result.exit_code == 0, result.output
    account = Account.objects.get(provider="discord_webhook")
    shown = labelled(result.stdout)
    assert shown["ID"] == str(account.pk)
    assert shown["Provider"] == "discord_webhook"
    assert shown["Status"] == "active"
    assert f"--account {account.pk} --publish-now --follow" in result.stdout
    assert webhook_url not in result.output
    secret_part = webhook_url.rstrip("/").rsplit("/", 1)[-1]
    assert secret_part not in result.output


def test_connect_asks_for_a_field_given_without_a_value(
    cli: Cli, base: list[str], bluesky: BlueskyStandIn
) -> None:
    password = connect_fields("bluesky", bluesky)["app_password"]

    result = cli(
        *base,
        "account",
        "connect",
        "bluesky",
        "--field",
        "handle=herald.test",
        "--field",
        "app_password",  # read from stdin (a hidden prompt on a terminal)
        "--json",
        input=password + "\n",
    )

    assert result.exit_code == 0, result.output
    body = json_of(result)
    assert body["authorization_url"] is None
    assert body["account"]["username"] == "herald.test"
    assert body["account"]["provider"] == "bluesky"
    assert password not in result.output


def test_connect_a_feed_prints_its_public_url(cli: Cli, base: list[str], live_server: Any) -> None:
    result = cli(*base, "account", "connect", "feed", "--field", "title=My news")

    assert result.exit_code == 0, result.output
    shown = labelled(result.stdout)
    assert shown["Provider"] == "feed"
    assert shown["Profile URL"].startswith(f"{live_server.url}/feeds/")
    assert shown["Profile URL"].endswith(".atom")
    feed = requests.get(shown["Profile URL"], timeout=10)
    assert feed.status_code == 200
    assert "My news" in feed.text


def test_connect_refusals_have_exit_codes_and_never_quote_a_value(
    cli: Cli, base: list[str], bluesky: BlueskyStandIn
) -> None:
    secret = "not-the-app-password-7f3a9c"

    missing = cli(*base, "account", "connect", "bluesky", "--field", f"app_password={secret}")
    assert missing.exit_code == 4
    line = one_line(missing.stderr)
    assert line.startswith("herald: error: 422 ")
    assert "body.fields.handle" in line
    assert secret not in missing.output

    refused = cli(
        *base,
        "account",
        "connect",
        "bluesky",
        "--field",
        "handle=herald.test",
        "--field",
        f"app_password={secret}",
    )
    assert refused.exit_code in (4, 5), refused.output  # the provider refused the password
    assert secret not in refused.output
    assert not Account.objects.filter(provider="bluesky").exists()

    unknown = cli(*base, "account", "connect", "no-such-provider")
    assert unknown.exit_code == 4, unknown.output

    for bad in (f"{secret}", f"bad name={secret}", f"=x{secret}"):
        result = cli(*base, "account", "connect", "bluesky", "--field", bad, input="")
        assert result.exit_code == 2, (bad, result.output)
        assert secret not in result.output

    twice = cli(*base, "account", "connect", "feed", "--field", "title=a", "--field", "title=b")
    assert twice.exit_code == 2
    assert "given twice" in one_line(twice.stderr)


def test_a_secret_field_is_redacted_even_when_the_instance_echoes_it(cli: Cli) -> None:
    secret = "s3cr3t-webhook-signing-value"
    routes: dict[str, tuple[int, dict[str, str], Any]] = {
        "GET /api/v1/accounts": (200, {}, {"items": [], "next_cursor": None}),
        "POST /api/v1/accounts/connect": (
            422,
            {"Content-Type": "application/problem+json"},
            {
                "title": "Unprocessable Entity",
                "status": 422,
                "detail": f"Refused {secret} for https://hooks.example/in",
                "code": "invalid",
            },
        ),
    }
    with LeakyInstance(routes) as instance:
        result = cli(
            "--instance",
            instance.url,
            "--token",
            "hrld_0123abcd_" + "z" * 43,
            "--workspace",
            "ws",
            "account",
            "connect",
            "webhook",
            "--field",
            "url=https://hooks.example/in",
            "--field",
            f"secret={secret}",
        )
        sent = json.loads(
            next(b for m, p, b in instance.bodies if m == "POST" and p.endswith("/connect"))
        )

    assert result.exit_code == 4
    assert secret not in result.output
    assert "[REDACTED]" in result.stderr
    assert sent["fields"] == {"url": "https://hooks.example/in", "secret": secret}


# --- connect: OAuth ----------------------------------------------------------------------------


def fake_browser(tmp_path: Path) -> tuple[Path, Path]:
    """An executable the ``BROWSER`` variable names: it opens the authorization URL as a browser
    does and records it. The URL is Herald's start page: the person confirms there (a form with
    its CSRF token), the browser receives the nonce cookie and is sent to the provider, whose
    stand-in approves and redirects to Herald's callback with the cookie."""
    script = tmp_path / "fake-browser"
    seen = tmp_path / "browser-opened"
    script.write_text(
        f"#!{sys.executable}\n"
        "import pathlib, re, sys, requests\n"
        f"pathlib.Path({str(seen)!r}).write_text(sys.argv[1])\n"
        "browser = requests.Session()\n"
        "page = browser.get(sys.argv[1], timeout=10)\n"
        'token = re.search(r\'name="csrfmiddlewaretoken" value="([^"]+)"\', page.text)[1]\n'
        "response = browser.post(sys.argv[1], data={'csrfmiddlewaretoken': token}, timeout=10)\n"
        "sys.exit(0 if response.status_code == 200 else 1)\n",
        encoding="utf-8",
    )
    script.chmod(0o755)
    return script, seen


def test_connect_an_oauth_provider_opens_the_browser_and_waits_for_the_account(
    base: list[str], mastodon: MastodonStandIn, tmp_path: Path
) -> None:
    browser, seen = fake_browser(tmp_path)
    environment = {k: v for k, v in os.environ.items() if not k.startswith("HERALD_")}
    environment.pop("DISPLAY", None)
    environment.pop("WAYLAND_DISPLAY", None)
    environment.update({"BROWSER": str(browser), "HERALD_CONFIG_DIR": str(tmp_path / "config")})
    herald = Path(sys.executable).with_name("herald")

    completed = subprocess.run(
        [
            str(herald),
            *base,
            "account",
            "connect",
            "mastodon",
            "--instance-url",
            mastodon.url,
            "--interval",
            "0.2",
            "--timeout",
            "60",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=environment,
        check=False,
    )

    assert completed.returncode == 0, completed.stdout + completed.stderr
    authorization_url = seen.read_text()
    assert "/connections/authorize/" in authorization_url  # Herald's start page
    assert f"  {authorization_url}" in completed.stdout.splitlines()  # printed for the user too
    assert "Opened it in your browser." in completed.stderr
    assert "Waiting up to 60 s" in completed.stderr
    account = Account.objects.get(provider="mastodon")
    shown = labelled(completed.stdout)
    assert shown["ID"] == str(account.pk)
    assert shown["Status"] == "active"


def test_oauth_without_a_display_does_not_open_a_browser_and_times_out(
    cli: Cli, base: list[str], mastodon: MastodonStandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cli.commands import account as account_commands

    for name in ("BROWSER", "DISPLAY", "WAYLAND_DISPLAY"):
        monkeypatch.delenv(name, raising=False)
    clock = [0.0]
    monkeypatch.setattr(account_commands, "_monotonic", lambda: clock[0])
    monkeypatch.setattr(account_commands, "_sleep", lambda s: clock.__setitem__(0, clock[0] + s))
    args = [*base, "account", "connect", "mastodon", "--instance-url", mastodon.url]

    waited = cli(*args, "--interval", "2", "--timeout", "10")

    assert waited.exit_code == 1
    url_line = waited.stdout.splitlines()[1].strip()
    assert "/connections/authorize/" in url_line
    assert "Open it in a browser; this command waits for you." in waited.stderr
    assert "no mastodon account appeared within 10 s" in waited.stderr
    assert clock[0] == 10.0  # five polls two seconds apart, then it gave up

    no_wait = cli(*args, "--no-wait", "--json")
    assert no_wait.exit_code == 0, no_wait.output
    body = json_of(no_wait)  # stdout is only the JSON document
    assert body["account"] is None
    assert "/connections/authorize/" in body["authorization_url"]
    assert body["authorization_url"] in no_wait.stderr
    assert not Account.objects.filter(provider="mastodon").exists()


# --- disconnect --------------------------------------------------------------------------------


def test_disconnect_asks_first_unless_yes(cli: Cli, base: list[str], live_server: Any) -> None:
    first = json_of(cli(*base, "account", "connect", "feed", "--field", "title=One", "--json"))
    account_id = first["account"]["id"]

    declined = cli(*base, "account", "disconnect", account_id, input="n\n")
    assert declined.exit_code == 1
    assert f"Disconnect feed @{first['account']['username']} ({account_id})? [y/N]" in (
        declined.stderr
    )
    assert "Nothing disconnected." in declined.stderr
    no_answer = cli(*base, "account", "disconnect", account_id, input="")
    assert no_answer.exit_code == 1
    assert Account.objects.get(pk=account_id).status == "active"

    agreed = cli(*base, "account", "disconnect", account_id, input="y\n")
    assert agreed.exit_code == 0, agreed.output
    assert f"Disconnected feed @{first['account']['username']}" in agreed.stdout
    assert Account.objects.get(pk=account_id).status == "disconnected"

    second = json_of(cli(*base, "account", "connect", "feed", "--field", "title=Two", "--json"))
    forced = cli(*base, "account", "disconnect", second["account"]["id"], "--yes", "--json")
    assert forced.exit_code == 0, forced.output
    assert json_of(forced) == {
        "id": second["account"]["id"],
        "provider": "feed",
        "disconnected": True,
    }
    listed = json_of(cli(*base, "account", "list", "--json"))
    assert [a["id"] for a in listed["items"] if a["status"] != "disconnected"] == []

    missing = cli(*base, "account", "disconnect", "00000000-0000-0000-0000-000000000000", "--yes")
    assert missing.exit_code == 4
    assert one_line(missing.stderr).startswith("herald: error: 404 Not Found")


# --- publication create --publish-now --follow --------------------------------------------------


def test_publication_create_publish_now_follow(
    cli: Cli,
    base: list[str],
    discord: DiscordWebhookStandIn,
    delivery_queue: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from cli.commands import publication as publication_commands

    webhook_url = connect_fields("discord_webhook", discord)["webhook_url"]
    hook = json_of(
        cli(
            *base,
            "account",
            "connect",
            "discord_webhook",
            "--field",
            f"webhook_url={webhook_url}",
            "--json",
        )
    )["account"]
    monkeypatch.setattr(publication_commands, "_sleep", lambda seconds: delivery_queue.run())

    result = cli(
        *base,
        "publication",
        "create",
        "--text",
        "Shipped in one command",
        "--account",
        hook["id"],
        "--publish-now",
        "--follow",
        "--interval",
        "0.1",
    )

    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("Created publication ")
    assert "queued → published" in result.stdout
    assert "published (revision" in result.stdout
    assert [m["content"] for m in discord.messages.values()] == ["Shipped in one command"]

    queued = cli(
        *base,
        "publication",
        "create",
        "--text",
        "Later",
        "--account",
        hook["id"],
        "--publish-now",
        "--json",
    )
    assert queued.exit_code == 0, queued.output
    assert json_of(queued)["status"] == "publishing"
    assert [d["status"] for d in json_of(queued)["destinations"]] == ["queued"]

    lonely_follow = cli(
        *base, "publication", "create", "--text", "x", "--account", hook["id"], "--follow"
    )
    assert lonely_follow.exit_code == 2
    assert "--follow needs --publish-now" in one_line(lonely_follow.stderr)


@pytest.mark.timeout(30)
def test_a_listing_that_never_ends_is_an_error_not_a_hang(cli: Cli) -> None:
    endless = {"items": [{"id": "a1", "provider": "feed", "updated_at": "x"}], "next_cursor": "c"}
    routes: dict[str, tuple[int, dict[str, str], Any]] = {
        "GET /api/v1/accounts": (200, {}, endless),
        "POST /api/v1/accounts/connect": (
            200,
            {},
            {"account": None, "authorization_url": "https://provider.example/authorize?x=1"},
        ),
    }
    with LeakyInstance(routes) as instance:
        result = cli(
            "--instance",
            instance.url,
            "--token",
            "hrld_0123abcd_" + "z" * 43,
            "--workspace",
            "ws",
            "account",
            "connect",
            "mastodon",
            "--no-browser",
        )

    assert result.exit_code == 5
    assert "repeated a page cursor of /accounts" in one_line(result.stderr)
