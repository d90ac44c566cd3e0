"""Plans and usage: the plan's limits, the monthly usage period and counting a use."""

from __future__ import annotations

from datetime import date, timedelta

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from config.errors import PlanLimitError
from workspaces.models import UsageCounter, Workspace

PLAN_METRICS = {
    "connected_accounts": "max_connected_accounts",
    "scheduled_publications": "max_scheduled_publications_per_month",
    "discovery_calls": "max_discovery_calls_per_month",
}


def usage_period(today: date | None = None) -> tuple[date, date]:
    today = today or timezone.now().date()
    start = today.replace(day=1)
    end = (start + timedelta(days=32)).replace(day=1)
    return start, end


def plan_limit(workspace: Workspace, metric: str) -> int | None:
    value = getattr(workspace.plan, PLAN_METRICS[metric])
    return int(value) if value is not None else None


def plan_check_current(*, workspace: Workspace, metric: str, current: int) -> None:
    """For gauge-like limits (connected accounts): refuse when one more would exceed it."""
    limit = plan_limit(workspace, metric)
    if limit is not None and current + 1 > limit:
        raise PlanLimitError(
            f"The {workspace.plan.name} plan allows {limit} {metric.replace('_', ' ')}."
        )


@transaction.atomic
def usage_consume(*, workspace: Workspace, metric: str, amount: int = 1) -> None:
    """Count one use of a monthly-limited operation, or raise 403 ``plan_limit``."""
    start, _ = usage_period()
    counter, _ = UsageCounter.objects.get_or_create(
        workspace=workspace, metric=metric, period_start=start
    )
    counter = UsageCounter.objects.select_for_update().get(pk=counter.pk)
    limit = plan_limit(workspace, metric)
    if limit is not None and counter.count + amount > limit:
        raise PlanLimitError(
            f"The {workspace.plan.name} plan allows {limit} {metric.replace('_', ' ')} per month."
        )
    UsageCounter.objects.filter(pk=counter.pk).update(count=F("count") + amount)
