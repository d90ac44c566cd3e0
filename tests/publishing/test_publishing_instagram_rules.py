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

from tests.problem_asserts import assert_invalid
from tests.publishing_support import create_publication, make_account, upload

pytestmark = pytest.mark.django_db


def jpeg(width: int, height: int) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (90, 10, 10)).save(buffer, format="JPEG")
    return buffer.getvalue()


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
