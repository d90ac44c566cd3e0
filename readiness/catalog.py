"""What readiness knows about providers and their connected accounts: the provider catalogue.

The adapters and their capability metadata are the ``providers`` layer below, read directly.
The connected accounts and registered OAuth apps are publishing's rows, a layer above: readiness
reads them through ``ACCOUNTS``, a ``config.registry`` key publishing fills in its
``AppConfig.ready`` (``publishing.readiness_accounts``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from config.registry import One
from config.types import ModelId
from providers import PROVIDERS, credentials, get_adapter
from providers.base import Capabilities


class AccountRecord(Protocol):
    """The fields of a connected account (publishing's ``Account``) a decision reads."""

    @property
    def pk(self) -> Any: ...
    @property
    def provider(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def credentials_encrypted(self) -> str: ...
    @property
    def app_id(self) -> object: ...
    @property
    def granted_scopes(self) -> Any: ...  # a JSON list of scope names
    @property
    def instance_url(self) -> str: ...
    @property
    def account_kind(self) -> str: ...


class AccountDirectory(Protocol):
    def has_registered_app(self, provider: str) -> bool:
        """Whether an operator registered an OAuth app of ``provider`` (not per instance)."""
        ...

    def live_accounts(
        self, workspace_id: ModelId, fields: Sequence[str]
    ) -> Sequence[AccountRecord]:
        """The workspace's accounts that are not disconnected, oldest first (only ``fields``)."""
        ...

    def connected_account(self, account_id: ModelId) -> AccountRecord | None:
        """The account with this ID unless it is disconnected, else ``None``."""
        ...


ACCOUNTS: One[AccountDirectory] = One("readiness.accounts")


def app_base_url(provider: str) -> str:
    """The provider's configured API base (its service or API URL), or ``""``."""
    adapter = get_adapter(provider)
    return str(getattr(adapter, "service_url", "") or getattr(adapter, "api_url", "") or "")


def credentials_readable(account: AccountRecord) -> bool:
    """Whether the account's stored credentials decrypt with the current keys."""
    try:
        credentials.decrypt(account.credentials_encrypted)
    except credentials.CredentialsKeyError:
        return False
    return True


class ProviderCatalog:
    """The providers and their connected accounts, as one object for the decision code."""

    def providers(self) -> tuple[str, ...]:
        """Every provider an adapter implements, in the registry's order."""
        return PROVIDERS

    def capabilities(self, provider: str) -> Capabilities:
        """The capability metadata of one of ``providers()``."""
        return get_adapter(provider).capabilities

    def live_accounts(
        self, workspace_id: ModelId, fields: Sequence[str]
    ) -> Sequence[AccountRecord]:
        return ACCOUNTS.get().live_accounts(workspace_id, fields)

    def connected_account(self, account_id: ModelId) -> AccountRecord | None:
        return ACCOUNTS.get().connected_account(account_id)


_CATALOG = ProviderCatalog()


def catalog() -> ProviderCatalog:
    return _CATALOG
