"""A spent Instagram publishing limit through the delivery engine, in this process: the send
waits ``sending`` in stage ``waiting`` (event ``destination.waiting`` with the reason), holds no
claim and no container, is checked again as a countdown message, and is not failed by the
processing bound however long the limit stays spent; and Meta's usage headers near a limit
make the adapter stop calling for that account (rate limited, retried; not failed)."""

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
from tests.providers.instagram.standin import IG_USER, InstagramStandIn
from tests.publishing_support import API, publish_now_with_services, send_in_process, upload
from workspaces.access import Actor
from workspaces.models import User

pytestmark = pytest.mark.django_db
S = Destination.Status


@pytest.fixture
def server(provider_settings: Any) -> Iterator[InstagramStandIn]:
    with InstagramStandIn() as standin:
        provider_settings.PROVIDER_OAUTH_APPS = {
            **provider_settings.PROVIDER_OAUTH_APPS,
            "instagram": {**standin.app_settings(), "limit_check_seconds": "30"},
        }
        provider_settings.HERALD_PUBLIC_URL = "http://herald.test"
        yield standin


@pytest.fixture
def destination(
    owner_client: APIClient,
    workspace: Any,
    user: User,
    server: InstagramStandIn,
    media_storage: Path,
    delivery_queue: Any,
    django_capture_on_commit_callbacks: Any,
) -> Destination:
    account = Account.objects.create(
        workspace=workspace,
        provider="instagram",
        external_id=IG_USER["user_id"],
        username=IG_USER["username"],
        credentials_encrypted=credentials.encrypt(server.facebook_account()),
    )
    buffer = io.BytesIO()
    Image.new("RGB", (50, 50), (1, 2, 3)).save(buffer, format="JPEG")
    image = upload(owner_client, workspace, buffer.getvalue(), name="a.jpg")["id"]
    with django_capture_on_commit_callbacks(execute=True):
        publication = publish_now_with_services(
            Actor(user=user), workspace, account.pk, "Hello", media_ids=[image]
        )
    delivery_queue.clear()
    return Destination.objects.get(publication=publication)


def test_a_spent_limit_waits_and_the_processing_bound_does_not_fail_it(
    owner_client: APIClient,
    destination: Destination,
    server: InstagramStandIn,
    settings: Any,
    delivery_queue: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    server.fill_quota()
    row = send_in_process(destination, django_capture_on_commit_callbacks)
    assert (row.status, row.send_stage) == (S.SENDING, "waiting")
    assert row.claim_expires_at is None
    assert row.send_state["hold_since"] > 0
    assert delivery_queue.countdowns[str(row.pk)] == 30
    event = PublicationEvent.objects.get(destination=row, kind="destination.waiting")
    assert (event.detail, event.data["reason"]) == ("publishing_limit", "publishing_limit")
    assert server.counters["containers"] == 0
    shown = owner_client.get(f"{API}/publications/{row.publication_id}").json()["destinations"][0]
    assert (shown["status"], shown["send_stage"], shown["wait_reason"]) == (
        "sending",
        "waiting",
        "publishing_limit",
    )
    # Much later than the processing bound: still waiting, the limit read again.
    settings.HERALD_DELIVERY_PENDING_MAX_SECONDS = 60
    hour_ago = timezone.now() - timedelta(hours=1)
    Destination.objects.filter(pk=row.pk).update(
        write_started_at=hour_ago, send_check_at=timezone.now()
    )
    row = send_in_process(row, django_capture_on_commit_callbacks)
    assert (row.status, row.send_stage, row.error_kind) == (S.SENDING, "waiting", "")
    assert row.write_started_at is not None
    assert row.write_started_at > hour_ago
    assert server.counters["limit_reads"] == 2
    assert server.counters["containers"] == 0
    kinds = list(PublicationEvent.objects.filter(destination=row).values_list("kind", flat=True))
    assert kinds.count("destination.waiting") == 1


def test_usage_near_a_limit_stops_calls_for_the_account_before_meta_refuses(
    destination: Destination,
    server: InstagramStandIn,
    django_capture_on_commit_callbacks: Any,
) -> None:
    usage = {"type": "instagram", "call_count": 96, "total_cputime": 5, "total_time": 5}
    server.set_usage(
        business={IG_USER["user_id"]: [{**usage, "estimated_time_to_regain_access": 4}]}
    )
    row = send_in_process(destination, django_capture_on_commit_callbacks)
    # The limit read answered 96 %: the container is not asked for; retried after 4 minutes.
    assert (row.status, row.error_kind) == (S.RETRY_WAIT, "rate_limited")
    assert "nothing was sent" in row.error_message
    assert row.next_attempt_at is not None
    assert row.next_attempt_at - timezone.now() > timedelta(minutes=3)
    assert server.counters["limit_reads"] == 1
    assert server.counters["containers"] == 0
