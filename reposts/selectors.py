"""Reads of repost automation: the settings view of a workspace and account availability."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Prefetch, Q

from config.types import ModelId
from providers import PROVIDERS, get_adapter
from providers.base import can_repost
from publishing.models import Account
from readiness import services as readiness
from readiness.services import Decision
from reposts.models import (
    RepostExecution,
    RepostGrant,
    RepostPolicy,
    RepostPolicyAccount,
    RepostSettings,
    RepostStage,
)
from workspaces.access import Actor, require_workspace
from workspaces.models import Workspace

RECENT_EXECUTIONS = 50
# Readiness operation asked before every provider call of repost automation: a repost, an
# unrepost and a metrics read act immediately on the connected account.
READINESS_OPERATION = "publish_immediate"


def supported_platforms() -> list[str]:
    """Providers whose adapter can repost and unrepost (and reconcile a repost)."""
    return [name for name in PROVIDERS if can_repost(get_adapter(name))]


def readiness_profile(account: Account) -> str:
    """The output profile named in readiness decisions about ``account``'s reposts: the
    provider's post format (a repost republishes a post of that format)."""
    profiles = get_adapter(account.provider).capabilities.profiles
    return profiles[0].key if profiles else ""


def active_grant(*, source_workspace_id: ModelId, account_id: ModelId) -> RepostGrant | None:
    return (
        RepostGrant.objects.filter(
            # One ignore for both lines: django-stubs types these "+"-related foreign keys' _id
            # lookups without str, which the ORM accepts.
            source_workspace_id=source_workspace_id,  # type: ignore[misc]  # text ids are valid
            target_account_id=account_id,
            revoked_at__isnull=True,
        )
        .order_by("-created_at")
        .first()
    )


def target_unavailable_reason(
    *,
    account: Account,
    workspace_id: ModelId,
    grant_active: bool | None = None,
    check_readiness: bool = True,
    decision: Decision | None = None,
) -> str:
    """Why ``workspace_id`` cannot repost through ``account`` now ("" when it can).

    ``decision``: the readiness decision when the caller asked for many at once."""
    if account.status == Account.Status.DISCONNECTED:
        return "The account was disconnected."
    if account.status == Account.Status.RECONNECT_REQUIRED:
        return "The account must be reconnected."
    if account.provider not in supported_platforms():
        return f"{account.provider} accounts cannot repost."
    if str(account.workspace_id) != str(workspace_id):
        if grant_active is None:
            grant_active = (
                active_grant(source_workspace_id=workspace_id, account_id=account.pk) is not None
            )
        if not grant_active:
            return "No active repost grant from the account's workspace."
    if check_readiness:
        decision = decision or readiness.decide_account(
            account=account, operation=READINESS_OPERATION, profile=readiness_profile(account)
        )
        if not decision.executable:
            return f"Provider readiness blocks reposts ({decision.state})."
    return ""


@dataclass
class SettingsView:
    """Everything ``GET /repost-automation`` answers (spec SettingsResponse, plus ``revision``
    and recent ``executions``)."""

    workspace_id: str
    can_manage: bool
    supported_platforms: list[str]
    revision: int
    accounts: list[dict[str, Any]] = field(default_factory=list)
    grants: list[dict[str, Any]] = field(default_factory=list)
    policies: list[dict[str, Any]] = field(default_factory=list)
    executions: list[RepostExecution] = field(default_factory=list)


def policies_for_workspace(workspace_id: ModelId) -> list[RepostPolicy]:
    links = RepostPolicyAccount.objects.order_by("position", "id")
    return list(
        RepostPolicy.objects.filter(workspace_id=workspace_id)
        .prefetch_related(Prefetch("account_links", queryset=links))
        .order_by("position", "created_at")
    )


def policy_representation(policy: RepostPolicy) -> dict[str, Any]:
    links = list(policy.account_links.all())
    return {
        "id": str(policy.pk),
        "name": policy.name,
        "enabled": policy.enabled,
        "created_at": policy.created_at,
        "updated_at": policy.updated_at,
        "source_account_ids": [str(link.account_id) for link in links if link.role == "source"],
        "target_account_ids": [str(link.account_id) for link in links if link.role == "target"],
        "rule": policy.rule(),
    }


def grant_representation(grant: RepostGrant, *, workspace_id: ModelId) -> dict[str, Any]:
    account = grant.target_account
    outbound = str(grant.source_workspace_id) == str(workspace_id)
    return {
        "id": str(grant.pk),
        "created_at": grant.created_at,
        "platform": account.provider,
        "direction": "outbound" if outbound else "inbound",
        "source_workspace_id": str(grant.source_workspace_id),
        "source_workspace_name": grant.source_workspace.name,
        "target_account_id": str(account.pk),
        "target_username": account.username,
        "target_workspace_id": str(account.workspace_id),
        "target_workspace_name": account.workspace.name,
    }


def repost_settings_get(*, actor: Actor, workspace_id: ModelId) -> SettingsView:
    access = require_workspace(actor, workspace_id)
    workspace = access.workspace
    platforms = supported_platforms()
    revision = (
        RepostSettings.objects.filter(workspace=workspace)
        .values_list("revision", flat=True)
        .first()
        or 0
    )
    policies = policies_for_workspace(workspace.pk)
    grants = _active_grants(workspace)
    outbound = {g.target_account_id: g for g in grants if g.source_workspace_id == workspace.pk}
    referenced = {link.account_id for p in policies for link in p.account_links.all()}
    accounts = _visible_accounts(workspace, outbound=set(outbound), referenced=referenced)
    return SettingsView(
        workspace_id=str(workspace.pk),
        can_manage=access.is_admin,
        supported_platforms=platforms,
        revision=revision,
        accounts=_account_representations(workspace, accounts, set(outbound), platforms),
        policies=[policy_representation(p) for p in policies],
        grants=[grant_representation(g, workspace_id=workspace.pk) for g in grants],
        executions=_recent_executions(workspace),
    )


def _active_grants(workspace: Workspace) -> list[RepostGrant]:
    """The workspace's active grants, both ways, newest first."""
    return list(
        RepostGrant.objects.filter(revoked_at__isnull=True)
        .filter(Q(source_workspace=workspace) | Q(target_account__workspace=workspace))
        .select_related("source_workspace", "target_account__workspace")
        .order_by("-created_at")
    )


def _visible_accounts(
    workspace: Workspace, *, outbound: set[uuid.UUID], referenced: set[uuid.UUID]
) -> list[Account]:
    """The workspace's usable accounts, those granted to it, and any a policy still names."""
    return list(
        Account.objects.filter(
            Q(
                workspace=workspace,
                status__in=[Account.Status.ACTIVE, Account.Status.RECONNECT_REQUIRED],
            )
            | Q(pk__in=list(outbound))
            | Q(pk__in=referenced)
        )
        .select_related("workspace", "app")
        .order_by("provider", "username", "id")
    )


def _account_representations(
    workspace: Workspace, accounts: list[Account], outbound: set[uuid.UUID], platforms: list[str]
) -> list[dict[str, Any]]:
    decisions = readiness.decide_many(  # one readiness pass for every account (constant queries)
        [
            readiness.DecisionRequest(
                provider=account.provider,
                operation=READINESS_OPERATION,
                output_profile=readiness_profile(account),
                account=account,
            )
            for account in accounts
        ]
    )
    return [
        _account_representation(
            account,
            workspace_id=workspace.pk,
            grant_active=account.pk in outbound,
            supports_repost=account.provider in platforms,
            decision=decision,
        )
        for account, decision in zip(accounts, decisions, strict=True)
    ]


def _account_representation(
    account: Account,
    *,
    workspace_id: uuid.UUID,
    grant_active: bool,
    supports_repost: bool,
    decision: Decision,
) -> dict[str, Any]:
    cross = account.workspace_id != workspace_id
    return {
        "id": str(account.pk),
        "platform": account.provider,
        "username": account.username,
        "avatar_url": account.avatar_url,
        "instance_url": account.instance_url,
        "workspace_id": str(account.workspace_id),
        "workspace_name": account.workspace.name,
        "cross_workspace": cross,
        "grant_required": cross,
        "grant_active": grant_active,
        "supports_repost": supports_repost,
        "unavailable_reason": target_unavailable_reason(
            account=account,
            workspace_id=workspace_id,
            grant_active=grant_active,
            decision=decision,
        ),
    }


def _recent_executions(workspace: Workspace) -> list[RepostExecution]:
    return list(
        RepostExecution.objects.filter(workspace=workspace)
        .select_related("policy", "destination__account", "target_account")
        .prefetch_related(Prefetch("stages", queryset=RepostStage.objects.order_by("index")))
        .order_by("-created_at", "-id")[:RECENT_EXECUTIONS]
    )
