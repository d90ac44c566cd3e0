"""Helpers of the repost automation tests: accounts on the stand-in providers, published
destinations with a real post at the provider, policies through the API, and the engine driven
with an explicit clock."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.utils import timezone
from rest_framework.test import APIClient

from providers import credentials, get_adapter
from providers.base import PublishRequest
from publishing.models import Account, Destination, ProviderApp, Publication
from publishing.services.accounts import account_context
from reposts import engine
from tests.providers.bluesky.standin import ACCOUNTS as BLUESKY_ACCOUNTS
from tests.providers.bluesky.standin import REPOST, BlueskyStandIn
from tests.providers.mastodon.standin import FIXTURE_TOKEN, MastodonStandIn

API = "/api/v1"
FRIEND_TOKEN = "mastodon-friend-token-0123456789abcdef"


def mastodon_account(workspace: Any, server: MastodonStandIn, *, friend: bool = False) -> Account:
    """The stand-in's account 1 (``herald``) or 2 (``friend``) connected to ``workspace``."""
    if friend:
        with server.lock:
            server.tokens[FRIEND_TOKEN] = "2"
    app, _ = ProviderApp.objects.get_or_create(
        provider="mastodon",
        instance_url=server.url,
        redirect_uri="",
        defaults={
            "credentials_encrypted": credentials.encrypt({"client_id": "c", "client_secret": "s"})
        },
    )
    return Account.objects.create(
        workspace=workspace,
        provider="mastodon",
        external_id="2" if friend else "1",
        username=("friend@" if friend else "herald@") + "127.0.0.1",
        instance_url=server.url,
        app=app,
        credentials_encrypted=credentials.encrypt(
            {"access_token": FRIEND_TOKEN if friend else FIXTURE_TOKEN}
        ),
    )


def bluesky_account(
    workspace: Any, server: BlueskyStandIn, *, handle: str = "herald.test"
) -> Account:
    connected = get_adapter("bluesky").connect_with_credentials(
        fields={"handle": handle, "app_password": BLUESKY_ACCOUNTS[handle]["password"]}
    )
    return Account.objects.create(
        workspace=workspace,
        provider="bluesky",
        external_id=connected.external_id,
        username=connected.username,
        instance_url=connected.instance_url,
        credentials_encrypted=credentials.encrypt(connected.credentials),
    )


def published(
    account: Account, *, at: datetime | None = None, text: str | None = None
) -> Destination:
    """A destination published from ``account``: the post really exists at the stand-in."""
    profile = f"{account.provider}.post"
    key = uuid.uuid4().hex
    result = get_adapter(account.provider).publish(
        account=account_context(account),
        request=PublishRequest(
            profile=profile, text=text or f"Post {key[:8]}", idempotency_key=key
        ),
    )
    publication = Publication.objects.create(
        workspace=account.workspace, status=Publication.Status.PUBLISHED, text="x"
    )
    return Destination.objects.create(
        publication=publication,
        account=account,
        profile=profile,
        status=Destination.Status.PUBLISHED,
        idempotency_key=key,
        external_id=result.external_id,
        external_url=result.external_url,
        published_at=at or timezone.now(),
    )


def rule(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "delay_seconds": 3600,
        "evaluation_window_seconds": 86_400,
        "threshold_mode": "all",
        "min_comments": 0,
        "min_likes": 0,
        "min_reposts": 0,
        "min_views": 0,
        "plateau_checks": 3,
        "require_plateau": False,
        "stages": [],
    }
    base.update(overrides)
    return base


def policy(
    targets: list[Any],
    sources: list[Any] | None = None,
    name: str = "Best posts",
    **rule_overrides: Any,
) -> dict[str, Any]:
    return {
        "name": name,
        "enabled": True,
        "source_account_ids": [str(getattr(a, "pk", a)) for a in sources or []],
        "target_account_ids": [str(getattr(a, "pk", a)) for a in targets],
        "rule": rule(**rule_overrides),
    }


def settings_url(workspace: Any) -> str:
    return f"{API}/repost-automation?workspace_id={workspace.pk}"


def put_policies(
    client: APIClient,
    workspace: Any,
    policies: list[dict[str, Any]],
    *,
    revision: int | None = None,
) -> Any:
    if revision is None:
        revision = client.get(settings_url(workspace)).json()["revision"]
    return client.put(
        f"{API}/repost-automation",
        {"workspace_id": str(workspace.pk), "expected_revision": revision, "policies": policies},
        format="json",
    )


def tick(now: datetime) -> dict[str, int]:
    """One engine tick at ``now``, every due execution advanced inline (no broker)."""
    return engine.engine_tick(
        now=now,
        dispatch=lambda execution_id: engine.execution_advance(execution_id=execution_id, now=now),
    )


@dataclass
class Requests:
    server: Any

    def count(self, method: str, path_part: str) -> int:
        with self.server.lock:
            return sum(
                1
                for r in self.server.request_log
                if r["method"] == method and path_part in r["path"]
            )


def live_mastodon_boosts(server: MastodonStandIn, account_id: str, status_id: str) -> int:
    with server.lock:
        return sum(
            1
            for s in server.statuses.values()
            if s["account_id"] == account_id and s["reblog_of"] == status_id
        )


def live_bluesky_reposts(server: BlueskyStandIn, did: str, subject_uri: str) -> int:
    with server.lock:
        return sum(
            1
            for (owner, collection, _), stored in server.records.items()
            if owner == did
            and collection == REPOST
            and stored["value"]["subject"]["uri"] == subject_uri
        )
