"""Deleting a workspace: the organization owner's preview (data lost, records kept, blockers)
and the deletion itself, which keeps a lifecycle record."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from config.errors import FieldValidationError, NotFoundError, PermissionDeniedError
from config.types import ModelId
from workspaces import lifecycle
from workspaces.access import Actor, parse_id, require_organization
from workspaces.errors import RecentAuthenticationRequiredError, WorkspaceDeletionBlockedError
from workspaces.models import (
    AccessAuditEvent,
    ApiToken,
    BillingRecord,
    Invitation,
    Workspace,
    WorkspaceLifecycleRecord,
    WorkspaceMembership,
)
from workspaces.services.members import organization_members_without_workspaces_leave


def _require_owner(actor: Actor, workspace_id: ModelId) -> Workspace:
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
    for check in lifecycle.BLOCKER_CHECKS.all():
        blockers.extend(check(workspace))
    return blockers


def workspace_deletion_preview(*, actor: Actor, workspace_id: ModelId) -> dict[str, Any]:
    workspace = _require_owner(actor, workspace_id)
    data_loss: dict[str, int] = {
        "members": WorkspaceMembership.objects.filter(workspace=workspace).count(),
        "invitations": Invitation.objects.filter(workspace=workspace).count(),
        "api_tokens": ApiToken.objects.filter(workspace=workspace).count(),
    }
    for summary in lifecycle.DATA_SUMMARIES.all():
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
    workspace_id: ModelId,
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
        raise FieldValidationError.at(
            "body.confirm_name", "Must equal the workspace's exact name.", value=confirm_name
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
    member_ids = list(workspace.memberships.values_list("user_id", flat=True))
    workspace.delete()
    organization_members_without_workspaces_leave(
        organization_id=workspace.organization_id, user_ids=member_ids
    )
