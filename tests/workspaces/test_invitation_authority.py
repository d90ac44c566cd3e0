"""An invitation carries its issuer's authority and dies with it: removing, demoting or
deactivating an admin revokes the pending invitations they sent (audited), acceptance re-checks
that the issuer still may grant the role, and a plain organization member removed from the
organization's last workspace leaves the organization."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from rest_framework.test import APIClient

from tests.problem_asserts import assert_problem
from workspaces import services
from workspaces.access import Actor
from workspaces.models import (
    AccessAuditEvent,
    Invitation,
    OrganizationMembership,
    User,
    WorkspaceMembership,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def second_admin(make_user: Callable[..., User], workspace: Any) -> User:
    person = make_user("second-admin@example.com")
    WorkspaceMembership.objects.create(workspace=workspace, user=person, role="admin")
    return person


def _invite_self_back(admin: User, workspace: Any) -> tuple[Invitation, str]:
    """The admin's escape hatch: an invitation as admin for an address they control."""
    return services.invitation_create(
        actor=Actor(user=admin),
        workspace_id=workspace.pk,
        email="admin-alias@example.com",
        role="admin",
    )


def _revocations(workspace: Any, invitation: Invitation) -> list[AccessAuditEvent]:
    return list(
        AccessAuditEvent.objects.filter(
            workspace_id=workspace.pk, action="invitation.revoked", invitation_id=str(invitation.pk)
        )
    )


@pytest.mark.parametrize(
    "change",
    [
        pytest.param({"role": "editor"}, id="demoted"),
        pytest.param({"status": "inactive"}, id="deactivated"),
        pytest.param(None, id="removed"),
    ],
)
def test_losing_admin_authority_revokes_the_invitations_issued(
    workspace: Any, user: User, second_admin: User, change: dict[str, str] | None
) -> None:
    invitation, _ = _invite_self_back(second_admin, workspace)
    others, _ = services.invitation_create(
        actor=Actor(user=user), workspace_id=workspace.pk, email="kept@example.com", role="viewer"
    )
    if change is None:
        services.workspace_member_remove(
            actor=Actor(user=user), workspace_id=workspace.pk, user_id=second_admin.pk
        )
    else:
        services.workspace_member_update(
            actor=Actor(user=user), workspace_id=workspace.pk, user_id=second_admin.pk, **change
        )
    invitation.refresh_from_db()
    assert invitation.status == "revoked"
    [event] = _revocations(workspace, invitation)
    assert event.actor_user_id == str(user.pk)  # who took the authority away
    assert (event.previous_status, event.status, event.role) == ("pending", "revoked", "admin")
    assert event.subject_email == "admin-alias@example.com"
    others.refresh_from_db()
    assert others.status == "pending"  # another admin's invitations are untouched


def test_acceptance_rechecks_the_issuers_authority(
    workspace: Any,
    user: User,
    second_admin: User,
    make_user: Callable[..., User],
    bearer_client: Callable[..., APIClient],
) -> None:
    """An issuer who lost the role some other way (here: the account deactivated, or the
    membership changed behind the services' back) cannot bring anyone in."""
    _, raw = _invite_self_back(second_admin, workspace)
    alias = make_user("admin-alias@example.com")
    WorkspaceMembership.objects.filter(workspace=workspace, user=second_admin).update(role="viewer")
    response = bearer_client(alias).post(
        "/api/v1/invitations/accept", {"token": raw}, format="json"
    )
    assert_problem(response, 409, "invitation_not_pending")
    assert not WorkspaceMembership.objects.filter(workspace=workspace, user=alias).exists()

    WorkspaceMembership.objects.filter(workspace=workspace, user=second_admin).update(role="admin")
    User.objects.filter(pk=second_admin.pk).update(is_active=False)
    response = bearer_client(alias).post(
        "/api/v1/invitations/accept", {"token": raw}, format="json"
    )
    assert_problem(response, 409, "invitation_not_pending")
    assert not WorkspaceMembership.objects.filter(workspace=workspace, user=alias).exists()


def test_the_invitation_page_shows_a_withdrawn_invitation(
    workspace: Any, second_admin: User, api_client: APIClient
) -> None:
    _, raw = _invite_self_back(second_admin, workspace)
    WorkspaceMembership.objects.filter(workspace=workspace, user=second_admin).update(
        status="inactive"
    )
    page = api_client.get(f"/invitations/{raw}/")
    assert page.status_code == 410
    assert "withdrawn" in page.content.decode()


def test_removal_from_the_last_workspace_ends_a_plain_organization_membership(
    workspace: Any,
    organization: Any,
    user: User,
    make_user: Callable[..., User],
    bearer_client: Callable[..., APIClient],
) -> None:
    person = make_user("leaver@example.com")
    second = services.workspace_create(
        actor=Actor(user=user), organization_id=organization.pk, name="Second"
    )
    for ws in (workspace, second):
        WorkspaceMembership.objects.create(workspace=ws, user=person, role="editor")
    OrganizationMembership.objects.create(organization=organization, user=person, role="member")
    client = bearer_client(person)
    assert client.get(f"/api/v1/organizations/{organization.pk}").status_code == 200

    services.workspace_member_remove(
        actor=Actor(user=user), workspace_id=workspace.pk, user_id=person.pk
    )
    assert client.get(f"/api/v1/organizations/{organization.pk}").status_code == 200  # one left

    services.workspace_member_remove(
        actor=Actor(user=user), workspace_id=second.pk, user_id=person.pk
    )
    assert not OrganizationMembership.objects.filter(user=person).exists()
    assert client.get(f"/api/v1/organizations/{organization.pk}").status_code in (403, 404)


def test_an_organization_admin_keeps_the_organization_role_after_removal(
    workspace: Any, organization: Any, user: User, make_user: Callable[..., User]
) -> None:
    person = make_user("org-admin@example.com")
    WorkspaceMembership.objects.create(workspace=workspace, user=person, role="editor")
    OrganizationMembership.objects.create(organization=organization, user=person, role="admin")
    services.workspace_member_remove(
        actor=Actor(user=user), workspace_id=workspace.pk, user_id=person.pk
    )
    assert OrganizationMembership.objects.filter(user=person, role="admin").exists()
