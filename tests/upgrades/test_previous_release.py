"""The previous release keeps working on this release's schema (expand, migrate, contract).

During an upgrade the old web and worker processes run while ``migrate`` changes the schema, and
a code-only rollback runs the previous release on it. So the previous release's code (exported
from git, CHANGELOG.md's "Previous release") runs its web, worker and beat on a database
migrated by this checkout, and goes through its core flow: connect an account, create, schedule
and publish now; both posts are delivered; then it uploads an image (media rows gained columns
since) and publishes it. Then this release runs on the same database, finds what the old one
made, and publishes the old release's image again.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import requests
from PIL import Image

from tests.providers.discord_webhook.standin import DiscordWebhookStandIn
from tests.upgrades_support import (
    ROOT,
    Api,
    api_token,
    core_flow,
    export_release,
    git_available,
    manage,
    previous_release,
    process_env,
    running,
    scratch_database,
)

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.slow,
    pytest.mark.timeout(300),
    pytest.mark.skipif(not git_available(), reason="needs the git history (the old release)"),
]


def upload_image(api: Api, workspace: str) -> str:
    """A PNG made here, uploaded through the media endpoint both releases have; its id."""
    image = io.BytesIO()
    Image.new("RGB", (16, 16), (200, 40, 40)).save(image, format="PNG")
    response = api.session.post(
        f"{api.url}/api/v1/media",
        data={"workspace_id": workspace, "alt_text": "a red square"},
        files={"file": ("square.png", image.getvalue(), "image/png")},
        timeout=30,
    )
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def publish_with_media(api: Api, made: dict[str, str], media_id: str, text: str) -> str:
    draft = api.call(
        "POST",
        "/publications",
        201,
        workspace_id=made["workspace"],
        text=text,
        media_ids=[media_id],
        destinations=[{"account_id": made["account"]}],
    )
    api.call(
        "POST",
        f"/publications/{draft['id']}/publish-now",
        202,
        expected_revision=draft["revision"],
    )
    api.wait_published(draft["id"])
    return str(draft["id"])


def test_previous_release_core_flow_on_the_new_schema(tmp_path: Path) -> None:
    old = export_release(previous_release(), tmp_path / "previous")
    with scratch_database("previous") as url, DiscordWebhookStandIn() as discord:
        env = process_env(tmp_path / "data", url)
        manage(ROOT, env, "migrate", "--noinput")  # this release's schema
        token = api_token(old, env, "old@example.com")

        with running(old, env, tmp_path / "old-logs") as instance:
            made = core_flow(instance.url, token, discord.fixtures()["webhook_url"], "old")
            old_api = Api(instance.url, token)
            image = upload_image(old_api, made["workspace"])
            publish_with_media(old_api, made, image, "old: with an image")
            instance.check_alive()
        assert "Traceback" not in instance.output()

        # This release on the same database: what the previous one made is there and works.
        with running(ROOT, env, tmp_path / "new-logs") as instance:
            session = requests.Session()
            session.headers["Authorization"] = f"Bearer {token}"
            got = session.get(f"{instance.url}/api/v1/publications/{made['now']}", timeout=10)
            assert got.status_code == 200, got.text
            assert got.json()["status"] == "published"
            core_flow(instance.url, token, discord.fixtures()["webhook_url"], "new")
            api = Api(instance.url, token)
            media = api.call("GET", f"/media/{image}", 200)
            assert media["status"] == "ready", media
            publish_with_media(api, made, image, "new: the old release's image")
