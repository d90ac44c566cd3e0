"""Each network's video rules, from its capabilities, checked when a publication is created and
again when it is scheduled: a broken rule is a 422 at the exact ``media_ids[j]`` with the rule in
words; a network Herald cannot send video to yet refuses it at create time; a ``processing``
video may be attached and scheduled (its send waits for ``ready``, see
test_publishing_media_wait.py); a ``failed`` one is refused."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from providers import get_adapter
from providers.webhook import WebhookAdapter
from providers.x.text import POST_PROFILE as X_POST
from publishing import tasks
from publishing.models import Media
from tests.problem_asserts import assert_invalid
from tests.publishing_support import API, create_publication, make_account, ok, upload
from tests.video_support import make_video

pytestmark = pytest.mark.django_db


def ready_video(client: APIClient, workspace: Any, **shape: Any) -> str:
    record = upload(client, workspace, make_video(**shape), name="clip.mp4")
    tasks.media_probe(record["id"])
    return str(record["id"])


def schedule(client: APIClient, publication: dict[str, Any]) -> Any:
    due = timezone.now() + timedelta(minutes=10)
    return client.post(
        f"{API}/publications/{publication['id']}/schedule",
        {"scheduled_at": due.isoformat()},
        format="json",
    )


def test_capabilities_declare_each_networks_video_rules(
    owner_client: APIClient, workspace: Any
) -> None:
    for provider in ("x", "bluesky", "mastodon", "linkedin", "threads", "telegram", "webhook"):
        make_account(workspace, provider, external_id=provider)
    body = ok(owner_client.get(f"{API}/capabilities", {"workspace_id": str(workspace.pk)}), 200)
    video = {
        (item["provider"], profile["key"]): profile["video"]
        for item in body["items"]
        for profile in item["profiles"]
    }
    x = video[("x", "x.post")]
    assert x["supported"] is True
    assert x["network_accepts_video"] is True
    assert (x["max_bytes"], x["min_seconds"], x["max_seconds"]) == (512 * 1024 * 1024, 0.5, 140)
    assert x["max_count"] == 1
    assert x["mixes_with_images"] is False
    assert video[("bluesky", "bluesky.post")]["max_seconds"] == 180
    assert video[("bluesky", "bluesky.post")]["supported"] is True
    assert video[("threads", "threads.post")]["mixes_with_images"] is True
    assert video[("telegram", "telegram.photo")]["max_bytes"] == 50 * 1024 * 1024
    assert video[("telegram", "telegram.message")] == {
        "supported": False,
        "network_accepts_video": False,
    }
    assert video[("webhook", "webhook.post")]["supported"] is True


def test_a_network_that_cannot_take_video_yet_refuses_it_at_create_time(
    owner_client: APIClient, workspace: Any, media_storage: Path, monkeypatch: Any
) -> None:
    # X's documented rule, as if Herald could not send video to X yet.
    caps = get_adapter("x").capabilities
    profile = dataclasses.replace(
        caps.profiles[0], video=dataclasses.replace(X_POST.video, delivers=False)
    )
    monkeypatch.setattr(
        type(get_adapter("x")), "capabilities", dataclasses.replace(caps, profiles=(profile,))
    )
    hook = make_account(workspace, "webhook", external_id="h")
    x = make_account(workspace, "x", external_id="x")
    video = ready_video(owner_client, workspace)
    response = owner_client.post(
        f"{API}/publications",
        {
            "workspace_id": str(workspace.pk),
            "text": "clip",
            "destinations": [
                {"account_id": str(hook.pk), "media_ids": [video]},
                {"account_id": str(x.pk), "media_ids": [video]},
            ],
        },
        format="json",
    )
    body = assert_invalid(response, "body.destinations[1].media_ids[0]")
    assert body["errors"][0]["message"] == "X: video is not supported yet."


def test_a_broken_rule_is_refused_at_its_media_location_in_words(
    owner_client: APIClient, workspace: Any, media_storage: Path, monkeypatch: Any
) -> None:
    # The webhook format, given X's documented video rule as if Herald delivered video to X.
    caps = WebhookAdapter.capabilities
    profile = dataclasses.replace(
        caps.profiles[0], video=dataclasses.replace(X_POST.video, delivers=True)
    )
    monkeypatch.setattr(
        WebhookAdapter, "capabilities", dataclasses.replace(caps, profiles=(profile,))
    )
    assert get_adapter("webhook").capabilities.profiles[0].video.max_seconds == 140  # type: ignore[union-attr]
    hook = make_account(workspace, "webhook", external_id="h")
    fine = ready_video(owner_client, workspace, width=64, height=36, seconds=2)
    long_wide = ready_video(owner_client, workspace, width=64, height=16, seconds=171, rate=1)
    response = owner_client.post(
        f"{API}/publications",
        {
            "workspace_id": str(workspace.pk),
            "text": "clip",
            "destinations": [{"account_id": str(hook.pk), "media_ids": [long_wide]}],
        },
        format="json",
    )
    body = assert_invalid(response, "body.destinations[0].media_ids[0]")
    messages = [e["message"] for e in body["errors"]]
    assert "X: videos up to 140 s; this one is 171 s. Shorten it." in messages
    assert any(
        m.startswith("X: aspect ratios from 1:3 to 3:1; this one is 64:16") for m in messages
    )
    two = owner_client.post(
        f"{API}/publications",
        {
            "workspace_id": str(workspace.pk),
            "text": "clips",
            "destinations": [{"account_id": str(hook.pk), "media_ids": [fine, fine]}],
        },
        format="json",
    )
    body = assert_invalid(two, "body.destinations[0].media_ids[1]")
    assert body["errors"][0]["message"] == "X: at most 1 video(s) per post."
    image = upload(owner_client, workspace)["id"]
    mixed = create_publication(
        owner_client, workspace, [str(hook.pk)], media_ids=[image, fine], status=422
    )
    body = assert_invalid(mixed, "body.media_ids[1]")
    assert "cannot share a post with images" in body["errors"][0]["message"]
    create_publication(owner_client, workspace, [str(hook.pk)], media_ids=[fine])


def test_a_processing_video_may_be_attached_and_scheduled(
    owner_client: APIClient, workspace: Any, media_storage: Path
) -> None:
    hook = make_account(workspace, "webhook", external_id="h")
    record = upload(owner_client, workspace, make_video("webm"), name="clip.webm")
    assert record["status"] == "processing"
    publication = create_publication(
        owner_client,
        workspace,
        [str(hook.pk)],
        destinations=[{"account_id": str(hook.pk), "media_ids": [record["id"]]}],
    )
    assert ok(schedule(owner_client, publication), 200)["status"] == "scheduled"


def test_a_failed_video_is_refused_at_create_and_at_schedule(
    owner_client: APIClient, workspace: Any, media_storage: Path
) -> None:
    hook = make_account(workspace, "webhook", external_id="h")
    video = make_video(seconds=2)
    record = upload(owner_client, workspace, video, name="clip.mp4")
    publication = create_publication(
        owner_client, workspace, [str(hook.pk)], media_ids=[record["id"]]
    )
    for path in media_storage.rglob("*.mp4"):  # the stored file is cut short before probing
        path.write_bytes(video[: len(video) * 9 // 10])
    tasks.media_probe(record["id"])
    body = assert_invalid(schedule(owner_client, publication), "media_ids[0]")
    assert body["errors"][0]["message"].startswith("This video failed processing: ")
    again = create_publication(
        owner_client, workspace, [str(hook.pk)], media_ids=[record["id"]], status=422
    )
    assert_invalid(again, "body.media_ids[0]")


def test_telegram_and_discord_take_video_within_their_upload_limits(
    owner_client: APIClient, workspace: Any, media_storage: Path
) -> None:
    telegram = make_account(workspace, "telegram", external_id="tg")
    discord = make_account(workspace, "discord_webhook", external_id="dc")
    image = upload(owner_client, workspace)["id"]
    clip = ready_video(owner_client, workspace)
    # Past each network's photo/file bound but within its video bound: a video is held to the
    # video rule's size.
    Media.objects.filter(pk=clip).update(size_bytes=9 * 1024 * 1024)
    both = [
        {"account_id": str(telegram.pk), "profile": "telegram.photo"},
        {"account_id": str(discord.pk)},
    ]
    create_publication(owner_client, workspace, [], destinations=both, media_ids=[image, clip])
    Media.objects.filter(pk=clip).update(size_bytes=71 * 1024 * 1024)
    split = [
        {"account_id": str(discord.pk), "media_ids": [image]},
        {"account_id": str(telegram.pk), "profile": "telegram.photo", "media_ids": [image, clip]},
    ]
    response = create_publication(owner_client, workspace, [], destinations=split, status=422)
    body = assert_invalid(response, "body.destinations[1].media_ids[1]")
    assert [e["message"] for e in body["errors"]] == [
        "Telegram: videos up to 50 MB; this one is 71 MB. Lower the bit rate or shorten it."
    ]
    Media.objects.filter(pk=clip).update(size_bytes=11 * 1024 * 1024)
    too_big = create_publication(
        owner_client, workspace, [str(discord.pk)], media_ids=[clip], status=422
    )
    body = assert_invalid(too_big, "body.media_ids[0]")
    assert [e["message"] for e in body["errors"]] == [
        "Discord: videos up to 10 MB; this one is 11 MB. Lower the bit rate or shorten it."
    ]


def test_a_telegram_album_holds_ten_photos_and_videos(
    owner_client: APIClient, workspace: Any, media_storage: Path
) -> None:
    telegram = make_account(workspace, "telegram", external_id="tg")
    album = [{"account_id": str(telegram.pk), "profile": "telegram.photo"}]
    clip = ready_video(owner_client, workspace)
    create_publication(owner_client, workspace, [], destinations=album, media_ids=[clip] * 10)
    eleven = create_publication(
        owner_client, workspace, [], destinations=album, media_ids=[clip] * 11, status=422
    )
    body = assert_invalid(eleven, "body.media_ids", "body.media_ids[10]")
    assert [e["message"] for e in body["errors"]] == [
        "telegram.photo allows 10 media items.",
        "Telegram: at most 10 video(s) per post.",
    ]


def test_linkedin_and_threads_take_video_within_their_rules(
    owner_client: APIClient, workspace: Any, media_storage: Path
) -> None:
    linkedin = make_account(workspace, "linkedin", external_id="li")
    threads = make_account(workspace, "threads", external_id="th")
    clip = ready_video(owner_client, workspace, seconds=3, rate=24)
    # Larger than either network's image bound: a video is held to its video rule's size.
    Media.objects.filter(pk=clip).update(size_bytes=9 * 1024 * 1024)
    image = upload(owner_client, workspace)["id"]
    both = [str(linkedin.pk), str(threads.pk)]
    create_publication(owner_client, workspace, both, media_ids=[clip])
    create_publication(owner_client, workspace, [str(threads.pk)], media_ids=[image, clip])
    mixed = create_publication(
        owner_client, workspace, [str(linkedin.pk)], media_ids=[image, clip], status=422
    )
    body = assert_invalid(mixed, "body.media_ids[1]")
    assert "LinkedIn: a video cannot share a post with images" in body["errors"][0]["message"]
    short = ready_video(owner_client, workspace, seconds=2, rate=24)
    Media.objects.filter(pk=short).update(size_bytes=100 * 1024)  # past LinkedIn's 75 KB
    too_short = create_publication(
        owner_client, workspace, [str(linkedin.pk)], media_ids=[short], status=422
    )
    body = assert_invalid(too_short, "body.media_ids[0]")
    assert body["errors"][0]["message"].startswith("LinkedIn: videos of at least 3 s")
    Media.objects.filter(pk=clip).update(size_bytes=501 * 1024 * 1024)
    too_big = create_publication(
        owner_client, workspace, [str(linkedin.pk)], media_ids=[clip], status=422
    )
    body = assert_invalid(too_big, "body.media_ids[0]")
    assert [e["message"] for e in body["errors"]] == [
        "LinkedIn: videos up to 500 MB; this one is 501 MB. Lower the bit rate or shorten it."
    ]


def test_x_and_bluesky_take_video_within_their_rules(
    owner_client: APIClient, workspace: Any, media_storage: Path
) -> None:
    x = make_account(workspace, "x", external_id="x")
    sky = make_account(workspace, "bluesky", external_id="b")
    clip = ready_video(owner_client, workspace, seconds=2, rate=24)
    # Larger than either network's image bound: a video is held to its video rule's size.
    Media.objects.filter(pk=clip).update(size_bytes=6 * 1024 * 1024)
    both = [str(x.pk), str(sky.pk)]
    create_publication(owner_client, workspace, both, media_ids=[clip])
    image = upload(owner_client, workspace)["id"]
    mixed = create_publication(owner_client, workspace, both, media_ids=[image, clip], status=422)
    body = assert_invalid(mixed, "body.media_ids[1]")
    assert [e["message"] for e in body["errors"]] == [
        "X: a video cannot share a post with images; post it alone.",
        "Bluesky: a video cannot share a post with images; post it alone.",
    ]
    Media.objects.filter(pk=clip).update(size_bytes=101 * 1000 * 1000)
    create_publication(owner_client, workspace, [str(x.pk)], media_ids=[clip])
    too_big = create_publication(
        owner_client, workspace, [str(sky.pk)], media_ids=[clip], status=422
    )
    body = assert_invalid(too_big, "body.media_ids[0]")
    assert [e["message"] for e in body["errors"]] == [
        "Bluesky: videos up to 100 MB; this one is 101 MB. Lower the bit rate or shorten it."
    ]


def test_documented_lower_bounds_are_refused_at_create_time(
    owner_client: APIClient, workspace: Any, media_storage: Path
) -> None:
    """LinkedIn takes videos of 75 KB and more, Threads 23 to 60 frames per second: both
    declared in the capabilities and refused at the video's location, in words."""
    linkedin = make_account(workspace, "linkedin", external_id="li")
    threads = make_account(workspace, "threads", external_id="th")
    body = ok(owner_client.get(f"{API}/capabilities", {"workspace_id": str(workspace.pk)}), 200)
    video = {
        profile["key"]: profile["video"] for item in body["items"] for profile in item["profiles"]
    }
    assert video["linkedin.post"]["min_bytes"] == 75 * 1024
    assert (video["threads.post"]["min_frame_rate"], video["threads.post"]["max_frame_rate"]) == (
        23,
        60,
    )
    tiny = ready_video(owner_client, workspace, seconds=3, rate=24)
    size = Media.objects.get(pk=tiny).size_bytes
    assert size < 75 * 1024  # a real 3 s clip of 64 x 36 px
    refused = create_publication(
        owner_client,
        workspace,
        [],
        destinations=[{"account_id": str(linkedin.pk), "media_ids": [tiny]}],
        status=422,
    )
    body = assert_invalid(refused, "body.destinations[0].media_ids[0]")
    assert [e["message"] for e in body["errors"]] == [
        f"LinkedIn: videos of at least 75 KB; this one is {size / 1024:.0f} KB. "
        "Export it at a higher quality or make it longer."
    ]
    slow = ready_video(owner_client, workspace, seconds=2, rate=10)
    too_slow = create_publication(
        owner_client,
        workspace,
        [],
        destinations=[{"account_id": str(threads.pk), "media_ids": [tiny, slow]}],
        status=422,
    )
    body = assert_invalid(too_slow, "body.destinations[0].media_ids[1]")
    assert [e["message"] for e in body["errors"]] == [
        "Threads: at least 23 frames per second; this one has 10. "
        "Re-export it at a higher frame rate."
    ]


def test_discord_refuses_more_than_25_mb_of_attachments_per_message(
    owner_client: APIClient, workspace: Any, media_storage: Path
) -> None:
    """Each file within Discord's 10 MB, together past the webhook's 25 MB per message: the
    items past the limit are refused at create time, not found at delivery."""
    discord = make_account(workspace, "discord_webhook", external_id="dc")
    body = ok(owner_client.get(f"{API}/capabilities", {"workspace_id": str(workspace.pk)}), 200)
    (profile,) = [
        p
        for item in body["items"]
        for p in item["profiles"]
        if p["key"] == "discord_webhook.message"
    ]
    assert profile["media"]["max_total_bytes"] == 25 * 1024 * 1024
    clips = [ready_video(owner_client, workspace) for _ in range(3)]
    Media.objects.filter(pk__in=clips).update(size_bytes=9 * 1024 * 1024)
    create_publication(owner_client, workspace, [str(discord.pk)], media_ids=clips[:2])
    response = create_publication(
        owner_client,
        workspace,
        [],
        destinations=[{"account_id": str(discord.pk), "media_ids": clips}],
        status=422,
    )
    body = assert_invalid(response, "body.destinations[0].media_ids[2]")
    assert [e["message"] for e in body["errors"]] == [
        "Discord: up to 25 MB of attachments per message in all; with this one they come to "
        "27.0 MB. Move it to another post or make it smaller."
    ]
