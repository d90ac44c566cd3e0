"""A publication whose video is still being probed is accepted (published now or scheduled) and
its send waits for ``ready``: nothing reaches the provider and no attempt is counted while the
media is ``processing``; once the probe marks it ready the send goes out. A media that ends
``failed`` fails the destination with its reason; one still processing
HERALD_MEDIA_WAIT_MAX_SECONDS after the send was due fails it too. A real video, probed by the
task body in this process, to the stand-in Mastodon."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from publishing import tasks
from publishing.models import Account, Destination, Media
from publishing.services.delivery.send import MEDIA_WAIT_CHECK_SECONDS
from tests.providers.mastodon.standin import MastodonStandIn
from tests.publishing_support import (
    API,
    connect,
    create_publication,
    ok,
    publish_now_with_services,
    send_in_process,
    upload,
)
from tests.video_support import make_video
from workspaces.access import Actor
from workspaces.models import User

pytestmark = pytest.mark.django_db
S = Destination.Status
VIDEO = make_video(seconds=2)


@pytest.fixture
def server(provider_settings: Any) -> Iterator[MastodonStandIn]:
    with MastodonStandIn() as standin:
        standin.set_faults(video_processing_seconds=0)
        yield standin


@pytest.fixture
def account(owner_client: APIClient, workspace: Any, server: MastodonStandIn) -> Account:
    return Account.objects.get(pk=connect(owner_client, workspace, "mastodon", server)["id"])


@pytest.fixture
def processing_video(owner_client: APIClient, workspace: Any, media_storage: Path) -> str:
    record = upload(owner_client, workspace, VIDEO, name="clip.mp4")
    assert record["status"] == "processing"
    return str(record["id"])


@pytest.fixture
def waiting(
    workspace: Any,
    user: User,
    account: Account,
    processing_video: str,
    delivery_queue: Any,
    django_capture_on_commit_callbacks: Any,
) -> Destination:
    """Published now with its video still processing: accepted, its send message queued."""
    with django_capture_on_commit_callbacks(execute=True):
        publication = publish_now_with_services(
            Actor(user=user), workspace, account.pk, "A clip", media_ids=[processing_video]
        )
    destination = Destination.objects.get(publication=publication)
    assert delivery_queue.sends == [str(destination.pk)]
    delivery_queue.clear()
    return destination


def make_due(destination: Destination) -> None:
    now = timezone.now()
    Destination.objects.filter(pk=destination.pk).update(next_attempt_at=now, send_check_at=now)


def send(destination: Destination, capture: Any) -> Destination:
    return send_in_process(destination, capture)  # type: ignore[no-any-return]


def test_a_processing_video_may_be_scheduled(
    owner_client: APIClient, workspace: Any, account: Account, processing_video: str
) -> None:
    publication = create_publication(
        owner_client, workspace, [str(account.pk)], media_ids=[processing_video]
    )
    due = timezone.now() + timedelta(minutes=10)
    scheduled = owner_client.post(
        f"{API}/publications/{publication['id']}/schedule",
        {"scheduled_at": due.isoformat()},
        format="json",
    )
    assert ok(scheduled, 200)["status"] == "scheduled"


def test_the_send_waits_while_processing_then_publishes_once_ready(
    waiting: Destination,
    server: MastodonStandIn,
    processing_video: str,
    delivery_queue: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    calls = server.requests
    row = send(waiting, django_capture_on_commit_callbacks)
    assert (row.status, row.attempts) == (S.QUEUED, 0), "no attempt is counted while it waits"
    assert (row.write_started_at, row.claim_expires_at) == (None, None)
    assert row.next_attempt_at > timezone.now()
    assert delivery_queue.countdowns[str(row.pk)] == MEDIA_WAIT_CHECK_SECONDS
    assert server.requests == calls, "nothing reaches the provider"

    # Its message before it is due again: nothing to claim.
    assert send(row, django_capture_on_commit_callbacks).status == S.QUEUED

    # Due again, still processing: it waits again.
    make_due(row)
    row = send(row, django_capture_on_commit_callbacks)
    assert (row.status, row.attempts) == (S.QUEUED, 0)
    assert server.requests == calls

    tasks.media_probe(processing_video)  # the task body, as a worker runs it
    assert Media.objects.get(pk=processing_video).status == Media.Status.READY
    for _ in range(3):  # Mastodon may answer "processing" once before the post
        make_due(row)
        row = send(row, django_capture_on_commit_callbacks)
        if row.status == S.PUBLISHED:
            break
    assert (row.status, row.attempts) == (S.PUBLISHED, 1)
    assert server.posts_accepted == 1
    assert server.posts[0]["idempotency_key"] == row.idempotency_key
    row.publication.refresh_from_db()
    assert row.publication.status == "published"


def test_a_media_that_ends_failed_fails_the_destination_with_its_reason(
    waiting: Destination,
    server: MastodonStandIn,
    processing_video: str,
    media_storage: Path,
    django_capture_on_commit_callbacks: Any,
) -> None:
    for path in media_storage.rglob("*.mp4"):  # the stored file is cut short before probing
        path.write_bytes(VIDEO[: len(VIDEO) * 9 // 10])
    tasks.media_probe(processing_video)
    media = Media.objects.get(pk=processing_video)
    assert media.status == Media.Status.FAILED
    assert media.failure_reason
    calls = server.requests

    row = send(waiting, django_capture_on_commit_callbacks)

    assert (row.status, row.error_kind, row.action) == (S.FAILED, "media", "edit")
    assert media.failure_reason in row.error_message
    assert server.requests == calls
    row.publication.refresh_from_db()
    assert row.publication.status == "failed"


def test_a_media_still_processing_past_the_bound_fails_the_destination(
    waiting: Destination,
    server: MastodonStandIn,
    settings: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    settings.HERALD_MEDIA_WAIT_MAX_SECONDS = 60
    calls = server.requests
    row = send(waiting, django_capture_on_commit_callbacks)
    assert row.status == S.QUEUED, "within the bound it waits"

    Destination.objects.filter(pk=row.pk).update(due_at=timezone.now() - timedelta(seconds=61))
    make_due(row)
    row = send(row, django_capture_on_commit_callbacks)

    assert (row.status, row.error_kind) == (S.FAILED, "media")
    assert row.error_message.startswith("Media still processing 60 s after the send was due")
    assert server.requests == calls


def test_a_video_that_breaks_a_rule_once_probed_fails_before_any_upload(
    owner_client: APIClient,
    workspace: Any,
    user: User,
    account: Account,
    server: MastodonStandIn,
    media_storage: Path,
    delivery_queue: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    """Accepted while processing (nothing known of it yet); once probed its 125 frames per
    second break Mastodon's 120: the send fails with the rule in words, uploads nothing and is
    not retried."""
    record = upload(owner_client, workspace, make_video(seconds=1, rate=125), name="fast.mp4")
    assert record["status"] == "processing"
    with django_capture_on_commit_callbacks(execute=True):
        publication = publish_now_with_services(
            Actor(user=user), workspace, account.pk, "Fast", media_ids=[record["id"]]
        )
    destination = Destination.objects.get(publication=publication)
    tasks.media_probe(record["id"])
    assert Media.objects.get(pk=record["id"]).status == Media.Status.READY
    calls = server.requests

    row = send(destination, django_capture_on_commit_callbacks)

    assert (row.status, row.error_kind, row.action) == (S.FAILED, "media", "edit")
    assert "Mastodon: up to 120 frames per second; this one has 125" in row.error_message
    assert row.error_message.startswith("fast.mp4: ")
    assert server.requests == calls, "nothing reaches the provider"
    make_due(row)
    assert send(row, django_capture_on_commit_callbacks).status == S.FAILED  # not retried


def test_an_image_mastodon_processes_later_gives_the_thread_back(
    workspace: Any,
    user: User,
    owner_client: APIClient,
    account: Account,
    server: MastodonStandIn,
    media_storage: Path,
    delivery_queue: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    """Mastodon answers 202 for the image, then 206 once: the send records that the server is
    processing it and lets go of its claim; the due check posts the status, one upload."""
    server.media_polls = 2
    image = upload(owner_client, workspace)["id"]
    with django_capture_on_commit_callbacks(execute=True):
        publication = publish_now_with_services(
            Actor(user=user), workspace, account.pk, "A picture", media_ids=[image]
        )
    row = send(Destination.objects.get(publication=publication), django_capture_on_commit_callbacks)
    assert (row.status, row.send_stage, row.claim_expires_at) == (S.SENDING, "processing", None)
    assert server.posts_accepted == 0
    for _ in range(3):
        make_due(row)
        row = send(row, django_capture_on_commit_callbacks)
        if row.status == S.PUBLISHED:
            break
    assert (row.status, row.attempts) == (S.PUBLISHED, 1)
    assert (server.counters["media_uploads"], server.posts_accepted) == (1, 1)
