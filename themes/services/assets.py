"""Theme asset uploads (fonts and images) through django-storages, typed by their bytes, and
their deletion (refused while a draft or a published revision uses them)."""

from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db import IntegrityError, transaction
from django.db.models import ProtectedError
from django.utils import timezone

from config.errors import FieldValidationError, NotFoundError, field_error
from config.types import ModelId
from themes.errors import ThemeAssetInUseError
from themes.models import ThemeAsset
from themes.services.woff2 import (
    FontDamaged,
    FontTooLarge,
    check_name_table,
    check_tables,
    check_woff2_expansion,
)
from workspaces.access import Actor, parse_id, require_organization

FONT_MEDIA_TYPE = "font/woff2"
IMAGE_TYPES = {
    "image/png": ".png",
    "image/jpeg": ".jpg",
    "image/webp": ".webp",
    "image/avif": ".avif",
}
PILLOW_FORMATS = {
    "PNG": "image/png",
    "JPEG": "image/jpeg",
    "WEBP": "image/webp",
    "AVIF": "image/avif",
}
_AVIF_BRANDS = (b"avif", b"avis")
IMAGE_EXPECTED = "a PNG, JPEG, WebP or AVIF image"


def sniff_media_type(head: bytes) -> str | None:
    """The media type the magic bytes say; the client's Content-Type and name are never trusted."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    if head[4:8] == b"ftyp" and (
        head[8:12] in _AVIF_BRANDS or any(b in head[16:32] for b in _AVIF_BRANDS)
    ):
        return "image/avif"
    if head.startswith(b"wOF2"):
        return FONT_MEDIA_TYPE
    if head.startswith(b"wOFF"):
        return "font/woff"
    if head[:4] in (b"\x00\x01\x00\x00", b"true"):
        return "font/ttf"
    if head.startswith(b"OTTO"):
        return "font/otf"
    if head[:4] == b"GIF8":
        return "image/gif"
    return None


def _invalid(location: str, message: str, value: Any = None) -> FieldValidationError:
    if value is None:  # no value to show (a None value is never echoed here)
        return FieldValidationError.at(f"body.{location}", message)
    return FieldValidationError.at(f"body.{location}", message, value=value)


@dataclass(frozen=True)
class FontMetadata:
    family: str
    weight: int
    italic: bool


def read_font(data: bytes) -> FontMetadata:
    """Read a static WOFF2 font's family, weight and style.

    Its compressed streams are decoded under a bound first (fontTools decodes them without
    one); then only ``name``, ``OS/2`` and ``head`` are parsed. Parsing every table would let
    a small font become gigabytes of objects: OpenType tables may point many times at the same
    bytes (shared subtables, shared strings), and fontTools reads each offset anew. Browsers
    sanitize the outlines and layout tables themselves before use.
    """
    from fontTools.ttLib import TTFont

    damaged = "The font is damaged or not a decodable WOFF2 font."
    try:
        check_woff2_expansion(data, settings.HERALD_THEME_FONT_MAX_DECODED_BYTES)
    except FontTooLarge as exc:
        raise _invalid("file", "The font decompresses to more than the allowed size.") from exc
    except FontDamaged as exc:
        raise _invalid("file", damaged) from exc
    try:
        font = TTFont(io.BytesIO(data))
        tables = set(font.keys())
        if "fvar" in tables:
            raise _invalid(
                "file",
                "Variable fonts are not accepted: upload one static WOFF2 per weight and style.",
            )
        check_tables(tables)
        check_name_table(font.getTableData("name"))
        names = font["name"]
        family = str(names.getBestFamilyName() or "")
        os2 = font.get("OS/2")
        weight = int(os2.usWeightClass) if os2 is not None else 400
        italic = bool(os2.fsSelection & 1) if os2 is not None else bool(font["head"].macStyle & 2)
    except FieldValidationError:
        raise
    except Exception as exc:  # fontTools raises many kinds of error on a malformed font
        raise _invalid("file", damaged) from exc
    return FontMetadata(
        family=family, weight=min(900, max(100, round(weight / 100) * 100)), italic=italic
    )


@dataclass(frozen=True)
class ImageMetadata:
    width: int
    height: int


def read_image(data: bytes, media_type: str) -> ImageMetadata:
    """Check an image's format, dimensions and pixel count, then decode it fully."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as image:
            if PILLOW_FORMATS.get(str(image.format)) != media_type:
                raise _invalid("file", f"The file is not a valid {media_type} image.")
            width, height = image.size
            side, pixels = (
                settings.HERALD_THEME_IMAGE_MAX_SIDE,
                settings.HERALD_THEME_IMAGE_MAX_PIXELS,
            )
            if width > side or height > side:
                raise _invalid(
                    "file", f"The image is {width} x {height} px; at most {side} px per side."
                )
            if width * height > pixels:
                raise _invalid("file", f"The image has {width * height} pixels; at most {pixels}.")
            image.load()
    except FieldValidationError:
        raise
    except Image.DecompressionBombError as exc:  # a header claiming far more pixels than allowed
        limit = settings.HERALD_THEME_IMAGE_MAX_PIXELS
        raise _invalid("file", f"The image has too many pixels; at most {limit}.") from exc
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
        raise _invalid("file", "The image is damaged or cannot be decoded fully.") from exc
    return ImageMetadata(width=width, height=height)


def theme_asset_upload(
    *,
    actor: Actor,
    organization_id: ModelId,
    kind: str,
    name: str,
    upload: UploadedFile[bytes],
    font_family: str | None = None,
    font_style: str | None = None,
    font_weight: int | None = None,
    license_acknowledged: bool = False,
) -> ThemeAsset:
    """Store an asset once every check passed, cheapest first: the name, the font metadata and
    license, the size, the type read from the bytes, then the font or image itself."""
    organization, _ = require_organization(actor, organization_id)
    name = _checked_name(name)
    is_font = kind == ThemeAsset.Kind.FONT
    font = {"font_family": font_family, "font_style": font_style, "font_weight": font_weight}
    if is_font:
        _check_font_fields(font, license_acknowledged=license_acknowledged)
    else:
        _check_no_font_fields(font)
    size = _checked_size(upload, kind, is_font=is_font)
    upload.seek(0)
    data = upload.read()
    media_type = _checked_media_type(data, is_font=is_font)
    asset = ThemeAsset(
        organization=organization,
        name=name,
        kind=kind,
        media_type=media_type,
        size_bytes=size,
        checksum_sha256=hashlib.sha256(data).hexdigest(),
        license_acknowledged=bool(license_acknowledged),
        created_at=timezone.now(),
        created_by=str(actor.user.pk),
    )
    if is_font:
        _check_font_file(data, style=font_style, weight=font_weight)
        asset.font_family, asset.font_style, asset.font_weight = (
            str(font_family),
            str(font_style),
            font_weight,
        )
    else:
        image = read_image(data, media_type)
        asset.width, asset.height = image.width, image.height
    _store(asset, upload, ".woff2" if is_font else IMAGE_TYPES[media_type])
    return asset


def _checked_name(name: str) -> str:
    name = name.strip()
    if not 1 <= len(name) <= 120:
        raise _invalid("name", "1 to 120 characters.")
    return name


def _check_no_font_fields(font: dict[str, Any]) -> None:
    for field, value in font.items():
        if value not in (None, ""):
            raise _invalid(field, "Only font assets take font metadata.")


def _check_font_fields(font: dict[str, Any], *, license_acknowledged: bool) -> None:
    """A font declares its family, style and weight (every missing one is listed), and the
    organization acknowledges its web license."""
    missing = [field for field, value in font.items() if value in (None, "")]
    if missing:
        raise FieldValidationError(
            [field_error(f"body.{field}", "Required for a font.") for field in missing]
        )
    if not license_acknowledged:
        raise _invalid(
            "license_acknowledged",
            "Acknowledge that the organization holds a license to use this font on the web (true).",
        )


def _checked_size(upload: UploadedFile[bytes], kind: str, *, is_font: bool) -> int:
    limit = (
        settings.HERALD_THEME_FONT_MAX_BYTES if is_font else settings.HERALD_THEME_IMAGE_MAX_BYTES
    )
    size = upload.size or 0
    if size <= 0:
        raise _invalid("file", "The file is empty.")
    if size > limit:
        raise _invalid(
            "file", f"The file is {size} bytes; a {kind} may have at most {limit} bytes."
        )
    return size


def _checked_media_type(data: bytes, *, is_font: bool) -> str:
    """The type the bytes say, which must be one the declared kind takes."""
    media_type = sniff_media_type(data[:64])
    if is_font:
        declared, accepted, expected = "a font", {FONT_MEDIA_TYPE}, "a WOFF2 font"
    else:
        declared, accepted, expected = "an image", set(IMAGE_TYPES), IMAGE_EXPECTED
    if media_type is None:
        raise _invalid("file", f"Unrecognized file type: expected {expected}.")
    if media_type not in accepted:
        raise _invalid(
            "file", f"The file is {media_type}, declared as {declared}: expected {expected}."
        )
    return media_type


def _check_font_file(data: bytes, *, style: str | None, weight: int | None) -> None:
    """The font file is the style and weight it is declared as."""
    metadata = read_font(data)
    if metadata.italic != (style == "italic"):
        raise _invalid(
            "font_style", f"The font file is {'italic' if metadata.italic else 'normal'}.", style
        )
    if metadata.weight != weight:
        raise _invalid("font_weight", f"The font file has weight {metadata.weight}.", weight)


def _store(asset: ThemeAsset, upload: UploadedFile[bytes], extension: str) -> None:
    """The file, then the row; the file is deleted again when the row cannot be written, so
    nothing is orphaned in the store."""
    upload.seek(0)
    asset.file.save(f"{asset.pk}{extension}", upload, save=False)
    try:
        asset.save(force_insert=True)
    except Exception:
        asset.file.delete(save=False)
        raise


def theme_asset_delete(*, actor: Actor, asset_id: ModelId, organization_id: ModelId) -> None:
    organization, _ = require_organization(actor, organization_id)
    pk = parse_id(asset_id, what="theme asset")
    try:
        with transaction.atomic():
            asset = (
                ThemeAsset.objects.select_for_update()
                .filter(pk=pk, organization=organization)
                .first()
            )
            if asset is None:
                raise NotFoundError(f"No theme asset with ID {pk}.")
            stored_name = asset.file.name or ""
            storage = asset.file.storage
            asset.delete()
            transaction.on_commit(lambda: storage.delete(stored_name))
    except (ProtectedError, IntegrityError) as exc:
        raise ThemeAssetInUseError() from exc
