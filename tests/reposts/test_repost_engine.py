"""The staged repost engine against the stand-in providers with a controllable clock: every
engine call gets an explicit ``now``."""

from __future__ import annotations

import logging
import time
from datetime import datetime, timedelta
from typing import Any
from unittest import mock

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from redis.exceptions import ConnectionError as RedisConnectionError
from rest_framework.test import APIClient

from config.nudge import reset_broker_backoff
from config.outages import reset_outage_log
from providers import get_adapter
from publishing.models import Account
from publishing.services.accounts import account_context
from reposts import engine, rules
from reposts.models import RepostExecution, RepostStage
from tests.openapi_support import SchemaChecker
from tests.providers.bluesky.standin import ACCOUNTS as BLUESKY_ACCOUNTS
from tests.providers.bluesky.standin import BlueskyStandIn
from tests.providers.mastodon.standin import MastodonStandIn
from tests.publishing_support import make_account
from tests.repost_support import (
    API,
    Requests,
    bluesky_account,
    live_bluesky_reposts,
    live_mastodon_boosts,
    mastodon_account,
    policy,
    published,
    put_policies,
    settings_url,
    tick,
)
from tests.worker_harness import wait_until
from workspaces.access import Actor
from workspaces.services import workspace_create

pytestmark = pytest.mark.django_db

HOUR = 3600
INTERVAL = 900  # metrics cadence in these tests (the default)
S = RepostExecution.Status


@pytest.fixture(autouse=True)
def _providers(provider_settings: Any, mastodon: MastodonStandIn, bluesky: BlueskyStandIn) -> None:
    """Fresh stand-ins for every test (tests/conftest.py), the metrics cadence of these tests."""
    provider_settings.HERALD_REPOST_METRICS_INTERVAL_SECONDS = INTERVAL


@pytest.fixture
def source(workspace: Any, mastodon: MastodonStandIn) -> Account:
    return mastodon_account(workspace, mastodon)


@pytest.fixture
def target(workspace: Any, mastodon: MastodonStandIn) -> Account:
    return mastodon_account(workspace, mastodon, friend=True)


def save(client: APIClient, workspace: Any, *policies: dict[str, Any]) -> None:
    response = put_policies(client, workspace, list(policies))
    assert response.status_code == 200, response.content


def only_execution() -> RepostExecution:
    (execution,) = RepostExecution.objects.all()
    return execution


def stages(execution: RepostExecution) -> list[RepostStage]:
    return list(RepostStage.objects.filter(execution=execution).order_by("index"))


def run(t0: datetime, *offsets: float) -> RepostExecution:
    for offset in offsets:
        tick(t0 + timedelta(seconds=offset))
    return only_execution()


# --- Thresholds -------------------------------------------------------------------------------


def test_all_mode_waits_for_every_non_zero_gate(
    owner_client: APIClient,
    workspace: Any,
    mastodon: MastodonStandIn,
    source: Account,
    target: Account,
) -> None:
    save(
        owner_client, workspace, policy([target], [source], min_likes=5, min_reposts=2, min_views=0)
    )
    post = published(source)
    t0 = post.published_at
    reads = Requests(mastodon)

    assert tick(t0 + timedelta(seconds=HOUR - 1)) == {
        "created": 1,
        "dispatched": 0,
    }  # before the delay
    execution = only_execution()
    assert (execution.status, execution.checks) == (S.PENDING, 0)
    assert reads.count("GET", f"/statuses/{post.external_id}") == 0

    mastodon.set_counts(post.external_id, favourites=5, reblogs=1)
    execution = run(t0, HOUR)
    assert (execution.status, execution.checks, execution.last_metrics) == (
        S.PENDING,
        1,
        {"likes": 5, "comments": 0, "reposts": 1, "views": 0},
    )
    assert execution.next_check_at == t0 + timedelta(seconds=HOUR + INTERVAL)

    mastodon.set_counts(post.external_id, favourites=5, reblogs=2)
    execution = run(t0, HOUR + INTERVAL - 1)  # the cadence is bounded: no read yet
    assert execution.checks == 1
    execution = run(t0, HOUR + INTERVAL)

    assert execution.status == S.SUCCEEDED
    assert execution.checks == 2
    assert execution.thresholds_met_at == t0 + timedelta(seconds=HOUR + INTERVAL)
    (stage,) = stages(execution)
    assert stage.status == RepostStage.Status.SUCCEEDED
    assert stage.intent_at == stage.reposted_at
    assert live_mastodon_boosts(mastodon, "2", post.external_id) == 1
    assert reads.count("GET", f"/statuses/{post.external_id}") == 2
    assert tick(t0 + timedelta(days=2)) == {"created": 0, "dispatched": 0}  # finished: never again


def test_any_mode_needs_one_gate_and_zero_disables_a_gate(
    owner_client: APIClient,
    workspace: Any,
    mastodon: MastodonStandIn,
    source: Account,
    target: Account,
) -> None:
    save(
        owner_client,
        workspace,
        policy(
            [target], [source], threshold_mode="any", min_likes=100, min_comments=2, min_reposts=0
        ),
    )
    post = published(source)
    t0 = post.published_at

    mastodon.set_counts(post.external_id, favourites=99, replies=1, reblogs=50)  # reposts: gate off
    assert run(t0, HOUR).status == S.PENDING
    mastodon.set_counts(post.external_id, favourites=99, replies=2)
    execution = run(t0, HOUR + INTERVAL)

    assert execution.status == S.SUCCEEDED
    assert live_mastodon_boosts(mastodon, "2", post.external_id) == 1


def test_a_rule_without_gates_reposts_at_its_delay_without_reading_metrics(
    owner_client: APIClient,
    workspace: Any,
    mastodon: MastodonStandIn,
    source: Account,
    target: Account,
) -> None:
    save(owner_client, workspace, policy([target], [source], delay_seconds=600))
    post = published(source)

    execution = run(post.published_at, 599, 600)

    assert execution.status == S.SUCCEEDED
    assert execution.checks == 0
    assert Requests(mastodon).count("GET", f"/statuses/{post.external_id}") == 0


def test_plateau_waits_for_unchanged_consecutive_checks(
    owner_client: APIClient,
    workspace: Any,
    mastodon: MastodonStandIn,
    source: Account,
    target: Account,
) -> None:
    save(
        owner_client,
        workspace,
        policy([target], [source], min_likes=1, require_plateau=True, plateau_checks=3),
    )
    post = published(source)
    t0 = post.published_at
    readings = [2, 5, 5, 8, 8, 8]
    statuses = []
    for n, likes in enumerate(readings):
        mastodon.set_counts(post.external_id, favourites=likes)
        execution = run(t0, HOUR + n * INTERVAL)
        statuses.append((execution.status, execution.stable_checks))

    assert statuses == [
        (S.PENDING, 1),
        (S.PENDING, 1),
        (S.PENDING, 2),
        (S.PENDING, 1),
        (S.PENDING, 2),
        (S.SUCCEEDED, 3),
    ]
    assert live_mastodon_boosts(mastodon, "2", post.external_id) == 1


# --- Stages -----------------------------------------------------------------------------------


TWO_STAGES = [
    {"delay_seconds": HOUR, "unrepost_previous": False},
    {"delay_seconds": 3 * HOUR, "unrepost_previous": True},
]


def test_two_stages_with_unrepost_previous_leave_one_live_boost_on_mastodon(
    owner_client: APIClient,
    workspace: Any,
    mastodon: MastodonStandIn,
    source: Account,
    target: Account,
) -> None:
    save(owner_client, workspace, policy([target], [source], delay_seconds=0, stages=TWO_STAGES))
    post = published(source)
    t0 = post.published_at

    execution = run(t0, HOUR)
    assert execution.status == S.READY
    assert execution.next_check_at == t0 + timedelta(seconds=3 * HOUR)
    first, second = stages(execution)
    assert (first.status, second.status) == (
        RepostStage.Status.SUCCEEDED,
        RepostStage.Status.PENDING,
    )

    execution = run(t0, 2 * HOUR, 3 * HOUR)

    assert execution.status == S.SUCCEEDED
    first, second = stages(execution)
    assert first.unreposted_at == t0 + timedelta(seconds=3 * HOUR)
    assert second.status == RepostStage.Status.SUCCEEDED
    assert second.unreposted_at is None
    assert live_mastodon_boosts(mastodon, "2", post.external_id) == 1
    assert (mastodon.counters["reblogs"], mastodon.counters["unreblogs"]) == (2, 1)
    assert first.repost_id != second.repost_id


def test_two_stages_with_unrepost_previous_leave_one_live_repost_on_bluesky(
    owner_client: APIClient, workspace: Any, bluesky: BlueskyStandIn
) -> None:
    source = bluesky_account(workspace, bluesky)
    target = bluesky_account(workspace, bluesky, handle="friend.test")
    save(owner_client, workspace, policy([target], [source], delay_seconds=0, stages=TWO_STAGES))
    post = published(source)

    execution = run(post.published_at, HOUR, 3 * HOUR)

    assert execution.status == S.SUCCEEDED
    first, second = stages(execution)
    assert "/app.bsky.feed.repost/" in second.repost_id
    assert first.repost_id != second.repost_id  # one record per stage
    assert first.unreposted_at is not None
    assert (
        live_bluesky_reposts(bluesky, BLUESKY_ACCOUNTS["friend.test"]["did"], post.external_id) == 1
    )
    assert (bluesky.counters["reposts"], bluesky.counters["reposts_deleted"]) == (2, 1)


def test_each_stage_runs_at_its_own_delay_whatever_the_rule_delay(
    owner_client: APIClient,
    workspace: Any,
    mastodon: MastodonStandIn,
    source: Account,
    target: Account,
) -> None:
    """delay_seconds is the schedule of a rule without stages; a staged rule is eligible from
    its first stage (here 1 h, although delay_seconds says 1 day) and no stage is lost."""
    save(
        owner_client, workspace, policy([target], [source], delay_seconds=86_400, stages=TWO_STAGES)
    )
    post = published(source)
    t0 = post.published_at

    execution = run(t0, HOUR - 1)
    assert (execution.status, execution.evaluate_from) == (S.PENDING, t0 + timedelta(seconds=HOUR))
    execution = run(t0, HOUR)
    assert [s.status for s in stages(execution)] == [
        RepostStage.Status.SUCCEEDED,
        RepostStage.Status.PENDING,
    ]
    execution = run(t0, 3 * HOUR)

    assert execution.status == S.SUCCEEDED
    assert [s.status for s in stages(execution)] == [RepostStage.Status.SUCCEEDED] * 2
    assert (mastodon.counters["reblogs"], mastodon.counters["unreblogs"]) == (2, 1)
    assert live_mastodon_boosts(mastodon, "2", post.external_id) == 1


def test_a_lagging_bluesky_appview_does_not_pass_the_removed_repost_off_as_the_new_one(
    owner_client: APIClient, workspace: Any, bluesky: BlueskyStandIn
) -> None:
    """The AppView still reports the first stage's repost (``viewer.repost``) after its record
    was deleted: the second stage must make a new repost, not record the dead one."""
    source = bluesky_account(workspace, bluesky)
    target = bluesky_account(workspace, bluesky, handle="friend.test")
    bluesky.set_faults(stale_viewer=True)
    save(owner_client, workspace, policy([target], [source], delay_seconds=0, stages=TWO_STAGES))
    post = published(source)

    execution = run(post.published_at, HOUR, 3 * HOUR)

    assert execution.status == S.SUCCEEDED
    first, second = stages(execution)
    assert first.repost_id != second.repost_id
    assert (
        live_bluesky_reposts(bluesky, BLUESKY_ACCOUNTS["friend.test"]["did"], post.external_id) == 1
    )
    context = account_context(target)
    found = get_adapter("bluesky").find_repost(account=context, external_id=post.external_id)
    assert found is not None
    assert found.external_id == second.repost_id


def test_a_stage_without_unrepost_keeps_the_one_live_repost(
    owner_client: APIClient, workspace: Any, bluesky: BlueskyStandIn
) -> None:
    source = bluesky_account(workspace, bluesky)
    target = bluesky_account(workspace, bluesky, handle="friend.test")
    stages_ = [
        {"delay_seconds": HOUR, "unrepost_previous": False},
        {"delay_seconds": 2 * HOUR, "unrepost_previous": False},
    ]
    save(owner_client, workspace, policy([target], [source], delay_seconds=0, stages=stages_))
    post = published(source)

    execution = run(post.published_at, HOUR, 2 * HOUR)

    assert execution.status == S.SUCCEEDED
    first, second = stages(execution)
    assert first.repost_id == second.repost_id  # the account's live repost, not a second one
    assert (
        live_bluesky_reposts(bluesky, BLUESKY_ACCOUNTS["friend.test"]["did"], post.external_id) == 1
    )


def test_stages_missed_while_waiting_for_thresholds_collapse_into_one(
    owner_client: APIClient,
    workspace: Any,
    mastodon: MastodonStandIn,
    source: Account,
    target: Account,
) -> None:
    save(
        owner_client,
        workspace,
        policy([target], [source], delay_seconds=0, min_likes=3, stages=TWO_STAGES),
    )
    post = published(source)
    t0 = post.published_at
    assert run(t0, HOUR).status == S.PENDING
    mastodon.set_counts(post.external_id, favourites=3)

    execution = run(t0, 4 * HOUR)

    assert execution.status == S.SUCCEEDED
    first, second = stages(execution)
    assert (first.status, second.status) == (
        RepostStage.Status.SKIPPED,
        RepostStage.Status.SUCCEEDED,
    )
    assert (mastodon.counters["reblogs"], mastodon.counters["unreblogs"]) == (1, 0)


# --- Skips --------------------------------------------------------------------------------------


def test_window_expiry_skips_the_execution(
    owner_client: APIClient,
    workspace: Any,
    mastodon: MastodonStandIn,
    source: Account,
    target: Account,
) -> None:
    save(
        owner_client,
        workspace,
        policy([target], [source], min_likes=10, evaluation_window_seconds=2 * HOUR),
    )
    post = published(source)
    t0 = post.published_at
    mastodon.set_counts(post.external_id, favourites=9)
    execution = run(t0, HOUR, HOUR + INTERVAL, HOUR + 2 * INTERVAL, HOUR + 3 * INTERVAL)
    assert (execution.status, execution.checks) == (S.PENDING, 4)
    assert execution.next_check_at == t0 + timedelta(seconds=2 * HOUR)  # never past the window

    execution = run(t0, 2 * HOUR)

    assert (execution.status, execution.skip_reason) == (S.SKIPPED, "window_closed")
    assert execution.unavailable_reason == ""  # the target is fine; the post did not perform
    assert [s.status for s in stages(execution)] == [RepostStage.Status.SKIPPED]
    assert mastodon.counters["reblogs"] == 0


def test_revoked_grant_skips_pending_executions_with_the_reason(
    owner_client: APIClient,
    user: Any,
    organization: Any,
    workspace: Any,
    mastodon: MastodonStandIn,
    source: Account,
) -> None:
    partner = workspace_create(
        actor=Actor(user=user), organization_id=organization.pk, name="Partner"
    )
    partner_account = mastodon_account(partner, mastodon, friend=True)
    assert_refused = put_policies(owner_client, workspace, [policy([partner_account], [source])])
    assert assert_refused.status_code == 422  # no grant yet
    grant = owner_client.post(
        f"{API}/repost-account-grants",
        {
            "source_workspace_id": str(workspace.pk),
            "target_account_id": str(partner_account.pk),
        },
        format="json",
    ).json()
    save(owner_client, workspace, policy([partner_account], [source], min_likes=1))
    post = published(source)
    t0 = post.published_at
    assert run(t0, HOUR).status == S.PENDING

    assert owner_client.delete(f"{API}/repost-account-grants/{grant['id']}").status_code == 204

    execution = only_execution()
    assert (execution.status, execution.skip_reason) == (S.SKIPPED, "target_unavailable")
    assert execution.unavailable_reason == "The repost grant for this account was revoked."
    mastodon.set_counts(post.external_id, favourites=5)
    assert run(t0, HOUR + INTERVAL).status == S.SKIPPED
    assert mastodon.counters["reblogs"] == 0
    # Newer posts get no execution through the revoked grant.
    published(source)
    assert tick(t0 + timedelta(seconds=HOUR + 2 * INTERVAL))["created"] == 0
    body = owner_client.get(settings_url(workspace)).json()
    assert SchemaChecker().validate(body) == "RepostSettings"
    shown = body["executions"]
    assert shown[0]["next_check_at"] is None
    assert [(e["status"], e["unavailable_reason"]) for e in shown] == [
        ("skipped", "The repost grant for this account was revoked.")
    ]


def test_readiness_is_asked_before_the_repost(
    owner_client: APIClient,
    workspace: Any,
    mastodon: MastodonStandIn,
    source: Account,
    target: Account,
    settings: Any,
) -> None:
    save(owner_client, workspace, policy([target], [source], delay_seconds=0))
    post = published(source)
    settings.HERALD_DISABLED_PROVIDERS = ["mastodon"]

    execution = run(post.published_at, 60)

    assert (execution.status, execution.skip_reason) == (S.SKIPPED, "target_unavailable")
    assert "disabled" in execution.unavailable_reason
    assert Requests(mastodon).count("POST", "/reblog") == 0


def test_readiness_is_asked_before_reading_metrics(
    owner_client: APIClient,
    workspace: Any,
    mastodon: MastodonStandIn,
    source: Account,
    target: Account,
) -> None:
    save(owner_client, workspace, policy([target], [source], min_likes=1))
    post = published(source)
    calls: list[tuple[str, str]] = []
    real = engine.readiness.decide_account

    def spy(*, account: Any, operation: str, profile: str = "") -> Any:
        calls.append((account.username, operation))
        return real(account=account, operation=operation, profile=profile)

    mastodon.set_counts(post.external_id, favourites=1)
    with mock.patch.object(engine.readiness, "decide_account", side_effect=spy):
        execution = run(post.published_at, HOUR)

    assert execution.status == S.SUCCEEDED
    assert calls == [(source.username, "publish_immediate"), (target.username, "publish_immediate")]


def test_readiness_is_asked_before_the_unrepost(
    owner_client: APIClient,
    workspace: Any,
    mastodon: MastodonStandIn,
    source: Account,
    target: Account,
    settings: Any,
) -> None:
    save(owner_client, workspace, policy([target], [source], delay_seconds=0, stages=TWO_STAGES))
    post = published(source)
    t0 = post.published_at
    assert run(t0, HOUR).status == S.READY
    settings.HERALD_DISABLED_PROVIDERS = ["mastodon"]

    execution = run(t0, 3 * HOUR)

    assert (execution.status, execution.skip_reason) == (S.SKIPPED, "target_unavailable")
    assert Requests(mastodon).count("POST", "/unreblog") == 0
    assert [s.status for s in stages(execution)] == [
        RepostStage.Status.SUCCEEDED,
        RepostStage.Status.SKIPPED,
    ]
    assert live_mastodon_boosts(mastodon, "2", post.external_id) == 1  # the first boost stays


def test_readiness_is_asked_before_looking_up_an_in_flight_repost(
    owner_client: APIClient,
    workspace: Any,
    mastodon: MastodonStandIn,
    source: Account,
    target: Account,
    settings: Any,
    provider_settings: Any,
) -> None:
    provider_settings.HERALD_REPOST_MAX_FAILURES = 2
    save(owner_client, workspace, policy([target], [source], delay_seconds=0))
    post = published(source)
    t0 = post.published_at
    with _die_after_repost("mastodon", made=True), pytest.raises(KeyboardInterrupt):
        tick(t0 + timedelta(seconds=60))
    settings.HERALD_DISABLED_PROVIDERS = ["mastodon"]
    lookups = Requests(mastodon)

    execution = run(t0, (only_execution().claimed_until - t0).total_seconds() + 1)
    assert (execution.status, execution.skip_reason) == (S.SKIPPED, "target_unavailable")
    execution = run(t0, (execution.next_check_at - t0).total_seconds())  # settling: blocked
    assert stages(execution)[0].status == RepostStage.Status.IN_FLIGHT
    execution = run(t0, (execution.next_check_at - t0).total_seconds())  # blocked again: give up

    (stage,) = stages(execution)
    assert stage.status == RepostStage.Status.FAILED
    assert "unknown" in stage.error_message
    assert "disabled" in stage.error_message
    assert lookups.count("GET", f"/statuses/{post.external_id}") == 0  # never asked while blocked
    assert tick(t0 + timedelta(days=1))["dispatched"] == 0


def test_a_target_that_must_reconnect_is_skipped(
    owner_client: APIClient,
    workspace: Any,
    mastodon: MastodonStandIn,
    source: Account,
    target: Account,
) -> None:
    save(owner_client, workspace, policy([target], [source], delay_seconds=0))
    post = published(source)
    mastodon.set_faults(reject_tokens=True)

    execution = run(post.published_at, 60)

    assert (execution.status, execution.skip_reason) == (S.SKIPPED, "target_unavailable")
    assert Account.objects.get(pk=target.pk).status == Account.Status.RECONNECT_REQUIRED


def test_removing_the_policy_skips_its_pending_executions(
    owner_client: APIClient, workspace: Any, source: Account, target: Account
) -> None:
    save(owner_client, workspace, policy([target], [source], min_likes=1))
    post = published(source)
    run(post.published_at, 60)
    save(owner_client, workspace)
    execution = only_execution()
    assert (execution.status, execution.skip_reason) == (S.SKIPPED, "policy_removed")


def test_removing_a_source_or_target_skips_its_pending_executions(
    owner_client: APIClient,
    workspace: Any,
    mastodon: MastodonStandIn,
    source: Account,
    target: Account,
) -> None:
    third = Account.objects.create(
        workspace=workspace,
        provider="mastodon",
        external_id="3",
        username="third@127.0.0.1",
        instance_url=mastodon.url,
        app=target.app,
        credentials_encrypted=target.credentials_encrypted,
    )
    save(owner_client, workspace, policy([target, third], [source], min_likes=1))
    post = published(source)
    run_all = tick(post.published_at + timedelta(seconds=60))
    assert run_all["created"] == 2
    (saved,) = owner_client.get(settings_url(workspace)).json()["policies"]

    saved["target_account_ids"] = [str(target.pk)]  # third removed as a target
    save(owner_client, workspace, saved)
    by_target = {e.target_account_id: e for e in RepostExecution.objects.all()}
    assert (by_target[third.pk].status, by_target[third.pk].skip_reason) == (
        S.SKIPPED,
        "target_removed",
    )
    assert by_target[target.pk].status == S.PENDING

    saved["source_account_ids"] = [str(third.pk)]  # the post's account is no longer a source
    save(owner_client, workspace, saved)
    execution = RepostExecution.objects.get(target_account=target)
    assert (execution.status, execution.skip_reason) == (S.SKIPPED, "source_removed")
    mastodon.set_counts(post.external_id, favourites=5)
    tick(post.published_at + timedelta(seconds=HOUR))
    assert mastodon.counters["reblogs"] == 0


def test_an_empty_source_list_means_every_compatible_account_of_the_workspace(
    owner_client: APIClient,
    workspace: Any,
    mastodon: MastodonStandIn,
    bluesky: BlueskyStandIn,
    source: Account,
    target: Account,
) -> None:
    third = Account.objects.create(
        workspace=workspace,
        provider="mastodon",
        external_id="3",
        username="third@127.0.0.1",
        instance_url=mastodon.url,
        app=target.app,
        credentials_encrypted=target.credentials_encrypted,
    )
    sky = bluesky_account(workspace, bluesky)
    save(owner_client, workspace, policy([target], min_likes=1))
    from_source, from_third = published(source), published(third)
    published(sky)  # another platform than the target's: no execution
    published(target)  # the target's own post: never reposted by itself

    assert tick(from_source.published_at + timedelta(seconds=60))["created"] == 2

    assert set(RepostExecution.objects.values_list("destination_id", "target_account_id")) == {
        (from_source.pk, target.pk),
        (from_third.pk, target.pk),
    }


def test_one_execution_per_destination_and_target(
    owner_client: APIClient,
    workspace: Any,
    mastodon: MastodonStandIn,
    source: Account,
    target: Account,
) -> None:
    third = make_account(workspace, "bluesky", "did:plc:other")  # another platform: no execution
    save(
        owner_client,
        workspace,
        policy([target, third], min_likes=1),
        policy([target], [source], name="Twin", min_likes=1),
    )
    post = published(source)
    tick(post.published_at)
    tick(post.published_at + timedelta(seconds=1))
    assert list(RepostExecution.objects.values_list("destination_id", "target_account_id")) == [
        (post.pk, target.pk)
    ]


# --- A worker that died between the repost call and its record ---------------------------------


@pytest.mark.parametrize("provider", ["mastodon", "bluesky"])
def test_an_in_flight_repost_is_reconciled_not_repeated(
    owner_client: APIClient,
    workspace: Any,
    mastodon: MastodonStandIn,
    bluesky: BlueskyStandIn,
    provider: str,
) -> None:
    """The worker recorded the intent, the provider made the repost, the worker died before
    recording it: after its lease, the next worker asks the provider and records the repost."""
    if provider == "mastodon":
        source, target = (
            mastodon_account(workspace, mastodon),
            mastodon_account(workspace, mastodon, friend=True),
        )
    else:
        source, target = (
            bluesky_account(workspace, bluesky),
            bluesky_account(workspace, bluesky, handle="friend.test"),
        )
    save(owner_client, workspace, policy([target], [source], delay_seconds=0))
    post = published(source)
    t0 = post.published_at
    real_repost = type(get_adapter(provider)).repost

    def repost_then_die(self: Any, **kwargs: Any) -> Any:
        real_repost(self, **kwargs)
        raise KeyboardInterrupt  # the process dies: nothing after the call runs

    writes = Requests(mastodon if provider == "mastodon" else bluesky)
    path = "/reblog" if provider == "mastodon" else "com.atproto.repo.createRecord"
    before = writes.count("POST", path)  # the source post itself, on Bluesky
    with (
        mock.patch.object(type(get_adapter(provider)), "repost", repost_then_die),
        pytest.raises(KeyboardInterrupt),
    ):
        tick(t0 + timedelta(seconds=60))
    execution = only_execution()
    (stage,) = stages(execution)
    assert (execution.status, stage.status) == (S.READY, RepostStage.Status.IN_FLIGHT)
    assert execution.claimed_until is not None
    assert writes.count("POST", path) == before + 1

    assert tick(t0 + timedelta(seconds=120))["dispatched"] == 0  # the lease still holds
    lease_over = execution.claimed_until + timedelta(seconds=1) - t0
    execution = run(t0, lease_over.total_seconds())

    assert execution.status == S.SUCCEEDED
    (stage,) = stages(execution)
    assert (stage.status, stage.reconciled) == (RepostStage.Status.SUCCEEDED, True)
    assert stage.repost_id
    assert writes.count("POST", path) == before + 1, "reposted again instead of asking the provider"
    if provider == "mastodon":
        assert live_mastodon_boosts(mastodon, "2", post.external_id) == 1
    else:
        assert (
            live_bluesky_reposts(bluesky, BLUESKY_ACCOUNTS["friend.test"]["did"], post.external_id)
            == 1
        )


def test_an_in_flight_repost_the_provider_never_made_is_made_once(
    owner_client: APIClient,
    workspace: Any,
    mastodon: MastodonStandIn,
    source: Account,
    target: Account,
) -> None:
    save(owner_client, workspace, policy([target], [source], delay_seconds=0))
    post = published(source)
    t0 = post.published_at

    def die(self: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt  # died before the request left

    with (
        mock.patch.object(type(get_adapter("mastodon")), "repost", die),
        pytest.raises(KeyboardInterrupt),
    ):
        tick(t0 + timedelta(seconds=60))
    execution = only_execution()
    execution = run(t0, (execution.claimed_until - t0).total_seconds() + 1)

    assert execution.status == S.SUCCEEDED
    (stage,) = stages(execution)
    assert stage.reconciled is False
    assert live_mastodon_boosts(mastodon, "2", post.external_id) == 1
    assert Requests(mastodon).count("POST", "/reblog") == 1


def test_executions_are_shown_with_their_stage_history(
    owner_client: APIClient,
    workspace: Any,
    mastodon: MastodonStandIn,
    source: Account,
    target: Account,
) -> None:
    save(
        owner_client,
        workspace,
        policy([target], [source], delay_seconds=0, min_likes=1, stages=TWO_STAGES),
    )
    post = published(source)
    mastodon.set_counts(post.external_id, favourites=1)
    run(post.published_at, HOUR)

    body = owner_client.get(settings_url(workspace)).json()
    assert SchemaChecker().validate(body) == "RepostSettings"
    (shown,) = body["executions"]

    assert shown["status"] == "ready"
    assert (shown["destination_id"], shown["publication_id"]) == (
        str(post.pk),
        str(post.publication_id),
    )
    assert (shown["source_account_id"], shown["target_account_id"]) == (
        str(source.pk),
        str(target.pk),
    )
    assert (shown["platform"], shown["policy_name"], shown["checks"]) == (
        "mastodon",
        "Best posts",
        1,
    )
    assert shown["last_metrics"] == {"likes": 1, "comments": 0, "reposts": 0, "views": 0}
    assert [(s["index"], s["status"], s["unrepost_previous"]) for s in shown["stages"]] == [
        (0, "succeeded", False),
        (1, "pending", True),
    ]
    assert shown["stages"][0]["repost_url"] == post.external_url
    assert shown["next_check_at"] is not None


def test_the_mastodon_adapter_finds_a_boost_by_its_reblogged_flag(
    workspace: Any, mastodon: MastodonStandIn, source: Account, target: Account
) -> None:
    adapter = get_adapter("mastodon")
    post = published(source)
    context = account_context(target)
    assert adapter.find_repost(account=context, external_id=post.external_id) is None
    boost = adapter.repost(account=context, external_id="", source_url=post.external_url)
    found = adapter.find_repost(account=context, external_id=post.external_id)
    assert found is not None
    assert found.external_id == boost.external_id
    adapter.unrepost(account=context, repost_id="", source_url=post.external_url)
    assert (
        adapter.find_repost(account=context, external_id="", source_url=post.external_url) is None
    )
    adapter.unrepost(account=context, repost_id=boost.external_id)  # already gone: fine


def test_the_bluesky_adapter_finds_a_repost_by_its_record(
    workspace: Any, bluesky: BlueskyStandIn
) -> None:
    adapter = get_adapter("bluesky")
    post = published(bluesky_account(workspace, bluesky))
    context = account_context(bluesky_account(workspace, bluesky, handle="friend.test"))
    assert (
        adapter.find_repost(account=context, external_id=post.external_id, idempotency_key="k")
        is None
    )
    made = adapter.repost(account=context, external_id=post.external_id, idempotency_key="k")
    by_key = adapter.find_repost(account=context, external_id=post.external_id, idempotency_key="k")
    by_view = adapter.find_repost(account=context, external_id="", source_url=post.external_url)
    assert by_key is not None
    assert by_view is not None
    assert by_key.external_id == by_view.external_id == made.external_id
    again = adapter.repost(account=context, external_id=post.external_id, idempotency_key="other")
    assert again.external_id == made.external_id  # one live repost per account and post
    adapter.unrepost(account=context, repost_id="", external_id=post.external_id)
    assert adapter.find_repost(account=context, external_id=post.external_id) is None


def test_the_engine_clock_defaults_to_now(
    owner_client: APIClient, workspace: Any, source: Account, target: Account
) -> None:
    save(owner_client, workspace, policy([target], [source], delay_seconds=0))
    published(source)
    with mock.patch.object(engine.tasks.execution_advance, "delay") as delay:
        counts = engine.engine_tick()
    assert counts == {"created": 1, "dispatched": 1}
    delay.assert_called_once_with(str(only_execution().pk))


def test_a_tick_with_redis_down_leaves_its_executions_to_a_later_tick(
    owner_client: APIClient,
    workspace: Any,
    source: Account,
    target: Account,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A Redis outage can reach the enqueue as redis-py's own ConnectionError rather than
    kombu's wrapper. The tick must not fail on it: both due executions keep the lease the tick
    gave them (a later tick dispatches them again), the outage is one warning without a
    traceback, and after the first failure the tick stops trying the broker for the rest."""
    save(owner_client, workspace, policy([target], [source], delay_seconds=0))
    published(source)
    published(source)
    refused = RedisConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")
    reset_broker_backoff()
    reset_outage_log()
    try:
        with (
            mock.patch.object(
                engine.tasks.execution_advance, "delay", side_effect=refused
            ) as delay,
            caplog.at_level(logging.WARNING),
        ):
            counts = engine.engine_tick()
    finally:
        reset_broker_backoff()
        reset_outage_log()
    assert counts == {"created": 2, "dispatched": 2}
    assert delay.call_count == 1
    leased = RepostExecution.objects.filter(next_check_at__gt=timezone.now())
    assert leased.count() == 2
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]
    assert "broker unavailable (enqueue)" in warnings[0].getMessage()
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"


def test_one_post_is_read_once_per_interval_for_all_its_targets(
    owner_client: APIClient,
    workspace: Any,
    mastodon: MastodonStandIn,
    bluesky: BlueskyStandIn,
    source: Account,
    target: Account,
) -> None:
    third = Account.objects.create(
        workspace=workspace,
        provider="mastodon",
        external_id="3",
        username="third@127.0.0.1",
        instance_url=mastodon.url,
        app=target.app,
        credentials_encrypted=target.credentials_encrypted,
    )
    save(owner_client, workspace, policy([target, third], [source], min_likes=1))
    post = published(source)
    reads = Requests(mastodon)

    tick(post.published_at + timedelta(seconds=HOUR))

    assert RepostExecution.objects.count() == 2
    assert set(RepostExecution.objects.values_list("checks", flat=True)) == {1}
    assert reads.count("GET", f"/statuses/{post.external_id}") == 1


def test_a_timed_out_boost_is_retried_by_asking_first(
    owner_client: APIClient,
    workspace: Any,
    mastodon: MastodonStandIn,
    source: Account,
    target: Account,
    provider_settings: Any,
) -> None:
    provider_settings.HERALD_PROVIDER_TIMEOUT_SECONDS = 1.0
    save(owner_client, workspace, policy([target], [source], delay_seconds=0))
    post = published(source)
    t0 = post.published_at
    mastodon.set_faults(delay_ms=1500)  # the boost is made, the answer comes too late

    execution = run(t0, 60)

    assert (execution.status, execution.failures) == (S.READY, 1)
    assert execution.error_message
    assert stages(execution)[0].status == RepostStage.Status.IN_FLIGHT
    assert execution.next_check_at > t0 + timedelta(seconds=60)
    mastodon.set_faults(delay_ms=0)
    wait_until(lambda: mastodon.counters["reblogs"] == 1, timeout=10, what="the late boost")
    execution = run(t0, (execution.next_check_at - t0).total_seconds())
    assert execution.status == S.SUCCEEDED
    assert stages(execution)[0].reconciled is True
    assert Requests(mastodon).count("POST", "/reblog") == 1
    assert live_mastodon_boosts(mastodon, "2", post.external_id) == 1


def test_a_refused_boost_fails_the_execution(
    owner_client: APIClient,
    workspace: Any,
    mastodon: MastodonStandIn,
    source: Account,
    target: Account,
) -> None:
    save(owner_client, workspace, policy([target], [source], delay_seconds=0))
    post = published(source)
    with mastodon.lock:
        del mastodon.statuses[post.external_id]  # deleted at the provider meanwhile

    execution = run(post.published_at, 60)

    assert execution.status == S.FAILED
    assert execution.error_message
    assert stages(execution)[0].status == RepostStage.Status.FAILED


def test_a_deleted_post_skips_metric_reading_executions(
    owner_client: APIClient,
    workspace: Any,
    mastodon: MastodonStandIn,
    source: Account,
    target: Account,
) -> None:
    save(owner_client, workspace, policy([target], [source], min_likes=1))
    post = published(source)
    with mastodon.lock:
        del mastodon.statuses[post.external_id]

    execution = run(post.published_at, HOUR)

    assert (execution.status, execution.skip_reason) == (S.SKIPPED, "source_unavailable")
    assert "no longer exists" in execution.unavailable_reason


def test_reading_the_settings_costs_the_same_queries_for_more_executions(
    owner_client: APIClient, workspace: Any, source: Account, target: Account
) -> None:
    save(owner_client, workspace, policy([target], [source], delay_seconds=0, stages=TWO_STAGES))

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert owner_client.get(settings_url(workspace)).status_code == 200
        return len(captured)

    post = published(source)
    tick(post.published_at + timedelta(seconds=HOUR))
    one = queries()
    for _ in range(3):
        post = published(source)
        tick(post.published_at + timedelta(seconds=HOUR))
    assert RepostExecution.objects.count() == 4
    assert queries() == one


@pytest.mark.parametrize(
    ("mode", "gates", "metrics", "met"),
    [
        ("all", {}, {}, True),  # no gate: nothing to wait for
        ("any", {}, {}, True),
        ("all", {"min_likes": 3, "min_comments": 0}, {"likes": 3}, True),  # 0 disables a gate
        ("all", {"min_likes": 3, "min_reposts": 1}, {"likes": 3}, False),
        ("any", {"min_likes": 3, "min_reposts": 1}, {"reposts": 1}, True),
        ("any", {"min_likes": 3, "min_views": 1}, {"likes": 2}, False),
        ("all", {"min_views": 1}, {"likes": 9}, False),  # a platform without views never meets it
    ],
)
def test_threshold_modes(
    mode: str, gates: dict[str, int], metrics: dict[str, int], met: bool
) -> None:
    rule = {
        "threshold_mode": mode,
        "min_likes": 0,
        "min_comments": 0,
        "min_reposts": 0,
        "min_views": 0,
        **gates,
    }
    assert rules.thresholds_met(rule, metrics) is met


# --- An in-flight repost of an execution that ended meanwhile is settled, never abandoned -------


def _die_after_repost(provider: str, *, made: bool) -> Any:
    real_repost = type(get_adapter(provider)).repost

    def repost_then_die(self: Any, **kwargs: Any) -> Any:
        if made:
            real_repost(self, **kwargs)
        raise KeyboardInterrupt  # the worker dies: nothing after the call runs

    return mock.patch.object(type(get_adapter(provider)), "repost", repost_then_die)


def test_a_repost_in_flight_when_the_grant_is_revoked_is_settled_with_the_provider(
    owner_client: APIClient,
    user: Any,
    organization: Any,
    workspace: Any,
    mastodon: MastodonStandIn,
    source: Account,
) -> None:
    partner = workspace_create(
        actor=Actor(user=user), organization_id=organization.pk, name="Partner"
    )
    partner_account = mastodon_account(partner, mastodon, friend=True)
    grant = owner_client.post(
        f"{API}/repost-account-grants",
        {
            "source_workspace_id": str(workspace.pk),
            "target_account_id": str(partner_account.pk),
        },
        format="json",
    ).json()
    save(owner_client, workspace, policy([partner_account], [source], delay_seconds=0))
    post = published(source)
    t0 = post.published_at
    with _die_after_repost("mastodon", made=True), pytest.raises(KeyboardInterrupt):
        tick(t0 + timedelta(seconds=60))
    assert owner_client.delete(f"{API}/repost-account-grants/{grant['id']}").status_code == 204
    execution = only_execution()
    (stage,) = stages(execution)
    assert (execution.status, stage.status) == (S.SKIPPED, RepostStage.Status.IN_FLIGHT)
    shown = owner_client.get(settings_url(workspace)).json()["executions"][0]
    assert shown["next_check_at"] is not None  # still to be settled

    assert tick(t0 + timedelta(seconds=120))["dispatched"] == 0  # the dead worker's lease holds
    execution = run(t0, (execution.claimed_until - t0).total_seconds() + 1)

    (stage,) = stages(execution)
    assert (execution.status, execution.skip_reason) == (S.SKIPPED, "target_unavailable")
    assert (stage.status, stage.reconciled) == (RepostStage.Status.SUCCEEDED, True)
    assert stage.repost_id  # the live boost is on record
    assert Requests(mastodon).count("POST", "/reblog") == 1
    assert live_mastodon_boosts(mastodon, "2", post.external_id) == 1
    assert tick(t0 + timedelta(days=1))["dispatched"] == 0  # settled: never again
    shown = owner_client.get(settings_url(workspace)).json()["executions"][0]
    assert shown["next_check_at"] is None


def test_a_repost_in_flight_when_the_policy_is_removed_is_settled_as_not_made(
    owner_client: APIClient,
    workspace: Any,
    mastodon: MastodonStandIn,
    source: Account,
    target: Account,
) -> None:
    save(owner_client, workspace, policy([target], [source], delay_seconds=0))
    post = published(source)
    t0 = post.published_at
    with _die_after_repost("mastodon", made=False), pytest.raises(KeyboardInterrupt):
        tick(t0 + timedelta(seconds=60))
    save(owner_client, workspace)  # no policy any more
    execution = only_execution()
    assert execution.status == S.SKIPPED

    execution = run(t0, (execution.claimed_until - t0).total_seconds() + 1)

    (stage,) = stages(execution)
    assert (execution.status, execution.skip_reason) == (S.SKIPPED, "policy_removed")
    assert (stage.status, stage.reconciled) == (RepostStage.Status.SKIPPED, True)
    assert "Not made" in stage.error_message
    assert Requests(mastodon).count("POST", "/reblog") == 0  # asked, never reposted
    assert Requests(mastodon).count("GET", f"/statuses/{post.external_id}") == 1


def test_an_in_flight_repost_that_cannot_be_asked_about_is_marked_unknown(
    owner_client: APIClient,
    workspace: Any,
    mastodon: MastodonStandIn,
    source: Account,
    target: Account,
) -> None:
    save(owner_client, workspace, policy([target], [source], delay_seconds=0))
    post = published(source)
    t0 = post.published_at
    with _die_after_repost("mastodon", made=True), pytest.raises(KeyboardInterrupt):
        tick(t0 + timedelta(seconds=60))
    Account.objects.filter(pk=target.pk).update(status=Account.Status.DISCONNECTED)
    execution = only_execution()

    execution = run(t0, (execution.claimed_until - t0).total_seconds() + 1)  # skipped
    assert (execution.status, execution.skip_reason) == (S.SKIPPED, "target_unavailable")
    execution = run(t0, (execution.next_check_at - t0).total_seconds())  # settled

    (stage,) = stages(execution)
    assert stage.status == RepostStage.Status.FAILED
    assert "unknown" in stage.error_message
    assert Requests(mastodon).count("POST", "/reblog") == 1
    assert tick(t0 + timedelta(days=1))["dispatched"] == 0


def test_giving_up_on_an_in_flight_repost_still_settles_it(
    owner_client: APIClient,
    workspace: Any,
    mastodon: MastodonStandIn,
    source: Account,
    target: Account,
    provider_settings: Any,
) -> None:
    provider_settings.HERALD_REPOST_MAX_FAILURES = 2
    provider_settings.HERALD_PROVIDER_TIMEOUT_SECONDS = 1.0
    save(owner_client, workspace, policy([target], [source], delay_seconds=0))
    post = published(source)
    t0 = post.published_at
    with _die_after_repost("mastodon", made=True), pytest.raises(KeyboardInterrupt):
        tick(t0 + timedelta(seconds=60))
    execution = only_execution()
    mastodon.set_faults(delay_ms=1500)  # the reconciliation read keeps timing out
    execution = run(t0, (execution.claimed_until - t0).total_seconds() + 1)
    assert (execution.status, execution.failures) == (S.READY, 1)
    execution = run(t0, (execution.next_check_at - t0).total_seconds())
    assert execution.status == S.FAILED
    assert stages(execution)[0].status == RepostStage.Status.IN_FLIGHT  # not given up on

    mastodon.set_faults(delay_ms=0)
    time.sleep(0.6)  # let the stand-in finish answering the timed-out reads
    execution = run(t0, (execution.next_check_at - t0).total_seconds())

    (stage,) = stages(execution)
    assert execution.status == S.FAILED
    assert (stage.status, stage.reconciled) == (RepostStage.Status.SUCCEEDED, True)
    assert Requests(mastodon).count("POST", "/reblog") == 1
    assert live_mastodon_boosts(mastodon, "2", post.external_id) == 1
