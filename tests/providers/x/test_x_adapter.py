"""X adapter against the stand-in X API (real HTTP on 127.0.0.1): the weighted
length, OAuth 2 with PKCE on the operator's app, refresh-token rotation, revoke, posts with
images through the chunked media upload, rate limits, reconcile, delete and metrics; and the
whole path through Herald: connect -> callback -> publish -> ambiguous -> reconcile -> refresh."""

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
    NotSupported,
    ProviderError,
    PublishRequest,
    describe,
)
from providers.x import XAdapter, x_weighted_length
from publishing.models import Account, Destination, Publication
from publishing.services import delivery, publications
from publishing.services.accounts import account_context
from tests.providers import assert_no_secret, media_item, tiny_png
from tests.providers.x.conftest import REDIRECT
from tests.providers.x.standin import CLIENT_SECRET, USER, XStandIn, weighted_length
from tests.publishing_support import API, confirm_start, follow_authorization, gif_bytes
from workspaces.access import Actor
from workspaces.models import User


def post(text: str = "Hello from Herald", key: str = "dest-1", **kwargs: Any) -> PublishRequest:
    return PublishRequest(profile="x.post", text=text, idempotency_key=key, **kwargs)


# --- Catalogue and counting ---------------------------------------------------------------------


def test_registered_with_capability_metadata() -> None:
    assert "x" in PROVIDERS
    described = describe(get_adapter("x"))
    assert described["connection"] == "oauth2"
    assert described["pkce"] is True
    assert described["federated"] is False
    assert set(described["required_scopes"]) == {
        "tweet.read",
        "tweet.write",
        "users.read",
        "media.write",
        "offline.access",
    }
    assert described["supports"]["refresh"] is True
    assert described["supports"]["revoke"] is True
    assert described["supports"]["metrics"] is True
    (profile,) = described["profiles"]
    assert profile["key"] == "x.post"
    assert profile["text_limit"] == 280
    assert profile["media"]["max_count"] == 4


@pytest.mark.parametrize(
    ("text", "weight"),
    [
        ("Hello", 5),
        ("日本語のテキスト", 16),  # CJK: 2 each
        ("한국어", 6),  # Hangul syllables: 2 each
        ("Ünïcödé", 7),  # Latin with diacritics: 1 each
        ("e\u0301", 1),  # NFC first: one é
        ("\u201cquotes\u201d \u2013 dash", 15),  # U+2010-U+201F weigh 1
        ("…", 2),  # U+2026 is outside the light ranges
        ("👍", 2),
        ("👍🏽", 2),  # skin tone: one emoji
        ("👨‍👩‍👧‍👦", 2),  # ZWJ family: one emoji
        ("🇫🇷", 2),  # flag
        ("#️⃣", 2),  # keycap
        ("https://example.com/" + "a" * 200, 23),  # every link is a t.co link
        ("See https://example.com/x.", 4 + 23 + 1),  # trailing punctuation is not the link
        ("example.com and herald.dev/docs", 23 + 5 + 23),  # links without https:// too
        ("file.py, node.js", 23 + 2 + 7),  # .py is a country TLD; .js is not a TLD
        ("mail me: a@b.com", 16),  # an e-mail address is not a link
    ],
)
def test_weighted_length(text: str, weight: int) -> None:
    assert x_weighted_length(text) == weight


def test_limit_is_280_weighted(
    adapter: XAdapter, server: XStandIn, account: AccountContext
) -> None:
    cjk = "漢" * 140  # 140 characters, weight 280: exactly the limit
    assert len(cjk) == 140
    assert x_weighted_length(cjk) == weighted_length(cjk) == 280
    adapter.publish(account=account, request=post(text=cjk))
    link_heavy = "x" * 256 + " " + "https://example.com/" + "p" * 300  # 577 chars, weight 280
    assert x_weighted_length(link_heavy) == 280
    adapter.publish(account=account, request=post(text=link_heavy, key="k2"))
    assert server.posts_accepted == 2
    requests_before = server.requests
    for too_long in ("漢" * 141, "x" * 281, "x" * 279 + "👍"):
        with pytest.raises(ProviderError) as caught:
            adapter.publish(account=account, request=post(text=too_long, key="k3"))
        assert caught.value.kind == ErrorKind.PERMANENT
        assert "280" in caught.value.message
    assert server.requests == requests_before  # refused before any call


# --- Connect, refresh, revoke -------------------------------------------------------------------


def test_oauth_connect_with_pkce_and_the_operators_app(adapter: XAdapter, server: XStandIn) -> None:
    start = adapter.begin_authorization(redirect_uri=REDIRECT, state="st-1")
    url = urlsplit(start.authorization_url)
    assert f"{url.scheme}://{url.netloc}{url.path}" == f"{server.url}/i/oauth2/authorize"
    query = {k: v[0] for k, v in parse_qs(url.query).items()}
    assert query["client_id"] == server.fixtures()["client_id"]
    assert query["code_challenge_method"] == "S256"
    assert query["state"] == "st-1"
    assert "offline.access" in query["scope"].split()
    assert start.app == {}  # nothing to store: the app comes from the environment
    grant_query = follow_authorization(start.authorization_url)
    connected = adapter.complete_authorization(
        code=grant_query["code"], redirect_uri=REDIRECT, code_verifier=start.code_verifier
    )
    assert connected.external_id == USER["id"]
    assert connected.username == USER["username"]
    assert connected.display_name == USER["name"]
    assert connected.profile_url == "https://x.com/herald_hq"
    assert connected.credentials["access_token"]
    assert connected.credentials["refresh_token"]
    assert "tweet.write" in connected.granted_scopes
    assert connected.expires_at is not None
    remaining = connected.expires_at - datetime.now(UTC)
    assert timedelta(hours=1, minutes=59) < remaining <= timedelta(hours=2)


def test_wrong_verifier_is_auth_and_leaks_nothing(adapter: XAdapter) -> None:
    start = adapter.begin_authorization(redirect_uri=REDIRECT, state="s")
    code = follow_authorization(start.authorization_url)["code"]
    with pytest.raises(ProviderError) as caught:
        adapter.complete_authorization(code=code, redirect_uri=REDIRECT, code_verifier="v" * 64)
    assert caught.value.kind == ErrorKind.AUTH
    assert_no_secret(caught.value, [code, CLIENT_SECRET, "v" * 64])


def test_unconfigured_app_cannot_connect(settings: Any) -> None:
    settings.PROVIDER_OAUTH_APPS = {
        **settings.PROVIDER_OAUTH_APPS,
        "x": {"client_id": "", "client_secret": ""},
    }
    with pytest.raises(ProviderError) as caught:
        get_adapter("x").begin_authorization(redirect_uri=REDIRECT, state="s")
    assert caught.value.kind == ErrorKind.PERMANENT
    assert "HERALD_X_CLIENT_ID" in caught.value.message


def test_refresh_rotates_the_refresh_token(
    adapter: XAdapter, server: XStandIn, account: AccountContext
) -> None:
    first = dict(account.credentials)
    assert adapter.can_refresh(credentials=first)
    assert not adapter.can_refresh(credentials={"access_token": "a"})
    fresh = adapter.refresh(account=account)
    assert fresh.credentials["access_token"] != first["access_token"]
    assert fresh.credentials["refresh_token"] != first["refresh_token"]
    assert fresh.external_id == USER["id"]
    assert fresh.expires_at is not None
    assert server.counters["refreshes"] == 1
    # The new pair works; the old refresh token is spent, and presenting it again is refused
    # as a grant to reconnect (X revokes the whole grant on reuse).
    account.credentials = dict(fresh.credentials)
    adapter.publish(account=account, request=post())
    stale = AccountContext(external_id=USER["id"], credentials=first)
    with pytest.raises(ProviderError) as caught:
        adapter.refresh(account=stale)
    assert caught.value.kind == ErrorKind.AUTH
    assert_no_secret(caught.value, [first["refresh_token"], CLIENT_SECRET])
    assert server.counters["refresh_reuse"] == 1


def test_expired_access_token_is_auth(
    adapter: XAdapter, server: XStandIn, account: AccountContext
) -> None:
    server.expire_access_tokens()
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=post())
    assert caught.value.kind == ErrorKind.AUTH
    assert caught.value.action == "reconnect"
    account.credentials = adapter.refresh(account=account).credentials
    adapter.publish(account=account, request=post())
    assert server.posts_accepted == 1


def test_revoke_ends_the_grant(
    adapter: XAdapter, server: XStandIn, account: AccountContext
) -> None:
    adapter.revoke(account=account)
    assert server.counters["tokens_revoked"] >= 1
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=post())
    assert caught.value.kind == ErrorKind.AUTH
    with pytest.raises(ProviderError) as caught:
        adapter.refresh(account=account)
    assert caught.value.kind == ErrorKind.AUTH


# --- Publish ------------------------------------------------------------------------------------


def test_publish_text(adapter: XAdapter, server: XStandIn, account: AccountContext) -> None:
    result = adapter.publish(account=account, request=post())
    assert result.external_id == server.posts[0]["id"]
    assert result.external_url == f"https://x.com/herald_hq/status/{result.external_id}"


def test_images_go_through_the_chunked_upload(
    adapter: XAdapter, server: XStandIn, account: AccountContext, monkeypatch: Any
) -> None:
    monkeypatch.setattr(adapter, "chunk_bytes", 64)  # several APPEND segments per image
    big = tiny_png(40, 30)
    assert len(big) > 64
    images = [media_item(big, alt_text="a red rectangle"), media_item()]
    adapter.publish(account=account, request=post(media=images))
    assert server.counters["media_uploads"] == 2
    assert server.counters["media_segments"] > 2
    accepted = server.posts[0]
    assert accepted["media"] == 2
    assert accepted["sizes"] == [len(big), len(tiny_png())]  # reassembled byte for byte
    assert accepted["alt_texts"] == ["a red rectangle", ""]


def test_gif_is_polled_until_processed(
    adapter: XAdapter, server: XStandIn, account: AccountContext
) -> None:
    server.media_polls = 2
    gif = media_item(gif_bytes(), name="a.gif", mime_type="image/gif")
    adapter.publish(account=account, request=post(media=[gif]))
    assert server.posts[0]["media"] == 1
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=post(text="two", media=[gif, media_item()]))
    assert caught.value.kind == ErrorKind.PERMANENT


def test_media_rules_are_checked_before_any_upload(
    adapter: XAdapter, server: XStandIn, account: AccountContext
) -> None:
    for media in ([media_item() for _ in range(5)], [media_item(mime_type="image/tiff")]):
        with pytest.raises(ProviderError) as caught:
            adapter.publish(account=account, request=post(media=media))
        assert caught.value.kind == ErrorKind.PERMANENT
    assert server.counters["media_uploads"] == 0


@pytest.mark.parametrize("standard_header", [True, False])
def test_rate_limit_reads_x_rate_limit_reset(
    adapter: XAdapter, server: XStandIn, account: AccountContext, standard_header: bool
) -> None:
    server.set_faults(rate_limit={"count": 1, "retry_after": 7, "standard_header": standard_header})
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=post())
    assert caught.value.kind == ErrorKind.RATE_LIMITED
    assert caught.value.action == "retry"
    assert caught.value.retry_after == pytest.approx(7, abs=1.5)
    assert server.posts_accepted == 0
    adapter.publish(account=account, request=post())
    assert server.posts_accepted == 1


def test_duplicate_content_is_permanent_not_auth(
    adapter: XAdapter, server: XStandIn, account: AccountContext
) -> None:
    adapter.publish(account=account, request=post(text="Same words"))
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=post(text="Same words", key="again"))
    assert caught.value.kind == ErrorKind.PERMANENT
    assert caught.value.action == "edit"
    assert "duplicate" in caught.value.message
    assert server.posts_accepted == 1


@pytest.mark.parametrize(
    ("status", "kind"),
    [(500, ErrorKind.TRANSIENT), (503, ErrorKind.TRANSIENT), (504, ErrorKind.AMBIGUOUS)],
)
def test_server_errors(
    adapter: XAdapter, server: XStandIn, account: AccountContext, status: int, kind: ErrorKind
) -> None:
    server.set_faults(server_error={"count": 1, "status": status})
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=post())
    assert caught.value.kind == kind


# --- Reconcile, delete, metrics -----------------------------------------------------------------


def test_timeout_after_accept_is_ambiguous_and_reconciled(
    settings: Any, server: XStandIn, account: AccountContext
) -> None:
    settings.HERALD_PROVIDER_TIMEOUT_SECONDS = 0.5
    adapter = get_adapter("x")
    server.set_faults(accept_then_timeout={"count": 1, "seconds": 1.5})
    text = "Launch notes & links: https://example.com/notes <3"
    request = post(text=text, key="slow-1", first_attempt_at=datetime.now(UTC))
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=request)
    assert caught.value.kind == ErrorKind.AMBIGUOUS
    assert server.posts_accepted == 1
    # The timeline shows the text as X rewrote it (t.co link, &amp;, &lt;): still found.
    found = adapter.reconcile(account=account, request=request)
    assert found is not None
    assert found.external_id == server.posts[0]["id"]
    assert adapter.reconcile(account=account, request=request, external_id=found.external_id)
    assert adapter.reconcile(account=account, request=request, external_id="12345") is None
    assert server.posts_accepted == 1


def test_reconcile_tells_absence_only_when_the_window_was_covered(
    adapter: XAdapter, server: XStandIn, account: AccountContext
) -> None:
    server.store_post("Something else entirely")
    never = post(text="Never sent", key="never", first_attempt_at=datetime.now(UTC))
    assert adapter.reconcile(account=account, request=never) is None
    with server.lock:
        for n in range(320):  # more posts than the pages reconcile reads
            server.posts_by_id[str(10**18 + n)] = server._new_post(
                str(10**18 + n), USER["id"], f"busy {n}", []
            )
    unknown_age = post(text="Never sent", key="unknown-age")  # no first attempt time
    with pytest.raises(NotSupported) as caught:
        adapter.reconcile(account=account, request=unknown_age)
    assert caught.value.kind == ErrorKind.AMBIGUOUS
    assert server.posts_accepted == 0


def test_reconcile_compares_media_count(
    adapter: XAdapter, server: XStandIn, account: AccountContext
) -> None:
    adapter.publish(account=account, request=post(text="With a picture", media=[media_item()]))
    started = datetime.now(UTC)
    found = adapter.reconcile(
        account=account,
        request=post(text="With a picture", media=[media_item()], first_attempt_at=started),
    )
    assert found is not None
    text_only = post(text="With a picture", first_attempt_at=started)
    assert adapter.reconcile(account=account, request=text_only) is None


def test_reconcile_skips_a_post_older_than_the_window_even_when_x_lists_it(
    adapter: XAdapter, server: XStandIn, account: AccountContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The window is checked on each listed post too, not only asked of X (``start_time``)."""
    server.store_post("Said before", created_at="2020-01-01T00:00:00.000Z")
    monkeypatch.setattr("providers.x.adapter._rfc3339", lambda moment: "")  # X filters nothing
    started = datetime.now(UTC)
    assert (
        adapter.reconcile(account=account, request=post("Said before", first_attempt_at=started))
        is None
    )
    assert adapter.reconcile(account=account, request=post("Said before")) is not None


def test_reconcile_without_the_account_id_cannot_search(
    adapter: XAdapter, account: AccountContext
) -> None:
    nameless = AccountContext(external_id="", credentials=account.credentials)
    with pytest.raises(NotSupported) as caught:
        adapter.reconcile(account=nameless, request=post(first_attempt_at=datetime.now(UTC)))
    assert caught.value.message == "X: the account id is unknown; check the account."


def test_delete_is_idempotent(adapter: XAdapter, server: XStandIn, account: AccountContext) -> None:
    result = adapter.publish(account=account, request=post())
    adapter.delete(account=account, external_id=result.external_id)
    adapter.delete(account=account, external_id=result.external_id)
    assert server.counters["posts_deleted"] == 1
    assert (
        adapter.reconcile(account=account, request=post(), external_id=result.external_id) is None
    )


def test_metrics_from_public_metrics(
    adapter: XAdapter, server: XStandIn, account: AccountContext
) -> None:
    result = adapter.publish(account=account, request=post())
    server.set_metrics(
        result.external_id,
        like_count=5,
        reply_count=2,
        retweet_count=3,
        quote_count=1,
        impression_count=120,
    )
    metrics = adapter.metrics(account=account, external_id=result.external_id)
    assert (metrics.likes, metrics.comments, metrics.reposts, metrics.views) == (5, 2, 4, 120)
    with pytest.raises(ProviderError) as caught:
        adapter.metrics(account=account, external_id="404404")
    assert caught.value.kind == ErrorKind.PERMANENT


# --- Through Herald: connect -> callback -> publish -> reconcile -> refresh --------------------


@pytest.mark.django_db
def test_connect_publish_reconcile_and_refresh_through_herald(
    owner_client: APIClient,
    workspace: Any,
    user: User,
    server: XStandIn,
    settings: Any,
    delivery_queue: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    started = owner_client.post(
        f"{API}/accounts/connect",
        {"workspace_id": str(workspace.pk), "provider": "x"},
        format="json",
    )
    assert started.status_code == 200, started.content
    browser = APIClient()
    authorization_url = confirm_start(started.json()["authorization_url"], browser)
    assert authorization_url.startswith(f"{server.url}/i/oauth2/authorize?")
    query = {k: v[0] for k, v in parse_qs(urlsplit(authorization_url).query).items()}
    assert query["redirect_uri"].endswith("/api/v1/accounts/oauth/callback")
    assert query["code_challenge_method"] == "S256"

    callback = browser.get(
        f"{API}/accounts/oauth/callback", follow_authorization(authorization_url)
    )
    assert callback.status_code in (200, 302, 303), callback.content
    stored = Account.objects.get(workspace=workspace, provider="x")
    assert stored.status == Account.Status.ACTIVE
    assert stored.external_id == USER["id"]
    assert stored.username == USER["username"]
    assert stored.profile_url == "https://x.com/herald_hq"
    # The API base is the account's host: per-host limits and 429 pauses apply to it.
    assert stored.instance_url == server.url
    assert delivery.provider_host("x", account_context(stored)) == f"127.0.0.1:{server.port}"
    assert "offline.access" in stored.granted_scopes
    secrets = credentials.decrypt(stored.credentials_encrypted)
    assert secrets["refresh_token"]
    assert secrets["access_token"] not in stored.credentials_encrypted

    # Publish through the delivery service; the first attempt times out after X accepted it.
    actor = Actor(user=user)
    publication = publications.publication_create(
        actor=actor,
        workspace_id=workspace.pk,
        text="Herald on X: https://example.com/launch",
        destinations=[{"account_id": str(stored.pk)}],
    )
    with django_capture_on_commit_callbacks(execute=True):
        publications.publication_publish_now(
            actor=actor, publication_id=publication.pk, expected_revision=1
        )
    destination = Destination.objects.get(publication=publication)
    settings.HERALD_PROVIDER_TIMEOUT_SECONDS = 0.5
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
    assert destination.external_url.startswith("https://x.com/herald_hq/status/")
    assert server.posts_accepted == 1  # found, never sent twice
    publication.refresh_from_db()
    assert publication.status == Publication.Status.PUBLISHED

    # The token lifecycle refreshes through the adapter: the rotated refresh token is stored
    # and the account goes on posting with the new pair.
    from publishing.services import tokens

    assert tokens.account_token_refresh(account_id=stored.pk, force=True) == "refreshed"
    stored.refresh_from_db()
    rotated = credentials.decrypt(stored.credentials_encrypted)
    assert rotated["refresh_token"] != secrets["refresh_token"]
    assert rotated["access_token"] != secrets["access_token"]
    assert stored.token_expires_at is not None
    assert stored.token_expires_at > timezone.now() + timedelta(hours=1)
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
def test_connect_needs_the_operators_app(
    owner_client: APIClient, workspace: Any, settings: Any
) -> None:
    settings.PROVIDER_OAUTH_APPS = {
        **settings.PROVIDER_OAUTH_APPS,
        "x": {**settings.PROVIDER_OAUTH_APPS["x"], "client_id": "", "client_secret": ""},
    }
    response = owner_client.post(
        f"{API}/accounts/connect",
        {"workspace_id": str(workspace.pk), "provider": "x"},
        format="json",
    )
    assert response.status_code == 409
    assert response.json()["code"] == "readiness_blocked"
    assert "HERALD_X_CLIENT_ID" in response.json()["detail"]


@pytest.mark.django_db
def test_denied_consent_and_disconnect_through_herald(
    owner_client: APIClient, workspace: Any, server: XStandIn
) -> None:
    browser = APIClient()

    def start() -> str:
        response = owner_client.post(
            f"{API}/accounts/connect",
            {"workspace_id": str(workspace.pk), "provider": "x"},
            format="json",
        )
        assert response.status_code == 200, response.content
        return confirm_start(str(response.json()["authorization_url"]), browser)

    server.deny = True
    location = requests.get(start(), allow_redirects=False, timeout=5).headers["Location"]
    denied = {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}
    assert denied["error"] == "access_denied"
    response = browser.get(f"{API}/accounts/oauth/callback", denied)
    assert response.status_code == 403
    assert response.json()["code"] == "oauth_denied"
    assert not Account.objects.filter(provider="x").exists()
    assert server.counters["tokens_issued"] == 0

    server.deny = False
    callback = browser.get(f"{API}/accounts/oauth/callback", follow_authorization(start()))
    assert callback.status_code in (200, 302, 303), callback.content
    stored = Account.objects.get(workspace=workspace, provider="x")
    tokens = credentials.decrypt(stored.credentials_encrypted)
    assert owner_client.delete(f"{API}/accounts/{stored.pk}").status_code == 204
    stored.refresh_from_db()
    assert stored.status == Account.Status.DISCONNECTED
    assert stored.credentials_encrypted == ""
    assert server.counters["tokens_revoked"] == 2  # the refresh token, then the access token
    with server.lock:  # the grant is gone at X
        assert tokens["access_token"] not in server.access
        assert tokens["refresh_token"] not in server.refresh


@pytest.mark.django_db
def test_rate_limit_pauses_the_x_host_for_the_delivery_service(
    owner_client: APIClient,
    workspace: Any,
    user: User,
    server: XStandIn,
    delivery_queue: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    started = owner_client.post(
        f"{API}/accounts/connect",
        {"workspace_id": str(workspace.pk), "provider": "x"},
        format="json",
    )
    browser = APIClient()
    grant = follow_authorization(started.json()["authorization_url"], browser)
    browser.get(f"{API}/accounts/oauth/callback", grant)
    stored = Account.objects.get(workspace=workspace, provider="x")
    actor = Actor(user=user)
    publication = publications.publication_create(
        actor=actor,
        workspace_id=workspace.pk,
        text="Rate limited once",
        destinations=[{"account_id": str(stored.pk)}],
    )
    with django_capture_on_commit_callbacks(execute=True):
        publications.publication_publish_now(
            actor=actor, publication_id=publication.pk, expected_revision=1
        )
    # Only X's own header says when to come back (no Retry-After).
    server.set_faults(rate_limit={"count": 1, "retry_after": 60, "standard_header": False})
    destination = Destination.objects.get(publication=publication)
    with django_capture_on_commit_callbacks(execute=True):
        delivery.delivery_send(destination_id=destination.pk)
    destination.refresh_from_db()
    assert destination.status == Destination.Status.RETRY_WAIT
    assert destination.error_kind == "rate_limited"
    assert destination.next_attempt_at is not None
    assert destination.next_attempt_at >= timezone.now() + timedelta(seconds=50)
    host = delivery.provider_host("x", account_context(stored))
    assert delivery.host_paused_until(host) >= time.time() + 50
    assert server.posts_accepted == 0
