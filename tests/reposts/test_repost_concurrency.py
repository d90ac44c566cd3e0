"""Concurrency of repost automation on PostgreSQL (row locks and conditional claims; SQLite
serializes writers, so these run only on PostgreSQL)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection

from config.errors import RevisionConflictError
from reposts import engine, services
from reposts.models import RepostExecution, RepostPolicy
from tests.providers.mastodon.standin import MastodonStandIn
from tests.repost_support import Requests, live_mastodon_boosts, mastodon_account, published, rule
from workspaces.access import Actor

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def in_threads(count: int, work: Callable[[int], Any]) -> list[Any]:
    start = threading.Barrier(count)

    def run(n: int) -> Any:
        try:
            start.wait()
            return work(n)
        except Exception as exc:
            return exc
        finally:
            connection.close()  # threads must release their connections

    with ThreadPoolExecutor(max_workers=count) as pool:
        return list(pool.map(run, range(count)))


def test_concurrent_replacements_with_one_revision_let_exactly_one_win(
    user: Any, workspace: Any, mastodon: MastodonStandIn
) -> None:
    target = mastodon_account(workspace, mastodon)

    def replace(n: int) -> Any:
        return services.repost_settings_replace(
            actor=Actor(user=user),
            workspace_id=workspace.pk,
            expected_revision=0,
            policies=[
                {
                    "name": f"P{n}",
                    "enabled": True,
                    "source_account_ids": [],
                    "target_account_ids": [str(target.pk)],
                    "rule": rule(),
                }
            ],
        )

    results = in_threads(4, replace)

    assert sum(1 for r in results if isinstance(r, RevisionConflictError)) == 3, results
    assert RepostPolicy.objects.count() == 1


def test_concurrent_workers_on_one_execution_repost_once(
    user: Any, workspace: Any, mastodon: MastodonStandIn
) -> None:
    source = mastodon_account(workspace, mastodon)
    target = mastodon_account(workspace, mastodon, friend=True)
    services.repost_settings_replace(
        actor=Actor(user=user),
        workspace_id=workspace.pk,
        expected_revision=0,
        policies=[
            {
                "name": "P",
                "enabled": True,
                "source_account_ids": [str(source.pk)],
                "target_account_ids": [str(target.pk)],
                "rule": rule(delay_seconds=0),
            }
        ],
    )
    post = published(source)
    now = post.published_at + timedelta(seconds=60)
    assert engine.executions_create(now=now) == 1
    execution = RepostExecution.objects.get()

    outcomes = in_threads(4, lambda _: engine.execution_advance(execution_id=execution.pk, now=now))

    assert sorted(map(str, outcomes)) == ["None", "None", "None", "succeeded"]
    assert Requests(mastodon).count("POST", "/reblog") == 1
    assert live_mastodon_boosts(mastodon, "2", post.external_id) == 1
