"""Video to X and Bluesky through a REAL Celery worker and beat: the video is uploaded through
the API and probed by the worker, a publication to both networks is published now, and each
send is a long send (docs/decisions/0020-long-sends.md): X's chunked media upload and Bluesky's
video service, then the destination waits ``sending`` while the network processes the video and
the worker resumes it until exactly one post is made on each network.

Runs on SQLite + the filesystem broker by default, PostgreSQL + Redis when
``DATABASE_URL``/``REDIS_URL`` are set (as ``tests/publishing/test_delivery_worker.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rest_framework.test import APIClient

from publishing.models import Destination, Media
from publishing.services.publications import publication_create, publication_publish_now
from tests.providers.bluesky.standin import ACCOUNTS, BlueskyStandIn
from tests.providers.x.standin import XStandIn
from tests.publishing_support import connect_with_services, probed_by_worker, settled_by_worker
from tests.video_support import make_video
from tests.worker_harness import DeliveryStack, running_stack
from workspaces.access import Actor

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True), pytest.mark.timeout(240)]

S = Destination.Status


@pytest.fixture(scope="module")
def networks() -> Iterator[tuple[XStandIn, BlueskyStandIn]]:
    with XStandIn() as x, BlueskyStandIn() as bluesky:
        yield x, bluesky


@pytest.fixture
def stack(
    worker_database_url: str,
    media_storage: Path,
    settings: Any,
    networks: tuple[XStandIn, BlueskyStandIn],
) -> Iterator[DeliveryStack]:
    """A worker and beat that reach both stand-ins (Bluesky's PDS is its video service too); the
    worker's storage is ``<HERALD_DATA_DIR>/media``, the test's ``media_storage``."""
    x, bluesky = networks
    settings.PROVIDER_OAUTH_APPS = {**settings.PROVIDER_OAUTH_APPS, "x": x.app_settings()}
    settings.HERALD_ALLOW_PRIVATE_PROVIDER_URLS = True
    settings.HERALD_BLUESKY_SERVICE_URL = settings.HERALD_BLUESKY_VIDEO_URL = bluesky.url
    overrides = {
        f"HERALD_X_{key.upper()}": value for key, value in x.app_settings().items() if value
    }
    overrides |= {
        "HERALD_BLUESKY_SERVICE_URL": bluesky.url,
        "HERALD_BLUESKY_VIDEO_URL": bluesky.url,
    }
    with running_stack(worker_database_url, media_storage.parent, overrides=overrides) as stack:
        yield stack


def test_a_video_is_posted_once_on_x_and_bluesky_by_the_worker(
    stack: DeliveryStack,
    networks: tuple[XStandIn, BlueskyStandIn],
    owner_client: APIClient,
    user: Any,
    workspace: Any,
) -> None:
    x, bluesky = networks
    for server in networks:
        server.reset()
    x.video_processing_seconds = 2.5  # X asks for a check after 1 s, then 2 s: a few checks
    x.video_fails = False
    bluesky.video_processing_seconds = 1.0  # the first check (after 2 s) finds it completed
    bluesky.video_fails = False
    actor = Actor(user=user)
    password = ACCOUNTS["herald.test"]["password"]
    accounts = [
        connect_with_services(actor, workspace, "x"),
        connect_with_services(
            actor, workspace, "bluesky", {"handle": "herald.test", "app_password": password}
        ),
    ]
    # A 2 s MP4 (H.264/AAC, 24 fps, 64 x 36), probed by the worker.
    clip = make_video("mp4", seconds=2, rate=24, audio=True)
    media = probed_by_worker(stack, owner_client, workspace, clip, "launch.mp4")
    Media.objects.filter(pk=media.pk).update(alt_text="A grey ramp")
    media_id, size = str(media.pk), media.size_bytes
    publication = publication_create(
        actor=actor,
        workspace_id=workspace.pk,
        text="Launch day",
        media_ids=[media_id],
        destinations=[{"account_id": str(account.pk)} for account in accounts],
    )
    publication_publish_now(actor=actor, publication_id=publication.pk, expected_revision=None)

    settled = settled_by_worker(stack, publication, "both video posts")
    assert settled.status == "published"
    rows = {d.account.provider: d for d in Destination.objects.filter(publication=publication)}
    assert {p: (d.status, d.error_message) for p, d in rows.items()} == {
        "x": (S.PUBLISHED, ""),
        "bluesky": (S.PUBLISHED, ""),
    }
    (post,) = x.posts
    assert post["id"] == rows["x"].external_id
    assert (post["sizes"], post["alt_texts"]) == ([size], ["A grey ramp"])
    assert x.counters["media_uploads"] == 1
    assert x.counters["media_segments"] >= 1
    (skeet,) = bluesky.posts
    assert skeet["uri"] == rows["bluesky"].external_id
    assert skeet["video"]["alt"] == "A grey ramp"
    assert skeet["video"]["aspectRatio"] == {"width": 64, "height": 36}
    assert bluesky.counters["videos_uploaded"] == 1
