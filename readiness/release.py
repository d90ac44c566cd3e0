"""The ``provider-certification`` release gate (spec §1 "Release gate").

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
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.utils import timezone

from readiness.catalog import catalog
from readiness.claims import CLAIMS_FILE, MANIFEST_FILE, Claim, ClaimsError, verify_manifest
from readiness.decisions import Policy, evaluate
from readiness.evidence import load_evidence
from readiness.models import CertificationRun
from readiness.services import provider_app
from readiness.subjects import NEVER_ADVERTISED, contract_digest, make_subject

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
    if any(
        UNSANITIZED.search(value)
        for value in (claim.provider, claim.output_profile, claim.operation)
    ):
        return [
            f"{label}: a claim must not carry account, operator, credential, URL or raw result data"
        ]
    if claim.provider in NEVER_ADVERTISED:
        return [f"{label}: {claim.provider} has no public hosted claim and is never advertised"]
    if claim.provider not in catalogue.providers():
        return [f"{label}: no adapter implements {claim.provider}"]
    caps = catalogue.capabilities(claim.provider)
    app = provider_app(claim.provider, caps)
    try:
        subject = make_subject(
            provider=claim.provider,
            app=app,
            operation=claim.operation,
            output_profile=claim.output_profile,
            account_kind=caps.account_kind,
            federated=caps.federated,
            deployment_environment="production",
            provider_environment="production",
        )
    except ValueError as exc:
        return [f"{label}: {exc}"]
    current = contract_digest(caps, subject)
    reasons = []
    if claim.contract_digest != current:
        reasons.append(
            f"{label}: the claim's contract digest {claim.contract_digest} is not the current {current}"
        )
    evidence = load_evidence([subject])
    policy = Policy(
        enforced=True,
        deployment="cloud",
        disabled_providers=frozenset(settings.HERALD_DISABLED_PROVIDERS),
        restrictions=frozenset(settings.HERALD_PROVIDER_POLICY_RESTRICTIONS),
        claims=frozenset(),
    )
    decision = evaluate(
        subject=subject,
        caps=caps,
        app=app,
        contract=current,
        evidence=evidence,
        policy=policy,
        now=timezone.now(),
    )
    for fact, allowed in GATE_FACTS.items():
        status = decision.facts[fact]["status"]
        if status not in allowed:
            reasons.append(f"{label}: {fact} is {status} (needs {' or '.join(allowed)})")
    live = evidence.run(subject, "live", current)
    if live is not None and set(live.required_scopes) - set(live.granted_scopes):
        reasons.append(f"{label}: the live run's granted scopes do not cover the required scopes")
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
