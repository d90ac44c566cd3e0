"""Signing up from an invitation (``services.invitation_sign_up``): the account is created with
the invited e-mail and accepts the invitation, with its audit event, in one transaction; any
refusal leaves no account behind. And creating or resending an invitation e-mails its link once
the transaction commits, when the caller gives the instance's address."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any
from unittest import mock

import pytest
import time_machine
from django.core import mail
from django.core.exceptions import ValidationError
from django.utils import timezone

from config.errors import NotFoundError
from workspaces import services
from workspaces.access import Actor
from workspaces.errors import InvitationAccountExistsError, InvitationNotPendingError
from workspaces.models import (
    AccessAuditEvent,
    Invitation,
    OrganizationMembership,
    User,
    WorkspaceMembership,
)
from workspaces.services import invitations as invitation_services

pytestmark = pytest.mark.django_db

INVITEE = "new.person@example.com"
PASSWORD = "a brand new passphrase 42"


def _invite(user: User, workspace: Any, email: str = "New.Person@Example.com") -> tuple[Any, str]:
    return services.invitation_create(
        actor=Actor(user=user),
        workspace_id=workspace.pk,
        email=email,
        role=WorkspaceMembership.Role.VIEWER,
    )


def _nothing_created(invitation: Invitation) -> None:
    assert not User.objects.filter(email__iexact=INVITEE).exists()
    assert not WorkspaceMembership.objects.filter(user__email__iexact=INVITEE).exists()
    assert not OrganizationMembership.objects.filter(user__email__iexact=INVITEE).exists()
    assert not AccessAuditEvent.objects.filter(
        action=AccessAuditEvent.Action.INVITATION_ACCEPTED
    ).exists()
    invitation.refresh_from_db()
    assert (invitation.status, invitation.accepted_by_id) == ("pending", None)


def test_sign_up_creates_the_account_and_accepts_the_invitation(user: User, workspace: Any) -> None:
    invitation, token = _invite(user, workspace)

    membership = services.invitation_sign_up(
        token=token, password=PASSWORD, display_name="New Person"
    )

    created = membership.user
    assert created.email == INVITEE  # the invited address, stored lower-case
    assert created.name == "New Person"
    assert created.check_password(PASSWORD)
    assert (membership.workspace_id, membership.role, membership.status) == (
        workspace.pk,
        "viewer",
        "active",
    )
    invitation.refresh_from_db()
    assert (invitation.status, invitation.accepted_by_id) == ("accepted", created.pk)
    assert OrganizationMembership.objects.filter(
        organization_id=workspace.organization_id, user=created
    ).exists()
    event = AccessAuditEvent.objects.get(action=AccessAuditEvent.Action.INVITATION_ACCEPTED)
    assert (event.actor_user_id, event.subject_user_id) == (str(created.pk), str(created.pk))


def test_failed_acceptance_leaves_no_account_behind(user: User, workspace: Any) -> None:
    invitation, token = _invite(user, workspace)

    # The acceptance's audit event (its last write) fails after the account was created.
    with (
        mock.patch.object(
            invitation_services, "audit_record", side_effect=RuntimeError("audit store down")
        ),
        pytest.raises(RuntimeError, match="audit store down"),
    ):
        services.invitation_sign_up(token=token, password=PASSWORD, display_name="New Person")

    _nothing_created(invitation)


def test_password_validators_refuse_and_create_nothing(user: User, workspace: Any) -> None:
    invitation, token = _invite(user, workspace)

    with pytest.raises(ValidationError) as refused:
        services.invitation_sign_up(token=token, password="short")
    assert "password_too_short" in [e.code for e in refused.value.error_list]

    with pytest.raises(ValidationError) as similar:  # too close to the invited e-mail
        services.invitation_sign_up(token=token, password="new.person@example")
    assert "password_too_similar" in [e.code for e in similar.value.error_list]

    _nothing_created(invitation)


def test_an_existing_account_is_refused_to_a_link_passed_on_by_hand(
    user: User, workspace: Any, make_user: Callable[..., User], settings: Any
) -> None:
    """Without e-mail the link went through the inviter: holding it proves no mailbox, so it
    cannot set an existing account's password (with e-mail it can, like a reset:
    tests/workspaces/test_email_proof.py)."""
    settings.HERALD_EMAIL_ENABLED = False
    existing = make_user("NEW.person@example.com", password="correct horse battery")
    invitation, token = _invite(user, workspace)

    with pytest.raises(InvitationAccountExistsError):
        services.invitation_sign_up(token=token, password=PASSWORD)

    assert User.objects.filter(email__iexact=INVITEE).count() == 1
    existing.refresh_from_db()
    assert existing.check_password("correct horse battery")
    assert not WorkspaceMembership.objects.filter(user=existing, workspace=workspace).exists()
    invitation.refresh_from_db()
    assert invitation.status == "pending"


def test_unknown_used_revoked_and_expired_tokens_are_refused(user: User, workspace: Any) -> None:
    with pytest.raises(NotFoundError):
        services.invitation_sign_up(token="not-a-real-token", password=PASSWORD)

    revoked, revoked_token = _invite(user, workspace)
    services.invitation_revoke(actor=Actor(user=user), invitation_id=revoked.pk)
    with pytest.raises(InvitationNotPendingError):
        services.invitation_sign_up(token=revoked_token, password=PASSWORD)

    expiring, expiring_token = _invite(user, workspace)
    with (
        time_machine.travel(timezone.now() + timedelta(days=15)),
        pytest.raises(InvitationNotPendingError),
    ):
        services.invitation_sign_up(token=expiring_token, password=PASSWORD)
    assert not User.objects.filter(email__iexact=INVITEE).exists()

    expiring.status = Invitation.Status.EXPIRED
    expiring.save(update_fields=["status"])
    _, used_token = _invite(user, workspace)
    services.invitation_sign_up(token=used_token, password=PASSWORD)
    with pytest.raises(InvitationNotPendingError):
        services.invitation_sign_up(token=used_token, password=PASSWORD)
    assert User.objects.filter(email__iexact=INVITEE).count() == 1


# --- The invitation e-mail -------------------------------------------------------------------


def test_create_and_resend_email_the_link_after_commit(
    user: User, workspace: Any, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks() as callbacks:
        invitation, token = services.invitation_create(
            actor=Actor(user=user),
            workspace_id=workspace.pk,
            email=INVITEE,
            role=WorkspaceMembership.Role.EDITOR,
            base_url="https://herald.example.org",
        )
    assert mail.outbox == []  # nothing before the transaction commits
    for callback in callbacks:
        callback()
    assert [m.to for m in mail.outbox] == [[INVITEE]]
    assert f"https://herald.example.org/invitations/{token}/" in mail.outbox[0].body

    with django_capture_on_commit_callbacks(execute=True):
        _, again = services.invitation_resend(
            actor=Actor(user=user), invitation_id=invitation.pk, base_url="https://h.example"
        )
    assert len(mail.outbox) == 2
    assert f"https://h.example/invitations/{again}/" in mail.outbox[1].body


def test_no_email_without_a_base_url(
    user: User, workspace: Any, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        invitation, _ = _invite(user, workspace)
        services.invitation_resend(actor=Actor(user=user), invitation_id=invitation.pk)
    assert mail.outbox == []
