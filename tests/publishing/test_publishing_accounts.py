"""Connected accounts: provider catalogue, connect per provider against its stand-in
(Mastodon OAuth with PKCE, Bluesky app password, Discord webhook, Telegram bot), list, get,
disconnect, destination options, capability resolution, plan limits, access, and credentials
encrypted at rest with key rotation."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit, urlunsplit

import pytest
import time_machine
from cryptography.fernet import Fernet
from django.core.management import call_command
from django.db import connection
from django.utils import timezone
from rest_framework.test import APIClient

from providers import PROVIDERS, credentials
from publishing.models import Account, OAuthState, ProviderApp
from publishing.services.accounts import account_context
from tests.endpoint_support import (
    MEMBERS_ONLY,
    DetailTests,
    WorkspaceListTests,
    WorkspaceResourceTests,
)
from tests.problem_asserts import assert_invalid, assert_problem
from tests.providers.bluesky.standin import BlueskyStandIn
from tests.providers.discord_webhook.standin import DiscordWebhookStandIn
from tests.providers.mastodon.standin import FIXTURE_TOKEN, MastodonStandIn
from tests.providers.telegram.standin import BOT_TOKEN, TelegramStandIn
from tests.publishing_support import (
    API,
    STANDINS,
    confirm_start,
    connect,
    connect_fields,
    follow_authorization,
    make_account,
    ok,
    point_settings_at,
)
from workspaces.access import Actor
from workspaces.models import Plan, User, WorkspaceMembership

pytestmark = pytest.mark.django_db

CALLBACK = "http://testserver/api/v1/accounts/oauth/callback"


@pytest.fixture
def member_client(
    make_user: Callable[..., User], workspace: Any, bearer_client: Callable[..., APIClient]
) -> Callable[[str], APIClient]:
    def make(role: str) -> APIClient:
        member = make_user()
        WorkspaceMembership.objects.create(workspace=workspace, user=member, role=role)
        return bearer_client(member)

    return make


def start_mastodon(client: APIClient, workspace: Any, server: MastodonStandIn) -> dict[str, Any]:
    body: dict[str, Any] = ok(
        client.post(
            f"{API}/accounts/connect",
            {
                "workspace_id": str(workspace.pk),
                "provider": "mastodon",
                "instance_url": server.url,
            },
            format="json",
        )
    )
    return body


# --- Catalogue ------------------------------------------------------------------------------------


def test_catalogue_lists_every_provider_with_capabilities_and_readiness(
    owner_client: APIClient, workspace: Any, settings: Any
) -> None:
    body = ok(owner_client.get(f"{API}/account-providers", {"workspace_id": str(workspace.pk)}))
    assert body["$schema"].endswith("/schemas/ProviderCatalogue.json") or body["$schema"].endswith(
        ".json"
    )
    entries = {entry["provider"]: entry for entry in body["providers"]}
    assert set(entries) == set(PROVIDERS)
    assert entries["mastodon"]["connection"] == "oauth2"
    assert entries["mastodon"]["capabilities"]["pkce"] is True
    assert entries["mastodon"]["capabilities"]["federated"] is True
    assert entries["bluesky"]["capabilities"]["credential_fields"] == ["handle", "app_password"]
    assert entries["discord_webhook"]["connection"] == "webhook"
    assert entries["telegram"]["capabilities"]["credential_fields"] == ["bot_token", "chat_id"]
    mastodon_post = entries["mastodon"]["capabilities"]["profiles"][0]
    assert mastodon_post["key"] == "mastodon.post"
    assert mastodon_post["text_limit"] == 500
    assert mastodon_post["media"]["max_count"] == 4
    assert {o["name"] for o in mastodon_post["options"]} == {"visibility", "language"}
    assert [p["key"] for p in entries["telegram"]["capabilities"]["profiles"]] == [
        "telegram.message",
        "telegram.photo",
    ]
    assert entries["bluesky"]["capabilities"]["profiles"][0]["text_limit"] == 300
    for entry in entries.values():
        if entry["provider"] in settings.PROVIDER_OAUTH_APPS:
            # The operator's OAuth app (HERALD_<P>_CLIENT_ID/_SECRET) is not set in the tests.
            assert entry["readiness"]["state"] == "needs_configuration"
            continue
        assert entry["readiness"]["state"] == "healthy"
        assert entry["readiness"]["blockers"] == []


def test_disabled_provider_is_blocked_in_catalogue_and_connect(
    owner_client: APIClient, workspace: Any, settings: Any
) -> None:
    settings.HERALD_DISABLED_PROVIDERS = ["mastodon"]
    body = ok(owner_client.get(f"{API}/account-providers", {"workspace_id": str(workspace.pk)}))
    decision = next(e for e in body["providers"] if e["provider"] == "mastodon")["readiness"]
    assert decision["state"] == "disabled"
    assert decision["executable"] is False
    assert [b["code"] for b in decision["blockers"]] == ["provider_disabled"]
    assert (
        next(e for e in body["providers"] if e["provider"] == "bluesky")["readiness"]["state"]
        == "healthy"
    )
    response = owner_client.post(
        f"{API}/accounts/connect",
        {
            "workspace_id": str(workspace.pk),
            "provider": "mastodon",
            "instance_url": "https://mastodon.example",
        },
        format="json",
    )
    assert_problem(response, 409, "readiness_blocked")


def test_unknown_provider_is_a_422(owner_client: APIClient, workspace: Any) -> None:
    response = owner_client.post(
        f"{API}/accounts/connect",
        {"workspace_id": str(workspace.pk), "provider": "myspace"},
        format="json",
    )
    assert_invalid(response, "body.provider")


# --- Mastodon: OAuth 2 with PKCE ------------------------------------------------------------------


def test_mastodon_oauth_connect_with_pkce(
    owner_client: APIClient, workspace: Any, mastodon: MastodonStandIn, user: User
) -> None:
    started = start_mastodon(owner_client, workspace, mastodon)
    assert started["account"] is None
    start = urlsplit(started["authorization_url"])  # Herald's start page binds the browser
    assert f"{start.scheme}://{start.netloc}{start.path}".startswith(
        "http://testserver/connections/authorize/"
    )
    browser = APIClient()
    url = urlsplit(confirm_start(started["authorization_url"], browser))
    assert f"{url.scheme}://{url.netloc}" == mastodon.url
    assert url.path == "/oauth/authorize"
    query = {k: v[0] for k, v in parse_qs(url.query).items()}
    assert query["response_type"] == "code"
    assert query["code_challenge_method"] == "S256"
    assert len(query["code_challenge"]) == 43  # base64url SHA-256, no padding
    assert len(query["state"]) >= 32
    assert query["redirect_uri"] == CALLBACK
    assert set(query["scope"].split()) == {"read", "write"}
    # Only the hash of the state is stored, and the PKCE verifier is encrypted.
    pending = OAuthState.objects.get()
    assert pending.state_hash != query["state"]
    assert pending.user == user
    assert credentials.decrypt(pending.code_verifier_encrypted)["v"]

    grant = follow_authorization(urlunsplit(url))
    assert grant["state"] == query["state"]
    account = ok(browser.get(f"{API}/accounts/oauth/callback", grant))
    assert account["provider"] == "mastodon"
    assert account["username"] == "herald@127.0.0.1"
    assert account["display_name"] == "Herald Test"
    assert account["instance_url"] == mastodon.url
    assert account["status"] == "active"
    assert account["workspace_id"] == str(workspace.pk)
    assert "write" in account["granted_scopes"]
    stored = Account.objects.get(pk=account["id"])
    assert stored.connected_by == user
    assert stored.app is not None
    assert OAuthState.objects.count() == 0

    # The state is single use.
    assert_problem(browser.get(f"{API}/accounts/oauth/callback", grant), 404, "not_found")
    # The account is listed.
    listed = ok(owner_client.get(f"{API}/accounts", {"workspace_id": str(workspace.pk)}))
    assert [a["id"] for a in listed["items"]] == [account["id"]]


def test_mastodon_unknown_or_expired_state_is_404(
    owner_client: APIClient, workspace: Any, mastodon: MastodonStandIn
) -> None:
    assert_problem(
        APIClient().get(f"{API}/accounts/oauth/callback", {"state": "nope", "code": "x"}),
        404,
        "not_found",
    )
    started = start_mastodon(owner_client, workspace, mastodon)
    browser = APIClient()
    grant = follow_authorization(started["authorization_url"], browser)
    with time_machine.travel(timezone.now() + timedelta(minutes=16)):
        assert_problem(browser.get(f"{API}/accounts/oauth/callback", grant), 404, "not_found")
    assert not Account.objects.exists()


def test_mastodon_denied_authorization(
    owner_client: APIClient, workspace: Any, mastodon: MastodonStandIn
) -> None:
    started = start_mastodon(owner_client, workspace, mastodon)
    browser = APIClient()
    provider_url = confirm_start(started["authorization_url"], browser)
    state = parse_qs(urlsplit(provider_url).query)["state"][0]
    response = browser.get(
        f"{API}/accounts/oauth/callback", {"state": state, "error": "access_denied"}
    )
    assert_problem(response, 403, "oauth_denied")
    assert not Account.objects.exists()


def test_mastodon_app_registration_is_reused_per_instance(
    owner_client: APIClient, workspace: Any, mastodon: MastodonStandIn
) -> None:
    first = connect(owner_client, workspace, "mastodon", mastodon)
    assert mastodon.counters["apps_registered"] == 1
    second_start = start_mastodon(owner_client, workspace, mastodon)
    assert mastodon.counters["apps_registered"] == 1  # same instance: same app
    browser = APIClient()
    grant = follow_authorization(second_start["authorization_url"], browser)
    again = ok(browser.get(f"{API}/accounts/oauth/callback", grant))
    assert again["id"] == first["id"]  # the same external account is refreshed, not duplicated
    assert ProviderApp.objects.count() == 1
    assert Account.objects.count() == 1


def test_mastodon_registration_per_callback_origin(
    owner_client: APIClient, workspace: Any, mastodon: MastodonStandIn, settings: Any
) -> None:
    """An app registration is bound to its redirect URI: a second public origin registers its
    own app, and its callback completes with that app (not the first origin's)."""
    settings.ALLOWED_HOSTS = ["testserver", "herald.example"]
    connect(owner_client, workspace, "mastodon", mastodon)
    response = owner_client.post(
        f"{API}/accounts/connect",
        {
            "workspace_id": str(workspace.pk),
            "provider": "mastodon",
            "instance_url": mastodon.url + "/",
        },
        format="json",
        SERVER_NAME="herald.example",
    )
    started = ok(response)
    assert mastodon.counters["apps_registered"] == 2
    assert started["authorization_url"].startswith("http://herald.example/connections/")
    browser = APIClient(SERVER_NAME="herald.example")
    provider_url = confirm_start(started["authorization_url"], browser)
    assert "redirect_uri=http%3A%2F%2Fherald.example%2F" in provider_url
    grant = follow_authorization(provider_url)
    account = ok(browser.get(f"{API}/accounts/oauth/callback", grant))
    assert account["provider"] == "mastodon"
    assert ProviderApp.objects.count() == 2


def test_mastodon_callback_is_on_the_public_url_when_set(
    owner_client: APIClient, workspace: Any, mastodon: MastodonStandIn, settings: Any
) -> None:
    """Behind a reverse proxy the forwarded Host can lack the public port (nginx's ``$host``) and
    the scheme can be the proxy's; the callback registered with the provider is on
    HERALD_PUBLIC_URL, the origin the user's browser comes back to."""
    settings.HERALD_PUBLIC_URL = "https://herald.example.com:8443"
    started = start_mastodon(owner_client, workspace, mastodon)
    # The start page is there too, so that its nonce cookie reaches the callback.
    assert started["authorization_url"].startswith(
        "https://herald.example.com:8443/connections/authorize/"
    )
    provider_url = confirm_start(started["authorization_url"], APIClient())
    query = parse_qs(urlsplit(provider_url).query)
    assert query["redirect_uri"] == [
        "https://herald.example.com:8443/api/v1/accounts/oauth/callback"
    ]
    assert ProviderApp.objects.get().redirect_uri == query["redirect_uri"][0]


def test_oauth_callback_rechecks_the_role_of_the_user_who_started(
    owner_client: APIClient, workspace: Any, mastodon: MastodonStandIn, user: User
) -> None:
    started = start_mastodon(owner_client, workspace, mastodon)
    WorkspaceMembership.objects.filter(workspace=workspace, user=user).update(role="viewer")
    browser = APIClient()
    grant = follow_authorization(started["authorization_url"], browser)
    assert_problem(browser.get(f"{API}/accounts/oauth/callback", grant), 403, "role_too_low")
    assert not Account.objects.exists()


def test_mastodon_instance_url_is_required(owner_client: APIClient, workspace: Any) -> None:
    response = owner_client.post(
        f"{API}/accounts/connect",
        {"workspace_id": str(workspace.pk), "provider": "mastodon"},
        format="json",
    )
    assert_invalid(response, "body.instance_url")


def test_mastodon_unreachable_instance_is_502(
    owner_client: APIClient, workspace: Any, provider_settings: Any
) -> None:
    with MastodonStandIn() as server:
        url = server.url
    response = owner_client.post(
        f"{API}/accounts/connect",
        {
            "workspace_id": str(workspace.pk),
            "provider": "mastodon",
            "instance_url": url,
        },
        format="json",
    )
    assert_problem(response, 502, "provider_error")


def test_mastodon_private_instance_is_refused_in_production(
    owner_client: APIClient, workspace: Any, settings: Any
) -> None:
    settings.HERALD_ALLOW_PRIVATE_PROVIDER_URLS = False
    response = owner_client.post(
        f"{API}/accounts/connect",
        {
            "workspace_id": str(workspace.pk),
            "provider": "mastodon",
            "instance_url": "http://127.0.0.1:9",
        },
        format="json",
    )
    assert_invalid(response, "body.instance_url")
    assert not ProviderApp.objects.exists()


# --- Credential and webhook providers -------------------------------------------------------------


@pytest.mark.parametrize("provider", ["bluesky", "discord_webhook", "telegram"])
def test_credential_providers_connect_at_once(
    provider: str, owner_client: APIClient, workspace: Any, provider_settings: Any
) -> None:
    with STANDINS[provider]() as server:
        point_settings_at(provider_settings, provider, server)
        response = owner_client.post(
            f"{API}/accounts/connect",
            {
                "workspace_id": str(workspace.pk),
                "provider": provider,
                "fields": connect_fields(provider, server),
            },
            format="json",
        )
        body = ok(response, 201)
        fields = connect_fields(provider, server)
    account = body["account"]
    assert body["authorization_url"] is None
    assert response["Location"].endswith(f"/api/v1/accounts/{account['id']}")
    assert account["provider"] == provider
    assert account["status"] == "active"
    expected = {
        "bluesky": ("herald.test", "user"),
        "discord_webhook": (None, "webhook"),
        "telegram": (None, "bot"),
    }[provider]
    if expected[0]:
        assert account["username"] == expected[0]
    assert account["username"]
    assert account["account_kind"] == expected[1]
    secrets = {
        "bluesky": ["app_password"],
        "discord_webhook": ["webhook_url"],
        "telegram": ["bot_token"],
    }[provider]
    for name in secrets:
        assert fields[name] not in response.content.decode()
    if provider == "discord_webhook":  # the webhook token is the last path segment
        assert fields["webhook_url"].rsplit("/", 1)[1] not in response.content.decode()


@pytest.mark.parametrize(
    ("provider", "fields", "missing"),
    [
        ("bluesky", {"handle": "herald.test"}, ["body.fields.app_password"]),
        ("bluesky", {}, ["body.fields.handle", "body.fields.app_password"]),
        ("discord_webhook", {}, ["body.fields.webhook_url"]),
        ("telegram", {"bot_token": BOT_TOKEN}, ["body.fields.chat_id"]),
    ],
)
def test_missing_credential_field_is_422(
    provider: str,
    fields: dict[str, str],
    missing: list[str],
    owner_client: APIClient,
    workspace: Any,
) -> None:
    response = owner_client.post(
        f"{API}/accounts/connect",
        {
            "workspace_id": str(workspace.pk),
            "provider": provider,
            "fields": fields,
        },
        format="json",
    )
    body = assert_invalid(response, *missing)
    assert BOT_TOKEN not in response.content.decode()
    assert all("value" not in e for e in body["errors"])


def test_overlong_credential_field_never_echoes_the_secret(
    owner_client: APIClient, workspace: Any
) -> None:
    secret = "https://discord.com/api/webhooks/1/" + "s3cr3t" * 400
    response = owner_client.post(
        f"{API}/accounts/connect",
        {
            "workspace_id": str(workspace.pk),
            "provider": "discord_webhook",
            "fields": {"webhook_url": secret},
        },
        format="json",
    )
    assert_problem(response, 422, "invalid")
    assert "s3cr3t" not in response.content.decode()


@pytest.mark.parametrize("provider", ["bluesky", "discord_webhook", "telegram"])
def test_wrong_credentials_are_502_without_the_secret(
    provider: str, owner_client: APIClient, workspace: Any, provider_settings: Any
) -> None:
    with STANDINS[provider]() as server:
        point_settings_at(provider_settings, provider, server)
        fields = connect_fields(provider, server)
        if provider == "bluesky":
            fields["app_password"] = "wrong-app-pass-9999"
            secret = fields["app_password"]
        elif provider == "discord_webhook":
            fields["webhook_url"] = fields["webhook_url"][:-6] + "WRONGX"
            secret = fields["webhook_url"].rsplit("/", 1)[1]
        else:
            fields["bot_token"] = "987654321:AAWrongTokenForHeraldStandIn_zzzzzzz"
            secret = fields["bot_token"]
        response = owner_client.post(
            f"{API}/accounts/connect",
            {
                "workspace_id": str(workspace.pk),
                "provider": provider,
                "fields": fields,
            },
            format="json",
        )
    assert_problem(response, 502, "provider_error")
    assert secret not in response.content.decode()
    assert not Account.objects.exists()


# Local validation: a value the adapter refuses before asking the provider is a 422 at
# that value, never a 502 ``provider_error`` (the provider was never asked, so it cannot have failed).


@pytest.mark.parametrize(
    ("provider", "change", "location"),
    [
        (
            "discord_webhook",
            {"webhook_url": "ftp://127.0.0.1/api/webhooks/1/abc"},
            "body.fields.webhook_url",
        ),
        (
            "discord_webhook",
            {"webhook_url": "http://[::1/api/webhooks/1/abc"},
            "body.fields.webhook_url",
        ),
        ("telegram", {"bot_token": "not-a-bot-token"}, "body.fields.bot_token"),
        ("telegram", {"chat_id": "no spaces allowed"}, "body.fields.chat_id"),
        ("bluesky", {"handle": "@"}, "body.fields.handle"),
    ],
)
def test_fields_refused_by_local_checks_are_422_at_the_field(
    provider: str,
    change: dict[str, str],
    location: str,
    owner_client: APIClient,
    workspace: Any,
    provider_settings: Any,
) -> None:
    with STANDINS[provider]() as server:
        point_settings_at(provider_settings, provider, server)
        fields = {**connect_fields(provider, server), **change}
        before = server.stats()["requests"]
        response = owner_client.post(
            f"{API}/accounts/connect",
            {
                "workspace_id": str(workspace.pk),
                "provider": provider,
                "fields": fields,
            },
            format="json",
        )
        body = assert_invalid(response, location)
        assert server.stats()["requests"] == before  # the provider was never asked
    assert all("value" not in error for error in body["errors"])
    for value in change.values():
        assert value not in response.content.decode()
    assert not Account.objects.exists()


@pytest.mark.parametrize(
    "webhook_url",
    [
        "https://example.com/api/webhooks/1/abcdef",  # not Discord
        "http://discord.com/api/webhooks/1/abcdef",  # not https
        "https://discord.com:8443/api/webhooks/1/abcdef",  # a port
        "https://discord.com:notaport/api/webhooks/1/abcdef",  # an unparsable port
        "https://discord.com/api/not-a-webhook",
    ],
)
def test_malformed_discord_webhook_url_is_422_in_production(
    webhook_url: str, owner_client: APIClient, workspace: Any, settings: Any
) -> None:
    settings.HERALD_ALLOW_PRIVATE_PROVIDER_URLS = False
    settings.HERALD_DISABLED_PROVIDERS = []
    response = owner_client.post(
        f"{API}/accounts/connect",
        {
            "workspace_id": str(workspace.pk),
            "provider": "discord_webhook",
            "fields": {"webhook_url": webhook_url},
        },
        format="json",
    )
    body = assert_invalid(response, "body.fields.webhook_url")
    assert "abcdef" not in response.content.decode()
    assert "discord.com/api/webhooks/<id>/<token>" in body["errors"][0]["message"]


@pytest.mark.parametrize(
    "instance_url",
    [
        "http://mastodon.example",  # not https
        "https://127.0.0.1:9",  # a private address
        "https://localhost",
        "https://10.1.2.3",
        "https://user@mastodon.example",  # user info
    ],
)
def test_instance_url_refused_by_local_checks_is_422_at_instance_url(
    instance_url: str,
    owner_client: APIClient,
    workspace: Any,
    settings: Any,
) -> None:
    settings.HERALD_ALLOW_PRIVATE_PROVIDER_URLS = False
    settings.HERALD_DISABLED_PROVIDERS = []
    response = owner_client.post(
        f"{API}/accounts/connect",
        {
            "workspace_id": str(workspace.pk),
            "provider": "mastodon",
            "instance_url": instance_url,
        },
        format="json",
    )
    assert_invalid(response, "body.instance_url")
    assert not ProviderApp.objects.exists()
    assert not OAuthState.objects.exists()


def test_instance_url_whose_name_does_not_exist_is_422(
    owner_client: APIClient, workspace: Any, settings: Any
) -> None:
    import socket

    try:
        socket.getaddrinfo("no-such-host.invalid", 443)
    except socket.gaierror as exc:
        if exc.errno not in {getattr(socket, n, None) for n in ("EAI_NONAME", "EAI_NODATA")}:
            pytest.skip(f"this machine's resolver does not answer NXDOMAIN (errno {exc.errno})")
    settings.HERALD_ALLOW_PRIVATE_PROVIDER_URLS = False
    settings.HERALD_DISABLED_PROVIDERS = []
    response = owner_client.post(
        f"{API}/accounts/connect",
        {
            "workspace_id": str(workspace.pk),
            "provider": "mastodon",
            "instance_url": "https://no-such-host.invalid",
        },
        format="json",
    )
    assert_invalid(response, "body.instance_url")


# --- List, get, disconnect ------------------------------------------------------------------------


def test_list_filters_by_provider_and_bounds_the_limit(
    owner_client: APIClient, workspace: Any
) -> None:
    make_account(workspace, "discord_webhook")
    telegram = make_account(workspace, "telegram")
    filtered = ok(
        owner_client.get(
            f"{API}/accounts", {"workspace_id": str(workspace.pk), "provider": "telegram"}
        )
    )
    assert [a["id"] for a in filtered["items"]] == [str(telegram.pk)]
    assert_invalid(
        owner_client.get(f"{API}/accounts", {"workspace_id": str(workspace.pk), "limit": 0}),
        "query.limit",
    )


def test_get_and_disconnect_revokes_at_the_provider(
    owner_client: APIClient, workspace: Any, mastodon: MastodonStandIn
) -> None:
    account = connect(owner_client, workspace, "mastodon", mastodon)
    got = ok(owner_client.get(f"{API}/accounts/{account['id']}"))
    assert got["id"] == account["id"]
    assert got["$schema"].endswith("/schemas/Account.json")
    tokens_before = len(mastodon.tokens)
    response = owner_client.delete(f"{API}/accounts/{account['id']}")
    assert response.status_code == 204
    assert mastodon.counters["tokens_revoked"] == 1
    assert len(mastodon.tokens) == tokens_before - 1
    assert_problem(owner_client.get(f"{API}/accounts/{account['id']}"), 404, "not_found")
    assert_problem(owner_client.delete(f"{API}/accounts/{account['id']}"), 404, "not_found")
    assert (
        ok(owner_client.get(f"{API}/accounts", {"workspace_id": str(workspace.pk)}))["items"] == []
    )
    stored = Account.objects.get(pk=account["id"])
    assert stored.status == "disconnected"
    assert stored.credentials_encrypted == ""


def test_bluesky_disconnect_deletes_the_session(
    owner_client: APIClient, workspace: Any, bluesky: BlueskyStandIn
) -> None:
    account = connect(owner_client, workspace, "bluesky", bluesky)
    refresh_tokens = len(bluesky.refresh)
    assert owner_client.delete(f"{API}/accounts/{account['id']}").status_code == 204
    assert len(bluesky.refresh) == refresh_tokens - 1


def test_disconnect_succeeds_when_the_provider_is_down(
    owner_client: APIClient, workspace: Any, provider_settings: Any
) -> None:
    with MastodonStandIn() as server:
        account = connect(owner_client, workspace, "mastodon", server)
    assert owner_client.delete(f"{API}/accounts/{account['id']}").status_code == 204
    assert_problem(owner_client.get(f"{API}/accounts/{account['id']}"), 404, "not_found")


def test_reconnect_after_disconnect_creates_a_new_account(
    owner_client: APIClient, workspace: Any, discord: DiscordWebhookStandIn
) -> None:
    first = connect(owner_client, workspace, "discord_webhook", discord)
    assert owner_client.delete(f"{API}/accounts/{first['id']}").status_code == 204
    second = connect(owner_client, workspace, "discord_webhook", discord)
    assert second["id"] != first["id"]


def test_destination_options_of_an_unknown_account_is_404(owner_client: APIClient) -> None:
    for account_id in ("00000000-0000-0000-0000-000000000000", "not-an-id"):
        assert_problem(
            owner_client.get(f"{API}/accounts/{account_id}/destination-options"), 404, "not_found"
        )


def test_access_rules(
    owner_client: APIClient,
    workspace: Any,
    discord: DiscordWebhookStandIn,
    member_client: Callable[[str], APIClient],
    bearer_client: Callable[..., APIClient],
    make_user: Callable[..., User],
) -> None:
    """Beyond the standard reads and disconnect (TestAccountEndpoints): connecting, and another
    workspace's member on destination options and disconnect."""
    account = connect(owner_client, workspace, "discord_webhook", discord)
    viewer = member_client("viewer")
    response = viewer.post(
        f"{API}/accounts/connect",
        {
            "workspace_id": str(workspace.pk),
            "provider": "discord_webhook",
            "fields": connect_fields("discord_webhook", discord),
        },
        format="json",
    )
    assert_problem(response, 403, "role_too_low")

    # A member of another workspace cannot reach it.
    from workspaces.services import organization_create, workspace_create

    other_user = make_user()
    org = organization_create(actor=Actor(user=other_user), name="Other")
    workspace_create(actor=Actor(user=other_user), organization_id=org.pk, name="Elsewhere")
    other = bearer_client(other_user)
    assert_problem(
        other.get(f"{API}/accounts/{account['id']}/destination-options"), 403, "no_workspace_access"
    )
    assert_problem(other.delete(f"{API}/accounts/{account['id']}"), 403, "no_workspace_access")

    # Read-only tokens cannot connect.
    read_only = bearer_client(
        User.objects.get(email="owner@example.com"), permissions=("api:read",)
    )
    response = read_only.post(
        f"{API}/accounts/connect",
        {
            "workspace_id": str(workspace.pk),
            "provider": "discord_webhook",
            "fields": connect_fields("discord_webhook", discord),
        },
        format="json",
    )
    assert response.status_code == 403


# --- Destination options and capabilities ---------------------------------------------------------


def test_destination_options_defaults_and_validation(
    owner_client: APIClient, workspace: Any, mastodon: MastodonStandIn
) -> None:
    account = connect(owner_client, workspace, "mastodon", mastodon)
    url = f"{API}/accounts/{account['id']}/destination-options"
    body = ok(owner_client.get(url))
    assert body["$schema"].endswith(".json")
    assert set(body["options"]) == {"visibility", "language"}
    assert body["options"]["visibility"][0] == {"label": "Public", "value": "public"}
    assert all(
        set(item) == {"label", "value"} for group in body["options"].values() for item in group
    )
    german = ok(owner_client.get(url, {"language": "de", "region_code": "DE"}))
    assert german["options"]["visibility"][0] == {"label": "Öffentlich", "value": "public"}
    assert_invalid(owner_client.get(url, {"region_code": "usa"}), "query.region_code")
    assert_invalid(owner_client.get(url, {"language": "English!"}), "query.language")


def test_destination_options_of_telegram_lists_chats(
    owner_client: APIClient, workspace: Any, telegram: TelegramStandIn
) -> None:
    account = connect(owner_client, workspace, "telegram", telegram)
    body = ok(owner_client.get(f"{API}/accounts/{account['id']}/destination-options"))
    chats = body["options"]["chat_id"]
    assert chats[0]["value"] == telegram.fixtures()["chat_id"]
    assert BOT_TOKEN not in str(body)


def test_destination_options_of_a_revoked_grant_is_502_and_marks_reconnect(
    owner_client: APIClient, workspace: Any, telegram: TelegramStandIn
) -> None:
    account = connect(owner_client, workspace, "telegram", telegram)
    telegram.set_faults(reject_tokens=True)
    response = owner_client.get(f"{API}/accounts/{account['id']}/destination-options")
    assert_problem(response, 502, "provider_error")
    assert BOT_TOKEN not in response.content.decode()
    assert Account.objects.get(pk=account["id"]).status == "reconnect_required"


def test_capabilities_resolution(
    owner_client: APIClient,
    workspace: Any,
    discord: DiscordWebhookStandIn,
    telegram: TelegramStandIn,
) -> None:
    hook = connect(owner_client, workspace, "discord_webhook", discord)
    bot = connect(owner_client, workspace, "telegram", telegram)
    body = ok(owner_client.get(f"{API}/capabilities", {"workspace_id": str(workspace.pk)}))
    items = {item["account_id"]: item for item in body["items"]}
    assert set(items) == {hook["id"], bot["id"]}
    assert [p["key"] for p in items[bot["id"]]["profiles"]] == [
        "telegram.message",
        "telegram.photo",
    ]
    assert items[bot["id"]]["readiness"]["telegram.photo"]["immediate"]["state"] == "healthy"
    assert items[bot["id"]]["readiness"]["telegram.photo"]["scheduled"]["state"] == "healthy"
    only = ok(
        owner_client.get(
            f"{API}/capabilities",
            {
                "workspace_id": str(workspace.pk),
                "account_ids": bot["id"],
                "content_profile": "telegram.photo",
            },
        )
    )
    assert [i["account_id"] for i in only["items"]] == [bot["id"]]
    assert [p["key"] for p in only["items"][0]["profiles"]] == ["telegram.photo"]
    unknown = owner_client.get(
        f"{API}/capabilities",
        {"workspace_id": str(workspace.pk), "account_ids": "00000000-0000-0000-0000-000000000000"},
    )
    assert_problem(unknown, 404, "not_found")
    # An account whose grant is invalid resolves as reconnect_required.
    Account.objects.filter(pk=hook["id"]).update(status="reconnect_required")
    body = ok(
        owner_client.get(
            f"{API}/capabilities", {"workspace_id": str(workspace.pk), "account_ids": hook["id"]}
        )
    )
    decision = body["items"][0]["readiness"]["discord_webhook.message"]["immediate"]
    assert decision["state"] == "reconnect_required"
    assert decision["executable"] is False


# --- Plans --------------------------------------------------------------------------------------


def test_plan_limit_on_connected_accounts(
    owner_client: APIClient,
    workspace: Any,
    discord: DiscordWebhookStandIn,
    telegram: TelegramStandIn,
    mastodon: MastodonStandIn,
) -> None:
    plan = Plan.objects.create(code="tiny", name="Tiny", max_connected_accounts=1)
    workspace.plan = plan
    workspace.save()
    connect(owner_client, workspace, "discord_webhook", discord)
    response = owner_client.post(
        f"{API}/accounts/connect",
        {
            "workspace_id": str(workspace.pk),
            "provider": "telegram",
            "fields": connect_fields("telegram", telegram),
        },
        format="json",
    )
    assert_problem(response, 403, "plan_limit")
    assert_problem(start_mastodon_raw(owner_client, workspace, mastodon), 403, "plan_limit")
    assert Account.objects.count() == 1


def start_mastodon_raw(client: APIClient, workspace: Any, server: MastodonStandIn) -> Any:
    return client.post(
        f"{API}/accounts/connect",
        {
            "workspace_id": str(workspace.pk),
            "provider": "mastodon",
            "instance_url": server.url,
        },
        format="json",
    )


def test_plan_limit_is_checked_again_when_the_oauth_callback_arrives(
    owner_client: APIClient,
    workspace: Any,
    mastodon: MastodonStandIn,
    discord: DiscordWebhookStandIn,
) -> None:
    plan = Plan.objects.create(code="tiny", name="Tiny", max_connected_accounts=1)
    workspace.plan = plan
    workspace.save()
    started = start_mastodon(owner_client, workspace, mastodon)  # under the limit when it starts
    connect(owner_client, workspace, "discord_webhook", discord)  # ... which the webhook then fills
    browser = APIClient()
    grant = follow_authorization(started["authorization_url"], browser)
    assert_problem(browser.get(f"{API}/accounts/oauth/callback", grant), 403, "plan_limit")
    assert Account.objects.count() == 1


# --- Credentials at rest ------------------------------------------------------------------------


def raw_credentials() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT credentials_encrypted FROM publishing_account")
        rows = [row[0] for row in cursor.fetchall()]
        cursor.execute("SELECT credentials_encrypted FROM publishing_providerapp")
        return rows + [row[0] for row in cursor.fetchall()]


def test_credentials_are_encrypted_at_rest_and_never_returned(
    owner_client: APIClient,
    workspace: Any,
    bluesky: BlueskyStandIn,
    telegram: TelegramStandIn,
    mastodon: MastodonStandIn,
) -> None:
    app_password = connect_fields("bluesky", bluesky)["app_password"]
    connect(owner_client, workspace, "bluesky", bluesky)
    connect(owner_client, workspace, "telegram", telegram)
    masto = connect(owner_client, workspace, "mastodon", mastodon)
    masto_token = credentials.decrypt(Account.objects.get(pk=masto["id"]).credentials_encrypted)[
        "access_token"
    ]
    client_secret = next(iter(mastodon.apps.values()))["client_secret"]
    secrets = [app_password, BOT_TOKEN, masto_token, client_secret, FIXTURE_TOKEN]
    stored = raw_credentials()
    assert len(stored) == 4
    assert all(stored)
    for value in stored:
        for secret in secrets:
            assert secret not in value
    responses = [
        owner_client.get(f"{API}/accounts", {"workspace_id": str(workspace.pk)}),
        owner_client.get(f"{API}/capabilities", {"workspace_id": str(workspace.pk)}),
        owner_client.get(f"{API}/account-providers", {"workspace_id": str(workspace.pk)}),
    ] + [owner_client.get(f"{API}/accounts/{a.pk}") for a in Account.objects.all()]
    for response in responses:
        assert response.status_code == 200
        text = response.content.decode()
        for secret in secrets:
            assert secret not in text
    # Bluesky stores a session, never the app password itself.
    bsky = Account.objects.get(provider="bluesky")
    assert app_password not in str(credentials.decrypt(bsky.credentials_encrypted))


def test_key_rotation(
    owner_client: APIClient,
    workspace: Any,
    settings: Any,
    telegram: TelegramStandIn,
    mastodon: MastodonStandIn,
) -> None:
    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    settings.HERALD_CREDENTIALS_KEY = old
    connect(owner_client, workspace, "telegram", telegram)
    connect(owner_client, workspace, "mastodon", mastodon)
    start_mastodon(owner_client, workspace, mastodon)  # a pending OAuth state with a verifier
    before = raw_credentials()

    settings.HERALD_CREDENTIALS_KEY = f"{new},{old}"
    call_command("rotate_credentials", stdout=open("/dev/null", "w"))  # noqa: SIM115
    after = raw_credentials()
    assert all(a != b for a, b in zip(before, after, strict=True))

    settings.HERALD_CREDENTIALS_KEY = new
    bot = Account.objects.get(provider="telegram")
    assert account_context(bot).credentials["bot_token"] == BOT_TOKEN
    assert credentials.decrypt(ProviderApp.objects.get().credentials_encrypted)["client_id"]
    assert credentials.decrypt(OAuthState.objects.get().code_verifier_encrypted)["v"]
    # The account still works with only the new key.
    body = ok(owner_client.get(f"{API}/accounts/{bot.pk}/destination-options"))
    assert body["options"]["chat_id"]

    settings.HERALD_CREDENTIALS_KEY = old
    with pytest.raises(credentials.CredentialsKeyError):
        credentials.decrypt(Account.objects.get(provider="telegram").credentials_encrypted)


def test_oauth_callback_rechecks_readiness(
    owner_client: APIClient, workspace: Any, mastodon: MastodonStandIn, provider_settings: Any
) -> None:
    started = start_mastodon(owner_client, workspace, mastodon)
    provider_settings.HERALD_DISABLED_PROVIDERS = ["mastodon"]
    browser = APIClient()
    grant = follow_authorization(started["authorization_url"], browser)
    assert_problem(browser.get(f"{API}/accounts/oauth/callback", grant), 409, "readiness_blocked")
    assert not Account.objects.exists()


# --- The standard endpoint tests (tests/endpoint_support.py) ----------------------------------


class TestAccountEndpoints(WorkspaceListTests, DetailTests):
    list_url = f"{API}/accounts"
    schema = "Account"
    write_role = "admin"  # disconnecting a shared account (docs/people-and-roles.md)
    foreign_answer = MEMBERS_ONLY
    not_allowed = (("post", "list"), ("put", "detail"), ("patch", "detail"))

    def make(self, workspace: Any, owner: User) -> str:
        external_id = str(Account.objects.count() + 1)
        return str(make_account(workspace, "discord_webhook", external_id).pk)

    def detail_url(self, obj: str) -> str:
        return f"{API}/accounts/{obj}"


class TestAccountProviderEndpoint(WorkspaceResourceTests):
    url = f"{API}/account-providers"
    schema = "ProviderCatalogue"
    foreign_answer = MEMBERS_ONLY
    not_allowed = (("post", "detail"), ("delete", "detail"))
