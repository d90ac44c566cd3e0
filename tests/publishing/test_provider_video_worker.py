"""Video to LinkedIn and Threads through a REAL Celery worker and beat: the video is uploaded
through the API and probed by the worker, a publication to both networks is published now, and
each send is a long send (docs/decisions/0020-long-sends.md): LinkedIn's Videos API upload and
Threads' VIDEO container (Threads fetches the video from Herald's signed URL, served here by the
live server), then the destination waits ``sending`` while the network processes the video and
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

from publishing.models import Destination
from publishing.services.publications import publication_create, publication_publish_now
from tests.providers.linkedin.standin import LinkedInStandIn
from tests.providers.threads.standin import ThreadsStandIn
from tests.publishing_support import connect_with_services, probed_by_worker, settled_by_worker
from tests.video_support import make_video
from tests.worker_harness import DeliveryStack, running_stack
from workspaces.access import Actor

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True), pytest.mark.timeout(240)]

S = Destination.Status


@pytest.fixture(scope="module")
def networks() -> Iterator[tuple[LinkedInStandIn, ThreadsStandIn]]:
    with LinkedInStandIn() as linkedin, ThreadsStandIn() as threads:
        yield linkedin, threads


def _app_env(provider: str, app: dict[str, str]) -> dict[str, str]:
    """The worker's ``HERALD_<P>_*`` variables for one stand-in app."""
    return {
        f"HERALD_{provider.upper()}_{key.upper()}": value for key, value in app.items() if value
    }


@pytest.fixture
def stack(
    worker_database_url: str,
    media_storage: Path,
    settings: Any,
    live_server: Any,
    networks: tuple[LinkedInStandIn, ThreadsStandIn],
) -> Iterator[DeliveryStack]:
    """A worker and beat that reach both stand-ins, on media files the live server serves (the
    worker's storage is ``<HERALD_DATA_DIR>/media``, the test's ``media_storage``)."""
    linkedin, threads = networks
    data_dir = media_storage.parent
    settings.HERALD_PUBLIC_URL = str(live_server.url)
    apps = {"linkedin": linkedin.app_settings(), "threads": threads.app_settings()}
    settings.PROVIDER_OAUTH_APPS = {**settings.PROVIDER_OAUTH_APPS, **apps}
    overrides = {"HERALD_PUBLIC_URL": str(live_server.url)}
    for provider, app in apps.items():
        overrides |= _app_env(provider, app)
    with running_stack(worker_database_url, data_dir, overrides=overrides) as stack:
        yield stack


def test_a_video_is_posted_once_on_linkedin_and_threads_by_the_worker(
    stack: DeliveryStack,
    networks: tuple[LinkedInStandIn, ThreadsStandIn],
    owner_client: APIClient,
    user: Any,
    workspace: Any,
    live_server: Any,
) -> None:
    linkedin, threads = networks
    for server in networks:
        server.reset()
    linkedin.video_processing_seconds = 2.0  # the first check (after 5 s) finds it AVAILABLE
    threads.container_polls = 1  # the first check finds it IN_PROGRESS, the second FINISHED
    actor = Actor(user=user)
    accounts = [connect_with_services(actor, workspace, p) for p in ("linkedin", "threads")]
    # A 3 s MP4 (H.264/AAC, 24 fps, past LinkedIn's 75 KB), probed by the worker.
    clip = make_video("mp4", seconds=3, rate=24, audio=True, noise=True)
    media_id = str(probed_by_worker(stack, owner_client, workspace, clip, "launch.mp4").pk)
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
        "linkedin": (S.PUBLISHED, ""),
        "threads": (S.PUBLISHED, ""),
    }
    (post,) = linkedin.posts
    assert post["id"] == rows["linkedin"].external_id
    assert post["videos"]
    assert post["titles"] == ["launch"]
    assert linkedin.counters["video_uploads"] == 1
    (thread,) = threads.posts
    assert thread["id"] == rows["threads"].external_id
    assert thread["media_type"] == "VIDEO"
    (fetch,) = threads.fetched  # Threads fetched the video once, from Herald's signed URL
    assert fetch["url"].startswith(f"{live_server.url}/media/")
    assert (fetch["status"], fetch["content_type"]) == (200, "video/mp4")
