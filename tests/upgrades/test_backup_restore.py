"""A backup restores: ``pg_dump`` of a running instance's database, ``pg_restore`` into a fresh
database, and the instance started on the copy publishes through the accounts it had (the same
HERALD_CREDENTIALS_KEY and data folder), as docs/operations.md describes."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.providers.discord_webhook.standin import DiscordWebhookStandIn
from tests.upgrades_support import (
    ROOT,
    Api,
    api_token,
    core_flow,
    manage,
    process_env,
    running,
    scratch_database,
)

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.slow,
    pytest.mark.timeout(300),
    pytest.mark.skipif(
        shutil.which("pg_dump") is None or shutil.which("pg_restore") is None,
        reason="pg_dump and pg_restore (PostgreSQL's client tools) are not installed",
    ),
]


def pg_args(url: str) -> list[str]:
    parts = urlsplit(url)
    return [
        "--host",
        parts.hostname or "127.0.0.1",
        "--port",
        str(parts.port or 5432),
        "--username",
        parts.username or "postgres",
        "--dbname",
        parts.path.lstrip("/"),
    ]


def test_a_restored_dump_publishes(tmp_path: Path) -> None:
    dump = tmp_path / "herald.dump"
    with DiscordWebhookStandIn() as discord:
        with scratch_database("backup") as original:
            env = process_env(tmp_path / "data", original)
            manage(ROOT, env, "migrate", "--noinput")
            token = api_token(ROOT, env, "owner@example.com")
            with running(ROOT, env, tmp_path / "before") as instance:
                made = core_flow(instance.url, token, discord.fixtures()["webhook_url"], "backup")
            # The backup, as docs/operations.md gives it (custom format, no ownership).
            subprocess.run(
                [
                    "pg_dump",
                    "--format=custom",
                    "--no-owner",
                    "--file",
                    str(dump),
                    *pg_args(original),
                ],
                check=True,
                timeout=120,
            )
        with scratch_database("restored") as restored:
            subprocess.run(
                ["pg_restore", "--no-owner", "--exit-on-error", *pg_args(restored), str(dump)],
                check=True,
                timeout=120,
            )
            env = process_env(tmp_path / "data", restored)
            manage(ROOT, env, "migrate", "--noinput")  # nothing to apply; checks the key
            with running(ROOT, env, tmp_path / "after") as instance:
                api = Api(instance.url, token)
                assert api.call("GET", f"/publications/{made['now']}", 200)["status"] == (
                    "published"
                )
                again = api.publish(made["workspace"], made["account"], "restored", scheduled=False)
                api.wait_published(again)
