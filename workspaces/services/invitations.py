"""Invitations: create, resend, revoke and accept (the invitee joins the workspace and its
organization)."""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from config.errors import ConflictError, NotFoundError, PermissionDeniedError
from config.types import ModelId
from workspaces.access import Actor, parse_id, require_workspace
from workspaces.errors import InvitationNotPendingError
from workspaces.models import (
    AccessAuditEvent,
    Invitation,
    OrganizationMembership,
    Workspace,
    WorkspaceMembership,
)
from workspaces.services.audit import audit_record, require_instance_admin

Status = WorkspaceMembership.Status


def _invitation_token() -> tuple[str, str]:
    raw = secrets.token_urlsafe(32)
    return raw, hashlib.sha256(raw.encode()).hexdigest()


def _invitation_expiry() -> datetime:
    return timezone.now() + timedelta(days=settings.HERALD_INVITATION_DAYS)


@transaction.atomic
def invitation_create(
    *, actor: Actor, workspace_id: ModelId, email: str, role: WorkspaceMembership.Role
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
    return invitation, raw


def _lock_invitation(invitation_id: ModelId) -> Invitation:
    pk = parse_id(invitation_id, what="invitation")
    invitation = Invitation.objects.select_for_update().filter(pk=pk).first()
    if invitation is None:
        raise NotFoundError(f"No invitation with ID {pk}.")
    return invitation


@transaction.atomic
def invitation_resend(*, actor: Actor, invitation_id: ModelId) -> tuple[Invitation, str]:
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
    return invitation, raw


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
    return invitation


@transaction.atomic
def invitation_accept(*, actor: Actor, token: str) -> WorkspaceMembership:
    token_hash = hashlib.sha256(token.encode()).hexdigest()
    invitation = Invitation.objects.select_for_update().filter(token_hash=token_hash).first()
    if invitation is None:
        raise NotFoundError("No invitation matches this token.")
    if invitation.effective_status != Invitation.Status.PENDING:
        raise InvitationNotPendingError(f"The invitation is {invitation.effective_status}.")
    if invitation.email.lower() != actor.user.email.lower():
        raise PermissionDeniedError(
            "This invitation was sent to another e-mail address.", code="invitation_email_mismatch"
        )
    Workspace.objects.select_for_update().get(pk=invitation.workspace_id)
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
