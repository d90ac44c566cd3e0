"""Each check of a theme asset upload, one by one: the name, font metadata only on fonts and all
of it on fonts, the license, the size bounds, the type read from the bytes against the declared
kind, the font file against its declared style and weight, and no stored file left behind when
the row cannot be written. The service is called directly where the API's serializer already
refuses the input, so that its own check is proven too."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.db import IntegrityError
from rest_framework.test import APIClient

from config.errors import FieldValidationError
from tests.problem_asserts import assert_invalid
from tests.themes_support import image_bytes, upload, upload_asset, woff2_font
from themes.models import ThemeAsset
from themes.services import theme_asset_upload
from themes.services.assets import sniff_media_type
from workspaces.access import Actor
from workspaces.models import User

pytestmark = pytest.mark.django_db

IMAGE_EXPECTED = "expected a PNG, JPEG, WebP or AVIF image."
FONT_EXPECTED = "expected a WOFF2 font."


@pytest.fixture
def owner(
    bearer_client: Callable[..., APIClient], user: User, organization: Any, media_storage: Path
) -> APIClient:
    return bearer_client(user)


@pytest.fixture
def call(user: User, organization: Any, media_storage: Path) -> Callable[..., ThemeAsset]:
    """The upload service itself, as the owner (an image named "Logo" unless told)."""

    def run(data: bytes, **fields: Any) -> ThemeAsset:
        return theme_asset_upload(
            actor=Actor(user=user),
            organization_id=organization.pk,
            kind=fields.pop("kind", "image"),
            name=fields.pop("name", "Logo"),
            upload=upload(data),
            **fields,
        )

    return run


def errors_of(excinfo: pytest.ExceptionInfo[FieldValidationError]) -> dict[str, str]:
    return {error["location"]: error["message"] for error in excinfo.value.errors}


def font_fields(**extra: Any) -> dict[str, Any]:
    return {
        "font_family": "Brand Sans",
        "font_style": "normal",
        "font_weight": 400,
        "license_acknowledged": True,
        **extra,
    }


# --- The name -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["", "   ", "x" * 121])
def test_a_name_must_have_1_to_120_characters_once_trimmed(
    call: Callable[..., ThemeAsset], name: str
) -> None:
    with pytest.raises(FieldValidationError) as excinfo:
        call(image_bytes(), name=name)
    assert errors_of(excinfo) == {"body.name": "1 to 120 characters."}
    assert ThemeAsset.objects.count() == 0


def test_the_name_is_stored_trimmed(call: Callable[..., ThemeAsset]) -> None:
    assert call(image_bytes(), name="  Logo  ").name == "Logo"
    assert call(image_bytes(), name="y" * 120).name == "y" * 120


# --- Font metadata ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value"), [("font_family", "Brand"), ("font_style", "italic"), ("font_weight", 400)]
)
def test_an_image_takes_no_font_metadata(
    owner: APIClient, organization: Any, field: str, value: Any
) -> None:
    body = assert_invalid(
        upload_asset(owner, organization, image_bytes(), **{field: value}), f"body.{field}"
    )
    assert body["errors"][0]["message"] == "Only font assets take font metadata."


def test_an_image_may_carry_blank_font_metadata(call: Callable[..., ThemeAsset]) -> None:
    asset = call(image_bytes(), font_family="", font_style="")
    assert (asset.kind, asset.width, asset.height) == ("image", 64, 48)


@pytest.mark.parametrize("missing", ["font_family", "font_style", "font_weight"])
def test_a_font_needs_each_piece_of_metadata(
    owner: APIClient, organization: Any, missing: str
) -> None:
    fields = font_fields()
    del fields[missing]
    body = assert_invalid(
        upload_asset(owner, organization, woff2_font(), kind="font", **fields), f"body.{missing}"
    )
    assert body["errors"][0]["message"] == "Required for a font."


def test_metadata_is_checked_before_the_license(call: Callable[..., ThemeAsset]) -> None:
    with pytest.raises(FieldValidationError) as excinfo:
        call(woff2_font(), kind="font", font_family="Brand Sans")
    assert errors_of(excinfo) == {
        "body.font_style": "Required for a font.",
        "body.font_weight": "Required for a font.",
    }


def test_a_font_needs_the_license_acknowledged(call: Callable[..., ThemeAsset]) -> None:
    with pytest.raises(FieldValidationError) as excinfo:
        call(woff2_font(), kind="font", **font_fields(license_acknowledged=False))
    assert list(errors_of(excinfo)) == ["body.license_acknowledged"]
    assert "license" in errors_of(excinfo)["body.license_acknowledged"]


def test_the_font_file_must_be_the_declared_style_and_weight(
    call: Callable[..., ThemeAsset],
) -> None:
    bold_italic = woff2_font(weight=700, italic=True)
    with pytest.raises(FieldValidationError) as excinfo:
        call(bold_italic, kind="font", **font_fields(font_weight=700))
    assert excinfo.value.errors == [
        {"location": "body.font_style", "message": "The font file is italic.", "value": "normal"}
    ]
    with pytest.raises(FieldValidationError) as excinfo:
        call(woff2_font(), kind="font", **font_fields(font_style="italic"))
    assert errors_of(excinfo) == {"body.font_style": "The font file is normal."}
    with pytest.raises(FieldValidationError) as excinfo:
        call(bold_italic, kind="font", **font_fields(font_style="italic", font_weight=400))
    assert excinfo.value.errors == [
        {"location": "body.font_weight", "message": "The font file has weight 700.", "value": 400}
    ]
    asset = call(bold_italic, kind="font", **font_fields(font_style="italic", font_weight=700))
    assert (asset.font_family, asset.font_style, asset.font_weight) == ("Brand Sans", "italic", 700)
    assert asset.file.name.endswith(".woff2")


# --- Size ---------------------------------------------------------------------------------


def test_an_empty_file_is_refused(call: Callable[..., ThemeAsset]) -> None:
    with pytest.raises(FieldValidationError) as excinfo:
        call(b"")
    assert errors_of(excinfo) == {"body.file": "The file is empty."}


def test_the_size_limit_of_each_kind_is_inclusive(
    call: Callable[..., ThemeAsset], settings: Any
) -> None:
    png, font = image_bytes(), woff2_font()
    settings.HERALD_THEME_IMAGE_MAX_BYTES = len(png)
    settings.HERALD_THEME_FONT_MAX_BYTES = len(font) - 1
    assert call(png).size_bytes == len(png)
    with pytest.raises(FieldValidationError) as excinfo:
        call(font, kind="font", **font_fields())
    assert errors_of(excinfo) == {
        "body.file": f"The file is {len(font)} bytes; a font may have at most {len(font) - 1} bytes."
    }
    settings.HERALD_THEME_IMAGE_MAX_BYTES = len(png) - 1
    with pytest.raises(FieldValidationError):
        call(png)
    assert ThemeAsset.objects.count() == 1


# --- Type, from the bytes -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("head", "media_type"),
    [
        (b"\x89PNG\r\n\x1a\n", "image/png"),
        (b"\xff\xd8\xff\xe0", "image/jpeg"),
        (b"RIFF\0\0\0\0WEBPVP8 ", "image/webp"),
        (b"\0\0\0\x1cftypavif", "image/avif"),
        (b"\0\0\0\x1cftypavis", "image/avif"),
        (b"\0\0\0\x1cftypmif1\0\0\0\0mif1avif", "image/avif"),  # AVIF among compatible brands
        (b"\0\0\0\x1cftypheic\0\0\0\0mif1heic", None),  # HEIF, not AVIF
        (b"wOF2\0\1\0\0", "font/woff2"),
        (b"wOFF\0\1\0\0", "font/woff"),
        (b"\0\1\0\0\0\x0a", "font/ttf"),
        (b"true\0\x0a", "font/ttf"),
        (b"OTTO\0\x0a", "font/otf"),
        (b"GIF89a", "image/gif"),
        (b"<svg xmlns=", None),
        (b"", None),
    ],
)
def test_the_type_is_read_from_the_magic_bytes(head: bytes, media_type: str | None) -> None:
    assert sniff_media_type(head) == media_type


@pytest.mark.parametrize(("kind", "expected"), [("image", IMAGE_EXPECTED), ("font", FONT_EXPECTED)])
def test_unrecognized_bytes_name_what_the_kind_expects(
    call: Callable[..., ThemeAsset], kind: str, expected: str
) -> None:
    fields = font_fields() if kind == "font" else {}
    with pytest.raises(FieldValidationError) as excinfo:
        call(b"plain text, not an asset", kind=kind, **fields)
    assert errors_of(excinfo) == {"body.file": f"Unrecognized file type: {expected}"}


@pytest.mark.parametrize(
    ("data", "media_type"),
    [
        (b"wOFF" + b"\0" * 60, "font/woff"),
        (b"\0\1\0\0" + b"\0" * 60, "font/ttf"),
        (b"OTTO" + b"\0" * 60, "font/otf"),
        (image_bytes(), "image/png"),
    ],
)
def test_only_woff2_is_a_font(
    call: Callable[..., ThemeAsset], data: bytes, media_type: str
) -> None:
    with pytest.raises(FieldValidationError) as excinfo:
        call(data, kind="font", **font_fields())
    assert errors_of(excinfo) == {
        "body.file": f"The file is {media_type}, declared as a font: {FONT_EXPECTED}"
    }


@pytest.mark.parametrize(
    ("data", "media_type"),
    [(woff2_font(), "font/woff2"), (b"GIF89a" + b"\0" * 40, "image/gif")],
)
def test_an_image_is_png_jpeg_webp_or_avif(
    call: Callable[..., ThemeAsset], data: bytes, media_type: str
) -> None:
    with pytest.raises(FieldValidationError) as excinfo:
        call(data)
    assert errors_of(excinfo) == {
        "body.file": f"The file is {media_type}, declared as an image: {IMAGE_EXPECTED}"
    }


# --- Storage ------------------------------------------------------------------------------


def test_no_file_is_left_in_storage_when_the_row_cannot_be_written(
    call: Callable[..., ThemeAsset], media_storage: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise IntegrityError("refused")

    monkeypatch.setattr(ThemeAsset, "save", refuse)
    with pytest.raises(IntegrityError):
        call(image_bytes())
    assert [path for path in media_storage.rglob("*") if path.is_file()] == []


def test_an_accepted_file_is_stored_under_its_id_with_its_checksum(
    call: Callable[..., ThemeAsset], media_storage: Path, organization: Any
) -> None:
    jpeg = image_bytes(image_format="JPEG")
    asset = call(jpeg)
    assert asset.file.name == f"theme-assets/{organization.pk}/{asset.pk}.jpg"
    assert (media_storage / asset.file.name).read_bytes() == jpeg
    assert asset.media_type == "image/jpeg"
    assert asset.checksum_sha256 == hashlib.sha256(jpeg).hexdigest()
    assert asset.size_bytes == len(jpeg)
    assert asset.license_acknowledged is False
