"""Publishing list endpoints run the same number of queries for 1 row and for 30."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.core.files.base import ContentFile
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from publishing.models import Account, Destination, Media, Publication
from tests.publishing_support import API, make_account

pytestmark = pytest.mark.django_db


def add_rows(kind: str, workspace: Any, count: int) -> None:
    if kind == "accounts":
        for _ in range(count):
            make_account(workspace, "mastodon", external_id=uuid.uuid4().hex)
    elif kind == "media":
        for _ in range(count):
            media = Media(
                workspace=workspace,
                name="a.png",
                mime_type="image/png",
                size_bytes=3,
                checksum_sha256="0",
            )
            media.file.save(f"{media.pk}.png", ContentFile(b"png"), save=False)
            media.save()
    else:
        accounts = list(Account.objects.filter(workspace=workspace).order_by("provider")) or [
            make_account(workspace, provider, external_id=uuid.uuid4().hex)
            for provider in ("discord_webhook", "mastodon", "telegram")
        ]
        for _ in range(count):
            publication = Publication.objects.create(workspace=workspace, text="x")
            Destination.objects.bulk_create(
                [
                    Destination(
                        publication=publication,
                        account=account,
                        position=i,
                        profile=f"{account.provider}.x",
                        idempotency_key=uuid.uuid4().hex,
                    )
                    for i, account in enumerate(accounts)
                ]
            )


def count_queries(client: APIClient, url: str, params: dict[str, Any]) -> tuple[int, int]:
    client.get(url, params)  # warm-up: per-token bookkeeping is not counted
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url, params)
    assert response.status_code == 200, response.content[:300]
    return len(captured), len(response.json()["items"])


@pytest.mark.parametrize("kind", ["publications", "accounts", "media"])
def test_list_queries_do_not_grow_with_the_page(
    kind: str, owner_client: APIClient, workspace: Any, media_storage: Any
) -> None:
    url = f"{API}/{kind}"
    params = {"workspace_id": str(workspace.pk), "limit": 100}
    add_rows(kind, workspace, 1)
    one, items = count_queries(owner_client, url, params)
    assert items == 1
    add_rows(kind, workspace, 29)
    many, items = count_queries(owner_client, url, params)
    assert items == 30
    assert many == one, f"{kind}: {one} queries for 1 row, {many} for 30"
    assert one <= 8


def test_publication_list_filtered_by_account(owner_client: APIClient, workspace: Any) -> None:
    add_rows("publications", workspace, 1)
    account = Account.objects.get(provider="telegram")
    params = {
        "workspace_id": str(workspace.pk),
        "account_id": str(account.pk),
        "status": "draft",
        "limit": 100,
    }
    one, items = count_queries(owner_client, f"{API}/publications", params)
    assert items == 1
    add_rows("publications", workspace, 29)
    many, items = count_queries(owner_client, f"{API}/publications", params)
    assert items == 30
    assert many == one
