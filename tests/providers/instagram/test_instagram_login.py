"""Instagram Login (accounts without a Facebook Page) against the stand-in: the authorization
window, the short- then long-lived token, the profile, refresh once 24 hours old, and what such
an account cannot do (delete)."""

from __future__ import annotations

from typing import Any

import pytest

from config import oauth_apps
from providers.base import AccountContext, ErrorKind, ProviderError
from providers.instagram import InstagramAdapter
from tests.providers import OAUTH_REDIRECT
from tests.providers.instagram.standin import DAY, IG_USER, InstagramStandIn
from tests.publishing_support import follow_authorization


def connect(adapter: InstagramAdapter, server: InstagramStandIn) -> AccountContext:
    start = adapter.begin_authorization(
        redirect_uri=OAUTH_REDIRECT, state="st", instance_url=adapter.ig_api_url
    )
    assert "instagram_business_content_publish" in start.authorization_url
    code = follow_authorization(start.authorization_url)["code"]
    connected = adapter.complete_authorization(
        code=code, redirect_uri=OAUTH_REDIRECT, code_verifier="", instance_url=adapter.ig_api_url
    )
    assert connected.external_id == IG_USER["user_id"]
    assert connected.username == IG_USER["username"]
    assert connected.instance_url == adapter.ig_api_url
    assert connected.expires_at is not None
    assert "instagram_business_basic" in connected.granted_scopes
    assert connected.credentials["login"] == "instagram"
    assert server.tokens[connected.credentials["access_token"]]["kind"] == "long"
    return AccountContext(
        external_id=connected.external_id,
        credentials=dict(connected.credentials),
        username=connected.username,
        instance_url=connected.instance_url,
    )


def test_connect_then_refresh_once_a_day_old(
    adapter: InstagramAdapter, server: InstagramStandIn
) -> None:
    account = connect(adapter, server)
    assert adapter.can_refresh(credentials=account.credentials)
    with pytest.raises(ProviderError) as caught:
        adapter.refresh(account=account)
    assert caught.value.kind == ErrorKind.TRANSIENT
    assert server.counters["refreshes"] == 0
    server.age(DAY + 60)
    account.credentials["issued_at"] = str(int(account.credentials["issued_at"]) - DAY - 60)
    refreshed = adapter.refresh(account=account)
    assert refreshed.credentials["access_token"] != account.credentials["access_token"]
    assert refreshed.credentials["ig_user_id"] == IG_USER["user_id"]
    assert refreshed.expires_at is not None
    assert server.counters["refreshes"] == 1


def test_an_expired_token_cannot_be_refreshed_and_asks_to_reconnect(
    adapter: InstagramAdapter, server: InstagramStandIn
) -> None:
    account = connect(adapter, server)
    account.credentials["issued_at"] = "1"
    server.age(61 * DAY)
    with pytest.raises(ProviderError) as caught:
        adapter.refresh(account=account)
    assert caught.value.kind == ErrorKind.AUTH


def test_without_the_instagram_login_mode_connect_is_facebook_logins(
    adapter: InstagramAdapter, server: InstagramStandIn
) -> None:
    start = adapter.begin_authorization(redirect_uri=OAUTH_REDIRECT, state="st")
    assert "/dialog/oauth?" in start.authorization_url  # the Meta app's Facebook Login
    assert "instagram_content_publish" in start.authorization_url
    assert "pages_manage_posts" not in start.authorization_url
    assert not adapter.can_refresh(credentials=server.facebook_account())


def test_an_instagram_login_account_publishes_through_graph_instagram_but_cannot_delete(
    adapter: InstagramAdapter, server: InstagramStandIn
) -> None:
    account = connect(adapter, server)
    media_id = server.store_post("made elsewhere")
    with pytest.raises(ProviderError) as caught:
        adapter.delete(account=account, external_id=media_id)
    assert caught.value.kind == ErrorKind.PERMANENT
    assert "Instagram app" in caught.value.message
    limit = adapter._limit_hold(account, account.credentials["access_token"], {})
    assert limit is None
    assert server.counters["limit_reads"] == 1


def test_instagram_logins_app_comes_from_the_environment(monkeypatch: Any, tmp_path: Any) -> None:
    secret = tmp_path / "ig-secret"
    secret.write_text("ig-from-a-file\n")
    monkeypatch.setenv("HERALD_INSTAGRAM_CLIENT_ID", "77")
    monkeypatch.setenv("HERALD_INSTAGRAM_CLIENT_SECRET_FILE", str(secret))
    monkeypatch.setenv("HERALD_INSTAGRAM_TOKEN_URL", "http://127.0.0.1:11/oauth/access_token")
    app = oauth_apps.oauth_apps_from_env()["instagram"]
    adapter = InstagramAdapter(app=app)
    assert (adapter.ig_client_id, adapter.ig_client_secret) == ("77", "ig-from-a-file")
    assert adapter.ig_token_url == "http://127.0.0.1:11/oauth/access_token"
    assert adapter.ig_authorize_url == "https://www.instagram.com/oauth/authorize"
    assert adapter.ig_api_url == "https://graph.instagram.com"
