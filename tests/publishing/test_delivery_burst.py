"""Bursts through REAL worker processes: the shipped worker (Celery's threads pool,
``HERALD_WORKER_CONCURRENCY`` sends at once, PostgreSQL connections from Django's pool) and beat,
on PostgreSQL + Redis only, against the stand-in Mastodon on 127.0.0.1.

- A worker killed with SIGKILL in the middle of a 1,000-destination burst: a replacement
  delivers the rest; every destination is published with exactly one post at the provider (the
  sends in flight at the kill are reconciled through their idempotency key, never re-sent
  blindly), and the messages the dead worker had reserved are re-enqueued from the database.
- Two worker processes started separately (as two hosts run them) and one beat share a burst:
  each delivers part of it, nothing twice.

The throughput figures (1,000 x 300 ms, one and two workers) live in bench/burst.py; here the
stand-in answers faster to keep the runtime reasonable.
"""

from __future__ import annotations

import re
import uuid
from collections import Counter
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import requests
from django.conf import settings as django_settings
from django.db import connection
from django.db.models import Count
from django.utils import timezone

from providers import credentials
from publishing.models import Account, Destination, ProviderApp
from publishing.services.publications import publication_create, publication_schedule
from tests.providers.mastodon.standin import MastodonStandIn
from tests.worker_harness import Broker, DeliveryStack, credential_keys, use_broker
from workspaces.access import Actor

pytestmark = [
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(420),
    pytest.mark.skipif(
        not django_settings.REDIS_URL or connection.vendor != "postgresql",
        reason="the PostgreSQL + Redis run (the threads pool with a connection pool)",
    ),
]

S = Destination.Status
ACCOUNTS = 50  # one destination per account and publication: 20 publications make 1,000
RECEIVED = re.compile(r"Task publishing\.delivery_send\[[0-9a-f-]+\] received")


@pytest.fixture
def stack(worker_database_url: str, tmp_path: Path) -> Iterator[DeliveryStack]:
    broker = Broker.redis(django_settings.REDIS_URL)
    keys = credential_keys()
    own = DeliveryStack(
        database_url=worker_database_url, broker=broker, data_dir=tmp_path, settings_env=keys
    )
    with use_broker(broker):
        try:
            yield own
        finally:
            own.stop()


def accounts_for(mastodon: MastodonStandIn, workspace: Any, user: Any, count: int) -> list[str]:
    """Connected Mastodon accounts as the OAuth callback stores them, each a user of its own at
    the stand-in (its token, its statuses: what reconciliation scans)."""
    fixtures = mastodon.fixtures()
    with mastodon.lock:
        for n in range(count):
            user_id = str(1000 + n)
            mastodon.tokens[f"burst-token-{n}"] = user_id
            mastodon.accounts[user_id] = {
                "id": user_id,
                "username": f"herald{n}",
                "acct": f"herald{n}",
                "display_name": f"Herald {n}",
                "bot": False,
            }
    registered = requests.post(
        mastodon.url + "/api/v1/apps",
        json={
            "client_name": "Herald",
            "redirect_uris": "http://testserver/cb",
            "scopes": "read write",
        },
        timeout=10,
    ).json()
    app = ProviderApp.objects.create(
        provider="mastodon",
        instance_url=fixtures["instance_url"],
        credentials_encrypted=credentials.encrypt(
            {"client_id": registered["client_id"], "client_secret": registered["client_secret"]}
        ),
    )
    return [
        str(
            Account.objects.create(
                workspace=workspace,
                provider="mastodon",
                external_id=str(1000 + n),
                username=f"herald{n}",
                instance_url=fixtures["instance_url"],
                granted_scopes=["read", "write"],
                app=app,
                connected_by=user,
                credentials_encrypted=credentials.encrypt({"access_token": f"burst-token-{n}"}),
            ).pk
        )
        for n in range(count)
    ]


def schedule_burst(
    actor: Actor, workspace: Any, accounts: list[str], publications: int, *, lead: float
) -> None:
    """``publications`` x ``len(accounts)`` destinations, all due in the same second."""
    drafts = [
        publication_create(
            actor=actor,
            workspace_id=workspace.pk,
            text=f"Burst {uuid.uuid4().hex[:8]} post {n}",
            destinations=[{"account_id": account_id} for account_id in accounts],
        )
        for n in range(publications)
    ]
    due = timezone.now() + timedelta(seconds=lead)
    for draft in drafts:
        publication_schedule(
            actor=actor, publication_id=draft.pk, scheduled_at=due, expected_revision=None
        )


def statuses() -> Counter[str]:
    return Counter(dict(Destination.objects.values_list("status").annotate(n=Count("pk"))))


def assert_each_posted_once(mastodon: MastodonStandIn, expected: int) -> None:
    """Every destination published, with the id of its one post at the provider."""
    rows = list(Destination.objects.values_list("idempotency_key", "status", "external_id"))
    assert len(rows) == expected
    assert Counter(status for _, status, _ in rows) == {S.PUBLISHED: expected}
    with mastodon.lock:
        posts = list(mastodon.posts)
    per_key = Counter(p["idempotency_key"] for p in posts)
    assert [key for key, n in per_key.items() if n > 1] == [], "a destination was posted twice"
    assert mastodon.posts_accepted == expected
    ids = {p["idempotency_key"]: p["id"] for p in posts}
    assert {key: external for key, _, external in rows} == ids


def test_worker_killed_mid_burst_loses_nothing_and_posts_nothing_twice(
    stack: DeliveryStack, mastodon: MastodonStandIn, user: Any, workspace: Any, settings: Any
) -> None:
    settings.HERALD_ALLOW_PRIVATE_PROVIDER_URLS = True
    mastodon.set_faults(delay_ms=100)
    actor = Actor(user=user)
    accounts = accounts_for(mastodon, workspace, user, ACCOUNTS)
    schedule_burst(actor, workspace, accounts, 1000 // ACCOUNTS, lead=20)
    stack.start_beat()
    doomed = stack.start_worker("doomed")

    stack.wait_until(
        lambda: mastodon.posts_accepted >= 150 or None,
        timeout=120,
        what="the burst to be under way",
    )
    doomed.kill()  # SIGKILL in the middle: sends in flight, messages reserved but not acknowledged
    mastodon.set_faults(delay_ms=0)  # the rest quickly (reconciliation scans the account's posts)
    at_kill = statuses()
    assert at_kill[S.PUBLISHED] < 1000, at_kill
    in_flight = at_kill[S.SENDING]
    assert in_flight > 0, f"nothing was in flight at the kill: {at_kill}"

    stack.start_worker("replacement")
    stack.wait_until(
        lambda: statuses()[S.PUBLISHED] == 1000 or None,
        timeout=300,
        what="all 1,000 to be published",
    )

    assert_each_posted_once(mastodon, 1000)
    # What was in flight at the kill was reconciled (asked with its key), not sent again as new.
    reconciled = (
        Destination.objects.filter(events__kind="destination.reconciled").distinct().count()
    )
    assert reconciled <= in_flight


def test_two_workers_share_a_burst(
    stack: DeliveryStack, mastodon: MastodonStandIn, user: Any, workspace: Any, settings: Any
) -> None:
    settings.HERALD_ALLOW_PRIVATE_PROVIDER_URLS = True
    mastodon.set_faults(delay_ms=200)
    actor = Actor(user=user)
    accounts = accounts_for(mastodon, workspace, user, 20)
    schedule_burst(actor, workspace, accounts, 10, lead=15)  # 200 destinations
    # Two hosts: two worker commands, each with its own process and connection pool.
    first = stack.start_worker("host-a", concurrency=8)
    second = stack.start_worker("host-b", concurrency=8)
    stack.start_beat()

    stack.wait_until(
        lambda: statuses()[S.PUBLISHED] == 200 or None, timeout=180, what="all 200 to be published"
    )

    assert_each_posted_once(mastodon, 200)
    received = [len(RECEIVED.findall(worker.log())) for worker in (first, second)]
    assert all(n > 0 for n in received), f"sends received per worker: {received}"
