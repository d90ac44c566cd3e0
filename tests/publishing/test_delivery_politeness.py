"""Politeness and fairness of delivery, on the real database, the real
limits store and stand-in providers on 127.0.0.1:

* in-flight caps: at most N provider calls at once per connected account and per provider
  host; a send that finds no free slot goes back to the queue without counting an attempt;
* a 429 with Retry-After from one provider host pauses that host only: its other destinations
  wait (no request before the pause ends) while another host's deliver at once;
* the dispatcher takes due work round-robin by workspace, with a per-workspace cap on queued
  and sending work, so one workspace's burst does not queue ahead of another's single post.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone
from rest_framework.test import APIClient

from config import limits
from publishing.models import Account, Destination, Publication
from publishing.services import delivery, publications
from tests.providers.mastodon.standin import MastodonStandIn
from tests.providers.standin import Reply, Request
from tests.publishing_support import connect, make_account
from workspaces.access import Actor
from workspaces.models import User
from workspaces.services import workspace_create

S = Destination.Status
STATUSES = "/api/v1/statuses"


class CountingMastodon(MastodonStandIn):
    """A stand-in Mastodon that records how many status posts it is answering at once."""

    def __init__(self) -> None:
        super().__init__()
        self.in_flight = 0
        self.peak = 0

    def dispatch(self, request: Request) -> Reply:
        counted = request.method == "POST" and request.path == STATUSES
        if counted:
            with self.lock:
                self.in_flight += 1
                self.peak = max(self.peak, self.in_flight)
        try:
            return super().dispatch(request)
        finally:
            if counted:
                with self.lock:
                    self.in_flight -= 1

    def status_posts(self) -> int:
        with self.lock:
            return sum(
                1 for r in self.request_log if r["method"] == "POST" and r["path"] == STATUSES
            )


@pytest.fixture
def standins(provider_settings: Any) -> Iterator[tuple[CountingMastodon, CountingMastodon]]:
    with CountingMastodon() as first, CountingMastodon() as second:
        yield first, second


def twin_accounts(account: Account, count: int) -> list[Account]:
    """``count`` more accounts of the same stand-in user (distinct Herald accounts)."""
    values = {
        f.attname: getattr(account, f.attname)
        for f in Account._meta.concrete_fields
        if not f.primary_key
    }
    return [
        Account.objects.create(**{**values, "external_id": f"{account.external_id}-{n}"})
        for n in range(count)
    ]


def publish_now(
    user: User, account_ids: list[Any], django_capture_on_commit_callbacks: Any
) -> list[Destination]:
    """One publication per account id, published now; their destinations (nothing sent yet)."""
    actor = Actor(user=user)
    rows = []
    for account_id in account_ids:
        account = Account.objects.get(pk=account_id)
        publication = publications.publication_create(
            actor=actor,
            workspace_id=account.workspace_id,
            text=f"Post {uuid.uuid4().hex[:8]}",
            destinations=[{"account_id": str(account_id)}],
        )
        with django_capture_on_commit_callbacks(execute=True):
            publications.publication_publish_now(
                actor=actor, publication_id=publication.pk, expected_revision=1
            )
        rows.append(Destination.objects.get(publication=publication))
    return rows


def send_concurrently(destinations: list[Destination]) -> None:
    """Every destination's send at the same moment, one thread each (as a threads-pool worker)."""
    start = threading.Barrier(len(destinations))
    errors: list[BaseException] = []

    def run(destination_id: Any) -> None:
        try:
            start.wait(timeout=10)
            delivery.delivery_send(destination_id=destination_id)
        except BaseException as exc:  # reported by the test thread
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(d.pk,)) for d in destinations]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert not errors, errors


# --- In-flight caps ------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("cap", ["account", "host"])
def test_at_most_n_sends_in_flight_per_account_and_per_host(
    cap: str,
    worker_database_url: str,
    owner_client: APIClient,
    workspace: Any,
    user: User,
    standins: tuple[CountingMastodon, CountingMastodon],
    delivery_queue: Any,
    settings: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    """N+1 sends at once against a stand-in that answers slowly: N reach it, the last one goes
    back to the queue without an attempt, and is delivered once a slot is free."""
    server, _ = standins
    n = 2
    settings.HERALD_PROVIDER_MAX_IN_FLIGHT_PER_ACCOUNT = n if cap == "account" else 10
    settings.HERALD_PROVIDER_MAX_IN_FLIGHT_PER_HOST = n if cap == "host" else 10

    account = Account.objects.get(pk=connect(owner_client, workspace, "mastodon", server)["id"])
    # The account cap: N+1 posts of one account; the host cap: one post each of N+1 accounts.
    accounts = [account] * (n + 1) if cap == "account" else [account, *twin_accounts(account, n)]
    destinations = publish_now(user, [a.pk for a in accounts], django_capture_on_commit_callbacks)
    delivery_queue.clear()
    server.set_faults(delay_ms=800)

    send_concurrently(destinations)

    assert server.peak == n
    assert server.status_posts() == n
    rows = list(Destination.objects.filter(pk__in=[d.pk for d in destinations]))
    assert sorted(r.status for r in rows) == [S.PUBLISHED] * n + [S.QUEUED]
    waiting = next(r for r in rows if r.status == S.QUEUED)
    # Put back: no attempt counted, nothing recorded as written, a new message with a countdown.
    assert (waiting.attempts, waiting.write_started_at, waiting.claim_expires_at) == (0, None, None)
    assert delivery_queue.sends == [str(waiting.pk)]
    assert 1.0 <= delivery_queue.countdowns[str(waiting.pk)] <= 2.0
    assert waiting.next_attempt_at > timezone.now()
    # Its countdown over, it is delivered with its first attempt, and every slot was given back.
    Destination.objects.filter(pk=waiting.pk).update(next_attempt_at=timezone.now())
    delivery_queue.run(rounds=1)
    waiting.refresh_from_db()
    assert (waiting.status, waiting.attempts) == (S.PUBLISHED, 1)
    assert server.status_posts() == n + 1
    assert limits.held_shared_slots(f"delivery:account:{account.pk}") == 0
    assert (
        limits.held_shared_slots(f"delivery:host:{delivery.provider_host('mastodon', account)}")
        == 0
    )


@pytest.mark.django_db
def test_a_slot_left_by_a_killed_worker_expires(
    owner_client: APIClient,
    workspace: Any,
    user: User,
    standins: tuple[CountingMastodon, CountingMastodon],
    delivery_queue: Any,
    settings: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    """A slot is leased: one a dead worker never gave back frees itself after the lease."""
    server, _ = standins
    settings.HERALD_PROVIDER_MAX_IN_FLIGHT_PER_ACCOUNT = 1

    account = Account.objects.get(pk=connect(owner_client, workspace, "mastodon", server)["id"])
    (destination,) = publish_now(user, [account.pk], django_capture_on_commit_callbacks)
    delivery_queue.clear()
    # The slot of a send whose worker was SIGKILLed, with one second of lease left.
    assert limits.acquire_shared_slots(
        [(f"delivery:account:{account.pk}", 1)], "killed-worker", 1.0
    ) == (True, 0.0)
    with django_capture_on_commit_callbacks(execute=True):
        delivery.delivery_send(destination_id=destination.pk)
    destination.refresh_from_db()
    assert (destination.status, destination.attempts, server.status_posts()) == (S.QUEUED, 0, 0)
    time.sleep(1.1)
    Destination.objects.filter(pk=destination.pk).update(next_attempt_at=timezone.now())
    with django_capture_on_commit_callbacks(execute=True):
        delivery_queue.run(rounds=1)
    destination.refresh_from_db()
    assert (destination.status, destination.attempts, server.status_posts()) == (S.PUBLISHED, 1, 1)


# --- 429 isolation -------------------------------------------------------------------------------


@pytest.mark.django_db
def test_retry_after_from_one_host_pauses_that_host_only(
    owner_client: APIClient,
    workspace: Any,
    user: User,
    standins: tuple[CountingMastodon, CountingMastodon],
    delivery_queue: Any,
    settings: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    limited, other = standins
    settings.HERALD_RETRY_BASE_SECONDS = 0.5
    limited_account = connect(owner_client, workspace, "mastodon", limited)["id"]
    other_account = connect(owner_client, workspace, "mastodon", other)["id"]
    limited_rows = publish_now(user, [limited_account] * 3, django_capture_on_commit_callbacks)
    other_rows = publish_now(user, [other_account] * 3, django_capture_on_commit_callbacks)
    delivery_queue.clear()
    limited.set_faults(rate_limit={"count": 1, "retry_after": 2})
    started = time.time()
    # The broker's order: the limited host's three first, then the other host's.
    with django_capture_on_commit_callbacks(execute=True):
        for row in limited_rows + other_rows:
            delivery.delivery_send(destination_id=row.pk)
    assert time.time() - started < 1.5  # nobody waited for the paused host

    # One request reached the limited host (the 429); the others were held back without one.
    assert limited.status_posts() == 1
    first, *held = (Destination.objects.get(pk=r.pk) for r in limited_rows)
    assert (first.status, first.attempts, first.error_kind) == (S.RETRY_WAIT, 1, "rate_limited")
    assert [(r.status, r.attempts) for r in held] == [(S.QUEUED, 0)] * 2
    assert (
        delivery.host_paused_until(delivery.provider_host("mastodon", first.account)) >= started + 2
    )
    for row in held:
        assert row.next_attempt_at >= timezone.now() + timedelta(seconds=0.5)
        assert 2.0 - 1.0 <= delivery_queue.countdowns[str(row.pk)] <= 2.0 + 1.0
    # The other host delivered at full speed.
    assert [Destination.objects.get(pk=r.pk).status for r in other_rows] == [S.PUBLISHED] * 3
    assert other.status_posts() == 3
    assert (
        delivery.host_paused_until(delivery.provider_host("mastodon", other_rows[0].account)) == 0
    )

    # Once the pause is over, the limited host's destinations go, each with one more request.
    time.sleep(max(0.0, started + 3.2 - time.time()))
    Destination.objects.filter(pk__in=[r.pk for r in limited_rows]).update(
        next_attempt_at=timezone.now()
    )
    with django_capture_on_commit_callbacks(execute=True):
        for row in limited_rows:
            delivery.delivery_send(destination_id=row.pk)
    assert [Destination.objects.get(pk=r.pk).status for r in limited_rows] == [S.PUBLISHED] * 3
    assert limited.status_posts() == 4  # no attempt wasted beyond the first 429
    assert limited.posts_accepted == 3
    assert [Destination.objects.get(pk=r.pk).attempts for r in limited_rows] == [2, 1, 1]


@pytest.mark.django_db
def test_provider_host_is_the_host_only(settings: Any) -> None:
    """The pause and cap key of a destination: host and port, never a webhook URL's path."""

    class Context:
        def __init__(self, instance_url: str = "", **credentials: str) -> None:
            self.instance_url, self.credentials = instance_url, credentials

    settings.HERALD_TELEGRAM_API_URL = "https://api.telegram.org"
    assert (
        delivery.provider_host("mastodon", Context("https://Mastodon.Social")) == "mastodon.social"
    )
    assert delivery.provider_host("mastodon", Context("http://127.0.0.1:8001")) == "127.0.0.1:8001"
    assert (
        delivery.provider_host("webhook", Context(url="https://u:p@hooks.example/secret/path"))
        == "hooks.example"
    )
    assert (
        delivery.provider_host(
            "discord_webhook", Context(webhook_url="https://discord.com/api/webhooks/1/token")
        )
        == "discord.com"
    )
    assert delivery.provider_host("telegram", Context(bot_token="x")) == "api.telegram.org"
    assert delivery.provider_host("feed", Context(title="Feed")) == ""


# --- Fairness between workspaces -----------------------------------------------------------------


def due_destinations(workspace: Any, account: Account, count: int, due_at: Any) -> list[Any]:
    """``count`` scheduled publications of one destination each, all due at ``due_at`` (rows
    written in bulk: the dispatcher reads only these columns)."""
    pubs = Publication.objects.bulk_create(
        Publication(
            workspace=workspace,
            status=Publication.Status.SCHEDULED,
            text=f"Burst {n}",
            scheduled_at=due_at,
        )
        for n in range(count)
    )
    rows = Destination.objects.bulk_create(
        Destination(
            publication=p,
            account=account,
            profile="mastodon.post",
            status=S.SCHEDULED,
            idempotency_key=uuid.uuid4().hex,
            due_at=due_at,
            deadline_at=due_at + timedelta(hours=6),
        )
        for p in pubs
    )
    return [r.pk for r in rows]


@pytest.fixture
def two_workspaces(
    user: User, organization: Any, workspace: Any
) -> tuple[Any, Any, Account, Account]:
    other = workspace_create(actor=Actor(user=user), organization_id=organization.pk, name="Other")
    return workspace, other, make_account(workspace, "mastodon"), make_account(other, "mastodon")


@pytest.mark.django_db
def test_dispatcher_interleaves_workspaces_and_caps_a_burst(
    two_workspaces: tuple[Any, Any, Account, Account], delivery_queue: Any, settings: Any
) -> None:
    """A has 1,000 due, B one, due the same second: B's is among the first two enqueued, and A
    has at most the cap queued; A's next share follows as its queued work is sent."""
    settings.HERALD_DISPATCH_MAX_QUEUED_PER_WORKSPACE = 64
    settings.HERALD_DISPATCH_INTERVAL_SECONDS = 0.0  # one pass per tick (no refill loop) in tests
    a, b, account_a, account_b = two_workspaces
    due = timezone.now() - timedelta(seconds=1)
    burst = set(map(str, due_destinations(a, account_a, 1000, due)))
    (single,) = map(str, due_destinations(b, account_b, 1, due + timedelta(milliseconds=500)))

    counts = delivery.delivery_dispatch()

    assert counts["due"] == 65
    assert single in delivery_queue.sends[:2]
    assert len(burst & set(delivery_queue.sends)) == 64
    assert Destination.objects.filter(publication__workspace=a, status=S.QUEUED).count() == 64
    # Nothing more for A while its 64 wait; once 40 are sent, 40 more.
    delivery_queue.clear()
    assert delivery.delivery_dispatch()["due"] == 0
    sent = list(
        Destination.objects.filter(publication__workspace=a, status=S.QUEUED).values_list(
            "pk", flat=True
        )[:40]
    )
    Destination.objects.filter(pk__in=sent).update(status=S.PUBLISHED)
    assert delivery.delivery_dispatch()["due"] == 40
    assert Destination.objects.filter(publication__workspace=a, status=S.QUEUED).count() == 64


@pytest.mark.django_db
def test_work_due_later_is_not_queued_behind_a_backlog(
    two_workspaces: tuple[Any, Any, Account, Account], delivery_queue: Any, settings: Any
) -> None:
    """B's post due a moment after A's burst went out is enqueued at the next tick, ahead of
    the rest of A's burst (which stays scheduled until A's queued work drains)."""
    settings.HERALD_DISPATCH_MAX_QUEUED_PER_WORKSPACE = 50
    settings.HERALD_DISPATCH_INTERVAL_SECONDS = 0.0
    a, b, account_a, account_b = two_workspaces
    now = timezone.now()
    due_destinations(a, account_a, 300, now - timedelta(seconds=2))
    assert delivery.delivery_dispatch()["due"] == 50
    delivery_queue.clear()
    (single,) = map(str, due_destinations(b, account_b, 1, now - timedelta(seconds=1)))
    Destination.objects.filter(publication__workspace=a, status=S.QUEUED).update(status=S.SENDING)
    assert delivery.delivery_dispatch()["due"] == 1
    assert delivery_queue.sends == [single]


@pytest.mark.django_db
def test_dispatcher_round_robin_without_a_cap(
    user: User, organization: Any, workspace: Any, delivery_queue: Any, settings: Any
) -> None:
    """With the cap off (0), due work still goes out round-robin: each workspace's earliest
    first, then each one's second, and so on, even when one workspace's whole burst fell due
    before the others' (strict due-time order would send all 30 of it first)."""
    settings.HERALD_DISPATCH_MAX_QUEUED_PER_WORKSPACE = 0
    spaces = [workspace] + [
        workspace_create(actor=Actor(user=user), organization_id=organization.pk, name=f"W{n}")
        for n in range(2)
    ]
    start = timezone.now() - timedelta(minutes=1)
    order: dict[str, tuple[int, int]] = {}
    for w, (space, count) in enumerate(zip(spaces, (30, 3, 1), strict=True)):
        account = make_account(space, "mastodon")
        for n in range(count):
            (pk,) = due_destinations(space, account, 1, start + timedelta(seconds=10 * w + n / 10))
            order[str(pk)] = (w, n)
    assert delivery.delivery_dispatch()["due"] == 34
    ranks = [order[d][1] for d in delivery_queue.sends]
    assert ranks[:7] == [0, 0, 0, 1, 1, 2, 2]
    assert sorted(order[d][0] for d in delivery_queue.sends[:3]) == [0, 1, 2]
    assert ranks[7:] == list(range(3, 30))


@pytest.mark.django_db
def test_reconciliation_waits_for_a_paused_host(
    owner_client: APIClient,
    workspace: Any,
    user: User,
    standins: tuple[CountingMastodon, CountingMastodon],
    delivery_queue: Any,
    settings: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    """An ambiguous destination of a host paused by a 429 is not asked about until the pause
    ends: no request to the host, the next check after the pause."""
    server, _ = standins
    account = connect(owner_client, workspace, "mastodon", server)["id"]
    limited, ambiguous = publish_now(user, [account] * 2, django_capture_on_commit_callbacks)
    delivery_queue.clear()
    server.set_faults(rate_limit={"count": 1, "retry_after": 60})
    with django_capture_on_commit_callbacks(execute=True):
        delivery.delivery_send(destination_id=limited.pk)
    Destination.objects.filter(pk=ambiguous.pk).update(
        status=S.AMBIGUOUS, write_started_at=timezone.now(), next_attempt_at=timezone.now()
    )
    before = len(server.request_log)
    delivery.delivery_reconcile(destination_id=ambiguous.pk)
    ambiguous.refresh_from_db()
    assert len(server.request_log) == before
    assert ambiguous.status == S.AMBIGUOUS
    assert ambiguous.next_attempt_at >= timezone.now() + timedelta(seconds=55)


@pytest.mark.skipif(
    limits.redis_client(limits.caches["default"]) is not None, reason="Redis is the store"
)
@pytest.mark.django_db
def test_caps_fail_open_when_the_store_is_unusable(
    tmp_path: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Slots and pause marks are best effort: an unusable store lets sends through (logged),
    never stops delivery."""
    from django.test import override_settings

    from config.outages import reset_outage_log

    blocked = tmp_path / "not-a-folder"
    blocked.write_text("")  # a file where the store's folder should be
    reset_outage_log()
    with override_settings(HERALD_LIMITS_DB=blocked / "limits.sqlite3"), caplog.at_level("WARNING"):
        assert limits.acquire_shared_slots(
            [("delivery:account:x", 1)], "a", 10, unless_marked="m"
        ) == (True, 0.0)
        assert limits.acquire_shared_slots(
            [("delivery:account:x", 1)], "b", 10, unless_marked="m"
        ) == (True, 0.0)
        limits.set_mark("m", time.time() + 60)
        assert limits.read_mark("m") == 0.0
        limits.release_shared_slots(["delivery:account:x"], "a")
    reset_outage_log()
    assert [r for r in caplog.records if r.name == "config.limits"]
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"


@pytest.mark.django_db
def test_sends_put_back_for_a_slot_count_against_the_cap_paused_ones_do_not(
    two_workspaces: tuple[Any, Any, Account, Account], delivery_queue: Any, settings: Any
) -> None:
    """A send put back for want of an in-flight slot comes back within seconds (its message is
    already held by a worker): it still counts as A's queued work. One deferred by a host's
    long pause does not, so A's work for other hosts goes on."""
    settings.HERALD_DISPATCH_MAX_QUEUED_PER_WORKSPACE = 10
    settings.HERALD_DISPATCH_INTERVAL_SECONDS = 0.0
    a, _, account_a, _ = two_workspaces
    now = timezone.now()
    due_destinations(a, account_a, 100, now - timedelta(seconds=1))
    assert delivery.delivery_dispatch()["due"] == 10
    queued = Destination.objects.filter(publication__workspace=a, status=S.QUEUED)
    queued.update(next_attempt_at=timezone.now() + timedelta(seconds=1.5))  # put back: no slot
    assert delivery.delivery_dispatch()["due"] == 0
    queued.update(next_attempt_at=timezone.now() + timedelta(seconds=60))  # the host is paused
    assert delivery.delivery_dispatch()["due"] == 10
