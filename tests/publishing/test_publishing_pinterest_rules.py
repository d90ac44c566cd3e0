"""Pinterest's rules checked when a publication is created: a Pin needs a board (422 at the
option without one), an image Pin needs a public origin Pinterest can fetch the image from (422
at the media, in words, on a server without one), and a video Pin does not (Herald uploads it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from rest_framework.test import APIClient

from publishing import tasks
from tests.problem_asserts import assert_invalid
from tests.providers import tiny_png
from tests.publishing_support import create_publication, make_account, upload
from tests.video_support import make_video

pytestmark = pytest.mark.django_db


def pin(account: str, profile: str = "pinterest.image", **options: str) -> dict[str, Any]:
    return {"account_id": account, "profile": profile, "options": options}


def test_a_pin_needs_a_board(
    owner_client: APIClient, workspace: Any, media_storage: Path, settings: Any
) -> None:
    settings.HERALD_PUBLIC_URL = "https://herald.example"
    account = str(make_account(workspace, "pinterest", external_id="p1").pk)
    image = upload(owner_client, workspace, tiny_png(200, 300), name="a.png")["id"]
    refused = create_publication(
        owner_client, workspace, [], destinations=[pin(account)], media_ids=[image], status=422
    )
    body = assert_invalid(refused, "body.destinations[0].options.board_id")
    assert body["errors"]
    create_publication(
        owner_client,
        workspace,
        [],
        destinations=[pin(account, board_id="1001", title="Cake")],
        media_ids=[image],
    )


def test_an_image_pin_needs_a_public_origin_and_a_video_pin_does_not(
    owner_client: APIClient, workspace: Any, media_storage: Path, settings: Any
) -> None:
    settings.HERALD_PUBLIC_URL = ""
    settings.HERALD_S3_BUCKET = ""
    account = str(make_account(workspace, "pinterest", external_id="p1").pk)
    image = upload(owner_client, workspace, tiny_png(200, 300), name="a.png")["id"]
    refused = create_publication(
        owner_client,
        workspace,
        [],
        destinations=[pin(account, board_id="1001")],
        media_ids=[image],
        status=422,
    )
    body = assert_invalid(refused, "body.media_ids")
    message = body["errors"][0]["message"]
    assert "pinterest.image" in message
    assert "HERALD_PUBLIC_URL" in message
    video = upload(owner_client, workspace, make_video(seconds=5), name="clip.mp4")["id"]
    tasks.media_probe(video)
    create_publication(
        owner_client,
        workspace,
        [],
        destinations=[pin(account, "pinterest.video", board_id="1001")],
        media_ids=[video],
    )
