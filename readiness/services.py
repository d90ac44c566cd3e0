"""The readiness service: may this exact operation run now? (docs/decisions/0008-readiness-and-certification.md)

Every caller asks here — connect, queue actions, the delivery worker before each provider call,
the catalogue, capability resolution and ``GET /provider-readiness`` — and all of them go
through ``decide_many``: build the exact subject of each request, read the current ledger facts
for all subjects at once (one statement of three indexed look-ups, no cache), evaluate the
seven facts.

The ledger appends (approval reviews, certification runs with their checks, runtime controls)
live in ``readiness.ledgers``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.utils import timezone

from config.errors import FieldValidationError, PermissionDeniedError
from providers import PROVIDERS, get_adapter
from providers.base import Capabilities
from readiness.catalog import ACCOUNTS, AccountRecord, credentials_readable
from readiness.claims import advertised_claims
from readiness.decisions import (
    CERTIFICATION_TEST,
    INTENTS,
    NORMAL,
    AccountFacts,
    Blocker,
    Decision,
    DecisionInputs,
    Policy,
    evaluate,
)
from readiness.evidence import load_evidence
from readiness.models import OPERATIONS
from readiness.subjects import AppIdentity, Subject, app_identity, contract_digest, make_subject

__all__ = [
    "CERTIFICATION_TEST",
    "INTENTS",
    "NORMAL",
    "OPERATIONS",
    "Blocker",
    "Decision",
    "DecisionRequest",
    "decide_account",
    "decide_many",
    "decide_provider",
    "enforcement_applies",
    "provider_app",
    "require_intent_allowed",
]


def enforcement_applies() -> bool:
    """Evidence, approval, runtime-control and scope gaps block only on a cloud deployment with
    ``SERVICE_PROVIDER_CERTIFICATION_ENFORCED`` true."""
    return settings.HERALD_DEPLOYMENT == "cloud" and bool(
        settings.SERVICE_PROVIDER_CERTIFICATION_ENFORCED
    )


def require_intent_allowed(*, user: Any, intent: str) -> None:
    """Only an instance administrator (superuser) may select ``certification_test`` when
    scheduling or publishing now; it bypasses only prior local and live evidence."""
    if intent not in INTENTS:
        raise FieldValidationError.at(
            "body.execution_intent", f"One of {', '.join(INTENTS)}.", value=intent
        )
    if intent == CERTIFICATION_TEST and not (user is not None and user.is_superuser):
        raise PermissionDeniedError(
            "Only an instance administrator may run a certification test.",
            code="certification_test_forbidden",
        )


def current_policy() -> Policy:
    return Policy(
        enforced=enforcement_applies(),
        deployment=settings.HERALD_DEPLOYMENT,
        disabled_providers=frozenset(settings.HERALD_DISABLED_PROVIDERS),
        restrictions=frozenset(settings.HERALD_PROVIDER_POLICY_RESTRICTIONS),
        claims=advertised_claims(),
    )


@dataclass(frozen=True)
class DecisionRequest:
    """One question: ``operation`` on ``provider`` (and ``output_profile``), for one connected
    account or for the provider as a whole (``account=None``, e.g. a connect)."""

    provider: str
    operation: str
    output_profile: str = ""
    account: Any = None  # a publishing Account (status, credentials, app, scopes, instance)
    instance_url: str = ""
    intent: str = NORMAL


def _capabilities(provider: str) -> Capabilities | None:
    return get_adapter(provider).capabilities if provider in PROVIDERS else None


def provider_app(provider: str, caps: Capabilities | None) -> AppIdentity:
    """The effective provider app of this deployment (one query only for a registered OAuth app)."""
    needs_app_row = caps is not None and str(caps.connection) == "oauth2" and not caps.federated
    return app_identity(
        provider,
        caps,
        database_app=ACCOUNTS.get().has_registered_app(provider) if needs_app_row else None,
    )


def _account_facts(account: AccountRecord) -> AccountFacts:
    readable = not account.credentials_encrypted or credentials_readable(account)
    return AccountFacts(
        status=str(account.status),
        has_credentials=bool(account.credentials_encrypted),
        credentials_readable=readable,
        has_app=account.app_id is not None,
        granted_scopes=tuple(account.granted_scopes or ()),
        required_scopes=_account_scopes(account),
    )


def _account_scopes(account: AccountRecord) -> tuple[str, ...] | None:
    """The scopes the account's own connection requires, when the adapter says they differ
    from its provider's (``ProviderAdapter.account_required_scopes``)."""
    try:
        adapter = get_adapter(str(account.provider))
    except KeyError:
        return None
    return adapter.account_required_scopes(instance_url=str(account.instance_url or ""))


def decide_many(requests: Sequence[DecisionRequest]) -> list[Decision]:
    """Decisions for many requests with a constant number of queries."""
    caps_by_provider: dict[str, Any] = {}
    apps: dict[str, AppIdentity] = {}
    facts_by_account: dict[Any, AccountFacts] = {}
    prepared: list[tuple[Subject, Any, AppIdentity, str, AccountFacts | None, str]] = []
    for request in requests:
        provider = request.provider
        if provider not in caps_by_provider:
            caps = caps_by_provider[provider] = _capabilities(provider)
            apps[provider] = provider_app(provider, caps)
        caps = caps_by_provider[provider]
        account = request.account
        account_facts = None
        if account is not None:
            if account.pk not in facts_by_account:
                facts_by_account[account.pk] = _account_facts(account)
            account_facts = facts_by_account[account.pk]
        subject = make_subject(
            provider=provider,
            app=apps[provider],
            operation=request.operation,
            output_profile=request.output_profile,
            instance_url=account.instance_url if account is not None else request.instance_url,
            account_kind=(
                account.account_kind if account is not None else (caps.account_kind if caps else "")
            ),
            federated=bool(caps is not None and caps.federated),
        )
        prepared.append(
            (
                subject,
                caps,
                apps[provider],
                contract_digest(caps, subject),
                account_facts,
                request.intent,
            )
        )
    evidence = load_evidence(subject for subject, *_ in prepared)
    policy = current_policy()
    now = timezone.now()
    return [
        evaluate(
            DecisionInputs(
                subject=subject,
                caps=caps,
                app=app,
                contract=contract,
                evidence=evidence,
                policy=policy,
                now=now,
                account=account_facts,
                intent=intent,
            )
        )
        for subject, caps, app, contract, account_facts, intent in prepared
    ]


def decide_provider(
    *, provider: str, operation: str = "connect", instance_url: str = "", intent: str = NORMAL
) -> Decision:
    """The decision for ``operation`` on the provider as a whole (a connect)."""
    return decide_many(
        [
            DecisionRequest(
                provider=provider, operation=operation, instance_url=instance_url, intent=intent
            )
        ]
    )[0]


def decide_account(
    *, account: Any, operation: str, profile: str = "", intent: str = NORMAL
) -> Decision:
    """The decision for one connected account and output profile (a publish, refresh or revoke)."""
    return decide_many(
        [
            DecisionRequest(
                provider=account.provider,
                operation=operation,
                output_profile=profile,
                account=account,
                intent=intent,
            )
        ]
    )[0]
