"""TikTok end to end through a REAL Celery worker and beat (PostgreSQL + Redis when
``DATABASE_URL``/``REDIS_URL`` are set, as the other worker tests): a creator connected
through Herald's connect and the stand-in's authorization page (client_key, PKCE); a video
whose chunk is interrupted and sent again, its publish status polled as a long send; a worker
killed while the chunk is on the wire, the send ``ambiguous`` and reconciled through the
stored ``publish_id`` without a second init; the init rate limit holding the send
(``retry_wait``) instead of failing it; an expired access token refreshed (a new refresh
token); revoke on disconnect."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from providers import credentials
from publishing.models import Account, Destination, PublicationEvent
from publishing.services.accounts import account_disconnect
from publishing.services.publications import publication_create, publication_publish_now
from tests.providers.tiktok.standin import CLIENT_KEY, CLIENT_SECRET, TikTokStandIn
from tests.publishing_support import connect_with_services, probed_by_worker, settled_by_worker
from tests.video_support import make_video
from tests.worker_harness import DeliveryStack, running_stack
from workspaces.access import Actor

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True), pytest.mark.timeout(400)]

S = Destination.Status
OPTIONS = {
    "privacy_level": "SELF_ONLY",
    "brand_content_toggle": "false",
    "brand_organic_toggle": "false",
    "disable_stitch": "true",
}


@pytest.fixture(scope="module")
def server() -> Iterator[TikTokStandIn]:
    with TikTokStandIn() as standin:
        yield standin


@pytest.fixture
def stack(
    worker_database_url: str,
    media_storage: Path,
    settings: Any,
    server: TikTokStandIn,
) -> Iterator[DeliveryStack]:
    server.reset()
    settings.HERALD_DISABLED_PROVIDERS = []
    settings.HERALD_ALLOW_PRIVATE_PROVIDER_URLS = True
    settings.PROVIDER_OAUTH_APPS = {**settings.PROVIDER_OAUTH_APPS, "tiktok": server.app_settings()}
    env = {
        "HERALD_TIKTOK_CLIENT_KEY": CLIENT_KEY,
        "HERALD_TIKTOK_CLIENT_SECRET": CLIENT_SECRET,
        "HERALD_TIKTOK_API_URL": server.url,
        "HERALD_TIKTOK_AUTHORIZE_URL": f"{server.url}/v2/auth/authorize/",
    }
    with running_stack(worker_database_url, media_storage.parent, overrides=env) as stack:
        yield stack


def publish(actor: Actor, workspace: Any, account: Account, media_id: str, text: str) -> Any:
    publication = publication_create(
        actor=actor,
        workspace_id=workspace.pk,
        text=text,
        media_ids=[media_id],
        destinations=[
            {"account_id": str(account.pk), "profile": "tiktok.video", "options": OPTIONS}
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


def test_connect_publish_reconcile_wait_refresh_and_revoke_through_the_worker(
    stack: DeliveryStack,
    server: TikTokStandIn,
    owner_client: APIClient,
    user: Any,
    workspace: Any,
) -> None:
    actor = Actor(user=user)
    account = connect_with_services(actor, workspace, "tiktok")
    refresh_token = credentials.decrypt(account.credentials_encrypted)["refresh_token"]
    clip = make_video(width=360, height=640, seconds=2, rate=25)
    media = str(probed_by_worker(stack, owner_client, workspace, clip, "v.mp4").pk)

    # 1. The chunk breaks once and is sent again; the status is polled until published.
    server.set_faults(interrupt_chunks=1)
    first = published(stack, publish(actor, workspace, account, media, "First"), "video")
    assert (server.counters["inits"], server.posts_accepted) == (1, 1)
    assert server.counters["status_fetches"] >= 3
    assert first.external_id == server.posts[0]["publish_id"]
    assert server.upload(first.external_id)["bytes"] == clip

    # 2. The worker is killed while its chunk is on the wire: reconciled through the stored
    # publish_id, the same post goes on; no second init.
    server.set_faults(delay_ms=1200)
    puts_before = sum(1 for r in server.request_log if r["method"] == "PUT")
    killed = publish(actor, workspace, account, media, "Killed mid-upload")
    (doomed,) = [p for p in stack.processes if p.name == "worker"]
    stack.wait_until(
        lambda: (
            sum(1 for r in list(server.request_log) if r["method"] == "PUT") > puts_before or None
        ),
        timeout=60,
        what="the upload's chunk",
    )
    doomed.kill()
    server.set_faults(delay_ms=0)
    stack.start_worker("replacement")
    row = published(stack, killed, "the reconciled upload")
    assert (server.counters["inits"], server.posts_accepted) == (2, 2)
    assert row.external_id == server.posts[-1]["publish_id"]
    order = kinds(killed)
    assert "destination.ambiguous" in order
    assert order.index("destination.ambiguous") < order.index("destination.published")

    # 3. The init rate limit: the send waits (retry_wait), it is not failed.
    server.init_per_minute = 2
    held = publish(actor, workspace, account, media, "Rate limited")

    def waiting() -> Destination | None:
        found = Destination.objects.get(publication=held)
        return found if found.status == S.RETRY_WAIT else None

    row = stack.wait_until(waiting, timeout=60, what="the rate-limit wait")
    assert row.next_attempt_at is not None
    assert row.next_attempt_at > timezone.now() + timedelta(seconds=20)
    assert server.counters["inits"] == 2

    # 4. The access token expired at TikTok and is due here: refreshed before the send.
    server.init_per_minute = 100
    server.expire_access_tokens()
    Account.objects.filter(pk=account.pk).update(
        token_expires_at=timezone.now() + timedelta(seconds=30)
    )
    published(stack, publish(actor, workspace, account, media, "Refreshed"), "refreshed")
    assert server.counters["refreshes"] >= 1
    account.refresh_from_db()
    assert credentials.decrypt(account.credentials_encrypted)["refresh_token"] != refresh_token

    # 5. Disconnect revokes the grant at TikTok.
    account_disconnect(actor=actor, account_id=account.pk)
    assert server.counters["tokens_revoked"] == 1
