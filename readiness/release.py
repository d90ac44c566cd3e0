"""The ``provider-certification`` release gate.

A claim may stay in the public claims file only when the trusted ledger projection — the
append-only ledgers of the hosted production deployment (the check runs with that deployment's
configuration: ``HERALD_DEPLOYMENT=cloud``, ``HERALD_ENVIRONMENT=production``,
``HERALD_PROVIDER_ENVIRONMENT=production``), evaluated for the exact production subject with
enforcement on — supplies its current contract digest. Any other database (a build, a
developer's instance, a self-hosted or staging deployment) is no trusted projection, whatever
its ledgers hold. The gate asks that: production app configured; approval current and
approved (or explicitly not required); local and live runs current, passed and sharing the
current contract digest (each required check passed, or a contract-approved not-applicable);
the live run's granted scopes cover the required ones; policy allowed; runtime control enabled;
and nothing in the claim that looks like an account, operator, credential, URL or raw result.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.utils import timezone

from readiness.catalog import catalog
from readiness.claims import CLAIMS_FILE, MANIFEST_FILE, Claim, ClaimsError, verify_manifest
from readiness.decisions import Decision, DecisionInputs, Policy, evaluate
from readiness.evidence import load_evidence
from readiness.models import CertificationRun
from readiness.services import provider_app
from readiness.subjects import (
    NEVER_ADVERTISED,
    AppIdentity,
    Subject,
    contract_digest,
    make_subject,
)

UNSANITIZED = re.compile(
    r"://|@|hrld_|bearer|token|secret|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
    re.IGNORECASE,
)
GATE_FACTS = {
    "configuration": ("present",),
    "approval": ("approved", "not_required"),
    "local_test": ("passed",),
    "live_certification": ("passed",),
    "policy": ("allowed",),
    "control": ("enabled",),
}


@dataclass(frozen=True)
class GateResult:
    ok: bool
    reasons: tuple[str, ...]
    claim_count: int


def _claim_reasons(claim: Claim) -> list[str]:
    """Why the trusted ledger projection does not supply this claim's current digest."""
    catalogue = catalog()
    label = f"{claim.provider} {claim.output_profile or '-'} {claim.operation}"
    if refusal := _refusal(claim, catalogue.providers()):
        return [f"{label}: {refusal}"]
    caps = catalogue.capabilities(claim.provider)
    app = provider_app(claim.provider, caps)
    try:
        subject = _production_subject(claim, caps, app)
    except ValueError as exc:
        return [f"{label}: {exc}"]
    current = contract_digest(caps, subject)
    reasons = []
    if claim.contract_digest != current:
        reasons.append(
            f"{label}: the claim's contract digest {claim.contract_digest} is not the current {current}"
        )
    evidence = load_evidence([subject])
    decision = evaluate(
        DecisionInputs(
            subject=subject,
            caps=caps,
            app=app,
            contract=current,
            evidence=evidence,
            policy=_production_policy(),
            now=timezone.now(),
        )
    )
    reasons += [f"{label}: {reason}" for reason in _gate_reasons(decision)]
    live = evidence.run(subject, "live", current)
    if live is not None and set(live.required_scopes) - set(live.granted_scopes):
        reasons.append(f"{label}: the live run's granted scopes do not cover the required scopes")
    return reasons


def _refusal(claim: Claim, providers: Sequence[str]) -> str:
    """Why this claim can never be supplied, whatever the ledgers hold, or ``""``."""
    if any(
        UNSANITIZED.search(value)
        for value in (claim.provider, claim.output_profile, claim.operation)
    ):
        return "a claim must not carry account, operator, credential, URL or raw result data"
    if claim.provider in NEVER_ADVERTISED:
        return f"{claim.provider} has no public hosted claim and is never advertised"
    if claim.provider not in providers:
        return f"no adapter implements {claim.provider}"
    return ""


def _production_subject(claim: Claim, caps: Any, app: AppIdentity) -> Subject:
    """The exact subject of the hosted production deployment (``ValueError`` when the claim
    names no valid one)."""
    return make_subject(
        provider=claim.provider,
        app=app,
        operation=claim.operation,
        output_profile=claim.output_profile,
        account_kind=caps.account_kind,
        federated=caps.federated,
        deployment_environment="production",
        provider_environment="production",
    )


def _production_policy() -> Policy:
    """The hosted production deployment's policy: enforced, with this instance's disables and
    restrictions; no claim counts as advertised while the claims themselves are checked."""
    return Policy(
        enforced=True,
        deployment="cloud",
        disabled_providers=frozenset(settings.HERALD_DISABLED_PROVIDERS),
        restrictions=frozenset(settings.HERALD_PROVIDER_POLICY_RESTRICTIONS),
        claims=frozenset(),
    )


def _gate_reasons(decision: Decision) -> list[str]:
    reasons = []
    for fact, allowed in GATE_FACTS.items():
        status = decision.facts[fact]["status"]
        if status not in allowed:
            reasons.append(f"{fact} is {status} (needs {' or '.join(allowed)})")
    return reasons


def untrusted_reason() -> str:
    """Why this process's ledger is not the trusted (hosted production) projection, or ``""``."""
    wrong = [
        f"{name}={value}"
        for name, value, needed in (
            ("HERALD_DEPLOYMENT", settings.HERALD_DEPLOYMENT, "cloud"),
            ("HERALD_ENVIRONMENT", settings.HERALD_ENVIRONMENT, "production"),
            ("HERALD_PROVIDER_ENVIRONMENT", settings.HERALD_PROVIDER_ENVIRONMENT, "production"),
        )
        if value != needed
    ]
    if wrong:
        return (
            "this is not the hosted production deployment ("
            + ", ".join(wrong)
            + "), so its ledger is no "
            "trusted ledger projection"
        )
    if not CertificationRun.objects.exists():
        return "this instance's certification ledger is empty"
    return ""


def provider_certification_check(
    *, claims_path: Path = CLAIMS_FILE, manifest_path: Path = MANIFEST_FILE
) -> GateResult:
    try:
        claims = verify_manifest(claims_path, manifest_path)
    except ClaimsError as exc:
        return GateResult(
            False, (f"the claims file is not bound by the release manifest: {exc}",), 0
        )
    if not claims:
        return GateResult(True, (), 0)
    if reason := untrusted_reason():
        return GateResult(
            False,
            (
                f"{len(claims)} claim(s) but no trusted ledger projection supplies current contract digests "
                f"({reason}); public claims need passing local and live certification of the exact production "
                "subject",
            ),
            len(claims),
        )
    reasons = [reason for claim in claims for reason in _claim_reasons(claim)]
    return GateResult(not reasons, tuple(reasons), len(claims))
