"""Who is calling, and what they may reach. Every private operation goes through here."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from config.errors import NotFoundError, PermissionDeniedError
from workspaces.models import (
    ApiToken,
    Organization,
    OrganizationMembership,
    User,
    Workspace,
    WorkspaceMembership,
)

WORKSPACE_ROLE_RANK = {"viewer": 0, "editor": 1, "admin": 2}
ORG_ADMIN_ROLES = ("owner", "admin")


@dataclass(frozen=True)
class Actor:
    user: User
    token: ApiToken | None = None

    @property
    def is_bearer(self) -> bool:
        return self.token is not None

    @property
    def is_session(self) -> bool:
        return self.token is None

    def can_write(self) -> bool:
        return self.token is None or "api:write" in (self.token.permissions or [])

    def check_workspace_binding(self, workspace_id: Any) -> None:
        token = self.token
        if token is not None and token.workspace_id is not None and str(token.workspace_id) != str(workspace_id):
            raise PermissionDeniedError(
                "This API token is bound to another workspace.", code="token_workspace_scope"
            )

    def check_unscoped(self) -> None:
        """Organization-level resources are out of reach of workspace-bound tokens."""
        if self.token is not None and self.token.workspace_id is not None:
            raise PermissionDeniedError(
                "A workspace-bound API token cannot reach organization resources.",
                code="token_workspace_scope",
            )


def actor_from_request(request: Any) -> Actor:
    auth = getattr(request, "auth", None)
    return Actor(user=request.user, token=auth if isinstance(auth, ApiToken) else None)


def parse_id(value: Any, *, what: str) -> uuid.UUID:
    """Opaque string IDs: anything that is not one of ours is simply unknown (404)."""
    try:
        return uuid.UUID(str(value))
    except (TypeError, ValueError, AttributeError) as exc:
        raise NotFoundError(f"No {what} with ID {str(value)[:64]!r}.") from exc


@dataclass(frozen=True)
class WorkspaceAccess:
    workspace: Workspace
    membership: WorkspaceMembership

    @property
    def role(self) -> str:
        return self.membership.role

    @property
    def is_admin(self) -> bool:
        return self.membership.role == WorkspaceMembership.Role.ADMIN


def require_workspace(actor: Actor, workspace_id: Any, *, role: str = "viewer") -> WorkspaceAccess:
    """The workspace if the actor holds an active membership of at least ``role``.

    Unknown workspace → 404; no membership, inactive, role too low or token scope → 403.
    """
    pk = parse_id(workspace_id, what="workspace")
    workspace = Workspace.objects.select_related("organization", "plan").filter(pk=pk).first()
    if workspace is None:
        raise NotFoundError(f"No workspace with ID {pk}.")
    actor.check_workspace_binding(workspace.pk)
    membership = WorkspaceMembership.objects.filter(workspace=workspace, user=actor.user).first()
    if membership is None or membership.status != WorkspaceMembership.Status.ACTIVE:
        raise PermissionDeniedError("You are not an active member of this workspace.", code="no_workspace_access")
    if WORKSPACE_ROLE_RANK[membership.role] < WORKSPACE_ROLE_RANK[role]:
        raise PermissionDeniedError(
            f"This operation needs the workspace role {role} or above.", code="role_too_low"
        )
    return WorkspaceAccess(workspace=workspace, membership=membership)


def require_organization(
    actor: Actor, organization_id: Any, *, roles: tuple[str, ...] = ORG_ADMIN_ROLES
) -> tuple[Organization, OrganizationMembership]:
    pk = parse_id(organization_id, what="organization")
    organization = Organization.objects.filter(pk=pk).first()
    if organization is None:
        raise NotFoundError(f"No organization with ID {pk}.")
    actor.check_unscoped()
    membership = OrganizationMembership.objects.filter(
        organization=organization, user=actor.user
    ).first()
    if membership is None:
        raise PermissionDeniedError("You are not a member of this organization.", code="no_organization_access")
    if membership.role not in roles:
        raise PermissionDeniedError(
            f"This operation needs the organization role {' or '.join(roles)}.", code="role_too_low"
        )
    return organization, membership
