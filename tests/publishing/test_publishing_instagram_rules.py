"""Instagram's rules beyond length and media counts, checked when a publication is created: at
most 30 hashtags in a caption, and a feed image's aspect ratio between 4:5 and 1.91:1 (a 422 at
the exact field, the rule in words). A Reel or a story takes a tall image (the cover, the story)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from rest_framework.test import APIClient

from publishing import tasks
from tests.problem_asserts import assert_invalid
from tests.publishing_support import create_publication, make_account, upload
from tests.video_support import make_video

pytestmark = pytest.mark.django_db


def jpeg(width: int, height: int) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (90, 10, 10)).save(buffer, format="JPEG")
    return buffer.getvalue()


def ready_video(client: APIClient, workspace: Any, **shape: Any) -> str:
    record = upload(client, workspace, make_video(**shape), name="clip.mp4")
    tasks.media_probe(record["id"])
    return str(record["id"])


def test_hashtags_and_aspect_ratios_are_refused_at_create_time(
    owner_client: APIClient, workspace: Any, media_storage: Path, settings: Any
) -> None:
    settings.HERALD_PUBLIC_URL = "https://herald.example"  # Instagram fetches media by URL
    account = str(make_account(workspace, "instagram", external_id="ig").pk)
    square = upload(owner_client, workspace, jpeg(100, 100), name="square.jpg")["id"]
    wide = upload(owner_client, workspace, jpeg(300, 100), name="wide.jpg")["id"]
    tags = " ".join(f"#t{i}" for i in range(31))
    refused = create_publication(
        owner_client, workspace, [account], text=tags, media_ids=[square], status=422
    )
    body = assert_invalid(refused, "body.text")
    assert body["errors"][0]["message"] == "Instagram allows 30 hashtags; this text has 31."
    create_publication(
        owner_client, workspace, [account], text=tags.rsplit(" ", 1)[0], media_ids=[square]
    )
    refused = create_publication(owner_client, workspace, [account], media_ids=[wide], status=422)
    body = assert_invalid(refused, "body.media_ids[0]")
    assert "from 0.80 to 1.91; this one is 300x100 (3.00)" in body["errors"][0]["message"]
    tall = upload(owner_client, workspace, jpeg(90, 160), name="tall.jpg")["id"]
    create_publication(
        owner_client,
        workspace,
        [],
        destinations=[{"account_id": account, "profile": "instagram.story"}],
        media_ids=[tall],
    )


def test_a_video_below_23_frames_per_second_is_refused_at_create_time(
    owner_client: APIClient, workspace: Any, media_storage: Path, settings: Any
) -> None:
    """Instagram documents 23 to 60 frames per second for feed videos and Reels: a 10 fps clip
    is refused at its location with the rule in words; a 24 fps one is accepted."""
    settings.HERALD_PUBLIC_URL = "https://herald.example"  # Instagram fetches media by URL
    account = str(make_account(workspace, "instagram", external_id="ig").pk)
    slow = ready_video(owner_client, workspace, seconds=4, rate=10)
    refused = create_publication(owner_client, workspace, [account], media_ids=[slow], status=422)
    body = assert_invalid(refused, "body.media_ids[0]")
    assert [e["message"] for e in body["errors"]] == [
        "Instagram: at least 23 frames per second; this one has 10. "
        "Re-export it at a higher frame rate."
    ]
    smooth = ready_video(owner_client, workspace, seconds=4, rate=24)
    create_publication(owner_client, workspace, [account], media_ids=[smooth])
