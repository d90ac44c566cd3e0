"""A network's daily API units as ``ProviderQuotaDay`` rows: ``providers.quota.QuotaLedger``
over the publishing models, registered in ``PublishingConfig.ready`` (the adapter sits a layer
below). Each spend is one conditional UPDATE, so concurrent workers never count past the
limit (docs/decisions/0021-youtube-quota-ledger.md)."""

from __future__ import annotations

from datetime import date

from django.db import IntegrityError, transaction
from django.db.models import F

from publishing.models import ProviderQuotaDay


def _row(provider: str, day: date) -> None:
    """The day's row exists (created at 0 by whichever worker comes first)."""
    if ProviderQuotaDay.objects.filter(provider=provider, day=day).exists():
        return
    try:
        with transaction.atomic():
            ProviderQuotaDay.objects.create(provider=provider, day=day, units=0)
    except IntegrityError:
        pass  # another worker created it meanwhile


class QuotaDays:
    def spend(self, *, provider: str, day: date, units: int, limit: int) -> bool:
        _row(provider, day)
        return bool(
            ProviderQuotaDay.objects.filter(
                provider=provider, day=day, units__lte=max(limit - units, 0)
            ).update(units=F("units") + units)
        )

    def used(self, *, provider: str, day: date) -> int:
        row = ProviderQuotaDay.objects.filter(provider=provider, day=day).first()
        return int(row.units) if row is not None else 0

    def exhaust(self, *, provider: str, day: date, limit: int) -> None:
        _row(provider, day)
        ProviderQuotaDay.objects.filter(provider=provider, day=day, units__lt=limit).update(
            units=limit
        )
