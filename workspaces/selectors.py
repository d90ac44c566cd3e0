"""Reads for identity."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db.models import Count, Exists, F, OuterRef, Q, QuerySet, Subquery

from config.api.pagination import (
    Page,
    cursor_position,
    keyset_after,
    keyset_ordered,
    keyset_page,
    page_of,
)
from config.queries import CompiledQuery, Param
from config.types import ModelId
from workspaces.access import (
    WORKSPACE_ROLE_RANK,
    Actor,
    parse_id,
    require_workspace,
    require_workspace_role,
)
from workspaces.models import (
    AccessAuditEvent,
    ApiToken,
    Invitation,
    Organization,
    UsageCounter,
    Workspace,
    WorkspaceMembership,
)
from workspaces.services import PLAN_METRICS, plan_limit, usage_period


def roles_at_least(role: WorkspaceMembership.Role) -> tuple[str, ...]:
    """The workspace roles that rank at or above ``role``."""
    return tuple(
        name for name, rank in WORKSPACE_ROLE_RANK.items() if rank >= WORKSPACE_ROLE_RANK[role]
    )


def _accessible_workspaces(user_id: Any, token_workspace_id: Any) -> QuerySet[Workspace]:
    """The workspaces the user is an active member of (only ``token_workspace_id`` unless it is
    None), with the caller's role, the active member count and the plan's name. The ids may be
    values or ``Param``s (``WORKSPACE_PAGE``)."""
    # A subquery, not a join: filtering on the same join as the Count below would restrict the
    # count to the caller's own membership (member_count would always be 1).
    accessible = WorkspaceMembership.objects.filter(
        user_id=user_id, status=WorkspaceMembership.Status.ACTIVE
    ).values("workspace_id")
    queryset = Workspace.objects.filter(pk__in=accessible)
    if token_workspace_id is not None:
        queryset = queryset.filter(pk=token_workspace_id)
    # The caller's role and the plan's name are annotations: no second query for the roles,
    # and no Plan instance per row (the plan's code is ``plan_id``).
    caller_role = WorkspaceMembership.objects.filter(workspace=OuterRef("pk"), user_id=user_id)
    return queryset.annotate(
        member_count=Count(
            "memberships",
            filter=Q(memberships__status=WorkspaceMembership.Status.ACTIVE),
            distinct=True,
        ),
        caller_role=Subquery(caller_role.values("role")[:1]),
        plan_name=F("plan__name"),
    )


def _token_workspace_id(actor: Actor) -> Any:
    return actor.token.workspace_id if actor.token is not None else None


def workspace_list_for_actor(*, actor: Actor) -> QuerySet[Workspace]:
    return _accessible_workspaces(actor.user.pk, _token_workspace_id(actor))


def _workspace_page(limit: int, scoped: bool, after: bool) -> QuerySet[Workspace]:
    queryset = keyset_ordered(
        _accessible_workspaces(
            Param("user_id", WorkspaceMembership, "user"),
            Param("token_workspace_id", Workspace, "id") if scoped else None,
        )
    )
    if after:
        queryset = keyset_after(
            queryset, Param("moment", Workspace, "created_at"), Param("last_pk", Workspace, "id")
        )
    return queryset[: limit + 1]


# Every API client lists its workspaces: the SQL of each shape is compiled once per process.
WORKSPACE_PAGE = CompiledQuery(_workspace_page)


def workspace_page_for_actor(*, actor: Actor, limit: int, cursor: str | None) -> Page[Workspace]:
    token_workspace_id = _token_workspace_id(actor)
    moment, last_pk = cursor_position("workspaces", cursor) if cursor else (None, None)
    rows = WORKSPACE_PAGE.instances(
        shape=(limit, token_workspace_id is not None, bool(cursor)),
        user_id=actor.user.pk,
        token_workspace_id=token_workspace_id,
        moment=moment,
        last_pk=last_pk,
    )
    return page_of(rows, list_key="workspaces", limit=limit)


def organization_list_for_actor(*, actor: Actor) -> QuerySet[Organization]:
    actor.check_unscoped()
    return Organization.objects.filter(memberships__user=actor.user).order_by("-created_at", "-pk")


def organization_page_for_actor(
    *, actor: Actor, limit: int, cursor: str | None
) -> Page[Organization]:
    return keyset_page(
        organization_list_for_actor(actor=actor),
        list_key="organizations",
        limit=limit,
        cursor=cursor,
    )


def member_page(
    *, actor: Actor, workspace_id: ModelId, limit: int, cursor: str | None
) -> Page[WorkspaceMembership]:
    access = require_workspace(actor, workspace_id)
    queryset = WorkspaceMembership.objects.filter(workspace=access.workspace).select_related("user")
    return keyset_page(
        queryset, list_key=f"members:{access.workspace.pk}", limit=limit, cursor=cursor
    )


def invitation_page(
    *, actor: Actor, workspace_id: ModelId, limit: int, cursor: str | None
) -> Page[Invitation]:
    access = require_workspace(actor, workspace_id, role=WorkspaceMembership.Role.ADMIN)
    queryset = Invitation.objects.filter(workspace=access.workspace)
    return keyset_page(
        queryset, list_key=f"invitations:{access.workspace.pk}", limit=limit, cursor=cursor
    )


def _admin_audit_page(limit: int, columns: tuple[Any, ...] | None) -> QuerySet[Any]:
    """The newest ``limit`` events of a workspace, if the user is one of its active admins."""
    admin = WorkspaceMembership.objects.filter(
        workspace_id=Param("workspace_id", WorkspaceMembership, "workspace"),
        user_id=Param("user_id", WorkspaceMembership, "user"),
        status=WorkspaceMembership.Status.ACTIVE,
        role__in=roles_at_least(WorkspaceMembership.Role.ADMIN),
    )
    events = AccessAuditEvent.objects.filter(
        Exists(admin), workspace_id=Param("workspace_id", AccessAuditEvent, "workspace_id")
    ).order_by("-created_at", "-id")
    return (events if columns is None else events.values_list(*columns))[:limit]


ADMIN_AUDIT_PAGE = CompiledQuery(_admin_audit_page)


def access_audit_list(
    *, actor: Actor, workspace_id: ModelId, limit: int, columns: Sequence[Any] | None = None
) -> list[Any]:
    """The newest ``limit`` events of a workspace; active workspace admins only.

    Model instances, or with ``columns`` (field names or expressions, as ``values_list`` takes;
    ``FlatRows.columns``) value rows of those columns.

    One query in the common case: the page, read only if the caller holds an active admin
    membership (an ``EXISTS`` condition; its SQL is compiled once per process). When it returns
    nothing (no events yet, or no access), ``require_workspace_role`` gives the usual answer in
    the usual order: 404 for an unknown workspace, then 403 for token scope, membership or
    role; or it passes, and the page is read again (it is empty, unless an event was just
    written). A token bound to another workspace never takes the one-query path.
    """
    pk = parse_id(workspace_id, what="workspace")
    shape = (limit, None if columns is None else tuple(columns))
    token = actor.token
    if token is None or token.workspace_id is None or token.workspace_id == pk:
        page = ADMIN_AUDIT_PAGE.instances if columns is None else ADMIN_AUDIT_PAGE.values
        rows = page(shape=shape, workspace_id=pk, user_id=actor.user.pk)
        if rows:
            return rows
    require_workspace_role(actor, pk, role=WorkspaceMembership.Role.ADMIN)
    events = AccessAuditEvent.objects.filter(workspace_id=pk).order_by("-created_at", "-id")
    return list(events[:limit] if columns is None else events.values_list(*columns)[:limit])


def api_token_list(*, user: Any) -> QuerySet[ApiToken]:
    return ApiToken.objects.filter(user=user).order_by("-created_at", "-pk")


def api_token_page(*, user: Any, limit: int, cursor: str | None) -> Page[ApiToken]:
    return keyset_page(
        api_token_list(user=user), list_key=f"tokens:{user.pk}", limit=limit, cursor=cursor
    )


def workspace_usage(*, actor: Actor, workspace_id: ModelId) -> dict[str, Any]:
    access = require_workspace(actor, workspace_id)
    workspace = access.workspace
    start, end = usage_period()
    counters = dict(
        UsageCounter.objects.filter(workspace=workspace, period_start=start).values_list(
            "metric", "count"
        )
    )
    from workspaces import lifecycle

    gauges: dict[str, int] = {}
    for summary in lifecycle.DATA_SUMMARIES.all():
        gauges.update(summary(workspace))
    usage = {
        "connected_accounts": gauges.get("connected_accounts", 0),
        "scheduled_publications": counters.get("scheduled_publications", 0),
        "discovery_calls": counters.get("discovery_calls", 0),
        # bytes held by the workspace's media and unfinished uploads (publishing's summary)
        "media_bytes": gauges.get("media_bytes", 0),
    }
    return {
        "workspace_id": str(workspace.pk),
        "plan": {"code": workspace.plan.code, "name": workspace.plan.name},
        "limits": {metric: plan_limit(workspace, metric) for metric in PLAN_METRICS},
        "usage": usage,
        "period_start": start,
        "period_end": end,
    }
