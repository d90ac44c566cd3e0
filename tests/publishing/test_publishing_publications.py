"""Publications API: create, get, list, replace, delete, schedule, publish now, cancel,
retry failed, events; validation of every destination against its capability metadata;
Idempotency-Key; plan limits; access."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
import time_machine
from django.utils import timezone
from rest_framework.test import APIClient

from providers.helpers import LANGUAGES
from publishing import tasks
from publishing.models import Destination, IdempotencyRecord, Publication
from publishing.services import delivery
from tests.endpoint_support import MEMBERS_ONLY, DetailTests, WorkspaceListTests
from tests.problem_asserts import assert_invalid, assert_problem
from tests.providers import tiny_png
from tests.providers.discord_webhook.standin import DiscordWebhookStandIn
from tests.providers.telegram.standin import TelegramStandIn
from tests.publishing_support import (
    API,
    connect,
    create_publication,
    gif_bytes,
    make_account,
    ok,
    upload,
)
from tests.video_support import make_video
from workspaces.access import Actor
from workspaces.models import Plan, User, WorkspaceMembership

pytestmark = pytest.mark.django_db

URL = "https://example.com/" + "x" * 100  # counts 23 on Mastodon


@pytest.fixture
def run(delivery_queue: Any, django_capture_on_commit_callbacks: Any) -> Callable[..., Any]:
    """POST an action with on-commit callbacks executed, then deliver what it queued."""

    def post(
        client: APIClient, path: str, body: Any = None, status: int = 202, deliver: bool = True
    ) -> Any:
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post(f"{API}{path}", body, format="json")
        data = ok(response, status)
        while deliver and (delivery_queue.sends or delivery_queue.reconciles):
            with django_capture_on_commit_callbacks(execute=True):
                delivery_queue.run(rounds=1)
        return data

    return post


def pub_url(publication: dict[str, Any], action: str = "") -> str:
    return f"{API}/publications/{publication['id']}" + (f"/{action}" if action else "")


# --- Create, get, list ----------------------------------------------------------------------------


def test_create_and_get(owner_client: APIClient, workspace: Any, user: User) -> None:
    hook = make_account(workspace, "discord_webhook")
    masto = make_account(workspace, "mastodon")
    response = owner_client.post(
        f"{API}/publications",
        {
            "workspace_id": str(workspace.pk),
            "text": "Hello",
            "destinations": [
                {"account_id": str(hook.pk)},
                {
                    "account_id": str(masto.pk),
                    "text": "Hello, fediverse",
                    "options": {"visibility": "unlisted"},
                },
            ],
        },
        format="json",
    )
    body = ok(response, 201)
    assert response["Location"].endswith(f"/api/v1/publications/{body['id']}")
    assert body["$schema"].endswith("/schemas/Publication.json")
    assert body["status"] == "draft"
    assert body["revision"] == 1
    assert body["text"] == "Hello"
    assert body["created_by"] == str(user.pk)
    first, second = body["destinations"]
    assert (first["account_id"], first["profile"], first["status"], first["text"]) == (
        str(hook.pk),
        "discord_webhook.message",
        "draft",
        None,
    )
    assert first["provider"] == "discord_webhook"
    assert second["profile"] == "mastodon.post"
    assert second["text"] == "Hello, fediverse"
    assert second["options"] == {"visibility": "unlisted"}
    assert ok(owner_client.get(pub_url(body))) == body
    events = ok(owner_client.get(pub_url(body, "events")))["items"]
    assert [e["kind"] for e in events] == ["publication.created"]


def test_option_defaults_are_filled_in(owner_client: APIClient, workspace: Any) -> None:
    masto = make_account(workspace, "mastodon")
    body = create_publication(owner_client, workspace, [str(masto.pk)])
    assert body["destinations"][0]["options"] == {"visibility": "public"}


def test_list_filters_and_cursor(owner_client: APIClient, workspace: Any) -> None:
    hook = make_account(workspace, "discord_webhook")
    masto = make_account(workspace, "mastodon")
    a = create_publication(owner_client, workspace, [str(hook.pk)], text="A")
    b = create_publication(owner_client, workspace, [str(masto.pk)], text="B")
    c = create_publication(owner_client, workspace, [str(hook.pk), str(masto.pk)], text="C")
    ok(owner_client.post(pub_url(a, "cancel")))
    ws = {"workspace_id": str(workspace.pk)}

    def ids(**query: Any) -> list[str]:
        return [
            p["id"] for p in ok(owner_client.get(f"{API}/publications", {**ws, **query}))["items"]
        ]

    assert ids() == [c["id"], b["id"], a["id"]]
    assert ids(status="canceled") == [a["id"]]
    assert ids(status="draft") == [c["id"], b["id"]]
    assert ids(account_id=str(masto.pk)) == [c["id"], b["id"]]
    assert ids(account_id=str(hook.pk), status="draft") == [c["id"]]
    page = ok(owner_client.get(f"{API}/publications", {**ws, "limit": 2}))
    assert [p["id"] for p in page["items"]] == [c["id"], b["id"]]
    rest = ok(
        owner_client.get(f"{API}/publications", {**ws, "limit": 2, "cursor": page["next_cursor"]})
    )
    assert [p["id"] for p in rest["items"]] == [a["id"]]
    assert rest["next_cursor"] is None
    # A cursor is bound to its list (here: other filters).
    assert_invalid(
        owner_client.get(
            f"{API}/publications", {**ws, "status": "draft", "cursor": page["next_cursor"]}
        ),
        "query.cursor",
    )
    assert_invalid(
        owner_client.get(f"{API}/publications", {**ws, "status": "sent"}), "query.status"
    )
    assert_invalid(owner_client.get(f"{API}/publications", {**ws, "limit": 101}), "query.limit")
    assert_invalid(
        owner_client.get(f"{API}/publications", {**ws, "account_id": "nope"}), "query.account_id"
    )


def test_events_and_actions_of_an_unknown_publication_are_404(owner_client: APIClient) -> None:
    for path in ("/events", "/cancel"):
        response = (owner_client.post if path == "/cancel" else owner_client.get)(
            f"{API}/publications/00000000-0000-0000-0000-000000000000{path}"
        )
        assert_problem(response, 404, "not_found")


# --- Replace and delete ---------------------------------------------------------------------------


def test_replace_with_expected_revision(owner_client: APIClient, workspace: Any) -> None:
    hook = make_account(workspace, "discord_webhook")
    masto = make_account(workspace, "mastodon")
    body = create_publication(owner_client, workspace, [str(hook.pk)], text="v1")
    replaced = ok(
        owner_client.put(
            pub_url(body),
            {
                "expected_revision": 1,
                "text": "v2",
                "destinations": [{"account_id": str(masto.pk)}],
            },
            format="json",
        )
    )
    assert replaced["revision"] == 2
    assert replaced["text"] == "v2"
    assert [d["account_id"] for d in replaced["destinations"]] == [str(masto.pk)]
    stale = owner_client.put(
        pub_url(body),
        {
            "expected_revision": 1,
            "text": "v3",
            "destinations": [{"account_id": str(hook.pk)}],
        },
        format="json",
    )
    assert_problem(stale, 409, "revision_conflict")
    assert ok(owner_client.get(pub_url(body))) == replaced  # nothing changed
    assert_invalid(
        owner_client.put(
            pub_url(body),
            {"text": "x", "destinations": [{"account_id": str(hook.pk)}]},
            format="json",
        ),
        "body.expected_revision",
    )
    # An invalid replacement changes nothing either.
    invalid = owner_client.put(
        pub_url(body),
        {
            "expected_revision": 2,
            "text": "y" * 501,
            "destinations": [{"account_id": str(masto.pk)}],
        },
        format="json",
    )
    assert_invalid(invalid, "body.text")
    assert ok(owner_client.get(pub_url(body))) == replaced


def test_replace_keeps_the_schedule(owner_client: APIClient, workspace: Any) -> None:
    hook = make_account(workspace, "discord_webhook")
    body = create_publication(owner_client, workspace, [str(hook.pk)])
    when = timezone.now() + timedelta(hours=2)
    ok(
        owner_client.post(
            pub_url(body, "schedule"),
            {"scheduled_at": when.isoformat(), "expected_revision": 1},
            format="json",
        )
    )
    replaced = ok(
        owner_client.put(
            pub_url(body),
            {
                "expected_revision": 1,
                "text": "changed",
                "destinations": [{"account_id": str(hook.pk)}],
            },
            format="json",
        )
    )
    assert replaced["status"] == "scheduled"
    destination = Destination.objects.get(publication_id=body["id"])
    assert destination.status == "scheduled"
    assert destination.due_at == destination.next_attempt_at
    assert destination.due_at is not None
    assert destination.deadline_at is not None
    assert destination.deadline_at > destination.due_at


def test_delete(owner_client: APIClient, workspace: Any) -> None:
    hook = make_account(workspace, "discord_webhook")
    body = create_publication(owner_client, workspace, [str(hook.pk)])
    assert owner_client.delete(pub_url(body)).status_code == 204
    assert_problem(owner_client.get(pub_url(body)), 404, "not_found")
    assert not Destination.objects.exists()


def test_delete_while_delivering_is_409(
    owner_client: APIClient, workspace: Any, run: Callable[..., Any]
) -> None:
    hook = make_account(workspace, "discord_webhook")
    body = create_publication(owner_client, workspace, [str(hook.pk)])
    run(
        owner_client,
        f"/publications/{body['id']}/publish-now",
        {"expected_revision": 1},
        deliver=False,
    )
    assert_problem(owner_client.delete(pub_url(body)), 409, "publication_state")


# --- Schedule, publish now, cancel ----------------------------------------------------------------


def test_schedule_validation(owner_client: APIClient, workspace: Any) -> None:
    hook = make_account(workspace, "discord_webhook")
    body = create_publication(owner_client, workspace, [str(hook.pk)])
    past = (timezone.now() - timedelta(minutes=1)).isoformat()
    assert_invalid(
        owner_client.post(pub_url(body, "schedule"), {"scheduled_at": past}, format="json"),
        "body.scheduled_at",
    )
    assert_invalid(
        owner_client.post(pub_url(body, "schedule"), {}, format="json"), "body.scheduled_at"
    )
    assert_invalid(
        owner_client.post(pub_url(body, "schedule"), {"scheduled_at": "tomorrow"}, format="json"),
        "body.scheduled_at",
    )
    future = (timezone.now() + timedelta(hours=1)).isoformat()
    assert_invalid(
        owner_client.post(
            pub_url(body, "schedule"),
            {"scheduled_at": future, "expected_revision": 0},
            format="json",
        ),
        "body.expected_revision",
    )
    assert_problem(
        owner_client.post(
            pub_url(body, "schedule"),
            {"scheduled_at": future, "expected_revision": 7},
            format="json",
        ),
        409,
        "revision_conflict",
    )
    assert ok(owner_client.get(pub_url(body)))["status"] == "draft"


def test_scheduled_publication_is_dispatched_when_due(
    owner_client: APIClient,
    workspace: Any,
    discord: DiscordWebhookStandIn,
    delivery_queue: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    hook = connect(owner_client, workspace, "discord_webhook", discord)
    body = create_publication(owner_client, workspace, [hook["id"]], text="Later")
    due = timezone.now() + timedelta(minutes=10)
    scheduled = ok(
        owner_client.post(
            pub_url(body, "schedule"),
            {"scheduled_at": due.isoformat(), "expected_revision": 1},
            format="json",
        )
    )
    assert scheduled["status"] == "scheduled"
    assert scheduled["scheduled_at"] is not None
    assert [d["status"] for d in scheduled["destinations"]] == ["scheduled"]
    # Rescheduling a scheduled publication moves it.
    due = due + timedelta(minutes=5)
    ok(
        owner_client.post(
            pub_url(body, "schedule"), {"scheduled_at": due.isoformat()}, format="json"
        )
    )
    assert delivery.delivery_dispatch()["due"] == 0  # not yet
    assert delivery_queue.sends == []
    with time_machine.travel(due + timedelta(seconds=1)):
        counts = delivery.delivery_dispatch()
        assert counts["due"] == 1
        assert Publication.objects.get(pk=body["id"]).status == "publishing"
        assert Destination.objects.get(publication_id=body["id"]).status == "queued"
        with django_capture_on_commit_callbacks(execute=True):
            delivery_queue.run()
    result = ok(owner_client.get(pub_url(body)))
    assert result["status"] == "published"
    assert result["destinations"][0]["status"] == "published"
    assert result["destinations"][0]["external_id"]
    assert discord.posts_accepted == 1
    kinds = [e["kind"] for e in ok(owner_client.get(pub_url(body, "events")))["items"]]
    assert kinds == [
        "publication.created",
        "publication.scheduled",
        "publication.scheduled",
        "publication.due",
        "destination.published",
        "publication.published",
    ]


def test_publish_now_queues_and_delivers(
    owner_client: APIClient, workspace: Any, discord: DiscordWebhookStandIn, run: Callable[..., Any]
) -> None:
    hook = connect(owner_client, workspace, "discord_webhook", discord)
    body = create_publication(owner_client, workspace, [hook["id"]])
    queued = run(
        owner_client,
        f"/publications/{body['id']}/publish-now",
        {"expected_revision": 1},
        deliver=False,
    )
    assert queued["status"] == "publishing"  # queued, not delivered
    assert [d["status"] for d in queued["destinations"]] == ["queued"]
    assert discord.posts_accepted == 0
    run(
        owner_client,
        f"/publications/{body['id']}/publish-now",
        {"expected_revision": 1},
        status=409,
        deliver=True,
    )
    result = ok(owner_client.get(pub_url(body)))
    assert result["status"] == "published"
    assert result["destinations"][0]["external_id"]
    assert result["destinations"][0]["external_url"]
    assert result["destinations"][0]["published_at"]
    assert discord.posts_accepted == 1
    events = ok(owner_client.get(pub_url(body, "events")))
    assert events["$schema"].endswith(".json")
    assert [e["kind"] for e in events["items"]] == [
        "publication.created",
        "publication.queued",
        "destination.published",
        "publication.published",
    ]
    published = events["items"][2]
    assert published["destination_id"] == result["destinations"][0]["id"]
    assert published["data"]["external_id"] == result["destinations"][0]["external_id"]
    page = ok(owner_client.get(pub_url(body, "events"), {"limit": 2}))
    assert [e["kind"] for e in page["items"]] == ["publication.created", "publication.queued"]
    rest = ok(
        owner_client.get(pub_url(body, "events"), {"limit": 2, "cursor": page["next_cursor"]})
    )
    assert [e["kind"] for e in rest["items"]] == ["destination.published", "publication.published"]


def test_publish_now_with_a_stale_revision(owner_client: APIClient, workspace: Any) -> None:
    hook = make_account(workspace, "discord_webhook")
    body = create_publication(owner_client, workspace, [str(hook.pk)])
    assert_problem(
        owner_client.post(pub_url(body, "publish-now"), {"expected_revision": 2}, format="json"),
        409,
        "revision_conflict",
    )
    assert ok(owner_client.get(pub_url(body)))["status"] == "draft"


def test_cancel(owner_client: APIClient, workspace: Any, delivery_queue: Any) -> None:
    hook = make_account(workspace, "discord_webhook")
    draft = create_publication(owner_client, workspace, [str(hook.pk)])
    canceled = ok(owner_client.post(pub_url(draft, "cancel")))
    assert canceled["status"] == "canceled"
    assert [d["status"] for d in canceled["destinations"]] == ["canceled"]
    assert_problem(owner_client.post(pub_url(draft, "cancel")), 409, "publication_state")
    assert_problem(
        owner_client.post(pub_url(draft, "publish-now"), {}, format="json"),
        409,
        "publication_state",
    )
    future = (timezone.now() + timedelta(hours=1)).isoformat()
    assert_problem(
        owner_client.post(pub_url(draft, "schedule"), {"scheduled_at": future}, format="json"),
        409,
        "publication_state",
    )
    assert_problem(
        owner_client.put(
            pub_url(draft),
            {"expected_revision": 1, "text": "x", "destinations": [{"account_id": str(hook.pk)}]},
            format="json",
        ),
        409,
        "publication_state",
    )
    # A scheduled publication can be canceled; the dispatcher then leaves it alone.
    scheduled = create_publication(owner_client, workspace, [str(hook.pk)])
    ok(owner_client.post(pub_url(scheduled, "schedule"), {"scheduled_at": future}, format="json"))
    assert ok(owner_client.post(pub_url(scheduled, "cancel")))["status"] == "canceled"
    with time_machine.travel(timezone.now() + timedelta(hours=2)):
        assert delivery.delivery_dispatch()["due"] == 0
    assert delivery_queue.sends == []
    # A publication being delivered cannot be canceled.
    now = create_publication(owner_client, workspace, [str(hook.pk)])
    ok(owner_client.post(pub_url(now, "publish-now"), {}, format="json"), 202)
    assert_problem(owner_client.post(pub_url(now, "cancel")), 409, "publication_state")


def test_readiness_blocks_queue_actions(
    owner_client: APIClient, workspace: Any, settings: Any
) -> None:
    hook = make_account(workspace, "discord_webhook")
    body = create_publication(owner_client, workspace, [str(hook.pk)])
    settings.HERALD_DISABLED_PROVIDERS = ["discord_webhook"]
    assert_problem(
        owner_client.post(pub_url(body, "publish-now"), {}, format="json"), 409, "readiness_blocked"
    )
    future = (timezone.now() + timedelta(hours=1)).isoformat()
    assert_problem(
        owner_client.post(pub_url(body, "schedule"), {"scheduled_at": future}, format="json"),
        409,
        "readiness_blocked",
    )
    assert ok(owner_client.get(pub_url(body)))["status"] == "draft"
    settings.HERALD_DISABLED_PROVIDERS = []
    hook.status = "reconnect_required"
    hook.save()
    assert_problem(
        owner_client.post(pub_url(body, "publish-now"), {}, format="json"), 409, "readiness_blocked"
    )


# --- Retry failed ---------------------------------------------------------------------------------


def test_retry_failed_touches_only_the_failed_destination(
    owner_client: APIClient,
    workspace: Any,
    discord: DiscordWebhookStandIn,
    telegram: TelegramStandIn,
    run: Callable[..., Any],
) -> None:
    hook = connect(owner_client, workspace, "discord_webhook", discord)
    bot = connect(owner_client, workspace, "telegram", telegram)
    body = create_publication(owner_client, workspace, [hook["id"], bot["id"]])
    telegram.set_faults(
        permanent={"count": 1, "status": 400, "message": "Bad Request: message text is rejected"}
    )
    run(owner_client, f"/publications/{body['id']}/publish-now", {"expected_revision": 1})
    after = ok(owner_client.get(pub_url(body)))
    assert after["status"] == "partially_published"
    by_provider = {d["provider"]: d for d in after["destinations"]}
    assert by_provider["discord_webhook"]["status"] == "published"
    assert by_provider["telegram"]["status"] == "failed"
    assert by_provider["telegram"]["action"] == "edit"
    assert by_provider["telegram"]["error_kind"] == "permanent"
    assert (discord.posts_accepted, telegram.posts_accepted) == (1, 0)

    retried = run(owner_client, f"/publications/{body['id']}/retry-failed", deliver=False)
    assert retried["status"] == "publishing"
    statuses = {d["provider"]: d["status"] for d in retried["destinations"]}
    assert statuses == {"discord_webhook": "published", "telegram": "queued"}
    run(owner_client, f"/publications/{body['id']}/retry-failed", status=409, deliver=True)
    final = ok(owner_client.get(pub_url(body)))
    assert final["status"] == "published"
    assert (discord.posts_accepted, telegram.posts_accepted) == (1, 1)  # exactly one more post
    assert {d["provider"]: d["external_id"] for d in final["destinations"]}[
        "discord_webhook"
    ] == by_provider["discord_webhook"]["external_id"]
    assert_problem(owner_client.post(pub_url(body, "retry-failed")), 409, "publication_state")


def test_retry_failed_of_a_draft_is_409(owner_client: APIClient, workspace: Any) -> None:
    hook = make_account(workspace, "discord_webhook")
    body = create_publication(owner_client, workspace, [str(hook.pk)])
    assert_problem(owner_client.post(pub_url(body, "retry-failed")), 409, "publication_state")


# --- Validation against capability metadata -------------------------------------------------------


def test_mastodon_text_limit_counts_urls_as_23(owner_client: APIClient, workspace: Any) -> None:
    masto = make_account(workspace, "mastodon")
    fits = "a" * 476 + " " + URL  # 476 + 1 + 23 = 500
    create_publication(owner_client, workspace, [str(masto.pk)], text=fits)
    too_long = "a" * 477 + " " + URL  # 501
    assert_invalid(
        create_publication(owner_client, workspace, [str(masto.pk)], text=too_long, status=422),
        "body.text",
    )
    response = owner_client.post(
        f"{API}/publications",
        {
            "workspace_id": str(workspace.pk),
            "text": "short",
            "destinations": [{"account_id": str(masto.pk), "text": too_long}],
        },
        format="json",
    )
    assert_invalid(response, "body.destinations[0].text")


def test_bluesky_counts_graphemes(owner_client: APIClient, workspace: Any) -> None:
    sky = make_account(workspace, "bluesky")
    hook = make_account(workspace, "discord_webhook")
    thumbs = (
        "\N{THUMBS UP SIGN}\N{EMOJI MODIFIER FITZPATRICK TYPE-4}"  # one grapheme, two code points
    )
    create_publication(owner_client, workspace, [str(sky.pk)], text=thumbs * 300)
    response = owner_client.post(
        f"{API}/publications",
        {
            "workspace_id": str(workspace.pk),
            "text": "fine",
            "destinations": [
                {"account_id": str(hook.pk)},
                {"account_id": str(sky.pk), "text": thumbs * 301},
            ],
        },
        format="json",
    )
    assert_invalid(response, "body.destinations[1].text")


def test_media_rules(owner_client: APIClient, workspace: Any, media_storage: Any) -> None:
    masto = make_account(workspace, "mastodon")
    sky = make_account(workspace, "bluesky")
    bot = make_account(workspace, "telegram")
    pngs = [upload(owner_client, workspace, tiny_png(2, 2, (i, 0, 0)))["id"] for i in range(5)]
    gif = upload(owner_client, workspace, gif_bytes(), name="a.gif")["id"]
    # Too many media for Mastodon (4).
    assert_invalid(
        create_publication(owner_client, workspace, [str(masto.pk)], media_ids=pngs, status=422),
        "body.media_ids",
    )
    create_publication(owner_client, workspace, [str(masto.pk)], media_ids=pngs[:4])
    # Bluesky takes no GIF; the location names the destination's own media list when overridden.
    assert_invalid(
        create_publication(owner_client, workspace, [str(sky.pk)], media_ids=[gif], status=422),
        "body.media_ids[0]",
    )
    response = owner_client.post(
        f"{API}/publications",
        {
            "workspace_id": str(workspace.pk),
            "text": "x",
            "destinations": [
                {"account_id": str(masto.pk), "media_ids": [gif]},
                {"account_id": str(sky.pk), "media_ids": [pngs[0], gif]},
            ],
        },
        format="json",
    )
    assert_invalid(response, "body.destinations[1].media_ids[1]")
    # telegram.photo needs exactly one image.
    response = owner_client.post(
        f"{API}/publications",
        {
            "workspace_id": str(workspace.pk),
            "text": "caption",
            "destinations": [{"account_id": str(bot.pk), "profile": "telegram.photo"}],
        },
        format="json",
    )
    assert_invalid(response, "body.media_ids")
    ok(
        owner_client.post(
            f"{API}/publications",
            {
                "workspace_id": str(workspace.pk),
                "text": "caption",
                "media_ids": [pngs[0]],
                "destinations": [{"account_id": str(bot.pk), "profile": "telegram.photo"}],
            },
            format="json",
        ),
        201,
    )
    # telegram.message takes no media and needs text.
    response = owner_client.post(
        f"{API}/publications",
        {
            "workspace_id": str(workspace.pk),
            "text": "",
            "media_ids": [pngs[0]],
            "destinations": [{"account_id": str(bot.pk)}],
        },
        format="json",
    )
    assert_invalid(response, "body.text", "body.media_ids", "body.media_ids[0]")
    # Unknown media.
    assert_invalid(
        create_publication(
            owner_client,
            workspace,
            [str(masto.pk)],
            media_ids=["00000000-0000-0000-0000-000000000000"],
            status=422,
        ),
        "body.media_ids[0]",
    )


def test_options_and_profiles(owner_client: APIClient, workspace: Any) -> None:
    masto = make_account(workspace, "mastodon")
    response = owner_client.post(
        f"{API}/publications",
        {
            "workspace_id": str(workspace.pk),
            "text": "x",
            "destinations": [
                {
                    "account_id": str(masto.pk),
                    "options": {"visibility": "everyone", "colour": "red"},
                }
            ],
        },
        format="json",
    )
    body = assert_invalid(
        response, "body.destinations[0].options.visibility", "body.destinations[0].options.colour"
    )
    bad = next(e for e in body["errors"] if e["location"].endswith("visibility"))
    assert bad["value"] == "everyone"
    response = owner_client.post(
        f"{API}/publications",
        {
            "workspace_id": str(workspace.pk),
            "text": "x",
            "destinations": [{"account_id": str(masto.pk), "profile": "mastodon.reel"}],
        },
        format="json",
    )
    assert_invalid(response, "body.destinations[0].profile")


def test_structural_validation(owner_client: APIClient, workspace: Any) -> None:
    hook = make_account(workspace, "discord_webhook")
    ws = str(workspace.pk)

    def post(body: dict[str, Any]) -> Any:
        return owner_client.post(f"{API}/publications", body, format="json")

    assert_invalid(post({"workspace_id": ws, "text": "x", "destinations": []}), "body.destinations")
    assert_invalid(post({"workspace_id": ws, "text": "x"}), "body.destinations")
    assert_invalid(
        post({"workspace_id": ws, "text": "x", "destinations": [{"account_id": str(hook.pk)}] * 2}),
        "body.destinations",
    )
    assert_invalid(
        post(
            {
                "workspace_id": ws,
                "text": "x",
                "destinations": [{"account_id": str(hook.pk)}],
                "colour": "red",
            }
        ),
        "body.colour",
    )
    assert_invalid(
        post(
            {
                "workspace_id": ws,
                "text": "x",
                "destinations": [{"account_id": str(hook.pk), "x": 1}],
            }
        ),
        "body.destinations[0].x",
    )
    assert_invalid(
        post({"workspace_id": ws, "text": "", "destinations": [{"account_id": str(hook.pk)}]}),
        "body.text",
    )
    assert_invalid(
        post({"workspace_id": ws, "text": 5, "destinations": "all"}), "body.destinations"
    )
    assert not Publication.objects.exists()


def test_destination_accounts_must_be_known_and_in_the_workspace(
    owner_client: APIClient, workspace: Any, make_user: Callable[..., User]
) -> None:
    from workspaces.services import organization_create, workspace_create

    stranger = make_user()
    org = organization_create(actor=Actor(user=stranger), name="Other")
    elsewhere = workspace_create(
        actor=Actor(user=stranger), organization_id=org.pk, name="Elsewhere"
    )
    foreign = make_account(elsewhere, "discord_webhook")
    mine = make_account(workspace, "discord_webhook", external_id="2")
    response = create_publication(
        owner_client, workspace, [str(mine.pk), str(foreign.pk)], status=403
    )
    assert_problem(response, 403, "account_not_in_workspace")
    response = create_publication(
        owner_client, workspace, ["00000000-0000-0000-0000-000000000000"], status=404
    )
    assert_problem(response, 404, "not_found")
    mine.status = "disconnected"
    mine.save()
    assert_problem(
        create_publication(owner_client, workspace, [str(mine.pk)], status=404), 404, "not_found"
    )
    assert not Publication.objects.exists()


UNKNOWN_ID = "00000000-0000-0000-0000-000000000000"  # no account and no media has it


def test_every_failing_field_is_listed_once_in_request_order(
    owner_client: APIClient, workspace: Any, media_storage: Any
) -> None:
    """The whole errors[] of one 422, entry by entry: the destination list (account IDs, each
    account once), the publication's media, then each destination in turn: profile, text, media
    count, each media item, its video rules, options (unknown ones first, then each option)."""
    masto = make_account(workspace, "mastodon")
    sky = make_account(workspace, "bluesky", external_id="2")
    bot = make_account(workspace, "telegram", external_id="3")
    x = make_account(workspace, "x", external_id="4")
    png = upload(owner_client, workspace)["id"]
    gif = upload(owner_client, workspace, gif_bytes(), name="a.gif")["id"]
    # Shorter than X's half second.
    video = upload(owner_client, workspace, make_video(seconds=0.3), name="clip.mp4")["id"]
    tasks.media_probe(video)
    destinations = [
        {
            "account_id": str(masto.pk),
            "text": "a" * 501,
            "options": {"visibility": "everyone", "language": "toolonglang", "colour": "red"},
        },
        {"account_id": "nope"},
        {
            "account_id": str(bot.pk),
            "profile": "telegram.message",
            "options": {"chat_id": "9" * 41},
        },
        {
            "account_id": str(sky.pk),
            "text": "",
            "media_ids": [png, UNKNOWN_ID, gif],
            "options": {"language": "klingonese"},
        },
        {"account_id": str(x.pk), "media_ids": [video, UNKNOWN_ID]},
        {"account_id": str(masto.pk), "profile": "mastodon.reel"},
        {"account_id": str(bot.pk), "profile": "telegram.photo", "media_ids": []},
    ]
    response = owner_client.post(
        f"{API}/publications",
        {
            "workspace_id": str(workspace.pk),
            "text": "",
            "media_ids": [UNKNOWN_ID, png],
            "destinations": destinations,
        },
        format="json",
    )
    body = assert_problem(response, 422, "invalid")
    no_media = "No such media in this workspace."
    assert body["errors"] == [
        {"location": "body.destinations[1].account_id", "message": "Unknown account."},
        {"location": "body.destinations", "message": "Each account may appear once."},
        {"location": "body.media_ids[0]", "message": no_media, "value": UNKNOWN_ID},
        {
            "location": "body.destinations[0].text",
            "message": "mastodon.post allows 500 graphemes; each URL counts as 23, "
            "@user@domain counts as @user; this text has 501.",
        },
        {
            "location": "body.destinations[0].options.colour",
            "message": "Unknown option for this format.",
        },
        {
            "location": "body.destinations[0].options.visibility",
            "message": "One of: public, unlisted, private, direct.",
            "value": "everyone",
        },
        {
            "location": "body.destinations[0].options.language",
            "message": "At most 8 characters.",
        },
        {"location": "body.text", "message": "telegram.message needs text."},
        {"location": "body.media_ids", "message": "telegram.message allows 0 media items."},
        {"location": "body.media_ids[1]", "message": "telegram.message does not take image/png."},
        {"location": "body.destinations[2].options.chat_id", "message": "At most 40 characters."},
        {
            "location": "body.destinations[3].media_ids[1]",
            "message": no_media,
            "value": UNKNOWN_ID,
        },
        {
            "location": "body.destinations[3].media_ids[2]",
            "message": "bluesky.post does not take image/gif.",
        },
        {
            "location": "body.destinations[3].options.language",
            "message": f"One of: {', '.join(LANGUAGES)}.",
            "value": "klingonese",
        },
        {
            "location": "body.destinations[3].options.language",
            "message": "At most 8 characters.",
        },
        {
            "location": "body.destinations[4].media_ids[1]",
            "message": no_media,
            "value": UNKNOWN_ID,
        },
        {
            "location": "body.destinations[4].media_ids[0]",
            "message": "X: videos of at least 0.5 s; this one is 0.3 s.",
        },
        {
            "location": "body.destinations[5].profile",
            "message": "mastodon has no format mastodon.reel.",
            "value": "mastodon.reel",
        },
        {"location": "body.text", "message": "Send text, media or both."},
        {
            "location": "body.destinations[6].media_ids",
            "message": "telegram.photo needs a media item.",
        },
    ]
    assert not Publication.objects.exists()


def test_create_settles_profile_and_options_without_changing_the_callers_destinations(
    workspace: Any, user: User
) -> None:
    from publishing.services.publications import publication_create

    masto = make_account(workspace, "mastodon")
    destinations = [{"account_id": str(masto.pk), "options": {"language": "de"}}]
    publication = publication_create(
        actor=Actor(user=user), workspace_id=workspace.pk, text="x", destinations=destinations
    )
    assert destinations == [{"account_id": str(masto.pk), "options": {"language": "de"}}]
    stored = publication.destinations.get()
    assert stored.profile == "mastodon.post"
    assert stored.options == {"language": "de", "visibility": "public"}


def test_an_account_refusal_wins_over_every_field_error(
    owner_client: APIClient, workspace: Any, make_user: Callable[..., User]
) -> None:
    """An unknown account (404) or one of another workspace (403) is answered before any 422,
    whichever destination it is; between two refusals, the first destination's wins."""
    from workspaces.services import organization_create, workspace_create

    stranger = make_user()
    org = organization_create(actor=Actor(user=stranger), name="Other")
    elsewhere = workspace_create(
        actor=Actor(user=stranger), organization_id=org.pk, name="Elsewhere"
    )
    foreign = str(make_account(elsewhere, "discord_webhook").pk)
    masto = str(make_account(workspace, "mastodon").pk)

    def post(*destinations: dict[str, Any]) -> Any:
        return owner_client.post(
            f"{API}/publications",
            {
                "workspace_id": str(workspace.pk),
                "text": "x",
                "media_ids": [UNKNOWN_ID],
                "destinations": list(destinations),
            },
            format="json",
        )

    too_long = {"account_id": masto, "text": "a" * 501, "options": {"colour": "red"}}
    assert_problem(post(too_long, {"account_id": UNKNOWN_ID}), 404, "not_found")
    assert_problem(post(too_long, {"account_id": foreign}), 403, "account_not_in_workspace")
    assert_problem(
        post({"account_id": foreign}, {"account_id": UNKNOWN_ID}),
        403,
        "account_not_in_workspace",
    )
    assert_problem(post({"account_id": UNKNOWN_ID}, {"account_id": foreign}), 404, "not_found")
    assert_problem(
        post({"account_id": "nope"}, too_long, too_long, {"account_id": foreign}),
        403,
        "account_not_in_workspace",
    )
    assert not Publication.objects.exists()


# --- Idempotency-Key ------------------------------------------------------------------------------


def test_idempotency_key_replays_the_first_response(
    owner_client: APIClient, workspace: Any
) -> None:
    hook = make_account(workspace, "discord_webhook")
    headers = {"HTTP_IDEMPOTENCY_KEY": "create-1"}
    first = owner_client.post(
        f"{API}/publications",
        {
            "workspace_id": str(workspace.pk),
            "text": "once",
            "destinations": [{"account_id": str(hook.pk)}],
        },
        format="json",
        **headers,
    )
    again = owner_client.post(
        f"{API}/publications",
        {
            "workspace_id": str(workspace.pk),
            "text": "once",
            "destinations": [{"account_id": str(hook.pk)}],
        },
        format="json",
        **headers,
    )
    assert first.status_code == again.status_code == 201
    assert again.json()["id"] == first.json()["id"]
    assert again["Idempotent-Replayed"] == "true"
    assert "Idempotent-Replayed" not in first
    assert again["Location"] == first["Location"]
    assert Publication.objects.count() == 1
    other = owner_client.post(
        f"{API}/publications",
        {
            "workspace_id": str(workspace.pk),
            "text": "twice",
            "destinations": [{"account_id": str(hook.pk)}],
        },
        format="json",
        **headers,
    )
    assert_problem(other, 409, "idempotency_key_reused")
    # The same key on another operation is another request.
    assert_problem(
        owner_client.post(pub_url(first.json(), "cancel"), **headers), 409, "idempotency_key_reused"
    )
    assert Publication.objects.count() == 1


def test_idempotency_key_of_a_failed_request_can_be_used_again(
    owner_client: APIClient, workspace: Any
) -> None:
    hook = make_account(workspace, "discord_webhook")
    headers = {"HTTP_IDEMPOTENCY_KEY": "k" * 200}
    bad = owner_client.post(
        f"{API}/publications",
        {
            "workspace_id": str(workspace.pk),
            "text": "",
            "destinations": [{"account_id": str(hook.pk)}],
        },
        format="json",
        **headers,
    )
    assert_invalid(bad, "body.text")
    good = owner_client.post(
        f"{API}/publications",
        {
            "workspace_id": str(workspace.pk),
            "text": "fixed",
            "destinations": [{"account_id": str(hook.pk)}],
        },
        format="json",
        **headers,
    )
    assert good.status_code == 201


def test_idempotency_key_length(owner_client: APIClient, workspace: Any) -> None:
    hook = make_account(workspace, "discord_webhook")
    response = owner_client.post(
        f"{API}/publications",
        {
            "workspace_id": str(workspace.pk),
            "text": "x",
            "destinations": [{"account_id": str(hook.pk)}],
        },
        format="json",
        HTTP_IDEMPOTENCY_KEY="k" * 201,
    )
    assert_invalid(response, "header.Idempotency-Key")
    assert not Publication.objects.exists()


def test_idempotent_publish_now_queues_once(
    owner_client: APIClient,
    workspace: Any,
    delivery_queue: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    hook = make_account(workspace, "discord_webhook")
    body = create_publication(owner_client, workspace, [str(hook.pk)])
    responses = []
    for _ in range(2):
        with django_capture_on_commit_callbacks(execute=True):
            responses.append(
                owner_client.post(
                    pub_url(body, "publish-now"),
                    {"expected_revision": 1},
                    format="json",
                    HTTP_IDEMPOTENCY_KEY="go",
                )
            )
    assert [r.status_code for r in responses] == [202, 202]
    assert responses[1]["Idempotent-Replayed"] == "true"
    assert responses[0].json() == responses[1].json()
    assert len(delivery_queue.sends) == 1
    assert IdempotencyRecord.objects.count() == 1


def test_idempotency_keys_are_per_user(
    owner_client: APIClient,
    workspace: Any,
    make_user: Callable[..., User],
    bearer_client: Callable[..., APIClient],
) -> None:
    hook = make_account(workspace, "discord_webhook")
    editor = make_user()
    WorkspaceMembership.objects.create(workspace=workspace, user=editor, role="editor")
    body = {
        "workspace_id": str(workspace.pk),
        "text": "x",
        "destinations": [{"account_id": str(hook.pk)}],
    }
    a = owner_client.post(f"{API}/publications", body, format="json", HTTP_IDEMPOTENCY_KEY="same")
    b = bearer_client(editor).post(
        f"{API}/publications", body, format="json", HTTP_IDEMPOTENCY_KEY="same"
    )
    assert a.status_code == b.status_code == 201
    assert a.json()["id"] != b.json()["id"]


# --- Plans and access -----------------------------------------------------------------------------


def test_plan_limit_on_scheduled_publications(owner_client: APIClient, workspace: Any) -> None:
    workspace.plan = Plan.objects.create(
        code="tiny", name="Tiny", max_scheduled_publications_per_month=1
    )
    workspace.save()
    hook = make_account(workspace, "discord_webhook")
    first = create_publication(owner_client, workspace, [str(hook.pk)])
    second = create_publication(owner_client, workspace, [str(hook.pk)])
    when = (timezone.now() + timedelta(hours=1)).isoformat()
    later = (timezone.now() + timedelta(hours=2)).isoformat()
    ok(owner_client.post(pub_url(first, "schedule"), {"scheduled_at": when}, format="json"))
    ok(
        owner_client.post(pub_url(first, "schedule"), {"scheduled_at": later}, format="json")
    )  # a move is free
    assert_problem(
        owner_client.post(pub_url(second, "schedule"), {"scheduled_at": when}, format="json"),
        403,
        "plan_limit",
    )
    assert ok(owner_client.get(pub_url(second)))["status"] == "draft"
    usage = ok(owner_client.get(f"{API}/workspaces/{workspace.pk}/usage"))
    assert usage["usage"]["scheduled_publications"] == 1


def test_write_access(
    owner_client: APIClient,
    workspace: Any,
    make_user: Callable[..., User],
    bearer_client: Callable[..., APIClient],
    user: User,
) -> None:
    hook = make_account(workspace, "discord_webhook")
    body = create_publication(owner_client, workspace, [str(hook.pk)])
    read_only = bearer_client(user, permissions=("api:read",))
    assert ok(read_only.get(pub_url(body)))["id"] == body["id"]
    assert read_only.post(pub_url(body, "publish-now"), {}, format="json").status_code == 403
    assert create_publication(read_only, workspace, [str(hook.pk)], status=403).status_code == 403
    viewer = make_user()
    WorkspaceMembership.objects.create(workspace=workspace, user=viewer, role="viewer")
    viewer_client = bearer_client(viewer)
    assert ok(viewer_client.get(pub_url(body, "events")))["items"]
    assert_problem(
        viewer_client.post(pub_url(body, "publish-now"), {}, format="json"), 403, "role_too_low"
    )
    assert_problem(
        create_publication(viewer_client, workspace, [str(hook.pk)], status=403),
        403,
        "role_too_low",
    )
    assert_problem(viewer_client.post(pub_url(body, "cancel")), 403, "role_too_low")
    assert Publication.objects.get(pk=body["id"]).status == "draft"


def test_housekeeping_drops_expired_idempotency_records_and_oauth_states(user, workspace):
    from datetime import timedelta

    from django.utils import timezone

    from publishing.models import IdempotencyRecord, OAuthState
    from publishing.services.housekeeping import housekeeping

    old = timezone.now() - timedelta(hours=25)
    IdempotencyRecord.objects.create(
        user=user, key="old", method="POST", path="/x", request_hash="h", created_at=old
    )
    IdempotencyRecord.objects.create(
        user=user, key="fresh", method="POST", path="/x", request_hash="h"
    )
    OAuthState.objects.create(
        state_hash="a" * 64,
        workspace=workspace,
        user=user,
        provider="mastodon",
        redirect_uri="https://x/cb",
        expires_at=timezone.now() - timedelta(minutes=1),
    )
    from providers import credentials
    from publishing.models import ConnectionChoice

    for minutes in (-1, 10):  # an unchosen, expired choice holds tokens: it goes
        ConnectionChoice.objects.create(
            workspace=workspace,
            user=user,
            provider="facebook",
            candidates_encrypted=credentials.encrypt({"candidates": "[]"}),
            expires_at=timezone.now() + timedelta(minutes=minutes),
        )
    assert housekeeping() == {
        "idempotency_records": 1,
        "oauth_states": 1,
        "connection_choices": 1,
        "media_probes_resent": 0,
    }
    assert list(IdempotencyRecord.objects.values_list("key", flat=True)) == ["fresh"]
    assert ConnectionChoice.objects.count() == 1


def _create_with_key(client: APIClient, workspace: Any, hook: Any, key: str) -> Any:
    return client.post(
        f"{API}/publications",
        {
            "workspace_id": str(workspace.pk),
            "text": "once",
            "destinations": [{"account_id": str(hook.pk)}],
        },
        format="json",
        HTTP_IDEMPOTENCY_KEY=key,
    )


def test_a_replay_checks_access_again_before_answering(
    bearer_client: Callable[..., APIClient], workspace: Any, make_user: Callable[..., User]
) -> None:
    """Before: a member removed from the workspace (or demoted below editor) still got the stored
    201 (and the publication in it) for 24 hours by replaying the key."""
    hook = make_account(workspace, "discord_webhook")
    editor = make_user("editor@example.com")
    membership = WorkspaceMembership.objects.create(workspace=workspace, user=editor, role="editor")
    client = bearer_client(editor)
    first = _create_with_key(client, workspace, hook, "replay-after-removal")
    assert first.status_code == 201
    cancel = client.post(pub_url(first.json(), "cancel"), HTTP_IDEMPOTENCY_KEY="cancel-1")
    assert cancel.status_code == 200
    assert _create_with_key(client, workspace, hook, "replay-after-removal").status_code == 201

    membership.role = "viewer"
    membership.save(update_fields=["role"])
    demoted = _create_with_key(client, workspace, hook, "replay-after-removal")
    assert_problem(demoted, 403, "role_too_low")
    assert "Idempotent-Replayed" not in demoted

    membership.delete()
    removed = _create_with_key(client, workspace, hook, "replay-after-removal")
    body = assert_problem(removed, 403, "no_workspace_access")
    assert first.json()["id"] not in removed.content.decode()
    replayed_cancel = client.post(pub_url(first.json(), "cancel"), HTTP_IDEMPOTENCY_KEY="cancel-1")
    assert_problem(replayed_cancel, 403, "no_workspace_access")
    assert body["status"] == 403
    # Nothing was forgotten: restored access replays the stored answer again.
    WorkspaceMembership.objects.create(workspace=workspace, user=editor, role="editor")
    again = _create_with_key(client, workspace, hook, "replay-after-removal")
    assert again.status_code == 201
    assert again["Idempotent-Replayed"] == "true"
    assert Publication.objects.count() == 1


# --- The standard endpoint tests (tests/endpoint_support.py) ----------------------------------


class TestPublicationEndpoints(WorkspaceListTests, DetailTests):
    list_url = f"{API}/publications"
    schema = "Publication"
    write_role = "editor"  # deleting a draft
    foreign_answer = MEMBERS_ONLY
    not_allowed = (("patch", "detail"), ("delete", "list"))

    def make(self, workspace: Any, owner: User) -> str:
        from publishing.services.publications import publication_create

        account = make_account(workspace, "discord_webhook", str(Publication.objects.count()))
        publication = publication_create(
            actor=Actor(user=owner),
            workspace_id=workspace.pk,
            text="Hello",
            destinations=[{"account_id": str(account.pk)}],
        )
        return str(publication.pk)

    def detail_url(self, obj: str) -> str:
        return f"{API}/publications/{obj}"
