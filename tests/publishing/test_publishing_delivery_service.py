"""Delivery in-process against the stand-in providers, calling the
delivery services directly: the outbox state machine, retries with backoff and Retry-After,
permanent and auth failures, ambiguous outcomes reconciled (never re-sent blindly), the
dispatcher's handling of due, stale, dead-worker and overdue work, partial results."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
import time_machine
from django.utils import timezone
from rest_framework.test import APIClient

from config.errors import DomainError
from providers import get_adapter
from publishing.models import Account, Destination, Publication, PublicationEvent
from publishing.services import delivery, publications
from publishing.services.accounts import account_context
from tests.providers.bluesky.standin import BlueskyStandIn
from tests.providers.discord_webhook.standin import DiscordWebhookStandIn
from tests.providers.mastodon.standin import MastodonStandIn
from tests.providers.telegram.standin import TelegramStandIn
from tests.publishing_support import connect, send_in_process
from workspaces.access import Actor
from workspaces.models import User

pytestmark = pytest.mark.django_db


@pytest.fixture
def actor(user: User) -> Actor:
    return Actor(user=user)


@pytest.fixture
def publish(
    actor: Actor, workspace: Any, delivery_queue: Any, django_capture_on_commit_callbacks: Any
) -> Callable[..., Publication]:
    """Create a publication for the given account IDs and publish it now (nothing is sent)."""
    counter = {"n": 0}

    def make(*account_ids: str, text: str | None = None) -> Publication:
        counter["n"] += 1
        publication = publications.publication_create(
            actor=actor,
            workspace_id=workspace.pk,
            text=text or f"Delivery test {counter['n']}",
            destinations=[{"account_id": a} for a in account_ids],
        )
        with django_capture_on_commit_callbacks(execute=True):
            publications.publication_publish_now(
                actor=actor, publication_id=publication.pk, expected_revision=1
            )
        return publication

    return make


@pytest.fixture
def settle(delivery_queue: Any, django_capture_on_commit_callbacks: Any) -> Callable[[], None]:
    """Deliver whatever the services queued (sends, then reconciles), running on-commit hooks."""

    def run() -> None:
        for _ in range(10):  # a round may queue more work (e.g. reconcile -> send again)
            if not delivery_queue.sends and not delivery_queue.reconciles:
                return
            with django_capture_on_commit_callbacks(execute=True):
                delivery_queue.run(rounds=1)

    return run


def only_destination(publication: Publication) -> Destination:
    return Destination.objects.get(publication=publication)


send = send_in_process


def kinds(publication: Publication) -> list[str]:
    return list(
        PublicationEvent.objects.filter(publication=publication)
        .order_by("id")
        .values_list("kind", flat=True)
    )


# --- Success --------------------------------------------------------------------------------------


def test_success_records_the_provider_id(
    owner_client: APIClient,
    workspace: Any,
    mastodon: MastodonStandIn,
    publish: Callable[..., Publication],
    delivery_queue: Any,
    settle: Callable[[], None],
) -> None:
    account = connect(owner_client, workspace, "mastodon", mastodon)
    publication = publish(account["id"], text="Hello https://example.com/page")
    destination = only_destination(publication)
    assert delivery_queue.sends == [str(destination.pk)]
    settle()
    destination.refresh_from_db()
    assert destination.status == "published"
    assert destination.attempts == 1
    post = mastodon.posts[0]
    assert destination.external_id == post["id"]
    assert destination.external_url.endswith(f"/@herald/{post['id']}")
    assert destination.published_at is not None
    assert destination.write_started_at is not None
    assert destination.first_attempt_at is not None
    assert post["idempotency_key"] == destination.idempotency_key  # the per-destination key
    assert post["text"] == "Hello https://example.com/page"
    publication.refresh_from_db()
    assert publication.status == "published"


# --- Transient failures ---------------------------------------------------------------------------


def test_rate_limit_honours_retry_after(
    owner_client: APIClient,
    workspace: Any,
    mastodon: MastodonStandIn,
    publish: Callable[..., Publication],
    delivery_queue: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    account = connect(owner_client, workspace, "mastodon", mastodon)
    publication = publish(account["id"])
    destination = only_destination(publication)
    mastodon.set_faults(rate_limit={"count": 1, "retry_after": 120})
    start = timezone.now()
    with time_machine.travel(start, tick=False) as clock:
        destination = send(destination, django_capture_on_commit_callbacks)
        assert destination.status == "retry_wait"
        assert destination.error_kind == "rate_limited"
        assert destination.action == "retry"
        assert destination.next_attempt_at >= start + timedelta(seconds=120)
        assert destination.next_attempt_at <= start + timedelta(seconds=121)
        assert delivery_queue.countdowns[str(destination.pk)] >= 120
        assert mastodon.posts_accepted == 0
        # A claim before that time does nothing (a duplicate or early message).
        clock.move_to(start + timedelta(seconds=119))
        destination = send(destination, django_capture_on_commit_callbacks)
        assert (destination.status, destination.attempts, mastodon.posts_accepted) == (
            "retry_wait",
            1,
            0,
        )
        clock.move_to(destination.next_attempt_at + timedelta(seconds=1))
        destination = send(destination, django_capture_on_commit_callbacks)
    assert destination.status == "published"
    assert destination.attempts == 2
    assert mastodon.posts_accepted == 1
    assert "destination.retry_scheduled" in kinds(publication)


def test_retry_after_is_capped_at_30_minutes(
    owner_client: APIClient,
    workspace: Any,
    discord: DiscordWebhookStandIn,
    publish: Callable[..., Publication],
    django_capture_on_commit_callbacks: Any,
) -> None:
    account = connect(owner_client, workspace, "discord_webhook", discord)
    destination = only_destination(publish(account["id"]))
    discord.set_faults(rate_limit={"count": 1, "retry_after": 7200})
    start = timezone.now()
    with time_machine.travel(start, tick=False):
        destination = send(destination, django_capture_on_commit_callbacks)
    assert destination.status == "retry_wait"
    assert (
        start + timedelta(seconds=1799)
        <= destination.next_attempt_at
        <= start + timedelta(seconds=1801)
    )


def test_server_errors_back_off_then_fail(
    owner_client: APIClient,
    workspace: Any,
    discord: DiscordWebhookStandIn,
    publish: Callable[..., Publication],
    django_capture_on_commit_callbacks: Any,
) -> None:
    account = connect(owner_client, workspace, "discord_webhook", discord)
    publication = publish(account["id"])
    destination = only_destination(publication)
    discord.set_faults(server_error={"count": 5, "status": 503})
    now = timezone.now()
    delays = []
    with time_machine.travel(now, tick=False) as clock:
        for _ in range(2):
            destination = send(destination, django_capture_on_commit_callbacks)
            assert destination.status == "retry_wait"
            assert destination.error_kind == "transient"
            delays.append((destination.next_attempt_at - now).total_seconds())
            now = destination.next_attempt_at + timedelta(seconds=1)
            clock.move_to(now)
        destination = send(destination, django_capture_on_commit_callbacks)
    assert 24 <= delays[0] <= 36  # 30 s ± 20 %
    assert 48 <= delays[1] <= 72  # doubled
    assert destination.status == "failed"  # at most 3 attempts
    assert destination.attempts == 3
    assert destination.action == "retry"
    assert destination.error_kind == "transient"
    assert destination.next_attempt_at is None
    assert discord.posts_accepted == 0
    publication.refresh_from_db()
    assert publication.status == "failed"
    assert kinds(publication)[-2:] == ["destination.failed", "publication.failed"]


def test_backoff_schedule() -> None:
    for attempt, base in ((1, 30), (2, 60), (3, 120), (6, 900), (10, 900)):
        for _ in range(20):
            assert base * 0.8 <= delivery.backoff_seconds(attempt) <= base * 1.2
    assert delivery.backoff_seconds(1, retry_after=300) >= 300
    assert delivery.backoff_seconds(1, retry_after=99999) <= 1800


def test_a_retry_past_the_deadline_fails_now(
    owner_client: APIClient,
    workspace: Any,
    discord: DiscordWebhookStandIn,
    publish: Callable[..., Publication],
    settings: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    settings.HERALD_DELIVERY_DEADLINE_SECONDS = 60
    account = connect(owner_client, workspace, "discord_webhook", discord)
    destination = only_destination(publish(account["id"]))
    discord.set_faults(rate_limit={"count": 1, "retry_after": 600})
    destination = send(destination, django_capture_on_commit_callbacks)
    assert destination.status == "failed"
    assert destination.action == "retry"


# --- Permanent and auth failures ------------------------------------------------------------------


def test_permanent_failure_asks_for_an_edit(
    owner_client: APIClient,
    workspace: Any,
    mastodon: MastodonStandIn,
    publish: Callable[..., Publication],
    django_capture_on_commit_callbacks: Any,
) -> None:
    account = connect(owner_client, workspace, "mastodon", mastodon)
    publication = publish(account["id"])
    mastodon.set_faults(
        permanent={"count": 1, "status": 422, "message": "Validation failed: Text is spam"}
    )
    destination = send(only_destination(publication), django_capture_on_commit_callbacks)
    assert destination.status == "failed"
    assert destination.action == "edit"
    assert destination.error_kind == "permanent"
    assert "spam" in destination.error_message
    assert destination.attempts == 1
    publication.refresh_from_db()
    assert publication.status == "failed"
    assert kinds(publication)[-2:] == ["destination.failed", "publication.failed"]


def test_revoked_grant_asks_for_a_reconnect(
    owner_client: APIClient,
    workspace: Any,
    mastodon: MastodonStandIn,
    publish: Callable[..., Publication],
    actor: Actor,
    settle: Callable[[], None],
    delivery_queue: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    account = connect(owner_client, workspace, "mastodon", mastodon)
    first = publish(account["id"])
    second = publish(account["id"])  # queued before anyone knows the grant is gone
    mastodon.set_faults(reject_tokens=True)
    destination = send(only_destination(first), django_capture_on_commit_callbacks)
    assert destination.status == "failed"
    assert destination.action == "reconnect"
    assert destination.error_kind == "auth"
    stored = Account.objects.get(pk=account["id"])
    assert stored.status == "reconnect_required"
    # The next destination is blocked at send time, with the decision attached; nothing is sent.
    requests_before = mastodon.requests
    blocked = send(only_destination(second), django_capture_on_commit_callbacks)
    assert blocked.status == "blocked"
    assert blocked.action == "reconnect"
    assert blocked.readiness["state"] == "reconnect_required"
    assert blocked.readiness["blockers"][0]["code"] == "grant_invalid"
    assert mastodon.requests == requests_before
    second.refresh_from_db()
    assert second.status == "failed"
    # Queue actions are refused while the grant is invalid.
    third = publications.publication_create(
        actor=actor,
        workspace_id=workspace.pk,
        text="third",
        destinations=[{"account_id": account["id"]}],
    )
    with pytest.raises(DomainError) as refused:
        publications.publication_publish_now(
            actor=actor, publication_id=third.pk, expected_revision=1
        )
    assert (refused.value.status, refused.value.code) == (409, "readiness_blocked")
    with pytest.raises(DomainError) as refused:
        publications.publication_retry_failed(actor=actor, publication_id=first.pk)
    assert refused.value.code == "readiness_blocked"
    # Reconnecting the same account restores it; retry then delivers.
    mastodon.set_faults(reject_tokens=False)
    again = connect(owner_client, workspace, "mastodon", mastodon)
    assert again["id"] == account["id"]
    assert again["status"] == "active"
    delivery_queue.clear()
    with django_capture_on_commit_callbacks(execute=True):
        publications.publication_retry_failed(actor=actor, publication_id=first.pk)
        publications.publication_retry_failed(actor=actor, publication_id=second.pk)
    settle()
    assert only_destination(first).status == "published"
    assert only_destination(second).status == "published"
    assert mastodon.posts_accepted == 2


def test_rotated_bluesky_session_is_stored(
    owner_client: APIClient,
    workspace: Any,
    bluesky: BlueskyStandIn,
    publish: Callable[..., Publication],
    settle: Callable[[], None],
) -> None:
    account = connect(owner_client, workspace, "bluesky", bluesky)
    for round_ in range(2):  # the second refresh needs the refresh token rotated by the first
        publication = publish(account["id"])
        bluesky.set_faults(expire_tokens=True)
        settle()
        destination = only_destination(publication)
        assert destination.status == "published", (round_, destination.error_message)
    assert bluesky.counters["sessions_refreshed"] == 2
    assert Account.objects.get(pk=account["id"]).status == "active"


# --- Ambiguous outcomes and reconciliation ---------------------------------------------------------


@pytest.mark.parametrize("provider", ["mastodon", "bluesky"])
def test_timeout_after_accept_is_reconciled_not_resent(
    provider: str,
    owner_client: APIClient,
    workspace: Any,
    provider_settings: Any,
    publish: Callable[..., Publication],
    delivery_queue: Any,
    settle: Callable[[], None],
    django_capture_on_commit_callbacks: Any,
) -> None:
    server = {"mastodon": MastodonStandIn, "bluesky": BlueskyStandIn}[provider]()
    with server:
        if provider == "bluesky":
            provider_settings.HERALD_BLUESKY_SERVICE_URL = server.url
        account = connect(owner_client, workspace, provider, server)
        publication = publish(account["id"])
        provider_settings.HERALD_PROVIDER_TIMEOUT_SECONDS = 0.5
        server.set_faults(accept_then_timeout={"count": 1, "seconds": 2.0})
        destination = send(only_destination(publication), django_capture_on_commit_callbacks)
        assert destination.status == "ambiguous"
        assert destination.error_kind == "ambiguous"
        assert server.posts_accepted == 1
        assert delivery_queue.reconciles == [str(destination.pk)]
        provider_settings.HERALD_PROVIDER_TIMEOUT_SECONDS = 2.0
        settle()
        destination.refresh_from_db()
        assert destination.status == "published"
        assert destination.external_id
        assert server.posts_accepted == 1  # never re-sent blindly
    publication.refresh_from_db()
    assert publication.status == "published"
    assert kinds(publication)[-4:] == [
        "destination.ambiguous",
        "destination.reconciled",
        "destination.published",
        "publication.published",
    ]


def test_reconcile_without_provider_support_settles_for_a_person(
    owner_client: APIClient,
    workspace: Any,
    telegram: TelegramStandIn,
    provider_settings: Any,
    publish: Callable[..., Publication],
    delivery_queue: Any,
    settle: Callable[[], None],
    django_capture_on_commit_callbacks: Any,
) -> None:
    account = connect(owner_client, workspace, "telegram", telegram)
    publication = publish(account["id"])
    provider_settings.HERALD_PROVIDER_TIMEOUT_SECONDS = 0.5
    telegram.set_faults(accept_then_timeout={"count": 1, "seconds": 2.0})
    destination = send(only_destination(publication), django_capture_on_commit_callbacks)
    assert destination.status == "ambiguous"
    settle()
    destination.refresh_from_db()
    assert destination.status == "ambiguous"
    assert destination.action == "contact_support"
    assert destination.error_message
    assert telegram.posts_accepted == 1
    publication.refresh_from_db()
    assert publication.status != "publishing"  # it settles; a person checks the chat
    # The dispatcher leaves it alone from now on.
    with time_machine.travel(timezone.now() + timedelta(hours=1)):
        counts = delivery.delivery_dispatch()
    assert counts["reconcile"] == 0
    assert delivery_queue.sends == delivery_queue.reconciles == []
    assert telegram.posts_accepted == 1


def test_reconcile_finds_nothing_then_sends_once(
    owner_client: APIClient,
    workspace: Any,
    discord: DiscordWebhookStandIn,
    publish: Callable[..., Publication],
    delivery_queue: Any,
    settle: Callable[[], None],
) -> None:
    """An ambiguous write the provider confirms never arrived is sent again, exactly once."""
    account = connect(owner_client, workspace, "discord_webhook", discord)
    publication = publish(account["id"])
    destination = only_destination(publication)
    delivery_queue.clear()
    Destination.objects.filter(pk=destination.pk).update(
        status="ambiguous",
        external_id="1234567890",
        write_started_at=timezone.now(),
        first_attempt_at=timezone.now(),
        attempts=1,
        next_attempt_at=timezone.now(),
    )
    delivery_queue.reconciles.append(str(destination.pk))
    settle()
    destination.refresh_from_db()
    assert destination.status == "published"
    assert discord.posts_accepted == 1
    assert "destination.reconciled_absent" in kinds(publication)


def test_reconcile_waits_while_readiness_blocks(
    owner_client: APIClient,
    workspace: Any,
    mastodon: MastodonStandIn,
    provider_settings: Any,
    publish: Callable[..., Publication],
    delivery_queue: Any,
    settle: Callable[[], None],
    django_capture_on_commit_callbacks: Any,
) -> None:
    account = connect(owner_client, workspace, "mastodon", mastodon)
    publication = publish(account["id"])
    provider_settings.HERALD_PROVIDER_TIMEOUT_SECONDS = 0.5
    mastodon.set_faults(accept_then_timeout={"count": 1, "seconds": 2.0})
    destination = send(only_destination(publication), django_capture_on_commit_callbacks)
    assert destination.status == "ambiguous"
    provider_settings.HERALD_PROVIDER_TIMEOUT_SECONDS = 2.0
    provider_settings.HERALD_DISABLED_PROVIDERS = ["mastodon"]
    requests_before = mastodon.requests
    settle()
    destination.refresh_from_db()
    assert destination.status == "ambiguous"  # still unknown: asked again later
    assert destination.readiness["state"] == "disabled"
    assert mastodon.requests == requests_before  # no provider call while blocked
    provider_settings.HERALD_DISABLED_PROVIDERS = []
    with time_machine.travel(timezone.now() + timedelta(minutes=16)):
        assert delivery.delivery_dispatch()["reconcile"] == 1
        settle()
    destination.refresh_from_db()
    assert destination.status == "published"
    assert destination.readiness is None
    assert mastodon.posts_accepted == 1


def test_unreadable_credentials_block_instead_of_guessing(
    owner_client: APIClient,
    workspace: Any,
    discord: DiscordWebhookStandIn,
    settings: Any,
    actor: Actor,
    publish: Callable[..., Publication],
    django_capture_on_commit_callbacks: Any,
) -> None:
    from cryptography.fernet import Fernet

    account = connect(owner_client, workspace, "discord_webhook", discord)
    publication = publish(account["id"])
    settings.HERALD_CREDENTIALS_KEY = Fernet.generate_key().decode()  # the old key is gone
    destination = send(only_destination(publication), django_capture_on_commit_callbacks)
    assert destination.status == "blocked"  # nothing was sent: not ambiguous
    assert destination.readiness["state"] == "needs_configuration"
    assert destination.readiness["blockers"][0]["code"] == "credentials_unreadable"
    assert destination.write_started_at is None
    assert discord.posts_accepted == 0
    other = publications.publication_create(
        actor=actor,
        workspace_id=workspace.pk,
        text="x",
        destinations=[{"account_id": account["id"]}],
    )
    with pytest.raises(DomainError) as refused:
        publications.publication_publish_now(
            actor=actor, publication_id=other.pk, expected_revision=1
        )
    assert refused.value.code == "readiness_blocked"


# --- Dispatcher -----------------------------------------------------------------------------------


def _worker_died_after_sending(destination: Destination, *, wrote: bool) -> None:
    """What a SIGKILLed worker leaves: a claimed row whose lease ran out (and maybe a post)."""
    now = timezone.now()
    if wrote:
        request = delivery.request_for(
            Destination.objects.select_related("publication").get(pk=destination.pk)
        )
        account = Account.objects.select_related("app").get(pk=destination.account_id)
        get_adapter(account.provider).publish(account=account_context(account), request=request)
    Destination.objects.filter(pk=destination.pk).update(
        status="sending",
        attempts=1,
        claimed_at=now - timedelta(minutes=5),
        claim_expires_at=now - timedelta(minutes=3),
        write_started_at=now - timedelta(minutes=5) if wrote else None,
        first_attempt_at=now - timedelta(minutes=5) if wrote else None,
    )


def test_dispatcher_reconciles_a_dead_workers_write(
    owner_client: APIClient,
    workspace: Any,
    mastodon: MastodonStandIn,
    publish: Callable[..., Publication],
    delivery_queue: Any,
    settle: Callable[[], None],
) -> None:
    account = connect(owner_client, workspace, "mastodon", mastodon)
    publication = publish(account["id"])
    destination = only_destination(publication)
    delivery_queue.clear()
    _worker_died_after_sending(destination, wrote=True)
    assert mastodon.posts_accepted == 1
    counts = delivery.delivery_dispatch()
    assert counts["expired_claims"] == 1
    destination.refresh_from_db()
    assert destination.status == "ambiguous"
    assert delivery_queue.sends == []
    assert delivery_queue.reconciles == [str(destination.pk)]
    settle()
    destination.refresh_from_db()
    assert destination.status == "published"
    assert destination.external_id == mastodon.posts[0]["id"]
    assert mastodon.posts_accepted == 1  # no duplicate
    assert "destination.ambiguous" in kinds(publication)


def test_dispatcher_requeues_a_dead_workers_claim_before_the_write(
    owner_client: APIClient,
    workspace: Any,
    discord: DiscordWebhookStandIn,
    publish: Callable[..., Publication],
    delivery_queue: Any,
    settle: Callable[[], None],
) -> None:
    account = connect(owner_client, workspace, "discord_webhook", discord)
    publication = publish(account["id"])
    destination = only_destination(publication)
    delivery_queue.clear()
    _worker_died_after_sending(destination, wrote=False)
    assert delivery.delivery_dispatch()["expired_claims"] == 1
    destination.refresh_from_db()
    assert destination.status == "queued"
    assert delivery_queue.sends == [str(destination.pk)]
    settle()
    destination.refresh_from_db()
    assert destination.status == "published"
    assert discord.posts_accepted == 1


def test_dispatcher_leaves_a_live_claim_alone(
    owner_client: APIClient,
    workspace: Any,
    discord: DiscordWebhookStandIn,
    publish: Callable[..., Publication],
    delivery_queue: Any,
) -> None:
    account = connect(owner_client, workspace, "discord_webhook", discord)
    destination = only_destination(publish(account["id"]))
    delivery_queue.clear()
    Destination.objects.filter(pk=destination.pk).update(
        status="sending",
        claim_expires_at=timezone.now() + timedelta(minutes=1),
        write_started_at=timezone.now(),
    )
    assert delivery.delivery_dispatch()["expired_claims"] == 0
    assert only_destination(destination.publication).status == "sending"
    assert delivery_queue.sends == delivery_queue.reconciles == []


def test_dispatcher_nudges_lost_messages(
    owner_client: APIClient,
    workspace: Any,
    discord: DiscordWebhookStandIn,
    publish: Callable[..., Publication],
    delivery_queue: Any,
    settle: Callable[[], None],
) -> None:
    account = connect(owner_client, workspace, "discord_webhook", discord)
    publication = publish(account["id"])
    delivery_queue.clear()  # the broker lost the message
    assert delivery.delivery_dispatch()["enqueued"] == 0  # not stale yet
    with time_machine.travel(timezone.now() + timedelta(minutes=2)):
        assert delivery.delivery_dispatch()["enqueued"] == 1
        settle()
    assert only_destination(publication).status == "published"
    assert discord.posts_accepted == 1


def test_dispatcher_fails_overdue_work_with_a_reason(
    owner_client: APIClient,
    workspace: Any,
    discord: DiscordWebhookStandIn,
    settings: Any,
    publish: Callable[..., Publication],
    delivery_queue: Any,
) -> None:
    settings.HERALD_DELIVERY_DEADLINE_SECONDS = 600
    account = connect(owner_client, workspace, "discord_webhook", discord)
    publication = publish(account["id"])
    delivery_queue.clear()
    with time_machine.travel(timezone.now() + timedelta(minutes=11)):
        counts = delivery.delivery_dispatch()
    assert counts["overdue"] == 1
    destination = only_destination(publication)
    assert destination.status == "failed"
    assert destination.error_kind == "deadline"
    assert destination.error_message
    assert destination.action == "retry"
    publication.refresh_from_db()
    assert publication.status == "failed"
    assert delivery_queue.sends == []
    assert discord.posts_accepted == 0


def test_dispatcher_records_its_tick(workspace: Any) -> None:
    from publishing.models import SchedulerHeartbeat

    before = timezone.now()
    delivery.delivery_dispatch()
    assert SchedulerHeartbeat.objects.get(name="dispatcher").last_tick_at >= before


# --- Exactly once, partial results ----------------------------------------------------------------


def test_a_duplicate_send_message_sends_nothing(
    owner_client: APIClient,
    workspace: Any,
    discord: DiscordWebhookStandIn,
    publish: Callable[..., Publication],
    django_capture_on_commit_callbacks: Any,
) -> None:
    account = connect(owner_client, workspace, "discord_webhook", discord)
    destination = only_destination(publish(account["id"]))
    send(destination, django_capture_on_commit_callbacks)
    again = send(destination, django_capture_on_commit_callbacks)
    assert again.status == "published"
    assert again.attempts == 1
    assert discord.posts_accepted == 1


def test_partial_results_and_retry_of_the_failed_destination_only(
    owner_client: APIClient,
    workspace: Any,
    discord: DiscordWebhookStandIn,
    mastodon: MastodonStandIn,
    publish: Callable[..., Publication],
    actor: Actor,
    delivery_queue: Any,
    settle: Callable[[], None],
    django_capture_on_commit_callbacks: Any,
) -> None:
    hook = connect(owner_client, workspace, "discord_webhook", discord)
    masto = connect(owner_client, workspace, "mastodon", mastodon)
    mastodon.set_faults(permanent={"count": 1, "status": 422})
    publication = publish(hook["id"], masto["id"])
    settle()
    publication.refresh_from_db()
    assert publication.status == "partially_published"
    statuses = dict(
        Destination.objects.filter(publication=publication).values_list(
            "account__provider", "status"
        )
    )
    assert statuses == {"discord_webhook": "published", "mastodon": "failed"}
    published_before = Destination.objects.get(
        publication=publication, account__provider="discord_webhook"
    )
    with django_capture_on_commit_callbacks(execute=True):
        publications.publication_retry_failed(actor=actor, publication_id=publication.pk)
    failed_one = Destination.objects.get(publication=publication, account__provider="mastodon")
    assert delivery_queue.sends == [str(failed_one.pk)]
    settle()
    publication.refresh_from_db()
    assert publication.status == "published"
    published_after = Destination.objects.get(
        publication=publication, account__provider="discord_webhook"
    )
    assert published_after.external_id == published_before.external_id
    assert published_after.attempts == 1
    assert (discord.posts_accepted, mastodon.posts_accepted) == (1, 1)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_duplicate_sends_post_once(
    owner_client: APIClient,
    workspace: Any,
    discord: DiscordWebhookStandIn,
    publish: Callable[..., Publication],
) -> None:
    import threading

    from django.db import connection

    account = connect(owner_client, workspace, "discord_webhook", discord)
    destination = only_destination(publish(account["id"]))
    barrier = threading.Barrier(4)

    def worker() -> None:
        try:
            barrier.wait(timeout=5)
            delivery.delivery_send(destination_id=destination.pk)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=20)
    destination.refresh_from_db()
    assert destination.status == "published"
    assert destination.attempts == 1
    assert discord.posts_accepted == 1


def test_ambiguous_past_its_deadline_goes_to_a_person(workspace, user):
    """An outcome nobody could confirm before the deadline is handed over, never re-sent."""
    from datetime import timedelta

    from django.utils import timezone

    from publishing.models import Destination, Publication
    from publishing.services import delivery
    from tests.publishing_support import make_account

    account = make_account(workspace, "telegram")
    publication = Publication.objects.create(
        workspace=workspace, created_by=user, text="hi", status=Publication.Status.PUBLISHING
    )
    past = timezone.now() - timedelta(minutes=1)
    destination = Destination.objects.create(
        publication=publication,
        account=account,
        profile="telegram.message",
        idempotency_key="k-deadline",
        status=Destination.Status.AMBIGUOUS,
        next_attempt_at=timezone.now() + timedelta(hours=1),
        deadline_at=past,
    )
    delivery.delivery_dispatch()
    destination.refresh_from_db()
    publication.refresh_from_db()
    assert destination.status == Destination.Status.AMBIGUOUS
    assert destination.action == "contact_support"
    assert publication.status == Publication.Status.FAILED
    assert publication.events.filter(
        kind="destination.unconfirmable", destination=destination
    ).exists()
