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

from collections.abc import Iterable, Sequence
from typing import Any

from django.conf import settings

from config.types import ModelId
from readiness.catalog import catalog
from readiness.services import (
    Blocker,
    Decision,
    DecisionRequest,
    decide_many,
    enforcement_applies,
)

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
    slots = _profile_slots(catalogue, providers, live, content_profile)
    decisions = decide_many(_requests(providers, slots))
    connect = dict(zip(providers, decisions[: len(providers)], strict=True))
    entries = {
        provider: _provider_entry(catalogue, provider, decision, live)
        for provider, decision in connect.items()
    }
    blockers = {provider: list(decision.blockers) for provider, decision in connect.items()}
    rest = decisions[len(providers) :]
    for (account, profile_key), immediate, scheduled in zip(
        slots, rest[0::2], rest[1::2], strict=True
    ):
        entries[account.provider]["profiles"].append(
            {
                "account_id": str(account.pk),
                "output_profile": profile_key,
                "immediate": immediate.as_dict(),
                "scheduled": scheduled.as_dict(),
            }
        )
        blockers[account.provider] += [*immediate.blockers, *scheduled.blockers]
    for provider, entry in entries.items():
        entry["blocking_issues"] = _blocking_issues(blockers[provider])
    return {
        "workspace_id": str(workspace_id),
        "deployment": settings.HERALD_DEPLOYMENT,
        "enforced": enforcement_applies(),
        "providers": list(entries.values()),
    }


def _profile_slots(
    catalogue: Any, providers: Sequence[str], live: Iterable[Any], content_profile: str
) -> list[tuple[Any, str]]:
    """Each (account, output profile) to decide: every profile of every account of a known
    provider, or only ``content_profile``."""
    return [
        (account, profile.key)
        for account in live
        if account.provider in providers
        for profile in catalogue.capabilities(account.provider).profiles
        if not content_profile or profile.key == content_profile
    ]


def _requests(providers: Sequence[str], slots: list[tuple[Any, str]]) -> list[DecisionRequest]:
    """Every provider's connect, then each slot's immediate and scheduled publish."""
    return [
        *(DecisionRequest(provider=p, operation="connect") for p in providers),
        *(
            DecisionRequest(
                provider=account.provider,
                operation=operation,
                output_profile=profile_key,
                account=account,
            )
            for account, profile_key in slots
            for operation in ("publish_immediate", "publish_scheduled")
        ),
    ]


def _provider_entry(
    catalogue: Any, provider: str, decision: Decision, live: Iterable[Any]
) -> dict[str, Any]:
    """A provider's entry around its connect decision (issues and profiles are filled later)."""
    caps = catalogue.capabilities(provider)
    return {
        "provider": provider,
        "display_name": caps.display_name,
        **decision.as_dict(),
        "configured_app_state": decision.facts["configuration"]["source"],
        "connected_accounts": sum(1 for account in live if account.provider == provider),
        "blocking_issues": [],
        "profiles": [],
    }


def _blocking_issues(blockers: Iterable[Blocker]) -> list[dict[str, Any]]:
    """The blockers counted by code (sorted), each with the first detail seen."""
    issues: dict[str, dict[str, Any]] = {}
    for blocker in blockers:
        issue = issues.setdefault(
            blocker.code, {"code": blocker.code, "detail": blocker.detail, "count": 0}
        )
        issue["count"] += 1
    return sorted(issues.values(), key=lambda issue: issue["code"])
