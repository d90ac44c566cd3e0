"""Theme asset uploads that expand: a WOFF2 font whose Brotli streams (tables or metadata) decode
to 512 MiB is refused with a 422 at ``body.file`` in well under a second, while the process's
peak resident memory grows by less than 50 MB."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from rest_framework.test import APIClient

from config.errors import FieldValidationError
from tests.bomb_support import (
    gpos_shared_subtables,
    measure,
    name_shared_strings,
    png_text_bomb,
    woff2_metadata_bomb,
    woff2_table_bomb,
    woff2_with_tables,
)
from tests.problem_asserts import assert_invalid
from tests.themes_support import upload_asset, woff2_font
from themes.models import ThemeAsset
from themes.services.assets import read_font
from workspaces.models import User

pytestmark = pytest.mark.django_db

MAX_GROWTH = 50 * 1000 * 1000
FONT_FIELDS = {
    "font_family": "Brand Sans",
    "font_style": "normal",
    "font_weight": 400,
    "license_acknowledged": "true",
}


@pytest.fixture
def owner(
    bearer_client: Callable[..., APIClient], user: User, workspace: Any, media_storage: Any
) -> APIClient:
    return bearer_client(user)


@pytest.mark.parametrize("make_bomb", [woff2_table_bomb, woff2_metadata_bomb])
def test_a_font_that_expands_to_512_mib_is_refused_in_bounded_memory_and_time(
    owner: APIClient, organization: Any, make_bomb: Callable[[bytes], bytes]
) -> None:
    font = woff2_font()
    bomb = make_bomb(font)
    assert len(bomb) < 2048
    upload_asset(owner, organization, font, kind="font", name="warm-up", **FONT_FIELDS)

    response, growth, seconds = measure(
        lambda: upload_asset(owner, organization, bomb, kind="font", **FONT_FIELDS)
    )

    assert growth < MAX_GROWTH, f"peak RSS grew by {growth / 1e6:.0f} MB"
    assert seconds < 1.0, f"{seconds:.2f} s"
    body = assert_invalid(response, "body.file")
    assert "decompresses to more than" in body["errors"][0]["message"]
    assert ThemeAsset.objects.filter(name="Asset").count() == 0


def test_a_damaged_woff2_container_is_a_clear_refusal_never_a_crash() -> None:
    """Every truncation of a real font, and every single corrupted header or directory byte,
    is read or refused as damaged or too large (``FieldValidationError``), nothing else."""
    font = woff2_font()
    damaged = [font[:length] for length in range(len(font))]
    for index in range(64):  # the 48-byte header and the start of the table directory
        for value in (0x00, 0x80, 0xFF):
            if font[index] != value:
                damaged.append(font[:index] + bytes([value]) + font[index + 1 :])
    outcomes = [_outcome(data) for data in damaged]
    assert set(outcomes) <= {"read", "body.file"}
    assert outcomes.count("body.file") >= len(font)  # every truncation at least


def _outcome(data: bytes) -> str:
    """``"read"``, or the location of the refusal."""
    try:
        read_font(data)
    except FieldValidationError as refusal:
        return str(refusal.errors[0]["location"])
    return "read"


def test_an_image_whose_text_chunks_expand_to_64_mib_is_refused_in_bounded_memory(
    owner: APIClient, organization: Any
) -> None:
    bomb = png_text_bomb()
    assert len(bomb) < 100_000
    response, growth, _ = measure(lambda: upload_asset(owner, organization, bomb))
    assert growth < MAX_GROWTH, f"peak RSS grew by {growth / 1e6:.0f} MB"
    assert_invalid(response, "body.file")


@pytest.mark.parametrize(
    "tables",
    [
        pytest.param(lambda: {"GPOS": gpos_shared_subtables()}, id="gpos-shared-subtables"),
        pytest.param(lambda: {"name": name_shared_strings()}, id="name-shared-strings"),
    ],
)
def test_a_font_whose_tables_share_offsets_is_read_in_bounded_memory(
    owner: APIClient, organization: Any, tables: Callable[[], dict[str, bytes]]
) -> None:
    """Tables that point many times at the same bytes are small once decompressed but huge
    once parsed into objects: only the tables Herald needs are parsed, each within bounds."""
    font = woff2_with_tables(woff2_font(family="Brand Sans"), tables())
    assert len(font) < 20_000
    upload_asset(owner, organization, woff2_font(), kind="font", name="warm-up", **FONT_FIELDS)

    response, growth, seconds = measure(
        lambda: upload_asset(owner, organization, font, kind="font", **FONT_FIELDS)
    )

    assert growth < MAX_GROWTH, f"peak RSS grew by {growth / 1e6:.0f} MB"
    assert seconds < 1.0, f"{seconds:.2f} s"
    assert response.status_code in (201, 422), response.content


def test_a_font_dense_with_points_is_read_in_well_under_a_second(
    owner: APIClient, organization: Any
) -> None:
    """400,000 outline points compress to a few KB; rebuilding and parsing them in Python
    took seconds to minutes. Herald reads no outline."""
    font = woff2_font(family="Brand Sans", glyphs=2000, points=200)
    assert len(font) < 20_000
    response, _, seconds = measure(
        lambda: upload_asset(owner, organization, font, kind="font", **FONT_FIELDS)
    )
    assert seconds < 1.0, f"{seconds:.2f} s"
    assert response.status_code == 201, response.content
