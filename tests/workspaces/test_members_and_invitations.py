"""Members and invitations: every change writes an access-audit event in the same
transaction, with the previous and new role/status; newest first."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any
from unittest import mock

import pytest
import time_machine
from django.utils import timezone
from rest_framework.test import APIClient

from tests.problem_asserts import assert_invalid, assert_problem
from workspaces import services
from workspaces.access import Actor
from workspaces.models import (
    AccessAuditEvent,
    ApiToken,
    Invitation,
    OrganizationMembership,
    User,
    WorkspaceMembership,
)
from workspaces.services import invitations, members

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _no_email(settings: Any) -> None:
    """An instance that cannot send e-mail: the answers carry the link, which these tests pass
    on themselves (with e-mail, the link goes to the mailbox only: test_people_pages.py)."""
    settings.HERALD_EMAIL_ENABLED = False


def events(workspace: Any, action: str | None = None) -> list[AccessAuditEvent]:
    queryset = AccessAuditEvent.objects.filter(workspace_id=workspace.pk)
    if action:
        queryset = queryset.filter(action=action)
    return list(queryset.order_by("-created_at", "-id"))


def audit_actions(client: APIClient, workspace: Any) -> list[str]:
    response = client.get(f"/api/v1/workspaces/{workspace.pk}/access-audit")
    assert response.status_code == 200
    return [item["action"] for item in response.json()]


@pytest.fixture
def invitee(make_user: Callable[..., User]) -> User:
    return make_user("invitee@example.com")


@pytest.fixture
def member(make_user: Callable[..., User], workspace: Any) -> User:
    person = make_user("editor@example.com")
    WorkspaceMembership.objects.create(workspace=workspace, user=person, role="editor")
    return person


def member_url(workspace: Any, person: User) -> str:
    return f"/api/v1/workspaces/{workspace.pk}/members/{person.pk}"


def invite(client: APIClient, workspace: Any, email: str, role: str = "editor") -> Any:
    return client.post(
        f"/api/v1/workspaces/{workspace.pk}/invitations",
        {"email": email, "role": role},
        format="json",
    )


# --- Invitations ----------------------------------------------------------------------------


def test_invitation_created_resent_and_accepted_are_audited(
    owner_client: APIClient,
    bearer_client: Callable[..., APIClient],
    workspace: Any,
    user: User,
    invitee: User,
) -> None:
    created = invite(owner_client, workspace, "Invitee@Example.com")
    assert created.status_code == 201
    invitation = created.json()
    assert created["Location"].endswith(f"/api/v1/invitations/{invitation['id']}")
    assert invitation["status"] == "pending"
    assert invitation["email"] == "invitee@example.com"
    first_token = invitation["accept_token"]

    [event] = events(workspace, "invitation.created")
    assert (event.actor_user_id, event.invitation_id) == (str(user.pk), invitation["id"])
    assert (event.subject_email, event.role, event.status) == (
        "invitee@example.com",
        "editor",
        "pending",
    )

    resent = owner_client.post(f"/api/v1/invitations/{invitation['id']}/resend")
    assert resent.status_code == 200
    second_token = resent.json()["accept_token"]
    assert second_token != first_token
    [event] = events(workspace, "invitation.resent")
    assert (event.previous_status, event.status, event.role) == ("pending", "pending", "editor")

    listing = owner_client.get(f"/api/v1/workspaces/{workspace.pk}/invitations").json()
    assert [item["id"] for item in listing["items"]] == [invitation["id"]]
    assert "accept_token" not in listing["items"][0]

    invitee_client = bearer_client(invitee)
    stale = invitee_client.post("/api/v1/invitations/accept", {"token": first_token}, format="json")
    assert_problem(stale, 404, "not_found")

    accepted = invitee_client.post(
        "/api/v1/invitations/accept", {"token": second_token}, format="json"
    )
    assert accepted.status_code == 200
    assert (accepted.json()["role"], accepted.json()["status"]) == ("editor", "active")
    [event] = events(workspace, "invitation.accepted")
    assert event.subject_user_id == str(invitee.pk)
    assert event.actor_user_id == str(invitee.pk)
    assert event.invitation_id == invitation["id"]
    assert (event.previous_role, event.previous_status) == ("", "")
    assert (event.role, event.status) == ("editor", "active")
    assert OrganizationMembership.objects.filter(user=invitee, role="member").exists()

    assert audit_actions(owner_client, workspace)[:3] == [
        "invitation.accepted",
        "invitation.resent",
        "invitation.created",
    ]


def test_revoked_invitation_cannot_be_accepted_or_resent(
    owner_client: APIClient,
    bearer_client: Callable[..., APIClient],
    workspace: Any,
    invitee: User,
) -> None:
    invitation = invite(owner_client, workspace, invitee.email, role="viewer").json()
    response = owner_client.delete(f"/api/v1/invitations/{invitation['id']}")
    assert response.status_code == 204

    [event] = events(workspace, "invitation.revoked")
    assert (event.previous_status, event.status, event.role) == ("pending", "revoked", "viewer")

    accept = bearer_client(invitee).post(
        "/api/v1/invitations/accept", {"token": invitation["accept_token"]}, format="json"
    )
    assert_problem(accept, 409, "invitation_not_pending")
    resend = owner_client.post(f"/api/v1/invitations/{invitation['id']}/resend")
    assert_problem(resend, 409, "invitation_not_pending")
    again = owner_client.delete(f"/api/v1/invitations/{invitation['id']}")
    assert_problem(again, 409, "invitation_not_pending")
    assert not WorkspaceMembership.objects.filter(user=invitee).exists()
    assert len(events(workspace, "invitation.revoked")) == 1


def test_accepting_needs_the_invited_email(
    owner_client: APIClient,
    bearer_client: Callable[..., APIClient],
    make_user: Callable[..., User],
    workspace: Any,
    invitee: User,
) -> None:
    invitation = invite(owner_client, workspace, invitee.email).json()
    intruder = bearer_client(make_user("intruder@example.com"))
    response = intruder.post(
        "/api/v1/invitations/accept", {"token": invitation["accept_token"]}, format="json"
    )
    assert_problem(response, 403, "invitation_email_mismatch")
    assert Invitation.objects.get(pk=invitation["id"]).status == "pending"
    assert events(workspace, "invitation.accepted") == []
    assert WorkspaceMembership.objects.filter(workspace=workspace).count() == 1


def test_accepting_needs_a_signed_in_user(
    owner_client: APIClient, api_client: APIClient, workspace: Any, invitee: User
) -> None:
    invitation = invite(owner_client, workspace, invitee.email).json()
    response = api_client.post(
        "/api/v1/invitations/accept", {"token": invitation["accept_token"]}, format="json"
    )
    assert_problem(response, 401, "not_authenticated")


def test_expired_invitation_cannot_be_accepted(
    owner_client: APIClient,
    bearer_client: Callable[..., APIClient],
    workspace: Any,
    invitee: User,
    settings: Any,
) -> None:
    invitation = invite(owner_client, workspace, invitee.email).json()
    invitee_client = bearer_client(invitee)
    later = timezone.now() + timedelta(days=settings.HERALD_INVITATION_DAYS, seconds=1)
    with time_machine.travel(later):
        response = invitee_client.post(
            "/api/v1/invitations/accept", {"token": invitation["accept_token"]}, format="json"
        )
        assert_problem(response, 409, "invitation_not_pending")
        listing = owner_client.get(f"/api/v1/workspaces/{workspace.pk}/invitations").json()
        assert listing["items"][0]["status"] == "expired"
        # An expired invitation does not block a new one.
        assert invite(owner_client, workspace, invitee.email).status_code == 201


def test_duplicate_invitations_and_existing_members_conflict(
    owner_client: APIClient, workspace: Any, member: User, invitee: User
) -> None:
    assert invite(owner_client, workspace, invitee.email).status_code == 201
    assert_problem(invite(owner_client, workspace, "INVITEE@example.com"), 409, "invitation_exists")
    assert_problem(invite(owner_client, workspace, member.email), 409, "already_member")
    assert len(events(workspace, "invitation.created")) == 1


def test_invitation_input_is_validated(owner_client: APIClient, workspace: Any) -> None:
    assert_invalid(
        invite(owner_client, workspace, "not-an-email", role="owner"), "body.email", "body.role"
    )


def test_invitations_need_a_workspace_admin(
    bearer_client: Callable[..., APIClient], member: User, workspace: Any
) -> None:
    client = bearer_client(member)
    assert_problem(invite(client, workspace, "x@example.com"), 403, "role_too_low")
    assert_problem(
        client.get(f"/api/v1/workspaces/{workspace.pk}/invitations"), 403, "role_too_low"
    )
    assert not Invitation.objects.exists()


# --- Members --------------------------------------------------------------------------------


def test_role_and_status_changes_are_audited_with_previous_values(
    owner_client: APIClient, workspace: Any, member: User, user: User
) -> None:
    url = member_url(workspace, member)

    response = owner_client.patch(url, {"role": "viewer"}, format="json")
    assert response.status_code == 200
    assert (response.json()["role"], response.json()["status"]) == ("viewer", "active")
    [changed] = events(workspace, "member.role_changed")
    assert changed.actor_user_id == str(user.pk)
    assert changed.subject_user_id == str(member.pk)
    assert changed.subject_email == member.email
    assert (changed.previous_role, changed.role) == ("editor", "viewer")
    assert (changed.previous_status, changed.status) == ("active", "active")

    assert owner_client.patch(url, {"status": "inactive"}, format="json").status_code == 200
    [deactivated] = events(workspace, "member.deactivated")
    assert (deactivated.previous_status, deactivated.status) == ("active", "inactive")
    assert (deactivated.previous_role, deactivated.role) == ("viewer", "viewer")

    assert owner_client.patch(url, {"status": "active"}, format="json").status_code == 200
    [reactivated] = events(workspace, "member.reactivated")
    assert (reactivated.previous_status, reactivated.status) == ("inactive", "active")

    # No change, no event.
    before = AccessAuditEvent.objects.count()
    assert owner_client.patch(url, {"role": "viewer"}, format="json").status_code == 200
    assert AccessAuditEvent.objects.count() == before

    assert audit_actions(owner_client, workspace)[:3] == [
        "member.reactivated",
        "member.deactivated",
        "member.role_changed",
    ]


def test_role_and_status_change_in_one_request_writes_both_events(
    owner_client: APIClient, workspace: Any, member: User
) -> None:
    url = member_url(workspace, member)
    response = owner_client.patch(url, {"role": "admin", "status": "inactive"}, format="json")
    assert response.status_code == 200
    [role_event] = events(workspace, "member.role_changed")
    [status_event] = events(workspace, "member.deactivated")
    for event in (role_event, status_event):
        assert (event.previous_role, event.role) == ("editor", "admin")
        assert (event.previous_status, event.status) == ("active", "inactive")


def test_removal_is_audited_and_revokes_the_members_workspace_tokens(
    owner_client: APIClient,
    workspace: Any,
    member: User,
    make_token: Callable[..., str],
) -> None:
    make_token(member, workspace=workspace)
    response = owner_client.delete(member_url(workspace, member))
    assert response.status_code == 204
    assert not WorkspaceMembership.objects.filter(workspace=workspace, user=member).exists()
    [removed] = events(workspace, "member.removed")
    assert removed.subject_user_id == str(member.pk)
    assert (removed.previous_role, removed.previous_status) == ("editor", "active")
    assert ApiToken.objects.get(user=member).revoked_at is not None
    assert audit_actions(owner_client, workspace)[0] == "member.removed"
    assert_problem(owner_client.delete(member_url(workspace, member)), 404, "not_found")


@pytest.mark.parametrize(
    ("method", "body"),
    [("patch", {"role": "editor"}), ("patch", {"status": "inactive"}), ("delete", None)],
)
def test_last_active_admin_cannot_be_demoted_deactivated_or_removed(
    owner_client: APIClient, workspace: Any, user: User, method: str, body: Any
) -> None:
    before = AccessAuditEvent.objects.count()
    response = getattr(owner_client, method)(member_url(workspace, user), body, format="json")
    assert_problem(response, 409, "last_admin")
    membership = WorkspaceMembership.objects.get(workspace=workspace, user=user)
    assert (membership.role, membership.status) == ("admin", "active")
    assert AccessAuditEvent.objects.count() == before


def test_an_inactive_admin_does_not_count_as_another_admin(
    owner_client: APIClient, make_user: Callable[..., User], workspace: Any, user: User
) -> None:
    WorkspaceMembership.objects.create(
        workspace=workspace, user=make_user(), role="admin", status="inactive"
    )
    response = owner_client.patch(member_url(workspace, user), {"role": "viewer"}, format="json")
    assert_problem(response, 409, "last_admin")


def test_admin_can_step_down_when_another_admin_exists(
    owner_client: APIClient, workspace: Any, member: User, user: User
) -> None:
    assert (
        owner_client.patch(
            member_url(workspace, member), {"role": "admin"}, format="json"
        ).status_code
        == 200
    )
    response = owner_client.patch(member_url(workspace, user), {"role": "editor"}, format="json")
    assert response.status_code == 200
    # The former admin can no longer manage members.
    response = owner_client.patch(member_url(workspace, member), {"role": "viewer"}, format="json")
    assert_problem(response, 403, "role_too_low")


def test_audit_write_failure_rolls_back_the_change(
    workspace: Any, member: User, user: User
) -> None:
    with (
        mock.patch.object(members, "audit_record", side_effect=RuntimeError("audit down")),
        pytest.raises(RuntimeError),
    ):
        services.workspace_member_update(
            actor=Actor(user=user), workspace_id=workspace.pk, user_id=member.pk, role="viewer"
        )
    assert WorkspaceMembership.objects.get(workspace=workspace, user=member).role == "editor"


def test_invitation_is_not_kept_when_its_audit_event_fails(workspace: Any, user: User) -> None:
    with (
        mock.patch.object(invitations, "audit_record", side_effect=RuntimeError("audit down")),
        pytest.raises(RuntimeError),
    ):
        services.invitation_create(
            actor=Actor(user=user), workspace_id=workspace.pk, email="x@example.com", role="viewer"
        )
    assert not Invitation.objects.exists()


def test_members_need_a_workspace_admin_to_change(
    bearer_client: Callable[..., APIClient], workspace: Any, member: User, user: User
) -> None:
    client = bearer_client(member)
    assert client.get(f"/api/v1/workspaces/{workspace.pk}/members").status_code == 200
    response = client.patch(member_url(workspace, user), {"role": "viewer"}, format="json")
    assert_problem(response, 403, "role_too_low")
    assert_problem(client.delete(member_url(workspace, user)), 403, "role_too_low")


def test_member_update_input_is_validated(
    owner_client: APIClient, workspace: Any, member: User
) -> None:
    url = member_url(workspace, member)
    assert_invalid(owner_client.patch(url, {"role": "owner"}, format="json"), "body.role")
    assert_invalid(owner_client.patch(url, {}, format="json"), "body.role")
    assert_invalid(owner_client.patch(url, {"rank": 1}, format="json"), "body.rank")


def test_unknown_member_is_404(owner_client: APIClient, workspace: Any, invitee: User) -> None:
    response = owner_client.patch(member_url(workspace, invitee), {"role": "viewer"}, format="json")
    assert_problem(response, 404, "not_found")


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_two_admins_demoting_each_other_at_once_leave_one_admin(
    make_user: Callable[..., User],
) -> None:
    from concurrent.futures import ThreadPoolExecutor
    from threading import Barrier

    from django.db import connection

    from config.errors import DomainError
    from workspaces.services import organization_create, workspace_create

    first, second = make_user(), make_user()
    organization = organization_create(actor=Actor(user=first), name="Race")
    workspace = workspace_create(actor=Actor(user=first), organization_id=organization.pk, name="R")
    WorkspaceMembership.objects.create(workspace=workspace, user=second, role="admin")
    barrier = Barrier(2)

    def demote(pair: tuple[User, User]) -> str:
        actor, target = pair
        try:
            barrier.wait(timeout=5)
            services.workspace_member_update(
                actor=Actor(user=actor), workspace_id=workspace.pk, user_id=target.pk, role="editor"
            )
            return "ok"
        except DomainError as exc:
            return exc.code
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=2) as pool:
        outcomes = sorted(pool.map(demote, [(first, second), (second, first)]))
    # Serialized on the workspace row: the second request either finds itself demoted
    # (role_too_low) or finds no other admin left (last_admin); never both succeed.
    assert outcomes in (["last_admin", "ok"], ["ok", "role_too_low"])
    admins = WorkspaceMembership.objects.filter(workspace=workspace, role="admin", status="active")
    assert admins.count() == 1
    assert (
        AccessAuditEvent.objects.filter(
            workspace_id=workspace.pk, action="member.role_changed"
        ).count()
        == 1
    )
