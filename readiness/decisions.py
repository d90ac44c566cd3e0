"""Evaluate one subject from the seven facts. Pure: no I/O.

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

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from readiness.evidence import Evidence, RunFact
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
    # The scopes this account's connection requires when they are not the provider's (an
    # Instagram account connected through Instagram's own login); None: the provider's.
    required_scopes: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Policy:
    enforced: bool
    deployment: str
    disabled_providers: frozenset[str]
    restrictions: frozenset[str]
    claims: frozenset[tuple[str, str, str, str]]  # (provider, output_profile, operation, contract)


@dataclass(frozen=True)
class DecisionInputs:
    """Everything one decision is made from: the exact subject, what Herald implements for its
    provider (``caps``, ``None`` for no adapter), the effective app, the current contract digest,
    the ledger evidence, the server's policy, the time, the account (``None`` for the provider as
    a whole) and the execution intent."""

    subject: Subject
    caps: Any
    app: AppIdentity
    contract: str
    evidence: Evidence
    policy: Policy
    now: datetime
    account: AccountFacts | None = None
    intent: str = NORMAL

    def run(self, kind: str) -> RunFact | None:
        """The current ``local`` or ``live`` run of this subject and contract."""
        return self.evidence.run(self.subject, kind, self.contract)


@dataclass(frozen=True)
class Finding:
    """One fact as reported, and its gaps (whether a gap blocks is decided afterwards)."""

    fact: dict[str, Any]
    gaps: tuple[Blocker, ...] = ()

    @classmethod
    def gap(cls, fact: dict[str, Any], code: str, detail: str) -> Finding:
        """A fact with one gap."""
        return cls(fact, (Blocker(code, detail),))


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def evaluate(inputs: DecisionInputs) -> Decision:
    if inputs.intent not in INTENTS:
        raise ValueError(f"unknown execution intent {inputs.intent!r}")
    findings = {name: rule(inputs) for name, rule in FACT_RULES.items()}
    gaps = [*_capability_gaps(inputs), *(gap for f in findings.values() for gap in f.gaps)]
    # Only what blocks is listed: always-blocking codes, and the gated gaps under enforcement. A
    # certification test is strict whatever the flag: it bypasses prior local and live evidence
    # only (those gaps are never reported) and still requires approval or trial permission,
    # every scope and an enabled runtime control.
    strict = inputs.policy.enforced or inputs.intent == CERTIFICATION_TEST
    blockers = tuple(gap for gap in gaps if BLOCKERS[gap.code][1] or strict)
    state = min((BLOCKERS[b.code][0] for b in blockers), key=STATES.index, default=HEALTHY)
    return Decision(
        state=state,
        blockers=blockers,
        facts={name: findings[name].fact for name in FACTS},
        subject=inputs.subject,
        contract_digest=inputs.contract,
        connectable=_connectable(inputs, state == HEALTHY, blockers),
        advertisable=_advertisable(inputs, state == HEALTHY),
        intent=inputs.intent,
    )


def _capability_gaps(inputs: DecisionInputs) -> list[Blocker]:
    """Is this format and operation implemented at all? (Reported under ``configuration``.)"""
    caps, subject = inputs.caps, inputs.subject
    provider, operation = subject.provider, subject.operation
    if caps is None:
        return [Blocker("unsupported_provider", f"Herald has no adapter for {provider}.")]
    gaps = []
    if operation in PUBLISH_OPERATIONS and caps.profile(subject.output_profile) is None:
        gaps.append(
            Blocker(
                "unsupported_profile",
                f"{subject.output_profile or 'This format'} is not implemented.",
            )
        )
    if operation == "refresh" and not caps.supports_refresh:
        gaps.append(Blocker("unsupported_operation", f"{provider} has no refresh operation."))
    if operation == "revoke" and not caps.supports_revoke:
        gaps.append(Blocker("unsupported_operation", f"{provider} has no revoke operation."))
    return gaps


def _control(inputs: DecisionInputs) -> Finding:
    """The runtime control: the most restrictive current environment or ledger control."""
    provider = inputs.subject.provider
    if inputs.evidence.unavailable:
        return Finding.gap(
            {"status": "unknown", "source": "ledger"},
            "readiness_unavailable",
            "The readiness ledgers cannot be read; nothing runs until they can.",
        )
    if provider in inputs.policy.disabled_providers:
        return Finding.gap(
            {"status": "disabled", "source": "environment"},
            "provider_disabled",
            f"{provider} is disabled on this instance.",
        )
    mode = _control_mode(inputs.evidence, inputs.subject)
    gaps = {
        "disabled": ("control_disabled", f"An operator disabled {provider} for this operation."),
        "degraded": (
            "control_degraded",
            f"An operator marked {provider} degraded; it runs again once enabled.",
        ),
        "missing": (
            "control_missing",
            f"No runtime control enables {provider} for this operation.",
        ),
    }
    gap = gaps.get(mode)
    return Finding({"status": mode, "source": "ledger"}, (Blocker(*gap),) if gap else ())


def _configuration(inputs: DecisionInputs) -> Finding:
    """The effective app, and credentials this instance can read."""
    caps, app = inputs.caps, inputs.app
    account = inputs.account if caps is not None else None  # no adapter: nothing more to check
    # An account of an environment app uses the deployment's app (no registration row).
    registration_missing = (
        account is not None
        and str(getattr(caps.connection, "value", caps.connection)) == "oauth2"
        and not account.has_app
        and app.source != "environment"
    )
    unreadable = (
        account is not None
        and account.status == "active"
        and account.has_credentials
        and not account.credentials_readable
    )
    gaps = []
    if caps is not None and not app.present:
        gaps.append(Blocker("app_missing", "The provider app is not configured."))
    if registration_missing:
        gaps.append(Blocker("app_missing", "The account's provider app registration is missing."))
    if unreadable:
        gaps.append(
            Blocker(
                "credentials_unreadable",
                "The stored credentials cannot be decrypted with HERALD_CREDENTIALS_KEY.",
            )
        )
    if unreadable:
        status = "unreadable"
    elif registration_missing or not app.present:
        status = "missing"
    else:
        status = "present"
    return Finding({"status": status, "source": app.source}, tuple(gaps))


def _authorization(inputs: DecisionInputs) -> Finding:
    """The exact account grant, and every scope the contract or the live run requires."""
    account = inputs.account
    if account is None:
        return Finding({"status": "not_applicable"})
    if account.status != "active":
        return Finding.gap(
            {"status": "invalid"},
            "grant_invalid",
            "The account's grant was revoked or is invalid; reconnect it.",
        )
    if not account.has_credentials:
        return Finding.gap(
            {"status": "missing"},
            "credentials_missing",
            "The account has no stored credentials; reconnect it.",
        )
    live = inputs.run("live")
    own = account.required_scopes
    if own is None and inputs.caps is not None:
        own = inputs.caps.required_scopes
    required = {*(own or ()), *(live.required_scopes if live else ())}
    missing = sorted(required - set(account.granted_scopes))
    if not missing:
        return Finding({"status": "valid"})
    return Finding.gap(
        {"status": "scope_missing"},
        "scope_missing",
        f"The grant lacks required scopes ({', '.join(missing)}); reconnect it.",
    )


def _approval(inputs: DecisionInputs) -> Finding:
    """The provider app's reviewed tier is current and permits the operation."""
    provider, operation = inputs.subject.provider, inputs.subject.operation
    approval = inputs.evidence.approval(inputs.subject)
    if inputs.app.unaudited and inputs.intent != CERTIFICATION_TEST:
        return Finding.gap(
            {"status": approval.outcome if approval else "missing", "app_audited": False},
            "approval_trial",
            f"The {provider} app has not been audited by the network yet: it may post "
            "privately only.",
        )
    if approval is None:
        return Finding.gap(
            {"status": "missing"},
            "approval_missing",
            f"No approval review is recorded for this {provider} app.",
        )
    if approval.expires_at is not None and approval.expires_at <= inputs.now:
        return Finding.gap(
            {"status": "expired", "expires_at": _iso(approval.expires_at)},
            "approval_expired",
            f"The approval review of this {provider} app has expired.",
        )
    if approval.outcome == "rejected":
        return Finding.gap(
            {"status": "rejected"},
            "approval_rejected",
            f"The {provider} app's review was rejected.",
        )
    if not (
        approval.outcome == "not_required"
        or (approval.outcome in ("approved", "trial") and operation in approval.operations)
    ):
        return Finding.gap(
            {"status": "not_permitted"},
            "approval_operation_not_permitted",
            f"The {provider} app's reviewed tier does not permit {operation}.",
        )
    fact = {"status": approval.outcome, "expires_at": _iso(approval.expires_at)}
    if approval.outcome == "trial" and inputs.intent != CERTIFICATION_TEST:
        return Finding.gap(
            fact,
            "approval_trial",
            f"The {provider} app has trial permission only (certification tests).",
        )
    return Finding(fact)


def _policy(inputs: DecisionInputs) -> Finding:
    """The server permits the account, the format and the policy mode."""
    subject = inputs.subject
    restricted = _restricted(inputs.policy, subject)
    identity_ok = not (
        inputs.policy.deployment == "cloud"
        and subject.deployment_environment == "production"
        and subject.provider_environment != "production"
    )
    gaps = []
    if restricted:
        gaps.append(
            Blocker("policy_restricted", f"This server's policy does not permit {restricted}.")
        )
    if not identity_ok:
        gaps.append(
            Blocker(
                "non_production_identity",
                f"A cloud production deployment must use a production {subject.provider} app "
                "identity.",
            )
        )
    fact = {"status": "restricted" if gaps else "allowed", "mode": subject.policy_mode}
    return Finding(fact, tuple(gaps))


def _local_test(inputs: DecisionInputs) -> Finding:
    return _proof(inputs, "local", "local_test", "local test")


def _live_certification(inputs: DecisionInputs) -> Finding:
    return _proof(inputs, "live", "live_certification", "live certification")


def _proof(inputs: DecisionInputs, kind: str, fact: str, label: str) -> Finding:
    """Local or live evidence: current, complete, this subject and this contract. A certification
    test bypasses it: the gap shows only in the fact (``bypassed_<status>``)."""
    run = inputs.run(kind)
    if run is None:
        status, detail = "missing", f"No current {label} matches this subject and contract."
    elif run.outcome != "passed":
        status, detail = "failed", f"The latest {label} of this subject failed."
    elif run.expires_at <= inputs.now:
        status, detail = "expired", f"The {label} proof expired; retest it."
    else:
        status, detail = "passed", ""
    bypassed = status != "passed" and inputs.intent == CERTIFICATION_TEST
    reported = {
        "status": f"bypassed_{status}" if bypassed else status,
        "tested_at": _iso(run.tested_at) if run else None,
        "expires_at": _iso(run.expires_at) if run else None,
    }
    if status == "passed" or bypassed:
        return Finding(reported)
    return Finding.gap(reported, f"{fact}_{status}", detail)


# The fact rules in the order their gaps are listed (the facts themselves are reported in FACTS
# order).
FACT_RULES: dict[str, Callable[[DecisionInputs], Finding]] = {
    "control": _control,
    "configuration": _configuration,
    "authorization": _authorization,
    "approval": _approval,
    "policy": _policy,
    "local_test": _local_test,
    "live_certification": _live_certification,
}


def _connectable(inputs: DecisionInputs, executable: bool, blockers: tuple[Blocker, ...]) -> bool:
    """A connect: whether it may run. Anything else: whether a reconnect is possible (nothing
    provider-wide blocks, and no control stops a connect)."""
    if inputs.subject.operation == "connect":
        return executable
    connect_control = _control_mode(
        inputs.evidence, inputs.subject, operation="connect", output_profile=""
    )
    return (
        not any(b.code in PROVIDER_WIDE for b in blockers)
        and not inputs.evidence.unavailable
        and (
            connect_control == "enabled"
            or (connect_control == "missing" and not inputs.policy.enforced)
        )
    )


def _advertisable(inputs: DecisionInputs, executable: bool) -> bool:
    subject = inputs.subject
    return (
        executable
        and inputs.intent == NORMAL
        and subject.provider not in NEVER_ADVERTISED
        and (subject.provider, subject.output_profile, subject.operation, inputs.contract)
        in inputs.policy.claims
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
