"""Hot read paths build their JSON without DRF's per-object machinery (``FlatRows``, a direct
``WorkspaceSerializer.to_representation``). The serializers stay the documented schema, so the
output must stay exactly what DRF would produce from them: same keys, order and strings."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.test import override_settings
from django.utils import timezone
from rest_framework import serializers
from rest_framework.renderers import JSONRenderer
from rest_framework.test import APIClient, APIRequestFactory

from config import limits
from config.api import throttling
from config.api.schema import FlatRows, datetime_representation
from workspaces import selectors
from workspaces.access import Actor
from workspaces.api import serializers as s
from workspaces.models import AccessAuditEvent, User, Workspace

pytestmark = pytest.mark.django_db


def as_json(data: Any) -> bytes:
    return JSONRenderer().render(data)


def seed_varied_events(workspace: Any) -> None:
    base = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
    # Microseconds: none, one, trailing zeros (PostgreSQL trims them in text), the maximum.
    for number, micros in enumerate((0, 1, 120000, 999999, 10)):
        AccessAuditEvent.objects.create(
            workspace_id=workspace.pk,
            action=AccessAuditEvent.Action.MEMBER_ROLE_CHANGED,
            actor_user_id="" if number % 2 else "actor-1",
            invitation_id=f"inv-{number}" if number % 3 == 0 else "",
            previous_role="editor",
            role="admin",
            status="active",
            subject_email=f"ünïcode{number}@example.com",
            subject_user_id=str(number),
            created_at=base - timedelta(days=number, microseconds=micros),
        )


@pytest.mark.parametrize("public_url", ["", "https://herald.example"])
@pytest.mark.parametrize("zone", ["UTC", "Europe/Berlin"])
def test_access_audit_rows_are_the_serializers_json(
    workspace: Any, user: User, public_url: str, zone: str
) -> None:
    seed_varied_events(workspace)
    request = APIRequestFactory().get("/api/v1/anything", HTTP_HOST="testserver")
    events = AccessAuditEvent.objects.filter(workspace_id=workspace.pk).order_by(
        "-created_at", "-id"
    )
    flat = s.ACCESS_AUDIT_ROWS
    with override_settings(HERALD_PUBLIC_URL=public_url), timezone.override(zone):
        expected = s.AccessAuditEventSerializer(
            list(events), many=True, context={"request": request}
        ).data
        fast = flat.represent(flat.values(events), request)
    assert len(fast) == 6  # the five above and the creator's membership
    assert as_json(fast) == as_json(expected)


def test_access_audit_endpoint_answers_the_serializers_json(
    owner_client: APIClient, workspace: Any, user: User
) -> None:
    seed_varied_events(workspace)
    response = owner_client.get(f"/api/v1/workspaces/{workspace.pk}/access-audit?limit=200")
    assert response.status_code == 200
    events = selectors.access_audit_list(
        actor=Actor(user=user), workspace_id=workspace.pk, limit=200
    )
    expected = s.AccessAuditEventSerializer(
        events, many=True, context={"request": response.wsgi_request}
    ).data
    assert response.content == as_json(expected)


@pytest.mark.postgres
def test_flat_rows_select_uuids_and_utc_date_times_as_text_on_postgresql(workspace: Any) -> None:
    events = AccessAuditEvent.objects.filter(workspace_id=workspace.pk)
    event = events.get()
    names = s.ACCESS_AUDIT_ROWS.names
    with timezone.override("UTC"):
        row = s.ACCESS_AUDIT_ROWS.values(events)[0]
        assert row[names.index("created_at")] == event.created_at.isoformat().replace("+00:00", "Z")
    assert row[names.index("id")] == str(event.pk)
    with timezone.override("Europe/Berlin"):  # another zone: read as a date-time, converted
        row = s.ACCESS_AUDIT_ROWS.values(events)[0]
        assert row[names.index("created_at")] == event.created_at
    # Other queries still load typed values.
    created_at, event_id = events.values_list("created_at", "id").get()
    assert isinstance(created_at, datetime)
    assert str(event_id) == row[names.index("id")]


def test_flat_rows_refuse_nested_sources() -> None:
    with pytest.raises(TypeError, match="not a flat field"):
        FlatRows(s.MemberSerializer, AccessAuditEvent)


@pytest.mark.parametrize("annotated", [True, False])
@pytest.mark.parametrize("zone", ["UTC", "America/New_York"])
def test_workspace_representation_is_drfs(
    workspace: Any, user: User, zone: str, annotated: bool
) -> None:
    if annotated:  # as the API reads workspaces
        workspace_row = selectors.workspace_list_for_actor(actor=Actor(user=user)).get(
            pk=workspace.pk
        )
    else:  # a plain instance: the plan is read through the relation
        workspace_row = Workspace.objects.get(pk=workspace.pk)
        workspace_row.member_count = 1
    request = APIRequestFactory().get("/api/v1/workspaces")
    context = {"request": request, "roles": {str(workspace.pk): "admin"}}
    with timezone.override(zone):
        direct = s.WorkspaceSerializer(workspace_row, context=context).data
        generic_serializer = s.WorkspaceSerializer(context=context)
        generic = serializers.Serializer.to_representation(generic_serializer, workspace_row)
    assert as_json(direct) == as_json(generic)
    assert direct["role"] == "admin"
    assert direct["member_count"] == 1


# --- The API rate limit ---------------------------------------------------------------------


@pytest.mark.skipif(
    throttling.redis_client(throttling.caches["default"]) is not None,
    reason="the in-process fallback; Redis counts the window with its own clock",
)
def test_window_counter_resets_after_its_period(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1_000_000.0]
    monkeypatch.setattr(limits.time, "time", lambda: now[0])
    assert throttling.window_hit("throttle:test:a", 60) == (1, 60)
    now[0] += 59
    count, remaining = throttling.window_hit("throttle:test:a", 60)
    assert (count, remaining) == (2, 1)
    now[0] += 1
    assert throttling.window_hit("throttle:test:a", 60) == (1, 60)


def test_window_counter_counts_per_key() -> None:
    assert throttling.window_hit("throttle:test:b", 60)[0] == 1
    assert throttling.window_hit("throttle:test:b", 60)[0] == 2
    count, remaining = throttling.window_hit("throttle:test:c", 60)
    assert count == 1
    assert 0 < remaining <= 60


# Every fraction length: none (whole seconds), trailing zeros, one digit, six; early years.
FRACTIONS = (0, 100000, 120000, 123000, 123400, 123450, 123456, 1, 10, 999999)
MOMENTS = [datetime(2026, 3, 1, 12, 0, 5, micros, tzinfo=UTC) for micros in FRACTIONS] + [
    datetime(1, 1, 1, tzinfo=UTC),
    datetime(999, 12, 31, 23, 59, 59, 5, tzinfo=UTC),
    datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
]


@pytest.mark.postgres
@pytest.mark.parametrize("zone", ["UTC", "Europe/Berlin"])
def test_postgresql_writes_utc_date_times_exactly_as_drf_shows_them(
    workspace: Any, zone: str
) -> None:
    """``UtcIsoText``: PostgreSQL's ``to_char`` gives DRF's ISO 8601 text of every date-time
    (the session's zone does not matter: the text is of the instant in UTC)."""
    from django.db import connection

    from config.api.schema import UtcIsoText

    events = AccessAuditEvent.objects.bulk_create(
        AccessAuditEvent(workspace_id=workspace.pk, action="member.added", created_at=moment)
        for moment in MOMENTS
    )
    field = s.AccessAuditEventSerializer().fields["created_at"]
    with connection.cursor() as cursor:
        cursor.execute(f"SET TIME ZONE '{zone}'")
    try:
        texts = dict(
            AccessAuditEvent.objects.filter(pk__in=[e.pk for e in events]).values_list(
                "pk", UtcIsoText("created_at")
            )
        )
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SET TIME ZONE 'UTC'")
    with timezone.override("UTC"):
        assert texts == {e.pk: field.to_representation(e.created_at) for e in events}


@pytest.mark.parametrize("micros", FRACTIONS)
def test_the_utc_fast_path_shows_date_times_as_drf(micros: int) -> None:
    value = datetime(2026, 3, 1, 12, 0, 5, micros, tzinfo=UTC)
    field = s.AccessAuditEventSerializer().fields["created_at"]
    with timezone.override("UTC"):
        assert datetime_representation(field)(value) == field.to_representation(value)
