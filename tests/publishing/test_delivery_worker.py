"""Delivery through REAL Celery processes: a `celery worker` and a `celery
beat` started as separate processes on the test database, delivering to stand-in Mastodon and
Bluesky servers on 127.0.0.1.

Runs on whatever the suite runs on: SQLite + the filesystem broker by default (the test database
is then a file the workers open: see ``worker_database_url`` in the root conftest), PostgreSQL +
Redis when ``DATABASE_URL``/``REDIS_URL`` are set.

Most tests share one worker and beat (module scope). The SIGKILL and Redis-restart tests stop
them and run their own processes.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from django.conf import settings as django_settings
from django.utils import timezone
from rest_framework.test import APIClient

from publishing import tasks
from publishing.models import Account, Destination, Publication, PublicationEvent
from publishing.services.accounts import account_connect, account_oauth_complete
from publishing.services.publications import (
    publication_create,
    publication_publish_now,
    publication_schedule,
)
from tests.providers.bluesky.standin import BlueskyStandIn
from tests.providers.mastodon.standin import MastodonStandIn
from tests.providers.standin import StandIn
from tests.publishing_support import (
    bind_browser,
    publish_now_with_services,
    upload,
    use_media_root,
)
from tests.video_support import make_video
from tests.worker_harness import Broker, DeliveryStack, RedisServer, credential_keys, use_broker
from workspaces.access import Actor

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True), pytest.mark.timeout(240)]

S = Destination.Status
P = Publication.Status
CREATE_PATHS = {
    "mastodon": "/api/v1/statuses",
    "bluesky": "/xrpc/com.atproto.repo.createRecord",
}
REDIRECT_URI = "http://testserver/api/v1/accounts/oauth/callback"


# --- Processes and stand-ins ------------------------------------------------------------------


@pytest.fixture(scope="module")
def standins() -> Iterator[dict[str, StandIn]]:
    with MastodonStandIn() as mastodon, BlueskyStandIn() as bluesky:
        yield {"mastodon": mastodon, "bluesky": bluesky}


@pytest.fixture(scope="module")
def shared(
    worker_database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[DeliveryStack]:
    """The suite's broker (Redis when ``REDIS_URL`` is set, else a private filesystem-broker
    folder) with, once a test asks for ``stack``, one worker and one beat."""
    data_dir = tmp_path_factory.mktemp("herald-data")
    redis_url = django_settings.REDIS_URL
    broker = Broker.redis(redis_url) if redis_url else Broker.filesystem(data_dir)
    stack = DeliveryStack(
        database_url=worker_database_url,
        broker=broker,
        data_dir=data_dir,
        settings_env=credential_keys(),
    )
    with use_broker(broker):
        try:
            yield stack
        finally:
            stack.stop()


@pytest.fixture
def stack(shared: DeliveryStack) -> DeliveryStack:
    if len(shared.processes) != 2 or not all(p.alive for p in shared.processes):
        shared.stop()
        shared.start_beat()
        shared.start_worker()
    return shared


@pytest.fixture
def idle(shared: DeliveryStack) -> DeliveryStack:
    """The shared broker with no worker or beat running (tests then start their own)."""
    shared.stop()
    return shared


# --- Accounts and publications ----------------------------------------------------------------


@dataclass
class World:
    actor: Actor
    workspace: Any
    accounts: dict[str, Account]
    standins: dict[str, StandIn]


@pytest.fixture
def world(standins: dict[str, StandIn], settings: Any, user: Any, workspace: Any) -> World:
    """A workspace with a Mastodon account (OAuth against the stand-in) and a Bluesky account
    (handle + app password), connected through the services."""
    settings.HERALD_ALLOW_PRIVATE_PROVIDER_URLS = True
    settings.HERALD_BLUESKY_SERVICE_URL = standins["bluesky"].url
    for server in standins.values():
        server.reset()
    actor = Actor(user=user)
    _, authorization_url = account_connect(
        actor=actor,
        workspace_id=workspace.pk,
        provider="mastodon",
        redirect_uri=REDIRECT_URI,
        instance_url=standins["mastodon"].url,
    )
    assert authorization_url is not None
    nonce, provider_url = bind_browser(authorization_url)
    answer = requests.get(provider_url, allow_redirects=False, timeout=5)
    grant = parse_qs(urlsplit(answer.headers["Location"]).query)
    mastodon = account_oauth_complete(
        state=grant["state"][0], code=grant["code"][0], browser_nonce=nonce
    )
    password = standins["bluesky"].fixtures()["accounts"]["herald.test"]["app_password"]
    bluesky, _ = account_connect(
        actor=actor,
        workspace_id=workspace.pk,
        provider="bluesky",
        redirect_uri=REDIRECT_URI,
        fields={"handle": "herald.test", "app_password": password},
    )
    assert bluesky is not None
    return World(actor, workspace, {"mastodon": mastodon, "bluesky": bluesky}, standins)


def _create(world: World, providers: tuple[str, ...], text: str) -> Publication:
    return publication_create(
        actor=world.actor,
        workspace_id=world.workspace.pk,
        text=text,
        destinations=[{"account_id": str(world.accounts[p].pk)} for p in providers],
    )


def publish_now(world: World, providers: tuple[str, ...], text: str | None = None) -> Publication:
    publication = _create(world, providers, text or f"Now {uuid.uuid4().hex[:10]}")
    return publication_publish_now(
        actor=world.actor, publication_id=publication.pk, expected_revision=None
    )


def schedule(world: World, providers: tuple[str, ...], seconds: float) -> Publication:
    publication = _create(world, providers, f"Later {uuid.uuid4().hex[:10]}")
    return publication_schedule(
        actor=world.actor,
        publication_id=publication.pk,
        scheduled_at=timezone.now() + timedelta(seconds=seconds),
        expected_revision=None,
    )


def settled(stack: DeliveryStack, publication: Publication, *, timeout: float = 60) -> Publication:
    """Wait until the publication has settled (published, partially published or failed)."""
    done = (P.PUBLISHED, P.PARTIALLY_PUBLISHED, P.FAILED)

    def check() -> Publication | None:
        fresh = Publication.objects.get(pk=publication.pk)
        return fresh if fresh.status in done else None

    return stack.wait_until(check, timeout=timeout, what=f"publication {publication.pk} to settle")


def destination(publication: Publication, provider: str) -> Destination:
    return Destination.objects.select_related("account").get(
        publication=publication, account__provider=provider
    )


def events(publication: Publication) -> list[str]:
    return list(
        PublicationEvent.objects.filter(publication=publication)
        .order_by("id")
        .values_list("kind", flat=True)
    )


def create_requests(server: StandIn, provider: str) -> list[dict[str, Any]]:
    with server.lock:
        return [
            r
            for r in server.request_log
            if r["method"] == "POST" and r["path"] == CREATE_PATHS[provider]
        ]


def assert_published_once(publication: Publication, provider: str, server: StandIn) -> Destination:
    """Published, with the provider's id, and exactly one post at the provider."""
    row = destination(publication, provider)
    assert row.status == S.PUBLISHED, (row.status, row.error_kind, row.error_message)
    assert row.external_id
    assert row.published_at is not None
    with server.lock:
        posts = list(server.posts)
    mine = [p for p in posts if p.get("id", p.get("uri")) == row.external_id]
    assert len(mine) == 1, (row.external_id, posts)
    assert server.posts_accepted == 1, posts
    if provider == "mastodon":
        assert mine[0]["idempotency_key"] == row.idempotency_key
    return row


# --- Delivery ---------------------------------------------------------------------------------


def test_publish_now_delivers_every_destination(stack: DeliveryStack, world: World) -> None:
    publication = publish_now(world, ("mastodon", "bluesky"))

    publication = settled(stack, publication)

    assert publication.status == P.PUBLISHED
    for provider in ("mastodon", "bluesky"):
        row = assert_published_once(publication, provider, world.standins[provider])
        assert row.attempts == 1
        assert row.claim_expires_at is None
    assert events(publication)[-1] == "publication.published"


def test_scheduled_publication_is_delivered_when_due(stack: DeliveryStack, world: World) -> None:
    publication = schedule(world, ("mastodon", "bluesky"), seconds=3)
    due = publication.scheduled_at
    assert due is not None
    assert {d.status for d in Destination.objects.filter(publication=publication)} == {S.SCHEDULED}

    publication = settled(stack, publication)

    assert publication.status == P.PUBLISHED
    for provider in ("mastodon", "bluesky"):
        row = assert_published_once(publication, provider, world.standins[provider])
        assert row.published_at is not None
        assert row.published_at >= due
        first_post = create_requests(world.standins[provider], provider)[0]["at"]
        assert first_post >= due.timestamp(), "sent before its time"
    kinds = events(publication)
    assert kinds.index("publication.scheduled") < kinds.index("publication.due")


# --- Faults -----------------------------------------------------------------------------------


@pytest.mark.parametrize("provider", ["mastodon", "bluesky"])
def test_rate_limited_send_is_retried_no_earlier_than_retry_after(
    stack: DeliveryStack, world: World, provider: str
) -> None:
    server = world.standins[provider]
    server.set_faults(rate_limit={"count": 1, "retry_after": 3})

    publication = settled(stack, publish_now(world, (provider,)))

    assert publication.status == P.PUBLISHED
    row = assert_published_once(publication, provider, server)
    assert row.attempts == 2
    first, second = (r["at"] for r in create_requests(server, provider))
    assert second - first >= 3, f"retried {second - first:.2f} s after a 429 with Retry-After: 3"
    retry = PublicationEvent.objects.get(
        publication=publication, kind="destination.retry_scheduled"
    )
    assert retry.data["retry_after"] == pytest.approx(3, abs=1)


@pytest.mark.parametrize("provider", ["mastodon", "bluesky"])
def test_timeout_after_acceptance_is_ambiguous_then_reconciled(
    stack: DeliveryStack, world: World, provider: str
) -> None:
    server = world.standins[provider]
    # The stand-in stores the post, then answers after 4 s: past the worker's 1.5 s timeout.
    server.set_faults(accept_then_timeout={"count": 1, "seconds": 4})

    publication = settled(stack, publish_now(world, (provider,)))

    assert publication.status == P.PUBLISHED
    assert_published_once(publication, provider, server)
    kinds = events(publication)
    assert kinds.index("destination.ambiguous") < kinds.index("destination.reconciled")
    assert len(create_requests(server, provider)) == 1, "reconciled by asking, not by re-sending"


@pytest.mark.parametrize("provider", ["mastodon", "bluesky"])
def test_ambiguous_send_the_provider_never_stored_is_sent_again_once(
    stack: DeliveryStack, world: World, provider: str
) -> None:
    """A 504 on a write may or may not have landed: ``ambiguous``. Reconciliation finds nothing,
    so the post goes out again with the same key (Mastodon's reconcile re-sends under the
    ``Idempotency-Key``; Bluesky's answers "absent" and the destination is queued again)."""
    server = world.standins[provider]
    server.set_faults(server_error={"count": 1, "status": 504})

    publication = settled(stack, publish_now(world, (provider,)))

    assert publication.status == P.PUBLISHED
    assert_published_once(publication, provider, server)
    assert len(create_requests(server, provider)) == 2
    assert "destination.ambiguous" in events(publication)


def test_permanent_rejection_fails_with_edit_action(stack: DeliveryStack, world: World) -> None:
    mastodon = world.standins["mastodon"]
    mastodon.set_faults(permanent={"count": 1, "status": 422, "message": "Validation failed: nope"})

    publication = settled(stack, publish_now(world, ("mastodon", "bluesky")))

    assert publication.status == P.PARTIALLY_PUBLISHED  # the other destination still shipped
    failed = destination(publication, "mastodon")
    assert (failed.status, failed.action, failed.error_kind) == (S.FAILED, "edit", "permanent")
    assert failed.attempts == 1, "a permanent rejection is not retried"
    assert mastodon.posts_accepted == 0
    assert_published_once(publication, "bluesky", world.standins["bluesky"])


def test_revoked_grant_fails_then_holds_the_scheduled_with_reconnect(
    stack: DeliveryStack, world: World
) -> None:
    """The send that meets the revoked grant fails with ``reconnect``; the account's publication
    scheduled for later is held at once (blocked, ``held``), not failed when it falls due, and
    never reaches the provider."""
    mastodon = world.standins["mastodon"]
    later = schedule(world, ("mastodon",), seconds=4)  # scheduled while the grant was fine
    mastodon.set_faults(reject_tokens=True)

    now = settled(stack, publish_now(world, ("mastodon",)))

    sent = destination(now, "mastodon")
    assert (now.status, sent.status, sent.action) == (P.FAILED, S.FAILED, "reconnect")
    account = Account.objects.get(pk=world.accounts["mastodon"].pk)
    assert account.status == Account.Status.RECONNECT_REQUIRED
    held = destination(later, "mastodon")
    assert (held.status, held.action, held.error_kind) == (S.BLOCKED, "reconnect", "held")
    assert held.readiness is not None
    assert held.readiness["state"] == "reconnect_required"
    assert "destination.held" in events(later)

    time.sleep(max(0.0, (later.scheduled_at - timezone.now()).total_seconds()) + 3)  # past due
    assert destination(later, "mastodon").status == S.BLOCKED
    assert Publication.objects.get(pk=later.pk).status != P.FAILED
    assert len(create_requests(mastodon, "mastodon")) == 1, "the held send reached the provider"
    assert mastodon.posts_accepted == 0


def own_stack(idle: DeliveryStack, **overrides: str) -> DeliveryStack:
    """Worker and beat of a test's own, on the shared database and broker."""
    return DeliveryStack(
        database_url=idle.database_url,
        broker=idle.broker,
        data_dir=idle.data_dir,
        settings_env=idle.settings_env,
        overrides=overrides,
    )


def test_worker_killed_mid_send_posts_exactly_once(idle: DeliveryStack, world: World) -> None:
    """The worker dies (SIGKILL, whole process group) after sending, before recording; the
    provider accepts the post anyway. A new worker's dispatcher finds the expired claim, marks
    the destination ``ambiguous`` and reconciles it: published, one post, no re-send."""
    mastodon = world.standins["mastodon"]
    own = own_stack(idle, HERALD_DELIVERY_LEASE_SECONDS="3")
    try:
        own.start_beat()
        doomed = own.start_worker("doomed")
        mastodon.set_faults(delay_ms=3000)
        publication = publish_now(world, ("mastodon",))
        own.wait_until(
            lambda: create_requests(mastodon, "mastodon"), timeout=30, what="the post request"
        )
        row = destination(publication, "mastodon")
        assert row.status == S.SENDING
        assert row.write_started_at is not None

        doomed.kill()  # SIGKILL to the worker's process group while the request is in flight
        mastodon.set_faults(delay_ms=0)
        own.wait_until(
            lambda: mastodon.posts_accepted == 1, timeout=15, what="the provider to accept"
        )
        assert destination(publication, "mastodon").status == S.SENDING  # nobody recorded it

        own.start_worker("replacement")
        publication = settled(own, publication)
    finally:
        own.stop()

    assert publication.status == P.PUBLISHED
    assert_published_once(publication, "mastodon", mastodon)
    assert len(create_requests(mastodon, "mastodon")) == 1
    assert "destination.reconciled" in events(publication)


@pytest.mark.skipif(
    not django_settings.REDIS_URL, reason="the PostgreSQL + Redis run restarts a redis-server"
)
def test_redis_restart_with_queued_work_loses_nothing(
    idle: DeliveryStack, world: World, tmp_path: Path
) -> None:
    """Work queued while no worker runs, then the broker restarts without persistence (the
    messages are gone), and work queued while the broker is down (the nudge fails after the
    commit): the dispatcher re-enqueues all of it from the database."""
    redis = RedisServer(tmp_path).start()
    broker = Broker.redis(redis.url)
    own = DeliveryStack(
        database_url=idle.database_url,
        broker=broker,
        data_dir=tmp_path,
        settings_env=idle.settings_env,
    )
    try:
        with use_broker(broker):
            publications = [publish_now(world, ("mastodon", "bluesky")) for _ in range(2)]
            assert redis.queued() == 4  # one message per destination, nobody consuming
            redis.restart()  # no persistence: the queued messages are gone
            assert redis.queued() == 0
            redis.stop()
            publications.append(publish_now(world, ("mastodon", "bluesky")))  # broker down
            assert publications[-1].status == P.PUBLISHING
            redis.start()
            assert redis.queued() == 0

        own.start_beat()
        own.start_worker()
        publications = [settled(own, p) for p in publications]
    finally:
        own.stop()
        redis.stop()

    assert {p.status for p in publications} == {P.PUBLISHED}
    for provider in ("mastodon", "bluesky"):
        server = world.standins[provider]
        rows = [destination(p, provider) for p in publications]
        assert all(r.status == S.PUBLISHED and r.external_id for r in rows)
        assert server.posts_accepted == 3, "lost or duplicated posts"
        with server.lock:
            ids = {p.get("id", p.get("uri")) for p in server.posts}
        assert ids == {r.external_id for r in rows}


# --- Long sends: video on Mastodon (docs/decisions/0020-long-sends.md) -------------------------


@pytest.fixture
def video_media(shared: DeliveryStack, settings: Any) -> Path:
    """Uploaded media go where the workers' default storage reads them (their data folder)."""
    return use_media_root(settings, shared.data_dir / "media")


def publish_video(world: World, client: APIClient) -> Publication:
    """A real MP4 (probed here, so it is ``ready``) posted to the Mastodon account now."""
    record = upload(client, world.workspace, make_video(seconds=1), name="clip.mp4")
    tasks.media_probe(record["id"])
    publication: Publication = publish_now_with_services(
        world.actor,
        world.workspace,
        world.accounts["mastodon"].pk,
        f"Clip {uuid.uuid4().hex[:10]}",
        media_ids=[record["id"]],
    )
    return publication


def requests_to(server: StandIn, method: str, path: str) -> list[dict[str, Any]]:
    with server.lock:
        return [r for r in server.request_log if r["method"] == method and r["path"] == path]


def test_a_processing_video_holds_no_worker_thread(
    idle: DeliveryStack, world: World, owner_client: APIClient, video_media: Path
) -> None:
    """One worker thread (concurrency 1): while Mastodon processes the video (8 s), the same
    thread publishes another destination; then the video is posted, once."""
    mastodon = world.standins["mastodon"]
    mastodon.set_faults(video_processing_seconds=8)
    own = own_stack(idle)
    try:
        own.start_beat()
        own.start_worker(concurrency=1)
        video = publish_video(world, owner_client)
        own.wait_until(
            lambda: destination(video, "mastodon").send_stage == "processing",
            timeout=30,
            what="the video to be processing",
        )
        text = settled(own, publish_now(world, ("bluesky",)), timeout=30)
        waiting = destination(video, "mastodon")
        assert (waiting.status, waiting.send_stage) == (S.SENDING, "processing")
        assert waiting.claim_expires_at is None, "no worker holds the waiting send"
        video = settled(own, video, timeout=60)
    finally:
        own.stop()

    assert text.status == P.PUBLISHED
    row = assert_published_once(video, "mastodon", mastodon)
    assert (row.send_stage, row.send_state, row.send_check_at) == (None, None, None)
    assert video.status == P.PUBLISHED
    assert mastodon.counters["video_uploads"] == 1
    assert mastodon.posts[0]["media"] == 1
    assert len(requests_to(mastodon, "GET", "/api/v2/instance")) == 1
    polls = requests_to(mastodon, "GET", "/api/v1/media/" + mastodon.posts[0]["media_ids"][0])
    assert len(polls) >= 2
    kinds = events(video)
    assert kinds.index("destination.processing") < kinds.index("destination.published")


def test_a_video_the_server_fails_to_process_fails_with_the_reason(
    stack: DeliveryStack, world: World, owner_client: APIClient, video_media: Path
) -> None:
    mastodon = world.standins["mastodon"]
    mastodon.set_faults(video_processing_seconds=1, video_processing_fails=True)

    publication = settled(stack, publish_video(world, owner_client))

    row = destination(publication, "mastodon")
    assert (publication.status, row.status, row.error_kind) == (P.FAILED, S.FAILED, "permanent")
    assert "could not process the media" in row.error_message
    assert "Error processing thumbnail" in row.error_message
    assert mastodon.posts_accepted == 0


def test_a_video_that_never_finishes_processing_fails_within_the_bound(
    idle: DeliveryStack, world: World, owner_client: APIClient, video_media: Path
) -> None:
    mastodon = world.standins["mastodon"]
    mastodon.set_faults(video_processing_seconds=3600)
    own = own_stack(idle, HERALD_DELIVERY_PENDING_MAX_SECONDS="4")
    try:
        own.start_beat()
        own.start_worker()
        started = time.monotonic()
        publication = settled(own, publish_video(world, owner_client), timeout=60)
        took = time.monotonic() - started
    finally:
        own.stop()

    row = destination(publication, "mastodon")
    assert (publication.status, row.status) == (P.FAILED, S.FAILED)
    assert (row.error_kind, row.action) == ("provider_timeout", "retry")
    assert "still processing the media after 4 s" in row.error_message
    assert took < 45, f"failed after {took:.0f} s"
    assert mastodon.posts_accepted == 0


def test_worker_killed_mid_upload_posts_the_video_exactly_once(
    idle: DeliveryStack, world: World, owner_client: APIClient, video_media: Path
) -> None:
    """The kill drill with a video in flight: SIGKILL while the upload is at the provider. The
    expired claim is ambiguous; reconciliation finds no post, so the send starts again under
    the same destination and key (uploading again), and the stand-in sees exactly one post."""
    mastodon = world.standins["mastodon"]
    own = own_stack(idle, HERALD_DELIVERY_LEASE_SECONDS="3", HERALD_PROVIDER_TIMEOUT_SECONDS="10")
    try:
        own.start_beat()
        doomed = own.start_worker("doomed")
        mastodon.set_faults(delay_ms=3000)
        publication = publish_video(world, owner_client)
        own.wait_until(
            lambda: requests_to(mastodon, "POST", "/api/v2/media"),
            timeout=30,
            what="the video upload",
        )
        doomed.kill()  # SIGKILL while the upload is in flight
        mastodon.set_faults(delay_ms=0, video_processing_seconds=1)
        row = destination(publication, "mastodon")
        assert (row.status, row.send_stage) == (S.SENDING, None)
        assert row.write_started_at is not None

        own.start_worker("replacement")
        publication = settled(own, publication)
    finally:
        own.stop()

    assert publication.status == P.PUBLISHED
    row = assert_published_once(publication, "mastodon", mastodon)
    assert len(create_requests(mastodon, "mastodon")) == 1
    assert row.send_stage is None
    kinds = events(publication)
    assert kinds.index("destination.ambiguous") < kinds.index("destination.reconciled_absent")


def test_worker_killed_while_the_video_processes_resumes_the_same_upload(
    idle: DeliveryStack, world: World, owner_client: APIClient, video_media: Path
) -> None:
    """The worker holding the next check's countdown dies while Mastodon processes the video:
    the dispatcher finds the check overdue and a new worker resumes the same upload (one
    upload, one post)."""
    mastodon = world.standins["mastodon"]
    mastodon.set_faults(video_processing_seconds=3)
    own = own_stack(idle)
    try:
        own.start_beat()
        doomed = own.start_worker("doomed")
        publication = publish_video(world, owner_client)
        own.wait_until(
            lambda: destination(publication, "mastodon").send_stage == "processing",
            timeout=30,
            what="the video to be processing",
        )
        doomed.kill()
        own.start_worker("replacement")
        publication = settled(own, publication)
    finally:
        own.stop()

    assert publication.status == P.PUBLISHED
    assert_published_once(publication, "mastodon", mastodon)
    assert mastodon.counters["video_uploads"] == 1
