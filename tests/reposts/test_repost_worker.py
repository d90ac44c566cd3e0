"""Repost automation through REAL Celery processes: a `celery beat` that
ticks the engine and `celery worker`s on the test database, boosting on the stand-in Mastodon.

A worker is killed (SIGKILL, whole process group) between the repost call and its record; after
its lease, a replacement worker reconciles with the provider (the status's ``reblogged`` flag)
and records the boost: no second repost.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.conf import settings as django_settings
from rest_framework.test import APIClient

from reposts.models import RepostExecution, RepostStage
from tests.providers.mastodon.standin import MastodonStandIn
from tests.repost_support import (
    Requests,
    live_mastodon_boosts,
    mastodon_account,
    policy,
    published,
    put_policies,
)
from tests.worker_harness import Broker, DeliveryStack, credential_keys, use_broker

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True), pytest.mark.timeout(240)]


@pytest.fixture
def stack(worker_database_url: str, tmp_path: Any) -> Iterator[DeliveryStack]:
    redis_url = django_settings.REDIS_URL
    broker = Broker.redis(redis_url) if redis_url else Broker.filesystem(tmp_path)
    own = DeliveryStack(
        database_url=worker_database_url,
        broker=broker,
        data_dir=tmp_path,
        settings_env=credential_keys(),
        overrides={
            "HERALD_REPOST_TICK_SECONDS": "1",
            "HERALD_REPOST_LEASE_SECONDS": "3",
            "HERALD_PROVIDER_TIMEOUT_SECONDS": "10",  # the boost is slow on purpose; never time out
        },
    )
    with use_broker(broker):
        try:
            yield own
        finally:
            own.stop()


def test_worker_killed_between_the_boost_and_its_record_boosts_once(
    stack: DeliveryStack,
    mastodon: MastodonStandIn,
    owner_client: APIClient,
    workspace: Any,
    provider_settings: Any,
) -> None:
    source = mastodon_account(workspace, mastodon)
    target = mastodon_account(workspace, mastodon, friend=True)
    response = put_policies(owner_client, workspace, [policy([target], [source], delay_seconds=0)])
    assert response.status_code == 200, response.content
    post = published(source)
    boosts = Requests(mastodon)
    mastodon.set_faults(delay_ms=3000)  # the boost request is in flight for 3 s

    stack.start_beat()
    doomed = stack.start_worker("doomed")
    stack.wait_until(lambda: boosts.count("POST", "/reblog"), timeout=60, what="the boost request")
    doomed.kill()  # SIGKILL while the provider handles the boost
    mastodon.set_faults(delay_ms=0)
    stack.wait_until(
        lambda: mastodon.counters["reblogs"] == 1, timeout=15, what="the provider to boost"
    )
    execution = RepostExecution.objects.get(destination=post)
    (stage,) = RepostStage.objects.filter(execution=execution)
    assert (execution.status, stage.status) == (
        RepostExecution.Status.READY,
        RepostStage.Status.IN_FLIGHT,
    )
    assert stage.intent_at is not None  # the intent was recorded before the call; nothing after

    stack.start_worker("replacement")
    stack.wait_until(
        lambda: RepostExecution.objects.filter(
            pk=execution.pk, status=RepostExecution.Status.SUCCEEDED
        ).exists(),
        timeout=60,
        what="the execution to succeed",
    )

    stage.refresh_from_db()
    assert (stage.status, stage.reconciled) == (RepostStage.Status.SUCCEEDED, True)
    assert stage.repost_id
    assert boosts.count("POST", "/reblog") == 1, "boosted again instead of asking the provider"
    assert live_mastodon_boosts(mastodon, "2", post.external_id) == 1
    assert boosts.count("GET", f"/statuses/{post.external_id}") >= 1  # the reconciliation read
