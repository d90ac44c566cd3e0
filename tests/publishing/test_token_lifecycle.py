"""Token lifecycle: refresh ahead of expiry, single flight, rotation stored
atomically (and a worker killed between the provider's reply and the commit), invalid grants,
tokens without programmatic refresh, and disconnect.

The carrier is the Bluesky adapter against its stand-in: a real provider whose refresh rotates
the refresh token (the spent one stops working unless the stand-in's grace is on, as the AT
Protocol reference PDS's is).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path
from typing import Any
from unittest.mock import patch

import pytest
from django.conf import settings as django_settings
from django.db import connection, transaction
from django.utils import timezone

from providers import credentials, get_adapter
from providers.base import PublishRequest
from publishing import tasks
from publishing.models import Account, Destination, Publication
from publishing.services import tokens
from publishing.services.accounts import (
    account_connect,
    account_context,
    account_disconnect,
)
from readiness import services as readiness
from tests.providers.bluesky.standin import BlueskyStandIn
from tests.providers.standin import Reply, Request
from workspaces.access import Actor

REDIRECT_URI = "http://testserver/api/v1/accounts/oauth/callback"
Outcome = tokens.RefreshOutcome


class GatedBlueskyStandIn(BlueskyStandIn):
    """Bluesky whose session refresh can be held before it rotates (``gate``), and says when a
    refresh arrived and when it has rotated and answered."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.gate.set()
        self.started = threading.Event()
        self.replied = threading.Event()
        self.hold_seconds = 0.0

    def refresh_session(self, request: Request) -> Reply:
        self.bump("refresh_requests")  # answered or refused
        self.started.set()
        self.gate.wait(30)
        if self.hold_seconds:
            time.sleep(self.hold_seconds)
        reply = super().refresh_session(request)
        self.replied.set()
        return reply


@pytest.fixture(scope="module")
def bluesky() -> Iterator[GatedBlueskyStandIn]:
    with GatedBlueskyStandIn() as server:
        yield server


@pytest.fixture
def account(bluesky: GatedBlueskyStandIn, settings: Any, user: Any, workspace: Any) -> Account:
    settings.HERALD_ALLOW_PRIVATE_PROVIDER_URLS = True
    settings.HERALD_BLUESKY_SERVICE_URL = bluesky.url
    bluesky.reset()
    bluesky.gate.set()
    bluesky.started.clear()
    bluesky.replied.clear()
    bluesky.hold_seconds = 0.0
    password = bluesky.fixtures()["accounts"]["herald.test"]["app_password"]
    connected, _ = account_connect(
        actor=Actor(user=user),
        workspace_id=workspace.pk,
        provider="bluesky",
        redirect_uri=REDIRECT_URI,
        fields={"handle": "herald.test", "app_password": password},
    )
    assert connected is not None
    return connected


def _expire_soon(account: Account, seconds: float = 60) -> None:
    Account.objects.filter(pk=account.pk).update(
        token_expires_at=timezone.now() + timedelta(seconds=seconds)
    )


def _stored(account: Account) -> dict[str, str]:
    row = Account.objects.get(pk=account.pk)
    return credentials.decrypt(row.credentials_encrypted)


def _scheduled(account: Account, *, hours: float = 2) -> Destination:
    due = timezone.now() + timedelta(hours=hours)
    publication = Publication.objects.create(
        workspace_id=account.workspace_id,
        status=Publication.Status.SCHEDULED,
        text="Later",
        scheduled_at=due,
    )
    return Destination.objects.create(
        publication=publication,
        account=account,
        profile="bluesky.post",
        status=Destination.Status.SCHEDULED,
        idempotency_key=uuid.uuid4().hex,
        due_at=due,
    )


def _refreshes(server: BlueskyStandIn) -> int:
    return int(server.stats()["counters"].get("sessions_refreshed", 0))


def _publishes(account: Account) -> bool:
    account = Account.objects.get(pk=account.pk)
    result = get_adapter("bluesky").publish(
        account=account_context(account),
        request=PublishRequest(
            profile="bluesky.post", text="Still here", idempotency_key=uuid.uuid4().hex
        ),
    )
    return bool(result.external_id)


# --- Refresh ahead of expiry -------------------------------------------------------------------


@pytest.mark.django_db
def test_refresh_stores_rotated_refresh_token_with_the_new_access_token(
    account: Account, bluesky: GatedBlueskyStandIn
) -> None:
    before = _stored(account)
    _expire_soon(account)

    assert tokens.account_token_refresh(account_id=account.pk) == Outcome.REFRESHED

    after = _stored(account)
    row = Account.objects.get(pk=account.pk)
    assert after["refresh_jwt"] != before["refresh_jwt"]
    assert after["access_jwt"] != before["access_jwt"]
    assert row.token_expires_at is not None
    assert row.token_expires_at > timezone.now() + timedelta(minutes=30)
    assert row.token_refreshed_at is not None
    assert row.refresh_lease_until is None
    assert _refreshes(bluesky) == 1
    assert _publishes(account)  # the stored pair is the one the provider now honours


@pytest.mark.django_db
def test_fresh_token_is_not_refreshed(account: Account, bluesky: GatedBlueskyStandIn) -> None:
    Account.objects.filter(pk=account.pk).update(
        token_expires_at=timezone.now() + timedelta(hours=2)
    )

    assert tokens.account_token_refresh(account_id=account.pk) == Outcome.FRESH
    assert _refreshes(bluesky) == 0


@pytest.mark.django_db
def test_sweep_queues_one_refresh_per_account_expiring_within_the_lead(
    account: Account, bluesky: GatedBlueskyStandIn, django_capture_on_commit_callbacks: Any
) -> None:
    _expire_soon(account)
    with (
        patch.object(tasks.account_token_refresh, "delay") as delay,
        django_capture_on_commit_callbacks(execute=True),
    ):
        counts = tokens.account_tokens_refresh_due()

    assert counts == {"refresh_queued": 1, "reconnect_required": 0}
    delay.assert_called_once_with(str(account.pk))
    assert _refreshes(bluesky) == 0  # the task refreshes, not the sweep


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("lifetime", "left", "refreshed"),
    [
        (timedelta(days=60), timedelta(days=6), True),  # a long-lived token: a week early
        (timedelta(days=60), timedelta(days=8), False),
        (timedelta(hours=2), timedelta(minutes=20), True),  # a quarter of two hours
        (timedelta(hours=2), timedelta(minutes=40), False),
    ],
)
def test_the_refresh_lead_grows_with_the_token_lifetime(
    account: Account,
    bluesky: GatedBlueskyStandIn,
    lifetime: timedelta,
    left: timedelta,
    refreshed: bool,
) -> None:
    now = timezone.now()
    Account.objects.filter(pk=account.pk).update(
        token_refreshed_at=now + left - lifetime, token_expires_at=now + left
    )

    outcome = tokens.account_token_refresh(account_id=account.pk)

    assert (outcome == Outcome.REFRESHED) is refreshed, outcome
    assert _refreshes(bluesky) == int(refreshed)


def test_beat_schedules_the_sweep() -> None:
    entry = django_settings.CELERY_BEAT_SCHEDULE["publishing.account_tokens_refresh_due"]
    assert entry["task"] == tasks.account_tokens_refresh_due.name


@pytest.mark.django_db
def test_delivery_refreshes_just_in_time(account: Account, bluesky: GatedBlueskyStandIn) -> None:
    _expire_soon(account, seconds=30)
    stale = Account.objects.get(pk=account.pk)

    fresh = tokens.account_token_ensure_fresh(account=stale)

    assert _refreshes(bluesky) == 1
    assert credentials.decrypt(fresh.credentials_encrypted) == _stored(account)
    assert fresh.token_expires_at is not None
    assert fresh.token_expires_at > timezone.now() + timedelta(minutes=30)


# --- Single flight --------------------------------------------------------------------------


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_refreshes_make_one_provider_call(
    account: Account, bluesky: GatedBlueskyStandIn
) -> None:
    _expire_soon(account)
    bluesky.hold_seconds = 0.5  # the first refresh is still in flight when the others come

    def refresh(_: int) -> dict[str, str]:
        try:
            stale = Account.objects.get(pk=account.pk)
            fresh = tokens.account_token_ensure_fresh(account=stale)
            return credentials.decrypt(fresh.credentials_encrypted)
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=4) as pool:
        seen = list(pool.map(refresh, range(4)))

    assert bluesky.stats()["counters"]["refresh_requests"] == 1
    assert _refreshes(bluesky) == 1
    assert Account.objects.get(pk=account.pk).status == Account.Status.ACTIVE
    assert all(creds == _stored(account) for creds in seen)  # all waited for the one refresh
    assert _publishes(account)


# --- Killed between the provider's reply and the commit -----------------------------------------


def _child_env(worker_database_url: str, bluesky: BlueskyStandIn, data_dir: Path) -> dict[str, str]:
    from tests.worker_harness import credential_keys

    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("HERALD_", "DATABASE_URL", "REDIS_URL", "SECRET_KEY", "DJANGO_"))
    }
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DATABASE_URL": worker_database_url,
            "HERALD_DATA_DIR": str(data_dir),
            "HERALD_BLUESKY_SERVICE_URL": bluesky.url,
            "HERALD_ALLOW_PRIVATE_PROVIDER_URLS": "true",
            "HERALD_TOKEN_REFRESH_LEASE_SECONDS": "2",
            **credential_keys(),
        }
    )
    return env


def _kill_between_reply_and_commit(
    account: Account, bluesky: GatedBlueskyStandIn, env: dict[str, str]
) -> None:
    """A refresh in another process: the provider rotates and answers, then the process dies
    before its store commits (held off by a lock this test takes on the account's row)."""
    bluesky.gate.clear()
    code = (
        "import django; django.setup(); from publishing.services import tokens; "
        f"print(tokens.account_token_refresh(account_id={str(account.pk)!r}), flush=True)"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", code],
        env=env,
        cwd=str(django_settings.BASE_DIR),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    locked, release = threading.Event(), threading.Event()

    def hold_row_lock() -> None:
        try:
            with transaction.atomic():
                Account.objects.select_for_update().filter(pk=account.pk).update(
                    updated_at=timezone.now()
                )
                locked.set()
                release.wait(30)
                transaction.set_rollback(True)
        finally:
            connection.close()

    holder = threading.Thread(target=hold_row_lock)
    try:
        assert bluesky.started.wait(60), "the child never asked for a refresh"
        holder.start()
        assert locked.wait(10)
        bluesky.gate.set()  # the provider rotates and answers now
        assert bluesky.replied.wait(10)
        time.sleep(1.5)  # the child has the reply and waits for the row lock to store it
        assert child.poll() is None, child.stdout.read().decode() if child.stdout else ""
        os.killpg(child.pid, signal.SIGKILL)
        child.wait(10)
    finally:
        release.set()
        holder.join(30) if holder.is_alive() else None
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
    assert child.returncode == -signal.SIGKILL


@pytest.mark.django_db(transaction=True)
def test_worker_killed_after_the_reply_leaves_a_consistent_pair_and_the_account_works(
    account: Account, bluesky: GatedBlueskyStandIn, worker_database_url: str, tmp_path: Path
) -> None:
    bluesky.set_faults(refresh_grace_seconds=3600)  # as the AT Protocol reference PDS does
    before = _stored(account)
    _expire_soon(account)

    _kill_between_reply_and_commit(
        account, bluesky, _child_env(worker_database_url, bluesky, tmp_path)
    )

    assert _refreshes(bluesky) == 1  # the provider rotated...
    assert _stored(account) == before  # ...and nothing of its reply was committed: no half pair
    time.sleep(2.2)  # the dead worker's lease (HERALD_TOKEN_REFRESH_LEASE_SECONDS=2) runs out
    assert tokens.account_token_refresh(account_id=account.pk) == Outcome.REFRESHED
    assert Account.objects.get(pk=account.pk).status == Account.Status.ACTIVE
    assert _stored(account)["refresh_jwt"] != before["refresh_jwt"]
    assert _publishes(account)
    # and the next rotation works as usual
    assert tokens.account_token_refresh(account_id=account.pk, force=True) == Outcome.REFRESHED
    assert _publishes(account)


@pytest.mark.django_db(transaction=True)
def test_worker_killed_after_the_reply_with_strict_rotation_asks_for_a_reconnect(
    account: Account, bluesky: GatedBlueskyStandIn, worker_database_url: str, tmp_path: Path
) -> None:
    """A provider without grace refuses the previous refresh token: the account says so and its
    scheduled publications are held (never a silent failure at publish time)."""
    destination = _scheduled(account)
    _expire_soon(account)

    _kill_between_reply_and_commit(
        account, bluesky, _child_env(worker_database_url, bluesky, tmp_path)
    )
    time.sleep(2.2)

    assert tokens.account_token_refresh(account_id=account.pk) == Outcome.RECONNECT_REQUIRED
    row = Account.objects.get(pk=account.pk)
    assert row.status == Account.Status.RECONNECT_REQUIRED
    assert "refused to renew" in row.status_reason
    destination.refresh_from_db()
    assert destination.status == Destination.Status.BLOCKED
    assert destination.error_kind == "held"


# --- Invalid grant ------------------------------------------------------------------------------


@pytest.mark.django_db
def test_invalid_grant_requires_reconnect_and_holds_scheduled_publications_until_then(
    account: Account, bluesky: GatedBlueskyStandIn, user: Any, workspace: Any
) -> None:
    destination = _scheduled(account)
    with bluesky.lock:
        bluesky.refresh.clear()  # the grant was revoked at the provider
    _expire_soon(account)

    assert tokens.account_token_refresh(account_id=account.pk) == Outcome.RECONNECT_REQUIRED

    row = Account.objects.get(pk=account.pk)
    assert row.status == Account.Status.RECONNECT_REQUIRED
    assert row.status_reason.startswith("The provider refused to renew the authorization")
    decision = readiness.decide_account(
        account=row, operation="publish_scheduled", profile="bluesky.post"
    )
    assert decision.state == "reconnect_required"
    assert decision.facts["authorization"]["status"] == "invalid"
    destination.refresh_from_db()
    assert destination.status == Destination.Status.BLOCKED
    assert (destination.error_kind, destination.action) == ("held", "reconnect")
    assert row.status_reason in destination.error_message
    assert destination.readiness is not None
    assert destination.readiness["state"] == "reconnect_required"
    assert destination.events.filter(kind="destination.held").count() == 1
    # A second sweep or send changes nothing.
    assert tokens.account_token_refresh(account_id=account.pk) == Outcome.INACTIVE

    password = bluesky.fixtures()["accounts"]["herald.test"]["app_password"]
    account_connect(
        actor=Actor(user=user),
        workspace_id=workspace.pk,
        provider="bluesky",
        redirect_uri=REDIRECT_URI,
        fields={"handle": "herald.test", "app_password": password},
    )
    assert Account.objects.get(pk=account.pk).status == Account.Status.ACTIVE
    destination.refresh_from_db()
    assert destination.status == Destination.Status.SCHEDULED
    assert destination.error_kind == ""
    assert destination.events.filter(kind="destination.released").count() == 1


# --- Tokens without programmatic refresh --------------------------------------------------------


@pytest.mark.django_db
def test_token_without_refresh_requires_reconnect_days_before_expiry(
    workspace: Any, settings: Any
) -> None:
    """An X grant made without offline.access has no refresh token: no programmatic refresh."""
    settings.HERALD_RECONNECT_WARNING_DAYS = 7
    account = Account.objects.create(
        workspace=workspace,
        provider="x",
        external_id="2244994945",
        username="herald",
        credentials_encrypted=credentials.encrypt({"access_token": "only-an-access-token"}),
        token_expires_at=timezone.now() + timedelta(days=10),
    )
    assert not get_adapter("x").can_refresh(credentials=_stored(account))
    destination = _scheduled(account)
    destination.profile = "x.post"
    destination.save(update_fields=["profile"])

    assert tokens.account_tokens_refresh_due() == {"refresh_queued": 0, "reconnect_required": 0}
    assert Account.objects.get(pk=account.pk).status == Account.Status.ACTIVE

    Account.objects.filter(pk=account.pk).update(
        token_expires_at=timezone.now() + timedelta(days=6)
    )
    assert tokens.account_tokens_refresh_due() == {"refresh_queued": 0, "reconnect_required": 1}

    row = Account.objects.get(pk=account.pk)
    assert row.status == Account.Status.RECONNECT_REQUIRED
    assert "cannot be renewed automatically" in row.status_reason
    assert row.token_expires_at is not None
    assert row.token_expires_at.strftime("%Y-%m-%d") in row.status_reason
    destination.refresh_from_db()
    assert (destination.status, destination.error_kind) == (Destination.Status.BLOCKED, "held")


# --- Disconnect -----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_disconnect_revokes_at_the_provider_and_removes_credentials(
    account: Account, bluesky: GatedBlueskyStandIn, user: Any
) -> None:
    account_disconnect(actor=Actor(user=user), account_id=account.pk)

    row = Account.objects.get(pk=account.pk)
    assert row.status == Account.Status.DISCONNECTED
    assert row.credentials_encrypted == ""
    assert row.token_expires_at is None
    assert bluesky.stats()["counters"].get("sessions_deleted", 0) == 1


@pytest.mark.django_db
def test_disconnect_skips_the_provider_when_readiness_forbids_revoke_and_still_removes_credentials(
    account: Account, bluesky: GatedBlueskyStandIn, user: Any, settings: Any
) -> None:
    settings.HERALD_DISABLED_PROVIDERS = ["bluesky"]

    account_disconnect(actor=Actor(user=user), account_id=account.pk)

    row = Account.objects.get(pk=account.pk)
    assert row.status == Account.Status.DISCONNECTED
    assert row.credentials_encrypted == ""
    assert bluesky.stats()["counters"].get("sessions_deleted", 0) == 0
