"""Pinterest end to end through a REAL Celery worker (PostgreSQL + Redis when
``DATABASE_URL``/``REDIS_URL`` are set, as the other worker tests): an account connected through
Herald's connect and the stand-in's consent page; an image Pin that the stand-in fetches from
Herald's signed URL served by the live server; a video Pin registered, uploaded to the S3-style
form, processed on the long-send engine and pinned with the poster frame, once; a Pin answer
lost after Pinterest created it, reconciled from the board without a second Pin; an expired
access token refreshed before the send; a 429 that waits instead of failing; a worker killed
while a video processes, the replacement going on from the media id (no second upload)."""

from __future__ import annotations

import io
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone
from PIL import Image
from rest_framework.test import APIClient

from providers import credentials
from publishing.models import Account, Destination, PublicationEvent
from publishing.services.publications import publication_create, publication_publish_now
from tests.providers.pinterest.standin import CLIENT_ID, CLIENT_SECRET, PinterestStandIn
from tests.publishing_support import (
    connect_with_services,
    probed_by_worker,
    settled_by_worker,
    upload,
)
from tests.video_support import make_video
from tests.worker_harness import DeliveryStack, running_stack
from workspaces.access import Actor

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True), pytest.mark.timeout(400)]

S = Destination.Status


@pytest.fixture(scope="module")
def server() -> Iterator[PinterestStandIn]:
    with PinterestStandIn() as standin:
        yield standin


@pytest.fixture
def stack(
    worker_database_url: str,
    media_storage: Path,
    settings: Any,
    live_server: Any,
    server: PinterestStandIn,
) -> Iterator[DeliveryStack]:
    server.reset()
    server.processing_checks = 2
    settings.HERALD_PUBLIC_URL = str(live_server.url)
    settings.HERALD_DISABLED_PROVIDERS = []
    settings.HERALD_ALLOW_PRIVATE_PROVIDER_URLS = True
    settings.PROVIDER_OAUTH_APPS = {
        **settings.PROVIDER_OAUTH_APPS,
        "pinterest": server.app_settings(),
    }
    env = {
        "HERALD_PUBLIC_URL": str(live_server.url),
        "HERALD_PINTEREST_CLIENT_ID": CLIENT_ID,
        "HERALD_PINTEREST_CLIENT_SECRET": CLIENT_SECRET,
        "HERALD_PINTEREST_STANDARD_ACCESS": "true",
        "HERALD_PINTEREST_API_URL": server.url,
        "HERALD_PINTEREST_AUTHORIZE_URL": f"{server.url}/oauth/",
        "HERALD_PINTEREST_TOKEN_URL": f"{server.url}/v5/oauth/token",
    }
    with running_stack(worker_database_url, media_storage.parent, overrides=env) as stack:
        yield stack


def jpeg(width: int, height: int) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (200, 60, 30)).save(buffer, format="JPEG")
    return buffer.getvalue()


def publish(actor: Actor, workspace: Any, account: Account, media_id: str, **extra: Any) -> Any:
    profile = extra.pop("profile", "pinterest.image")
    publication = publication_create(
        actor=actor,
        workspace_id=workspace.pk,
        text=extra.pop("text", "Best cake"),
        media_ids=[media_id],
        destinations=[
            {
                "account_id": str(account.pk),
                "profile": profile,
                "options": {"board_id": "1001", "title": "Cake", **extra},
            }
        ],
    )
    publication_publish_now(actor=actor, publication_id=publication.pk, expected_revision=None)
    return publication


def published(stack: DeliveryStack, publication: Any, what: str) -> Destination:
    assert settled_by_worker(stack, publication, what).status == "published", stack.logs()
    row: Destination = Destination.objects.get(publication=publication)
    assert (row.status, row.error_message) == (S.PUBLISHED, "")
    return row


def kinds(publication: Any) -> list[str]:
    rows = PublicationEvent.objects.filter(publication=publication).order_by("created_at", "id")
    return [e.kind for e in rows]


def test_connect_image_video_reconcile_refresh_and_rate_limit_through_the_worker(
    stack: DeliveryStack,
    server: PinterestStandIn,
    owner_client: APIClient,
    user: Any,
    workspace: Any,
) -> None:
    actor = Actor(user=user)
    account = connect_with_services(actor, workspace, "pinterest")
    refresh_token = credentials.decrypt(account.credentials_encrypted)["refresh_token"]
    image = str(upload(owner_client, workspace, jpeg(200, 300), name="cake.jpg")["id"])

    # 1. An image Pin: Pinterest fetches the image from Herald's signed URL.
    row = published(stack, publish(actor, workspace, account, image, alt_text="A cake"), "image")
    pin = server.pins[row.external_id]
    assert pin["media_source"]["source_type"] == "image_url"
    assert pin["alt_text"] == "A cake"
    assert server.fetched
    assert server.fetched[0] == pin["media_source"]["url"]

    # 2. A video Pin: registered, uploaded to the form, processed, pinned once with the cover.
    video = str(
        probed_by_worker(
            stack, owner_client, workspace, make_video(width=320, height=240, seconds=5), "v.mp4"
        ).pk
    )
    row = published(
        stack, publish(actor, workspace, account, video, profile="pinterest.video"), "video"
    )
    pin = server.pins[row.external_id]
    assert pin["media_source"]["source_type"] == "video_id"
    assert pin["media_source"]["cover_image_key_frame_time"] == 0
    assert server.counters["media_registered"] == 1
    assert server.counters["uploads"] == 1
    assert server.posts_accepted == 2

    # 3. The Pin's answer is lost after Pinterest created it: ambiguous, reconciled from the
    # board's recent Pins, no second Pin.
    server.set_faults(accept_then_timeout={"count": 1, "seconds": 15})
    lost = publish(actor, workspace, account, image, title="Lost answer")
    row = published(stack, lost, "the reconciled pin")
    assert server.posts_accepted == 3
    assert row.external_id == server.posts[-1]["id"]
    order = kinds(lost)
    assert "destination.ambiguous" in order

    # 4. The access token expired at Pinterest and is due here: refreshed before the send.
    server.expire_access_tokens()
    Account.objects.filter(pk=account.pk).update(
        token_expires_at=timezone.now() + timedelta(seconds=30)
    )
    published(stack, publish(actor, workspace, account, image, title="Refreshed"), "refreshed")
    account.refresh_from_db()
    assert credentials.decrypt(account.credentials_encrypted)["refresh_token"] == refresh_token

    # 5. A 429 with Retry-After: the send waits and then goes through.
    server.set_faults(rate_limit={"count": 1, "retry_after": 2})
    row = published(stack, publish(actor, workspace, account, image, title="Later"), "429")
    assert server.counters["fault_rate_limit"] == 1
    assert server.posts_accepted == 5

    # 6. The worker is killed while Pinterest processes a video: the replacement goes on from
    # the media id in the send state; the video is neither registered nor uploaded again.
    server.processing_checks = 3
    registered = server.counters["media_registered"]
    killed = publish(actor, workspace, account, video, profile="pinterest.video", title="Killed")
    stack.wait_until(
        lambda: server.counters["uploads"] > 1 or None, timeout=60, what="the second upload"
    )
    (doomed,) = [p for p in stack.processes if p.name == "worker"]
    doomed.kill()
    stack.start_worker("replacement")
    row = published(stack, killed, "the video after a killed worker")
    assert server.counters["media_registered"] == registered + 1
    assert server.counters["uploads"] == 2
    assert server.posts_accepted == 6
    assert row.external_id == server.posts[-1]["id"]
