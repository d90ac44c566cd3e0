"""A network's daily quota of API units, counted by Herald (YouTube: 10,000 units a day per
Google Cloud project by default, reset at midnight Pacific time).

Adapters are plain Python without a database; the counter lives in publishing's table
``ProviderQuotaDay`` (docs/decisions/0021-youtube-quota-ledger.md), reached through
``QUOTA_LEDGER``. A day is named by its date in the network's quota time zone.
"""

from __future__ import annotations

from datetime import date, datetime, time, timedelta
from typing import Protocol
from zoneinfo import ZoneInfo

from config.registry import One

PACIFIC = ZoneInfo("America/Los_Angeles")


class QuotaLedger(Protocol):
    """Units spent per provider and quota day. Every method is atomic across processes."""

    def spend(self, *, provider: str, day: date, units: int, limit: int) -> bool:
        """Add ``units`` to the day's count when the count stays within ``limit``; whether
        they were added (False: the day's quota would be exceeded, nothing was added)."""
        ...

    def used(self, *, provider: str, day: date) -> int:
        """The units counted for the day (0 for a day not seen)."""
        ...

    def exhaust(self, *, provider: str, day: date, limit: int) -> None:
        """The network said the quota is spent: count the day as full."""
        ...


QUOTA_LEDGER: One[QuotaLedger] = One("providers.quota_ledger")


def quota_day(now: datetime | None = None, zone: ZoneInfo = PACIFIC) -> date:
    """The quota day ``now`` (default: the current time) falls in."""
    return (now or datetime.now(zone)).astimezone(zone).date()


def next_reset(now: datetime | None = None, zone: ZoneInfo = PACIFIC) -> datetime:
    """The next midnight in ``zone`` after ``now``, when a new quota day starts."""
    local = (now or datetime.now(zone)).astimezone(zone)
    return datetime.combine(local.date() + timedelta(days=1), time(0), tzinfo=zone)


def seconds_until_reset(now: datetime | None = None, zone: ZoneInfo = PACIFIC) -> float:
    moment = (now or datetime.now(zone)).astimezone(zone)
    return max((next_reset(moment, zone) - moment).total_seconds(), 1.0)
