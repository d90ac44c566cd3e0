"""The built-in Herald feed and ``profile_url`` on every account.

A feed is connected through the API, publications reach it through the outbox and the delivery
service (the same code the Celery worker runs), and its public Atom and JSON Feed documents,
permalinks and media are fetched with the Django test client and parsed (``xml.etree``, JSON
Feed 1.1 keys). Stand-in providers on 127.0.0.1 give the other providers' ``profile_url``.
"""

from __future__ import annotations

import importlib
import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from datetime import timedelta
from types import SimpleNamespace
from typing import Any

import pytest
import time_machine
from django.apps import apps as django_apps
from django.db import connection
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from providers import get_adapter
from providers.base import PublishRequest
from providers.feed import MAX_ENTRIES
from publishing import tasks
from publishing.models import Account, Destination, FeedEntry
from publishing.services import delivery
from publishing.services.accounts import account_context
from readiness import services as readiness
from tests.providers import tiny_png
from tests.providers.bluesky.standin import BlueskyStandIn
from tests.providers.discord_webhook.standin import DiscordWebhookStandIn
from tests.providers.mastodon.standin import MastodonStandIn
from tests.providers.telegram.standin import TelegramStandIn
from tests.publishing_support import (
    API,
    connect,
    connect_fields,
    create_publication,
    make_account,
    ok,
    upload,
)
from tests.video_support import make_video

pytestmark = pytest.mark.django_db

ATOM = "{http://www.w3.org/2005/Atom}"
# NUL is refused by the API itself; other control characters reach the feed.
HOSTILE = 'Tom & Jerry <script>alert("x")</script> ]]> <![CDATA[ x ]]>\x07\x1b\x0c end\nline two'
TOKEN_URL = re.compile(r"^http://testserver/feeds/([0-9a-f]{32})\.atom$")


# --- Helpers ------------------------------------------------------------------------------------


def connect_feed(
    client: APIClient, workspace: Any, title: str = "Herald news", **fields: str
) -> dict[str, Any]:
    body = ok(
        client.post(
            f"{API}/accounts/connect",
            {
                "workspace_id": str(workspace.pk),
                "provider": "feed",
                "fields": {"title": title, **fields},
            },
            format="json",
        ),
        201,
    )
    account: dict[str, Any] = body["account"]
    return account


def token_of(account: dict[str, Any]) -> str:
    match = TOKEN_URL.match(account["profile_url"])
    assert match, account["profile_url"]
    return match.group(1)


def atom(client: Client, token: str, **headers: str) -> Any:
    return client.get(f"/feeds/{token}.atom", headers=headers)


def parse_atom(response: Any) -> ET.Element:
    assert response.status_code == 200, response.content[:300]
    assert response["Content-Type"] == "application/atom+xml; charset=utf-8"
    root = ET.fromstring(response.content)  # noqa: S314  (Herald's own output, in a test)
    assert root.tag == f"{ATOM}feed"
    return root


def parse_json_feed(response: Any) -> dict[str, Any]:
    assert response.status_code == 200, response.content[:300]
    assert response["Content-Type"] == "application/feed+json; charset=utf-8"
    document: dict[str, Any] = json.loads(response.content)
    assert document["version"] == "https://jsonfeed.org/version/1.1"
    return document


@pytest.fixture
def publish_now(
    owner_client: APIClient,
    workspace: Any,
    delivery_queue: Any,
    django_capture_on_commit_callbacks: Any,
) -> Callable[..., Destination]:
    """Create a publication through the API, publish it now and deliver what was queued with
    the delivery service (what the worker's task runs); the one destination."""

    def run(account_id: str, text: str, media_ids: list[str] | None = None) -> Destination:
        publication = create_publication(
            owner_client, workspace, [account_id], text=text, media_ids=media_ids or []
        )
        with django_capture_on_commit_callbacks(execute=True):
            ok(
                owner_client.post(
                    f"{API}/publications/{publication['id']}/publish-now",
                    {"expected_revision": publication["revision"]},
                    format="json",
                ),
                202,
            )
        for _ in range(5):
            with django_capture_on_commit_callbacks(execute=True):
                delivery_queue.run(rounds=1)
        return Destination.objects.get(publication_id=publication["id"])

    return run


@pytest.fixture
def anonymous() -> Client:
    return Client()


# --- Connect ------------------------------------------------------------------------------------


def test_connect_creates_a_public_feed(
    owner_client: APIClient, workspace: Any, anonymous: Client
) -> None:
    account = connect_feed(
        owner_client, workspace, title="Herald <news> & more", description="What we ship"
    )
    assert account["provider"] == "feed"
    assert account["display_name"] == "Herald <news> & more"
    assert account["status"] == "active"
    token = token_of(account)
    assert Account.objects.get(pk=account["id"]).external_id == token
    root = parse_atom(atom(anonymous, token))  # no authentication
    assert root.findtext(f"{ATOM}title") == "Herald <news> & more"
    assert root.findtext(f"{ATOM}subtitle") == "What we ship"
    assert root.findall(f"{ATOM}entry") == []
    document = parse_json_feed(anonymous.get(f"/feeds/{token}.json"))
    assert document["title"] == "Herald <news> & more"
    assert document["description"] == "What we ship"
    assert document["feed_url"] == f"http://testserver/feeds/{token}.json"
    assert document["items"] == []
    # A second feed gets its own unguessable token.
    assert token_of(connect_feed(owner_client, workspace, title="Other")) != token


def test_connect_needs_a_title_and_ignores_a_supplied_origin(
    owner_client: APIClient, workspace: Any
) -> None:
    response = owner_client.post(
        f"{API}/accounts/connect",
        {
            "workspace_id": str(workspace.pk),
            "provider": "feed",
            "fields": {"description": "x"},
        },
        format="json",
    )
    assert response.status_code == 422
    assert "body.fields.title" in response.content.decode()
    response = owner_client.post(
        f"{API}/accounts/connect",
        {
            "workspace_id": str(workspace.pk),
            "provider": "feed",
            "fields": {"title": "x" * 201},
        },
        format="json",
    )
    assert response.status_code == 422
    assert "body.fields.title" in response.content.decode()
    account = connect_feed(owner_client, workspace, herald_origin="https://evil.example")
    assert account["profile_url"].startswith("http://testserver/feeds/")


def test_the_public_origin_setting_names_the_feed_urls(
    owner_client: APIClient, workspace: Any, settings: Any
) -> None:
    settings.HERALD_PUBLIC_URL = "https://herald.example.org"
    account = connect_feed(owner_client, workspace)
    assert re.match(
        r"^https://herald\.example\.org/feeds/[0-9a-f]{32}\.atom$", account["profile_url"]
    )


def test_the_catalogue_lists_the_feed_as_connectable(
    owner_client: APIClient, workspace: Any
) -> None:
    catalogue = ok(
        owner_client.get(f"{API}/account-providers", {"workspace_id": str(workspace.pk)})
    )
    entry = next(p for p in catalogue["providers"] if p["provider"] == "feed")
    assert entry["display_name"] == "Herald feed"
    assert entry["capabilities"]["credential_fields"] == ["title"]
    assert entry["capabilities"]["profiles"][0]["key"] == "feed.entry"
    assert entry["readiness"]["connectable"] is True
    account = Account.objects.get(pk=connect_feed(owner_client, workspace)["id"])
    decision = readiness.decide_account(
        account=account, operation="publish_immediate", profile="feed.entry"
    )
    assert decision.executable, decision.as_dict()
    assert decision.facts["configuration"] == {"status": "present", "source": "builtin"}


# --- Publish ------------------------------------------------------------------------------------


def test_publish_now_delivers_an_entry_with_media(
    owner_client: APIClient,
    workspace: Any,
    anonymous: Client,
    media_storage: Any,
    publish_now: Callable[..., Destination],
) -> None:
    account = connect_feed(owner_client, workspace)
    token = token_of(account)
    png = tiny_png()
    media = upload(owner_client, workspace, png, alt_text='A "red" pixel & <friends>')
    destination = publish_now(account["id"], HOSTILE, [media["id"]])
    assert destination.status == "published", (destination.error_kind, destination.error_message)
    entry = FeedEntry.objects.get()
    assert destination.external_id == str(entry.pk)
    assert destination.external_url == f"http://testserver/feeds/{token}/entries/{entry.pk}"
    assert entry.idempotency_key == destination.idempotency_key
    kinds = list(destination.events.values_list("kind", flat=True))
    assert "destination.published" in kinds

    # Atom: the text survives escaping; characters XML cannot carry are left out.
    root = parse_atom(atom(anonymous, token))
    (item,) = root.findall(f"{ATOM}entry")
    assert item.findtext(f"{ATOM}id") == f"urn:uuid:{entry.pk}"
    content = item.find(f"{ATOM}content")
    assert content is not None
    assert content.get("type") == "text"
    assert content.text == HOSTILE.replace("\x07", "").replace("\x1b", "").replace("\x0c", "")
    links = {link.get("rel"): link for link in item.findall(f"{ATOM}link")}
    assert links["alternate"].get("href") == destination.external_url
    enclosure = links["enclosure"]
    assert enclosure.get("type") == "image/png"
    assert enclosure.get("length") == str(len(png))
    assert enclosure.get("title") == 'A "red" pixel & <friends>'
    assert b"<script>" not in atom(anonymous, token).content

    # JSON Feed 1.1: the exact text, the permalink, the attachment.
    document = parse_json_feed(anonymous.get(f"/feeds/{token}.json"))
    (item_json,) = document["items"]
    assert item_json["id"] == str(entry.pk)
    assert item_json["content_text"] == HOSTILE
    assert item_json["url"] == destination.external_url
    (attachment,) = item_json["attachments"]
    assert attachment["mime_type"] == "image/png"
    assert attachment["size_in_bytes"] == len(png)
    assert attachment["url"] == enclosure.get("href")

    # The enclosure is served by Herald, to anyone holding the feed's URL.
    served = anonymous.get(enclosure.get("href").removeprefix("http://testserver"))
    assert served.status_code == 200
    assert served["Content-Type"] == "image/png"
    assert served["Content-Length"] == str(len(png))
    assert b"".join(served.streaming_content) == png

    # The permalink: an HTML page with the text escaped.
    page = anonymous.get(destination.external_url.removeprefix("http://testserver"))
    assert page.status_code == 200
    assert page["Content-Type"] == "text/html; charset=utf-8"
    html = page.content.decode()
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in html
    assert "<script>" not in html
    assert "Tom &amp; Jerry" in html


def test_a_video_entry_has_an_enclosure_with_its_type_and_length(
    owner_client: APIClient,
    workspace: Any,
    anonymous: Client,
    media_storage: Any,
    publish_now: Callable[..., Destination],
) -> None:
    account = connect_feed(owner_client, workspace)
    token = token_of(account)
    clip = make_video("mp4", seconds=1)
    media = upload(owner_client, workspace, clip, name="clip.mp4")
    tasks.media_probe(media["id"])
    destination = publish_now(account["id"], "A clip", [media["id"]])
    assert destination.status == "published", (destination.error_kind, destination.error_message)
    (item,) = parse_atom(atom(anonymous, token)).findall(f"{ATOM}entry")
    links = {link.get("rel"): link for link in item.findall(f"{ATOM}link")}
    enclosure = links["enclosure"]
    assert (enclosure.get("type"), enclosure.get("length")) == ("video/mp4", str(len(clip)))
    (entry,) = parse_json_feed(anonymous.get(f"/feeds/{token}.json"))["items"]
    (attachment,) = entry["attachments"]
    assert (attachment["mime_type"], attachment["size_in_bytes"]) == ("video/mp4", len(clip))
    served = anonymous.get(enclosure.get("href").removeprefix("http://testserver"))
    assert served["Content-Type"] == "video/mp4"
    assert b"".join(served.streaming_content) == clip


def test_media_is_served_only_for_entries_of_that_feed(
    owner_client: APIClient,
    workspace: Any,
    anonymous: Client,
    media_storage: Any,
    publish_now: Callable[..., Destination],
) -> None:
    first = connect_feed(owner_client, workspace, title="First")
    second = connect_feed(owner_client, workspace, title="Second")
    media = upload(owner_client, workspace)
    unpublished = upload(owner_client, workspace)
    publish_now(first["id"], "with media", [media["id"]])
    assert anonymous.get(f"/feeds/{token_of(first)}/media/{media['id']}").status_code == 200
    assert anonymous.get(f"/feeds/{token_of(second)}/media/{media['id']}").status_code == 404
    assert anonymous.get(f"/feeds/{token_of(first)}/media/{unpublished['id']}").status_code == 404
    assert anonymous.get(f"/feeds/{'0' * 32}/media/{media['id']}").status_code == 404


def test_publishing_twice_with_one_key_writes_one_entry(
    owner_client: APIClient, workspace: Any
) -> None:
    account = Account.objects.get(pk=connect_feed(owner_client, workspace)["id"])
    adapter = get_adapter("feed")
    request = PublishRequest(profile="feed.entry", text="once", idempotency_key="k" * 32)
    first = adapter.publish(account=account_context(account), request=request)
    again = adapter.publish(account=account_context(account), request=request)
    assert first == again
    assert FeedEntry.objects.count() == 1


def test_an_ambiguous_send_is_reconciled_by_its_key(
    owner_client: APIClient,
    workspace: Any,
    publish_now: Callable[..., Destination],
    django_capture_on_commit_callbacks: Any,
) -> None:
    """The worker wrote the entry but died before recording it: reconcile finds the entry by the
    destination's idempotency key, and the destination is published once."""
    account = connect_feed(owner_client, workspace)
    destination = publish_now(account["id"], "first")
    entry = FeedEntry.objects.get()
    Destination.objects.filter(pk=destination.pk).update(
        status="ambiguous", external_id="", external_url="", next_attempt_at=None
    )
    adapter = get_adapter("feed")
    row = Account.objects.get(pk=account["id"])
    found = adapter.reconcile(
        account=account_context(row),
        request=PublishRequest(
            profile="feed.entry", text="first", idempotency_key=destination.idempotency_key
        ),
    )
    assert found is not None
    assert found.external_id == str(entry.pk)
    assert (
        adapter.reconcile(
            account=account_context(row),
            request=PublishRequest(profile="feed.entry", text="x", idempotency_key="unknown-key"),
        )
        is None
    )
    with django_capture_on_commit_callbacks(execute=True):
        delivery.delivery_reconcile(destination_id=destination.pk)
    destination.refresh_from_db()
    assert destination.status == "published"
    assert destination.external_id == str(entry.pk)
    assert FeedEntry.objects.count() == 1


# --- Caching and bounds -------------------------------------------------------------------------


def test_etag_and_last_modified_answer_304_until_the_feed_changes(
    owner_client: APIClient, workspace: Any, anonymous: Client
) -> None:
    account = Account.objects.get(pk=connect_feed(owner_client, workspace)["id"])
    token = account.external_id
    adapter = get_adapter("feed")
    start = timezone.now()
    with time_machine.travel(start, tick=False):
        adapter.publish(
            account=account_context(account),
            request=PublishRequest(profile="feed.entry", text="one", idempotency_key="key-1"),
        )
        # Within the second of the change its date would not tell a later change apart.
        assert "Last-Modified" not in atom(anonymous, token)
    with time_machine.travel(start + timedelta(seconds=2), tick=False):
        first = atom(anonymous, token)
    assert first.status_code == 200
    etag, last_modified = first["ETag"], first["Last-Modified"]
    assert first["Cache-Control"] == "public, no-cache"
    for path in (f"/feeds/{token}.atom", f"/feeds/{token}.json"):
        fresh = anonymous.get(path)
        again = anonymous.get(path, headers={"If-None-Match": fresh["ETag"]})
        assert again.status_code == 304
        assert again.content == b""
        assert again["ETag"] == fresh["ETag"]
        assert anonymous.get(path, headers={"If-None-Match": '"other"'}).status_code == 200
    assert atom(anonymous, token, **{"If-Modified-Since": last_modified}).status_code == 304
    assert (
        atom(anonymous, token, **{"If-Modified-Since": "Mon, 01 Jan 2001 00:00:00 GMT"}).status_code
        == 200
    )

    with time_machine.travel(start + timedelta(seconds=5), tick=False):
        adapter.publish(
            account=account_context(account),
            request=PublishRequest(profile="feed.entry", text="two", idempotency_key="key-2"),
        )
    changed = atom(anonymous, token, **{"If-None-Match": etag})
    assert changed.status_code == 200
    assert changed["ETag"] != etag
    assert atom(anonymous, token, **{"If-Modified-Since": last_modified}).status_code == 200


def test_a_feed_lists_the_newest_entries_only(
    owner_client: APIClient, workspace: Any, anonymous: Client
) -> None:
    account = Account.objects.get(pk=connect_feed(owner_client, workspace)["id"])
    adapter = get_adapter("feed")
    start = timezone.now() - timedelta(hours=1)
    for n in range(MAX_ENTRIES + 5):
        with time_machine.travel(start + timedelta(seconds=n), tick=False):
            adapter.publish(
                account=account_context(account),
                request=PublishRequest(
                    profile="feed.entry", text=f"entry {n}", idempotency_key=f"k{n}"
                ),
            )
    root = parse_atom(atom(anonymous, account.external_id))
    entries = root.findall(f"{ATOM}entry")
    assert len(entries) == MAX_ENTRIES == 50
    assert entries[0].findtext(f"{ATOM}content") == f"entry {MAX_ENTRIES + 4}"  # newest first
    assert entries[-1].findtext(f"{ATOM}content") == "entry 5"
    document = parse_json_feed(anonymous.get(f"/feeds/{account.external_id}.json"))
    assert len(document["items"]) == MAX_ENTRIES
    # An entry older than the window keeps its permalink.
    oldest = FeedEntry.objects.get(idempotency_key="k0")
    assert anonymous.get(f"/feeds/{account.external_id}/entries/{oldest.pk}").status_code == 200


# --- Delete and disconnect ----------------------------------------------------------------------


def test_delete_withdraws_the_entry(
    owner_client: APIClient,
    workspace: Any,
    anonymous: Client,
    media_storage: Any,
    publish_now: Callable[..., Destination],
) -> None:
    account = connect_feed(owner_client, workspace)
    token = token_of(account)
    media = upload(owner_client, workspace)
    start = timezone.now()
    with time_machine.travel(start, tick=False):
        destination = publish_now(account["id"], "regrettable", [media["id"]])
        publish_now(account["id"], "keeper")
    with time_machine.travel(start + timedelta(seconds=2), tick=False):
        before = atom(anonymous, token)
    row = Account.objects.get(pk=account["id"])
    adapter = get_adapter("feed")
    with time_machine.travel(start + timedelta(seconds=5), tick=False):
        adapter.delete(account=account_context(row), external_id=destination.external_id)
        adapter.delete(
            account=account_context(row), external_id=destination.external_id
        )  # safe to repeat
    root = parse_atom(atom(anonymous, token))
    assert [e.findtext(f"{ATOM}content") for e in root.findall(f"{ATOM}entry")] == ["keeper"]
    assert (
        atom(anonymous, token, **{"If-Modified-Since": before["Last-Modified"]}).status_code == 200
    )
    assert atom(anonymous, token, **{"If-None-Match": before["ETag"]}).status_code == 200
    permalink = destination.external_url.removeprefix("http://testserver")
    assert anonymous.get(permalink).status_code == 410
    assert anonymous.get(f"/feeds/{token}/media/{media['id']}").status_code == 404
    assert FeedEntry.objects.get(pk=destination.external_id).text == ""  # the content is gone
    assert (
        adapter.reconcile(
            account=account_context(row),
            request=PublishRequest(
                profile="feed.entry",
                text="regrettable",
                idempotency_key=destination.idempotency_key,
            ),
        )
        is None
    )
    # A re-send with the same key brings the same entry back.
    again = adapter.publish(
        account=account_context(row),
        request=PublishRequest(
            profile="feed.entry",
            text="second thoughts",
            idempotency_key=destination.idempotency_key,
        ),
    )
    assert again.external_id == destination.external_id
    assert anonymous.get(permalink).status_code == 200


def test_disconnect_stops_serving_the_feed(
    owner_client: APIClient,
    workspace: Any,
    anonymous: Client,
    media_storage: Any,
    publish_now: Callable[..., Destination],
) -> None:
    account = connect_feed(owner_client, workspace)
    token = token_of(account)
    media = upload(owner_client, workspace)
    destination = publish_now(account["id"], "hello", [media["id"]])
    assert anonymous.get(f"/feeds/{token}.atom").status_code == 200
    assert owner_client.delete(f"{API}/accounts/{account['id']}").status_code == 204
    for path in (
        f"/feeds/{token}.atom",
        f"/feeds/{token}.json",
        destination.external_url.removeprefix("http://testserver"),
        f"/feeds/{token}/media/{media['id']}",
    ):
        assert anonymous.get(path).status_code == 410, path
    assert anonymous.get(f"/feeds/{'f' * 32}.atom").status_code == 404
    assert anonymous.get(f"/feeds/{token[:-1]}.atom").status_code == 404


# --- profile_url --------------------------------------------------------------------------------


def test_profile_url_of_each_provider(
    owner_client: APIClient,
    workspace: Any,
    mastodon: MastodonStandIn,
    bluesky: BlueskyStandIn,
    discord: DiscordWebhookStandIn,
    telegram: TelegramStandIn,
) -> None:
    account = connect(owner_client, workspace, "mastodon", mastodon)
    assert account["profile_url"] == f"{mastodon.url}/@herald"
    account = connect(owner_client, workspace, "bluesky", bluesky)
    assert account["profile_url"] == "https://bsky.app/profile/herald.test"
    account = connect(owner_client, workspace, "discord_webhook", discord)
    assert account["profile_url"] == ""
    account = connect(owner_client, workspace, "telegram", telegram)  # a group without a username
    assert account["profile_url"] == ""
    fields = {
        **connect_fields("telegram", telegram),
        "chat_id": telegram.fixtures()["channel_chat_id"],
    }
    channel = ok(
        owner_client.post(
            f"{API}/accounts/connect",
            {
                "workspace_id": str(workspace.pk),
                "provider": "telegram",
                "fields": fields,
            },
            format="json",
        ),
        201,
    )["account"]
    assert channel["profile_url"] == "https://t.me/heraldnews"
    listed = ok(owner_client.get(f"{API}/accounts", {"workspace_id": str(workspace.pk)}))["items"]
    assert all("profile_url" in item for item in listed)


def test_the_migration_backfills_what_the_stored_account_says(
    workspace: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    mastodon = make_account(
        workspace,
        "mastodon",
        username="herald@social.example",
        instance_url="https://social.example",
    )
    bluesky = make_account(workspace, "bluesky", external_id="did:plc:x", username="herald.test")
    discord = make_account(workspace, "discord_webhook", external_id="2", username="hook")
    more = make_account(workspace, "bluesky", external_id="did:plc:y", username="more.test")
    migration = importlib.import_module(
        "publishing.migrations.0006_profile_url_default_and_backfill"
    )
    monkeypatch.setattr(migration, "BATCH", 2)  # several batches, each its own transaction
    migration.backfill_profile_urls(django_apps, SimpleNamespace(connection=connection))
    for row in (mastodon, bluesky, discord, more):
        row.refresh_from_db()
    assert mastodon.profile_url == "https://social.example/@herald"
    assert bluesky.profile_url == "https://bsky.app/profile/herald.test"
    assert discord.profile_url == ""
    assert more.profile_url == "https://bsky.app/profile/more.test"


def test_deleting_the_workspace_deletes_its_feeds(
    owner_client: APIClient,
    workspace: Any,
    anonymous: Client,
    media_storage: Any,
    publish_now: Callable[..., Destination],
) -> None:
    account = connect_feed(owner_client, workspace)
    media = upload(owner_client, workspace)
    publish_now(account["id"], "bye", [media["id"]])
    workspace.delete()  # what the workspace-deletion service ends with
    assert not FeedEntry.objects.exists()
    assert anonymous.get(f"/feeds/{token_of(account)}.atom").status_code == 404
