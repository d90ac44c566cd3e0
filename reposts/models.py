"""Repost automation: per-workspace policies, cross-workspace account grants and the executions
of the staged repost engine.

The database is the source of truth of the engine: an execution row (one per published
destination and target account) says where it stands, its stage rows record every provider
write before it is made (``intent_at``) and its outcome after, so a worker that dies between the
two is reconciled with the provider, never repeated blindly.
"""

from __future__ import annotations

import uuid
from typing import ClassVar

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.timezone import now

from publishing.models import Account, Destination
from workspaces.models import Workspace

MAX_SECONDS = 30 * 24 * 3600  # 2,592,000: the longest delay and evaluation window


class RepostSettings(models.Model):
    """The revision of a workspace's policy set (``expected_revision`` of the replacing PUT).
    No row yet: revision 0."""

    workspace = models.OneToOneField(
        Workspace, on_delete=models.CASCADE, primary_key=True, related_name="repost_settings"
    )
    revision = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(default=now)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta:
        verbose_name_plural = "repost settings"

    def __str__(self) -> str:
        return f"repost settings of {self.workspace_id} (revision {self.revision})"


class RepostPolicy(models.Model):
    class ThresholdMode(models.TextChoices):
        ALL = "all"  # every non-zero gate is met
        ANY = "any"  # at least one non-zero gate is met

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    workspace = models.ForeignKey(
        Workspace, on_delete=models.CASCADE, related_name="repost_policies"
    )
    position = models.PositiveSmallIntegerField(default=0)
    name = models.CharField(max_length=80)
    enabled = models.BooleanField(default=True)
    # The rule (spec RepostRule). Stages: [{"delay_seconds": int, "unrepost_previous": bool}].
    delay_seconds = models.PositiveIntegerField(default=86_400)
    evaluation_window_seconds = models.PositiveIntegerField(default=604_800)
    threshold_mode = models.CharField(
        max_length=8, choices=ThresholdMode.choices, default=ThresholdMode.ALL
    )
    min_comments = models.PositiveBigIntegerField(default=0)
    min_likes = models.PositiveBigIntegerField(default=0)
    min_reposts = models.PositiveBigIntegerField(default=0)
    min_views = models.PositiveBigIntegerField(default=0)
    plateau_checks = models.PositiveSmallIntegerField(default=3)
    require_plateau = models.BooleanField(default=False)
    stages = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(default=now)
    updated_at = models.DateTimeField(default=now)

    class Meta:
        verbose_name_plural = "repost policies"
        ordering: ClassVar = ["position"]
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["workspace", "name"], name="repost_policy_unique_name"),
            models.CheckConstraint(
                condition=Q(plateau_checks__gte=2, plateau_checks__lte=12),
                name="repost_policy_plateau_checks",
            ),
            models.CheckConstraint(
                condition=Q(delay_seconds__lte=MAX_SECONDS)
                & Q(evaluation_window_seconds__gte=900, evaluation_window_seconds__lte=MAX_SECONDS),
                name="repost_policy_time_bounds",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def rule(self) -> dict[str, object]:
        """The rule as the engine snapshots it into each execution."""
        return {
            "delay_seconds": self.delay_seconds,
            "evaluation_window_seconds": self.evaluation_window_seconds,
            "threshold_mode": self.threshold_mode,
            "min_comments": self.min_comments,
            "min_likes": self.min_likes,
            "min_reposts": self.min_reposts,
            "min_views": self.min_views,
            "plateau_checks": self.plateau_checks,
            "require_plateau": self.require_plateau,
            "stages": list(self.stages or []),
        }


class RepostPolicyAccount(models.Model):
    """A source or target account of a policy (ordered as the client sent them)."""

    class Role(models.TextChoices):
        SOURCE = "source"
        TARGET = "target"

    id = models.BigAutoField(primary_key=True)
    policy = models.ForeignKey(RepostPolicy, on_delete=models.CASCADE, related_name="account_links")
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+")
    role = models.CharField(max_length=8, choices=Role.choices)
    position = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering: ClassVar = ["role", "position"]
        constraints: ClassVar = [
            models.UniqueConstraint(
                fields=["policy", "role", "account"], name="repost_policy_account_once"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.role} {self.account_id} of {self.policy_id}"


class RepostGrant(models.Model):
    """Lets ``source_workspace`` repost through ``target_account``, an account of another
    workspace. Revoking keeps the row (who granted and revoked what, when)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    source_workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+")
    target_account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=now)
    revoked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(
                fields=["source_workspace", "target_account"],
                condition=Q(revoked_at__isnull=True),
                name="one_active_repost_grant",
            ),
        ]
        indexes: ClassVar = [
            models.Index(fields=["source_workspace", "revoked_at"], name="repost_grant_source")
        ]

    def __str__(self) -> str:
        return f"grant {self.source_workspace_id} → {self.target_account_id}"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


class RepostExecution(models.Model):
    """One published destination reposted (or not) from one target account."""

    class Status(models.TextChoices):
        PENDING = "pending"  # waiting for its delay, or collecting metrics until the gates pass
        READY = "ready"  # the gates passed: stages run at their times
        SUCCEEDED = "succeeded"  # every stage ran
        SKIPPED = "skipped"  # window closed, target unusable, policy changed (``skip_reason``)
        FAILED = "failed"  # the provider refused (``error_message``)

    ACTIVE = (Status.PENDING, Status.READY)

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    workspace = models.ForeignKey(
        Workspace, on_delete=models.CASCADE, related_name="repost_executions"
    )
    policy = models.ForeignKey(
        RepostPolicy, on_delete=models.SET_NULL, null=True, blank=True, related_name="executions"
    )
    destination = models.ForeignKey(
        Destination, on_delete=models.CASCADE, related_name="repost_executions"
    )
    target_account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+")
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.PENDING)
    rule = models.JSONField(default=dict)  # the policy's rule when the execution was created
    published_at = models.DateTimeField()
    evaluate_from = models.DateTimeField()  # published_at + delay_seconds
    window_ends_at = models.DateTimeField()  # published_at + evaluation_window_seconds
    next_check_at = models.DateTimeField()  # when the engine looks at it again
    claimed_until = models.DateTimeField(null=True, blank=True)  # a worker's lease
    checks = models.PositiveIntegerField(default=0)  # metrics reads so far
    stable_checks = models.PositiveSmallIntegerField(default=0)  # identical consecutive reads
    last_metrics = models.JSONField(null=True, blank=True)
    metrics_checked_at = models.DateTimeField(null=True, blank=True)
    thresholds_met_at = models.DateTimeField(null=True, blank=True)
    failures = models.PositiveSmallIntegerField(default=0)  # consecutive transient failures
    skip_reason = models.CharField(max_length=32, blank=True, default="")
    unavailable_reason = models.CharField(max_length=300, blank=True, default="")
    error_message = models.CharField(max_length=500, blank=True, default="")
    created_at = models.DateTimeField(default=now)
    updated_at = models.DateTimeField(default=now)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(
                fields=["destination", "target_account"], name="one_repost_execution_per_target"
            ),
        ]
        indexes: ClassVar = [
            models.Index(fields=["status", "next_check_at"], name="repost_execution_due"),
            models.Index(fields=["workspace", "-created_at"], name="repost_execution_ws_newest"),
        ]

    def __str__(self) -> str:
        return f"repost {self.destination_id} → {self.target_account_id} ({self.status})"


class RepostStage(models.Model):
    """One repost of an execution. ``intent_at`` is written before the provider call and the
    outcome after it: ``in_flight`` past its worker's lease means "ask the provider" — also
    after the execution was skipped or failed meanwhile (the engine settles it)."""

    class Status(models.TextChoices):
        PENDING = "pending"
        IN_FLIGHT = "in_flight"
        SUCCEEDED = "succeeded"
        SKIPPED = "skipped"
        FAILED = "failed"

    id = models.BigAutoField(primary_key=True)
    execution = models.ForeignKey(RepostExecution, on_delete=models.CASCADE, related_name="stages")
    index = models.PositiveSmallIntegerField()
    delay_seconds = models.PositiveIntegerField()
    unrepost_previous = models.BooleanField(default=False)
    due_at = models.DateTimeField()
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.PENDING)
    intent_at = models.DateTimeField(null=True, blank=True)
    repost_id = models.CharField(max_length=300, blank=True, default="")
    repost_url = models.CharField(max_length=500, blank=True, default="")
    reposted_at = models.DateTimeField(null=True, blank=True)
    reconciled = models.BooleanField(default=False)  # the outcome came from asking the provider
    unrepost_started_at = models.DateTimeField(null=True, blank=True)
    unreposted_at = models.DateTimeField(null=True, blank=True)  # removed by the next stage
    error_message = models.CharField(max_length=500, blank=True, default="")

    class Meta:
        ordering: ClassVar = ["index"]
        constraints: ClassVar = [
            models.UniqueConstraint(
                fields=["execution", "index"], name="one_repost_stage_per_index"
            ),
        ]
        indexes: ClassVar = [
            # The engine tick looks for finished executions whose repost is still in flight.
            models.Index(
                fields=["execution"],
                condition=Q(status="in_flight"),
                name="repost_stage_in_flight",
            ),
        ]

    def __str__(self) -> str:
        return f"stage {self.index} of {self.execution_id} ({self.status})"
