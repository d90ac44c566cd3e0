"""Writes for identity: organizations, workspaces, members, invitations, tokens, deletion, usage.

Every role, member-state, invitation and removal change writes an access-audit event in the
same transaction as the change itself.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import date, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from config.errors import (
    ConflictError,
    FieldValidationError,
    NotFoundError,
    PermissionDeniedError,
    PlanLimitError,
)
from workspaces import lifecycle
from workspaces.access import (
    ORG_ADMIN_ROLES,
    Actor,
    parse_id,
    require_organization,
    require_workspace,
)
from workspaces.errors import (
    InvitationNotPendingError,
    LastAdminError,
    RecentAuthenticationRequiredError,
    WorkspaceDeletionBlockedError,
)
from workspaces.models import (
    AccessAuditEvent,
    ApiToken,
    BillingRecord,
    Invitation,
    Organization,
    OrganizationMembership,
    Plan,
    UsageCounter,
    User,
    Workspace,
    WorkspaceLifecycleRecord,
    WorkspaceMembership,
)
from workspaces.tokens import new_token

Role = WorkspaceMembership.Role
Status = WorkspaceMembership.Status

# --- Access audit ---------------------------------------------------------------------------


def audit_record(
    *,
    workspace_id: Any,
    action: str,
    actor: User | None,
    subject_user: User | None = None,
    subject_email: str = "",
    invitation: Invitation | None = None,
    previous_role: str = "",
    previous_status: str = "",
    role: str = "",
    status: str = "",
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


def _check_timezone(timezone_name: str) -> str:
    """The same rule as the API's input check: an IANA time zone name."""
    import zoneinfo

    try:
        zoneinfo.ZoneInfo(timezone_name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, TypeError) as exc:
        raise FieldValidationError(
            [{"location": "body.timezone", "message": "Unknown IANA time zone.", "value": timezone_name}]
        ) from exc
    return timezone_name


# --- Organizations and workspaces -----------------------------------------------------------


@transaction.atomic
def organization_create(*, actor: Actor, name: str, owner: User | None = None) -> Organization:
    """The creator becomes the owner; the instance administrator (Django admin) names ``owner``."""
    if owner is None:
        actor.check_unscoped()
        owner = actor.user
    else:
        require_instance_admin(actor)
    organization = Organization.objects.create(name=name.strip())
    OrganizationMembership.objects.create(
        organization=organization, user=owner, role=OrganizationMembership.Role.OWNER
    )
    return organization


def _ensure_default_plan() -> Plan:
    plan, _ = Plan.objects.get_or_create(code="self_hosted", defaults={"name": "Self-hosted"})
    return plan


@transaction.atomic
def workspace_create(
    *,
    actor: Actor,
    organization_id: Any,
    name: str,
    timezone_name: str = "UTC",
    first_admin: User | None = None,
) -> Workspace:
    """The creator becomes the workspace's first admin. The instance administrator (Django
    admin) instead names ``first_admin``, an owner or admin of the organization; the audit event
    then names the instance administrator as the actor and ``first_admin`` as the subject."""
    if first_admin is None:
        organization, _ = require_organization(actor, organization_id)
        first_admin = actor.user
    else:
        require_instance_admin(actor)
        pk = parse_id(organization_id, what="organization")
        organization = Organization.objects.filter(pk=pk).first()
        if organization is None:
            raise NotFoundError(f"No organization with ID {pk}.")
        if not OrganizationMembership.objects.filter(
            organization=organization, user=first_admin, role__in=ORG_ADMIN_ROLES
        ).exists():
            message = "Must be an owner or admin of the organization."
            raise FieldValidationError([{"location": "body.first_admin", "message": message}])
    _check_timezone(timezone_name)
    plan = _ensure_default_plan()
    try:
        with transaction.atomic():
            workspace = Workspace.objects.create(
                organization=organization, name=name.strip(), timezone=timezone_name, plan=plan
            )
    except IntegrityError as exc:
        raise ConflictError(
            "A workspace with this name already exists in the organization.", code="name_taken"
        ) from exc
    WorkspaceMembership.objects.create(workspace=workspace, user=first_admin, role=Role.ADMIN)
    audit_record(
        workspace_id=workspace.pk,
        action=AccessAuditEvent.Action.MEMBER_ADDED,
        actor=actor.user,
        subject_user=first_admin,
        role=Role.ADMIN,
        status=Status.ACTIVE,
    )
    for hook in _workspace_created_hooks:
        hook(workspace)
    return workspace


_workspace_created_hooks: list[Any] = []


def register_workspace_created(hook: Any) -> None:
    """Apps that seed per-workspace data (e.g. the default voice profile) register here."""
    if hook not in _workspace_created_hooks:
        _workspace_created_hooks.append(hook)


@transaction.atomic
def workspace_update(
    *,
    actor: Actor,
    workspace_id: Any,
    name: str | None = None,
    timezone_name: str | None = None,
    plan_code: str | None = None,
    instance_admin: bool = False,
) -> Workspace:
    """Workspace admins rename and move time zones; only the instance administrator changes the
    plan (there is no API for it)."""
    if instance_admin:
        workspace = _lock_workspace_as_admin(actor, workspace_id, instance_admin=True)
    else:
        access = require_workspace(actor, workspace_id, role="admin")
        workspace = Workspace.objects.select_for_update().get(pk=access.workspace.pk)
    if name is not None:
        workspace.name = name.strip()
    if timezone_name is not None:
        workspace.timezone = _check_timezone(timezone_name)
    if plan_code is not None:
        require_instance_admin(actor)
        plan = Plan.objects.filter(pk=plan_code).first()
        if plan is None:
            raise FieldValidationError(
                [{"location": "body.plan", "message": "Unknown plan.", "value": plan_code}]
            )
        workspace.plan = plan
    try:
        with transaction.atomic():
            workspace.save()
    except IntegrityError as exc:
        raise ConflictError(
            "A workspace with this name already exists in the organization.", code="name_taken"
        ) from exc
    return workspace


# --- Members --------------------------------------------------------------------------------


def _lock_workspace_as_admin(actor: Actor, workspace_id: Any, *, instance_admin: bool = False) -> Workspace:
    """Lock the workspace row first, then check the actor's role under the lock: member changes
    of one workspace are serialized, and an admin demoted by a concurrent request that committed
    first can no longer act on the strength of a role read before that commit. With
    ``instance_admin`` the actor must be the instance administrator instead of a workspace admin."""
    pk = parse_id(workspace_id, what="workspace")
    if not instance_admin:
        list(Workspace.objects.select_for_update().filter(pk=pk).values_list("pk", flat=True))
        return require_workspace(actor, pk, role="admin").workspace
    require_instance_admin(actor)
    workspace = Workspace.objects.select_for_update().filter(pk=pk).first()
    if workspace is None:
        raise NotFoundError(f"No workspace with ID {pk}.")
    return workspace


def _lock_membership(workspace: Workspace, user_id: Any) -> WorkspaceMembership:
    pk = parse_id(user_id, what="member")
    membership = (
        WorkspaceMembership.objects.select_for_update()
        .select_related("user")
        .filter(workspace=workspace, user_id=pk)
        .first()
    )
    if membership is None:
        raise NotFoundError(f"No member with user ID {pk} in this workspace.")
    return membership


def _ensure_other_active_admin(workspace: Workspace, membership: WorkspaceMembership) -> None:
    if membership.role != Role.ADMIN or membership.status != Status.ACTIVE:
        return
    others = (
        WorkspaceMembership.objects.select_for_update()
        .filter(workspace=workspace, role=Role.ADMIN, status=Status.ACTIVE)
        .exclude(pk=membership.pk)
    )
    if not list(others):
        raise LastAdminError()


@transaction.atomic
def workspace_member_add(*, actor: Actor, workspace_id: Any, user_id: Any, role: str) -> WorkspaceMembership:
    """The instance administrator adds an existing user directly (the Django admin); members
    otherwise join by invitation. Like an accepted invitation, the user also joins the
    organization as a member; the audit event ``member.added`` names the administrator."""
    workspace = _lock_workspace_as_admin(actor, workspace_id, instance_admin=True)
    pk = parse_id(user_id, what="user")
    user = User.objects.filter(pk=pk).first()
    if user is None:
        raise NotFoundError(f"No user with ID {pk}.")
    if role not in Role.values:
        raise FieldValidationError([{"location": "body.role", "message": "Unknown role.", "value": role}])
    if WorkspaceMembership.objects.filter(workspace=workspace, user=user).exists():
        raise ConflictError("This person is already a member of the workspace.", code="already_member")
    membership = WorkspaceMembership.objects.create(workspace=workspace, user=user, role=role)
    OrganizationMembership.objects.get_or_create(
        organization_id=workspace.organization_id,
        user=user,
        defaults={"role": OrganizationMembership.Role.MEMBER},
    )
    audit_record(
        workspace_id=workspace.pk,
        action=AccessAuditEvent.Action.MEMBER_ADDED,
        actor=actor.user,
        subject_user=user,
        role=role,
        status=Status.ACTIVE,
    )
    return membership


@transaction.atomic
def workspace_member_update(
    *,
    actor: Actor,
    workspace_id: Any,
    user_id: Any,
    role: str | None = None,
    status: str | None = None,
    instance_admin: bool = False,
) -> WorkspaceMembership:
    workspace = _lock_workspace_as_admin(actor, workspace_id, instance_admin=instance_admin)
    membership = _lock_membership(workspace, user_id)
    previous_role, previous_status = membership.role, membership.status
    new_role = role or previous_role
    new_status = status or previous_status
    if (new_role, new_status) == (previous_role, previous_status):
        return membership
    if new_role != Role.ADMIN or new_status != Status.ACTIVE:
        _ensure_other_active_admin(workspace, membership)
    membership.role = new_role
    membership.status = new_status
    membership.save(update_fields=["role", "status", "updated_at"])
    common = {
        "workspace_id": workspace.pk,
        "actor": actor.user,
        "subject_user": membership.user,
        "previous_role": previous_role,
        "previous_status": previous_status,
        "role": new_role,
        "status": new_status,
    }
    if new_role != previous_role:
        audit_record(action=AccessAuditEvent.Action.MEMBER_ROLE_CHANGED, **common)
    if new_status != previous_status:
        action = (
            AccessAuditEvent.Action.MEMBER_DEACTIVATED
            if new_status == Status.INACTIVE
            else AccessAuditEvent.Action.MEMBER_REACTIVATED
        )
        audit_record(action=action, **common)
    return membership


@transaction.atomic
def workspace_member_remove(
    *, actor: Actor, workspace_id: Any, user_id: Any, instance_admin: bool = False
) -> None:
    workspace = _lock_workspace_as_admin(actor, workspace_id, instance_admin=instance_admin)
    membership = _lock_membership(workspace, user_id)
    _ensure_other_active_admin(workspace, membership)
    audit_record(
        workspace_id=workspace.pk,
        action=AccessAuditEvent.Action.MEMBER_REMOVED,
        actor=actor.user,
        subject_user=membership.user,
        previous_role=membership.role,
        previous_status=membership.status,
    )
    ApiToken.objects.filter(
        user=membership.user, workspace=workspace, revoked_at__isnull=True
    ).update(revoked_at=timezone.now())
    membership.delete()


# --- Invitations ----------------------------------------------------------------------------


def _invitation_token() -> tuple[str, str]:
    raw = secrets.token_urlsafe(32)
    return raw, hashlib.sha256(raw.encode()).hexdigest()


def _invitation_expiry() -> datetime:
    return timezone.now() + timedelta(days=settings.HERALD_INVITATION_DAYS)


@transaction.atomic
def invitation_create(
    *, actor: Actor, workspace_id: Any, email: str, role: str
) -> tuple[Invitation, str]:
    access = require_workspace(actor, workspace_id, role="admin")
    email = email.strip().lower()
    if WorkspaceMembership.objects.filter(workspace=access.workspace, user__email__iexact=email).exists():
        raise ConflictError("This person is already a member of the workspace.", code="already_member")
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


def _lock_invitation(invitation_id: Any) -> Invitation:
    pk = parse_id(invitation_id, what="invitation")
    invitation = Invitation.objects.select_for_update().filter(pk=pk).first()
    if invitation is None:
        raise NotFoundError(f"No invitation with ID {pk}.")
    return invitation


@transaction.atomic
def invitation_resend(*, actor: Actor, invitation_id: Any) -> tuple[Invitation, str]:
    invitation = _lock_invitation(invitation_id)
    require_workspace(actor, invitation.workspace_id, role="admin")
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
def invitation_revoke(*, actor: Actor, invitation_id: Any, instance_admin: bool = False) -> Invitation:
    invitation = _lock_invitation(invitation_id)
    if instance_admin:
        require_instance_admin(actor)
    else:
        require_workspace(actor, invitation.workspace_id, role="admin")
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


# --- API tokens -----------------------------------------------------------------------------


@transaction.atomic
def api_token_create(
    *,
    user: User,
    name: str,
    permissions: list[str],
    workspace_id: Any = None,
    expires_at: datetime | None = None,
) -> tuple[ApiToken, str]:
    if workspace_id is not None:
        require_workspace(Actor(user=user), workspace_id)
    if expires_at is not None:
        now = timezone.now()
        if expires_at <= now:
            raise FieldValidationError(
                [{"location": "body.expires_at", "message": "Must be in the future."}]
            )
        if expires_at > now + timedelta(days=settings.HERALD_TOKEN_MAX_DAYS):
            raise FieldValidationError(
                [{"location": "body.expires_at", "message": "At most 365 days ahead."}]
            )
    for _ in range(5):
        token_id, full_token, secret_hash = new_token()
        if not ApiToken.objects.filter(pk=token_id).exists():
            break
    token = ApiToken.objects.create(
        id=token_id,
        user=user,
        name=name.strip(),
        secret_hash=secret_hash,
        permissions=sorted(set(permissions)),
        workspace_id=parse_id(workspace_id, what="workspace") if workspace_id else None,
        expires_at=expires_at,
    )
    return token, full_token


@transaction.atomic
def api_token_revoke(*, user: User, token_id: str) -> ApiToken:
    token = ApiToken.objects.select_for_update().filter(pk=token_id, user=user).first()
    if token is None:
        raise NotFoundError(f"No API token with ID {token_id[:16]!r}.")
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
    return token


# --- Plans and usage ------------------------------------------------------------------------

PLAN_METRICS = {
    "connected_accounts": "max_connected_accounts",
    "scheduled_publications": "max_scheduled_publications_per_month",
    "discovery_calls": "max_discovery_calls_per_month",
}


def usage_period(today: date | None = None) -> tuple[date, date]:
    today = today or timezone.now().date()
    start = today.replace(day=1)
    end = (start + timedelta(days=32)).replace(day=1)
    return start, end


def plan_limit(workspace: Workspace, metric: str) -> int | None:
    value = getattr(workspace.plan, PLAN_METRICS[metric])
    return int(value) if value is not None else None


def plan_check_current(*, workspace: Workspace, metric: str, current: int) -> None:
    """For gauge-like limits (connected accounts): refuse when one more would exceed it."""
    limit = plan_limit(workspace, metric)
    if limit is not None and current + 1 > limit:
        raise PlanLimitError(f"The {workspace.plan.name} plan allows {limit} {metric.replace('_', ' ')}.")


@transaction.atomic
def usage_consume(*, workspace: Workspace, metric: str, amount: int = 1) -> None:
    """Count one use of a monthly-limited operation, or raise 403 ``plan_limit``."""
    start, _ = usage_period()
    counter, _ = UsageCounter.objects.get_or_create(
        workspace=workspace, metric=metric, period_start=start
    )
    counter = UsageCounter.objects.select_for_update().get(pk=counter.pk)
    limit = plan_limit(workspace, metric)
    if limit is not None and counter.count + amount > limit:
        raise PlanLimitError(
            f"The {workspace.plan.name} plan allows {limit} {metric.replace('_', ' ')} per month."
        )
    UsageCounter.objects.filter(pk=counter.pk).update(count=F("count") + amount)


# --- Workspace deletion ---------------------------------------------------------------------


def _require_owner(actor: Actor, workspace_id: Any) -> Workspace:
    pk = parse_id(workspace_id, what="workspace")
    workspace = Workspace.objects.select_related("organization", "plan").filter(pk=pk).first()
    if workspace is None:
        raise NotFoundError(f"No workspace with ID {pk}.")
    if actor.is_bearer:
        raise PermissionDeniedError(
            "Workspace deletion needs the organization owner's browser session.",
            code="session_required",
        )
    require_organization(actor, workspace.organization_id, roles=("owner",))
    return workspace


def workspace_deletion_blockers(workspace: Workspace) -> list[lifecycle.Blocker]:
    blockers: list[lifecycle.Blocker] = []
    if Workspace.objects.filter(organization_id=workspace.organization_id).count() <= 1:
        blockers.append(
            lifecycle.Blocker("final_workspace", "This is the organization's only workspace.")
        )
    paid_active = BillingRecord.objects.filter(
        workspace_id=workspace.pk, status=BillingRecord.Status.ACTIVE
    ).exclude(plan_code="self_hosted")
    if paid_active.exists():
        blockers.append(
            lifecycle.Blocker("active_billing", "Cancel the workspace's active subscription first.")
        )
    for check in lifecycle.blocker_checks():
        blockers.extend(check(workspace))
    return blockers


def workspace_deletion_preview(*, actor: Actor, workspace_id: Any) -> dict[str, Any]:
    workspace = _require_owner(actor, workspace_id)
    data_loss: dict[str, int] = {
        "members": WorkspaceMembership.objects.filter(workspace=workspace).count(),
        "invitations": Invitation.objects.filter(workspace=workspace).count(),
        "api_tokens": ApiToken.objects.filter(workspace=workspace).count(),
    }
    for summary in lifecycle.data_summaries():
        data_loss.update(summary(workspace))
    retained = {
        "access_audit_events": AccessAuditEvent.objects.filter(workspace_id=workspace.pk).count(),
        "billing_records": BillingRecord.objects.filter(workspace_id=workspace.pk).count(),
        "lifecycle_record": 1,
    }
    blockers = workspace_deletion_blockers(workspace)
    return {
        "workspace_id": str(workspace.pk),
        "workspace_name": workspace.name,
        "confirm_name": workspace.name,
        "data_loss": data_loss,
        "retained_records": retained,
        "recovery": (
            "Deletion is permanent: there is no undo and no soft-delete period. Export what you "
            "need first. Access audit events, billing records and a workspace.deleted lifecycle "
            "record are kept."
        ),
        "blockers": [{"code": b.code, "detail": b.detail} for b in blockers],
        "can_delete": not blockers,
    }


@transaction.atomic
def workspace_delete(
    *,
    actor: Actor,
    workspace_id: Any,
    confirm_name: str,
    password_confirmed: bool,
    authenticated_at: float | None,
) -> None:
    """``password_confirmed``: the caller checked the current password first, inside the
    client's failed-authentication budget (``workspaces.authentication``); a wrong one never
    reaches this function."""
    workspace = _require_owner(actor, workspace_id)
    workspace = Workspace.objects.select_for_update().get(pk=workspace.pk)
    recent = (
        authenticated_at is not None
        and timezone.now().timestamp() - authenticated_at <= settings.HERALD_RECENT_AUTH_SECONDS
    )
    if not recent and not password_confirmed:
        raise RecentAuthenticationRequiredError()
    if confirm_name != workspace.name:
        raise FieldValidationError(
            [
                {
                    "location": "body.confirm_name",
                    "message": "Must equal the workspace's exact name.",
                    "value": confirm_name,
                }
            ]
        )
    blockers = workspace_deletion_blockers(workspace)
    if blockers:
        raise WorkspaceDeletionBlockedError(
            "Deletion is blocked: " + "; ".join(f"{b.code}: {b.detail}" for b in blockers)
        )
    WorkspaceLifecycleRecord.objects.create(
        workspace_id=workspace.pk,
        organization_id=workspace.organization_id,
        workspace_name=workspace.name,
        actor_user_id=str(actor.user.pk),
    )
    workspace.delete()
