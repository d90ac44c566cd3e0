"""Instagram end to end through a REAL Celery worker and beat (PostgreSQL + Redis when
``DATABASE_URL``/``REDIS_URL`` are set, as the other worker tests): an account connected through
Instagram Login (Herald's connect, then the stand-in's window) and one connected through
Facebook Login (its Page token); an image post with a first comment, a Reel with its cover and a
story, each published once through the container flow while no worker waits; a spent publishing
limit that makes the send wait (``destination.waiting``, reason ``publishing_limit``) and
publish once a slot frees; a timeout after ``media_publish`` that is ``ambiguous`` and
reconciled without a second post. Instagram fetches every file from Herald's signed URLs,
served by the live server."""

from __future__ import annotations

import io
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from rest_framework.test import APIClient

from providers import credentials
from publishing.models import Account, Destination, PublicationEvent
from publishing.services.publications import publication_create, publication_publish_now
from tests.providers.instagram.standin import DAY, IG_USER, InstagramStandIn
from tests.providers.meta.standin import APP_ID, APP_SECRET
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


@pytest.fixture(scope="module")
def server() -> Iterator[InstagramStandIn]:
    with InstagramStandIn() as standin:
        yield standin


def _env(server: InstagramStandIn, public_url: str) -> dict[str, str]:
    from tests.providers.instagram.standin import CLIENT_ID, CLIENT_SECRET

    return {
        "HERALD_PUBLIC_URL": public_url,
        "HERALD_META_APP_ID": APP_ID,
        "HERALD_META_APP_SECRET": APP_SECRET,
        "HERALD_META_API_URL": server.url,
        "HERALD_INSTAGRAM_API_URL": server.url,
        "HERALD_INSTAGRAM_CLIENT_ID": CLIENT_ID,
        "HERALD_INSTAGRAM_CLIENT_SECRET": CLIENT_SECRET,
        "HERALD_INSTAGRAM_AUTHORIZE_URL": f"{server.url}/oauth/authorize",
        "HERALD_INSTAGRAM_TOKEN_URL": f"{server.url}/oauth/access_token",
        "HERALD_INSTAGRAM_LIMIT_CHECK_SECONDS": "2",
    }


@pytest.fixture
def stack(
    worker_database_url: str,
    media_storage: Path,
    settings: Any,
    live_server: Any,
    server: InstagramStandIn,
) -> Iterator[DeliveryStack]:
    server.reset()
    server.container_polls = 1
    settings.HERALD_PUBLIC_URL = str(live_server.url)
    settings.HERALD_DISABLED_PROVIDERS = []
    app = {**server.app_settings(), "limit_check_seconds": "2"}
    settings.PROVIDER_OAUTH_APPS = {**settings.PROVIDER_OAUTH_APPS, "instagram": app}
    env = _env(server, str(live_server.url))
    with running_stack(worker_database_url, media_storage.parent, overrides=env) as stack:
        yield stack


def jpeg(width: int, height: int) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (20, 90, 160)).save(buffer, format="JPEG")
    return buffer.getvalue()


def facebook_login_account(workspace: Any, server: InstagramStandIn) -> Account:
    """What the Facebook Login connect stores for the Page's Instagram account (the same
    Instagram account as the Instagram Login one: the stand-in has one; the API base tells the
    two connections apart)."""
    return Account.objects.create(
        workspace=workspace,
        provider="instagram",
        external_id=IG_USER["user_id"],
        username=IG_USER["username"],
        instance_url=f"{server.url}/facebook-login",
        credentials_encrypted=credentials.encrypt(server.facebook_account()),
    )


def publish(actor: Actor, workspace: Any, destinations: list[dict[str, Any]], **extra: Any) -> Any:
    publication = publication_create(
        actor=actor, workspace_id=workspace.pk, destinations=destinations, **extra
    )
    publication_publish_now(actor=actor, publication_id=publication.pk, expected_revision=None)
    return publication


def kinds(publication: Any) -> list[str]:
    rows = PublicationEvent.objects.filter(publication=publication).order_by("created_at", "id")
    return [e.kind for e in rows]


def test_each_format_the_limit_wait_and_a_reconciled_timeout_through_the_worker(
    stack: DeliveryStack,
    server: InstagramStandIn,
    owner_client: APIClient,
    user: Any,
    workspace: Any,
    live_server: Any,
) -> None:
    actor = Actor(user=user)
    ig_login = connect_with_services(actor, workspace, "instagram", mode="instagram_login")
    assert credentials.decrypt(ig_login.credentials_encrypted)["login"] == "instagram"
    page_account = facebook_login_account(workspace, server)
    image = upload(owner_client, workspace, jpeg(100, 100), name="square.jpg")["id"]
    tall = upload(owner_client, workspace, jpeg(90, 160), name="cover.jpg")["id"]
    clip = str(
        probed_by_worker(
            stack, owner_client, workspace, make_video(seconds=3, rate=24), "reel.mp4"
        ).pk
    )

    # 1. A feed image with a first comment (Facebook Login) and a Reel with its cover
    # (Instagram Login), in one publication.
    first = publish(
        actor,
        workspace,
        [
            {
                "account_id": str(page_account.pk),
                "profile": "instagram.post",
                "media_ids": [image],
                "options": {"first_comment": "Link in bio"},
            },
            {
                "account_id": str(ig_login.pk),
                "profile": "instagram.reel",
                "media_ids": [clip, tall],
                "options": {"share_to_feed": "false"},
            },
        ],
        text="Launch #herald",
    )
    assert settled_by_worker(stack, first, "the post and the Reel").status == "published"
    rows = list(Destination.objects.filter(publication=first).order_by("position"))
    assert [(d.status, d.error_message) for d in rows] == [(S.PUBLISHED, "")] * 2
    by_type = {p["media_type"]: p for p in server.posts}
    assert by_type["REELS"]["fields"]["share_to_feed"] == "false"
    assert by_type["REELS"]["fields"]["cover_url"].startswith(f"{live_server.url}/media/")
    assert by_type["IMAGE"]["id"] == rows[0].external_id
    assert [c["message"] for c in server.comments] == ["Link in bio"]
    assert "destination.processing" in kinds(first)

    # 2. The limit is spent by other tools (freeing in a few seconds): the story waits, then
    # goes out once.
    with server.lock:
        server.published_at = [server.now() - DAY + 6] * server.quota_total
    story = publish(
        actor,
        workspace,
        [{"account_id": str(ig_login.pk), "profile": "instagram.story"}],
        text="",
        media_ids=[tall],
    )
    assert settled_by_worker(stack, story, "the story").status == "published"
    waiting = PublicationEvent.objects.get(publication=story, kind="destination.waiting")
    assert waiting.data["reason"] == "publishing_limit"
    assert server.counters["limit_reads"] >= 2
    assert [p["media_type"] for p in server.posts].count("STORIES") == 1

    # 3. media_publish is accepted but answers after the worker's timeout: ambiguous, then
    # reconciled through the container and the account's media, without a second post.
    server.set_faults(accept_then_timeout={"count": 1, "seconds": 4})
    posted = server.posts_accepted
    started = time.monotonic()
    third = publish(
        actor,
        workspace,
        [{"account_id": str(page_account.pk), "profile": "instagram.post"}],
        text="Once only",
        media_ids=[image],
    )
    assert settled_by_worker(stack, third, "the reconciled post").status == "published"
    assert server.posts_accepted == posted + 1
    (row,) = Destination.objects.filter(publication=third)
    assert row.external_id == server.posts[-1]["id"]
    order = kinds(third)
    assert order.index("destination.ambiguous") < order.index("destination.reconciled")
    assert time.monotonic() - started < 120
