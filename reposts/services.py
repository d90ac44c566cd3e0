"""Writes of repost automation: replacing a workspace's policy set, granting and revoking
cross-workspace repost accounts. Each service owns its transaction.

Rule bounds (ranges, stage order, names) are checked by the API's input serializers; these
services check what needs the database: which accounts a workspace may name, and the revision.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import CharField, Q, QuerySet, Value
from django.db.models.functions import Cast, Concat
from django.utils import timezone

from config.errors import (
    FieldValidationError,
    NotFoundError,
    PermissionDeniedError,
    RevisionConflictError,
    field_error,
)
from config.types import ModelId
from publishing.models import Account
from reposts.errors import RepostGrantExistsError
from reposts.models import (
    RepostExecution,
    RepostGrant,
    RepostPolicy,
    RepostPolicyAccount,
    RepostSettings,
    RepostStage,
)
from reposts.rules import VIEW_REPORTING_PLATFORMS
from reposts.selectors import supported_platforms
from workspaces.access import WORKSPACE_ROLE_RANK, Actor, parse_id, require_workspace
from workspaces.models import AccessAuditEvent, Workspace, WorkspaceMembership
from workspaces.services import audit_record

RULE_FIELDS = (
    "delay_seconds",
    "evaluation_window_seconds",
    "threshold_mode",
    "min_comments",
    "min_likes",
    "min_reposts",
    "min_views",
    "plateau_checks",
    "require_plateau",
)
S = RepostExecution.Status


# --- Executions that can no longer run --------------------------------------------------------


def executions_skip(
    executions: QuerySet[RepostExecution],
    *,
    reason: str,
    unavailable_reason: str = "",
    now: Any = None,
) -> int:
    """Skip the still active ones of ``executions`` with ``reason`` (call inside a transaction).

    Their pending stages are skipped too. A stage whose provider call is in flight keeps its
    state: its worker records the outcome, or, if that worker died, the engine settles it by
    asking the provider (``reposts.engine._settle``) — an unknown outcome is never dropped."""
    now = now or timezone.now()
    ids = list(executions.filter(status__in=RepostExecution.ACTIVE).values_list("pk", flat=True))
    if not ids:
        return 0
    count = RepostExecution.objects.filter(pk__in=ids, status__in=RepostExecution.ACTIVE).update(
        status=S.SKIPPED,
        skip_reason=reason,
        unavailable_reason=unavailable_reason[:300],
        failures=0,  # a fresh budget for settling a repost still in flight
        finished_at=now,
        updated_at=now,
    )
    RepostStage.objects.filter(execution_id__in=ids, status=RepostStage.Status.PENDING).update(
        status=RepostStage.Status.SKIPPED
    )
    return count


# --- Policies ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Named:
    """The accounts a policy set names, as the workspace may use them."""

    workspace_id: uuid.UUID
    accounts: dict[str, Account]  # connected accounts by canonical ID
    granted: set[str]  # other workspaces' accounts under an active grant to this one
    platforms: frozenset[str]  # providers that can repost and unrepost


def _account_errors(
    *, workspace_id: uuid.UUID, policies: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], dict[str, Account]]:
    """Every account ID that the workspace may not name where it names it."""
    named = _named_accounts(workspace_id, policies)
    errors: list[dict[str, Any]] = []
    for i, policy in enumerate(policies):
        errors += _min_views_errors(named, i, policy)
        errors += _source_errors(named, i, policy.get("source_account_ids") or [])
        errors += _target_errors(named, i, policy.get("target_account_ids") or [])
    return errors, named.accounts


def _named_accounts(workspace_id: uuid.UUID, policies: list[dict[str, Any]]) -> _Named:
    wanted: set[uuid.UUID] = set()
    for policy in policies:
        for key in ("source_account_ids", "target_account_ids"):
            wanted.update(uuid.UUID(pk) for pk in map(_canonical, policy.get(key) or []) if pk)
    accounts = {
        str(a.pk): a
        for a in Account.objects.filter(pk__in=wanted).exclude(status=Account.Status.DISCONNECTED)
    }
    granted = {
        str(pk)
        for pk in RepostGrant.objects.filter(
            source_workspace_id=workspace_id, target_account_id__in=wanted, revoked_at__isnull=True
        ).values_list("target_account_id", flat=True)
    }
    return _Named(workspace_id, accounts, granted, frozenset(supported_platforms()))


def _min_views_errors(named: _Named, i: int, policy: dict[str, Any]) -> list[dict[str, Any]]:
    """A views gate on sources whose platform reports no views could never be met."""
    min_views = int((policy.get("rule") or {}).get("min_views") or 0)
    if not min_views:
        return []
    sources = [named.accounts.get(_canonical(v)) for v in policy.get("source_account_ids") or []]
    providers = {a.provider for a in sources if a is not None} if sources else named.platforms
    blind = sorted(providers - VIEW_REPORTING_PLATFORMS)
    if not blind:
        return []
    message = f"{', '.join(blind)} posts report no views, so this gate could never be met; use 0."
    return [field_error(f"body.policies[{i}].rule.min_views", message, min_views)]


def _source_errors(named: _Named, i: int, values: list[Any]) -> list[dict[str, Any]]:
    errors: list[dict[str, Any]] = []
    for j, value in enumerate(values):
        where = f"body.policies[{i}].source_account_ids[{j}]"
        account = named.accounts.get(_canonical(value))
        if account is None or account.workspace_id != named.workspace_id:
            errors.append(
                field_error(where, "No connected account of this workspace has this ID.", value)
            )
        elif account.provider not in named.platforms:
            errors.append(
                field_error(where, f"{account.provider} accounts cannot be reposted from.", value)
            )
    return errors


def _target_errors(named: _Named, i: int, values: list[Any]) -> list[dict[str, Any]]:
    errors: list[dict[str, Any]] = []
    for j, value in enumerate(values):
        where = f"body.policies[{i}].target_account_ids[{j}]"
        account = named.accounts.get(_canonical(value))
        if account is None:
            errors.append(field_error(where, "No connected account has this ID.", value))
        elif account.workspace_id != named.workspace_id and str(account.pk) not in named.granted:
            errors.append(
                field_error(
                    where, "An account of another workspace needs an active repost grant.", value
                )
            )
        elif account.provider not in named.platforms:
            errors.append(field_error(where, f"{account.provider} accounts cannot repost.", value))
    return errors


def _canonical(value: Any) -> str:
    try:
        return str(uuid.UUID(str(value)))
    except ValueError:
        return ""


def repost_settings_replace(
    *, actor: Actor, workspace_id: ModelId, expected_revision: int, policies: list[dict[str, Any]]
) -> RepostSettings:
    """Replace the workspace's whole policy set (``PUT /repost-automation``).

    A policy that carries the ``id`` of an existing policy of the workspace is updated in place
    (keeping its ``created_at`` and its executions); the others are created; policies left out
    are deleted. Active executions of deleted or disabled policies, and of targets or sources a
    policy no longer names, are skipped.
    """
    access = require_workspace(actor, workspace_id, role=WorkspaceMembership.Role.ADMIN)
    workspace = access.workspace
    errors, accounts = _account_errors(workspace_id=workspace.pk, policies=policies)
    if errors:
        raise FieldValidationError(errors)
    now = timezone.now()
    with transaction.atomic():
        settings = _locked_settings(workspace, expected_revision)
        existing = _locked_policies(workspace, policies)
        _remove_policies_left_out(existing, policies, now)
        saved = [
            (_save_policy(workspace, existing, position, incoming, now), incoming)
            for position, incoming in enumerate(policies)
        ]
        _link_accounts(saved, accounts)
        _skip_unwanted_executions(workspace, saved, now)
        settings.revision += 1
        settings.updated_at = now
        settings.updated_by = actor.user
        settings.save()
    return settings


def _locked_settings(workspace: Workspace, expected_revision: int) -> RepostSettings:
    """The workspace's settings row, locked, at ``expected_revision`` (else 409)."""
    settings, _ = RepostSettings.objects.get_or_create(workspace=workspace)
    settings = RepostSettings.objects.select_for_update().get(pk=settings.pk)
    if settings.revision != expected_revision:
        raise RevisionConflictError(
            f"The repost settings are at revision {settings.revision}; reload them and try again.",
            current_revision=settings.revision,
        )
    return settings


def _locked_policies(
    workspace: Workspace, policies: list[dict[str, Any]]
) -> dict[str, RepostPolicy]:
    """The workspace's policies by ID, locked; a 422 for each incoming ``id`` not among them."""
    existing = {
        str(p.pk): p for p in RepostPolicy.objects.select_for_update().filter(workspace=workspace)
    }
    id_errors = [
        field_error(
            f"body.policies[{i}].id", "No policy of this workspace has this ID.", incoming["id"]
        )
        for i, incoming in enumerate(policies)
        if incoming.get("id") and _canonical(incoming["id"]) not in existing
    ]
    if id_errors:
        raise FieldValidationError(id_errors)
    return existing


def _remove_policies_left_out(
    existing: dict[str, RepostPolicy], policies: list[dict[str, Any]], now: datetime
) -> None:
    """Delete the policies the new set leaves out (their active executions skipped), and park
    the kept ones under their IDs: names are unique per workspace, and the new set may swap
    them."""
    kept = {_canonical(incoming.get("id") or "") for incoming in policies} - {""}
    removed = [pk for pk in existing if pk not in kept]
    executions_skip(
        # django-stubs types a foreign key's _id__in without str ids; the ORM takes them.
        RepostExecution.objects.filter(policy_id__in=removed),  # type: ignore[misc]
        reason="policy_removed",
        now=now,
    )
    RepostPolicy.objects.filter(pk__in=removed).delete()
    RepostPolicy.objects.filter(pk__in=kept).update(
        name=Concat(Value("~"), Cast("id", output_field=CharField()))
    )


def _save_policy(
    workspace: Workspace,
    existing: dict[str, RepostPolicy],
    position: int,
    incoming: dict[str, Any],
    now: datetime,
) -> RepostPolicy:
    """The incoming policy saved: over the existing one of its ``id``, else as a new one."""
    policy = existing.get(_canonical(incoming.get("id") or "")) or RepostPolicy(
        workspace=workspace, created_at=now
    )
    policy.position = position
    policy.name = incoming["name"]
    policy.enabled = incoming.get("enabled", True)
    rule = incoming["rule"]
    for name in RULE_FIELDS:
        setattr(policy, name, rule[name])
    policy.stages = [
        {"delay_seconds": s["delay_seconds"], "unrepost_previous": s["unrepost_previous"]}
        for s in rule["stages"]
    ]
    policy.updated_at = now
    policy.save()
    return policy


def _link_accounts(
    saved: list[tuple[RepostPolicy, dict[str, Any]]], accounts: dict[str, Account]
) -> None:
    """The saved policies' source and target accounts, in a fixed number of queries however
    many policies there are."""
    RepostPolicyAccount.objects.filter(policy__in=[p for p, _ in saved]).delete()
    RepostPolicyAccount.objects.bulk_create(
        [
            RepostPolicyAccount(policy=policy, account=accounts[pk], role=role, position=n)
            for policy, incoming in saved
            for role, key in (
                ("source", "source_account_ids"),
                ("target", "target_account_ids"),
            )
            for n, pk in enumerate(_unique(incoming.get(key) or []))
        ]
    )


def _skip_unwanted_executions(
    workspace: Workspace, saved: list[tuple[RepostPolicy, dict[str, Any]]], now: datetime
) -> None:
    """Skip the active executions the new set no longer wants: of disabled policies, and of
    targets or sources a policy no longer names (a fixed number of queries)."""
    ours = RepostExecution.objects.filter(policy__workspace=workspace)
    disabled = [policy.pk for policy, _ in saved if not policy.enabled]
    if disabled:
        executions_skip(ours.filter(policy_id__in=disabled), reason="policy_disabled", now=now)
    lost_target, lost_source = Q(pk__in=[]), Q(pk__in=[])
    for policy, incoming in saved:
        targets = _unique(incoming.get("target_account_ids") or [])
        lost_target |= Q(policy=policy) & ~Q(target_account_id__in=targets)
        sources = _unique(incoming.get("source_account_ids") or [])
        if sources:  # an empty list means every compatible source account
            lost_source |= Q(policy=policy) & ~Q(destination__account_id__in=sources)
    executions_skip(ours.filter(lost_target), reason="target_removed", now=now)
    executions_skip(ours.filter(lost_source), reason="source_removed", now=now)


def _unique(values: Iterable[Any]) -> list[str]:
    seen: dict[str, None] = {}
    for value in values:
        seen.setdefault(_canonical(value), None)
    return list(seen)


# --- Grants -----------------------------------------------------------------------------------


def _require_any_workspace(actor: Actor, workspace_ids: Sequence[ModelId]) -> None:
    """The actor administers at least one of ``workspace_ids`` (token binding included);
    otherwise the first one's answer (403)."""
    first, *others = workspace_ids
    for workspace_id in others:
        try:
            require_workspace(actor, workspace_id, role=WorkspaceMembership.Role.ADMIN)
        except PermissionDeniedError:
            continue
        return
    require_workspace(actor, first, role=WorkspaceMembership.Role.ADMIN)


def repost_grant_create(
    *, actor: Actor, source_workspace_id: ModelId, target_account_id: ModelId
) -> RepostGrant:
    """Let ``source_workspace_id`` repost through an account of another workspace. The actor
    must administer both workspaces. Audited in both workspaces' access audit."""
    source = require_workspace(
        actor, source_workspace_id, role=WorkspaceMembership.Role.ADMIN
    ).workspace
    account_pk = parse_id(target_account_id, what="account")
    account = (
        Account.objects.select_related("workspace")
        .filter(pk=account_pk)
        .exclude(status=Account.Status.DISCONNECTED)
        .first()
    )
    if account is None:
        raise NotFoundError(f"No account with ID {account_pk}.")
    require_workspace(actor, account.workspace_id, role=WorkspaceMembership.Role.ADMIN)
    if account.workspace_id == source.pk:
        raise FieldValidationError.at(
            "body.target_account_id",
            "The account belongs to the source workspace; it needs no grant.",
            value=str(target_account_id),
        )
    if account.provider not in supported_platforms():
        raise FieldValidationError.at(
            "body.target_account_id",
            f"{account.provider} accounts cannot repost.",
            value=str(target_account_id),
        )
    try:
        with transaction.atomic():
            grant = RepostGrant.objects.create(
                source_workspace=source, target_account=account, created_by=actor.user
            )
            for workspace_id in (source.pk, account.workspace_id):
                audit_record(
                    workspace_id=workspace_id,
                    action=AccessAuditEvent.Action.REPOST_GRANT_CREATED,
                    actor=actor.user,
                    status="active",
                )
    except IntegrityError as exc:
        raise RepostGrantExistsError() from exc
    return grant


def repost_grant_revoke(*, actor: Actor, grant_id: ModelId) -> RepostGrant:
    """Withdraw a grant (an admin of either workspace). Active executions that repost through
    the account for the source workspace are skipped with the reason. Audited in both."""
    pk = parse_id(grant_id, what="repost grant")
    grant = (
        RepostGrant.objects.select_related("target_account")
        .filter(pk=pk, revoked_at__isnull=True)
        .first()
    )
    if grant is None:
        raise NotFoundError(f"No active repost grant with ID {pk}.")
    sides = (grant.source_workspace_id, grant.target_account.workspace_id)
    memberships = {
        m.workspace_id: m
        for m in WorkspaceMembership.objects.filter(workspace_id__in=sides, user_id=actor.user.pk)
    }
    active = [m for m in memberships.values() if m.status == WorkspaceMembership.Status.ACTIVE]
    if not active:
        raise NotFoundError(f"No active repost grant with ID {pk}.")
    admin_of = [
        m.workspace_id
        for m in active
        if WORKSPACE_ROLE_RANK[m.role] >= WORKSPACE_ROLE_RANK["admin"]
    ]
    if not admin_of:
        raise PermissionDeniedError(
            "Revoking a repost grant needs the workspace role admin.", code="role_too_low"
        )
    _require_any_workspace(actor, admin_of)  # e.g. a token bound to a third workspace: 403
    now = timezone.now()
    with transaction.atomic():
        revoked = RepostGrant.objects.filter(pk=pk, revoked_at__isnull=True).update(
            revoked_at=now, revoked_by=actor.user
        )
        if not revoked:
            raise NotFoundError(f"No active repost grant with ID {pk}.")
        executions_skip(
            RepostExecution.objects.filter(
                workspace_id=grant.source_workspace_id, target_account_id=grant.target_account_id
            ),
            reason="target_unavailable",
            unavailable_reason="The repost grant for this account was revoked.",
            now=now,
        )
        for workspace_id in sides:
            audit_record(
                workspace_id=workspace_id,
                action=AccessAuditEvent.Action.REPOST_GRANT_REVOKED,
                actor=actor.user,
                previous_status="active",
                status="revoked",
            )
    grant.refresh_from_db()
    return grant
