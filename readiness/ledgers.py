"""Appends to the four readiness ledgers: the only way evidence enters them.

The caller names the subject in plain terms (provider, format, operation, optionally the account
used or the federated instance); the server fills everything bound to it — operator, account,
instance and external-result fingerprints, the subject digest, the contract digest, the tested
source revision, the deployment and provider environment, the policy mode and the scope
snapshots — and derives a run's outcome from its checks. Only normalized outcomes and one-way
fingerprints are stored.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from config.errors import FieldValidationError, PermissionDeniedError, field_error
from config.types import ModelId
from readiness.catalog import catalog
from readiness.models import (
    OPERATIONS,
    ApprovalReview,
    CertificationCheck,
    CertificationRun,
    RuntimeControl,
)
from readiness.subjects import (
    PUBLISH_OPERATIONS,
    Subject,
    account_fingerprint,
    contract_digest,
    make_subject,
    not_applicable_allowed,
    operator_fingerprint,
    required_checks,
    result_fingerprint,
    source_revision,
)

MAX_RETEST_DAYS = 365
# Account kinds a run may name without an account (the adapters' kinds). A closed list, so that
# the column cannot carry an account name, e-mail address or URL.
ACCOUNT_KINDS = ("user", "bot", "webhook", "channel", "page", "organization")
# A scope snapshot keeps plain scope names only: a federated server reports the granted scopes
# itself, and anything URL- or address-like (``https://…/auth/x``, ``a@b``) is left out.
SAFE_SCOPE = re.compile(r"^[A-Za-z0-9_.:\-]{1,80}$")


def _scope_snapshot(scopes: Any) -> list[str]:
    return sorted({str(scope) for scope in scopes or () if SAFE_SCOPE.fullmatch(str(scope))})


def _require_admin(operator: Any) -> None:
    if not (operator is not None and operator.is_authenticated and operator.is_superuser):
        raise PermissionDeniedError(
            "Only an instance administrator may append readiness evidence.",
            code="instance_admin_required",
        )


def _capabilities(provider: str, location: str = "body.provider") -> Any:
    catalogue = catalog()
    if provider not in catalogue.providers():
        raise FieldValidationError.at(
            location, f"One of {', '.join(catalogue.providers())}.", value=provider
        )
    return catalogue.capabilities(provider)


def _check_profile(caps: Any, output_profile: str, location: str = "body.output_profile") -> None:
    if output_profile and caps.profile(output_profile) is None:
        keys = ", ".join(p.key for p in caps.profiles)
        raise FieldValidationError.at(location, f"One of {keys}.", value=output_profile)


def _app(provider: str, caps: Any) -> Any:
    from readiness.services import provider_app

    return provider_app(provider, caps)


@transaction.atomic
def approval_review_append(
    *,
    operator: Any,
    provider: str,
    outcome: str,
    operations: list[str] | None = None,
    review_reference: str = "",
    reviewed_at: datetime | None = None,
    expires_at: datetime | None = None,
) -> ApprovalReview:
    _require_admin(operator)
    caps = _capabilities(provider)
    if operations is not None and not operations:  # permits nothing: that is a rejection, say so
        raise FieldValidationError.at(
            "body.operations", "Name at least one operation, or leave it out for all.", value=[]
        )
    now = timezone.now()
    if reviewed_at is not None and reviewed_at > now + timedelta(minutes=5):
        raise FieldValidationError.at(
            "body.reviewed_at", "Must not be in the future.", value=reviewed_at.isoformat()
        )
    if expires_at is not None and expires_at <= (reviewed_at or now):
        raise FieldValidationError.at(
            "body.expires_at", "Must be after the review time.", value=expires_at.isoformat()
        )
    return ApprovalReview.objects.create(
        provider=provider,
        app_fingerprint=_app(provider, caps).fingerprint,
        provider_environment=settings.HERALD_PROVIDER_ENVIRONMENT,
        outcome=outcome,
        operations=sorted(set(OPERATIONS if operations is None else operations)),
        reference_fingerprint=result_fingerprint(review_reference) if review_reference else "",
        operator_fingerprint=operator_fingerprint(operator),
        reviewed_at=reviewed_at or now,
        expires_at=expires_at,
    )


@transaction.atomic
def runtime_control_append(
    *,
    operator: Any,
    provider: str,
    mode: str,
    reason: str,
    output_profile: str = "",
    operation: str = "",
) -> RuntimeControl:
    _require_admin(operator)
    caps = _capabilities(provider)
    _check_profile(caps, output_profile)
    if output_profile and operation and operation not in PUBLISH_OPERATIONS:
        # Only publish subjects have an output profile: such a control would cover nothing.
        raise FieldValidationError.at(
            "body.output_profile",
            f"A {operation} control covers the whole provider; leave it blank.",
            value=output_profile,
        )
    return RuntimeControl.objects.create(
        provider=provider,
        output_profile=output_profile,
        operation=operation,
        mode=mode,
        reason=reason,
        operator_fingerprint=operator_fingerprint(operator),
    )


def _run_outcome(caps: Any, operation: str, checks: list[dict[str, str]]) -> str:
    """``passed`` only when every required check passed, or is a contract-approved
    not-applicable refresh/revoke; anything else is a failed run (422 when malformed)."""
    required = required_checks(operation)
    allowed = not_applicable_allowed(caps)
    errors: list[dict[str, Any]] = []
    names = [check["name"] for check in checks]
    for index, check in enumerate(checks):
        location = f"body.checks[{index}]"
        if check["name"] not in required:
            errors.append(
                field_error(
                    f"{location}.name",
                    f"Not a check of {operation}; required: {', '.join(required)}.",
                    value=check["name"],
                )
            )
        elif names.count(check["name"]) > 1:
            errors.append(field_error(f"{location}.name", "Each check once.", value=check["name"]))
        if check["outcome"] == "not_applicable":
            reasons = allowed.get(check["name"], ())
            if check.get("reason", "") not in reasons:
                errors.append(
                    field_error(
                        f"{location}.reason",
                        "Not applicable is allowed only with a contract-approved reason"
                        + (f": {', '.join(reasons)}." if reasons else "; this check has none."),
                        value=check.get("reason", ""),
                    )
                )
        elif check.get("reason"):
            errors.append(
                field_error(f"{location}.reason", "Only a not-applicable result has a reason.")
            )
    for name in required:
        if name not in names:
            errors.append(field_error("body.checks", f"The {name} check is missing."))
    if errors:
        raise FieldValidationError(errors)
    return "passed" if all(check["outcome"] != "failed" for check in checks) else "failed"


@transaction.atomic
def certification_append(
    *,
    operator: Any,
    kind: str,
    provider: str,
    operation: str,
    checks: list[dict[str, str]],
    output_profile: str = "",
    account_id: ModelId | None = None,
    account_kind: str = "",
    instance_url: str = "",
    external_result_reference: str = "",
    tested_at: datetime | None = None,
    retest_days: int | None = None,
) -> CertificationRun:
    """Append one certification run and its checks (one transaction)."""
    _require_admin(operator)
    caps = _capabilities(provider)
    _check_run_format(caps, operation, output_profile, external_result_reference)
    account = _named_account(provider, account_id)
    _check_run_identity(caps, provider, kind, account, account_kind, instance_url)
    outcome = _proven_outcome(caps, operation, checks, account)
    tested = _tested_at(tested_at)
    subject = _run_subject(
        caps, provider, operation, output_profile, account, account_kind, instance_url
    )
    run = CertificationRun.objects.create(
        kind=kind,
        **subject.as_dict(),
        subject_digest=subject.digest,
        contract_digest=contract_digest(caps, subject),
        tested_revision=source_revision(),
        operator_fingerprint=operator_fingerprint(operator),
        account_fingerprint=account_fingerprint(account.pk) if account is not None else "",
        external_result_fingerprint=(
            result_fingerprint(external_result_reference) if external_result_reference else ""
        ),
        required_scopes=_scope_snapshot(caps.required_scopes),
        granted_scopes=_scope_snapshot(account.granted_scopes) if account is not None else [],
        outcome=outcome,
        tested_at=tested,
        expires_at=tested
        + timedelta(days=retest_days or settings.HERALD_CERTIFICATION_RETEST_DAYS),
    )
    CertificationCheck.objects.bulk_create(
        CertificationCheck(
            run=run, name=check["name"], outcome=check["outcome"], reason=check.get("reason", "")
        )
        for check in checks
    )
    return run


def _check_run_format(
    caps: Any, operation: str, output_profile: str, external_result_reference: str
) -> None:
    """A publish run names an implemented output profile and the external result it made (kept
    only as a fingerprint); any other run names no profile."""
    if operation not in PUBLISH_OPERATIONS:
        if output_profile:
            raise FieldValidationError.at(
                "body.output_profile", "Only publish operations have an output profile."
            )
        return
    if not output_profile:
        raise FieldValidationError.at("body.output_profile", "Required for a publish operation.")
    _check_profile(caps, output_profile)
    if not external_result_reference:
        raise FieldValidationError.at(
            "body.external_result_reference",
            "Required for a publish operation (stored only as a fingerprint).",
        )


def _named_account(provider: str, account_id: ModelId | None) -> Any:
    """The connected account of this provider the run used, or ``None`` when it names none."""
    if account_id is None:
        return None
    account = catalog().connected_account(account_id)
    if account is None or account.provider != provider:
        raise FieldValidationError.at(
            "body.account_id", f"No connected {provider} account with this ID."
        )
    return account


def _check_run_identity(
    caps: Any, provider: str, kind: str, account: Any, account_kind: str, instance_url: str
) -> None:
    """A live run names its account; federated evidence names its instance (through the account
    or ``instance_url``), and only federated evidence does; an account kind, when given, agrees
    with the account's and is one of the adapters' kinds (never free text)."""
    if kind == "live" and account is None:
        raise FieldValidationError.at(
            "body.account_id", "A live certification names the real account it used."
        )
    if caps.federated and account is None and not instance_url:
        raise FieldValidationError.at(
            "body.instance_url", "A federated provider's evidence names its instance."
        )
    if instance_url and not caps.federated:
        raise FieldValidationError.at(
            "body.instance_url", f"{provider} has no federated instances."
        )
    if account_kind and account is not None and account_kind != account.account_kind:
        raise FieldValidationError.at(
            "body.account_kind", "The account kind comes from the named account.", account_kind
        )
    if account_kind and account_kind not in (*ACCOUNT_KINDS, caps.account_kind):
        raise FieldValidationError.at(
            "body.account_kind", f"One of {', '.join(ACCOUNT_KINDS)}.", account_kind
        )


def _proven_outcome(caps: Any, operation: str, checks: list[dict[str, str]], account: Any) -> str:
    """The outcome the checks give; ``failed`` whatever was reported when the tested grant lacks
    a contract scope (no proof)."""
    reported = _run_outcome(caps, operation, checks)
    if account is not None and set(caps.required_scopes) - set(account.granted_scopes or []):
        return "failed"
    return reported


def _run_subject(
    caps: Any,
    provider: str,
    operation: str,
    output_profile: str,
    account: Any,
    account_kind: str,
    instance_url: str,
) -> Subject:
    """The exact subject the run proves: the named account's instance and kind, else the
    instance given and the kind given (the provider's by default)."""
    return make_subject(
        provider=provider,
        app=_app(provider, caps),
        operation=operation,
        output_profile=output_profile,
        instance_url=account.instance_url if account is not None else instance_url,
        account_kind=(
            account.account_kind if account is not None else account_kind or caps.account_kind
        ),
        federated=caps.federated,
    )


def _tested_at(tested_at: datetime | None) -> datetime:
    """When the run was tested (now when not given); never in the future, beyond clock skew."""
    now = timezone.now()
    tested = tested_at or now
    if tested > now + timedelta(minutes=5):
        raise FieldValidationError.at(
            "body.tested_at", "Must not be in the future.", tested.isoformat()
        )
    return tested
