"""YouTube through publishing's services and the delivery engine, in this process, against the
stand-in: the 422s YouTube's rules give at create time, a video published as a long send with
its poster as thumbnail, a send held (not failed) while the day's quota is spent, a worker
killed mid-upload that goes on in the same session after reconcile (one video), and the
capabilities' quota. The worker-process test is test_provider_youtube_worker.py."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from providers import get_adapter
from providers.youtube import YouTubeAdapter
from publishing import tasks
from publishing.models import Account, Destination, PublicationEvent
from publishing.services import delivery, publications
from tests.providers.youtube.standin import YouTubeStandIn
from tests.publishing_support import (
    API,
    connect_with_services,
    create_publication,
    gif_bytes,
    ok,
    send_in_process,
    upload,
)
from tests.video_support import make_video
from workspaces.access import Actor
from workspaces.models import User

pytestmark = pytest.mark.django_db
S = Destination.Status
OPTIONS = {"title": "Launch day", "made_for_kids": "false", "thumbnail": "poster"}


@pytest.fixture
def server(provider_settings: Any) -> Iterator[YouTubeStandIn]:
    with YouTubeStandIn() as standin:
        standin.chunk_unit = 1024
        provider_settings.PROVIDER_OAUTH_APPS = {
            **provider_settings.PROVIDER_OAUTH_APPS,
            "youtube": standin.app_settings(),
        }
        yield standin


@pytest.fixture
def adapter(server: YouTubeStandIn, monkeypatch: Any) -> YouTubeAdapter:
    adapter = get_adapter("youtube")
    assert isinstance(adapter, YouTubeAdapter)
    monkeypatch.setattr(adapter, "chunk_bytes", 1024)
    monkeypatch.setattr(adapter, "upload_check_seconds", 0.5)
    return adapter


@pytest.fixture
def channel(user: User, workspace: Any, server: YouTubeStandIn) -> Account:
    account: Account = connect_with_services(Actor(user=user), workspace, "youtube")
    return account


def probed_video(client: APIClient, workspace: Any, **shape: Any) -> str:
    record = upload(client, workspace, make_video(**shape), name="clip.mp4")
    tasks.media_probe(record["id"])
    return str(record["id"])


def publish(
    user: User, workspace: Any, channel: Account, media_id: str, captured: Any, **options: str
) -> Destination:
    with captured(execute=True):
        publication = publications.publication_create(
            actor=Actor(user=user),
            workspace_id=workspace.pk,
            text="All about it.",
            media_ids=[media_id],
            destinations=[
                {
                    "account_id": str(channel.pk),
                    "profile": "youtube.video",
                    "options": {**OPTIONS, **options},
                }
            ],
        )
        publications.publication_publish_now(
            actor=Actor(user=user), publication_id=publication.pk, expected_revision=None
        )
    return Destination.objects.get(publication=publication)


def run_until_settled(destination: Destination, captured: Any, turns: int = 40) -> Destination:
    """Send, then each due check, as the worker would (countdowns skipped)."""
    row = send_in_process(destination, captured)
    for _ in range(turns):
        if row.status != S.SENDING:
            return row
        Destination.objects.filter(pk=row.pk).update(send_check_at=timezone.now())
        row = send_in_process(row, captured)
    raise AssertionError(f"still {row.status} at {row.send_stage}")


def test_what_youtube_would_refuse_is_a_422_at_create_time(
    owner_client: APIClient,
    workspace: Any,
    channel: Account,
    media_storage: Path,
) -> None:
    wide = probed_video(owner_client, workspace, width=320, height=180, seconds=2)
    response = create_publication(
        owner_client,
        workspace,
        [],
        text="Watch <this>",
        status=422,
        media_ids=[wide],
        destinations=[
            {
                "account_id": str(channel.pk),
                "profile": "youtube.short",
                "options": {"title": "a <b>"},
            }
        ],
    )
    assert response.status_code == 422
    errors = {e["location"]: e["message"] for e in response.json()["errors"]}
    assert "body.destinations[0].options.made_for_kids" in errors
    assert "May not contain" in errors["body.destinations[0].options.title"]
    assert "refuses" in errors["body.text"]
    assert any("YouTube Shorts" in m for loc, m in errors.items() if "media_ids" in loc)

    image = upload(owner_client, workspace, gif_bytes(), name="cover.gif")["id"]
    response = create_publication(
        owner_client,
        workspace,
        [],
        text="Cover only",
        status=422,
        media_ids=[image],
        destinations=[
            {
                "account_id": str(channel.pk),
                "options": {"title": "T", "made_for_kids": "true", "thumbnail": "image"},
            }
        ],
    )
    errors = {e["location"]: e["message"] for e in response.json()["errors"]}
    assert "one video" in errors["body.media_ids"]

    response = create_publication(
        owner_client,
        workspace,
        [],
        text="No cover sent",
        status=422,
        media_ids=[wide],
        destinations=[
            {
                "account_id": str(channel.pk),
                "options": {"title": "T", "made_for_kids": "true", "thumbnail": "image"},
            }
        ],
    )
    errors = {e["location"]: e["message"] for e in response.json()["errors"]}
    assert "needs one image" in errors["body.destinations[0].options.thumbnail"]


def test_a_video_is_published_once_with_its_poster_as_thumbnail(
    owner_client: APIClient,
    user: User,
    workspace: Any,
    channel: Account,
    server: YouTubeStandIn,
    adapter: YouTubeAdapter,
    media_storage: Path,
    delivery_queue: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    media_id = probed_video(owner_client, workspace, width=180, height=320, seconds=2)
    destination = publish(user, workspace, channel, media_id, django_capture_on_commit_callbacks)
    row = run_until_settled(destination, django_capture_on_commit_callbacks)
    assert row.status == S.PUBLISHED, row.error_message
    assert server.posts_accepted == 1
    video = server.videos[row.external_id]
    assert video["thumbnail"]["type"] == "image/jpeg"
    assert video["thumbnail"]["bytes"][:2] == b"\xff\xd8"
    kinds = set(PublicationEvent.objects.filter(destination=row).values_list("kind", flat=True))
    assert "destination.uploading" in kinds


def test_a_spent_quota_day_holds_the_send_until_it_resets(
    owner_client: APIClient,
    user: User,
    workspace: Any,
    channel: Account,
    server: YouTubeStandIn,
    media_storage: Path,
    delivery_queue: Any,
    django_capture_on_commit_callbacks: Any,
    settings: Any,
) -> None:
    settings.PROVIDER_OAUTH_APPS = {
        **settings.PROVIDER_OAUTH_APPS,
        "youtube": server.app_settings(daily_quota=1000),
    }
    media_id = probed_video(owner_client, workspace)
    destination = publish(user, workspace, channel, media_id, django_capture_on_commit_callbacks)
    row = send_in_process(destination, django_capture_on_commit_callbacks)
    assert row.status == S.RETRY_WAIT, (row.error_kind, row.error_message, row.deadline_at)
    assert row.error_kind == "quota_exhausted"
    assert row.attempts == 0  # a wait, not an attempt
    assert row.next_attempt_at is not None
    assert row.next_attempt_at > timezone.now() + timedelta(seconds=1)
    assert row.next_attempt_at < timezone.now() + timedelta(hours=25)
    assert server.counters["sessions_started"] == 0
    assert PublicationEvent.objects.filter(destination=row, kind="destination.waiting").exists()

    items = ok(
        owner_client.get(
            f"{API}/capabilities",
            {"workspace_id": str(workspace.pk), "account_ids": str(channel.pk)},
        )
    )["items"]
    quota = items[0]["quota"]
    assert quota["daily_units"] == 1000
    assert quota["uploads_remaining"] == 0
    assert quota["resets_at"]


def test_a_worker_killed_mid_upload_goes_on_in_the_same_session(
    owner_client: APIClient,
    user: User,
    workspace: Any,
    channel: Account,
    server: YouTubeStandIn,
    adapter: YouTubeAdapter,
    media_storage: Path,
    delivery_queue: Any,
    django_capture_on_commit_callbacks: Any,
    monkeypatch: Any,
) -> None:
    media_id = probed_video(owner_client, workspace, width=320, height=240, seconds=2)
    destination = publish(user, workspace, channel, media_id, django_capture_on_commit_callbacks)
    row = send_in_process(destination, django_capture_on_commit_callbacks)
    assert (row.status, row.send_stage) == (S.SENDING, "uploading")
    session = row.send_state["session"]

    # One chunk in, then the worker dies inside its turn: the claim it held expires.
    monkeypatch.setattr(adapter, "bytes_per_check", 1024)
    Destination.objects.filter(pk=row.pk).update(send_check_at=timezone.now())
    row = send_in_process(row, django_capture_on_commit_callbacks)
    assert row.send_state["offset"] == 1024
    Destination.objects.filter(pk=row.pk).update(
        send_check_at=None, claim_expires_at=timezone.now() - timedelta(seconds=1)
    )
    with django_capture_on_commit_callbacks(execute=True):
        delivery.delivery_dispatch()
    row.refresh_from_db()
    assert row.status == S.AMBIGUOUS

    monkeypatch.setattr(adapter, "bytes_per_check", 1 << 30)
    with django_capture_on_commit_callbacks(execute=True):
        delivery.delivery_reconcile(destination_id=row.pk)
    row.refresh_from_db()
    assert (row.status, row.send_stage) == (S.SENDING, "uploading")
    assert row.send_state["session"] == session
    row = run_until_settled(row, django_capture_on_commit_callbacks)
    assert row.status == S.PUBLISHED, row.error_message
    assert server.counters["sessions_started"] == 1
    assert server.posts_accepted == 1
    assert row.external_id == server.posts[0]["id"]
    kinds = PublicationEvent.objects.filter(destination=row).values_list("kind", flat=True)
    assert "destination.reconciled_resumed" in kinds
