"""The generic ``webhook`` provider end to end: connect through the API (local checks are 422s at
the field, the secret is stored encrypted and never shown), publish through the delivery path
to a real receiver on 127.0.0.1 that verifies every signature as the docs say, and the outcome of
429, 500, 400 and a timeout after sending."""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
from datetime import timedelta
from typing import Any

import pytest
import time_machine
from django.db import connection
from django.utils import timezone
from rest_framework.test import APIClient

from providers import credentials
from publishing.models import Account, Destination, Media, Publication, PublicationEvent
from publishing.services import delivery, media_links
from tests.problem_asserts import assert_invalid
from tests.providers.webhook.standin import PATH_TOKEN, SECRET, WebhookReceiverStandIn
from tests.publishing_support import API, create_publication, ok, upload

pytestmark = pytest.mark.django_db

PUBLIC_URL = "https://herald.example.com"


def connect_webhook(client: APIClient, workspace: Any, fields: dict[str, str]) -> Any:
    return client.post(
        f"{API}/accounts/connect",
        {
            "workspace_id": str(workspace.pk),
            "provider": "webhook",
            "fields": fields,
        },
        format="json",
    )


def connected(
    client: APIClient, workspace: Any, webhook_receiver: WebhookReceiverStandIn
) -> dict[str, Any]:
    account: dict[str, Any] = ok(
        connect_webhook(client, workspace, webhook_receiver.fixtures()), 201
    )["account"]
    return account


def publish_now(
    client: APIClient,
    workspace: Any,
    account_id: str,
    delivery_queue: Any,
    capture: Any,
    **extra: Any,
) -> Publication:
    body = create_publication(client, workspace, [account_id], **extra)
    with capture(execute=True):
        ok(
            client.post(
                f"{API}/publications/{body['id']}/publish-now",
                {"expected_revision": 1},
                format="json",
            ),
            202,
        )
    return Publication.objects.get(pk=body["id"])


def send(destination: Destination, capture: Any) -> Destination:
    with capture(execute=True):
        delivery.delivery_send(destination_id=destination.pk)
    destination.refresh_from_db()
    return destination


def no_secret_in(text: str) -> None:
    assert SECRET not in text
    assert PATH_TOKEN not in text


# --- Connect ----------------------------------------------------------------------------------


def test_connect_stores_the_secret_encrypted_and_never_shows_it(
    owner_client: APIClient, workspace: Any, webhook_receiver: WebhookReceiverStandIn
) -> None:
    response = connect_webhook(owner_client, workspace, webhook_receiver.fixtures())
    account = ok(response, 201)["account"]
    assert webhook_receiver.requests == 0  # connect calls nothing
    assert account["provider"] == "webhook"
    assert account["username"] == f"127.0.0.1:{webhook_receiver.port}"
    no_secret_in(response.content.decode())
    for path in (
        f"/accounts/{account['id']}",
        f"/accounts?workspace_id={workspace.pk}",
        f"/account-providers?workspace_id={workspace.pk}",
    ):
        no_secret_in(ok(owner_client.get(f"{API}{path}")).__repr__())
    # At rest: only ciphertext. Every column of every account row, read with SQL, lacks both.
    row = Account.objects.get(pk=account["id"])
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT * FROM {Account._meta.db_table}")  # noqa: S608
        stored = repr(cursor.fetchall())
    assert row.credentials_encrypted in stored
    no_secret_in(stored)
    assert credentials.decrypt(row.credentials_encrypted) == {
        "url": webhook_receiver.webhook_url(),
        "secret": SECRET,
    }
    # The catalogue describes the provider like the others: fields, no scopes.
    catalogue = ok(
        owner_client.get(f"{API}/account-providers", {"workspace_id": str(workspace.pk)})
    )
    entry = next(p for p in catalogue["providers"] if p["provider"] == "webhook")
    assert entry["capabilities"]["credential_fields"] == ["url", "secret"]
    assert entry["capabilities"]["required_scopes"] == []
    # Readiness admits it like the other built-in providers; it has no public claim.
    assert (entry["readiness"]["connectable"], entry["readiness"]["advertisable"]) == (True, False)
    assert entry["readiness"]["profiles"][0]["immediate"]["publishable"] is True


def test_connecting_the_same_url_again_rotates_the_secret(
    owner_client: APIClient, workspace: Any, webhook_receiver: WebhookReceiverStandIn
) -> None:
    first = connected(owner_client, workspace, webhook_receiver)
    rotated = "a-brand-new-secret-0123456789"
    second = ok(
        connect_webhook(
            owner_client, workspace, {"url": webhook_receiver.webhook_url(), "secret": rotated}
        ),
        201,
    )
    assert second["account"]["id"] == first["id"]
    stored = credentials.decrypt(Account.objects.get(pk=first["id"]).credentials_encrypted)
    assert stored["secret"] == rotated


@pytest.mark.parametrize(
    ("fields", "locations"),
    [
        ({}, ["body.fields.url", "body.fields.secret"]),
        ({"url": "http://127.0.0.1:9/hook"}, ["body.fields.secret"]),
        (
            {"url": "http://127.0.0.1:9/hook", "secret": "too-short-secret"[:15]},
            ["body.fields.secret"],
        ),
        ({"url": "ftp://127.0.0.1/hook", "secret": SECRET}, ["body.fields.url"]),
        ({"url": "http://[::1/hook", "secret": SECRET}, ["body.fields.url"]),
    ],
)
def test_bad_fields_are_422_at_the_field(
    fields: dict[str, str],
    locations: list[str],
    owner_client: APIClient,
    workspace: Any,
    provider_settings: Any,
) -> None:
    response = connect_webhook(owner_client, workspace, fields)
    body = assert_invalid(response, *locations)
    assert all("value" not in error for error in body["errors"])
    no_secret_in(response.content.decode())
    assert not Account.objects.exists()


@pytest.mark.parametrize(
    "url",
    [
        "http://93.184.215.14/hook",  # not https
        "https://127.0.0.1/hook",
        "https://10.0.0.7/hook",
        "https://localhost/hook",
        "https://169.254.169.254/latest/meta-data",
        "https://[64:ff9b::a9fe:a9fe]/latest/meta-data",  # NAT64
        "https://[2002:a9fe:a9fe::1]/hook",  # 6to4
        "https://[::ffff:0:a9fe:a9fe]/hook",  # SIIT
        "https://[::a9fe:a9fe]/hook",  # IPv4-compatible
        "https://[fec0::1]/hook",  # site-local
    ],
)
def test_private_or_plain_http_urls_are_422_in_production(
    url: str, owner_client: APIClient, workspace: Any, provider_settings: Any
) -> None:
    provider_settings.HERALD_ALLOW_PRIVATE_PROVIDER_URLS = False
    assert_invalid(
        connect_webhook(owner_client, workspace, {"url": url, "secret": SECRET}), "body.fields.url"
    )


# --- Delivery ---------------------------------------------------------------------------------


def test_publish_posts_signed_json_with_absolute_media_urls(
    owner_client: APIClient,
    workspace: Any,
    webhook_receiver: WebhookReceiverStandIn,
    media_storage: Any,
    delivery_queue: Any,
    django_capture_on_commit_callbacks: Any,
    settings: Any,
    caplog: Any,
) -> None:
    caplog.set_level(logging.DEBUG)
    settings.HERALD_PUBLIC_URL = PUBLIC_URL
    account = connected(owner_client, workspace, webhook_receiver)
    media = upload(owner_client, workspace, name="pixel.png", alt_text="A red pixel")
    publication = publish_now(
        owner_client,
        workspace,
        account["id"],
        delivery_queue,
        django_capture_on_commit_callbacks,
        text="Hello, receiver",
        media_ids=[media["id"]],
    )
    with django_capture_on_commit_callbacks(execute=True):
        delivery_queue.run()
    destination = Destination.objects.get(publication=publication)
    assert destination.status == "published"
    assert destination.external_id == "rcv-1"  # the receiver's {"id": ...}
    assert webhook_receiver.posts_accepted == 1
    assert webhook_receiver.rejected_signatures == 0
    raw = webhook_receiver.raw_bodies[0]
    headers = {k.lower(): v for k, v in webhook_receiver.headers_seen[0].items()}
    assert headers["x-herald-delivery"] == destination.idempotency_key
    assert (
        headers["x-herald-signature"]
        == "sha256=" + hmac.new(SECRET.encode(), raw, hashlib.sha256).hexdigest()
    )
    stored = Media.objects.get(pk=media["id"])
    body = json.loads(raw)
    assert body == {
        "id": destination.idempotency_key,
        "publication_id": str(publication.pk),
        "text": "Hello, receiver",
        "media": [
            {
                "url": body["media"][0]["url"],  # signed, expiring: checked below
                "mime_type": "image/png",
                "name": stored.name,
                "size_bytes": stored.size_bytes,
                "alt_text": "A red pixel",
            }
        ],
        "scheduled_at": None,
        "created_at": publication.created_at.isoformat().replace("+00:00", "Z"),
    }
    assert body["media"][0]["url"].startswith(f"{PUBLIC_URL}/media/")
    # The signed public URL of this very item (publishing.services.media_links).
    token, file_name = body["media"][0]["url"].removeprefix(f"{PUBLIC_URL}/media/").split("/")
    assert media_links.media_link_resolve(token).media.pk == stored.pk
    assert file_name == stored.file.name.rsplit("/", 1)[-1]
    # Nothing shown or logged carries the secret or the URL's token.
    no_secret_in(ok(owner_client.get(f"{API}/publications/{publication.pk}")).__repr__())
    no_secret_in(ok(owner_client.get(f"{API}/publications/{publication.pk}/events")).__repr__())
    for record in caplog.records:
        no_secret_in(record.getMessage() + repr(record.__dict__))


def test_scheduled_publication_carries_scheduled_at(
    owner_client: APIClient,
    workspace: Any,
    webhook_receiver: WebhookReceiverStandIn,
    delivery_queue: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    account = connected(owner_client, workspace, webhook_receiver)
    body = create_publication(owner_client, workspace, [account["id"]], text="Later")
    due = (timezone.now() + timedelta(minutes=10)).replace(microsecond=0)
    ok(
        owner_client.post(
            f"{API}/publications/{body['id']}/schedule",
            {"scheduled_at": due.isoformat(), "expected_revision": 1},
            format="json",
        )
    )
    with time_machine.travel(due + timedelta(seconds=1)):
        assert delivery.delivery_dispatch()["due"] == 1
        with django_capture_on_commit_callbacks(execute=True):
            delivery_queue.run()
    sent = json.loads(webhook_receiver.raw_bodies[0])
    assert sent["scheduled_at"] == due.astimezone(
        timezone.get_fixed_timezone(0)
    ).isoformat().replace("+00:00", "Z")
    assert Destination.objects.get(publication_id=body["id"]).status == "published"


def test_media_without_a_public_origin_fail_before_sending(
    owner_client: APIClient,
    workspace: Any,
    webhook_receiver: WebhookReceiverStandIn,
    media_storage: Any,
    delivery_queue: Any,
    django_capture_on_commit_callbacks: Any,
    settings: Any,
) -> None:
    settings.HERALD_PUBLIC_URL = ""
    account = connected(owner_client, workspace, webhook_receiver)
    media = upload(owner_client, workspace)
    publication = publish_now(
        owner_client,
        workspace,
        account["id"],
        delivery_queue,
        django_capture_on_commit_callbacks,
        media_ids=[media["id"]],
    )
    with django_capture_on_commit_callbacks(execute=True):
        delivery_queue.run()
    destination = Destination.objects.get(publication=publication)
    assert (destination.status, destination.error_kind) == ("failed", "permanent")
    assert "HERALD_PUBLIC_URL" in destination.error_message
    assert webhook_receiver.requests == 0


def test_429_waits_for_retry_after(
    owner_client: APIClient,
    workspace: Any,
    webhook_receiver: WebhookReceiverStandIn,
    delivery_queue: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    account = connected(owner_client, workspace, webhook_receiver)
    publication = publish_now(
        owner_client, workspace, account["id"], delivery_queue, django_capture_on_commit_callbacks
    )
    destination = Destination.objects.get(publication=publication)
    webhook_receiver.set_faults(rate_limit={"count": 1, "retry_after": 120})
    start = timezone.now()
    with time_machine.travel(start, tick=False) as clock:
        destination = send(destination, django_capture_on_commit_callbacks)
        assert (destination.status, destination.error_kind) == ("retry_wait", "rate_limited")
        assert (
            start + timedelta(seconds=120)
            <= destination.next_attempt_at
            <= start + timedelta(seconds=121)
        )
        clock.move_to(destination.next_attempt_at + timedelta(seconds=1))
        destination = send(destination, django_capture_on_commit_callbacks)
    assert destination.status == "published"
    assert webhook_receiver.posts_accepted == 1
    # The retry carried the same delivery key.
    assert json.loads(webhook_receiver.raw_bodies[0])["id"] == destination.idempotency_key


def test_500_is_retried(
    owner_client: APIClient,
    workspace: Any,
    webhook_receiver: WebhookReceiverStandIn,
    delivery_queue: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    account = connected(owner_client, workspace, webhook_receiver)
    publication = publish_now(
        owner_client, workspace, account["id"], delivery_queue, django_capture_on_commit_callbacks
    )
    destination = Destination.objects.get(publication=publication)
    webhook_receiver.set_faults(server_error={"count": 1, "status": 500})
    destination = send(destination, django_capture_on_commit_callbacks)
    assert (destination.status, destination.error_kind, destination.action) == (
        "retry_wait",
        "transient",
        "retry",
    )
    assert webhook_receiver.posts_accepted == 0


def test_400_fails_for_good(
    owner_client: APIClient,
    workspace: Any,
    webhook_receiver: WebhookReceiverStandIn,
    delivery_queue: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    account = connected(owner_client, workspace, webhook_receiver)
    publication = publish_now(
        owner_client, workspace, account["id"], delivery_queue, django_capture_on_commit_callbacks
    )
    destination = Destination.objects.get(publication=publication)
    webhook_receiver.set_faults(
        permanent={"count": 1, "status": 400, "message": f"unknown channel ({SECRET})"}
    )
    destination = send(destination, django_capture_on_commit_callbacks)
    assert (destination.status, destination.error_kind, destination.action) == (
        "failed",
        "permanent",
        "edit",
    )
    assert "unknown channel" in destination.error_message
    no_secret_in(destination.error_message)
    publication.refresh_from_db()
    assert publication.status == "failed"


def test_timeout_after_sending_stays_ambiguous_for_a_person(
    owner_client: APIClient,
    workspace: Any,
    webhook_receiver: WebhookReceiverStandIn,
    delivery_queue: Any,
    django_capture_on_commit_callbacks: Any,
    provider_settings: Any,
) -> None:
    provider_settings.HERALD_PROVIDER_TIMEOUT_SECONDS = 1.0
    account = connected(owner_client, workspace, webhook_receiver)
    publication = publish_now(
        owner_client, workspace, account["id"], delivery_queue, django_capture_on_commit_callbacks
    )
    destination = Destination.objects.get(publication=publication)
    webhook_receiver.set_faults(accept_then_timeout={"count": 1, "seconds": 2.5})
    destination = send(destination, django_capture_on_commit_callbacks)
    assert (destination.status, destination.error_kind) == ("ambiguous", "ambiguous")
    assert delivery_queue.reconciles == [str(destination.pk)]
    with django_capture_on_commit_callbacks(execute=True):
        delivery_queue.run()  # reconcile: the receiver cannot be asked
    destination.refresh_from_db()
    assert (destination.status, destination.action) == ("ambiguous", "contact_support")
    assert webhook_receiver.posts_accepted == 1
    assert webhook_receiver.requests == 1
    assert delivery_queue.sends == []
    assert PublicationEvent.objects.filter(
        publication=publication, kind="destination.unconfirmable"
    ).exists()
    publication.refresh_from_db()
    assert publication.status == "failed"  # settled: nothing else is waiting
