"""Token lifecycle: refresh ahead of expiry, single-flight per account, rotation
stored atomically, and ``reconnect_required`` when the grant is gone.

* **Single flight.** A refresh first claims the account's refresh lease under the row lock
  (``select_for_update``; SQLite serializes the claim with its write lock): one claim per
  account at a time. The provider call runs outside any transaction (no network I/O while a
  lock is held), and a caller that finds the lease taken waits for that refresh instead of
  making its own (``wait=True``) or leaves it to it (the beat).
* **Rotation.** The provider's reply is written in one UPDATE, under the row lock, in the same
  transaction as the new access token: access token, rotated refresh token and expiry are
  committed together or not at all, and nothing else (no profile read) runs between the reply
  and the commit. A refresh token is never replaced by an empty one.
  Should the process die in that window (after the provider replied, before the commit), the
  database still holds the previous, consistent pair: the previous access token stays valid
  until its expiry (refreshes run ``HERALD_TOKEN_REFRESH_AHEAD_SECONDS`` early), and the next
  refresh (once the dead worker's lease expires) presents the previous refresh token. Providers
  that keep a just-rotated refresh token usable for a grace period (the AT Protocol reference
  PDS, Auth0/Okta-style reuse intervals) then answer as before and the account goes on working;
  one that refuses it answers ``invalid_grant`` and the account becomes ``reconnect_required``
  with that reason, visibly, with its scheduled publications held. No design can recover a
  reply that existed only in a dead process's memory; this one never commits a half.
* **Grant gone.** ``invalid_grant`` (an ``auth`` provider error) moves the account to
  ``reconnect_required`` (readiness "authorization" fact) with a clear ``status_reason``, and
  its scheduled destinations are held (publishing.services.accounts).
* **No programmatic refresh** (an adapter's ``can_refresh`` is false for these credentials):
  the account shows ``token_expires_at`` and becomes ``reconnect_required``
  ``HERALD_RECONNECT_WARNING_DAYS`` before it.
"""

from __future__ import annotations

import enum
import logging
import time
from datetime import datetime, timedelta
from functools import partial
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from config.nudge import nudge
from config.types import ModelId
from providers import credentials, get_adapter
from providers.base import ConnectedAccount, ErrorKind, ProviderError
from publishing import tasks
from publishing.models import Account
from publishing.services.accounts import account_context, account_mark_reconnect_required
from readiness import services as readiness

logger = logging.getLogger(__name__)

WAIT_POLL_SECONDS = 0.2


class RefreshOutcome(enum.StrEnum):
    REFRESHED = "refreshed"
    FRESH = "fresh"  # the token does not need a refresh (another refresh may just have run)
    BUSY = "busy"  # another refresh holds the account's lease
    NOT_REFRESHABLE = "not_refreshable"  # no programmatic refresh for this grant
    BLOCKED = "blocked"  # readiness does not permit the refresh now
    RECONNECT_REQUIRED = "reconnect_required"
    FAILED = "failed"  # a transient provider failure: the next sweep tries again
    INACTIVE = "inactive"  # not an active account (reconnect required, disconnected, gone)


def _lead() -> timedelta:
    return timedelta(seconds=settings.HERALD_TOKEN_REFRESH_AHEAD_SECONDS)


def _lead_for(account: Account) -> timedelta:
    """How early this account's token is refreshed: the configured lead, or a quarter of the
    token's lifetime (issue to expiry) up to ``HERALD_RECONNECT_WARNING_DAYS``, whichever is
    longer. A two-hour X token is refreshed 30 minutes early; a 60-day Threads or LinkedIn
    token a week early, so a provider outage of hours or days on the last day cannot let it
    lapse (Threads refuses to refresh an expired token)."""
    lead = _lead()
    issued, expires = account.token_refreshed_at, account.token_expires_at
    if issued is None or expires is None or expires <= issued:
        return lead
    warning = timedelta(days=settings.HERALD_RECONNECT_WARNING_DAYS)
    return max(lead, min(warning, (expires - issued) / 4))


def _expires_soon(account: Account, now: datetime) -> bool:
    expires = account.token_expires_at
    return expires is not None and expires <= now + _lead_for(account)


def _lease_held(account: Account, now: datetime) -> bool:
    return account.refresh_lease_until is not None and account.refresh_lease_until > now


def _claim(account_id: ModelId, *, force: bool) -> RefreshOutcome | datetime:
    """Claim the account's refresh lease under its row lock: the lease's end when claimed, else
    why not."""
    now = timezone.now()
    with transaction.atomic():
        account = Account.objects.select_for_update(of=("self",)).filter(pk=account_id).first()
        if account is None or account.status != Account.Status.ACTIVE:
            return RefreshOutcome.INACTIVE
        if _lease_held(account, now):
            return RefreshOutcome.BUSY
        if not force and not _expires_soon(account, now):
            return RefreshOutcome.FRESH
        lease = now + timedelta(seconds=settings.HERALD_TOKEN_REFRESH_LEASE_SECONDS)
        Account.objects.filter(pk=account_id).update(refresh_lease_until=lease)
        return lease


def _release(account_id: ModelId, lease: datetime) -> None:
    Account.objects.filter(pk=account_id, refresh_lease_until=lease).update(
        refresh_lease_until=None
    )


def _store(account_id: ModelId, lease: datetime, fresh: ConnectedAccount) -> bool:
    """Access token, rotated refresh token and expiry: one UPDATE in one transaction."""
    with transaction.atomic():
        account = Account.objects.select_for_update(of=("self",)).filter(pk=account_id).first()
        if account is None or account.status != Account.Status.ACTIVE:
            return False  # disconnected (credentials removed) or reconnected meanwhile
        merged = credentials.decrypt(account.credentials_encrypted)
        for key, value in fresh.credentials.items():
            if value or not key.startswith("refresh"):
                merged[key] = value
        fields: dict[str, Any] = {
            "credentials_encrypted": credentials.encrypt(merged),
            "token_expires_at": fresh.expires_at,
            "token_refreshed_at": timezone.now(),
            "refresh_lease_until": None,
            "updated_at": timezone.now(),
        }
        if fresh.granted_scopes:
            fields["granted_scopes"] = list(fresh.granted_scopes)
        Account.objects.filter(pk=account_id).update(**fields)
    return True


def account_token_refresh(*, account_id: ModelId, force: bool = False) -> RefreshOutcome:
    """Refresh one account's token when it expires within the lead (always with ``force``).

    Idempotent and single-flight: concurrent calls make one provider call; the others answer
    ``BUSY`` (or ``FRESH`` once it is done)."""
    account = Account.objects.select_related("app").filter(pk=account_id).first()
    if account is None or account.status != Account.Status.ACTIVE:
        return RefreshOutcome.INACTIVE
    adapter = get_adapter(account.provider)
    try:
        stored = credentials.decrypt(account.credentials_encrypted)
    except credentials.CredentialsKeyError:
        return RefreshOutcome.BLOCKED  # readiness reports the unreadable credentials
    if not adapter.can_refresh(credentials=stored):
        return RefreshOutcome.NOT_REFRESHABLE
    decision = readiness.decide_account(account=account, operation="refresh")
    if not decision.executable:
        logger.info(
            "Token refresh of account %s blocked by readiness (%s)", account.pk, decision.state
        )
        return RefreshOutcome.BLOCKED
    lease = _claim(account_id, force=force)
    if isinstance(lease, RefreshOutcome):
        return lease
    try:
        # The credentials as they are now, read after the claim: a refresh that finished just
        # before this one rotated them.
        account.refresh_from_db()
        fresh = adapter.refresh(account=account_context(account))
    except ProviderError as exc:
        _release(account_id, lease)
        if exc.kind == ErrorKind.AUTH:
            account_mark_reconnect_required(
                account_id=account_id,
                reason=f"The provider refused to renew the authorization: {exc.message}",
            )
            return RefreshOutcome.RECONNECT_REQUIRED
        logger.warning("Token refresh of account %s failed: %s", account.pk, exc.message)
        return RefreshOutcome.FAILED
    except BaseException:
        _release(account_id, lease)
        raise
    if not _store(account_id, lease, fresh):
        return RefreshOutcome.INACTIVE
    return RefreshOutcome.REFRESHED


def account_token_ensure_fresh(*, account: Account) -> Account:
    """Just in time, before a provider call (delivery): an account whose token expires within
    the lead is refreshed first, or, when another worker is refreshing it, waits for that
    refresh (at most the lease). Returns the account as stored afterwards (the same object when
    nothing was needed). A failed refresh leaves the call to go ahead with the current token
    (a ``reconnect_required`` account is then blocked by the caller's readiness check)."""
    now = timezone.now()
    if account.status != Account.Status.ACTIVE or not _expires_soon(account, now):
        return account
    outcome = account_token_refresh(account_id=account.pk)
    deadline = time.monotonic() + settings.HERALD_TOKEN_REFRESH_LEASE_SECONDS
    while outcome == RefreshOutcome.BUSY and time.monotonic() < deadline:
        time.sleep(WAIT_POLL_SECONDS)
        outcome = account_token_refresh(account_id=account.pk)
    if outcome in (RefreshOutcome.NOT_REFRESHABLE, RefreshOutcome.BLOCKED, RefreshOutcome.FAILED):
        return account  # nothing changed
    return Account.objects.select_related("app").filter(pk=account.pk).first() or account


def _expiry_reason(account: Account, display_name: str) -> str:
    expires = (
        account.token_expires_at.strftime("%Y-%m-%d %H:%M UTC") if account.token_expires_at else ""
    )
    return (
        f"The {display_name} authorization expires on {expires} and cannot be renewed "
        "automatically; reconnect the account before then."
    )


def account_tokens_refresh_due() -> dict[str, int]:
    """The beat's sweep: a refresh task for every active account whose token expires within the
    lead (one task per account; a task finding the token fresh does nothing), and
    ``reconnect_required`` for tokens without programmatic refresh that expire within
    ``HERALD_RECONNECT_WARNING_DAYS``."""
    now = timezone.now()
    warning = timedelta(days=settings.HERALD_RECONNECT_WARNING_DAYS)
    horizon = now + max(_lead(), warning)
    candidates = (
        Account.objects.filter(
            status=Account.Status.ACTIVE,
            token_expires_at__isnull=False,
            token_expires_at__lte=horizon,
        )
        .filter(Q(refresh_lease_until__isnull=True) | Q(refresh_lease_until__lte=now))
        .only(
            "pk",
            "provider",
            "credentials_encrypted",
            "token_expires_at",
            "token_refreshed_at",
            "status",
        )
        .order_by("token_expires_at")
    )
    counts = {"refresh_queued": 0, "reconnect_required": 0}
    for account in candidates:
        adapter = get_adapter(account.provider)
        try:
            stored = credentials.decrypt(account.credentials_encrypted)
        except credentials.CredentialsKeyError:
            continue  # readiness reports it; nothing to refresh with
        if adapter.can_refresh(credentials=stored):
            if _expires_soon(account, now):
                transaction.on_commit(partial(nudge, tasks.account_token_refresh, str(account.pk)))
                counts["refresh_queued"] += 1
        elif account.token_expires_at is not None and account.token_expires_at <= now + warning:
            reason = _expiry_reason(account, adapter.capabilities.display_name)
            if account_mark_reconnect_required(account_id=account.pk, reason=reason):
                counts["reconnect_required"] += 1
    return counts
