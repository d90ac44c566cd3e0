"""``make run``'s data folder (SQLite, media, broker, secret key) upgrades in place.

The previous release (CHANGELOG.md) runs from its own source on a data folder, as its ``make
run`` did: migrate, then web, worker and beat, with the credentials key it derives from the
folder's secret key. It connects an account and publishes. Then this checkout's ``make run``
(scripts/run.py) starts on the same folder: it migrates the database in place, and the old
token, account and publications work; a new post goes out through the old account.
"""

from __future__ import annotations

import signal
import sqlite3
from pathlib import Path

import pytest
from django.db import connection

from tests.make_run_support import Run, run_env
from tests.providers.discord_webhook.standin import DiscordWebhookStandIn
from tests.upgrades_support import (
    Api,
    api_token,
    core_flow,
    export_release,
    free_port,
    git_available,
    manage,
    previous_release,
    running,
)

MIGRATIONS = "SELECT name FROM django_migrations WHERE app = 'publishing'"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        connection.vendor != "sqlite",
        reason="make run's embedded default: the SQLite run of the suite covers it",
    ),
    pytest.mark.timeout(300),
    pytest.mark.skipif(not git_available(), reason="needs the git history (the old release)"),
]


def test_make_run_upgrades_an_older_data_folder_in_place(tmp_path: Path) -> None:
    old = export_release(previous_release(), tmp_path / "previous")
    data = tmp_path / "data"
    home = tmp_path / "home"
    home.mkdir()
    extra = {"HERALD_ALLOW_PRIVATE_PROVIDER_URLS": "true"}
    env = {**run_env(data, free_port(), home), **extra}  # no credentials key: derived, as make run
    with DiscordWebhookStandIn() as discord:
        manage(old, env, "migrate", "--noinput")
        token = api_token(old, env, "old@example.com")
        with running(old, env, tmp_path / "old-logs") as instance:
            made = core_flow(instance.url, token, discord.fixtures()["webhook_url"], "old")

        run = Run(data, free_port(), home, **extra)
        try:
            base, _ = run.started()
            with sqlite3.connect(data / "herald.sqlite3") as db:
                applied = {row[0] for row in db.execute(MIGRATIONS)}
            assert {
                "0003_feed_entries_and_profile_url",
                "0006_profile_url_default_and_backfill",
            } <= (applied)
            api = Api(base, token)
            assert api.call("GET", f"/publications/{made['now']}", 200)["status"] == "published"
            account = api.call("GET", f"/accounts/{made['account']}", 200)
            assert account["status"] == "active"
            again = api.publish(made["workspace"], made["account"], "upgraded", scheduled=False)
            api.wait_published(again)
        finally:
            status = run.stop(signal.SIGINT) if run.process.poll() is None else None
        assert status in (0, None)
