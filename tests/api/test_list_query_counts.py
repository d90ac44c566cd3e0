"""List endpoints run a fixed number of queries whatever the page size (no N+1)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from workspaces.models import (
    AccessAuditEvent,
    Invitation,
    Organization,
    OrganizationMembership,
    User,
    Workspace,
    WorkspaceMembership,
)

pytestmark = pytest.mark.django_db

# Authentication, access check, page, and per-page lookups (roles): a handful, never per row.
MAX_QUERIES = 6


def items_of(response: Any) -> list[Any]:
    assert response.status_code == 200, response.content[:300]
    data = response.json()
    return data if isinstance(data, list) else data["items"]


def count_queries(client: APIClient, url: str) -> tuple[int, int]:
    """(queries, items) of one request; a warm-up request first, so per-token bookkeeping
    (``last_used_at``) is not counted."""
    client.get(url)
    with CaptureQueriesContext(connection) as captured:
        items = items_of(client.get(url))
    return len(captured), len(items)


def add_workspaces(user: User, organization: Any, count: int) -> None:
    workspaces = Workspace.objects.bulk_create(
        [Workspace(organization=organization, name=f"W{i}") for i in range(count)]
    )
    WorkspaceMembership.objects.bulk_create(
        [WorkspaceMembership(workspace=w, user=user, role="viewer") for w in workspaces]
    )
    # Other members, so member_count is not trivially 1.
    others = User.objects.bulk_create([User(email=f"co{i}@example.com") for i in range(3)])
    WorkspaceMembership.objects.bulk_create(
        [WorkspaceMembership(workspace=w, user=o) for w in workspaces for o in others]
    )


def add_organizations(user: User, count: int) -> None:
    organizations = Organization.objects.bulk_create(
        [Organization(name=f"O{i}") for i in range(count)]
    )
    OrganizationMembership.objects.bulk_create(
        [OrganizationMembership(organization=o, user=user, role="admin") for o in organizations]
    )


def add_members(workspace: Any, count: int) -> None:
    users = User.objects.bulk_create([User(email=f"m{i}@example.com") for i in range(count)])
    WorkspaceMembership.objects.bulk_create(
        [WorkspaceMembership(workspace=workspace, user=u, role="viewer") for u in users]
    )


def add_invitations(workspace: Any, user: User, count: int, start: int = 0) -> None:
    Invitation.objects.bulk_create(
        [
            Invitation(
                workspace=workspace,
                email=f"i{i}@example.com",
                role="viewer",
                token_hash=hashlib.sha256(f"t{i}".encode()).hexdigest(),
                invited_by=user,
                expires_at=timezone.now() + timedelta(days=1),
            )
            for i in range(start, start + count)
        ]
    )


def add_audit_events(workspace: Any, count: int) -> None:
    AccessAuditEvent.objects.bulk_create(
        [
            AccessAuditEvent(workspace_id=workspace.pk, action="member.role_changed")
            for _ in range(count)
        ]
    )


def test_workspace_list(owner_client: APIClient, user: User, organization: Any) -> None:
    url = "/api/v1/workspaces?limit=100"
    one = count_queries(owner_client, url)
    add_workspaces(user, organization, 49)
    fifty = count_queries(owner_client, url)
    assert (one[1], fifty[1]) == (1, 50)
    assert fifty[0] == one[0] <= MAX_QUERIES


def test_workspace_list_member_counts_are_right(
    owner_client: APIClient, user: User, organization: Any, workspace: Any
) -> None:
    add_workspaces(user, organization, 2)
    counts = {
        item["name"]: item["member_count"]
        for item in items_of(owner_client.get("/api/v1/workspaces"))
    }
    assert counts == {"Main": 1, "W0": 4, "W1": 4}


def test_organization_list(owner_client: APIClient, user: User) -> None:
    url = "/api/v1/organizations?limit=100"
    one = count_queries(owner_client, url)
    add_organizations(user, 49)
    fifty = count_queries(owner_client, url)
    assert (one[1], fifty[1]) == (1, 50)
    assert fifty[0] == one[0] <= MAX_QUERIES


def test_member_list(owner_client: APIClient, workspace: Any) -> None:
    url = f"/api/v1/workspaces/{workspace.pk}/members?limit=100"
    one = count_queries(owner_client, url)
    add_members(workspace, 49)
    fifty = count_queries(owner_client, url)
    assert (one[1], fifty[1]) == (1, 50)
    assert fifty[0] == one[0] <= MAX_QUERIES


def test_invitation_list(owner_client: APIClient, workspace: Any, user: User) -> None:
    url = f"/api/v1/workspaces/{workspace.pk}/invitations?limit=100"
    add_invitations(workspace, user, 1)
    one = count_queries(owner_client, url)
    add_invitations(workspace, user, 49, start=1)
    fifty = count_queries(owner_client, url)
    assert (one[1], fifty[1]) == (1, 50)
    assert fifty[0] == one[0] <= MAX_QUERIES


def test_access_audit_list(owner_client: APIClient, workspace: Any) -> None:
    url = f"/api/v1/workspaces/{workspace.pk}/access-audit?limit=200"
    one = count_queries(owner_client, url)
    add_audit_events(workspace, 49)
    fifty = count_queries(owner_client, url)
    assert (one[1], fifty[1]) == (1, 50)
    assert fifty[0] == one[0] <= MAX_QUERIES


def test_me_lists_workspaces_without_a_query_per_row(
    owner_client: APIClient, user: User, organization: Any
) -> None:
    one = count_queries_me(owner_client)
    add_workspaces(user, organization, 20)
    add_organizations(user, 20)
    assert count_queries_me(owner_client) == one <= MAX_QUERIES


def count_queries_me(client: APIClient) -> int:
    client.get("/api/v1/me")
    with CaptureQueriesContext(connection) as captured:
        assert client.get("/api/v1/me").status_code == 200
    return len(captured)


def test_query_counts_hold_for_a_session_too(
    make_session_client: Callable[..., APIClient], user: User, workspace: Any
) -> None:
    client = make_session_client(user)
    url = f"/api/v1/workspaces/{workspace.pk}/members?limit=100"
    one = count_queries(client, url)
    add_members(workspace, 49)
    assert count_queries(client, url)[0] == one[0]
