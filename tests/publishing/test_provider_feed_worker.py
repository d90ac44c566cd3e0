"""The built-in Herald feed through a REAL Celery worker: publish now goes
through the outbox and the broker, a separate worker process runs the feed adapter (which
writes the entry to the database), and the public Atom and JSON Feed documents show it.

Runs on whatever the suite runs on: SQLite + the filesystem broker by default, PostgreSQL +
Redis when ``DATABASE_URL``/``REDIS_URL`` are set (see ``tests/publishing/test_delivery_worker.py``).
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client

from publishing.models import Destination, FeedEntry, Publication
from publishing.services.accounts import account_connect
from publishing.services.publications import publication_create, publication_publish_now
from tests.worker_harness import DeliveryStack, running_stack
from workspaces.access import Actor

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True), pytest.mark.timeout(240)]

ATOM = "{http://www.w3.org/2005/Atom}"
REDIRECT_URI = "http://testserver/api/v1/accounts/oauth/callback"


@pytest.fixture
def stack(
    worker_database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[DeliveryStack]:
    data_dir = tmp_path_factory.mktemp("herald-feed-worker")
    with running_stack(worker_database_url, data_dir) as stack:
        yield stack


def test_a_worker_publishes_to_the_feed(stack: DeliveryStack, user: Any, workspace: Any) -> None:
    actor = Actor(user=user)
    account, _ = account_connect(
        actor=actor,
        workspace_id=workspace.pk,
        provider="feed",
        redirect_uri=REDIRECT_URI,
        fields={"title": "Worker feed"},
    )
    assert account is not None
    publication = publication_create(
        actor=actor,
        workspace_id=workspace.pk,
        text="Shipped <b>today</b> & more",
        destinations=[{"account_id": str(account.pk)}],
    )
    publication_publish_now(actor=actor, publication_id=publication.pk, expected_revision=None)

    def settled() -> Publication | None:
        fresh = Publication.objects.get(pk=publication.pk)
        return fresh if fresh.status in ("published", "partially_published", "failed") else None

    assert (
        stack.wait_until(settled, timeout=90, what="the feed publication to settle").status
        == "published"
    )
    destination = Destination.objects.get(publication=publication)
    entry = FeedEntry.objects.get(account=account)
    assert destination.external_id == str(entry.pk)
    assert entry.idempotency_key == destination.idempotency_key
    assert (
        destination.external_url
        == f"http://testserver/feeds/{account.external_id}/entries/{entry.pk}"
    )

    client = Client()
    response = client.get(f"/feeds/{account.external_id}.atom")
    assert response.status_code == 200
    root = ET.fromstring(response.content)  # noqa: S314  (Herald's own output, in a test)
    (item,) = root.findall(f"{ATOM}entry")
    assert item.findtext(f"{ATOM}content") == "Shipped <b>today</b> & more"
    document = json.loads(client.get(f"/feeds/{account.external_id}.json").content)
    assert [i["id"] for i in document["items"]] == [str(entry.pk)]
    assert document["items"][0]["url"] == destination.external_url
