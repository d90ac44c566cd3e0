"""Signed public media URLs: ``/media/<token>/<file name>``, for receivers that fetch by URL.

The token is ``<media id hex>.<expiry, base 36 seconds>.<signature>``: an HMAC-SHA256
(``django.core.signing.Signer``, key derived from ``SECRET_KEY`` with its own salt, so
``SECRET_KEY_FALLBACKS`` keep rotated keys working) over the media ID and the expiry. It opens
that one item until it expires (``HERALD_MEDIA_URL_SECONDS``), and nothing else.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from urllib.parse import quote

from django.conf import settings
from django.core import signing
from django.http import HttpRequest
from django.utils.http import base36_to_int, int_to_base36

from publishing.models import Media

_SALT = "herald.publishing.media-url"


def _signer() -> signing.Signer:
    return signing.Signer(salt=_SALT, sep=".", algorithm="sha256")


class MediaLinkInvalid(Exception):
    """The token is malformed, forged or names no stored media item."""


class MediaLinkExpired(Exception):
    """The token is genuine but its lifetime is over."""


@dataclass(frozen=True)
class MediaLink:
    media: Media
    expires_at: int  # Unix seconds

    def seconds_left(self, now: float | None = None) -> int:
        return max(1, int(self.expires_at - (time.time() if now is None else now)))


def media_file_name(media: Media) -> str:
    """The name the URL ends with: the stored file's own (``<id>.<ext>``), never the client's."""
    return (media.file.name or str(media.pk)).rsplit("/", 1)[-1]


def media_token(media: Media, *, expires_at: int | None = None) -> str:
    if expires_at is None:
        expires_at = int(time.time()) + settings.HERALD_MEDIA_URL_SECONDS
    return _signer().sign(f"{media.pk.hex}.{int_to_base36(expires_at)}")


POSTER_NAME = "poster.jpg"  # never a stored file's name (``<id>.<ext>``)


def media_signed_path(media: Media, *, expires_at: int | None = None, poster: bool = False) -> str:
    """The signed path of ``media``'s file, or of its poster frame: the same token opens both
    (the poster is a picture of the item the token already opens)."""
    token = media_token(media, expires_at=expires_at)
    return f"/media/{token}/{POSTER_NAME if poster else quote(media_file_name(media))}"


def media_link_resolve(token: str, *, now: float | None = None) -> MediaLink:
    """The media item a token opens; ``MediaLinkInvalid`` or ``MediaLinkExpired`` otherwise."""
    try:
        value = _signer().unsign(token)
        media_hex, expiry = value.split(".")
        media_id = uuid.UUID(hex=media_hex)
        expires_at = base36_to_int(expiry)
    except (signing.BadSignature, ValueError) as exc:
        raise MediaLinkInvalid() from exc
    if expires_at <= (time.time() if now is None else now):
        raise MediaLinkExpired()
    media = Media.objects.filter(pk=media_id).first()
    if media is None:
        raise MediaLinkInvalid()
    return MediaLink(media=media, expires_at=expires_at)


def presigned_storage_url(media: Media, *, seconds: int) -> str | None:
    """With S3 storage (django-storages), the object store's own presigned GET URL valid for
    ``seconds``, typed and named like Herald's answer; ``None`` for any other storage."""
    try:
        from storages.backends.s3 import S3Storage
    except ImportError:  # pragma: no cover - django-storages is a dependency
        return None
    storage = media.file.storage
    if not isinstance(storage, S3Storage):
        return None
    url: str = storage.url(
        media.file.name,
        parameters={
            "ResponseContentType": media.mime_type,
            "ResponseContentDisposition": f'inline; filename="{media_file_name(media)}"',
        },
        expire=seconds,
    )
    return url


def presigned_poster_url(media: Media, *, seconds: int) -> str | None:
    """With S3 storage, the presigned GET URL of ``media``'s poster JPEG; ``None`` otherwise."""
    try:
        from storages.backends.s3 import S3Storage
    except ImportError:  # pragma: no cover - django-storages is a dependency
        return None
    storage = media.poster.storage
    if not media.poster or not isinstance(storage, S3Storage):
        return None
    url: str = storage.url(
        media.poster.name, parameters={"ResponseContentType": "image/jpeg"}, expire=seconds
    )
    return url


def media_absolute_url(
    media: Media, request: HttpRequest | None = None, *, poster: bool = False
) -> str:
    """The absolute signed URL of ``media``: ``HERALD_PUBLIC_URL`` (the origin OAuth callbacks
    and ``$schema`` use) followed by the signed path, else the request's own origin (proxy
    headers as configured). Outside a request without ``HERALD_PUBLIC_URL`` there is no origin:
    object storage still answers its presigned URL; a local file has none, ``""``."""
    path = media_signed_path(media, poster=poster)
    if settings.HERALD_PUBLIC_URL:
        return f"{settings.HERALD_PUBLIC_URL}{path}"
    if request is not None:
        return request.build_absolute_uri(path)
    if poster:
        return presigned_poster_url(media, seconds=settings.HERALD_MEDIA_URL_SECONDS) or ""
    return presigned_storage_url(media, seconds=settings.HERALD_MEDIA_URL_SECONDS) or ""


def public_origin() -> bool:
    """Whether a receiver outside this server can fetch its media: ``HERALD_PUBLIC_URL`` is set
    or the media live in S3 storage (presigned URLs). Networks that fetch media by URL (Meta)
    need one."""
    if settings.HERALD_PUBLIC_URL:
        return True
    return bool(getattr(settings, "HERALD_S3_BUCKET", None))
