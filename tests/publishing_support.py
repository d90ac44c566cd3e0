"""Helpers shared by the publishing tests: connect accounts to stand-ins, upload media, create
publications through the API."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import requests
from rest_framework.test import APIClient

from tests.providers import tiny_png
from tests.providers.bluesky.standin import BlueskyStandIn
from tests.providers.discord_webhook.standin import DiscordWebhookStandIn
from tests.providers.mastodon.standin import MastodonStandIn
from tests.providers.telegram.standin import TelegramStandIn

API = "/api/v1"


def ok(response: Any, status: int = 200) -> Any:
    assert response.status_code == status, (response.status_code, response.content[:800])
    return response.json() if response.content else None


START_PAGE = "/connections/authorize/"


def confirm_start(authorization_url: str, browser: Any) -> str:
    """Play the person at Herald's start page (the connect answer's ``authorization_url``) in
    ``browser`` (a test client: its cookie jar keeps the nonce cookie): read the page, confirm,
    and return the provider's authorization URL it redirects to."""
    path = urlsplit(authorization_url).path
    page = browser.get(path, HTTP_ACCEPT="text/html")
    assert page.status_code == 200, (page.status_code, page.content[:300])
    assert b'<form method="post"' in page.content
    confirmed = browser.post(path)
    assert confirmed.status_code == 303, (confirmed.status_code, confirmed.content[:300])
    return str(confirmed["Location"])


def bind_browser(authorization_url: str) -> tuple[str, str]:
    """Service level: what confirming Herald's start page does. Returns ``(nonce, provider's
    authorization URL)``; the nonce is what the callback's cookie carries."""
    from publishing.services.accounts import oauth_bind_browser

    state = urlsplit(authorization_url).path.removeprefix(START_PAGE)
    nonce, provider_url, _ = oauth_bind_browser(state=state)
    return nonce, provider_url


def follow_authorization(authorization_url: str, browser: Any = None) -> dict[str, str]:
    """Play the user's browser: through Herald's start page when the URL is Herald's (in
    ``browser``, which then carries the nonce cookie to the callback), then at the provider,
    whose stand-in auto-approves and redirects back with ``code`` and ``state``."""
    if urlsplit(authorization_url).path.startswith(START_PAGE):
        assert browser is not None, "Herald's start page binds a browser: pass one"
        authorization_url = confirm_start(authorization_url, browser)
    response = requests.get(authorization_url, allow_redirects=False, timeout=5)
    assert response.status_code == 302, response.text
    query = parse_qs(urlsplit(response.headers["Location"]).query)
    return {"code": query["code"][0], "state": query["state"][0]}


def connect_mastodon(client: APIClient, workspace: Any, server: MastodonStandIn) -> dict[str, Any]:
    started = ok(
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
    assert started["account"] is None
    browser = APIClient()
    grant = follow_authorization(started["authorization_url"], browser)
    account: dict[str, Any] = ok(browser.get(f"{API}/accounts/oauth/callback", grant))
    return account


def connect_fields(provider: str, server: Any) -> dict[str, str]:
    fixtures = server.fixtures()
    if provider == "bluesky":
        return {
            "handle": "herald.test",
            "app_password": fixtures["accounts"]["herald.test"]["app_password"],
        }
    if provider == "discord_webhook":
        return {"webhook_url": fixtures["webhook_url"]}
    if provider == "telegram":
        return {"bot_token": fixtures["bot_token"], "chat_id": fixtures["chat_id"]}
    raise AssertionError(provider)


def connect(client: APIClient, workspace: Any, provider: str, server: Any) -> dict[str, Any]:
    """Connect ``provider`` against its stand-in; returns the account JSON."""
    if provider == "mastodon":
        return connect_mastodon(client, workspace, server)
    body = ok(
        client.post(
            f"{API}/accounts/connect",
            {
                "workspace_id": str(workspace.pk),
                "provider": provider,
                "fields": connect_fields(provider, server),
            },
            format="json",
        ),
        201,
    )
    account: dict[str, Any] = body["account"]
    return account


STANDINS = {
    "mastodon": MastodonStandIn,
    "bluesky": BlueskyStandIn,
    "discord_webhook": DiscordWebhookStandIn,
    "telegram": TelegramStandIn,
}


def point_settings_at(settings: Any, provider: str, server: Any) -> None:
    if provider == "bluesky":
        settings.HERALD_BLUESKY_SERVICE_URL = server.url
    if provider == "telegram":
        settings.HERALD_TELEGRAM_API_URL = server.url


def upload(
    client: APIClient,
    workspace: Any,
    payload: bytes | None = None,
    name: str = "pixel.png",
    status: int = 201,
    **extra: Any,
) -> Any:
    data = tiny_png() if payload is None else payload
    handle = io.BytesIO(data)
    handle.name = name
    response = client.post(
        f"{API}/media",
        {"workspace_id": str(workspace.pk), "file": handle, **extra},
        format="multipart",
    )
    if status == 201:
        return ok(response, 201)
    return response


def gif_bytes() -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (2, 2), (0, 0, 255)).save(buffer, format="GIF")
    return buffer.getvalue()


def create_publication(
    client: APIClient,
    workspace: Any,
    account_ids: list[str],
    text: str = "Hello from Herald",
    status: int = 201,
    headers: dict[str, str] | None = None,
    **extra: Any,
) -> Any:
    body = {
        "workspace_id": str(workspace.pk),
        "text": text,
        "destinations": [{"account_id": a} for a in account_ids],
        **extra,
    }
    response = client.post(f"{API}/publications", body, format="json", **(headers or {}))
    if status == 201:
        return ok(response, 201)
    return response


def make_account(workspace: Any, provider: str, external_id: str = "1", **extra: Any) -> Any:
    """An account row without a provider round trip (validation and listing tests)."""
    from providers import credentials
    from publishing.models import Account, ProviderApp

    app = None
    if provider == "mastodon":
        app, _ = ProviderApp.objects.get_or_create(
            provider="mastodon",
            instance_url="https://mastodon.example",
            redirect_uri="",
            defaults={
                "credentials_encrypted": credentials.encrypt(
                    {"client_id": "c", "client_secret": "s"}
                )
            },
        )
    values: dict[str, Any] = {
        "workspace": workspace,
        "provider": provider,
        "external_id": external_id,
        "username": f"{provider}-{external_id}",
        "app": app,
        "instance_url": "https://mastodon.example" if provider == "mastodon" else "",
        "credentials_encrypted": credentials.encrypt({"access_token": "t"}),
    }
    values.update(extra)
    return Account.objects.create(**values)


def use_media_root(settings: Any, root: Path) -> Path:
    """Store uploaded media in ``root`` (through the file-system storage backend), e.g. a
    temporary folder, or the data folder where worker processes read them."""
    root.mkdir(parents=True, exist_ok=True)
    storages = {name: dict(config) for name, config in settings.STORAGES.items()}
    storages["default"] = {
        "BACKEND": "django.core.files.storage.FileSystemStorage",
        "OPTIONS": {"location": str(root), "base_url": "/media/"},
    }
    settings.STORAGES = storages
    settings.MEDIA_ROOT = str(root)
    return root


def publish_now_with_services(
    actor: Any, workspace: Any, account_id: Any, text: str, media_ids: list[str] | None = None
) -> Any:
    """A publication to one account created and published now through the services (its send
    message goes out when the caller's transaction commits); the published publication."""
    from publishing.services import publications

    publication = publications.publication_create(
        actor=actor,
        workspace_id=workspace.pk,
        text=text,
        media_ids=media_ids or [],
        destinations=[{"account_id": str(account_id)}],
    )
    return publications.publication_publish_now(
        actor=actor, publication_id=publication.pk, expected_revision=None
    )


def send_in_process(destination: Any, django_capture_on_commit_callbacks: Any) -> Any:
    """Run the destination's send in this process (its on-commit messages captured and sent);
    the destination as it is afterwards."""
    from publishing.services import delivery

    with django_capture_on_commit_callbacks(execute=True):
        delivery.delivery_send(destination_id=destination.pk)
    destination.refresh_from_db()
    return destination


def connect_with_services(
    actor: Any,
    workspace: Any,
    provider: str,
    fields: dict[str, str] | None = None,
    mode: str = "",
) -> Any:
    """Connect an account through the services: form fields when given, else OAuth 2 against
    the provider's stand-in (its consent page approves at once), in connection mode ``mode``
    when given."""
    from publishing.services.accounts import account_connect, account_oauth_complete

    redirect_uri = "http://testserver/api/v1/accounts/oauth/callback"
    account, authorization_url = account_connect(
        actor=actor,
        workspace_id=workspace.pk,
        provider=provider,
        redirect_uri=redirect_uri,
        mode=mode,
        **({"fields": fields} if fields else {}),
    )
    if account is not None:
        return account
    assert authorization_url is not None
    nonce, provider_url = bind_browser(authorization_url)
    answer = requests.get(provider_url, allow_redirects=False, timeout=5)
    grant = parse_qs(urlsplit(answer.headers["Location"]).query)
    return account_oauth_complete(
        state=grant["state"][0], code=grant["code"][0], browser_nonce=nonce
    )


def probed_by_worker(stack: Any, client: APIClient, workspace: Any, data: bytes, name: str) -> Any:
    """Upload ``data`` through the API and wait for the worker of ``stack`` (a
    ``tests.worker_harness.DeliveryStack``) to probe it: the ``ready`` Media."""
    from publishing.models import Media

    uploaded = upload(client, workspace, data, name=name)

    def probed() -> Media | None:
        media = Media.objects.get(pk=uploaded["id"])
        return media if media.status != Media.Status.PROCESSING else None

    media = stack.wait_until(probed, timeout=90, what="the video to be probed")
    assert media.status == Media.Status.READY, media.failure_reason
    return media


def settled_by_worker(stack: Any, publication: Any, what: str) -> Any:
    """Wait for the worker of ``stack`` to settle ``publication`` (published, partially
    published or failed): the fresh Publication."""
    from publishing.models import Publication

    def settled() -> Publication | None:
        fresh = Publication.objects.get(pk=publication.pk)
        done = ("published", "partially_published", "failed")
        return fresh if fresh.status in done else None

    return stack.wait_until(settled, timeout=150, what=what)


def make_media(workspace: Any) -> Any:
    """A media row without a file behind it (listing and access tests)."""
    from publishing.models import Media

    return Media.objects.create(
        workspace=workspace,
        file="media/x.png",
        name="x.png",
        mime_type="image/png",
        size_bytes=1,
        checksum_sha256="0" * 64,
    )
