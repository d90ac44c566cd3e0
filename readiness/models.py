"""The four append-only readiness ledgers (certification evidence).

Approval reviews, certification runs, certification checks and runtime controls. A row is a fact
recorded once: the storage layer rejects ``UPDATE`` and ``DELETE`` (triggers created in the
migrations, on PostgreSQL and SQLite) and Django refuses them too (``save`` of an existing row,
``delete`` and queryset ``update``/``delete``/``bulk_update`` raise ``LedgerImmutableError``).

Rows hold normalized outcomes and one-way fingerprints only: never a token, a raw provider
response, a provider URL, an account ID or an operator identity. Operators are stored as
``operator:sha256:<hex>``, accounts as ``account:sha256:<hex>``, federated instances as
``instance:sha256:<hex>``, external results as ``result:sha256:<hex>``.
"""

from __future__ import annotations

from typing import Any, ClassVar, NoReturn

from django.db import models
from django.utils.timezone import now

OPERATIONS = ("connect", "publish_immediate", "publish_scheduled", "refresh", "revoke")
OPERATION_CHOICES = [(op, op) for op in OPERATIONS]


class LedgerImmutableError(Exception):
    """A readiness ledger row cannot be changed or removed, only followed by a new row."""


def _refuse(what: str) -> NoReturn:
    raise LedgerImmutableError(f"Readiness ledgers are append-only: {what} is not allowed.")


class AppendOnlyQuerySet(models.QuerySet[Any]):
    def update(self, **kwargs: Any) -> int:
        _refuse("update")

    def delete(self) -> tuple[int, dict[str, int]]:
        _refuse("delete")

    def bulk_update(self, objs: Any, fields: Any, batch_size: int | None = None) -> int:
        _refuse("update")

    def update_or_create(self, *args: Any, **kwargs: Any) -> Any:
        _refuse("update")


class AppendOnlyModel(models.Model):
    created_at = models.DateTimeField(default=now, editable=False)

    objects = AppendOnlyQuerySet.as_manager()

    class Meta:
        abstract = True

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            _refuse("update")
        kwargs["force_insert"] = True
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> NoReturn:
        _refuse("delete")


class ApprovalReview(AppendOnlyModel):
    """The reviewed tier of one provider app in one provider environment."""

    class Outcome(models.TextChoices):
        APPROVED = "approved"
        TRIAL = "trial"  # explicit trial permission: certification tests only
        REJECTED = "rejected"
        NOT_REQUIRED = "not_required"  # the provider reviews no apps (explicitly recorded)

    id = models.BigAutoField(primary_key=True)
    provider = models.CharField(max_length=40)
    app_fingerprint = models.CharField(max_length=80)
    provider_environment = models.CharField(max_length=16)
    outcome = models.CharField(max_length=16, choices=Outcome.choices)
    operations = models.JSONField(default=list)  # the operations the tier permits
    reference_fingerprint = models.CharField(max_length=80, blank=True, default="")
    operator_fingerprint = models.CharField(max_length=80)
    reviewed_at = models.DateTimeField()
    expires_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes: ClassVar = [
            models.Index(
                fields=["provider", "app_fingerprint", "provider_environment", "-id"],
                name="approval_current",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.provider} approval {self.outcome} #{self.pk}"


class CertificationRun(AppendOnlyModel):
    """One local or live certification run of one exact subject against one contract."""

    class Kind(models.TextChoices):
        LOCAL = "local"
        LIVE = "live"

    class Outcome(models.TextChoices):
        PASSED = "passed"
        FAILED = "failed"

    id = models.BigAutoField(primary_key=True)
    kind = models.CharField(max_length=8, choices=Kind.choices)
    # The subject (readiness/subjects.py), fingerprints only.
    provider = models.CharField(max_length=40)
    app_fingerprint = models.CharField(max_length=80)
    deployment_environment = models.CharField(max_length=16)
    provider_environment = models.CharField(max_length=16)
    instance_fingerprint = models.CharField(max_length=80, blank=True, default="")
    account_kind = models.CharField(max_length=40)
    output_profile = models.CharField(max_length=80, blank=True, default="")
    operation = models.CharField(max_length=24, choices=OPERATION_CHOICES)
    policy_mode = models.CharField(max_length=24)
    subject_digest = models.CharField(max_length=80)
    contract_digest = models.CharField(max_length=80)
    tested_revision = models.CharField(max_length=64)
    operator_fingerprint = models.CharField(max_length=80)
    account_fingerprint = models.CharField(max_length=80, blank=True, default="")
    external_result_fingerprint = models.CharField(max_length=80, blank=True, default="")
    required_scopes = models.JSONField(default=list)  # scope snapshot: the contract's scopes
    granted_scopes = models.JSONField(default=list)  # scope snapshot: the tested account's grant
    outcome = models.CharField(max_length=8, choices=Outcome.choices)  # computed from the checks
    tested_at = models.DateTimeField()
    expires_at = models.DateTimeField()  # retest expiry

    class Meta:
        indexes: ClassVar = [
            models.Index(fields=["subject_digest", "kind", "-id"], name="certification_current"),
            models.Index(fields=["provider", "-id"], name="certification_provider"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.provider} {self.output_profile} {self.operation} {self.outcome} #{self.pk}"


class CertificationCheck(AppendOnlyModel):
    """One required check of a certification run, with its normalized outcome."""

    class Name(models.TextChoices):
        CONNECT = "connect"
        ACCOUNT_AUTHORIZATION = "account_authorization"
        PROVIDER_RESULT = "provider_result"  # the immediate or scheduled provider result
        RECONCILED_OUTCOME = "reconciled_outcome"  # the final reconciled provider outcome
        REFRESH = "refresh"
        REVOKE = "revoke"

    class Outcome(models.TextChoices):
        PASSED = "passed"
        FAILED = "failed"
        NOT_APPLICABLE = "not_applicable"  # only with a reason the contract permits

    id = models.BigAutoField(primary_key=True)
    run = models.ForeignKey(CertificationRun, on_delete=models.PROTECT, related_name="checks")
    name = models.CharField(max_length=24, choices=Name.choices)
    outcome = models.CharField(max_length=16, choices=Outcome.choices)
    reason = models.CharField(max_length=40, blank=True, default="")

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["run", "name"], name="one_check_per_run_and_name"),
        ]

    def __str__(self) -> str:
        return f"{self.name} {self.outcome}"


class RuntimeControl(AppendOnlyModel):
    """An operator's runtime control for a provider, optionally narrowed to a format/operation.

    The current control of a scope is its latest row; a subject obeys the most restrictive
    current control among the scopes that cover it."""

    class Mode(models.TextChoices):
        ENABLED = "enabled"
        DEGRADED = "degraded"  # a provider incident: nothing runs until enabled again
        DISABLED = "disabled"  # an explicit disable: always wins

    class Reason(models.TextChoices):
        ROLLOUT = "rollout"
        PROVIDER_INCIDENT = "provider_incident"
        POLICY_REVIEW = "policy_review"
        SECURITY = "security"
        MAINTENANCE = "maintenance"
        RESTORED = "restored"

    id = models.BigAutoField(primary_key=True)
    provider = models.CharField(max_length=40)
    output_profile = models.CharField(max_length=80, blank=True, default="")  # blank: every format
    operation = models.CharField(max_length=24, blank=True, default="")  # blank: every operation
    mode = models.CharField(max_length=16, choices=Mode.choices)
    reason = models.CharField(max_length=24, choices=Reason.choices)
    operator_fingerprint = models.CharField(max_length=80)

    class Meta:
        indexes: ClassVar = [models.Index(fields=["provider", "-id"], name="control_provider")]

    def __str__(self) -> str:
        scope = "/".join(
            part for part in (self.provider, self.output_profile, self.operation) if part
        )
        return f"{scope} {self.mode} #{self.pk}"


LEDGER_MODELS: tuple[type[AppendOnlyModel], ...] = (
    ApprovalReview,
    CertificationRun,
    CertificationCheck,
    RuntimeControl,
)
