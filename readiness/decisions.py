"""Evaluate one subject from the seven facts (spec §1). Pure: no I/O.

Precedence, first match wins (fail-closed): ``unsupported`` → ``disabled`` →
``needs_configuration`` → ``reconnect_required`` → ``degraded`` → ``approval_required`` →
``trial_only`` → ``policy_restricted`` → ``expired_proof`` → ``certification_required`` →
``healthy``. A decision lists every blocker; a healthy one carries none (no warning, no badge).

Blockers that always block, whatever the enforcement flag: explicit disables, missing
configuration, revoked or invalid grants, policy restrictions (and an unsupported format or an
operator's ``degraded`` control, or ledgers that cannot be read). Evidence, approval,
runtime-control and scope gaps block only when enforcement applies
(``HERALD_DEPLOYMENT=cloud`` and ``SERVICE_PROVIDER_CERTIFICATION_ENFORCED=true``); otherwise
they are visible in ``facts`` only. The ``certification_test`` intent bypasses local and live
evidence and is otherwise strict: approval (or trial permission), scope and runtime-control
gaps block it whatever the flag.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from readiness.evidence import Evidence
from readiness.subjects import NEVER_ADVERTISED, PUBLISH_OPERATIONS, AppIdentity, Subject

NORMAL = "normal"
CERTIFICATION_TEST = "certification_test"
INTENTS = (NORMAL, CERTIFICATION_TEST)

STATES = (
    "unsupported",
    "disabled",
    "needs_configuration",
    "reconnect_required",
    "degraded",
    "approval_required",
    "trial_only",
    "policy_restricted",
    "expired_proof",
    "certification_required",
)
HEALTHY = "healthy"
FACTS = (
    "configuration",
    "local_test",
    "live_certification",
    "approval",
    "authorization",
    "policy",
    "control",
)

# code -> (state, always blocking?, fact). ``always=False``: an enforcement-gated gap.
BLOCKERS: dict[str, tuple[str, bool, str]] = {
    "unsupported_provider": ("unsupported", True, "configuration"),
    "unsupported_profile": ("unsupported", True, "configuration"),
    "unsupported_operation": ("unsupported", True, "configuration"),
    "provider_disabled": ("disabled", True, "control"),
    "control_disabled": ("disabled", True, "control"),
    "app_missing": ("needs_configuration", True, "configuration"),
    "credentials_unreadable": ("needs_configuration", True, "configuration"),
    "grant_invalid": ("reconnect_required", True, "authorization"),
    "credentials_missing": ("reconnect_required", True, "authorization"),
    "scope_missing": ("reconnect_required", False, "authorization"),
    "control_degraded": ("degraded", True, "control"),
    # No current control enables the subject: fail closed under enforcement, but as the
    # control's own actionable state, not as ``disabled`` (reserved for explicit disables, which
    # always win) and below missing configuration and invalid grants (reported directly).
    "control_missing": ("degraded", False, "control"),
    "readiness_unavailable": ("degraded", True, "control"),
    "approval_missing": ("approval_required", False, "approval"),
    "approval_rejected": ("approval_required", False, "approval"),
    "approval_expired": ("approval_required", False, "approval"),
    "approval_operation_not_permitted": ("approval_required", False, "approval"),
    "approval_trial": ("trial_only", False, "approval"),
    "policy_restricted": ("policy_restricted", True, "policy"),
    "non_production_identity": ("policy_restricted", True, "policy"),
    "local_test_expired": ("expired_proof", False, "local_test"),
    "live_certification_expired": ("expired_proof", False, "live_certification"),
    "local_test_missing": ("certification_required", False, "local_test"),
    "local_test_failed": ("certification_required", False, "local_test"),
    "live_certification_missing": ("certification_required", False, "live_certification"),
    "live_certification_failed": ("certification_required", False, "live_certification"),
}
# Blockers of the whole provider: they also stop a connect or reconnect.
PROVIDER_WIDE = frozenset(
    {
        "unsupported_provider",
        "provider_disabled",
        "app_missing",
        "non_production_identity",
        "readiness_unavailable",
    }
)
EVIDENCE_FACTS = ("local_test", "live_certification")
CONTROL_RANK = {"enabled": 0, "missing": 1, "degraded": 2, "disabled": 3}


@dataclass(frozen=True)
class Blocker:
    code: str
    detail: str

    def as_dict(self) -> dict[str, str]:
        return {"code": self.code, "detail": self.detail}


@dataclass(frozen=True)
class Decision:
    state: str
    blockers: tuple[Blocker, ...] = ()
    facts: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    subject: Subject | None = None
    contract_digest: str = ""
    connectable: bool = False
    advertisable: bool = False
    intent: str = NORMAL

    @property
    def executable(self) -> bool:
        return self.state == HEALTHY

    @property
    def publishable(self) -> bool:
        return (
            self.executable
            and self.subject is not None
            and self.subject.operation in PUBLISH_OPERATIONS
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "executable": self.executable,
            "connectable": self.connectable,
            "publishable": self.publishable,
            "advertisable": self.advertisable,
            "intent": self.intent,
            "facts": {name: dict(value) for name, value in self.facts.items()},
            "blockers": [b.as_dict() for b in self.blockers],
            "contract_digest": self.contract_digest,
            "subject_digest": self.subject.digest if self.subject is not None else "",
            "subject": self.subject.as_dict() if self.subject is not None else None,
        }


@dataclass(frozen=True)
class AccountFacts:
    """What the decision needs to know about one connected account (no secret, no ID)."""

    status: str  # active | reconnect_required | disconnected
    has_credentials: bool
    credentials_readable: bool
    has_app: bool
    granted_scopes: tuple[str, ...]


@dataclass(frozen=True)
class Policy:
    enforced: bool
    deployment: str
    disabled_providers: frozenset[str]
    restrictions: frozenset[str]
    claims: frozenset[tuple[str, str, str, str]]  # (provider, output_profile, operation, contract)


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def evaluate(
    *,
    subject: Subject,
    caps: Any,
    app: AppIdentity,
    contract: str,
    evidence: Evidence,
    policy: Policy,
    now: datetime,
    account: AccountFacts | None = None,
    intent: str = NORMAL,
) -> Decision:
    if intent not in INTENTS:
        raise ValueError(f"unknown execution intent {intent!r}")
    found: list[Blocker] = []
    facts: dict[str, dict[str, Any]] = {}

    def block(code: str, detail: str) -> None:
        found.append(Blocker(code, detail))

    provider = subject.provider
    operation = subject.operation

    # Capability metadata: is this format and operation implemented at all?
    if caps is None:
        block("unsupported_provider", f"Herald has no adapter for {provider}.")
    else:
        if operation in PUBLISH_OPERATIONS and caps.profile(subject.output_profile) is None:
            block(
                "unsupported_profile",
                f"{subject.output_profile or 'This format'} is not implemented.",
            )
        if operation == "refresh" and not caps.supports_refresh:
            block("unsupported_operation", f"{provider} has no refresh operation.")
        if operation == "revoke" and not caps.supports_revoke:
            block("unsupported_operation", f"{provider} has no revoke operation.")

    # Runtime control: the most restrictive current environment or ledger control.
    if evidence.unavailable:
        facts["control"] = {"status": "unknown", "source": "ledger"}
        block(
            "readiness_unavailable",
            "The readiness ledgers cannot be read; nothing runs until they can.",
        )
    elif provider in policy.disabled_providers:
        facts["control"] = {"status": "disabled", "source": "environment"}
        block("provider_disabled", f"{provider} is disabled on this instance.")
    else:
        mode = _control_mode(evidence, subject)
        facts["control"] = {"status": mode, "source": "ledger"}
        if mode == "disabled":
            block("control_disabled", f"An operator disabled {provider} for this operation.")
        elif mode == "degraded":
            block(
                "control_degraded",
                f"An operator marked {provider} degraded; it runs again once enabled.",
            )
        elif mode == "missing":
            block("control_missing", f"No runtime control enables {provider} for this operation.")

    # Configuration: the effective app, and credentials this instance can read.
    facts["configuration"] = {
        "status": "present" if app.present else "missing",
        "source": app.source,
    }
    if caps is not None and not app.present:
        block("app_missing", "The provider app is not configured.")
    if account is not None and caps is not None:
        # An account of an environment app uses the deployment's app (no registration row).
        if (
            str(getattr(caps.connection, "value", caps.connection)) == "oauth2"
            and not account.has_app
            and app.source != "environment"
        ):
            facts["configuration"] = {"status": "missing", "source": app.source}
            block("app_missing", "The account's provider app registration is missing.")
        if (
            account.status == "active"
            and account.has_credentials
            and not account.credentials_readable
        ):
            facts["configuration"] = {"status": "unreadable", "source": app.source}
            block(
                "credentials_unreadable",
                "The stored credentials cannot be decrypted with HERALD_CREDENTIALS_KEY.",
            )

    # Authorization: the exact account grant (and, when enforced, every recorded scope).
    live = evidence.run(subject, "live", contract)
    if account is None:
        facts["authorization"] = {"status": "not_applicable"}
    elif account.status != "active":
        facts["authorization"] = {"status": "invalid"}
        block("grant_invalid", "The account's grant was revoked or is invalid; reconnect it.")
    elif not account.has_credentials:
        facts["authorization"] = {"status": "missing"}
        block("credentials_missing", "The account has no stored credentials; reconnect it.")
    else:
        required = set(caps.required_scopes if caps is not None else ()) | set(
            live.required_scopes if live else ()
        )
        missing = sorted(required - set(account.granted_scopes))
        facts["authorization"] = {"status": "scope_missing" if missing else "valid"}
        if missing:
            block(
                "scope_missing",
                f"The grant lacks required scopes ({', '.join(missing)}); reconnect it.",
            )

    # Approval: the provider app's reviewed tier is current and permits the operation.
    approval = evidence.approval(subject)
    if approval is None:
        facts["approval"] = {"status": "missing"}
        block("approval_missing", f"No approval review is recorded for this {provider} app.")
    elif approval.expires_at is not None and approval.expires_at <= now:
        facts["approval"] = {"status": "expired", "expires_at": _iso(approval.expires_at)}
        block("approval_expired", f"The approval review of this {provider} app has expired.")
    elif approval.outcome == "rejected":
        facts["approval"] = {"status": "rejected"}
        block("approval_rejected", f"The {provider} app's review was rejected.")
    elif approval.outcome in ("approved", "trial", "not_required") and (
        approval.outcome == "not_required" or operation in approval.operations
    ):
        facts["approval"] = {"status": approval.outcome, "expires_at": _iso(approval.expires_at)}
        if approval.outcome == "trial" and intent != CERTIFICATION_TEST:
            block(
                "approval_trial",
                f"The {provider} app has trial permission only (certification tests).",
            )
    else:
        facts["approval"] = {"status": "not_permitted"}
        block(
            "approval_operation_not_permitted",
            f"The {provider} app's reviewed tier does not permit {operation}.",
        )

    # Policy: the server permits the account, the format and the policy mode.
    restricted = _restricted(policy, subject)
    identity_ok = not (
        policy.deployment == "cloud"
        and subject.deployment_environment == "production"
        and subject.provider_environment != "production"
    )
    facts["policy"] = {
        "status": "allowed" if (not restricted and identity_ok) else "restricted",
        "mode": subject.policy_mode,
    }
    if restricted:
        block("policy_restricted", f"This server's policy does not permit {restricted}.")
    if not identity_ok:
        block(
            "non_production_identity",
            f"A cloud production deployment must use a production {provider} app identity.",
        )

    # Local and live evidence: current, complete, this subject and this contract.
    for kind, fact in (("local", "local_test"), ("live", "live_certification")):
        run = evidence.run(subject, kind, contract) if kind == "local" else live
        label = "local test" if kind == "local" else "live certification"
        if run is None:
            status = "missing"
            code, detail = (
                f"{fact}_missing",
                f"No current {label} matches this subject and contract.",
            )
        elif run.outcome != "passed":
            status = "failed"
            code, detail = f"{fact}_failed", f"The latest {label} of this subject failed."
        elif run.expires_at <= now:
            status = "expired"
            code, detail = f"{fact}_expired", f"The {label} proof expired; retest it."
        else:
            status, code, detail = "passed", "", ""
        facts[fact] = {
            "status": status,
            "tested_at": _iso(run.tested_at) if run else None,
            "expires_at": _iso(run.expires_at) if run else None,
        }
        if code and intent == CERTIFICATION_TEST:
            facts[fact]["status"] = f"bypassed_{status}"  # only prior evidence is bypassed
        elif code:
            block(code, detail)

    # Only what blocks is listed: always-blocking codes, and the gated gaps under enforcement. A
    # certification test is strict whatever the flag: it bypasses prior local and live evidence
    # only (those gaps were never added above) and still requires approval or trial permission,
    # every scope and an enabled runtime control (spec §1 "Certification evidence ledgers").
    strict = policy.enforced or intent == CERTIFICATION_TEST
    blockers = tuple(b for b in found if BLOCKERS[b.code][1] or strict)
    state = min((BLOCKERS[b.code][0] for b in blockers), key=STATES.index, default=HEALTHY)
    executable = state == HEALTHY
    if operation == "connect":
        connectable = executable
    else:  # a reconnect is possible: nothing provider-wide blocks, and no control stops a connect
        connect_control = _control_mode(evidence, subject, operation="connect", output_profile="")
        connectable = (
            not any(b.code in PROVIDER_WIDE for b in blockers)
            and not evidence.unavailable
            and (
                connect_control == "enabled"
                or (connect_control == "missing" and not policy.enforced)
            )
        )
    advertisable = (
        executable
        and intent == NORMAL
        and provider not in NEVER_ADVERTISED
        and (provider, subject.output_profile, operation, contract) in policy.claims
    )
    return Decision(
        state=state,
        blockers=blockers,
        facts={name: facts[name] for name in FACTS},
        subject=subject,
        contract_digest=contract,
        connectable=connectable,
        advertisable=advertisable,
        intent=intent,
    )


def _control_mode(
    evidence: Evidence,
    subject: Subject,
    *,
    operation: str | None = None,
    output_profile: str | None = None,
) -> str:
    """The most restrictive current ledger control among the scopes covering the subject (or the
    same subject with another operation and output profile)."""
    operation = subject.operation if operation is None else operation
    output_profile = subject.output_profile if output_profile is None else output_profile
    modes = [
        control.mode
        for control in evidence.controls_for(subject.provider)
        if control.output_profile in ("", output_profile) and control.operation in ("", operation)
    ]
    if not modes:
        return "missing"
    return max(modes, key=lambda mode: CONTROL_RANK.get(mode, CONTROL_RANK["disabled"]))


def _restricted(policy: Policy, subject: Subject) -> str:
    """The first restriction covering the subject: its provider, format, account kind or policy
    mode (``mode:<policy_mode>`` for every provider, ``<provider>@<policy_mode>`` for one)."""
    candidates = [subject.provider]
    if subject.output_profile:
        candidates.append(subject.output_profile)
    if subject.account_kind:
        candidates.append(f"{subject.provider}:{subject.account_kind}")
    if subject.policy_mode:
        candidates += [f"mode:{subject.policy_mode}", f"{subject.provider}@{subject.policy_mode}"]
    return next((c for c in candidates if c in policy.restrictions), "")
