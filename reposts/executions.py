"""Creating repost executions: one per (published destination, target account) of every enabled
policy. The pair is unique in the database, so concurrent ticks create each once."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Exists, OuterRef, QuerySet

from config.types import ModelId
from publishing.models import Account, Destination
from reposts.models import RepostExecution, RepostGrant, RepostPolicy, RepostStage
from reposts.rules import rule_stages
from reposts.selectors import supported_platforms


def executions_create(*, now: datetime, batch: int = 500) -> int:
    """One execution per (published destination, target account) of every enabled policy, for
    destinations published since the policy was created and still inside its window."""
    created = 0
    platforms = supported_platforms()
    policies = list(
        RepostPolicy.objects.filter(enabled=True).prefetch_related("account_links__account")
    )
    granted = _granted_pairs(policies)
    for policy in policies:
        targets = _usable_targets(policy, platforms, granted)
        if not targets:
            continue
        sources = _sources(policy, platforms)
        horizon = max(policy.created_at, now - timedelta(seconds=policy.evaluation_window_seconds))
        rule = policy.rule()
        for target in targets:
            for destination in _new_destinations(sources, target, horizon, now)[:batch]:
                created += _execution_create(
                    policy=policy, rule=rule, destination=destination, target=target
                )
    return created


def _granted_pairs(policies: list[RepostPolicy]) -> set[tuple[ModelId, ModelId]]:
    """(source workspace, target account) of the active grants of every cross-workspace target,
    in one query (not one per target)."""
    cross = {
        link.account_id
        for policy in policies
        for link in policy.account_links.all()
        if link.role == "target" and link.account.workspace_id != policy.workspace_id
    }
    return set(
        RepostGrant.objects.filter(
            target_account_id__in=cross, revoked_at__isnull=True
        ).values_list("source_workspace_id", "target_account_id")
    )


def _usable_targets(
    policy: RepostPolicy, platforms: list[str], granted: set[tuple[ModelId, ModelId]]
) -> list[Account]:
    """The policy's active targets that can repost: its workspace's own, or granted to it."""
    return [
        link.account
        for link in policy.account_links.all()
        if link.role == "target"
        and link.account.status == Account.Status.ACTIVE
        and link.account.provider in platforms
        and (
            link.account.workspace_id == policy.workspace_id
            or (policy.workspace_id, link.account_id) in granted
        )
    ]


def _sources(policy: RepostPolicy, platforms: list[str]) -> QuerySet[Account]:
    """The accounts the policy reposts from: those it names, or (none named) every compatible
    account of its workspace."""
    source_ids = [link.account_id for link in policy.account_links.all() if link.role == "source"]
    sources = Account.objects.filter(workspace_id=policy.workspace_id, provider__in=platforms)
    if source_ids:
        sources = sources.filter(pk__in=source_ids)
    return sources


def _new_destinations(
    sources: QuerySet[Account], target: Account, horizon: datetime, now: datetime
) -> QuerySet[Destination]:
    """Published posts of ``sources`` on the target's platform inside the window that have no
    execution for ``target`` yet, oldest first."""
    return (
        Destination.objects.filter(
            status=Destination.Status.PUBLISHED,
            account__in=sources.filter(provider=target.provider).exclude(pk=target.pk),
            published_at__gte=horizon,
            published_at__lte=now,
        )
        .exclude(external_id="")
        .exclude(
            Exists(
                RepostExecution.objects.filter(destination=OuterRef("pk"), target_account=target)
            )
        )
        .order_by("published_at")
    )


def _execution_create(
    *, policy: RepostPolicy, rule: dict[str, Any], destination: Destination, target: Account
) -> int:
    published_at = destination.published_at
    if published_at is None:  # excluded by the query; a published destination has its time
        return 0
    schedule = rule_stages(rule)
    # Eligible from the first stage's time: ``delay_seconds`` for a rule without stages, the
    # first stage's own delay otherwise (every stage runs at its delay from the publish time).
    evaluate_from = published_at + timedelta(seconds=int(schedule[0]["delay_seconds"]))
    try:
        with transaction.atomic():
            execution = RepostExecution.objects.create(
                workspace_id=policy.workspace_id,
                policy=policy,
                destination=destination,
                target_account=target,
                rule=rule,
                published_at=published_at,
                evaluate_from=evaluate_from,
                window_ends_at=published_at
                + timedelta(seconds=int(rule["evaluation_window_seconds"])),
                next_check_at=evaluate_from,
            )
            RepostStage.objects.bulk_create(
                RepostStage(
                    execution=execution,
                    index=index,
                    delay_seconds=int(stage["delay_seconds"]),
                    unrepost_previous=bool(stage["unrepost_previous"]),
                    due_at=published_at + timedelta(seconds=int(stage["delay_seconds"])),
                )
                for index, stage in enumerate(schedule)
            )
    except IntegrityError:  # another tick created it first (one per destination and target)
        return 0
    return 1
