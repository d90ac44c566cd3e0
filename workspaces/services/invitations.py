"""Invitations: create, resend, revoke and accept (the invitee joins the workspace and its
organization), and sign up from an invitation (a new account accepts it in the same transaction).

The link goes only to the invitee's mailbox. When the instance sends e-mail (an SMTP
configuration, or the console of ``local``), creating or resending an invitation e-mails its link
once the transaction commits (``workspaces.mail``) and nobody else ever sees it: the invitation's
``delivery`` is ``email``, and opening the link proves the mailbox (``services.accounts``). Only an
instance that cannot send e-mail hands the link to the inviter, to pass on by hand
(:func:`invitation_link_for_inviter`; ``delivery`` ``manual``); an account made from such a link
stays unverified.

Sending is limited per day: per inviter, per workspace and per recipient address
(``HERALD_INVITATIONS_PER_*_PER_DAY``; beyond, 429 with ``Retry-After``).
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth import password_validation
from django.db import IntegrityError, transaction
from django.utils import timezone

from config.errors import ConflictError, NotFoundError, PermissionDeniedError, RateLimitedError
from config.limits import daily_quota_hit
from config.names import display_name_or_invalid
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
from workspaces.services.accounts import account_prove_mailbox
from workspaces.services.audit import audit_record, require_instance_admin

Status = WorkspaceMembership.Status


def _token_hash(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def _invitation_token() -> tuple[str, str]:
    raw = secrets.token_urlsafe(32)
    return raw, _token_hash(raw)


def _invitation_expiry() -> datetime:
    return timezone.now() + timedelta(days=settings.HERALD_INVITATION_DAYS)


def _delivery() -> str:
    if settings.HERALD_EMAIL_ENABLED:
        return Invitation.Delivery.EMAIL
    return Invitation.Delivery.MANUAL


def _email_after_commit(invitation: Invitation, raw: str, base_url: str | None) -> None:
    """The invitee gets the link once the transaction commits. The link is absolute: the
    request's origin (``base_url``) or ``HERALD_PUBLIC_URL``; with neither (an in-process caller
    without a request), no e-mail."""
    base = base_url or settings.HERALD_PUBLIC_URL
    if invitation.delivery == Invitation.Delivery.EMAIL and base:
        mail.send_invitation_after_commit(invitation, mail.invitation_accept_url(str(base), raw))


def invitation_link_for_inviter(invitation: Invitation, raw: str, base_url: str) -> str | None:
    """The accept link the inviter may see: only for an invitation the instance could not
    e-mail (``delivery`` ``manual``), to pass on by hand; ``None`` for one that went by e-mail,
    whose link belongs to the invitee's mailbox alone."""
    if invitation.delivery != Invitation.Delivery.MANUAL:
        return None
    return mail.invitation_accept_url(base_url, raw)


def _within_daily_quotas(actor: Actor, workspace_id: ModelId, email: str) -> None:
    """429 once the inviter, the workspace or the recipient address has had its invitations of
    the day (creations and resends alike). The address is counted by its hash: the limits store
    never holds it."""
    recipient = hashlib.sha256(email.lower().encode()).hexdigest()[:32]
    wait = daily_quota_hit(
        [
            (f"invite:user:{actor.user.pk}", settings.HERALD_INVITATIONS_PER_USER_PER_DAY),
            (f"invite:ws:{workspace_id}", settings.HERALD_INVITATIONS_PER_WORKSPACE_PER_DAY),
            (f"invite:to:{recipient}", settings.HERALD_INVITATIONS_PER_RECIPIENT_PER_DAY),
        ]
    )
    if wait:
        raise RateLimitedError(
            "Too many invitations today (per person, per workspace and per recipient); "
            "try again later.",
            retry_after=wait,
        )


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
    _within_daily_quotas(actor, access.workspace.pk, email)
    raw, token_hash = _invitation_token()
    invitation = Invitation.objects.create(
        workspace=access.workspace,
        email=email,
        role=role,
        token_hash=token_hash,
        invited_by=actor.user,
        expires_at=_invitation_expiry(),
        delivery=_delivery(),
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
    _within_daily_quotas(actor, invitation.workspace_id, invitation.email)
    raw, token_hash = _invitation_token()
    invitation.token_hash = token_hash
    invitation.expires_at = _invitation_expiry()
    invitation.delivery = _delivery()
    invitation.save(update_fields=["token_hash", "expires_at", "delivery"])
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
    """Join the workspace. An invitation that came by e-mail proves the mailbox: an account not
    yet verified is verified now (``account_prove_mailbox``: sessions end, earlier tokens are
    revoked; a page that accepted keeps its own session with ``update_session_auth_hash``)."""
    invitation = _lock_pending_invitation(token)
    membership = _accept(actor, invitation)
    if invitation.delivery == Invitation.Delivery.EMAIL and not actor.user.email_verified:
        account_prove_mailbox(user=actor.user)
    return membership


def _accept(actor: Actor, invitation: Invitation) -> WorkspaceMembership:
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
    """A person signs up from an invitation: the account of exactly the invited e-mail gets
    ``password`` and accepts the invitation (``invitation_accept``, with its audit event), all in
    one transaction, so a failed acceptance leaves no account behind. The answer is the same
    whether or not the address already had an account:

    * no account yet: it is created, verified when the link came by e-mail;
    * an account exists and the link came by e-mail: holding that link proves the mailbox as a
      password reset does, so the password is set like a reset, every session ends and every
      token created before is revoked (``account_prove_mailbox``), and the owner takes back an
      account someone else may have made for their address.

    Raises ``NotFoundError`` (unknown token), ``InvitationNotPendingError`` (used, revoked or
    expired, or its issuer lost the authority), ``FieldValidationError`` (the display name breaks
    the names rule, at ``body.name``), Django's ``ValidationError`` (the password fails
    ``AUTH_PASSWORD_VALIDATORS``) and ``InvitationAccountExistsError`` (an account exists and the
    link was passed on by hand, which proves nothing: sign in to accept). The returned
    membership's ``user`` is the account.
    """
    invitation = _lock_pending_invitation(token)
    name = display_name_or_invalid(display_name)
    by_email = invitation.delivery == Invitation.Delivery.EMAIL
    existing = User.objects.select_for_update().filter(email__iexact=invitation.email).first()
    if existing is not None:
        if not by_email or not existing.is_active:
            raise InvitationAccountExistsError()
        password_validation.validate_password(password, existing)
        existing.set_password(password)
        existing.name = name or existing.name
        existing.save(update_fields=["password", "name"])
        membership = _accept(Actor(user=existing), invitation)
        account_prove_mailbox(user=existing)
        return membership
    candidate = User(email=invitation.email, name=name)
    password_validation.validate_password(password, candidate)
    try:
        user = User.objects.create_user(invitation.email, password, name=name)
    except IntegrityError as exc:  # the case-insensitive unique e-mail (user_email_ci_unique)
        raise InvitationAccountExistsError() from exc
    return invitation_accept(actor=Actor(user=user), token=token)
