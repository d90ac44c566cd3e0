"""Workspace members: the instance administrator adds one directly; admins change roles and
states and remove members, never leaving the workspace without an active admin.

Authority ends with the role: a member who stops being an active admin (demoted, deactivated or
removed) loses the pending invitations they issued (revoked, audited). A person removed from the
last workspace of an organization in which they are a plain ``member`` leaves the organization
too (owners and organization admins keep their role)."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from config.errors import ConflictError, FieldValidationError, NotFoundError
from config.types import ModelId
from workspaces.access import Actor, parse_id
from workspaces.errors import LastAdminError
from workspaces.models import (
    AccessAuditEvent,
    ApiToken,
    OrganizationMembership,
    User,
    Workspace,
    WorkspaceMembership,
)
from workspaces.services.audit import audit_record
from workspaces.services.invitations import invitations_revoke_issued_by
from workspaces.services.workspaces import _lock_workspace_as_admin

Role = WorkspaceMembership.Role
Status = WorkspaceMembership.Status


def _lock_membership(workspace: Workspace, user_id: ModelId) -> WorkspaceMembership:
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
def workspace_member_add(
    *, actor: Actor, workspace_id: ModelId, user_id: ModelId, role: Role
) -> WorkspaceMembership:
    """The instance administrator adds an existing user directly (the Django admin); members
    otherwise join by invitation. Like an accepted invitation, the user also joins the
    organization as a member; the audit event ``member.added`` names the administrator."""
    workspace = _lock_workspace_as_admin(actor, workspace_id, instance_admin=True)
    pk = parse_id(user_id, what="user")
    user = User.objects.filter(pk=pk).first()
    if user is None:
        raise NotFoundError(f"No user with ID {pk}.")
    if role not in Role.values:
        raise FieldValidationError.at("body.role", "Unknown role.", value=role)
    if WorkspaceMembership.objects.filter(workspace=workspace, user=user).exists():
        raise ConflictError(
            "This person is already a member of the workspace.", code="already_member"
        )
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
    workspace_id: ModelId,
    user_id: ModelId,
    role: Role | None = None,
    status: Status | None = None,
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
    common: dict[str, Any] = {
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
    if new_role != Role.ADMIN or new_status != Status.ACTIVE:
        invitations_revoke_issued_by(actor=actor, workspace_id=workspace.pk, issuer=membership.user)
    return membership


@transaction.atomic
def workspace_member_remove(
    *, actor: Actor, workspace_id: ModelId, user_id: ModelId, instance_admin: bool = False
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
    invitations_revoke_issued_by(actor=actor, workspace_id=workspace.pk, issuer=membership.user)
    membership.delete()
    organization_members_without_workspaces_leave(
        organization_id=workspace.organization_id, user_ids=[membership.user_id]
    )


def organization_members_without_workspaces_leave(
    *, organization_id: ModelId, user_ids: list[Any]
) -> None:
    """A plain ``member`` of an organization is one through its workspaces: with none left (a
    removal, a workspace deletion), the organization membership ends; it would still let them
    read the organization and its theme assets. Owners and organization admins hold their role
    in their own right."""
    still_in = WorkspaceMembership.objects.filter(
        workspace__organization_id=organization_id, user_id__in=user_ids
    ).values("user_id")
    OrganizationMembership.objects.filter(
        organization_id=organization_id,
        user_id__in=user_ids,
        role=OrganizationMembership.Role.MEMBER,
    ).exclude(user_id__in=still_in).delete()
