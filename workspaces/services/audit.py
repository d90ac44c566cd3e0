"""The access audit (every role, member-state, invitation and removal change writes one event in
the same transaction as the change) and the instance administrator's check."""

from __future__ import annotations

from config.errors import PermissionDeniedError
from config.types import ModelId
from workspaces.access import Actor
from workspaces.models import AccessAuditEvent, Invitation, User


def audit_record(
    *,
    workspace_id: ModelId,
    action: str,
    actor: User | None,
    subject_user: User | None = None,
    subject_email: str = "",
    invitation: Invitation | None = None,
    previous_role: str = "",
    previous_status: str = "",
    role: str = "",
    status: str = "",
    subject_account_id: str = "",
) -> AccessAuditEvent:
    return AccessAuditEvent.objects.create(
        workspace_id=workspace_id,
        action=action,
        actor_user_id=str(actor.pk) if actor else "",
        subject_user_id=str(subject_user.pk) if subject_user else "",
        subject_email=subject_email or (subject_user.email if subject_user else ""),
        invitation_id=str(invitation.pk) if invitation else "",
        previous_role=previous_role,
        previous_status=previous_status,
        role=role,
        status=status,
        subject_account_id=subject_account_id,
    )


# --- Instance administrator ----------------------------------------------------------------


def require_instance_admin(actor: Actor) -> None:
    """The instance administrator (an active Django superuser in a browser session, never a bearer
    token) may manage any workspace from the Django admin without being a member of it. Services
    take ``instance_admin=True`` for that path; the audit names the administrator as the actor."""
    user = actor.user
    if actor.is_bearer or not (user.is_authenticated and user.is_active and user.is_superuser):
        raise PermissionDeniedError(
            "Only an instance administrator's browser session may do this.",
            code="instance_admin_required",
        )
