"""Facebook Pages end to end through a REAL Celery worker and beat (PostgreSQL + Redis when
``DATABASE_URL``/``REDIS_URL`` are set, as the other worker tests): Facebook Login through
Herald's connect, the choice of one Page among the candidates; a post of two photos with a first
comment and a video post (Facebook fetches each file from Herald's signed URLs, served by the
live server; the video is a long send while Facebook processes it); a timeout after the post is
``ambiguous`` and reconciled over the Page's recent posts without a second post; Meta's
deauthorize callback then erases the connection."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rest_framework.test import APIClient

from providers import credentials
from providers.meta import GRAPH_VERSION
from publishing.models import Account, ConnectionChoice, Destination, PublicationEvent
from publishing.services.connection_choices import choice_apply
from publishing.services.publications import publication_create, publication_publish_now
from tests.providers.facebook.standin import PAGES, USER, FacebookStandIn
from tests.providers.meta.standin import APP_ID, APP_SECRET, signed_request
from tests.publishing_support import (
    connect_with_services,
    probed_by_worker,
    settled_by_worker,
    upload,
)
from tests.video_support import make_video
from tests.worker_harness import DeliveryStack, running_stack
from workspaces.access import Actor

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True), pytest.mark.timeout(300)]

S = Destination.Status
PAGE = PAGES[0]["id"]


@pytest.fixture(scope="module")
def server() -> Iterator[FacebookStandIn]:
    with FacebookStandIn() as standin:
        yield standin


@pytest.fixture
def stack(
    worker_database_url: str,
    media_storage: Path,
    settings: Any,
    live_server: Any,
    server: FacebookStandIn,
) -> Iterator[DeliveryStack]:
    server.reset()
    server.video_polls = 1
    settings.HERALD_PUBLIC_URL = str(live_server.url)
    settings.HERALD_DISABLED_PROVIDERS = []
    settings.PROVIDER_OAUTH_APPS = {
        **settings.PROVIDER_OAUTH_APPS,
        "facebook": server.app_settings(),
        "instagram": server.app_settings(),
    }
    env = {
        "HERALD_PUBLIC_URL": str(live_server.url),
        "HERALD_META_APP_ID": APP_ID,
        "HERALD_META_APP_SECRET": APP_SECRET,
        "HERALD_META_API_URL": server.url,
        "HERALD_META_AUTHORIZE_URL": f"{server.url}/{GRAPH_VERSION}/dialog/oauth",
        "HERALD_INSTAGRAM_API_URL": server.url,
    }
    with running_stack(worker_database_url, media_storage.parent, overrides=env) as stack:
        yield stack


def publish(actor: Actor, workspace: Any, destinations: list[dict[str, Any]], **extra: Any) -> Any:
    publication = publication_create(
        actor=actor, workspace_id=workspace.pk, destinations=destinations, **extra
    )
    publication_publish_now(actor=actor, publication_id=publication.pk, expected_revision=None)
    return publication


def kinds(publication: Any) -> list[str]:
    rows = PublicationEvent.objects.filter(publication=publication).order_by("created_at", "id")
    return [e.kind for e in rows]


def test_connect_choose_publish_reconcile_and_deauthorize_through_the_worker(
    stack: DeliveryStack,
    server: FacebookStandIn,
    owner_client: APIClient,
    user: Any,
    workspace: Any,
    live_server: Any,
) -> None:
    actor = Actor(user=user)
    choice = connect_with_services(actor, workspace, "facebook")
    assert isinstance(choice, ConnectionChoice)
    (page,) = choice_apply(actor=actor, choice_id=choice.pk, keys=[f"facebook:{PAGE}"])
    assert credentials.decrypt(page.credentials_encrypted)["page_id"] == PAGE
    photos = [upload(owner_client, workspace)["id"] for _ in range(2)]
    clip = str(
        probed_by_worker(stack, owner_client, workspace, make_video(seconds=2), "clip.mp4").pk
    )

    # 1. Two photos in one post with a first comment, and a video post, in one publication.
    first = publish(
        actor,
        workspace,
        [
            {
                "account_id": str(page.pk),
                "media_ids": photos,
                "options": {"first_comment": "Details in the comments"},
            },
        ],
        text="Launch day",
    )
    assert settled_by_worker(stack, first, "the photo post").status == "published"
    (row,) = Destination.objects.filter(publication=first)
    post = server.posts[-1]
    assert (row.status, row.external_id) == (S.PUBLISHED, post["id"])
    assert len(post["photos"]) == 2
    assert all(url.startswith(f"{live_server.url}/media/") for url in server.fetched)
    assert server.objects[post["id"]]["comments"]

    video = publish(
        actor, workspace, [{"account_id": str(page.pk)}], text="Watch", media_ids=[clip]
    )
    assert settled_by_worker(stack, video, "the video post").status == "published"
    (row,) = Destination.objects.filter(publication=video)
    assert row.external_id == f"{PAGE}_{server.posts[-1]['id']}"
    assert "destination.processing" in kinds(video)

    # 2. The post is accepted but answers after the worker's timeout: ambiguous, then found
    # among the Page's recent posts; nothing is posted twice.
    server.set_faults(accept_then_timeout={"count": 1, "seconds": 4})
    posted = server.posts_accepted
    started = time.monotonic()
    third = publish(actor, workspace, [{"account_id": str(page.pk)}], text="Once only")
    assert settled_by_worker(stack, third, "the reconciled post").status == "published"
    assert server.posts_accepted == posted + 1
    (row,) = Destination.objects.filter(publication=third)
    assert row.external_id == server.posts[-1]["id"]
    order = kinds(third)
    assert order.index("destination.ambiguous") < order.index("destination.reconciled")
    assert time.monotonic() - started < 120

    # 3. The person removes the app at Facebook: Meta's callback erases the connection.
    signed = signed_request({"user_id": USER["id"], "issued_at": int(time.time())})
    assert (
        APIClient().post("/api/v1/meta/deauthorize", {"signed_request": signed}).status_code == 204
    )
    page.refresh_from_db()
    assert page.status == Account.Status.RECONNECT_REQUIRED
    assert page.credentials_encrypted == ""
