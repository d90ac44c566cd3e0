"""Readiness subjects, one-way fingerprints and the certification contract digest.

A decision is always about one exact subject (docs/decisions/0008-readiness-and-certification.md): provider, app fingerprint,
deployment and provider environment, federated-instance fingerprint, account kind, output
profile, operation and policy mode. Evidence is bound to the subject digest and to the contract
digest, so changing any subject key, the adapter's capability metadata or a contract requirement
makes earlier evidence unusable: it simply no longer matches.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from functools import cached_property, lru_cache
from typing import Any

from django.conf import settings

from config import version
from config.types import ModelId
from providers.base import describe_capabilities
from readiness.catalog import app_base_url
from readiness.models import OPERATIONS

CONTRACT_VERSION = 1
PUBLISH_OPERATIONS = ("publish_immediate", "publish_scheduled")
ACCOUNT_KIND_ANY = ""

# Provider kinds without a public hosted claim: never advertised, whatever the ledger says
# (docs/decisions/0008-readiness-and-certification.md). Discord incoming webhooks (``discord_webhook``) are a separate
# built-in connection mode and stay supported.
NEVER_ADVERTISED = frozenset({"pinterest", "telegram", "discord"})


def sha256_hex(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def digest(value: Any) -> str:
    """``sha256:<hex>`` of canonical JSON."""
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return f"sha256:{sha256_hex(canonical)}"


def fingerprint(kind: str, value: str) -> str:
    """A one-way, labelled fingerprint such as ``operator:sha256:<hex>``."""
    return f"{kind}:sha256:{sha256_hex(f'herald:{kind}:{value}')}"


def operator_fingerprint(user: Any) -> str:
    return fingerprint("operator", str(user.pk))


def account_fingerprint(account_id: ModelId) -> str:
    return fingerprint("account", str(account_id))


def instance_fingerprint(instance_url: str) -> str:
    from urllib.parse import urlsplit

    url = instance_url.strip()
    parts = urlsplit(url if "://" in url else f"https://{url}")
    origin = f"{parts.scheme.lower()}://{(parts.netloc or '').lower()}"
    return fingerprint("instance", origin)


def result_fingerprint(reference: str) -> str:
    return fingerprint("result", reference)


@dataclass(frozen=True)
class Subject:
    provider: str
    app_fingerprint: str
    deployment_environment: str
    provider_environment: str
    instance_fingerprint: str
    account_kind: str
    output_profile: str
    operation: str
    policy_mode: str

    @cached_property
    def digest(self) -> str:  # computed once per subject (a projection asks many times)
        return digest(asdict(self))

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


# --- Configuration and app identity -----------------------------------------------------------


@dataclass(frozen=True)
class AppIdentity:
    source: str  # builtin | dynamic | database | missing | unknown
    fingerprint: str
    # The operator says the provider has not audited the app yet (TikTok's
    # HERALD_TIKTOK_AUDITED=false: private posts only): readiness reports ``trial_only``.
    unaudited: bool = False

    @property
    def present(self) -> bool:
        return self.source in ("builtin", "dynamic", "environment", "database")


def environment_app(provider: str) -> dict[str, Any]:
    """The operator's OAuth app of ``provider`` from the environment (``PROVIDER_OAUTH_APPS``),
    or ``{}`` when it is not configured (client id or secret missing)."""
    app = dict(getattr(settings, "PROVIDER_OAUTH_APPS", {}).get(provider) or {})
    if app.get("client_id") and app.get("client_secret"):
        return app
    # Instagram's own login is an app of its own (accounts without a Facebook Page): an operator
    # may configure only that one, and instagram is then connectable through it.
    if app.get("instagram_client_id") and app.get("instagram_client_secret"):
        return {
            **app,
            "client_id": app["instagram_client_id"],
            "client_secret": app["instagram_client_secret"],
        }
    return {}


def app_identity(provider: str, caps: Any, *, database_app: bool | None = None) -> AppIdentity:
    """The effective provider app of this deployment.

    Credential and webhook providers use a built-in identity (their configured API base); a
    federated OAuth provider registers a dynamic app per instance at connect time; any other
    OAuth provider needs the operator's app: from the environment (``PROVIDER_OAUTH_APPS``, both
    client id and secret set; its client id is part of the identity, so another app makes
    earlier evidence unusable) or a registered one (``database_app``: whether one exists)."""
    if caps is None:
        return AppIdentity("unknown", fingerprint("app", f"{provider}:unknown"))
    base = app_base_url(provider)
    connection = str(getattr(caps.connection, "value", caps.connection))
    env_app = environment_app(provider)
    if connection == "oauth2":
        if caps.federated:
            source = "dynamic"
        elif env_app:
            source = "environment"
        else:
            source = "database" if database_app else "missing"
    else:
        source = "builtin"
    identity = {
        "provider": provider,
        "source": source,
        "base": base or str(env_app.get("api_url", "")),
        "deployment": settings.HERALD_DEPLOYMENT,
        "public_origin": settings.HERALD_PUBLIC_URL,
    }
    if source == "environment":
        identity["client_id"] = str(env_app["client_id"])
    unaudited = source == "environment" and str(env_app.get("audited", "")) == "false"
    return AppIdentity(
        source, fingerprint("app", json.dumps(identity, sort_keys=True)), unaudited=unaudited
    )


def make_subject(
    *,
    provider: str,
    app: AppIdentity,
    operation: str,
    output_profile: str = "",
    instance_url: str = "",
    account_kind: str = ACCOUNT_KIND_ANY,
    federated: bool = False,
    deployment_environment: str | None = None,
    provider_environment: str | None = None,
    policy_mode: str | None = None,
) -> Subject:
    if operation not in OPERATIONS:
        raise ValueError(f"unknown operation {operation!r}")
    return Subject(
        provider=provider,
        app_fingerprint=app.fingerprint,
        deployment_environment=deployment_environment or settings.HERALD_ENVIRONMENT,
        provider_environment=provider_environment or settings.HERALD_PROVIDER_ENVIRONMENT,
        instance_fingerprint=instance_fingerprint(instance_url)
        if federated and instance_url
        else "",
        account_kind=account_kind,
        output_profile=output_profile if operation in PUBLISH_OPERATIONS else "",
        operation=operation,
        policy_mode=policy_mode or settings.HERALD_PROVIDER_POLICY_MODE,
    )


# --- The certification contract ---------------------------------------------------------------

BASE_CHECKS = ("connect", "account_authorization")


def required_checks(operation: str) -> tuple[str, ...]:
    """The checks a run must record."""
    if operation in PUBLISH_OPERATIONS:
        return (*BASE_CHECKS, "provider_result", "reconciled_outcome", "refresh", "revoke")
    if operation == "connect":
        return (*BASE_CHECKS, "refresh", "revoke")
    return (*BASE_CHECKS, operation)  # refresh, revoke


def not_applicable_allowed(caps: Any) -> dict[str, tuple[str, ...]]:
    """The only contract-approved not-applicable results: refresh/revoke a provider lacks."""
    allowed: dict[str, tuple[str, ...]] = {}
    if not caps.supports_refresh:
        allowed["refresh"] = ("provider_has_no_refresh",)
    if not caps.supports_revoke:
        allowed["revoke"] = ("provider_has_no_revoke",)
    return allowed


@lru_cache(maxsize=512)
def _contract(caps: Any, output_profile: str, operation: str) -> str:
    described = describe_capabilities(caps)
    profile = next((p for p in described["profiles"] if p["key"] == output_profile), None)
    contract = {
        "contract_version": CONTRACT_VERSION,
        "provider": described["provider"],
        "operation": operation,
        "connection": described["connection"],
        "federated": described["federated"],
        "pkce": described["pkce"],
        "required_scopes": sorted(described["required_scopes"]),
        "supports": described["supports"],
        "profile": profile,
        "required_checks": list(required_checks(operation)),
        "not_applicable_allowed": {
            k: list(v) for k, v in sorted(not_applicable_allowed(caps).items())
        },
    }
    return digest(contract)


def contract_digest(caps: Any, subject: Subject) -> str:
    """The digest of the certification contract of this subject's provider, format and
    operation: capability metadata plus the checks and not-applicable results it requires."""
    if caps is None:
        return ""
    return _contract(caps, subject.output_profile, subject.operation)


# --- Source revision --------------------------------------------------------------------------


def source_revision() -> str:
    """The tested source revision recorded with certification runs (config/version.py)."""
    return version.source_revision()
