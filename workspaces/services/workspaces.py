"""Creating and updating organizations and workspaces, and locking a workspace for an admin's
change."""

from __future__ import annotations

from collections.abc import Callable

from django.db import IntegrityError, transaction

from config.errors import ConflictError, FieldValidationError, NotFoundError
from config.names import name_or_invalid
from config.registry import Many
from config.types import ModelId
from workspaces.access import (
    ORG_ADMIN_ROLES,
    Actor,
    parse_id,
    require_organization,
    require_workspace,
)
from workspaces.models import (
    AccessAuditEvent,
    Organization,
    OrganizationMembership,
    Plan,
    User,
    Workspace,
    WorkspaceMembership,
)
from workspaces.services.audit import audit_record, require_instance_admin

# Apps that seed per-workspace data (the voice app's "Default voice") register here; each hook
# runs inside workspace_create's transaction, after the first admin's membership is written.
WORKSPACE_CREATED: Many[Callable[[Workspace], object]] = Many("workspaces.created")

Role = WorkspaceMembership.Role
Status = WorkspaceMembership.Status

# The names' rule (config.names) is applied here, not only by the API's serializers: the Django
# admin calls these services with what an operator typed.
ORGANIZATION_NAME_MAX = 120
WORKSPACE_NAME_MAX = 80


def _check_timezone(timezone_name: str) -> str:
    """The same rule as the API's input check: an IANA time zone name."""
    import zoneinfo

    try:
        zoneinfo.ZoneInfo(timezone_name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, TypeError) as exc:
        raise FieldValidationError.at(
            "body.timezone", "Unknown IANA time zone.", value=timezone_name
        ) from exc
    return timezone_name


@transaction.atomic
def organization_create(*, actor: Actor, name: str, owner: User | None = None) -> Organization:
    """The creator becomes the owner; the instance administrator (Django admin) names ``owner``."""
    if owner is None:
        actor.check_unscoped()
        owner = actor.user
    else:
        require_instance_admin(actor)
    name = name_or_invalid(name, max_length=ORGANIZATION_NAME_MAX)
    organization = Organization.objects.create(name=name)
    OrganizationMembership.objects.create(
        organization=organization, user=owner, role=OrganizationMembership.Role.OWNER
    )
    return organization


@transaction.atomic
def organization_update(*, actor: Actor, organization_id: ModelId, name: str) -> Organization:
    """Rename an organization: the instance administrator only (the Django admin; the API has
    no rename)."""
    require_instance_admin(actor)
    pk = parse_id(organization_id, what="organization")
    organization = Organization.objects.select_for_update().filter(pk=pk).first()
    if organization is None:
        raise NotFoundError(f"No organization with ID {pk}.")
    organization.name = name_or_invalid(name, max_length=ORGANIZATION_NAME_MAX)
    organization.save(update_fields=["name"])
    return organization


def _ensure_default_plan() -> Plan:
    plan, _ = Plan.objects.get_or_create(code="self_hosted", defaults={"name": "Self-hosted"})
    return plan


@transaction.atomic
def workspace_create(
    *,
    actor: Actor,
    organization_id: ModelId,
    name: str,
    timezone_name: str = "UTC",
    first_admin: User | None = None,
) -> Workspace:
    """The creator becomes the workspace's first admin. The instance administrator (Django
    admin) instead names ``first_admin``, an owner or admin of the organization; the audit event
    then names the instance administrator as the actor and ``first_admin`` as the subject."""
    organization: Organization | None
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
            raise FieldValidationError.at("body.first_admin", message)
    name = name_or_invalid(name, max_length=WORKSPACE_NAME_MAX)
    _check_timezone(timezone_name)
    plan = _ensure_default_plan()
    try:
        with transaction.atomic():
            workspace = Workspace.objects.create(
                organization=organization, name=name, timezone=timezone_name, plan=plan
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
    for hook in WORKSPACE_CREATED.all():
        hook(workspace)
    return workspace


@transaction.atomic
def workspace_update(
    *,
    actor: Actor,
    workspace_id: ModelId,
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
        access = require_workspace(actor, workspace_id, role=WorkspaceMembership.Role.ADMIN)
        workspace = Workspace.objects.select_for_update().get(pk=access.workspace.pk)
    if name is not None:
        workspace.name = name_or_invalid(name, max_length=WORKSPACE_NAME_MAX)
    if timezone_name is not None:
        workspace.timezone = _check_timezone(timezone_name)
    if plan_code is not None:
        require_instance_admin(actor)
        plan = Plan.objects.filter(pk=plan_code).first()
        if plan is None:
            raise FieldValidationError.at("body.plan", "Unknown plan.", value=plan_code)
        workspace.plan = plan
    try:
        with transaction.atomic():
            workspace.save()
    except IntegrityError as exc:
        raise ConflictError(
            "A workspace with this name already exists in the organization.", code="name_taken"
        ) from exc
    return workspace


def _lock_workspace_as_admin(
    actor: Actor, workspace_id: ModelId, *, instance_admin: bool = False
) -> Workspace:
    """Lock the workspace row first, then check the actor's role under the lock: member changes
    of one workspace are serialized, and an admin demoted by a concurrent request that committed
    first can no longer act on the strength of a role read before that commit. With
    ``instance_admin`` the actor must be the instance administrator instead of a workspace admin."""
    pk = parse_id(workspace_id, what="workspace")
    if not instance_admin:
        list(Workspace.objects.select_for_update().filter(pk=pk).values_list("pk", flat=True))
        return require_workspace(actor, pk, role=WorkspaceMembership.Role.ADMIN).workspace
    require_instance_admin(actor)
    workspace = Workspace.objects.select_for_update().filter(pk=pk).first()
    if workspace is None:
        raise NotFoundError(f"No workspace with ID {pk}.")
    return workspace
