"""The long-send engine in this process (docs/decisions/0020-long-sends.md): a send the provider
is still processing waits ``sending`` with its state and no claim, its check comes back as a
countdown message, a check without a free slot waits again, the dispatcher re-sends a check
whose message was lost, and a send's claim and slots are sized to its upload. A real video to
the stand-in Mastodon; the worker-process tests are in test_delivery_worker.py."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from config import limits
from providers.mastodon import MastodonAdapter
from publishing import tasks
from publishing.models import Account, Destination, PublicationEvent
from publishing.services import delivery
from publishing.services.delivery.send import transfer_seconds
from tests.providers.mastodon.standin import MastodonStandIn
from tests.publishing_support import (
    connect,
    publish_now_with_services,
    send_in_process,
    upload,
)
from tests.video_support import make_video
from workspaces.access import Actor
from workspaces.models import User

pytestmark = pytest.mark.django_db
S = Destination.Status


@pytest.fixture
def server(provider_settings: Any) -> Iterator[MastodonStandIn]:
    with MastodonStandIn() as standin:
        yield standin


@pytest.fixture
def video_destination(
    owner_client: APIClient,
    workspace: Any,
    user: User,
    server: MastodonStandIn,
    media_storage: Path,
    delivery_queue: Any,
    django_capture_on_commit_callbacks: Any,
) -> Destination:
    """A real MP4 to the stand-in Mastodon, published now (its send message queued)."""
    account = Account.objects.get(pk=connect(owner_client, workspace, "mastodon", server)["id"])
    record = upload(owner_client, workspace, make_video(), name="clip.mp4")
    tasks.media_probe(record["id"])
    with django_capture_on_commit_callbacks(execute=True):
        publication = publish_now_with_services(
            Actor(user=user), workspace, account.pk, "A clip", media_ids=[record["id"]]
        )
    delivery_queue.clear()
    return Destination.objects.get(publication=publication)


send = send_in_process


def make_due(destination: Destination) -> None:
    Destination.objects.filter(pk=destination.pk).update(send_check_at=timezone.now())


def test_a_processing_video_waits_with_its_state_and_no_claim(
    video_destination: Destination,
    server: MastodonStandIn,
    delivery_queue: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    server.set_faults(video_processing_seconds=60)

    row = send(video_destination, django_capture_on_commit_callbacks)

    assert (row.status, row.send_stage, row.attempts) == (S.SENDING, "processing", 1)
    assert row.claim_expires_at is None, "a waiting send holds no claim"
    assert row.write_started_at is not None
    (media_id,) = row.send_state["media_ids"]
    assert row.send_state["waiting"] == [media_id]
    assert delivery_queue.sends == [str(row.pk)]
    assert delivery_queue.countdowns[str(row.pk)] == MastodonAdapter.media_check_seconds
    assert row.send_check_at > timezone.now()
    kinds = PublicationEvent.objects.filter(destination=row).values_list("kind", flat=True)
    assert list(kinds).count("destination.processing") == 1

    # Its message before the check is due: nothing to claim, no call.
    calls = server.requests
    assert send(row, django_capture_on_commit_callbacks).send_stage == "processing"
    assert server.requests == calls

    # Due, still processing: asked once, waits again, longer, with no second event.
    delivery_queue.clear()
    make_due(row)
    row = send(row, django_capture_on_commit_callbacks)
    assert (row.status, row.send_stage, row.attempts) == (S.SENDING, "processing", 1)
    assert server.requests == calls + 1
    assert delivery_queue.countdowns[str(row.pk)] > MastodonAdapter.media_check_seconds
    kinds = PublicationEvent.objects.filter(destination=row).values_list("kind", flat=True)
    assert list(kinds).count("destination.processing") == 1

    # Processed: the next check posts it, once, and the long-send columns are cleared.
    with server.lock:
        server.media[media_id]["ready_at"] = 0
    make_due(row)
    row = send(row, django_capture_on_commit_callbacks)
    assert (row.status, row.attempts) == (S.PUBLISHED, 1)
    assert (row.send_stage, row.send_state, row.send_check_at) == (None, None, None)
    assert server.posts_accepted == 1
    assert server.posts[0]["media_ids"] == [media_id]
    assert server.posts[0]["idempotency_key"] == row.idempotency_key


def test_a_check_without_a_free_slot_waits_again_without_a_call(
    video_destination: Destination,
    server: MastodonStandIn,
    delivery_queue: Any,
    settings: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    settings.HERALD_PROVIDER_MAX_IN_FLIGHT_PER_ACCOUNT = 1
    server.set_faults(video_processing_seconds=0)
    row = send(video_destination, django_capture_on_commit_callbacks)
    assert row.send_stage == "processing"
    key = f"delivery:account:{row.account_id}"
    assert limits.acquire_shared_slots([(key, 1)], "another-send", 30.0) == (True, 0.0)
    delivery_queue.clear()
    make_due(row)
    calls = server.requests

    started = time.monotonic()
    row = send(row, django_capture_on_commit_callbacks)

    assert time.monotonic() - started < 1.0, "the thread did not wait for the slot"
    assert (row.status, row.send_stage, row.claim_expires_at) == (S.SENDING, "processing", None)
    assert server.requests == calls
    assert 1.0 <= delivery_queue.countdowns[str(row.pk)] <= 2.0
    assert row.send_check_at > timezone.now()
    limits.release_shared_slots([key], "another-send")
    make_due(row)
    assert send(row, django_capture_on_commit_callbacks).status == S.PUBLISHED


def test_the_dispatcher_sends_again_a_check_whose_message_was_lost(
    video_destination: Destination,
    server: MastodonStandIn,
    delivery_queue: Any,
    settings: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    server.set_faults(video_processing_seconds=60)
    row = send(video_destination, django_capture_on_commit_callbacks)
    delivery_queue.clear()  # the countdown message is lost

    delivery.delivery_dispatch()
    assert delivery_queue.sends == [], "not yet stale: its message may still come"

    stale = timezone.now() - timedelta(seconds=settings.HERALD_DISPATCH_STALE_SECONDS + 1)
    Destination.objects.filter(pk=row.pk).update(send_check_at=stale)
    counts = delivery.delivery_dispatch()

    assert delivery_queue.sends == [str(row.pk)]
    assert counts["enqueued"] == 1


def test_a_long_send_past_its_bound_fails_with_the_reason(
    video_destination: Destination,
    server: MastodonStandIn,
    settings: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    server.set_faults(video_processing_seconds=3600)
    row = send(video_destination, django_capture_on_commit_callbacks)
    settings.HERALD_DELIVERY_PENDING_MAX_SECONDS = 60
    Destination.objects.filter(pk=row.pk).update(
        write_started_at=timezone.now() - timedelta(seconds=61)
    )
    make_due(row)
    calls = server.requests

    row = send(row, django_capture_on_commit_callbacks)

    assert (row.status, row.error_kind, row.action) == (S.FAILED, "provider_timeout", "retry")
    assert row.error_message == (
        "The provider was still processing the media after 60 s; Herald stopped waiting."
    )
    assert (row.send_stage, row.send_state) == (None, None)
    assert server.requests == calls, "no call once the bound has passed"


def test_the_claim_and_the_slots_are_sized_to_the_upload(
    video_destination: Destination,
    server: MastodonStandIn,
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
    django_capture_on_commit_callbacks: Any,
) -> None:
    """While the upload is at the provider, the claim lasts the lease plus the media's bytes at
    the minimum throughput, and so do the slots."""
    settings.HERALD_DELIVERY_MIN_THROUGHPUT_BYTES = 1024
    settings.HERALD_PROVIDER_MAX_IN_FLIGHT_PER_ACCOUNT = 4
    seen: dict[str, Any] = {}
    acquire = limits.acquire_shared_slots

    def recording_acquire(keys: Any, token: str, lease: float, **kwargs: Any) -> Any:
        seen["slot_lease"] = lease
        return acquire(keys, token, lease, **kwargs)

    def recording_publish(self: MastodonAdapter, **kwargs: Any) -> Any:
        seen["row"] = Destination.objects.get(pk=video_destination.pk)
        seen["request"] = kwargs["request"]
        return original(self, **kwargs)

    original = MastodonAdapter.publish
    monkeypatch.setattr(limits, "acquire_shared_slots", recording_acquire)
    monkeypatch.setattr(MastodonAdapter, "publish", recording_publish)

    send(video_destination, django_capture_on_commit_callbacks)

    size = sum(item.size for item in seen["request"].media)
    assert size > 1024
    assert transfer_seconds(seen["request"]) == pytest.approx(size / 1024)
    claim = seen["row"].claim_expires_at - seen["row"].write_started_at
    assert claim.total_seconds() == pytest.approx(
        settings.HERALD_DELIVERY_LEASE_SECONDS + size / 1024, abs=0.01
    )
    assert seen["slot_lease"] == pytest.approx(
        settings.HERALD_PROVIDER_SLOT_LEASE_SECONDS + size / 1024
    )
