"""GET /workspaces/{id}/access-audit: active admins only, limit 1 to 200, newest first."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from tests.problem_asserts import assert_invalid, assert_problem
from workspaces.models import AccessAuditEvent, User, WorkspaceMembership

pytestmark = pytest.mark.django_db

SPEC_FIELDS = {
    "id",
    "workspace_id",
    "action",
    "actor_user_id",
    "created_at",
    "invitation_id",
    "previous_role",
    "previous_status",
    "role",
    "status",
    "subject_email",
    "subject_user_id",
}


def audit_url(workspace: Any, query: str = "") -> str:
    return f"/api/v1/workspaces/{workspace.pk}/access-audit{query}"


def seed_events(workspace: Any, count: int) -> list[AccessAuditEvent]:
    """``count`` events one second apart; element 0 is the oldest."""
    start = timezone.now() - timedelta(days=1)
    events = [
        AccessAuditEvent(
            workspace_id=workspace.pk,
            action=AccessAuditEvent.Action.MEMBER_ROLE_CHANGED,
            subject_email=f"seed{i}@example.com",
            created_at=start + timedelta(seconds=i),
        )
        for i in range(count)
    ]
    AccessAuditEvent.objects.bulk_create(events)
    return events


@pytest.mark.parametrize("limit", ["0", "201", "-1", "abc", "1.5", "1e2"])
def test_limit_out_of_bounds_is_422_at_query_limit(
    owner_client: APIClient, workspace: Any, limit: str
) -> None:
    assert_invalid(owner_client.get(audit_url(workspace, f"?limit={limit}")), "query.limit")


def test_default_limit_is_50(owner_client: APIClient, workspace: Any) -> None:
    seed_events(workspace, 60)
    response = owner_client.get(audit_url(workspace))
    assert response.status_code == 200
    assert len(response.json()) == 50


def test_limit_200_is_the_maximum(owner_client: APIClient, workspace: Any) -> None:
    seed_events(workspace, 205)
    assert len(owner_client.get(audit_url(workspace, "?limit=200")).json()) == 200
    assert len(owner_client.get(audit_url(workspace, "?limit=1")).json()) == 1


def test_events_are_newest_first(owner_client: APIClient, workspace: Any) -> None:
    creation = AccessAuditEvent.objects.get(workspace_id=workspace.pk)  # written "now"
    seeds = seed_events(workspace, 5)  # a day ago, one second apart
    expected = [str(creation.pk)] + [str(e.pk) for e in reversed(seeds)]
    items = owner_client.get(audit_url(workspace)).json()
    assert [item["id"] for item in items] == expected
    assert [i["id"] for i in owner_client.get(audit_url(workspace, "?limit=3")).json()] == expected[
        :3
    ]


def test_event_fields_match_the_spec(owner_client: APIClient, workspace: Any, user: User) -> None:
    items = owner_client.get(audit_url(workspace)).json()
    assert items, "creating a workspace records its first admin"
    for item in items:
        assert set(item) >= SPEC_FIELDS
        assert set(item) - SPEC_FIELDS <= {"$schema"}
        assert all(isinstance(item[name], str) for name in SPEC_FIELDS)
        assert item["workspace_id"] == str(workspace.pk)


def test_only_this_workspaces_events_are_listed(
    owner_client: APIClient, workspace: Any, user: User, organization: Any
) -> None:
    from workspaces.access import Actor
    from workspaces.services import workspace_create

    other = workspace_create(actor=Actor(user=user), organization_id=organization.pk, name="B")
    seed_events(other, 3)
    items = owner_client.get(audit_url(workspace)).json()
    assert {item["workspace_id"] for item in items} == {str(workspace.pk)}


@pytest.mark.parametrize("role", ["editor", "viewer"])
def test_non_admin_member_is_refused(
    bearer_client: Callable[..., APIClient],
    make_user: Callable[..., User],
    workspace: Any,
    role: str,
) -> None:
    member = make_user()
    WorkspaceMembership.objects.create(workspace=workspace, user=member, role=role)
    response = bearer_client(member).get(audit_url(workspace))
    assert_problem(response, 403, "role_too_low")


def test_inactive_admin_is_refused(
    bearer_client: Callable[..., APIClient], make_user: Callable[..., User], workspace: Any
) -> None:
    admin = make_user()
    WorkspaceMembership.objects.create(
        workspace=workspace, user=admin, role="admin", status="inactive"
    )
    assert_problem(bearer_client(admin).get(audit_url(workspace)), 403, "no_workspace_access")


def test_unknown_workspace_is_404(owner_client: APIClient, workspace: Any) -> None:
    response = owner_client.get(
        "/api/v1/workspaces/00000000-0000-4000-8000-000000000001/access-audit"
    )
    assert_problem(response, 404, "not_found")


def test_session_admin_can_read_the_audit(session_client: APIClient, workspace: Any) -> None:
    assert session_client.get(audit_url(workspace)).status_code == 200
