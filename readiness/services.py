"""The readiness service: may this exact operation run now?

Delivery, connect and the catalogue ask here before every provider call; adapters never decide.
This module applies the rules that always block, whatever the enforcement flag says (spec §1):
an explicit provider disable, missing configuration, a revoked or invalid grant, and a format
the adapter does not implement. The evidence facts (local test, live certification, approval,
runtime control, policy) join the same decision in the readiness subsystem.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

OPERATIONS = ("connect", "publish_immediate", "publish_scheduled", "refresh", "revoke")


@dataclass(frozen=True)
class Blocker:
    code: str
    detail: str


@dataclass(frozen=True)
class Decision:
    state: str
    blockers: tuple[Blocker, ...] = field(default_factory=tuple)

    @property
    def executable(self) -> bool:
        return self.state == "healthy"

    def as_dict(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "executable": self.executable,
            "blockers": [{"code": b.code, "detail": b.detail} for b in self.blockers],
        }


def _provider_blockers(provider: str) -> list[tuple[str, Blocker]]:
    from publishing.providers import PROVIDERS

    found: list[tuple[str, Blocker]] = []
    if provider not in PROVIDERS:
        found.append(("unsupported", Blocker("unsupported", f"Herald has no adapter for {provider}.")))
    if provider in settings.HERALD_DISABLED_PROVIDERS:
        found.append(
            ("disabled", Blocker("provider_disabled", f"{provider} is disabled on this instance."))
        )
    return found


def decide_provider(*, provider: str, operation: str = "connect") -> Decision:
    return _decision(_provider_blockers(provider))


def decide_account(*, account: Any, operation: str, profile: str = "") -> Decision:
    """Decision for one connected account and output profile (a publish, refresh or revoke)."""
    from publishing.providers import get_adapter

    found = _provider_blockers(account.provider)
    if not found:
        caps = get_adapter(account.provider).capabilities
        if profile and caps.profile(profile) is None:
            found.append(
                ("unsupported", Blocker("unsupported_profile", f"{profile} is not implemented."))
            )
        if caps.connection == "oauth2" and account.app_id is None:
            found.append(
                ("needs_configuration", Blocker("app_missing", "The provider app is not configured."))
            )
        if account.status == "active":
            credentials_blocker = _credentials_blocker(account)
            if credentials_blocker is not None:
                found.append(("needs_configuration", credentials_blocker))
    if account.status != "active":
        found.append(
            (
                "reconnect_required",
                Blocker("grant_invalid", "The account's grant was revoked or is invalid; reconnect it."),
            )
        )
    return _decision(found)


def _credentials_blocker(account: Any) -> Blocker | None:
    """Stored credentials that are missing, or that the configured keys cannot decrypt (e.g.
    ``HERALD_CREDENTIALS_KEY`` rotated without ``rotate_credentials``): nothing can be sent."""
    from publishing import credentials

    if not account.credentials_encrypted:
        return Blocker("credentials_missing", "The account has no stored credentials; reconnect it.")
    try:
        credentials.decrypt(account.credentials_encrypted)
    except credentials.CredentialsKeyError:
        return Blocker(
            "credentials_unreadable",
            "The stored credentials cannot be decrypted with HERALD_CREDENTIALS_KEY.",
        )
    return None


_PRECEDENCE = (
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


def _decision(found: list[tuple[str, Blocker]]) -> Decision:
    if not found:
        return Decision(state="healthy")
    state = min((s for s, _ in found), key=_PRECEDENCE.index)
    return Decision(state=state, blockers=tuple(b for _, b in found))
