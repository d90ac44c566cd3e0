"""The event record: events written in the transaction of the publication and destination
changes that cause them, carrying the resource as the API shows it, and the ordered event list
(GET /api/v1/events) a consumer catches up from with its cursor."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.db import transaction
from django.utils import timezone
from rest_framework.test import APIClient

from events import selectors
from events.errors import UnknownEventType
from events.models import Event
from events.services.record import record_event
from publishing.models import Destination, Publication
from publishing.services import delivery, publications
from tests.providers.discord_webhook.standin import DiscordWebhookStandIn
from tests.providers.mastodon.standin import MastodonStandIn
from tests.publishing_support import API, connect, create_publication, make_account, ok
from workspaces.access import Actor
from workspaces.models import User

pytestmark = pytest.mark.django_db


@pytest.fixture
def actor(user: User) -> Actor:
    return Actor(user=user)


@pytest.fixture
def no_settle(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(selectors, "SETTLE", timedelta(0))


def types(workspace: Any) -> list[str]:
    return list(
        Event.objects.filter(workspace=workspace).order_by("id").values_list("type", flat=True)
    )


def publish_now(actor: Actor, workspace: Any, account_id: str, capture: Any) -> Publication:
    publication = publications.publication_create(
        actor=actor,
        workspace_id=workspace.pk,
        text="Event test",
        destinations=[{"account_id": account_id}],
    )
    with capture(execute=True):
        publications.publication_publish_now(
            actor=actor, publication_id=publication.pk, expected_revision=1
        )
    return publication


def send(publication: Publication, capture: Any) -> Destination:
    destination = Destination.objects.get(publication=publication)
    with capture(execute=True):
        delivery.delivery_send(destination_id=destination.pk)
    destination.refresh_from_db()
    return destination


def test_a_published_destination_records_both_events_with_the_api_representation(
    owner_client: APIClient,
    workspace: Any,
    actor: Actor,
    mastodon: MastodonStandIn,
    delivery_queue: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    account = connect(owner_client, workspace, "mastodon", mastodon)
    publication = publish_now(actor, workspace, account["id"], django_capture_on_commit_callbacks)
    assert types(workspace) == []  # queued is no event
    destination = send(publication, django_capture_on_commit_callbacks)
    assert destination.status == "published"
    assert types(workspace) == ["destination.published", "publication.published"]
    shown = ok(owner_client.get(f"{API}/publications/{publication.pk}"))
    shown.pop("$schema")
    dest_event, pub_event = Event.objects.filter(workspace=workspace).order_by("id")
    assert pub_event.data == shown
    assert dest_event.data == {"publication_id": str(publication.pk), **shown["destinations"][0]}
    assert dest_event.data["external_id"] == mastodon.posts[0]["id"]


def test_retries_then_failure_record_retrying_failed_and_the_publication_failure(
    owner_client: APIClient,
    workspace: Any,
    actor: Actor,
    discord: DiscordWebhookStandIn,
    delivery_queue: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    import time_machine

    account = connect(owner_client, workspace, "discord_webhook", discord)
    publication = publish_now(actor, workspace, account["id"], django_capture_on_commit_callbacks)
    discord.set_faults(server_error={"count": 5, "status": 503})
    now = timezone.now()
    with time_machine.travel(now, tick=False) as clock:
        for _ in range(3):
            destination = send(publication, django_capture_on_commit_callbacks)
            if destination.next_attempt_at:
                clock.move_to(destination.next_attempt_at + timedelta(seconds=1))
    assert destination.status == "failed"
    assert types(workspace) == [
        "destination.retrying",
        "destination.retrying",
        "destination.failed",
        "publication.failed",
    ]
    failed = Event.objects.get(workspace=workspace, type="destination.failed")
    assert failed.data["status"] == "failed"
    assert failed.data["action"] == "retry"
    assert failed.data["error_kind"] == "transient"


def test_schedule_and_cancel_are_events(owner_client: APIClient, workspace: Any) -> None:
    hook = make_account(workspace, "discord_webhook")
    body = create_publication(owner_client, workspace, [str(hook.pk)])
    when = timezone.now() + timedelta(hours=2)
    url = f"{API}/publications/{body['id']}"
    ok(owner_client.post(f"{url}/schedule", {"scheduled_at": when.isoformat()}, format="json"))
    ok(owner_client.post(f"{url}/cancel", {}, format="json"))
    assert types(workspace) == ["publication.scheduled", "publication.canceled"]
    scheduled = Event.objects.get(workspace=workspace, type="publication.scheduled")
    assert scheduled.data["status"] == "scheduled"
    assert scheduled.data["destinations"][0]["status"] == "scheduled"


def failing_change(workspace: Any) -> None:
    with transaction.atomic():
        record_event(workspace_id=workspace.pk, type="publication.failed", data={"id": "x"})
        raise RuntimeError("the state change failed")


def test_an_event_rolls_back_with_its_change(workspace: Any) -> None:
    with pytest.raises(RuntimeError):
        failing_change(workspace)
    assert not Event.objects.exists()
    with pytest.raises(UnknownEventType):
        record_event(workspace_id=workspace.pk, type="publication.exploded", data={})


def test_the_list_pages_in_order_and_catches_up_from_a_cursor(
    owner_client: APIClient, workspace: Any, no_settle: None
) -> None:
    for n in range(5):
        record_event(workspace_id=workspace.pk, type="publication.failed", data={"n": n})
    first = ok(owner_client.get(f"{API}/events", {"workspace_id": str(workspace.pk), "limit": 3}))
    assert [e["data"]["n"] for e in first["items"]] == [0, 1, 2]
    assert first["has_more"] is True
    assert first["items"][0]["type"] == "publication.failed"
    assert first["items"][0]["workspace_id"] == str(workspace.pk)
    rest = ok(
        owner_client.get(
            f"{API}/events", {"workspace_id": str(workspace.pk), "after": first["next_cursor"]}
        )
    )
    assert [e["data"]["n"] for e in rest["items"]] == [3, 4]
    assert rest["has_more"] is False
    # Caught up: an empty page keeps the position, and a later event follows it.
    empty = ok(
        owner_client.get(
            f"{API}/events", {"workspace_id": str(workspace.pk), "after": rest["next_cursor"]}
        )
    )
    assert empty["items"] == []
    record_event(workspace_id=workspace.pk, type="publication.published", data={"n": 5})
    later = ok(
        owner_client.get(
            f"{API}/events", {"workspace_id": str(workspace.pk), "after": empty["next_cursor"]}
        )
    )
    assert [e["data"]["n"] for e in later["items"]] == [5]


def test_fresh_events_wait_for_the_settle_window(owner_client: APIClient, workspace: Any) -> None:
    record_event(workspace_id=workspace.pk, type="publication.failed", data={})
    page = ok(owner_client.get(f"{API}/events", {"workspace_id": str(workspace.pk)}))
    assert page["items"] == []
    Event.objects.update(occurred_at=timezone.now() - timedelta(seconds=3))
    page = ok(owner_client.get(f"{API}/events", {"workspace_id": str(workspace.pk)}))
    assert len(page["items"]) == 1


def test_cursors_and_access_are_checked(
    owner_client: APIClient,
    workspace: Any,
    make_user: Callable[..., User],
    bearer_client: Callable[..., APIClient],
    no_settle: None,
) -> None:
    from workspaces.services import organization_create, workspace_create

    outsider = make_user("outsider@example.com")
    theirs_org = organization_create(actor=Actor(user=outsider), name="Other")
    theirs = workspace_create(actor=Actor(user=outsider), organization_id=theirs_org.pk, name="O")
    record_event(workspace_id=theirs.pk, type="publication.failed", data={})
    other_page = ok(bearer_client(outsider).get(f"{API}/events", {"workspace_id": str(theirs.pk)}))
    assert len(other_page["items"]) == 1
    # Another workspace's cursor is not a cursor of this list.
    response = owner_client.get(
        f"{API}/events", {"workspace_id": str(workspace.pk), "after": other_page["next_cursor"]}
    )
    assert response.status_code == 422
    assert response["Content-Type"] == "application/problem+json"
    assert owner_client.get(f"{API}/events", {"workspace_id": str(theirs.pk)}).status_code == 403
    assert owner_client.get(f"{API}/events").status_code == 422


def test_every_event_type_is_in_the_openapi_document(api_client: APIClient) -> None:
    from events.types import EVENT_TYPES

    document = api_client.get("/docs/openapi.json").json()
    hooks = document["x-webhooks"]
    assert set(hooks) == set(EVENT_TYPES)
    body = hooks["publication.failed"]["post"]["requestBody"]["content"]["application/json"]
    assert body["schema"]["properties"]["data"] == {"$ref": "#/components/schemas/Publication"}
    destination = hooks["destination.held"]["post"]["requestBody"]["content"]["application/json"]
    assert destination["schema"]["properties"]["data"]["allOf"][0] == {
        "$ref": "#/components/schemas/Destination"
    }
    assert "/api/v1/events" in document["paths"]


def test_events_go_with_their_workspace(workspace: Any, user: User, organization: Any) -> None:
    from workspaces.services import workspace_create
    from workspaces.services.deletion import workspace_delete

    second = workspace_create(actor=Actor(user=user), organization_id=organization.pk, name="B")
    record_event(workspace_id=second.pk, type="publication.failed", data={"id": "gone"})
    record_event(workspace_id=workspace.pk, type="publication.failed", data={"id": "kept"})
    workspace_delete(
        actor=Actor(user=user),
        workspace_id=second.pk,
        confirm_name=second.name,
        password_confirmed=True,
        authenticated_at=None,
    )
    assert [e.data["id"] for e in Event.objects.all()] == ["kept"]
