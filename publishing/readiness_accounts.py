"""The connected accounts and registered OAuth apps readiness decides over
(``readiness.catalog.AccountDirectory``), registered under ``readiness.catalog.ACCOUNTS`` in
``PublishingConfig.ready``: readiness sits below publishing and never imports it."""

from __future__ import annotations

from collections.abc import Sequence

from config.types import ModelId
from publishing.models import Account, ProviderApp


class PublishingAccounts:
    def has_registered_app(self, provider: str) -> bool:
        return ProviderApp.objects.filter(provider=provider, instance_url="").exists()

    def live_accounts(self, workspace_id: ModelId, fields: Sequence[str]) -> list[Account]:
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
