"""The one readiness projection (docs/decisions/0008-readiness-and-certification.md).

``GET /provider-readiness``, the account provider catalogue, capability resolution, the tool
operation ``get_provider_readiness`` and ``herald provider readiness`` all return what
``provider_readiness_projection`` builds: per provider its connect decision (state,
connectable, advertisable, facts), the configured app state, the connected account count, the
blocking issues, and per connected account and output profile the immediate and scheduled
decisions. One query for the accounts plus the one ledger statement of ``decide_many``,
whatever the number of accounts.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.conf import settings

from config.types import ModelId
from readiness.catalog import catalog
from readiness.services import DecisionRequest, decide_many, enforcement_applies

ACCOUNT_FIELDS = (
    "id",
    "workspace_id",
    "provider",
    "status",
    "credentials_encrypted",
    "app_id",
    "granted_scopes",
    "instance_url",
    "account_kind",
    "created_at",
)


def provider_readiness_projection(
    *,
    workspace_id: ModelId,
    accounts: Iterable[Any] | None = None,
    content_profile: str = "",
) -> dict[str, Any]:
    """The projection for one workspace (access is the caller's check).

    ``accounts`` narrows the profiles to those accounts (capability resolution);
    ``content_profile`` to one output profile."""
    catalogue = catalog()
    providers = catalogue.providers()
    live = (
        list(accounts)
        if accounts is not None
        else catalogue.live_accounts(workspace_id, ACCOUNT_FIELDS)
    )
    requests: list[DecisionRequest] = [
        DecisionRequest(provider=p, operation="connect") for p in providers
    ]
    slots: list[tuple[Any, str]] = []
    for account in live:
        if account.provider not in providers:
            continue
        for profile in catalogue.capabilities(account.provider).profiles:
            if content_profile and profile.key != content_profile:
                continue
            slots.append((account, profile.key))
            requests.append(
                DecisionRequest(
                    provider=account.provider,
                    operation="publish_immediate",
                    output_profile=profile.key,
                    account=account,
                )
            )
            requests.append(
                DecisionRequest(
                    provider=account.provider,
                    operation="publish_scheduled",
                    output_profile=profile.key,
                    account=account,
                )
            )
    decisions = decide_many(requests)
    connect = dict(zip(providers, decisions[: len(providers)], strict=True))
    entries: dict[str, dict[str, Any]] = {}
    issues: dict[str, dict[str, dict[str, Any]]] = {p: {} for p in providers}
    for provider, decision in connect.items():
        caps = catalogue.capabilities(provider)
        entries[provider] = {
            "provider": provider,
            "display_name": caps.display_name,
            **decision.as_dict(),
            "configured_app_state": decision.facts["configuration"]["source"],
            "connected_accounts": sum(1 for account in live if account.provider == provider),
            "blocking_issues": [],
            "profiles": [],
        }
        _count(issues[provider], decision.blockers)
    rest = decisions[len(providers) :]
    for index, (account, profile_key) in enumerate(slots):
        immediate, scheduled = rest[2 * index], rest[2 * index + 1]
        entries[account.provider]["profiles"].append(
            {
                "account_id": str(account.pk),
                "output_profile": profile_key,
                "immediate": immediate.as_dict(),
                "scheduled": scheduled.as_dict(),
            }
        )
        _count(issues[account.provider], (*immediate.blockers, *scheduled.blockers))
    for provider, entry in entries.items():
        entry["blocking_issues"] = sorted(
            issues[provider].values(), key=lambda issue: issue["code"]
        )
    return {
        "workspace_id": str(workspace_id),
        "deployment": settings.HERALD_DEPLOYMENT,
        "enforced": enforcement_applies(),
        "providers": list(entries.values()),
    }


def _count(issues: dict[str, dict[str, Any]], blockers: Iterable[Any]) -> None:
    for blocker in blockers:
        issue = issues.setdefault(
            blocker.code, {"code": blocker.code, "detail": blocker.detail, "count": 0}
        )
        issue["count"] += 1
