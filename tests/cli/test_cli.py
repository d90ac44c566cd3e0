"""The ``herald`` CLI against a live test server (pytest-django ``live_server``): health probes,
profiles and precedence, authentication, errors, workspaces, accounts and publications."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cli.config import ConfigStore
from cli.errors import UsageProblem
from tests.cli_support import (
    Cli,
    closed_port_url,
    forget_remembered_secrets,  # noqa: F401 (autouse fixture)
    json_of,
    mode,
    one_line,
    permissive_umask,
)
from workspaces.models import User

pytestmark = pytest.mark.django_db(transaction=True)


# --- instance health ---------------------------------------------------------------------------


def test_health_human_output(cli: Cli, url: str) -> None:
    result = cli("instance", "health", "--instance", url)

    assert result.exit_code == 0, result.output
    lines = dict(line.split(None, 1) for line in result.stdout.splitlines())
    assert lines == {"Instance": url, "Liveness": "ok", "Readiness": "ready", "Database": "ok"}


def test_health_json_output(cli: Cli, url: str) -> None:
    result = cli("instance", "health", "--json", "--instance", url + "/api/v1/")

    assert result.exit_code == 0, result.output
    assert json_of(result) == {
        "instance": url,
        "liveness": "ok",
        "readiness": "ready",
        "database": "ok",
    }


def test_health_exits_non_zero_when_readiness_fails(
    cli: Cli, url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from django.db import OperationalError

    from config import health

    def database_down() -> None:
        raise OperationalError("connection refused")

    monkeypatch.setattr(health, "_probe_database", database_down)

    result = cli("instance", "health", "--json", "--instance", url)
    assert result.exit_code == 1
    assert json_of(result) == {
        "instance": url,
        "liveness": "ok",
        "readiness": "not_ready",
        "database": "unavailable",
    }
    assert "ready: 503" in result.stderr

    human = cli("instance", "health", "--instance", url)
    assert human.exit_code == 1
    assert "Readiness  not_ready (503 Not ready: database unavailable.)" in human.stdout
    assert "Database   unavailable" in human.stdout


def test_health_of_an_unreachable_instance(cli: Cli) -> None:
    dead = closed_port_url()

    result = cli("instance", "health", "--json", "--instance", dead)

    assert result.exit_code == 1
    assert json_of(result) == {
        "instance": dead,
        "liveness": "unreachable",
        "readiness": "unreachable",
        "database": "unknown",
    }
    assert f"Cannot reach {dead}: Connection refused" in result.stderr


# --- profiles, precedence, files ---------------------------------------------------------------


def test_instance_add_and_use_select_profiles(cli: Cli, url: str, config_dir: Path) -> None:
    dead = closed_port_url()

    first = cli("instance", "add", "local", url)
    assert first.exit_code == 0, first.output
    assert "Selected 'local'" in first.stdout
    assert cli("instance", "add", "broken", dead).exit_code == 0

    listed = cli("instance", "list", "--json")
    assert json_of(listed)["current_profile"] == "local"
    assert cli("instance", "health").exit_code == 0  # the selected profile: the live server

    assert cli("instance", "use", "broken").exit_code == 0
    assert cli("instance", "health").exit_code == 1
    assert cli("instance", "health", "--profile", "local").exit_code == 0
    assert cli("instance", "health", env={"HERALD_PROFILE": "local"}).exit_code == 0

    text = cli("instance", "list").stdout
    assert "*  broken" in text
    assert json.loads((config_dir / "config.json").read_text())["current_profile"] == "broken"

    unknown = cli("instance", "use", "nope")
    assert unknown.exit_code == 2
    assert "No profile named 'nope'" in one_line(unknown.stderr)


def test_instance_flag_works_without_saved_state(cli: Cli, url: str, config_dir: Path) -> None:
    result = cli("--instance", url, "instance", "health")

    assert result.exit_code == 0, result.output
    assert not config_dir.exists()  # nothing was saved


def test_precedence_flag_over_environment_over_profile(cli: Cli, url: str) -> None:
    dead = closed_port_url()
    cli("instance", "add", "saved", dead)

    assert cli("instance", "health").exit_code == 1  # profile
    assert cli("instance", "health", env={"HERALD_INSTANCE": url}).exit_code == 0  # env > profile
    both = cli("instance", "health", "--instance", url, env={"HERALD_INSTANCE": dead})
    assert both.exit_code == 0  # flag > env
    assert (
        cli("instance", "health", "--instance", dead, env={"HERALD_INSTANCE": url}).exit_code == 1
    )


def test_precedence_of_every_setting(config_dir: Path) -> None:
    from cli.context import GlobalOptions, HeraldContext

    store = ConfigStore(config_dir)
    store.save_profile("saved", "https://saved.example")
    store.set_workspace("saved", "ws-profile")
    store.set_token("saved", "hrld_0000aaaa_" + "p" * 43)
    store.save_profile("other", "https://other.example")
    environment = {
        "HERALD_INSTANCE": "https://env.example",
        "HERALD_WORKSPACE": "ws-env",
        "HERALD_TOKEN": "hrld_1111bbbb_" + "e" * 43,
        "HERALD_PROFILE": "other",
    }
    flags = GlobalOptions(
        instance="https://flag.example",
        workspace="ws-flag",
        token="hrld_2222cccc_" + "f" * 43,
        profile="saved",
    )

    def settings(options: GlobalOptions, environ: dict[str, str]) -> dict[str, Any]:
        hx = HeraldContext(options=options, store=store, environ=environ)
        return {
            "profile": hx.profile_setting.source,
            "instance": hx.instance_setting.value,
            "workspace": hx.workspace_setting.value,
            "token": hx.token_setting.source,
        }

    assert settings(flags, environment) == {
        "profile": "flag --profile",
        "instance": "https://flag.example",
        "workspace": "ws-flag",
        "token": "flag --token",
    }
    assert settings(GlobalOptions(), environment) == {
        "profile": "environment HERALD_PROFILE",
        "instance": "https://env.example",
        "workspace": "ws-env",
        "token": "environment HERALD_TOKEN",
    }
    assert settings(GlobalOptions(), {}) == {
        "profile": "current profile in config.json",
        "instance": "https://saved.example",
        "workspace": "ws-profile",
        "token": "credentials.json (profile 'saved')",
    }
    # The profile's token and workspace follow only its own instance.
    assert settings(GlobalOptions(instance="https://flag.example"), {}) == {
        "profile": "current profile in config.json",
        "instance": "https://flag.example",
        "workspace": None,
        "token": "not set",
    }


def test_the_installed_console_script(url: str, config_dir: Path) -> None:
    import subprocess
    import sys

    script = Path(sys.executable).with_name("herald")
    completed = subprocess.run(
        [str(script), "instance", "health", "--json", "--instance", url],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout)["readiness"] == "ready"


def test_global_options_before_or_after_the_subcommand(cli: Cli, url: str) -> None:
    before = cli("--json", "--instance", url, "instance", "health")
    after = cli("instance", "health", "--instance", url, "--json")

    assert before.exit_code == after.exit_code == 0
    assert json_of(before) == json_of(after)


def test_bad_urls_names_and_files_are_usage_errors(cli: Cli, config_dir: Path) -> None:
    for args in (
        ("instance", "add", "x", "ftp://example.com"),
        ("instance", "add", "x", "https://user:pw@example.com"),
        ("instance", "add", "bad name", "https://example.com"),
    ):
        result = cli(*args)
        assert result.exit_code == 2, args
        assert "pw" not in one_line(result.stderr)

    odd_token = cli(
        "--instance", "http://127.0.0.1:9", "--token", "hrld_ab cd\u2026", "workspace", "list"
    )
    assert odd_token.exit_code == 2
    assert "hrld_ab" not in one_line(odd_token.stderr)

    config_dir.mkdir()
    (config_dir / "config.json").write_text("{", encoding="utf-8")
    broken = cli("instance", "list")
    assert broken.exit_code == 2
    assert "config.json is not valid JSON" in one_line(broken.stderr)


def test_no_instance_is_a_usage_error(cli: Cli) -> None:
    result = cli("instance", "health")

    assert result.exit_code == 2
    assert "No instance: pass --instance URL" in one_line(result.stderr)


def test_profile_and_credentials_files_are_created_with_mode_0600(
    cli: Cli, url: str, token: str, config_dir: Path
) -> None:
    with permissive_umask():
        assert cli("instance", "add", "local", url).exit_code == 0
        login = cli("auth", "login", input=token + "\n")

    assert login.exit_code == 0, login.output
    assert mode(config_dir) == 0o700
    assert mode(config_dir / "config.json") == 0o600
    assert mode(config_dir / "credentials.json") == 0o600
    assert token not in (config_dir / "config.json").read_text()
    assert (
        json.loads((config_dir / "credentials.json").read_text())["profiles"]["local"]["token"]
        == token
    )
    assert sorted(p.name for p in config_dir.iterdir()) == ["config.json", "credentials.json"]

    # Rewrites keep the mode, even of a file someone loosened.
    (config_dir / "config.json").chmod(0o644)
    with permissive_umask():
        assert cli("instance", "add", "other", url).exit_code == 0
    assert mode(config_dir / "config.json") == 0o600


def test_private_files_are_never_readable_by_others_not_even_for_a_moment(
    config_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    from cli import config as config_module

    renamed: list[tuple[int, str]] = []
    real_replace = os.replace

    def replace(source: str, target: Any) -> None:
        # The temporary file holds the whole secret before it is renamed into place: it must
        # already be private at that moment (and from its creation, since mkstemp makes it 0600).
        renamed.append((mode(Path(source)), Path(source).read_text()))
        real_replace(source, target)

    monkeypatch.setattr(config_module.os, "replace", replace)
    store = ConfigStore(config_dir)
    with permissive_umask():
        store.save_profile("local", "https://herald.example.com")
        store.set_token("local", "hrld_0123abcd_" + "t" * 43)

    assert [m for m, _ in renamed] == [0o600, 0o600]
    assert "hrld_0123abcd_" in renamed[1][1]

    # A write that fails half-way leaves the old file and no temporary copy behind.
    def disk_full(*args: Any, **kwargs: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(config_module.json, "dump", disk_full)
    with pytest.raises(UsageProblem, match=r"Cannot write .*credentials\.json: No space"):
        store.set_token("local", "hrld_0123abcd_" + "u" * 43)
    assert sorted(p.name for p in config_dir.iterdir()) == ["config.json", "credentials.json"]
    assert store.token("local") == "hrld_0123abcd_" + "t" * 43


# --- authentication ---------------------------------------------------------------------------


def test_auth_login_status_logout(cli: Cli, url: str, token: str, config_dir: Path) -> None:
    cli("instance", "add", "local", url)

    login = cli("auth", "login", input=token + "\n")
    assert login.exit_code == 0, login.output
    assert "Signed in to" in login.stdout
    assert "owner@example.com" in login.stdout
    assert token not in login.output

    status = cli("auth", "status")
    assert status.exit_code == 0, status.output
    assert "present (credentials.json (profile 'local'))" in status.stdout
    assert token not in status.output
    assert (
        json_of(cli("auth", "status", "--json"))["token"]["source"]
        == "credentials.json (profile 'local')"
    )

    logout = cli("auth", "logout")
    assert logout.exit_code == 0
    assert "Removed the saved token" in logout.stdout
    after = cli("auth", "status")
    assert after.exit_code == 3
    assert "No API token" in one_line(after.stderr)


def test_auth_login_prompt_hides_the_token(
    cli: Cli, url: str, token: str, config_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cli.commands import auth

    monkeypatch.setattr(auth, "_interactive", lambda: True)

    result = cli("--instance", url, "auth", "login", input=token + "\n")

    assert result.exit_code == 0, result.output
    assert "API token (input hidden):" in result.stderr
    assert token not in result.output
    assert ConfigStore(config_dir).token("default") == token
    assert ConfigStore(config_dir).current_profile() == "default"


def test_auth_login_refuses_a_bad_token_and_saves_nothing(
    cli: Cli, url: str, config_dir: Path
) -> None:
    bad = "hrld_0123abcd_" + "x" * 43

    result = cli("--instance", url, "auth", "login", input=bad + "\n")

    assert result.exit_code == 3
    line = one_line(result.stderr)
    assert line.startswith("herald: error: 401 Unauthorized")
    assert "herald auth login" in line
    assert bad not in result.output
    assert ConfigStore(config_dir).token("default") is None


def test_token_sources_are_reported_without_the_token(cli: Cli, url: str, token: str) -> None:
    from_env = cli("--instance", url, "auth", "status", "--json", env={"HERALD_TOKEN": token})
    from_flag = cli("--instance", url, "--token", token, "auth", "status", "--json")

    assert json_of(from_env)["token"]["source"] == "environment HERALD_TOKEN"
    assert json_of(from_flag)["token"]["source"] == "flag --token"
    assert token not in from_env.output + from_flag.output


def test_a_saved_token_is_never_sent_to_another_instance(
    cli: Cli, url: str, token: str, config_dir: Path
) -> None:
    ConfigStore(config_dir).save_profile("elsewhere", "https://herald.example.com")
    ConfigStore(config_dir).set_token("elsewhere", token)

    result = cli("--instance", url, "auth", "status")

    assert result.exit_code == 3
    assert "No API token" in result.stderr


# --- errors a person can act on ----------------------------------------------------------------


def test_errors_are_one_clear_line_with_documented_exit_codes(
    cli: Cli, url: str, token: str, make_token: Callable[..., str], user: User, workspace: Any
) -> None:
    unauthorized = cli(
        "--instance", url, "--token", "hrld_0123abcd_" + "y" * 43, "workspace", "list"
    )
    assert unauthorized.exit_code == 3
    assert one_line(unauthorized.stderr).startswith("herald: error: 401 Unauthorized")
    assert "hrld_0123abcd" not in unauthorized.output

    read_only = make_token(user, permissions=("api:read",))
    forbidden = cli(
        "--instance",
        url,
        "--token",
        read_only,
        "publication",
        "create",
        "--text",
        "hi",
        "--account",
        "00000000-0000-0000-0000-000000000000",
    )
    assert forbidden.exit_code == 3
    assert one_line(forbidden.stderr).startswith("herald: error: 403 Forbidden")

    invalid = cli("--instance", url, "--token", token, "publication", "list", "--status", "bogus")
    assert invalid.exit_code == 4
    line = one_line(invalid.stderr)
    assert line.startswith("herald: error: 422 Unprocessable")
    assert "query.status:" in line
    assert "[invalid]" in line

    unreachable = cli("--instance", closed_port_url(), "--token", token, "workspace", "list")
    assert unreachable.exit_code == 5
    assert "Connection refused" in one_line(unreachable.stderr)

    tls = cli(
        "--instance", url.replace("http://", "https://"), "--token", token, "workspace", "list"
    )
    assert tls.exit_code == 5
    assert one_line(tls.stderr).startswith("herald: error: TLS failure talking to https://")
    assert token not in tls.output


def test_help_documents_the_exit_codes(cli: Cli) -> None:
    result = cli("--help")

    assert result.exit_code == 0
    for line in (
        "0  success",
        "1  a check failed",
        "2  usage error",
        "3  not signed in",
        "4  request rejected",
        "5  instance unreachable",
    ):
        assert line in result.stdout


# --- workspaces, accounts, publications ------------------------------------------------------


def test_workspace_list_and_use(
    cli: Cli, url: str, token: str, workspace: Any, config_dir: Path
) -> None:
    cli("instance", "add", "local", url)
    cli("auth", "login", input=token + "\n")

    listed = cli("workspace", "list")
    assert listed.exit_code == 0, listed.output
    assert str(workspace.pk) in listed.stdout
    assert "Main" in listed.stdout

    used = cli("workspace", "use", str(workspace.pk))
    assert used.exit_code == 0, used.output
    assert ConfigStore(config_dir).profile("local").workspace == str(workspace.pk)  # type: ignore[union-attr]
    assert "*" in cli("workspace", "list").stdout.splitlines()[1]

    missing = cli("workspace", "use", "00000000-0000-0000-0000-000000000000")
    assert missing.exit_code == 4
    assert one_line(missing.stderr).startswith("herald: error: 404 Not Found")


def test_account_list(cli: Cli, url: str, token: str, workspace: Any) -> None:
    from tests.publishing_support import make_account

    account = make_account(workspace, "discord_webhook", username="release-hook")

    result = cli("--instance", url, "--token", token, "account", "list")
    assert result.exit_code == 0, result.output
    assert str(account.pk) in result.stdout
    assert "discord_webhook" in result.stdout

    page = json_of(
        cli(
            "--instance",
            url,
            "--token",
            token,
            "--workspace",
            str(workspace.pk),
            "account",
            "list",
            "--json",
        )
    )
    assert [item["id"] for item in page["items"]] == [str(account.pk)]


def test_a_workspace_must_be_chosen_when_the_token_reaches_several(
    cli: Cli, url: str, token: str, user: User, organization: Any
) -> None:
    from workspaces.access import Actor
    from workspaces.services import workspace_create

    workspace_create(actor=Actor(user=user), organization_id=organization.pk, name="Second")

    result = cli("--instance", url, "--token", token, "account", "list")

    assert result.exit_code == 2
    assert "reaches 2 workspaces" in one_line(result.stderr)


def test_publication_create_publish_now_and_follow_status(
    cli: Cli,
    url: str,
    token: str,
    workspace: Any,
    discord: Any,
    delivery_queue: Any,
    monkeypatch: pytest.MonkeyPatch,
    owner_client: Any,
) -> None:
    from cli.commands import publication as publication_commands
    from tests.publishing_support import connect

    hook = connect(owner_client, workspace, "discord_webhook", discord)
    base = ["--instance", url, "--token", token]

    created = cli(
        *base,
        "publication",
        "create",
        "--text",
        "Release 1.0 is out",
        "--account",
        hook["id"],
        "--json",
    )
    assert created.exit_code == 0, created.output
    publication = json_of(created)
    assert publication["status"] == "draft"

    queued = cli(*base, "publication", "publish-now", publication["id"])
    assert queued.exit_code == 0, queued.output
    assert "Queued: not delivered yet" in queued.stdout
    assert delivery_queue.sends  # the instance queued the destination; no worker ran yet

    polls: list[float] = []

    def worker_runs_while_we_wait(seconds: float) -> None:
        polls.append(seconds)
        delivery_queue.run()

    monkeypatch.setattr(publication_commands, "_sleep", worker_runs_while_we_wait)
    followed = cli(*base, "publication", "status", publication["id"], "--interval", "0.5")

    assert followed.exit_code == 0, followed.output
    assert polls == [0.5]
    assert f"discord_webhook @{hook['username']}: queued" in followed.stdout
    assert "queued → published" in followed.stdout
    assert f"Publication {publication['id']}: published" in followed.stdout
    assert discord.messages  # delivered to the stand-in

    listed = cli(*base, "publication", "list")
    assert publication["id"] in listed.stdout
    assert "published 1" in listed.stdout


def test_publication_schedule_and_status_of_a_failed_destination(
    cli: Cli,
    url: str,
    token: str,
    workspace: Any,
    discord: Any,
    delivery_queue: Any,
    monkeypatch: pytest.MonkeyPatch,
    owner_client: Any,
) -> None:
    from cli.commands import publication as publication_commands
    from tests.publishing_support import connect, create_publication

    hook = connect(owner_client, workspace, "discord_webhook", discord)
    base = ["--instance", url, "--token", token]
    draft = create_publication(owner_client, workspace, [hook["id"]], text="Later")

    scheduled = cli(
        *base, "publication", "schedule", draft["id"], "--at", "2099-01-31T09:00:00+01:00", "--json"
    )
    assert scheduled.exit_code == 0, scheduled.output
    assert json_of(scheduled)["scheduled_at"].startswith("2099-01-31T08:00:00")
    # Nothing is in flight: status shows the schedule and returns at once.
    waiting = cli(*base, "publication", "status", draft["id"])
    assert waiting.exit_code == 0
    assert "scheduled for 2099-01-31T08:00:00" in waiting.stdout

    bad_time = cli(*base, "publication", "schedule", draft["id"], "--at", "tomorrow")
    assert bad_time.exit_code == 2
    assert "Not an ISO 8601 time" in bad_time.stderr

    # A destination the provider refuses for good: status ends with exit 1 and the action.
    other = create_publication(owner_client, workspace, [hook["id"]], text="Broken")
    discord.faults.configure({"permanent": {"count": 5}})
    monkeypatch.setattr(publication_commands, "_sleep", lambda seconds: delivery_queue.run())
    failed = cli(*base, "publication", "publish-now", other["id"], "--follow", "--json")
    assert failed.exit_code == 1
    body = json_of(failed)
    assert body["destinations"][0]["status"] == "failed"
    assert "queued → failed" in failed.stderr  # progress goes to stderr with --json
    assert body["destinations"][0]["action"]
    again = cli(*base, "publication", "status", other["id"], "--once")
    assert again.exit_code == 1
    row = again.stdout.splitlines()[2].split()
    assert row[0] == body["destinations"][0]["id"]
    assert body["destinations"][0]["action"] in row
    assert "failed" in row


def test_follow_waits_for_the_publication_to_settle_after_its_destinations(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A GET between the statements that read a publication and its destinations can show every
    destination settled and the publication still ``publishing``; following keeps polling."""
    from cli.commands import publication as command

    published = {"id": "d1", "status": "published", "account": {"username": "news"}}
    answers = [
        {"id": "p1", "status": "publishing", "destinations": [published]},
        {"id": "p1", "status": "published", "destinations": [published]},
    ]

    class Answers:  # the server's answers, in order
        def publication(self, publication_id: str) -> dict[str, Any]:
            return answers.pop(0)

    monkeypatch.setattr(command, "_sleep", lambda seconds: None)
    final, settled = command.follow_publication(
        Answers(),  # type: ignore[arg-type]
        "p1",
        interval=0.1,
        timeout=10,
        progress=command._Progress(as_json=True),
    )
    assert settled
    assert final["status"] == "published"
    assert answers == []
