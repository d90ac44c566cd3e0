"""Video to the networks that take it in the request that posts it (Telegram, Discord webhooks)
and to the generic webhook, through a REAL Celery worker and beat: the video is uploaded through
the API and probed by the worker, then published now. Telegram gets an album of a photo and the
video (sendMediaGroup), Discord the video as an attachment, both uploaded from storage; the
webhook gets the video's signed URL, type and size. A Telegram that answers 413 fails the
destination once, with Telegram's words, and it is not retried.

Runs on SQLite + the filesystem broker by default, PostgreSQL + Redis when
``DATABASE_URL``/``REDIS_URL`` are set (as ``tests/publishing/test_delivery_worker.py``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests
from rest_framework.test import APIClient

from publishing.models import Account, Destination, Media, Publication
from publishing.services.accounts import account_connect
from publishing.services.publications import publication_create, publication_publish_now
from tests.providers.discord_webhook.standin import DiscordWebhookStandIn
from tests.providers.telegram.standin import BOT_TOKEN, GROUP, TelegramStandIn
from tests.providers.webhook.standin import WebhookReceiverStandIn
from tests.publishing_support import upload
from tests.video_support import make_video
from tests.worker_harness import DeliveryStack, running_stack
from workspaces.access import Actor

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True), pytest.mark.timeout(240)]

S = Destination.Status


@dataclass
class Networks:
    telegram: TelegramStandIn
    discord: DiscordWebhookStandIn
    webhook: WebhookReceiverStandIn


@pytest.fixture(scope="module")
def networks() -> Iterator[Networks]:
    with (
        TelegramStandIn() as telegram,
        DiscordWebhookStandIn() as discord,
        WebhookReceiverStandIn() as webhook,
    ):
        yield Networks(telegram, discord, webhook)


@pytest.fixture
def stack(
    worker_database_url: str,
    media_storage: Path,
    settings: Any,
    live_server: Any,
    networks: Networks,
) -> Iterator[DeliveryStack]:
    """A worker and beat that reach the stand-ins, on the media files the live server serves
    (the worker's storage is ``<HERALD_DATA_DIR>/media``, the test's ``media_storage``)."""
    for server in (networks.telegram, networks.discord, networks.webhook):
        server.reset()
    settings.HERALD_PUBLIC_URL = str(live_server.url)
    settings.HERALD_ALLOW_PRIVATE_PROVIDER_URLS = True
    settings.HERALD_TELEGRAM_API_URL = networks.telegram.url
    overrides = {
        "HERALD_PUBLIC_URL": str(live_server.url),
        "HERALD_ALLOW_PRIVATE_PROVIDER_URLS": "true",
        "HERALD_TELEGRAM_API_URL": networks.telegram.url,
    }
    with running_stack(worker_database_url, media_storage.parent, overrides=overrides) as stack:
        yield stack


def _connect(actor: Actor, workspace: Any, provider: str, fields: dict[str, str]) -> Account:
    account, _ = account_connect(
        actor=actor,
        workspace_id=workspace.pk,
        provider=provider,
        redirect_uri="http://testserver/api/v1/accounts/oauth/callback",
        fields=fields,
    )
    assert account is not None
    return account


def _ready_video(stack: DeliveryStack, client: APIClient, workspace: Any) -> Media:
    """A 2 s MP4 (H.264/AAC) uploaded through the API and probed by the worker."""
    uploaded = upload(client, workspace, make_video("mp4", seconds=2, audio=True), name="a.mp4")

    def probed() -> Media | None:
        media = Media.objects.get(pk=uploaded["id"])
        return media if media.status != Media.Status.PROCESSING else None

    media = stack.wait_until(probed, timeout=90, what="the video to be probed")
    assert media.status == Media.Status.READY, media.failure_reason
    return media


def _publish_now(actor: Actor, workspace: Any, destinations: list[dict[str, Any]]) -> Publication:
    publication = publication_create(
        actor=actor, workspace_id=workspace.pk, text="Launch day", destinations=destinations
    )
    return publication_publish_now(
        actor=actor, publication_id=publication.pk, expected_revision=None
    )


def _settled(stack: DeliveryStack, publication: Publication) -> dict[str, Destination]:
    def check() -> Publication | None:
        fresh = Publication.objects.get(pk=publication.pk)
        return fresh if fresh.status in ("published", "partially_published", "failed") else None

    stack.wait_until(check, timeout=120, what="the video posts")
    rows = Destination.objects.select_related("account").filter(publication=publication)
    return {row.account.provider: row for row in rows}


def test_a_video_is_uploaded_to_telegram_and_discord_and_linked_for_the_webhook(
    stack: DeliveryStack, networks: Networks, owner_client: APIClient, user: Any, workspace: Any
) -> None:
    actor = Actor(user=user)
    telegram = _connect(
        actor, workspace, "telegram", {"bot_token": BOT_TOKEN, "chat_id": str(GROUP["id"])}
    )
    discord = _connect(actor, workspace, "discord_webhook", networks.discord.fixtures())
    webhook = _connect(actor, workspace, "webhook", networks.webhook.fixtures())
    image = upload(owner_client, workspace)["id"]
    video = _ready_video(stack, owner_client, workspace)
    stored = video.file.open("rb").read()
    publication = _publish_now(
        actor,
        workspace,
        [
            {
                "account_id": str(telegram.pk),
                "profile": "telegram.photo",
                "media_ids": [image, str(video.pk)],
            },
            {"account_id": str(discord.pk), "media_ids": [str(video.pk)]},
            {"account_id": str(webhook.pk), "media_ids": [str(video.pk)]},
        ],
    )
    rows = _settled(stack, publication)
    assert {p: (d.status, d.error_message) for p, d in rows.items()} == {
        "telegram": (S.PUBLISHED, ""),
        "discord_webhook": (S.PUBLISHED, ""),
        "webhook": (S.PUBLISHED, ""),
    }
    (album,) = networks.telegram.posts
    assert (album["kinds"], album["caption"]) == (["photo", "video"], "Launch day")
    assert rows["telegram"].external_id == f"{GROUP['id']}:{album['message_ids'][0]}"
    assert networks.telegram.uploads[1]["data"] == stored
    (message,) = networks.discord.posts
    assert message["id"] == rows["discord_webhook"].external_id
    (attachment,) = networks.discord.uploads
    assert (attachment["content_type"], attachment["data"]) == ("video/mp4", stored)
    (delivery,) = networks.webhook.posts
    (item,) = delivery["body"]["media"]
    assert (item["mime_type"], item["size_bytes"]) == ("video/mp4", len(stored))
    assert item["url"].startswith(f"{stack.overrides['HERALD_PUBLIC_URL']}/media/")
    fetched = requests.get(item["url"], timeout=10)
    assert (fetched.status_code, fetched.content) == (200, stored)


def test_a_413_from_telegram_fails_the_destination_once_in_its_words(
    stack: DeliveryStack, networks: Networks, owner_client: APIClient, user: Any, workspace: Any
) -> None:
    networks.telegram.max_upload_bytes = 1024  # as if the video were past the 50 MB a bot sends
    actor = Actor(user=user)
    telegram = _connect(
        actor, workspace, "telegram", {"bot_token": BOT_TOKEN, "chat_id": str(GROUP["id"])}
    )
    video = _ready_video(stack, owner_client, workspace)
    publication = _publish_now(
        actor,
        workspace,
        [
            {
                "account_id": str(telegram.pk),
                "profile": "telegram.photo",
                "media_ids": [str(video.pk)],
            }
        ],
    )
    row = _settled(stack, publication)["telegram"]
    assert (row.status, row.error_kind, row.action) == (S.FAILED, "permanent", "edit")
    assert "HTTP 413" in row.error_message
    assert "Request Entity Too Large" in row.error_message
    time.sleep(3)  # a retry would be due by now; none comes
    row.refresh_from_db()
    assert (row.status, row.attempts) == (S.FAILED, 1)
    assert networks.telegram.posts_accepted == 0
    sends = [r for r in networks.telegram.request_log if r["path"].endswith("/sendVideo")]
    assert len(sends) == 1  # it reached Telegram once and was refused, never sent again
