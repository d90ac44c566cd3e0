"""Bluesky images: read within the size limit, and the embed entry (alt text, blob, aspect
ratio when the image can be measured) for an uploaded blob."""

from __future__ import annotations

import io
from typing import Any

from providers.base import MediaItem
from providers.helpers import read_media

MAX_IMAGE_BYTES = 1_000_000


def read_image(item: MediaItem, *, provider: str) -> bytes:
    return read_media(item, provider=provider, max_bytes=MAX_IMAGE_BYTES)


def image_entry(item: MediaItem, blob: Any, payload: bytes) -> dict[str, Any]:
    image: dict[str, Any] = {"alt": item.alt_text or "", "image": blob}
    size = _image_size(payload)
    if size:
        image["aspectRatio"] = {"width": size[0], "height": size[1]}
    return image


def _image_size(payload: bytes) -> tuple[int, int] | None:
    try:
        from PIL import Image

        with Image.open(io.BytesIO(payload)) as image:
            return int(image.width), int(image.height)
    except Exception:  # the aspect ratio is optional
        return None
