"""LinkedIn adapter against the stand-in LinkedIn API (real HTTP on 127.0.0.1): OAuth 2
on the operator's app, the versioned REST headers, the little-format escaping, posts with images
through the Images API, organization pages, rate limits, reconcile, delete and metrics; and the
whole path through Herald: connect -> callback -> publish -> ambiguous -> reconcile, and the
no-refresh expiry that asks for a reconnect."""

from __future__ import annotations

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
from providers.linkedin import LinkedInAdapter, escape_little
from publishing.models import Account, Destination, Publication
from publishing.services import delivery, publications, tokens
from tests.providers import OAUTH_REDIRECT, assert_no_secret, grant, media_item, tiny_png
from tests.providers.linkedin.standin import CLIENT_SECRET, MEMBER, ORGANIZATION, LinkedInStandIn
from tests.publishing_support import API, confirm_start, follow_authorization
from workspaces.access import Actor
from workspaces.models import User

REDIRECT = OAUTH_REDIRECT
PERSON = f"urn:li:person:{MEMBER['sub']}"
ORG = f"urn:li:organization:{ORGANIZATION['id']}"
READ_SCOPES = "r_member_social w_organization_social r_organization_social rw_organization_admin"


def use_scopes(settings: Any, server: LinkedInStandIn, scopes: str) -> LinkedInAdapter:
    settings.PROVIDER_OAUTH_APPS = {
        **settings.PROVIDER_OAUTH_APPS,
        "linkedin": server.app_settings(scopes),
    }
    adapter = get_adapter("linkedin")
    assert isinstance(adapter, LinkedInAdapter)
    return adapter


def post(text: str = "Hello from Herald", key: str = "dest-1", **kwargs: Any) -> PublishRequest:
    return PublishRequest(profile="linkedin.post", text=text, idempotency_key=key, **kwargs)


# --- Catalogue and text ---------------------------------------------------------------------


def test_registered_with_capability_metadata() -> None:
    assert "linkedin" in PROVIDERS
    described = describe(get_adapter("linkedin"))
    assert described["connection"] == "oauth2"
    assert described["pkce"] is False
    assert set(described["required_scopes"]) == {"openid", "profile", "w_member_social"}
    assert described["supports"]["revoke"] is True
    assert described["supports"]["destination_options"] is True
    (profile,) = described["profiles"]
    assert profile["key"] == "linkedin.post"
    assert profile["text_limit"] == 3000
    assert [o["name"] for o in profile["options"]] == ["author"]


@pytest.mark.parametrize(
    ("text", "escaped"),
    [
        ("plain words.", "plain words."),
        ("a (b) [c] {d} <e>", "a \\(b\\) \\[c\\] \\{d\\} \\<e\\>"),
        ("a_b *c* ~d~ e|f @g \\h", "a\\_b \\*c\\* \\~d\\~ e\\|f \\@g \\\\h"),
        ("#launch day, issue #", "#launch day, issue \\#"),  # hashtags stay hashtags
        ("C# and x#y", "C\\# and x\\#y"),
        ("see https://ex.com/a_(b) now", "see https://ex.com/a_(b) now"),  # links as written
    ],
)
def test_little_format_escaping(text: str, escaped: str) -> None:
    assert escape_little(text) == escaped


def test_text_limit_is_3000(
    adapter: LinkedInAdapter, server: LinkedInStandIn, account: AccountContext
) -> None:
    adapter.publish(account=account, request=post(text="(" * 3000))  # 6,000 once escaped
    assert server.posts[0]["text"] == "(" * 3000
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=post(text="x" * 3001, key="k2"))
    assert caught.value.kind == ErrorKind.PERMANENT
    assert "3000" in caught.value.message
    assert server.posts_accepted == 1


# --- Connect, refresh, revoke ---------------------------------------------------------------


def test_connect_on_the_operators_app(adapter: LinkedInAdapter, server: LinkedInStandIn) -> None:
    start = adapter.begin_authorization(redirect_uri=REDIRECT, state="st-1")
    url = urlsplit(start.authorization_url)
    assert f"{url.scheme}://{url.netloc}{url.path}" == f"{server.url}/oauth/v2/authorization"
    query = {k: v[0] for k, v in parse_qs(url.query).items()}
    assert query["scope"] == "openid profile w_member_social"
    assert "code_challenge" not in query
    assert start.code_verifier == ""
    code = follow_authorization(start.authorization_url)["code"]
    connected = adapter.complete_authorization(code=code, redirect_uri=REDIRECT, code_verifier="")
    assert connected.external_id == MEMBER["sub"]
    assert connected.display_name == MEMBER["name"]
    assert connected.granted_scopes == ("openid", "profile", "w_member_social")
    assert "refresh_token" not in connected.credentials  # most apps get none
    assert not adapter.can_refresh(credentials=connected.credentials)
    assert connected.expires_at is not None
    assert connected.expires_at - datetime.now(UTC) > timedelta(days=59)
    with pytest.raises(ProviderError) as caught:  # a code is single-use
        adapter.complete_authorization(code=code, redirect_uri=REDIRECT, code_verifier="")
    assert caught.value.kind == ErrorKind.AUTH
    assert_no_secret(caught.value, [code, CLIENT_SECRET])


def test_refresh_where_linkedin_issues_refresh_tokens(
    adapter: LinkedInAdapter, server: LinkedInStandIn
) -> None:
    server.issue_refresh = True
    account = grant(adapter)
    assert adapter.can_refresh(credentials=account.credentials)
    fresh = adapter.refresh(account=account)
    assert fresh.credentials["access_token"] != account.credentials["access_token"]
    assert fresh.credentials["refresh_token"] == account.credentials["refresh_token"]
    account.credentials = dict(fresh.credentials)
    adapter.publish(account=account, request=post())
    with server.lock:
        server.refresh.clear()
    with pytest.raises(ProviderError) as caught:
        adapter.refresh(account=account)
    assert caught.value.kind == ErrorKind.AUTH


def test_revoke_ends_the_grant(
    adapter: LinkedInAdapter, server: LinkedInStandIn, account: AccountContext
) -> None:
    adapter.revoke(account=account)
    assert server.counters["tokens_revoked"] == 1
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=post())
    assert caught.value.kind == ErrorKind.AUTH


# --- Publish --------------------------------------------------------------------------------


def test_publish_text_with_versioned_headers_and_escaping(
    adapter: LinkedInAdapter, server: LinkedInStandIn, account: AccountContext
) -> None:
    text = "Release (v2) is out: #herald *now* - see https://example.com/notes_(1)"
    result = adapter.publish(account=account, request=post(text=text))
    accepted = server.posts[0]
    assert result.external_id == accepted["id"]
    assert result.external_id.startswith("urn:li:share:")
    assert result.external_url == f"https://www.linkedin.com/feed/update/{result.external_id}/"
    assert accepted["author"] == PERSON
    assert accepted["text"] == text  # shown as written
    assert accepted["unescaped"] == []  # no reserved character left raw
    assert accepted["version"]
    assert server.counters["version_missing"] == 0


def test_images_through_the_images_api(
    adapter: LinkedInAdapter, server: LinkedInStandIn, account: AccountContext
) -> None:
    big = tiny_png(40, 30)
    adapter.publish(account=account, request=post(media=[media_item(big, alt_text="red")]))
    two = [media_item(), media_item(alt_text="second")]
    adapter.publish(account=account, request=post(text="Two", key="k2", media=two))
    assert server.counters["media_uploads"] == 3
    single, multi = server.posts
    assert (single["media"], single["sizes"], single["alt_texts"]) == (1, [len(big)], ["red"])
    assert (multi["media"], multi["alt_texts"]) == (2, ["", "second"])


def test_organization_pages_as_destination_options(settings: Any, server: LinkedInStandIn) -> None:
    member_only = grant(get_adapter("linkedin"))  # type: ignore[arg-type]
    options = get_adapter("linkedin").destination_options(account=member_only)
    assert options == {"author": [{"label": MEMBER["name"], "value": PERSON}]}
    adapter = use_scopes(settings, server, READ_SCOPES)
    account = grant(adapter)
    options = adapter.destination_options(account=account)
    assert options["author"][1] == {"label": ORGANIZATION["localizedName"], "value": ORG}
    adapter.publish(account=account, request=post(options={"author": ORG}, media=[media_item()]))
    assert server.posts[0]["author"] == ORG
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=post(options={"author": "urn:li:person:zz"}))
    assert caught.value.kind == ErrorKind.PERMANENT


def test_rate_limit_and_errors(
    adapter: LinkedInAdapter, server: LinkedInStandIn, account: AccountContext
) -> None:
    server.set_faults(rate_limit={"count": 1, "retry_after": 7})
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=post())
    assert caught.value.kind == ErrorKind.RATE_LIMITED
    assert caught.value.retry_after == pytest.approx(7)
    server.set_faults(permanent={"count": 1, "message": "ERROR :: /commentary :: refused"})
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=post())
    assert caught.value.kind == ErrorKind.PERMANENT
    assert "refused" in caught.value.message
    server.set_faults(server_error={"count": 1, "status": 504})
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=post())
    assert caught.value.kind == ErrorKind.AMBIGUOUS
    server.expire_access_tokens()
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=post())
    assert caught.value.kind == ErrorKind.AUTH
    assert server.posts_accepted == 0


def test_missing_version_header_is_refused_by_the_stand_in(
    server: LinkedInStandIn, account: AccountContext
) -> None:
    response = requests.post(
        f"{server.url}/rest/posts",
        json={"author": PERSON, "commentary": "x"},
        headers={"Authorization": f"Bearer {account.credentials['access_token']}"},
        timeout=5,
    )
    assert response.status_code == 400
    assert response.json()["code"] == "VERSION_MISSING"


# --- Reconcile, delete, metrics -------------------------------------------------------------


def test_ambiguous_post_is_reconciled_from_the_authors_posts(
    settings: Any, server: LinkedInStandIn
) -> None:
    adapter = use_scopes(settings, server, READ_SCOPES)
    account = grant(adapter)
    settings.HERALD_PROVIDER_TIMEOUT_SECONDS = 0.5
    adapter = use_scopes(settings, server, READ_SCOPES)  # with the short timeout
    server.set_faults(accept_then_timeout={"count": 1, "seconds": 1.5})
    request = post(text="Notes (draft) #launch", key="slow", first_attempt_at=datetime.now(UTC))
    with pytest.raises(ProviderError) as caught:
        adapter.publish(account=account, request=request)
    assert caught.value.kind == ErrorKind.AMBIGUOUS
    found = adapter.reconcile(account=account, request=request)
    assert found is not None
    assert found.external_id == server.posts[0]["id"]
    assert adapter.reconcile(account=account, request=request, external_id=found.external_id)
    gone = "urn:li:share:1"
    assert adapter.reconcile(account=account, request=request, external_id=gone) is None
    never = post(text="Never sent", key="n", first_attempt_at=datetime.now(UTC))
    assert adapter.reconcile(account=account, request=never) is None
    assert server.posts_accepted == 1


def test_reconcile_without_read_permission_says_why(
    adapter: LinkedInAdapter, account: AccountContext
) -> None:
    with pytest.raises(NotSupported) as caught:
        adapter.reconcile(account=account, request=post(first_attempt_at=datetime.now(UTC)))
    assert caught.value.kind == ErrorKind.AMBIGUOUS
    assert "r_member_social" in caught.value.message


def test_delete_and_metrics(
    adapter: LinkedInAdapter, server: LinkedInStandIn, account: AccountContext
) -> None:
    result = adapter.publish(account=account, request=post())
    server.set_social(result.external_id, likes=4, comments=2)
    metrics = adapter.metrics(account=account, external_id=result.external_id)
    assert (metrics.likes, metrics.comments) == (4, 2)
    adapter.delete(account=account, external_id=result.external_id)
    adapter.delete(account=account, external_id=result.external_id)
    assert server.counters["posts_deleted"] == 1
    with pytest.raises(ProviderError) as caught:
        adapter.metrics(account=account, external_id=result.external_id)
    assert caught.value.kind == ErrorKind.PERMANENT


# --- Through Herald -------------------------------------------------------------------------


def connect(client: APIClient, workspace: Any, server: LinkedInStandIn) -> Account:
    started = client.post(
        f"{API}/accounts/connect",
        {"workspace_id": str(workspace.pk), "provider": "linkedin"},
        format="json",
    )
    assert started.status_code == 200, started.content
    browser = APIClient()
    authorization_url = confirm_start(started.json()["authorization_url"], browser)
    assert authorization_url.startswith(f"{server.url}/oauth/v2/authorization?")
    callback = browser.get(
        f"{API}/accounts/oauth/callback", follow_authorization(authorization_url)
    )
    assert callback.status_code in (200, 302, 303), callback.content
    return Account.objects.get(workspace=workspace, provider="linkedin")


@pytest.mark.django_db
def test_connect_publish_ambiguous_and_reconcile_through_herald(
    owner_client: APIClient,
    workspace: Any,
    user: User,
    server: LinkedInStandIn,
    settings: Any,
    delivery_queue: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    use_scopes(settings, server, "r_member_social")
    stored = connect(owner_client, workspace, server)
    assert stored.status == Account.Status.ACTIVE
    assert stored.external_id == MEMBER["sub"]
    assert "r_member_social" in stored.granted_scopes
    assert stored.token_expires_at is not None
    secrets = credentials.decrypt(stored.credentials_encrypted)
    assert secrets["access_token"] not in stored.credentials_encrypted

    actor = Actor(user=user)
    publication = publications.publication_create(
        actor=actor,
        workspace_id=workspace.pk,
        text="Herald on LinkedIn (beta): https://example.com/launch",
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
    assert server.posts_accepted == 1
    publication.refresh_from_db()
    assert publication.status == Publication.Status.PUBLISHED


@pytest.mark.django_db
def test_without_refresh_the_account_asks_for_a_reconnect_before_expiry(
    owner_client: APIClient, workspace: Any, server: LinkedInStandIn, settings: Any
) -> None:
    stored = connect(owner_client, workspace, server)
    assert tokens.account_token_refresh(account_id=stored.pk, force=True) == "not_refreshable"
    assert tokens.account_tokens_refresh_due()["reconnect_required"] == 0  # 60 days ahead
    soon = timezone.now() + timedelta(days=settings.HERALD_RECONNECT_WARNING_DAYS - 1)
    Account.objects.filter(pk=stored.pk).update(token_expires_at=soon)
    assert tokens.account_tokens_refresh_due()["reconnect_required"] == 1
    stored.refresh_from_db()
    assert stored.status == Account.Status.RECONNECT_REQUIRED
    assert "LinkedIn" in stored.status_reason
    assert "reconnect" in stored.status_reason
    assert server.counters["refreshes"] == 0


@pytest.mark.django_db
def test_disconnect_revokes_at_linkedin(
    owner_client: APIClient, workspace: Any, server: LinkedInStandIn
) -> None:
    stored = connect(owner_client, workspace, server)
    access = credentials.decrypt(stored.credentials_encrypted)["access_token"]
    assert owner_client.delete(f"{API}/accounts/{stored.pk}").status_code == 204
    stored.refresh_from_db()
    assert stored.status == Account.Status.DISCONNECTED
    assert stored.credentials_encrypted == ""
    with server.lock:
        assert access not in server.access


@pytest.mark.django_db
def test_cancelled_consent_connects_nothing(
    owner_client: APIClient, workspace: Any, server: LinkedInStandIn
) -> None:
    server.deny = True
    started = owner_client.post(
        f"{API}/accounts/connect",
        {"workspace_id": str(workspace.pk), "provider": "linkedin"},
        format="json",
    )
    browser = APIClient()
    location = requests.get(
        confirm_start(started.json()["authorization_url"], browser),
        allow_redirects=False,
        timeout=5,
    ).headers["Location"]
    denied = {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}
    assert denied["error"] == "user_cancelled_authorize"
    response = browser.get(f"{API}/accounts/oauth/callback", denied)
    assert response.status_code == 403
    assert response.json()["code"] == "oauth_denied"
    # Not an RFC 6749 code: Herald's generic words, not the provider's.
    assert response.json()["detail"] == "The provider did not grant access."
    assert not Account.objects.filter(provider="linkedin").exists()
    assert server.counters["tokens_issued"] == 0
