"""YouTube end to end through a REAL Celery worker and beat (PostgreSQL + Redis when
``DATABASE_URL``/``REDIS_URL`` are set, as the other worker tests): a channel connected through
Herald's connect and the stand-in's consent page (PKCE, offline access); a video with its
poster as thumbnail whose upload is interrupted mid-chunk and resumed from the byte YouTube
holds in the same session; a Short; a worker killed while its chunk is in flight, the send
``ambiguous`` and reconciled through the same session without a second video; an expired
access token refreshed just in time (the refresh token kept); a spent quota day that holds the
send (``retry_wait``, ``quota_exhausted``) instead of failing it; revoke on disconnect."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from providers import credentials
from providers.quota import quota_day
from publishing.models import Account, Destination, ProviderQuotaDay, PublicationEvent
from publishing.services.accounts import account_disconnect
from publishing.services.publications import publication_create, publication_publish_now
from tests.providers.youtube.standin import CLIENT_ID, CLIENT_SECRET, YouTubeStandIn
from tests.publishing_support import connect_with_services, probed_by_worker, settled_by_worker
from tests.video_support import make_video
from tests.worker_harness import DeliveryStack, running_stack
from workspaces.access import Actor

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True), pytest.mark.timeout(400)]

S = Destination.Status
OPTIONS = {"title": "Launch day", "made_for_kids": "false"}


@pytest.fixture(scope="module")
def server() -> Iterator[YouTubeStandIn]:
    with YouTubeStandIn() as standin:
        yield standin


@pytest.fixture
def stack(
    worker_database_url: str,
    media_storage: Path,
    settings: Any,
    server: YouTubeStandIn,
) -> Iterator[DeliveryStack]:
    server.reset()
    server.chunk_unit = 1024
    settings.HERALD_DISABLED_PROVIDERS = []
    settings.HERALD_ALLOW_PRIVATE_PROVIDER_URLS = True
    settings.PROVIDER_OAUTH_APPS = {
        **settings.PROVIDER_OAUTH_APPS,
        "youtube": server.app_settings(),
    }
    env = {
        "HERALD_YOUTUBE_CLIENT_ID": CLIENT_ID,
        "HERALD_YOUTUBE_CLIENT_SECRET": CLIENT_SECRET,
        "HERALD_YOUTUBE_API_URL": server.url,
        "HERALD_YOUTUBE_UPLOAD_URL": server.url,
        "HERALD_YOUTUBE_AUTHORIZE_URL": f"{server.url}/o/oauth2/v2/auth",
        "HERALD_YOUTUBE_TOKEN_URL": f"{server.url}/token",
        "HERALD_YOUTUBE_REVOKE_URL": f"{server.url}/revoke",
    }
    with running_stack(worker_database_url, media_storage.parent, overrides=env) as stack:
        yield stack


def publish(actor: Actor, workspace: Any, account: Account, media_id: str, **extra: Any) -> Any:
    profile = extra.pop("profile", "youtube.video")
    publication = publication_create(
        actor=actor,
        workspace_id=workspace.pk,
        text="All about it.",
        media_ids=[media_id],
        destinations=[
            {
                "account_id": str(account.pk),
                "profile": profile,
                "options": {**OPTIONS, **extra},
            }
        ],
    )
    publication_publish_now(actor=actor, publication_id=publication.pk, expected_revision=None)
    return publication


def kinds(publication: Any) -> list[str]:
    rows = PublicationEvent.objects.filter(publication=publication).order_by("created_at", "id")
    return [e.kind for e in rows]


def published(stack: DeliveryStack, publication: Any, what: str) -> Destination:
    assert settled_by_worker(stack, publication, what).status == "published", stack.logs()
    row: Destination = Destination.objects.get(publication=publication)
    assert (row.status, row.error_message) == (S.PUBLISHED, "")
    return row


def test_connect_publish_resume_reconcile_refresh_wait_and_revoke_through_the_worker(
    stack: DeliveryStack,
    server: YouTubeStandIn,
    owner_client: APIClient,
    user: Any,
    workspace: Any,
) -> None:
    actor = Actor(user=user)
    account = connect_with_services(actor, workspace, "youtube")
    refresh_token = credentials.decrypt(account.credentials_encrypted)["refresh_token"]
    wide = str(
        probed_by_worker(
            stack, owner_client, workspace, make_video(width=320, height=240, seconds=2), "v.mp4"
        ).pk
    )
    tall = str(
        probed_by_worker(
            stack, owner_client, workspace, make_video(width=180, height=320, seconds=2), "s.mp4"
        ).pk
    )

    # 1. A video whose first chunk breaks after 1 KiB: resumed in the same session from the
    # byte YouTube holds; its poster frame becomes the thumbnail.
    server.set_faults(interrupt_chunks={"count": 1, "keep": 1024})
    video = published(stack, publish(actor, workspace, account, wide, thumbnail="poster"), "video")
    assert server.counters["chunks_interrupted"] == 1
    assert server.counters["status_queries"] >= 1
    assert (server.counters["sessions_started"], server.posts_accepted) == (1, 1)
    assert server.videos[video.external_id]["thumbnail"]["type"] == "image/jpeg"

    # 2. A Short.
    short = published(
        stack, publish(actor, workspace, account, tall, profile="youtube.short"), "short"
    )
    assert short.external_url == f"https://www.youtube.com/shorts/{short.external_id}"
    assert server.posts_accepted == 2

    # 3. The worker is killed while its chunk is on the wire (every answer slowed): the claim
    # expires, the send is ambiguous, reconcile asks the same session: one video.
    server.set_faults(delay_ms=1200)
    puts_before = sum(1 for r in server.request_log if r["method"] == "PUT")
    third = publish(actor, workspace, account, wide, title="Killed mid-upload")
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
    row = published(stack, third, "the reconciled upload")
    assert (server.counters["sessions_started"], server.posts_accepted) == (3, 3)
    assert row.external_id == server.posts[-1]["id"]
    order = kinds(third)
    assert "destination.ambiguous" in order
    assert order.index("destination.ambiguous") < order.index("destination.published")

    # 4. The access token expired at Google and is due here: refreshed before the send, the
    # refresh token Google did not send again kept.
    server.expire_access_tokens()
    Account.objects.filter(pk=account.pk).update(
        token_expires_at=timezone.now() + timedelta(seconds=30)
    )
    published(stack, publish(actor, workspace, account, tall, profile="youtube.short"), "refreshed")
    assert server.counters["refreshes"] >= 1
    account.refresh_from_db()
    assert credentials.decrypt(account.credentials_encrypted)["refresh_token"] == refresh_token

    # 5. The day's units are spent (by Herald's count): the send waits for the reset, not failed.
    ProviderQuotaDay.objects.filter(provider="youtube", day=quota_day()).update(units=9900)
    sessions = server.counters["sessions_started"]
    held = publish(actor, workspace, account, wide, title="Tomorrow")

    def waiting() -> Destination | None:
        row = Destination.objects.get(publication=held)
        return row if row.status == S.RETRY_WAIT else None

    row = stack.wait_until(waiting, timeout=60, what="the quota wait")
    assert row.error_kind == "quota_exhausted"
    assert row.next_attempt_at is not None
    assert row.next_attempt_at > timezone.now() + timedelta(minutes=1)
    time.sleep(3)  # the dispatcher ticks every second: still held
    row.refresh_from_db()
    assert (row.status, row.attempts) == (S.RETRY_WAIT, 0)
    assert server.counters["sessions_started"] == sessions

    # 6. Disconnect revokes the grant at Google.
    account_disconnect(actor=actor, account_id=account.pk)
    assert server.counters["tokens_revoked"] == 1
