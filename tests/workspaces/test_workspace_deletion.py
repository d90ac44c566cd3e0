"""Workspace deletion and its preview."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from rest_framework.test import APIClient

from tests.problem_asserts import assert_invalid, assert_problem
from workspaces.access import Actor
from workspaces.models import (
    AccessAuditEvent,
    ApiToken,
    BillingRecord,
    Invitation,
    OrganizationMembership,
    User,
    Workspace,
    WorkspaceLifecycleRecord,
    WorkspaceMembership,
)
from workspaces.services import invitation_create, workspace_create

pytestmark = pytest.mark.django_db

PASSWORD = "correct horse battery"  # the make_user default
FIFTEEN_MINUTES = 15 * 60


@pytest.fixture
def doomed(user: User, organization: Any, workspace: Any) -> Any:
    """A second workspace of the organization, so ``final_workspace`` does not block."""
    return workspace_create(actor=Actor(user=user), organization_id=organization.pk, name="Doomed")


def preview_url(ws: Any) -> str:
    return f"/api/v1/workspaces/{ws.pk}/deletion-preview"


def delete(client: APIClient, csrf: dict[str, str], ws: Any, **body: Any) -> Any:
    return client.delete(f"/api/v1/workspaces/{ws.pk}", body, format="json", **csrf)


@pytest.fixture
def owner_session(
    make_session_client: Callable[..., APIClient],
    csrf_headers: Callable[[Any], dict[str, str]],
    user: User,
) -> tuple[APIClient, dict[str, str]]:
    client = make_session_client(user)
    return client, csrf_headers(client)


# --- Preview --------------------------------------------------------------------------------


def test_preview_explains_loss_retention_recovery_and_blockers(
    owner_session: tuple[APIClient, dict[str, str]], doomed: Any, user: User
) -> None:
    client, _ = owner_session
    invitation_create(
        actor=Actor(user=user), workspace_id=doomed.pk, email="a@example.com", role="viewer"
    )
    response = client.get(preview_url(doomed))
    assert response.status_code == 200
    preview = response.json()
    assert preview["workspace_id"] == str(doomed.pk)
    assert preview["confirm_name"] == "Doomed"
    assert preview["data_loss"]["members"] == 1
    assert preview["data_loss"]["invitations"] == 1
    assert preview["retained_records"]["access_audit_events"] == 2
    assert preview["recovery"]
    assert preview["blockers"] == []
    assert preview["can_delete"] is True


def test_preview_lists_the_final_workspace_blocker(
    owner_session: tuple[APIClient, dict[str, str]], workspace: Any
) -> None:
    client, _ = owner_session
    preview = client.get(preview_url(workspace)).json()
    assert [b["code"] for b in preview["blockers"]] == ["final_workspace"]
    assert preview["can_delete"] is False


def test_preview_lists_an_active_paid_subscription(
    owner_session: tuple[APIClient, dict[str, str]], doomed: Any
) -> None:
    BillingRecord.objects.create(
        organization_id=doomed.organization_id, workspace_id=doomed.pk, plan_code="pro"
    )
    client, csrf = owner_session
    preview = client.get(preview_url(doomed)).json()
    assert [b["code"] for b in preview["blockers"]] == ["active_billing"]
    assert_problem(delete(client, csrf, doomed, confirm_name="Doomed"), 409, "deletion_blocked")
    assert Workspace.objects.filter(pk=doomed.pk).exists()


# --- Who may delete -------------------------------------------------------------------------


@pytest.fixture
def org_admin(make_user: Callable[..., User], organization: Any, doomed: Any) -> User:
    """Organization admin (not owner) who is also an admin of the workspace."""
    person = make_user("orgadmin@example.com")
    OrganizationMembership.objects.create(organization=organization, user=person, role="admin")
    WorkspaceMembership.objects.create(workspace=doomed, user=person, role="admin")
    return person


@pytest.fixture
def workspace_admin(make_user: Callable[..., User], doomed: Any) -> User:
    """Workspace admin without any organization role."""
    person = make_user("wsadmin@example.com")
    WorkspaceMembership.objects.create(workspace=doomed, user=person, role="admin")
    return person


@pytest.mark.parametrize(
    ("who", "code"),
    [("org_admin", "role_too_low"), ("workspace_admin", "no_organization_access")],
)
def test_only_the_organization_owner_may_preview_or_delete(
    request: pytest.FixtureRequest,
    make_session_client: Callable[..., APIClient],
    csrf_headers: Callable[[Any], dict[str, str]],
    doomed: Any,
    who: str,
    code: str,
) -> None:
    person: User = request.getfixturevalue(who)
    client = make_session_client(person)
    csrf = csrf_headers(client)
    assert_problem(client.get(preview_url(doomed)), 403, code)
    response = delete(client, csrf, doomed, confirm_name="Doomed", current_password=PASSWORD)
    assert_problem(response, 403, code)
    assert Workspace.objects.filter(pk=doomed.pk).exists()


def test_delete_without_csrf_token_is_refused(
    make_session_client: Callable[..., APIClient], user: User, doomed: Any
) -> None:
    client = make_session_client(user)
    response = client.delete(
        f"/api/v1/workspaces/{doomed.pk}", {"confirm_name": "Doomed"}, format="json"
    )
    assert_problem(response, 403, "csrf_failed")
    assert Workspace.objects.filter(pk=doomed.pk).exists()


def test_unknown_workspace_is_404(owner_session: tuple[APIClient, dict[str, str]]) -> None:
    client, _ = owner_session
    response = client.get(
        "/api/v1/workspaces/00000000-0000-4000-8000-00000000000f/deletion-preview"
    )
    assert_problem(response, 404, "not_found")


# --- Confirmation and recent authentication -------------------------------------------------


@pytest.mark.parametrize("name", ["doomed", "DOOMED", "Doomed ", " Doomed", "Doome", ""])
def test_confirmation_needs_the_exact_canonical_name(
    owner_session: tuple[APIClient, dict[str, str]], doomed: Any, name: str
) -> None:
    client, csrf = owner_session
    assert_invalid(delete(client, csrf, doomed, confirm_name=name), "body.confirm_name")
    assert Workspace.objects.filter(pk=doomed.pk).exists()


def test_missing_confirmation_is_422(
    owner_session: tuple[APIClient, dict[str, str]], doomed: Any
) -> None:
    client, csrf = owner_session
    assert_invalid(delete(client, csrf, doomed), "body.confirm_name")


@pytest.mark.parametrize("seconds_ago", [FIFTEEN_MINUTES + 1, 3600, None])
def test_stale_session_needs_the_current_password(
    make_session_client: Callable[..., APIClient],
    csrf_headers: Callable[[Any], dict[str, str]],
    user: User,
    doomed: Any,
    seconds_ago: float | None,
) -> None:
    client = make_session_client(user, authenticated_seconds_ago=seconds_ago)
    csrf = csrf_headers(client)
    response = delete(client, csrf, doomed, confirm_name="Doomed")
    assert_problem(response, 403, "recent_authentication_required")
    response = delete(client, csrf, doomed, confirm_name="Doomed", current_password="wrong")
    assert_problem(response, 403, "recent_authentication_required")
    assert Workspace.objects.filter(pk=doomed.pk).exists()

    response = delete(client, csrf, doomed, confirm_name="Doomed", current_password=PASSWORD)
    assert response.status_code == 204
    assert not Workspace.objects.filter(pk=doomed.pk).exists()


def test_session_within_fifteen_minutes_needs_no_password(
    make_session_client: Callable[..., APIClient],
    csrf_headers: Callable[[Any], dict[str, str]],
    user: User,
    doomed: Any,
) -> None:
    client = make_session_client(user, authenticated_seconds_ago=FIFTEEN_MINUTES - 30)
    response = delete(client, csrf_headers(client), doomed, confirm_name="Doomed")
    assert response.status_code == 204


@pytest.mark.parametrize("seconds_ago", [None, 3600, 30])
@pytest.mark.parametrize("password", [123, 0, 1.5])
def test_a_password_that_is_not_a_string_is_refused_never_taken_as_confirmed(
    make_session_client: Callable[..., APIClient],
    csrf_headers: Callable[[Any], dict[str, str]],
    user: User,
    doomed: Any,
    seconds_ago: float | None,
    password: Any,
) -> None:
    """Before: a number as ``current_password`` was never checked (only strings were), yet it
    counted as a confirmed password, so a stale session deleted the workspace with a 204. Given,
    the password is always checked; a number is a 422 at ``body.current_password``, whatever the
    age of the session, and nothing is deleted."""
    client = make_session_client(user, authenticated_seconds_ago=seconds_ago)
    response = delete(
        client, csrf_headers(client), doomed, confirm_name="Doomed", current_password=password
    )
    assert_invalid(response, "body.current_password")
    assert Workspace.objects.filter(pk=doomed.pk).exists()
    assert not WorkspaceLifecycleRecord.objects.exists()


def test_the_password_is_not_echoed_in_errors(
    make_session_client: Callable[..., APIClient],
    csrf_headers: Callable[[Any], dict[str, str]],
    user: User,
    doomed: Any,
) -> None:
    client = make_session_client(user, authenticated_seconds_ago=None)
    response = delete(
        client, csrf_headers(client), doomed, confirm_name="doomed", current_password=PASSWORD
    )
    assert_invalid(response, "body.confirm_name")
    assert PASSWORD not in response.content.decode()


# --- Blockers and what survives -------------------------------------------------------------


def test_final_workspace_is_a_409(
    owner_session: tuple[APIClient, dict[str, str]], workspace: Any
) -> None:
    client, csrf = owner_session
    assert_problem(delete(client, csrf, workspace, confirm_name="Main"), 409, "deletion_blocked")
    assert Workspace.objects.filter(pk=workspace.pk).exists()
    assert not WorkspaceLifecycleRecord.objects.exists()


def test_deletion_keeps_audit_billing_and_a_lifecycle_record(
    owner_session: tuple[APIClient, dict[str, str]],
    doomed: Any,
    user: User,
    make_user: Callable[..., User],
    make_token: Callable[..., str],
) -> None:
    client, csrf = owner_session
    invitation_create(
        actor=Actor(user=user), workspace_id=doomed.pk, email="b@example.com", role="viewer"
    )
    BillingRecord.objects.create(
        organization_id=doomed.organization_id,
        workspace_id=doomed.pk,
        plan_code="pro",
        status=BillingRecord.Status.CANCELED,
    )
    bound = make_token(user, workspace=doomed)
    audit_before = AccessAuditEvent.objects.filter(workspace_id=doomed.pk).count()
    assert audit_before == 2

    response = delete(client, csrf, doomed, confirm_name="Doomed")
    assert response.status_code == 204
    assert response.content == b""

    assert not Workspace.objects.filter(pk=doomed.pk).exists()
    assert not WorkspaceMembership.objects.filter(workspace_id=doomed.pk).exists()
    assert not Invitation.objects.filter(workspace_id=doomed.pk).exists()
    assert not ApiToken.objects.filter(workspace_id=doomed.pk).exists()
    assert AccessAuditEvent.objects.filter(workspace_id=doomed.pk).count() == audit_before
    assert BillingRecord.objects.filter(workspace_id=doomed.pk).count() == 1
    record = WorkspaceLifecycleRecord.objects.get(workspace_id=doomed.pk)
    assert record.action == "workspace.deleted"
    assert record.workspace_name == "Doomed"
    assert record.actor_user_id == str(user.pk)
    assert str(record.organization_id) == str(doomed.organization_id)

    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {bound}")
    assert_problem(api.get("/api/v1/me"), 401, "not_authenticated")
    assert_problem(client.get(preview_url(doomed)), 404, "not_found")


def test_deleting_a_members_last_workspace_ends_their_plain_organization_membership(
    owner_session: tuple[APIClient, dict[str, str]],
    organization: Any,
    workspace: Any,
    doomed: Any,
    make_user: Callable[..., User],
) -> None:
    only_here, also_elsewhere = make_user("only@example.com"), make_user("both@example.com")
    for person in (only_here, also_elsewhere):
        WorkspaceMembership.objects.create(workspace=doomed, user=person, role="editor")
        OrganizationMembership.objects.create(organization=organization, user=person)
    WorkspaceMembership.objects.create(workspace=workspace, user=also_elsewhere, role="viewer")
    client, csrf = owner_session
    assert delete(client, csrf, doomed, confirm_name="Doomed").status_code == 204
    assert not OrganizationMembership.objects.filter(user=only_here).exists()
    assert OrganizationMembership.objects.filter(user=also_elsewhere, role="member").exists()
