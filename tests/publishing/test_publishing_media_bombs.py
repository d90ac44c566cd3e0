"""Media uploads that expand: a PNG whose text chunks decode to 64 MiB (Pillow's own ceiling) is
refused with a 422 at ``body.file`` while the process's peak resident memory grows by less than
50 MB."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from rest_framework.test import APIClient

from publishing.models import Media
from tests.bomb_support import measure, png_text_bomb
from tests.problem_asserts import assert_invalid
from tests.providers import tiny_png
from tests.publishing_support import upload

pytestmark = pytest.mark.django_db

MAX_GROWTH = 50 * 1000 * 1000


def test_a_png_whose_text_chunks_expand_to_64_mib_is_refused_in_bounded_memory(
    owner_client: APIClient, workspace: Any, media_storage: Path
) -> None:
    bomb = png_text_bomb()
    assert len(bomb) < 100_000
    upload(owner_client, workspace, tiny_png(), name="warm-up.png")
    response, growth, _ = measure(
        lambda: upload(owner_client, workspace, bomb, name="bomb.png", status=422)
    )
    assert growth < MAX_GROWTH, f"peak RSS grew by {growth / 1e6:.0f} MB"
    assert_invalid(response, "body.file")
    assert Media.objects.count() == 1


def test_a_png_with_ordinary_text_metadata_is_accepted(
    owner_client: APIClient, workspace: Any, media_storage: Path
) -> None:
    """A few chunks of text (XMP, comments: well under a MiB) are no reason to refuse."""
    record = upload(owner_client, workspace, png_text_bomb(chunks=2), name="photo.png")
    assert record["mime_type"] == "image/png"
