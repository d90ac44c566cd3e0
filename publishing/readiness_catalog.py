"""The provider catalogue readiness decides over (``readiness.catalog``), from publishing's
adapters, accounts and stored credentials; installed in ``PublishingConfig.ready``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from config.types import ModelId
from providers import PROVIDERS, credentials, get_adapter
from providers.base import describe
from publishing.models import Account, ProviderApp


class _Described:  # describe() reads only ``capabilities``
    def __init__(self, caps: Any) -> None:
        self.capabilities = caps


class PublishingCatalog:
    """``readiness.catalog.ProviderCatalog`` over the publishing app."""

    def providers(self) -> tuple[str, ...]:
        return PROVIDERS

    def capabilities(self, provider: str) -> Any:
        return get_adapter(provider).capabilities

    def describe(self, caps: Any) -> dict[str, Any]:
        return describe(_Described(caps))  # type: ignore[arg-type]  # duck-typed: capabilities only

    def app_base_url(self, provider: str) -> str:
        adapter = get_adapter(provider)
        return str(getattr(adapter, "service_url", "") or getattr(adapter, "api_url", "") or "")

    def has_registered_app(self, provider: str) -> bool:
        return ProviderApp.objects.filter(provider=provider, instance_url="").exists()

    def credentials_readable(self, account: Any) -> bool:
        try:
            credentials.decrypt(account.credentials_encrypted)
        except credentials.CredentialsKeyError:
            return False
        return True

    def live_accounts(self, workspace_id: ModelId, fields: Sequence[str]) -> list[Any]:
        return list(
            Account.objects.filter(workspace_id=workspace_id)
            .exclude(status=Account.Status.DISCONNECTED)
            .only(*fields)
            .order_by("created_at", "id")
        )

    def connected_account(self, account_id: ModelId) -> Account | None:
        return (
            Account.objects.filter(pk=account_id)
            .exclude(status=Account.Status.DISCONNECTED)
            .first()
        )
