"""Media uploads through django-storages (local folder or S3), typed by their bytes."""

from __future__ import annotations

import hashlib

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from PIL import Image, UnidentifiedImageError

from config.errors import FieldValidationError, NotFoundError
from config.types import ModelId
from publishing.errors import MediaInUseError
from publishing.models import Destination, Media, Publication
from publishing.services import media_links
from publishing.services.video import VideoRefused, check_mp4_video
from workspaces.access import Actor, parse_id, require_workspace
from workspaces.models import WorkspaceMembership

# Magic numbers of the types providers accept; the client's Content-Type is never trusted.
_SIGNATURES: tuple[tuple[bytes, int, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", 0, "image/png"),
    (b"\xff\xd8\xff", 0, "image/jpeg"),
    (b"GIF87a", 0, "image/gif"),
    (b"GIF89a", 0, "image/gif"),
    (b"WEBP", 8, "image/webp"),
    (b"ftyp", 4, "video/mp4"),
)


def sniff_mime_type(head: bytes) -> str | None:
    for signature, offset, mime in _SIGNATURES:
        if head[offset : offset + len(signature)] == signature:
            if mime == "image/webp" and head[:4] != b"RIFF":
                continue
            return mime
    return None


def media_upload(
    *,
    actor: Actor,
    workspace_id: ModelId,
    upload: UploadedFile[bytes],
    alt_text: str = "",
    max_bytes: int | None = None,
) -> Media:
    """Store ``upload`` as a media item once its bytes say what it is; ``max_bytes`` (default
    ``HERALD_MAX_MEDIA_BYTES``) lets resumable uploads take files up to their own limit."""
    limit = settings.HERALD_MAX_MEDIA_BYTES if max_bytes is None else max_bytes
    access = require_workspace(actor, workspace_id, role=WorkspaceMembership.Role.EDITOR)
    size = upload.size or 0
    if size <= 0:
        raise FieldValidationError([{"location": "body.file", "message": "The file is empty."}])
    if size > limit:
        raise FieldValidationError(
            [{"location": "body.file", "message": f"At most {limit} bytes."}]
        )
    upload.seek(0)
    head = upload.read(32)
    mime = sniff_mime_type(head)
    if mime is None:
        raise FieldValidationError(
            [
                {
                    "location": "body.file",
                    "message": "Unsupported file type (PNG, JPEG, GIF, WebP or MP4).",
                }
            ]
        )
    width = height = None
    if mime.startswith("image/"):
        width, height = _image_dimensions(upload)
    else:
        _check_video(upload)
    digest = hashlib.sha256()
    upload.seek(0)
    for chunk in upload.chunks():
        digest.update(chunk)
    upload.seek(0)
    name = (upload.name or "upload")[-200:]
    media = Media(
        workspace=access.workspace,
        name=name,
        mime_type=mime,
        size_bytes=size,
        width=width,
        height=height,
        checksum_sha256=digest.hexdigest(),
        alt_text=alt_text,
        created_by=actor.user,
    )
    media.file.save(f"{media.pk}{_extension(mime)}", upload, save=False)
    try:
        media.save()
    except Exception:
        media.file.delete(save=False)  # nothing orphaned in the store
        raise
    return media


def _image_dimensions(upload: UploadedFile[bytes]) -> tuple[int, int]:
    """Width and height of an uploaded image, decoded fully; anything else is a 422 at ``body.file``.

    The pixel count in the header is checked before any pixel is decoded, against
    ``HERALD_MAX_IMAGE_PIXELS`` capped at Pillow's own decompression-bomb limit (Pillow raises
    ``DecompressionBombError`` from ``open`` past twice that; it is refused the same way).
    """
    limit = settings.HERALD_MAX_IMAGE_PIXELS
    if Image.MAX_IMAGE_PIXELS:
        limit = min(limit, Image.MAX_IMAGE_PIXELS)
    too_many = [
        {"location": "body.file", "message": f"The image has too many pixels; at most {limit}."}
    ]
    damaged = [{"location": "body.file", "message": "The image is damaged or not decodable."}]
    try:
        upload.seek(0)
        with Image.open(upload) as image:
            width, height = image.size
            if width * height > limit:
                raise FieldValidationError(too_many)
            image.verify()
        upload.seek(0)
        with Image.open(upload) as image:  # verify() leaves the image unusable: decode a fresh one
            image.load()
    except FieldValidationError:
        raise
    except Image.DecompressionBombError as exc:
        raise FieldValidationError(too_many) from exc
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError, EOFError) as exc:
        raise FieldValidationError(damaged) from exc
    finally:
        upload.seek(0)
    return width, height


def _check_video(upload: UploadedFile[bytes]) -> None:
    """An MP4 is stored only when FFmpeg parses it and decodes its first frame; anything else
    is a 422 at ``body.file``."""
    try:
        upload.seek(0)
        check_mp4_video(upload)
    except VideoRefused as exc:
        raise FieldValidationError([{"location": "body.file", "message": str(exc)}]) from exc
    finally:
        upload.seek(0)


def _extension(mime: str) -> str:
    return {
        "image/png": ".png",
        "image/jpeg": ".jpg",
        "image/gif": ".gif",
        "image/webp": ".webp",
        "video/mp4": ".mp4",
    }[mime]


def media_get(*, actor: Actor, media_id: ModelId) -> Media:
    pk = parse_id(media_id, what="media")
    media = Media.objects.filter(pk=pk).first()
    if media is None:
        raise NotFoundError(f"No media with ID {pk}.")
    require_workspace(actor, media.workspace_id)
    return media


def media_delete(*, actor: Actor, media_id: ModelId) -> None:
    media = media_get(actor=actor, media_id=media_id)
    require_workspace(actor, media.workspace_id, role=WorkspaceMembership.Role.EDITOR)
    with transaction.atomic():
        open_publications = Publication.objects.select_for_update().filter(
            workspace_id=media.workspace_id,
            status__in=[
                Publication.Status.DRAFT,
                Publication.Status.SCHEDULED,
                Publication.Status.PUBLISHING,
            ],
        )
        media_key = str(media.pk)
        in_use = any(media_key in (p.media_ids or []) for p in open_publications) or any(
            media_key in (d.media_ids or [])
            for d in Destination.objects.filter(
                publication__in=open_publications, media_ids__isnull=False
            )
        )
        if in_use:
            raise MediaInUseError()
        stored_name = media.file.name or ""
        media.delete()
    transaction.on_commit(lambda: media.file.storage.delete(stored_name))


def media_absolute_url(media: Media) -> str:
    """The address a receiver outside Herald fetches ``media`` from: its signed public URL
    (``publishing.services.media_links``), as the media API's ``url``; ``""`` when no origin is
    known (no ``HERALD_PUBLIC_URL`` and a local file)."""
    return media_links.media_absolute_url(media)
