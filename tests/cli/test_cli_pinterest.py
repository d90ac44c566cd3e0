"""``herald account connect pinterest`` and ``herald publication create --format --option``:
the CLI asks for the connect, the person confirms Herald's start page and consents at
Pinterest (the stand-in), then a real image uploaded with ``herald media upload`` is pinned on
a board, Pinterest fetching it from Herald's signed URL, followed until it is published."""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from django.utils import timezone
from PIL import Image

from providers import credentials
from publishing.models import Account, Destination
from tests.cli_support import (
    Cli,
    forget_remembered_secrets,  # noqa: F401 (autouse fixture)
    json_of,
)
from tests.providers.pinterest.standin import USER, PinterestStandIn
from workspaces.models import User

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def pinterest(settings: Any) -> Iterator[PinterestStandIn]:
    with PinterestStandIn() as standin:
        settings.HERALD_ALLOW_PRIVATE_PROVIDER_URLS = True
        settings.HERALD_DISABLED_PROVIDERS = []
        settings.PROVIDER_OAUTH_APPS = {
            **settings.PROVIDER_OAUTH_APPS,
            "pinterest": standin.app_settings(),
        }
        yield standin


def test_connect_pinterest_and_pin_an_image(
    cli: Cli,
    live_server: Any,
    make_token: Callable[..., str],
    user: User,
    workspace: Any,
    pinterest: PinterestStandIn,
    media_storage: Path,
    delivery_queue: Any,
    monkeypatch: pytest.MonkeyPatch,
    settings: Any,
    tmp_path: Path,
) -> None:
    settings.HERALD_PUBLIC_URL = str(live_server.url)  # Pinterest fetches the image by URL
    base = ["--instance", str(live_server.url), "--token", make_token(user)]
    started = cli(*base, "account", "connect", "pinterest", "--no-wait", "--json")
    assert started.exit_code == 0, started.output
    browser = requests.Session()
    start_page = json_of(started)["authorization_url"]
    page = browser.get(start_page, timeout=10)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    assert token is not None, page.text[:300]
    done = browser.post(start_page, data={"csrfmiddlewaretoken": token[1]}, timeout=10)
    assert done.status_code == 200, done.text[:300]
    account = Account.objects.get(provider="pinterest")
    assert account.external_id == USER["id"]
    assert credentials.decrypt(account.credentials_encrypted)["refresh_token"]

    picture = tmp_path / "cake.jpg"
    buffer = io.BytesIO()
    Image.new("RGB", (200, 300), (200, 60, 30)).save(buffer, format="JPEG")
    picture.write_bytes(buffer.getvalue())
    uploaded = cli(*base, "media", "upload", str(picture), "--json")
    assert uploaded.exit_code == 0, uploaded.output
    media_id = json_of(uploaded)["id"]

    from cli.commands import publication as publication_commands

    def deliver(seconds: float) -> None:
        waiting = Destination.objects.filter(status="sending", send_stage__isnull=False)
        delivery_queue.sends.extend(str(pk) for pk in waiting.values_list("pk", flat=True))
        waiting.update(send_check_at=timezone.now())
        delivery_queue.run()

    monkeypatch.setattr(publication_commands, "_sleep", deliver)
    refused = cli(
        *base, "publication", "create", "--text", "Best cake", "--account",
        str(account.pk), "--media", media_id, "--format", "pinterest.image", "--json",
    )  # fmt: skip
    assert refused.exit_code != 0
    assert "board_id" in refused.output

    result = cli(
        *base, "publication", "create", "--text", "Best cake", "--account",
        str(account.pk), "--media", media_id, "--format", "pinterest.image",
        "--option", "board_id=1001", "--option", "title=Cake",
        "--publish-now", "--follow", "--interval", "0.1",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "published (revision" in result.stdout
    (post,) = pinterest.posts
    assert (post["board_id"], post["title"], post["description"]) == ("1001", "Cake", "Best cake")
    assert pinterest.fetched == [post["media_source"]["url"]]
    row = Destination.objects.get(account=account)
    assert row.external_url == f"https://www.pinterest.com/pin/{post['id']}/"
