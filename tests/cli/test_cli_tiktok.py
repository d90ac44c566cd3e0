"""``herald account connect tiktok`` and ``herald publication create --format --option``: the
CLI asks for the connect, the person confirms Herald's start page and authorizes at TikTok (the
stand-in, client_key and PKCE), then a real video uploaded with ``herald media upload`` is
refused at create time while the options TikTok requires are missing or a public post is asked
of an unaudited app, and published privately, followed until it is published."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from django.utils import timezone

from providers import credentials
from publishing import tasks
from publishing.models import Account, Destination, Media
from tests.cli_support import (
    Cli,
    forget_remembered_secrets,  # noqa: F401 (autouse fixture)
    json_of,
)
from tests.providers.tiktok.standin import CREATOR, TikTokStandIn
from tests.video_support import make_video
from workspaces.models import User

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def tiktok(settings: Any) -> Iterator[TikTokStandIn]:
    with TikTokStandIn() as standin:
        settings.HERALD_ALLOW_PRIVATE_PROVIDER_URLS = True
        settings.HERALD_DISABLED_PROVIDERS = []
        settings.PROVIDER_OAUTH_APPS = {
            **settings.PROVIDER_OAUTH_APPS,
            "tiktok": standin.app_settings(),
        }
        yield standin


def test_connect_tiktok_and_publish_a_private_video(
    cli: Cli,
    live_server: Any,
    make_token: Callable[..., str],
    user: User,
    workspace: Any,
    tiktok: TikTokStandIn,
    media_storage: Path,
    delivery_queue: Any,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    base = ["--instance", str(live_server.url), "--token", make_token(user)]
    started = cli(*base, "account", "connect", "tiktok", "--no-wait", "--json")
    assert started.exit_code == 0, started.output
    browser = requests.Session()
    start_page = json_of(started)["authorization_url"]
    page = browser.get(start_page, timeout=10)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    assert token is not None, page.text[:300]
    done = browser.post(start_page, data={"csrfmiddlewaretoken": token[1]}, timeout=10)
    assert done.status_code == 200, done.text[:300]
    account = Account.objects.get(provider="tiktok")
    assert account.external_id == CREATOR["open_id"]
    assert credentials.decrypt(account.credentials_encrypted)["refresh_token"]

    clip = tmp_path / "clip.mp4"
    clip.write_bytes(make_video(width=360, height=640, seconds=2, rate=25))
    uploaded = cli(*base, "media", "upload", str(clip), "--json")
    assert uploaded.exit_code == 0, uploaded.output
    media_id = json_of(uploaded)["id"]
    if Media.objects.get(pk=media_id).status == Media.Status.PROCESSING:
        tasks.media_probe(media_id)  # no worker in this test: the probe runs here

    from cli.commands import publication as publication_commands

    def deliver(seconds: float) -> None:
        """The worker's part: every send and due check, in this process."""
        waiting = Destination.objects.filter(status="sending", send_stage__isnull=False)
        delivery_queue.sends.extend(str(pk) for pk in waiting.values_list("pk", flat=True))
        waiting.update(send_check_at=timezone.now())
        delivery_queue.run()

    monkeypatch.setattr(publication_commands, "_sleep", deliver)
    create = [
        *base, "publication", "create", "--text", "Behind the scenes #herald", "--account",
        str(account.pk), "--media", media_id, "--format", "tiktok.video",
    ]  # fmt: skip
    refused = cli(*create, "--json")
    assert refused.exit_code != 0
    assert "privacy_level" in refused.output
    assert "brand_content_toggle" in refused.output
    disclosed = [
        "--option", "brand_content_toggle=false", "--option", "brand_organic_toggle=false",
        "--option", "disable_stitch=true",
    ]  # fmt: skip
    public = cli(*create, *disclosed, "--option", "privacy_level=PUBLIC_TO_EVERYONE", "--json")
    assert public.exit_code != 0
    assert "HERALD_TIKTOK_AUDITED" in public.output
    assert tiktok.counters["inits"] == 0

    result = cli(
        *create, *disclosed, "--option", "privacy_level=SELF_ONLY",
        "--publish-now", "--follow", "--interval", "0.1",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "published (revision" in result.stdout
    (post,) = tiktok.posts
    assert post["title"] == "Behind the scenes #herald"
    assert post["privacy_level"] == "SELF_ONLY"
    assert tiktok.counters["creator_info"] >= 1
    assert tiktok.counters["inits"] == 1
    row = Destination.objects.get(account=account)
    assert row.external_id == post["publish_id"]
