"""Invitations: create, resend, revoke and accept (the invitee joins the workspace and its
organization), and sign up from an invitation (a new account accepts it in the same transaction).

Creating or resending an invitation e-mails its link to the invitee once the transaction commits,
when the caller passes the instance's ``base_url`` (the link is absolute) and the instance sends
e-mail (``workspaces.mail``).
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth import password_validation
from django.db import IntegrityError, transaction
from django.utils import timezone

from config.errors import ConflictError, NotFoundError, PermissionDeniedError
from config.types import ModelId
from workspaces import mail
from workspaces.access import Actor, parse_id, require_workspace
from workspaces.errors import InvitationAccountExistsError, InvitationNotPendingError
from workspaces.models import (
    AccessAuditEvent,
    Invitation,
    OrganizationMembership,
    User,
    Workspace,
    WorkspaceMembership,
)
from workspaces.services.audit import audit_record, require_instance_admin

Status = WorkspaceMembership.Status


def _token_hash(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def _invitation_token() -> tuple[str, str]:
    raw = secrets.token_urlsafe(32)
    return raw, _token_hash(raw)


def _invitation_expiry() -> datetime:
    return timezone.now() + timedelta(days=settings.HERALD_INVITATION_DAYS)


def _email_after_commit(invitation: Invitation, raw: str, base_url: str | None) -> None:
    """The invitee gets the link once the transaction commits; no ``base_url``, no e-mail."""
    if base_url is not None:
        mail.send_invitation_after_commit(invitation, mail.invitation_accept_url(base_url, raw))


@transaction.atomic
def invitation_create(
    *,
    actor: Actor,
    workspace_id: ModelId,
    email: str,
    role: WorkspaceMembership.Role,
    base_url: str | None = None,
) -> tuple[Invitation, str]:
    access = require_workspace(actor, workspace_id, role=WorkspaceMembership.Role.ADMIN)
    email = email.strip().lower()
    if WorkspaceMembership.objects.filter(
        workspace=access.workspace, user__email__iexact=email
    ).exists():
        raise ConflictError(
            "This person is already a member of the workspace.", code="already_member"
        )
    # An expired pending invitation is closed before a new one is issued.
    for stale in Invitation.objects.select_for_update().filter(
        workspace=access.workspace, email__iexact=email, status=Invitation.Status.PENDING
    ):
        if stale.expires_at > timezone.now():
            raise ConflictError(
                "A pending invitation for this e-mail already exists; resend it instead.",
                code="invitation_exists",
            )
        stale.status = Invitation.Status.EXPIRED
        stale.save(update_fields=["status"])
    raw, token_hash = _invitation_token()
    invitation = Invitation.objects.create(
        workspace=access.workspace,
        email=email,
        role=role,
        token_hash=token_hash,
        invited_by=actor.user,
        expires_at=_invitation_expiry(),
    )
    audit_record(
        workspace_id=access.workspace.pk,
        action=AccessAuditEvent.Action.INVITATION_CREATED,
        actor=actor.user,
        subject_email=email,
        invitation=invitation,
        role=role,
        status=Invitation.Status.PENDING,
    )
    _email_after_commit(invitation, raw, base_url)
    return invitation, raw


def _lock_invitation(invitation_id: ModelId) -> Invitation:
    pk = parse_id(invitation_id, what="invitation")
    invitation = Invitation.objects.select_for_update().filter(pk=pk).first()
    if invitation is None:
        raise NotFoundError(f"No invitation with ID {pk}.")
    return invitation


@transaction.atomic
def invitation_resend(
    *, actor: Actor, invitation_id: ModelId, base_url: str | None = None
) -> tuple[Invitation, str]:
    invitation = _lock_invitation(invitation_id)
    require_workspace(actor, invitation.workspace_id, role=WorkspaceMembership.Role.ADMIN)
    if invitation.status != Invitation.Status.PENDING:
        raise InvitationNotPendingError()
    previous_status = invitation.effective_status
    raw, token_hash = _invitation_token()
    invitation.token_hash = token_hash
    invitation.expires_at = _invitation_expiry()
    invitation.save(update_fields=["token_hash", "expires_at"])
    audit_record(
        workspace_id=invitation.workspace_id,
        action=AccessAuditEvent.Action.INVITATION_RESENT,
        actor=actor.user,
        subject_email=invitation.email,
        invitation=invitation,
        previous_status=previous_status,
        role=invitation.role,
        status=Invitation.Status.PENDING,
    )
    _email_after_commit(invitation, raw, base_url)
    return invitation, raw


def invitations_revoke_issued_by(*, actor: Actor, workspace_id: ModelId, issuer: User) -> int:
    """Revoke the pending invitations ``issuer`` sent for the workspace (each audited, ``actor``
    named): an admin who is removed, demoted or deactivated loses the invitations they issued
    with that authority, so none of them can bring them (or anyone) back in. Runs inside the
    caller's transaction. Returns how many were revoked."""
    pending = Invitation.objects.select_for_update().filter(
        workspace_id=workspace_id, invited_by=issuer, status=Invitation.Status.PENDING
    )
    revoked = 0
    for invitation in pending:
        _revoke(actor, invitation)
        revoked += 1
    return revoked


def _revoke(actor: Actor, invitation: Invitation) -> None:
    previous_status = invitation.effective_status
    invitation.status = Invitation.Status.REVOKED
    invitation.save(update_fields=["status"])
    audit_record(
        workspace_id=invitation.workspace_id,
        action=AccessAuditEvent.Action.INVITATION_REVOKED,
        actor=actor.user,
        subject_email=invitation.email,
        invitation=invitation,
        previous_status=previous_status,
        role=invitation.role,
        status=Invitation.Status.REVOKED,
    )


@transaction.atomic
def invitation_revoke(
    *, actor: Actor, invitation_id: ModelId, instance_admin: bool = False
) -> Invitation:
    invitation = _lock_invitation(invitation_id)
    if instance_admin:
        require_instance_admin(actor)
    else:
        require_workspace(actor, invitation.workspace_id, role=WorkspaceMembership.Role.ADMIN)
    if invitation.status != Invitation.Status.PENDING:
        raise InvitationNotPendingError()
    _revoke(actor, invitation)
    return invitation


def _lock_pending_invitation(token: str) -> Invitation:
    invitation = (
        Invitation.objects.select_for_update().filter(token_hash=_token_hash(token)).first()
    )
    if invitation is None:
        raise NotFoundError("No invitation matches this token.")
    if invitation.effective_status != Invitation.Status.PENDING:
        raise InvitationNotPendingError(f"The invitation is {invitation.effective_status}.")
    return invitation


def invitation_issuer_may_grant(invitation: Invitation) -> bool:
    """Whether whoever issued ``invitation`` still may grant its role: an active user who is an
    active admin of the workspace now (granting any role is an admin's). An invitation outlives
    neither its issuer's removal, demotion or deactivation nor the issuer's account."""
    issuer = invitation.invited_by
    if issuer is None or not issuer.is_active:
        return False
    return WorkspaceMembership.objects.filter(
        workspace_id=invitation.workspace_id,
        user=issuer,
        role=WorkspaceMembership.Role.ADMIN,
        status=Status.ACTIVE,
    ).exists()


@transaction.atomic
def invitation_accept(*, actor: Actor, token: str) -> WorkspaceMembership:
    invitation = _lock_pending_invitation(token)
    if invitation.email.lower() != actor.user.email.lower():
        raise PermissionDeniedError(
            "This invitation was sent to another e-mail address.", code="invitation_email_mismatch"
        )
    Workspace.objects.select_for_update().get(pk=invitation.workspace_id)
    if not invitation_issuer_may_grant(invitation):
        raise InvitationNotPendingError(
            "The invitation was withdrawn: the person who sent it may no longer grant this role."
        )
    membership = WorkspaceMembership.objects.filter(
        workspace_id=invitation.workspace_id, user=actor.user
    ).first()
    previous_role = membership.role if membership else ""
    previous_status = membership.status if membership else ""
    if membership is None:
        membership = WorkspaceMembership.objects.create(
            workspace_id=invitation.workspace_id, user=actor.user, role=invitation.role
        )
    else:
        membership.role = invitation.role
        membership.status = Status.ACTIVE
        membership.save(update_fields=["role", "status", "updated_at"])
    invitation.status = Invitation.Status.ACCEPTED
    invitation.accepted_at = timezone.now()
    invitation.accepted_by = actor.user
    invitation.save(update_fields=["status", "accepted_at", "accepted_by"])
    organization_id = Workspace.objects.values_list("organization_id", flat=True).get(
        pk=invitation.workspace_id
    )
    OrganizationMembership.objects.get_or_create(
        organization_id=organization_id,
        user=actor.user,
        defaults={"role": OrganizationMembership.Role.MEMBER},
    )
    audit_record(
        workspace_id=invitation.workspace_id,
        action=AccessAuditEvent.Action.INVITATION_ACCEPTED,
        actor=actor.user,
        subject_user=actor.user,
        invitation=invitation,
        previous_role=previous_role,
        previous_status=previous_status,
        role=invitation.role,
        status=Status.ACTIVE,
    )
    return membership


@transaction.atomic
def invitation_sign_up(*, token: str, password: str, display_name: str = "") -> WorkspaceMembership:
    """A person without an account signs up from an invitation: the account is created with
    exactly the invited e-mail and accepts the invitation (``invitation_accept``, with its audit
    event), all in one transaction, so a failed acceptance leaves no account behind.

    Raises ``NotFoundError`` (unknown token), ``InvitationNotPendingError`` (used, revoked or
    expired), Django's ``ValidationError`` (the password fails ``AUTH_PASSWORD_VALIDATORS``) and
    ``InvitationAccountExistsError`` (an account with this e-mail exists: sign in to accept).
    The returned membership's ``user`` is the new account.
    """
    invitation = _lock_pending_invitation(token)
    candidate = User(email=invitation.email, name=display_name)
    password_validation.validate_password(password, candidate)
    try:
        user = User.objects.create_user(invitation.email, password, name=display_name)
    except IntegrityError as exc:  # the case-insensitive unique e-mail (user_email_ci_unique)
        raise InvitationAccountExistsError() from exc
    return invitation_accept(actor=Actor(user=user), token=token)
