"""The staged repost engine (docs/decisions/0016-repost-automation.md): for each destination published from a source account of
an enabled policy, one execution per target account.

* An execution waits until its first stage's time (``delay_seconds`` after the publish time for
  a rule without stages), then reads the post's metrics
  through the adapter at most once per ``HERALD_REPOST_METRICS_INTERVAL_SECONDS`` until the gates
  pass (``all``: every non-zero ``min_*``; ``any``: at least one; no non-zero gate: passes) and,
  with ``require_plateau``, the last ``plateau_checks`` reads were identical.
* It then runs its stages (the rule's ``stages``, or one stage at ``delay_seconds``), each at
  ``published_at + stage.delay_seconds``: unrepost the previous stage's repost first when
  ``unrepost_previous``, then repost from the target account.
* It is skipped with a reason when the window closes first, when the target becomes unusable
  (disconnected, reconnect required, grant revoked, readiness blocks it), when the source post
  is gone, or when the policy no longer wants it.
* A finished execution whose repost was still in flight (its worker died, then it was skipped
  or failed) is settled with the provider (``_settle``): never abandoned, never reposted.

Readiness is asked immediately before every provider call. A worker claims an execution with a
conditional update (a lease), records each repost's intent before calling the provider and its
outcome after; an intent without an outcome is reconciled by asking the provider
(``find_repost``: Mastodon's ``reblogged`` flag, Bluesky's repost record) before anything is
sent again, so a worker killed between the call and its record never reposts twice.

Every function takes ``now``: tests drive the engine with an explicit clock.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from functools import partial
from typing import Any, NoReturn

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from config.nudge import nudge
from config.types import ModelId
from providers import get_adapter
from providers.base import ErrorKind, NotSupported, ProviderError, PublishResult
from publishing.models import Account
from publishing.services.accounts import account_context, account_mark_reconnect_required
from publishing.services.delivery import backoff_seconds
from readiness import services as readiness
from reposts import tasks
from reposts.executions import executions_create
from reposts.models import RepostExecution, RepostStage
from reposts.rules import metrics_values, needs_metrics, thresholds_met
from reposts.selectors import (
    READINESS_OPERATION,
    readiness_profile,
    target_unavailable_reason,
)
from reposts.services import executions_skip

logger = logging.getLogger(__name__)

S = RepostExecution.Status
ST = RepostStage.Status

# --- The tick ---------------------------------------------------------------------------------


def engine_tick(
    *, now: datetime | None = None, dispatch: Callable[[str], None] | None = None, batch: int = 500
) -> dict[str, int]:
    """One beat tick: create new executions, then hand every due execution to a worker.

    Due: an active execution whose ``next_check_at`` passed, and a finished one (skipped or
    failed while a repost was in flight) whose in-flight stage still waits to be settled with
    the provider. A dispatched execution is not due again for one lease: a lost message or a
    dead worker is picked up by a later tick, and a backlog is not nudged twice meanwhile."""
    now = now or timezone.now()
    created = executions_create(now=now, batch=batch)
    free = Q(claimed_until__isnull=True) | Q(claimed_until__lt=now)
    due = list(
        RepostExecution.objects.filter(status__in=RepostExecution.ACTIVE, next_check_at__lte=now)
        .filter(free)
        .order_by("next_check_at")
        .values_list("pk", flat=True)[:batch]
    )
    if len(due) < batch:
        due += list(
            RepostExecution.objects.exclude(status__in=RepostExecution.ACTIVE)
            .filter(
                pk__in=RepostStage.objects.filter(status=ST.IN_FLIGHT).values("execution_id"),
                next_check_at__lte=now,
            )
            .filter(free)
            .order_by("next_check_at")
            .values_list("pk", flat=True)[: batch - len(due)]
        )
    if due:
        lease = timedelta(seconds=settings.HERALD_REPOST_LEASE_SECONDS)
        RepostExecution.objects.filter(pk__in=due).update(next_check_at=now + lease)
    send = dispatch or partial(nudge, tasks.execution_advance)
    for execution_id in due:
        send(str(execution_id))
    return {"created": created, "dispatched": len(due)}


# --- Advancing one execution ------------------------------------------------------------------


class _Stop(Exception):
    """The execution reached a terminal status (already recorded)."""


class _Unusable(Exception):
    def __init__(self, role: str, reason: str) -> None:
        super().__init__(reason)
        self.role = role
        self.reason = reason


def execution_advance(*, execution_id: ModelId, now: datetime | None = None) -> str | None:
    """Move one execution as far as its clock allows; returns its status (``None``: another
    worker holds it, or it has finished and has nothing left to settle). Safe to run twice.

    A finished execution that still has an in-flight stage (it was skipped or failed while a
    repost's outcome was unknown) is claimed too, and only settled: see :func:`_settle`."""
    now = now or timezone.now()
    lease = timedelta(seconds=settings.HERALD_REPOST_LEASE_SECONDS)
    in_flight = Exists(RepostStage.objects.filter(execution=OuterRef("pk"), status=ST.IN_FLIGHT))
    claimed = (
        RepostExecution.objects.filter(pk=execution_id)
        .filter(Q(status__in=RepostExecution.ACTIVE) | Q(in_flight))
        .filter(Q(claimed_until__isnull=True) | Q(claimed_until__lt=now))
        .update(claimed_until=now + lease, updated_at=now)
    )
    if not claimed:
        return None
    execution = RepostExecution.objects.select_related(
        "policy", "destination__account__app", "target_account__app", "target_account__workspace"
    ).get(pk=execution_id)
    next_at: datetime | None
    if execution.status not in RepostExecution.ACTIVE:
        next_at = _settle(execution, now)
        RepostExecution.objects.filter(pk=execution.pk).update(
            claimed_until=None, next_check_at=next_at or now, updated_at=now
        )
        return str(execution.status)
    try:
        next_at = _advance(execution, now)
        RepostExecution.objects.filter(pk=execution.pk).update(failures=0)
    except _Stop:
        next_at = None
    except _Unusable as exc:
        reason = "target_unavailable" if exc.role == "target" else "source_unavailable"
        _finish(execution, S.SKIPPED, now, skip_reason=reason, unavailable_reason=exc.reason)
        next_at = None
    except ProviderError as exc:
        next_at = _provider_failure(execution, exc, now)
    except Exception:
        logger.exception("Unexpected failure advancing repost execution %s", execution.pk)
        next_at = _retry_later(execution, now, "An unexpected error occurred; retrying.")
    RepostExecution.objects.filter(pk=execution.pk).update(
        claimed_until=None, next_check_at=next_at or now, updated_at=now
    )
    return str(RepostExecution.objects.values_list("status", flat=True).get(pk=execution.pk))


def _advance(execution: RepostExecution, now: datetime) -> datetime | None:
    """One step of ``execution``: when to look again, or ``_Stop`` once it is settled."""
    _require_still_wanted(execution, now)
    stages = list(RepostStage.objects.filter(execution=execution).order_by("index"))
    for stage in stages:  # an intent without an outcome: ask the provider before anything else
        if stage.status == ST.IN_FLIGHT:
            _reconcile_stage(execution, stage, now)
    if now >= execution.window_ends_at:
        _close_window(execution, stages, now)
    if execution.status == S.PENDING:
        wait_until = _gate(execution, stages, now)
        if wait_until is not None:
            return wait_until
    return _run_due_stages(execution, stages, now)


def _require_still_wanted(execution: RepostExecution, now: datetime) -> None:
    """Skip (``_Stop``) what its policy no longer wants; ``_Unusable`` for a target that
    cannot be used now."""
    reason = _policy_reason(execution)
    if reason:
        _finish(execution, S.SKIPPED, now, skip_reason=reason)
        raise _Stop
    unavailable = target_unavailable_reason(
        account=execution.target_account, workspace_id=execution.workspace_id, check_readiness=False
    )
    if unavailable:
        raise _Unusable("target", unavailable)


def _close_window(execution: RepostExecution, stages: list[RepostStage], now: datetime) -> NoReturn:
    """The window is over: succeeded when every stage of a ready execution settled, else
    skipped; then ``_Stop``."""
    settled = all(s.status in (ST.SUCCEEDED, ST.SKIPPED) for s in stages)
    if settled and execution.status == S.READY:
        _finish(execution, S.SUCCEEDED, now)
    else:
        _finish(execution, S.SKIPPED, now, skip_reason="window_closed")
    raise _Stop


def _gate(execution: RepostExecution, stages: list[RepostStage], now: datetime) -> datetime | None:
    """A pending execution's gates: when to look again, or None once it is ready."""
    if now < execution.evaluate_from:
        return execution.evaluate_from
    met, next_check = _evaluate(execution, now)
    if not met:
        return min(next_check, execution.window_ends_at)
    _mark_ready(execution, stages, now)
    return None


def _run_due_stages(
    execution: RepostExecution, stages: list[RepostStage], now: datetime
) -> datetime:
    """Run the pending stages that are due, in order: the next one's due time, or ``_Stop``
    once every stage ran."""
    for stage in stages:
        if stage.status != ST.PENDING:
            continue
        if stage.due_at > now:
            return min(stage.due_at, execution.window_ends_at)
        _run_stage(execution, stage, stages, now)
    _finish(execution, S.SUCCEEDED, now)
    raise _Stop


def _policy_reason(execution: RepostExecution) -> str:
    policy = execution.policy
    if policy is None:
        return "policy_removed"
    if not policy.enabled:
        return "policy_disabled"
    links = list(policy.account_links.values_list("role", "account_id"))
    if ("target", execution.target_account_id) not in links:
        return "target_removed"
    sources = [account_id for role, account_id in links if role == "source"]
    if sources and execution.destination.account_id not in sources:  # empty: every source
        return "source_removed"
    return ""


def _require_ready(account: Account, role: str) -> None:
    """Readiness, immediately before a provider call on ``account``."""
    decision = readiness.decide_account(
        account=account, operation=READINESS_OPERATION, profile=readiness_profile(account)
    )
    if not decision.executable:
        raise _Unusable(role, f"Provider readiness blocks the {role} account ({decision.state}).")


def _evaluate(execution: RepostExecution, now: datetime) -> tuple[bool, datetime]:
    """Read the metrics when the cadence allows; whether the gates (and plateau) pass."""
    rule = execution.rule
    interval = timedelta(seconds=settings.HERALD_REPOST_METRICS_INTERVAL_SECONDS)
    if not needs_metrics(rule):
        return True, now
    if execution.metrics_checked_at is not None and now < execution.metrics_checked_at + interval:
        return False, execution.metrics_checked_at + interval  # bounded cadence
    values = _shared_reading(execution, now, interval) or _read_metrics(execution)
    stable = execution.stable_checks + 1 if execution.last_metrics == values else 1
    execution.checks += 1
    execution.stable_checks = stable
    execution.last_metrics = values
    execution.metrics_checked_at = now
    RepostExecution.objects.filter(pk=execution.pk).update(
        checks=execution.checks, stable_checks=stable, last_metrics=values, metrics_checked_at=now
    )
    plateau = not rule.get("require_plateau") or stable >= int(rule["plateau_checks"])
    return thresholds_met(rule, values) and plateau, now + interval


def _shared_reading(
    execution: RepostExecution, now: datetime, interval: timedelta
) -> dict[str, int] | None:
    """A reading another execution of the same post took within the interval (and after this
    execution's last one): one post is read at most once per interval, however many targets."""
    found = (
        RepostExecution.objects.filter(
            destination_id=execution.destination_id,
            metrics_checked_at__gt=max(
                now - interval, execution.metrics_checked_at or now - interval
            ),
            metrics_checked_at__lte=now,
            last_metrics__isnull=False,
        )
        .exclude(pk=execution.pk)
        .order_by("-metrics_checked_at")
        .values_list("last_metrics", flat=True)
        .first()
    )
    return dict(found) if found else None


def _read_metrics(execution: RepostExecution) -> dict[str, int]:
    source = execution.destination.account
    if source.status != Account.Status.ACTIVE:
        raise _Unusable(
            "source",
            "The source account must be reconnected."
            if source.status == Account.Status.RECONNECT_REQUIRED
            else "The source account was disconnected.",
        )
    _require_ready(source, "source")
    try:
        metrics = get_adapter(source.provider).metrics(
            account=account_context(source), external_id=execution.destination.external_id
        )
    except ProviderError as exc:
        if exc.kind == ErrorKind.PERMANENT:
            raise _Unusable("source", exc.message) from exc
        if exc.kind == ErrorKind.AUTH:
            account_mark_reconnect_required(account_id=source.pk, reason=exc.message)
            raise _Unusable("source", "The source account must be reconnected.") from exc
        raise
    return metrics_values(metrics)


def _mark_ready(execution: RepostExecution, stages: list[RepostStage], now: datetime) -> None:
    """The gates passed. Stages whose time already passed collapse into the latest of them:
    a late start reposts once, not once per missed stage."""
    overdue = [s for s in stages if s.status == ST.PENDING and s.due_at <= now]
    superseded = [s.pk for s in overdue[:-1]]
    with transaction.atomic():
        updated = RepostExecution.objects.filter(pk=execution.pk, status=S.PENDING).update(
            status=S.READY, thresholds_met_at=now, updated_at=now
        )
        if not updated:
            raise _Stop  # skipped meanwhile (grant revoked, policy changed)
        if superseded:
            RepostStage.objects.filter(pk__in=superseded, status=ST.PENDING).update(
                status=ST.SKIPPED, error_message="Its time passed before the thresholds were met."
            )
    execution.status = S.READY
    execution.thresholds_met_at = now
    for stage in overdue[:-1]:
        stage.status = ST.SKIPPED


def _subject(execution: RepostExecution) -> dict[str, str]:
    """How the target account's server names the post: by id, or (another server of a
    federated provider) by its URL."""
    source = execution.destination.account
    target = execution.target_account
    federated = get_adapter(target.provider).capabilities.federated
    if federated and source.instance_url.rstrip("/") != target.instance_url.rstrip("/"):
        return {"external_id": "", "source_url": execution.destination.external_url}
    return {
        "external_id": execution.destination.external_id,
        "source_url": execution.destination.external_url,
    }


def _stage_key(execution: RepostExecution, stage: RepostStage) -> str:
    return f"{execution.pk}:{stage.index}"


def _run_stage(
    execution: RepostExecution, stage: RepostStage, stages: list[RepostStage], now: datetime
) -> None:
    target = execution.target_account
    adapter = get_adapter(target.provider)
    subject = _subject(execution)
    if stage.unrepost_previous:
        live = [
            s
            for s in stages
            if s.index < stage.index and s.status == ST.SUCCEEDED and s.unreposted_at is None
        ]
        if live:
            previous = live[-1]
            _require_ready(target, "target")
            _require_active(execution)  # skipped meanwhile (grant revoked, policy changed)
            RepostStage.objects.filter(pk=previous.pk).update(unrepost_started_at=now)
            _target_call(
                target,
                lambda: adapter.unrepost(
                    account=account_context(target), repost_id=previous.repost_id, **subject
                ),
            )
            # One live repost per account and post: every stage that recorded it lost it.
            same = [s.pk for s in live if s.repost_id == previous.repost_id] + [previous.pk]
            RepostStage.objects.filter(pk__in=same).update(unreposted_at=now)
            for s in live:
                if s.pk in same:
                    s.unreposted_at = now
    _require_ready(target, "target")
    # The intent is recorded before the call: from here on, a dead worker's stage is reconciled.
    # Only while the execution is still active (skipping it skips its pending stages too).
    if not RepostStage.objects.filter(
        pk=stage.pk, status=ST.PENDING, execution__status__in=RepostExecution.ACTIVE
    ).update(status=ST.IN_FLIGHT, intent_at=now):
        raise _Stop
    stage.status = ST.IN_FLIGHT
    result = _target_call(
        target,
        lambda: adapter.repost(
            account=account_context(target), idempotency_key=_stage_key(execution, stage), **subject
        ),
    )
    _stage_succeeded(stage, result, now, reconciled=False)


def _require_active(execution: RepostExecution) -> None:
    if not RepostExecution.objects.filter(
        pk=execution.pk, status__in=RepostExecution.ACTIVE
    ).exists():
        raise _Stop


def _find_repost(execution: RepostExecution, stage: RepostStage) -> PublishResult | None:
    """Ask the target account's provider for the stage's repost (readiness first). A read."""
    target = execution.target_account
    adapter = get_adapter(target.provider)
    _require_ready(target, "target")
    found: PublishResult | None = _target_call(
        target,
        lambda: adapter.find_repost(
            account=account_context(target),
            idempotency_key=_stage_key(execution, stage),
            **_subject(execution),
        ),
    )
    return found


def _reconcile_stage(execution: RepostExecution, stage: RepostStage, now: datetime) -> None:
    try:
        found = _find_repost(execution, stage)
    except NotSupported:
        RepostStage.objects.filter(pk=stage.pk).update(
            status=ST.FAILED,
            error_message="The provider cannot confirm whether the repost was made.",
        )
        _finish(
            execution,
            S.FAILED,
            now,
            error="The provider cannot confirm whether the repost was made; check the account.",
        )
        raise _Stop from None
    if found is not None:
        _stage_succeeded(stage, found, now, reconciled=True)
        return
    RepostStage.objects.filter(pk=stage.pk, status=ST.IN_FLIGHT).update(
        status=ST.PENDING, intent_at=None
    )
    stage.status = ST.PENDING  # the provider has none: reposting again is safe


def _target_call(target: Account, call: Callable[[], Any]) -> Any:
    try:
        return call()
    except ProviderError as exc:
        if exc.kind == ErrorKind.AUTH:
            account_mark_reconnect_required(account_id=target.pk, reason=exc.message)
            raise _Unusable("target", "The account must be reconnected.") from exc
        raise


def _stage_succeeded(
    stage: RepostStage, result: PublishResult, now: datetime, *, reconciled: bool
) -> None:
    RepostStage.objects.filter(pk=stage.pk, status=ST.IN_FLIGHT).update(
        status=ST.SUCCEEDED,
        repost_id=result.external_id[:300],
        repost_url=result.external_url[:500],
        reposted_at=now,
        reconciled=reconciled,
        error_message="",
    )
    stage.status = ST.SUCCEEDED
    stage.repost_id = result.external_id[:300]
    stage.reposted_at = now


def _finish(
    execution: RepostExecution,
    status: RepostExecution.Status,
    now: datetime,
    *,
    skip_reason: str = "",
    unavailable_reason: str = "",
    error: str = "",
) -> None:
    with transaction.atomic():
        if status == S.SKIPPED:
            executions_skip(
                RepostExecution.objects.filter(pk=execution.pk),
                reason=skip_reason,
                unavailable_reason=unavailable_reason,
                now=now,
            )
            return
        updated = RepostExecution.objects.filter(
            pk=execution.pk, status__in=RepostExecution.ACTIVE
        ).update(status=status, error_message=error[:500], finished_at=now, updated_at=now)
        if updated and status == S.FAILED:
            RepostStage.objects.filter(execution=execution, status=ST.PENDING).update(
                status=ST.SKIPPED
            )
    execution.status = status


def _provider_failure(
    execution: RepostExecution, exc: ProviderError, now: datetime
) -> datetime | None:
    if exc.kind == ErrorKind.PERMANENT:
        RepostStage.objects.filter(execution=execution, status=ST.IN_FLIGHT).update(
            status=ST.FAILED, error_message=exc.message[:500]
        )
        _finish(execution, S.FAILED, now, error=exc.message)
        return None
    # Transient, rate limited or ambiguous: an in-flight stage stays in flight and is
    # reconciled with the provider first on the next attempt.
    return _retry_later(execution, now, exc.message, retry_after=exc.retry_after)


def _retry_later(
    execution: RepostExecution, now: datetime, message: str, *, retry_after: float | None = None
) -> datetime | None:
    failures = execution.failures + 1
    if failures >= settings.HERALD_REPOST_MAX_FAILURES:
        _finish(
            execution, S.FAILED, now, error=f"Gave up after {failures} failed attempts: {message}"
        )
        # An in-flight stage's outcome is still unknown: it is settled with the provider
        # later (``_settle``), with a fresh budget of attempts.
        RepostExecution.objects.filter(pk=execution.pk).update(failures=0)
        return now + timedelta(seconds=backoff_seconds(1))
    RepostExecution.objects.filter(pk=execution.pk).update(
        failures=failures, error_message=message[:500]
    )
    return now + timedelta(seconds=backoff_seconds(failures, retry_after))


# --- Settling a finished execution's in-flight repost -----------------------------------------

UNKNOWN_OUTCOME = "Whether this repost was made is unknown ({reason}); check the account."


def _settle(execution: RepostExecution, now: datetime) -> datetime | None:
    """The execution finished (skipped: grant revoked, policy changed, target unusable; or
    failed) while one of its reposts was in flight: the provider may or may not have made it.
    Ask the provider (readiness first) — a read, never a repost — and record the answer: made
    (``succeeded``, ``reconciled``, with its id) or not made (``skipped``). When the provider
    cannot be asked (account disconnected or to reconnect) or keeps failing, the stage is
    ``failed`` with an error that says the outcome is unknown. Returns when to try again."""
    stages = list(
        RepostStage.objects.filter(execution=execution, status=ST.IN_FLIGHT).order_by("index")
    )
    target = execution.target_account
    if target.status != Account.Status.ACTIVE:
        _unknown(
            stages,
            "the account must be reconnected"
            if target.status == Account.Status.RECONNECT_REQUIRED
            else "the account was disconnected",
        )
        return None
    try:
        for stage in stages:
            found = _find_repost(execution, stage)
            if found is not None:
                _stage_succeeded(stage, found, now, reconciled=True)
            else:
                RepostStage.objects.filter(pk=stage.pk, status=ST.IN_FLIGHT).update(
                    status=ST.SKIPPED,
                    reconciled=True,
                    error_message="Not made: the provider has no such repost.",
                )
    except _Unusable as exc:
        return _settle_later(execution, stages, now, exc.reason)
    except ProviderError as exc:
        if exc.kind == ErrorKind.PERMANENT:
            _unknown(stages, exc.message)
            return None
        return _settle_later(execution, stages, now, exc.message, retry_after=exc.retry_after)
    except Exception:
        logger.exception("Unexpected failure settling repost execution %s", execution.pk)
        return _settle_later(execution, stages, now, "an unexpected error occurred")
    return None


def _settle_later(
    execution: RepostExecution,
    stages: list[RepostStage],
    now: datetime,
    reason: str,
    *,
    retry_after: float | None = None,
) -> datetime | None:
    failures = execution.failures + 1
    if failures >= settings.HERALD_REPOST_MAX_FAILURES:
        _unknown(stages, reason)
        return None
    RepostExecution.objects.filter(pk=execution.pk).update(failures=failures)
    return now + timedelta(seconds=backoff_seconds(failures, retry_after))


def _unknown(stages: list[RepostStage], reason: str) -> None:
    RepostStage.objects.filter(pk__in=[s.pk for s in stages], status=ST.IN_FLIGHT).update(
        status=ST.FAILED, error_message=UNKNOWN_OUTCOME.format(reason=reason.rstrip("."))[:500]
    )
