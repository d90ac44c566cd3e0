"""What readiness knows about providers and their connected accounts: the provider catalogue.

Readiness decides over providers, yet it does not own them: the adapters, their capability
metadata, the accounts and their stored credentials belong to ``publishing``, which asks
readiness before every provider call. Since no two apps import each other, readiness never
imports ``publishing``: it declares here what it needs, and ``publishing`` installs its
implementation (``publishing.readiness_catalog``) in ``PublishingConfig.ready``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from django.core.exceptions import ImproperlyConfigured

from config.types import ModelId


class ProviderCatalog(Protocol):
    def providers(self) -> tuple[str, ...]:
        """Every provider an adapter implements, in the catalogue's order."""
        ...

    def capabilities(self, provider: str) -> Any:
        """The capability metadata of one of ``providers()`` (its adapter's ``capabilities``)."""
        ...

    def describe(self, caps: Any) -> dict[str, Any]:
        """The public description of capability metadata (provider, connection, profiles…)."""
        ...

    def app_base_url(self, provider: str) -> str:
        """The provider's configured API base (its service or API URL), or ``""``."""
        ...

    def has_registered_app(self, provider: str) -> bool:
        """Whether an operator registered an OAuth app of ``provider`` (not per instance)."""
        ...

    def credentials_readable(self, account: Any) -> bool:
        """Whether the account's stored credentials decrypt with the current keys."""
        ...

    def live_accounts(self, workspace_id: ModelId, fields: Sequence[str]) -> list[Any]:
        """The workspace's accounts that are not disconnected, oldest first (only ``fields``)."""
        ...

    def connected_account(self, account_id: ModelId) -> Any | None:
        """The account with this ID unless it is disconnected, else ``None``."""
        ...


_installed: ProviderCatalog | None = None


def install(catalog: ProviderCatalog) -> None:
    """Called once by the app that owns the providers, from its ``AppConfig.ready``."""
    global _installed
    _installed = catalog


def catalog() -> ProviderCatalog:
    if _installed is None:
        raise ImproperlyConfigured(
            "No provider catalogue installed: readiness needs the publishing app in INSTALLED_APPS."
        )
    return _installed
