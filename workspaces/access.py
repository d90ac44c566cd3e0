"""Who is calling, and what they may reach. Every private operation goes through here."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from config.errors import NotFoundError, PermissionDeniedError
from config.types import ModelId
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

    def can_write(self) -> bool:
        return self.token is None or "api:write" in (self.token.permissions or [])

    def check_workspace_binding(self, workspace_id: ModelId) -> None:
        token = self.token
        if (
            token is not None
            and token.workspace_id is not None
            and str(token.workspace_id) != str(workspace_id)
        ):
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


def request_user(request: Any) -> User:
    """The signed-in user of a request that required it (an authenticated API view, a
    ``login_required`` page), typed: ``request.user`` also admits the anonymous user, which
    those views never see."""
    user: User = request.user
    return user


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


def require_workspace(
    actor: Actor,
    workspace_id: ModelId,
    *,
    role: WorkspaceMembership.Role = WorkspaceMembership.Role.VIEWER,
) -> WorkspaceAccess:
    """The workspace if the actor holds an active membership of at least ``role``.

    Unknown workspace → 404; no membership, inactive, role too low or token scope → 403.
    """
    pk = parse_id(workspace_id, what="workspace")
    # One query in the common case: the caller's membership joined with its workspace. Only
    # without a membership does a second query tell an unknown workspace (404) from one the
    # caller may not reach (403). (``[:1]``, not ``first()``: the pair is unique, and ordering
    # by the primary key costs SQL compilation for nothing.)
    found = list(
        WorkspaceMembership.objects.select_related(
            "workspace__organization", "workspace__plan"
        ).filter(workspace_id=pk, user_id=actor.user.pk)[:1]
    )
    if not found:
        _check_membership(actor, pk, None, role)  # raises: 404 or 403
    membership = found[0]
    _check_membership(actor, pk, (membership.role, membership.status), role)
    return WorkspaceAccess(workspace=membership.workspace, membership=membership)


def require_workspace_role(
    actor: Actor,
    workspace_id: ModelId,
    *,
    role: WorkspaceMembership.Role = WorkspaceMembership.Role.VIEWER,
    operation: str | None = None,
) -> uuid.UUID:
    """``require_workspace`` for callers that need only the check, not the workspace: the same
    answers (404, 403), from a lighter query. Returns the workspace ID.

    ``operation`` names what needs the role in the 403's detail, for checks that depend on the
    resource's state (docs/people-and-roles.md "Roles": deleting a publication with published destinations)."""
    pk = parse_id(workspace_id, what="workspace")
    found = list(
        WorkspaceMembership.objects.filter(workspace_id=pk, user_id=actor.user.pk).values_list(
            "role", "status"
        )[:1]
    )
    _check_membership(actor, pk, found[0] if found else None, role, operation)
    return pk


def _check_membership(
    actor: Actor,
    pk: uuid.UUID,
    membership: tuple[str, str] | None,
    role: WorkspaceMembership.Role,
    operation: str | None = None,
) -> None:
    """404, then token scope, then membership and role: the order of ``require_workspace``."""
    if membership is None and not Workspace.objects.filter(pk=pk).exists():
        raise NotFoundError(f"No workspace with ID {pk}.")
    actor.check_workspace_binding(pk)
    if membership is None or membership[1] != WorkspaceMembership.Status.ACTIVE:
        raise PermissionDeniedError(
            "You are not an active member of this workspace.", code="no_workspace_access"
        )
    if WORKSPACE_ROLE_RANK[membership[0]] < WORKSPACE_ROLE_RANK[role]:
        raise PermissionDeniedError(
            f"{operation or 'This operation'} needs the workspace role {role} or above.",
            code="role_too_low",
        )


def require_organization(
    actor: Actor, organization_id: ModelId, *, roles: tuple[str, ...] = ORG_ADMIN_ROLES
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
        raise PermissionDeniedError(
            "You are not a member of this organization.", code="no_organization_access"
        )
    if membership.role not in roles:
        raise PermissionDeniedError(
            f"This operation needs the organization role {' or '.join(roles)}.", code="role_too_low"
        )
    return organization, membership
