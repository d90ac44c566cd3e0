"""Threads adapter against the stand-in Threads API (real HTTP on 127.0.0.1): the
500-character count, the operator's app with the short- then long-lived token exchange, refresh
of a long-lived token once 24 h old, two-step publishing with the container status polled,
images fetched by URL (the stand-in GETs them), Graph API error codes, reconcile, delete and
insights; and the whole path through Herald: connect -> callback -> publish -> ambiguous ->
reconcile -> refresh."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from django.utils import timezone
from rest_framework.test import APIClient

from providers import PROVIDERS, credentials, get_adapter
from providers.base import (
    AccountContext,
    ErrorKind,
    MediaItem,
    NotSupported,
    ProviderError,
    PublishRequest,
    describe,
)
from providers.threads import ThreadsAdapter, threads_length
from publishing.models import Account, Destination, Publication
from publishing.services import delivery, publications
from tests.providers import OAUTH_REDIRECT, assert_no_secret, media_item, tiny_png
from tests.providers.threads.standin import (
    CLIENT_SECRET,
    USER,
    MediaHost,
    ThreadsStandIn,
)
from tests.providers.threads.standin import (
    threads_length as standin_length,
)
from tests.publishing_support import API, confirm_start, follow_authorization, upload
from workspaces.access import Actor
from workspaces.models import User

REDIRECT = OAUTH_REDIRECT
DAY = 24 * 3600


def post(text: str = "Hello from Herald", key: str = "dest-1", **kwargs: Any) -> PublishRequest:
    return PublishRequest(profile="threads.post", text=text, idempotency_key=key, **kwargs)


def hosted(host: MediaHost, payload: bytes | None = None, **kwargs: Any) -> MediaItem:
    item = media_item(payload, **kwargs)
    item.url = host.url_for(tiny_png() if payload is None else payload, item.mime_type)
    return item


# --- Catalogue and counting ---------------------------------------------------------------------


def test_registered_with_capability_metadata() -> None:
    assert "threads" in PROVIDERS
    described = describe(get_adapter("threads"))
    assert described["connection"] == "oauth2"
    assert described["pkce"] is False
    assert set(described["required_scopes"]) >= {
        "threads_basic",
        "threads_content_publish",
        "threads_manage_insights",
    }
    assert described["supports"]["refresh"] is True
    assert described["supports"]["revoke"] is False
    assert described["supports"]["metrics"] is True
    (profile,) = described["profiles"]
    assert profile["key"] == "threads.post"
    assert profile["text_limit"] == 500
    assert profile["media"]["mime_types"] == [
        "image/jpeg",
        "image/png",
        "video/mp4",
        "video/quicktime",
    ]
    assert profile["video"]["supported"] is True


@pytest.mark.parametrize(
    ("text", "length"),
    [
        ("Hello", 5),
        ("日本語", 3),
        ("e\u0301", 1),  # NFC first: one é
        ("👍", 4),  # an emoji counts its UTF-8 bytes
        ("👍🏽", 8),
        ("🇫🇷", 8),
        ("https://example.com/" + "a" * 30, 50),  # links count as written
    ],
)
def test_length(text: str, length: int) -> None:
    assert threads_length(text) == length == standin_length(text)


def test_limit_is_500(
    adapter: ThreadsAdapter, server: ThreadsStandIn, account: AccountContext
) -> None:
    adapter.publish(account=account, request=post(text="x" * 500))
    adapter.publish(account=account, request=post(text="y" * 496 + "👍", key="k2"))
    assert server.posts_accepted == 2
    before = server.requests
    for too_long in ("x" * 501, "x" * 497 + "👍"):
        with pytest.raises(ProviderError) as caught:
            adapter.publish(account=account, request=post(text=too_long, key="k3"))
        assert caught.value.kind == ErrorKind.PERMANENT
        assert "500" in caught.value.message
    assert server.requests == before  # refused before any call


# --- Connect and refresh ------------------------------------------------------------------------


def test_connect_exchanges_for_a_long_lived_token(
    adapter: ThreadsAdapter, server: ThreadsStandIn
) -> None:
    start = adapter.begin_authorization(redirect_uri=REDIRECT, state="st-1")
    url = urlsplit(start.authorization_url)
    assert f"{url.scheme}://{url.netloc}{url.path}" == f"{server.url}/oauth/authorize"
    query = {k: v[0] for k, v in parse_qs(url.query).items()}
    assert query["client_id"] == server.fixtures()["client_id"]
    assert query["state"] == "st-1"
    assert query["response_type"] == "code"
    assert {"threads_basic", "threads_content_publish"} <= set(query["scope"].split(","))
    assert start.code_verifier == ""
    assert start.app == {}
    code = follow_authorization(start.authorization_url)["code"]
    connected = adapter.complete_authorization(code=code, redirect_uri=REDIRECT, code_verifier="")
    assert connected.external_id == USER["id"]
    assert connected.username == USER["username"]
    assert connected.display_name == USER["name"]
    assert connected.profile_url == "https://www.threads.net/@herald.hq"
    assert connected.credentials["access_token"].startswith("THL")  # the long-lived one
    assert server.counters["long_lived_issued"] == 1
    assert connected.expires_at is not None
    remaining = connected.expires_at - datetime.now(UTC)
    assert timedelta(days=59, hours=23) < remaining <= timedelta(days=60)


def test_bad_code_is_auth_and_leaks_nothing(adapter: ThreadsAdapter) -> None:
    start = adapter.begin_authorization(redirect_uri=REDIRECT, state="s")
    code = follow_authorization(start.authorization_url)["code"]
    with pytest.raises(ProviderError) as caught:
        adapter.complete_authorization(code=code, redirect_uri=REDIRECT + "x", code_verifier="")
    assert caught.value.kind == ErrorKind.AUTH
    assert_no_secret(caught.value, [code, CLIENT_SECRET])


@pytest.mark.parametrize(
    ("answers", "message"),
    [
        ([{"access_token": ""}], "Threads: the token answer had no access token."),
        ([{"access_token": "short"}, {}], "Threads: the token answer had no access token."),
        (
            [{"access_token": "short"}, {"access_token": "long"}, {"username": "me"}],
            "Threads: the account could not be read.",
        ),
    ],
    ids=["no short-lived token", "no long-lived token", "no account id"],
)
def test_connect_refuses_an_answer_without_what_it_needs(
    monkeypatch: pytest.MonkeyPatch, answers: list[dict[str, Any]], message: str
) -> None:
    """Each step of the exchange stops the connect, as a reconnect, when its answer lacks the
    token or the id the next step needs; no later step is asked."""
    adapter = get_adapter("threads")
    remaining = list(answers)
    operations: list[str] = []

    def call(method: str, path_or_url: str, **kwargs: Any) -> None:
        operations.append(kwargs["operation"])

    monkeypatch.setattr(adapter, "_call", call)
    monkeypatch.setattr(adapter, "_json", lambda response, operation: remaining.pop(0))
    with pytest.raises(ProviderError) as caught:
        adapter.complete_authorization(code="c", redirect_uri=REDIRECT, code_verifier="")
    assert (caught.value.kind, caught.value.message) == (ErrorKind.AUTH, message)
    assert remaining == []
    assert (
        operations
        == ["token exchange", "long-lived token exchange", "account lookup"][: len(answers)]
    )


def test_unconfigured_app_cannot_connect(settings: Any) -> None:
    settings.PROVIDER_OAUTH_APPS = {
        **settings.PROVIDER_OAUTH_APPS,
        "threads": {"client_id": "", "client_secret": ""},
    }
    with pytest.raises(ProviderError) as caught:
        get_adapter("threads").begin_authorization(redirect_uri=REDIRECT, state="s")
    assert caught.value.kind == ErrorKind.PERMANENT
    assert "HERALD_THREADS_CLIENT_ID" in caught.value.message


def test_refresh_waits_24_hours_then_renews(
    adapter: ThreadsAdapter, server: ThreadsStandIn, account: AccountContext
) -> None:
    assert adapter.can_refresh(credentials=account.credentials)
    requests_before = server.requests
    with pytest.raises(ProviderError) as caught:  # too young: answered without a call
        adapter.refresh(account=account)
    assert caught.value.kind == ErrorKind.TRANSIENT
    assert server.requests == requests_before
    # A day later (the stand-in's clock and the token's issue time both moved).
    server.age_tokens(DAY + 60)
    account.credentials["issued_at"] = str(int(time.time() - DAY - 60))
    fresh = adapter.refresh(account=account)
    assert fresh.credentials["access_token"] != account.credentials["access_token"]
    assert fresh.expires_at is not None
    assert fresh.expires_at > datetime.now(UTC) + timedelta(days=59)
    assert server.counters["refreshes"] == 1
    account.credentials = dict(fresh.credentials)
    adapter.publish(account=account, request=post())
    assert server.posts_accepted == 1


def test_expired_token_is_auth_code_190(
    adapter: ThreadsAdapter, server: ThreadsStandIn, account: AccountContext
) -> None:
    server.expire_tokens()
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=post())
    assert caught.value.kind == ErrorKind.AUTH  # HTTP 400, but Graph code 190
    assert caught.value.action == "reconnect"
    account.credentials["issued_at"] = "1"
    with pytest.raises(ProviderError) as caught:  # an expired token cannot be refreshed
        adapter.refresh(account=account)
    assert caught.value.kind == ErrorKind.AUTH
    assert_no_secret(caught.value, [account.credentials["access_token"], CLIENT_SECRET])


def test_revoke_is_not_offered(adapter: ThreadsAdapter, account: AccountContext) -> None:
    with pytest.raises(NotSupported):
        adapter.revoke(account=account)


# --- Publish ------------------------------------------------------------------------------------


def test_publish_text_polls_the_container_first(
    adapter: ThreadsAdapter, server: ThreadsStandIn, account: AccountContext
) -> None:
    server.container_polls = 2  # IN_PROGRESS twice, then FINISHED
    result = adapter.publish(account=account, request=post())
    assert result.external_id == server.posts[0]["id"]
    assert result.external_url.startswith("https://www.threads.net/@herald.hq/post/")
    assert server.posts[0]["media_type"] == "TEXT"
    assert server.counters["status_reads"] >= 3


def test_container_still_processing_is_transient_and_publishes_nothing(
    adapter: ThreadsAdapter, server: ThreadsStandIn, account: AccountContext
) -> None:
    server.container_polls = 100
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=post())
    assert caught.value.kind == ErrorKind.TRANSIENT
    assert server.counters["status_reads"] == adapter.container_poll_attempts
    assert server.posts_accepted == 0


def test_image_is_fetched_by_threads_from_its_url(
    adapter: ThreadsAdapter, server: ThreadsStandIn, account: AccountContext, host: MediaHost
) -> None:
    big = tiny_png(40, 30)
    adapter.publish(
        account=account, request=post(media=[hosted(host, big, alt_text="a red rectangle")])
    )
    (accepted,) = server.posts
    assert accepted["media_type"] == "IMAGE"
    assert accepted["alt_texts"] == ["a red rectangle"]
    (fetch,) = server.fetched
    assert (fetch["status"], fetch["content_type"], fetch["size"]) == (200, "image/png", len(big))


def test_carousel_of_images(
    adapter: ThreadsAdapter, server: ThreadsStandIn, account: AccountContext, host: MediaHost
) -> None:
    adapter.publish(account=account, request=post(media=[hosted(host), hosted(host)]))
    (accepted,) = server.posts
    assert (accepted["media_type"], accepted["items"]) == ("CAROUSEL", 2)
    assert len(server.fetched) == 2


def test_unreachable_image_fails_as_the_containers_error(
    adapter: ThreadsAdapter, server: ThreadsStandIn, account: AccountContext, host: MediaHost
) -> None:
    item = hosted(host)
    item.url = item.url + "-gone"  # the host answers 404
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=post(media=[item]))
    assert caught.value.kind == ErrorKind.PERMANENT
    assert "FAILED_DOWNLOADING_IMAGE" in caught.value.message
    assert server.posts_accepted == 0


def test_media_without_a_public_url_is_refused_before_any_call(
    adapter: ThreadsAdapter, server: ThreadsStandIn, account: AccountContext
) -> None:
    before = server.requests
    for media in ([media_item()], [media_item(mime_type="image/gif")]):
        with pytest.raises(ProviderError) as caught:
            adapter.publish(account=account, request=post(media=media))
        assert caught.value.kind == ErrorKind.PERMANENT
    assert server.requests == before


def test_rate_limit_code_4_is_rate_limited_not_auth(
    adapter: ThreadsAdapter, server: ThreadsStandIn, account: AccountContext
) -> None:
    server.set_faults(rate_limit={"count": 1, "retry_after": 7})
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=post())
    assert caught.value.kind == ErrorKind.RATE_LIMITED  # HTTP 400, type OAuthException, code 4
    assert caught.value.action == "retry"
    assert caught.value.retry_after == pytest.approx(7, abs=1)
    assert server.posts_accepted == 0
    adapter.publish(account=account, request=post())
    assert server.posts_accepted == 1


@pytest.mark.parametrize(
    ("status", "kind"),
    [(500, ErrorKind.TRANSIENT), (503, ErrorKind.TRANSIENT), (504, ErrorKind.AMBIGUOUS)],
)
def test_server_errors(
    adapter: ThreadsAdapter,
    server: ThreadsStandIn,
    account: AccountContext,
    status: int,
    kind: ErrorKind,
) -> None:
    server.set_faults(server_error={"count": 1, "status": status})
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=post())
    assert caught.value.kind == kind


# --- Reconcile, delete, metrics -----------------------------------------------------------------


def test_timeout_after_publish_is_ambiguous_and_reconciled(
    settings: Any, server: ThreadsStandIn, account: AccountContext
) -> None:
    settings.HERALD_PROVIDER_TIMEOUT_SECONDS = 0.5
    adapter = get_adapter("threads")
    assert isinstance(adapter, ThreadsAdapter)
    adapter.container_poll_seconds = 0.01
    server.set_faults(accept_then_timeout={"count": 1, "seconds": 1.5})
    request = post(text="Launch  notes\nhere", key="slow-1", first_attempt_at=datetime.now(UTC))
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=request)
    assert caught.value.kind == ErrorKind.AMBIGUOUS
    assert server.posts_accepted == 1
    found = adapter.reconcile(account=account, request=request)
    assert found is not None
    assert found.external_id == server.posts[0]["id"]
    assert found.external_url.startswith("https://www.threads.net/@herald.hq/post/")
    assert adapter.reconcile(account=account, request=request, external_id=found.external_id)
    assert adapter.reconcile(account=account, request=request, external_id="12345") is None
    assert server.posts_accepted == 1


def test_reconcile_says_absent_only_when_the_window_was_seen(
    adapter: ThreadsAdapter, server: ThreadsStandIn, account: AccountContext
) -> None:
    server.store_post("Something else entirely")
    server.store_post("Never sent", at=time.time() - 3 * DAY)  # same text, long before
    never = post(text="Never sent", key="never", first_attempt_at=datetime.now(UTC))
    assert adapter.reconcile(account=account, request=never) is None
    for n in range(320):  # more posts than the pages reconcile reads
        server.store_post(f"busy {n}")
    with pytest.raises(NotSupported) as caught:
        adapter.reconcile(account=account, request=never)
    assert caught.value.kind == ErrorKind.AMBIGUOUS
    assert server.posts_accepted == 0


def test_reconcile_compares_the_kind_of_post(
    adapter: ThreadsAdapter, server: ThreadsStandIn, account: AccountContext, host: MediaHost
) -> None:
    adapter.publish(account=account, request=post(text="With a picture", media=[hosted(host)]))
    started = datetime.now(UTC)
    found = adapter.reconcile(
        account=account,
        request=post(text="With a picture", media=[hosted(host)], first_attempt_at=started),
    )
    assert found is not None
    text_only = post(text="With a picture", first_attempt_at=started)
    assert adapter.reconcile(account=account, request=text_only) is None


def test_delete_is_idempotent(
    adapter: ThreadsAdapter, server: ThreadsStandIn, account: AccountContext
) -> None:
    result = adapter.publish(account=account, request=post())
    adapter.delete(account=account, external_id=result.external_id)
    adapter.delete(account=account, external_id=result.external_id)
    assert server.counters["posts_deleted"] == 1
    assert (
        adapter.reconcile(account=account, request=post(), external_id=result.external_id) is None
    )


def test_metrics_from_insights(
    adapter: ThreadsAdapter, server: ThreadsStandIn, account: AccountContext
) -> None:
    result = adapter.publish(account=account, request=post())
    server.set_metrics(result.external_id, views=120, likes=5, replies=2, reposts=3, quotes=1)
    metrics = adapter.metrics(account=account, external_id=result.external_id)
    assert (metrics.likes, metrics.comments, metrics.reposts, metrics.views) == (5, 2, 4, 120)
    with pytest.raises(ProviderError) as caught:
        adapter.metrics(account=account, external_id="404404")
    assert caught.value.kind == ErrorKind.PERMANENT


# --- Through Herald: connect -> callback -> publish -> reconcile -> refresh --------------------


def _connect(owner_client: APIClient, workspace: Any) -> Account:
    started = owner_client.post(
        f"{API}/accounts/connect",
        {"workspace_id": str(workspace.pk), "provider": "threads"},
        format="json",
    )
    assert started.status_code == 200, started.content
    browser = APIClient()
    authorization_url = confirm_start(started.json()["authorization_url"], browser)
    query = {k: v[0] for k, v in parse_qs(urlsplit(authorization_url).query).items()}
    assert query["redirect_uri"].endswith("/api/v1/accounts/oauth/callback")
    callback = browser.get(
        f"{API}/accounts/oauth/callback", follow_authorization(authorization_url)
    )
    assert callback.status_code in (200, 302, 303), callback.content
    return Account.objects.get(workspace=workspace, provider="threads")


@pytest.mark.django_db
def test_connect_publish_reconcile_and_refresh_through_herald(
    owner_client: APIClient,
    workspace: Any,
    user: User,
    server: ThreadsStandIn,
    settings: Any,
    delivery_queue: Any,
    django_capture_on_commit_callbacks: Any,
    monkeypatch: Any,
) -> None:
    stored = _connect(owner_client, workspace)
    assert stored.status == Account.Status.ACTIVE
    assert stored.external_id == USER["id"]
    assert stored.username == USER["username"]
    assert stored.profile_url == "https://www.threads.net/@herald.hq"
    assert stored.instance_url == server.url
    assert stored.token_expires_at is not None
    assert stored.token_expires_at > timezone.now() + timedelta(days=59)
    secrets = credentials.decrypt(stored.credentials_encrypted)
    assert secrets["access_token"].startswith("THL")
    assert secrets["access_token"] not in stored.credentials_encrypted

    # Publish through the delivery service; the publish call times out after Threads took it.
    actor = Actor(user=user)
    publication = publications.publication_create(
        actor=actor,
        workspace_id=workspace.pk,
        text="Herald on Threads: https://example.com/launch",
        destinations=[{"account_id": str(stored.pk)}],
    )
    with django_capture_on_commit_callbacks(execute=True):
        publications.publication_publish_now(
            actor=actor, publication_id=publication.pk, expected_revision=1
        )
    destination = Destination.objects.get(publication=publication)
    settings.HERALD_PROVIDER_TIMEOUT_SECONDS = 0.5
    monkeypatch.setattr(ThreadsAdapter, "container_poll_seconds", 0.01)
    server.set_faults(accept_then_timeout={"count": 1, "seconds": 1.5})
    with django_capture_on_commit_callbacks(execute=True):
        delivery.delivery_send(destination_id=destination.pk)
    destination.refresh_from_db()
    assert destination.status == Destination.Status.AMBIGUOUS
    assert delivery_queue.reconciles == [str(destination.pk)]
    settings.HERALD_PROVIDER_TIMEOUT_SECONDS = 2.0
    with django_capture_on_commit_callbacks(execute=True):
        delivery.delivery_reconcile(destination_id=destination.pk)
    destination.refresh_from_db()
    assert destination.status == Destination.Status.PUBLISHED
    assert destination.external_id == server.posts[0]["id"]
    assert destination.external_url.startswith("https://www.threads.net/@herald.hq/post/")
    assert server.posts_accepted == 1  # found, never sent twice
    publication.refresh_from_db()
    assert publication.status == Publication.Status.PUBLISHED

    # The token lifecycle refreshes through the adapter, once the token is a day old.
    from publishing.services import tokens

    assert tokens.account_token_refresh(account_id=stored.pk, force=True) == "failed"
    assert server.counters["refreshes"] == 0
    server.age_tokens(DAY + 60)
    stored.refresh_from_db()
    aged = {**secrets, "issued_at": str(int(time.time() - DAY - 60))}
    Account.objects.filter(pk=stored.pk).update(credentials_encrypted=credentials.encrypt(aged))
    assert tokens.account_token_refresh(account_id=stored.pk, force=True) == "refreshed"
    stored.refresh_from_db()
    renewed = credentials.decrypt(stored.credentials_encrypted)
    assert renewed["access_token"] != secrets["access_token"]
    assert stored.token_expires_at is not None
    assert stored.token_expires_at > timezone.now() + timedelta(days=59)
    second = publications.publication_create(
        actor=actor,
        workspace_id=workspace.pk,
        text="Second post after the refresh",
        destinations=[{"account_id": str(stored.pk)}],
    )
    with django_capture_on_commit_callbacks(execute=True):
        publications.publication_publish_now(
            actor=actor, publication_id=second.pk, expected_revision=1
        )
        delivery.delivery_send(destination_id=Destination.objects.get(publication=second).pk)
    assert Destination.objects.get(publication=second).status == Destination.Status.PUBLISHED
    assert server.posts_accepted == 2


@pytest.mark.django_db
def test_expired_grant_makes_the_account_reconnect_required(
    owner_client: APIClient, workspace: Any, server: ThreadsStandIn
) -> None:
    from publishing.services import tokens

    stored = _connect(owner_client, workspace)
    server.expire_tokens()
    aged = {
        **credentials.decrypt(stored.credentials_encrypted),
        "issued_at": str(int(time.time() - 2 * DAY)),
    }
    Account.objects.filter(pk=stored.pk).update(credentials_encrypted=credentials.encrypt(aged))
    assert tokens.account_token_refresh(account_id=stored.pk, force=True) == "reconnect_required"
    stored.refresh_from_db()
    assert stored.status == Account.Status.RECONNECT_REQUIRED
    assert "Threads" in stored.status_reason


@pytest.mark.django_db
def test_connect_needs_the_operators_app(
    owner_client: APIClient, workspace: Any, settings: Any
) -> None:
    settings.PROVIDER_OAUTH_APPS = {
        **settings.PROVIDER_OAUTH_APPS,
        "threads": {
            **settings.PROVIDER_OAUTH_APPS["threads"],
            "client_id": "",
            "client_secret": "",
        },
    }
    response = owner_client.post(
        f"{API}/accounts/connect",
        {"workspace_id": str(workspace.pk), "provider": "threads"},
        format="json",
    )
    assert response.status_code == 409
    assert response.json()["code"] == "readiness_blocked"
    assert "HERALD_THREADS_CLIENT_ID" in response.json()["detail"]


@pytest.mark.django_db
def test_denied_consent_and_disconnect_through_herald(
    owner_client: APIClient, workspace: Any, server: ThreadsStandIn
) -> None:
    server.deny = True
    started = owner_client.post(
        f"{API}/accounts/connect",
        {"workspace_id": str(workspace.pk), "provider": "threads"},
        format="json",
    )
    browser = APIClient()
    location = requests.get(
        confirm_start(started.json()["authorization_url"], browser),
        allow_redirects=False,
        timeout=5,
    ).headers["Location"]
    denied = {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}
    assert denied["error"] == "access_denied"
    response = browser.get(f"{API}/accounts/oauth/callback", denied)
    assert response.status_code == 403
    assert response.json()["code"] == "oauth_denied"
    assert not Account.objects.filter(provider="threads").exists()
    assert server.counters["tokens_issued"] == 0

    server.deny = False
    stored = _connect(owner_client, workspace)
    assert owner_client.delete(f"{API}/accounts/{stored.pk}").status_code == 204
    stored.refresh_from_db()
    assert stored.status == Account.Status.DISCONNECTED
    assert stored.credentials_encrypted == ""  # removed locally; Threads has no revoke call


@pytest.mark.django_db(transaction=True)
def test_image_through_herald_is_fetched_from_herald_s_signed_url(
    live_server: Any,
    owner_client: APIClient,
    workspace: Any,
    user: User,
    server: ThreadsStandIn,
    settings: Any,
    media_storage: Any,
    delivery_queue: Any,
    django_capture_on_commit_callbacks: Any,
    monkeypatch: Any,
) -> None:
    settings.HERALD_PUBLIC_URL = str(live_server.url)
    monkeypatch.setattr(ThreadsAdapter, "container_poll_seconds", 0.01)
    stored = _connect(owner_client, workspace)
    picture = tiny_png(20, 10)
    media = upload(owner_client, workspace, picture, name="chart.png")
    actor = Actor(user=user)
    publication = publications.publication_create(
        actor=actor,
        workspace_id=workspace.pk,
        text="A chart",
        media_ids=[media["id"]],
        destinations=[{"account_id": str(stored.pk)}],
    )
    with django_capture_on_commit_callbacks(execute=True):
        publications.publication_publish_now(
            actor=actor, publication_id=publication.pk, expected_revision=1
        )
        delivery.delivery_send(destination_id=Destination.objects.get(publication=publication).pk)
    destination = Destination.objects.get(publication=publication)
    assert destination.status == Destination.Status.PUBLISHED, destination.error_message
    (accepted,) = server.posts
    assert accepted["media_type"] == "IMAGE"
    (fetch,) = server.fetched  # Threads fetched the image from Herald's signed media URL
    assert fetch["url"].startswith(f"{live_server.url}/media/")
    assert (fetch["status"], fetch["content_type"], fetch["size"]) == (
        200,
        "image/png",
        len(picture),
    )
