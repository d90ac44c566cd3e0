"""Media uploads through django-storages (local folder or S3), typed by their bytes."""

from __future__ import annotations

import hashlib
import logging
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path

from django.conf import settings
from django.core.files.base import ContentFile, File
from django.core.files.storage import Storage
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from PIL import Image, UnidentifiedImageError

from config.errors import FieldValidationError, NotFoundError, field_error
from config.nudge import nudge
from config.types import ModelId
from publishing import tasks
from publishing.errors import MediaInUseError
from publishing.models import Destination, Media, Publication
from publishing.services import media_links
from publishing.services.video import VideoRefused, check_mp4_video, probe_video
from publishing.services.video_convert import convert_probed
from workspaces.access import Actor, parse_id, require_workspace
from workspaces.models import WorkspaceMembership

logger = logging.getLogger(__name__)

# Magic numbers of the types providers accept; the client's Content-Type is never trusted. A
# video's signature only picks the demuxer: FFmpeg must then parse the file (services.video).
_SIGNATURES: tuple[tuple[bytes, int, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", 0, "image/png"),
    (b"\xff\xd8\xff", 0, "image/jpeg"),
    (b"GIF87a", 0, "image/gif"),
    (b"GIF89a", 0, "image/gif"),
    (b"WEBP", 8, "image/webp"),
    (b"ftypqt  ", 4, "video/quicktime"),
    (b"ftyp", 4, "video/mp4"),
    (b"moov", 4, "video/quicktime"),  # QuickTime files from before the ftyp box
    (b"wide", 4, "video/quicktime"),
    (b"mdat", 4, "video/quicktime"),
    (b"\x1a\x45\xdf\xa3", 0, "video/webm"),  # EBML: Matroska/WebM
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
    place: Callable[[str, str], str] | None = None,
) -> Media:
    """Store ``upload`` as a media item once its bytes say what it is; ``max_bytes`` (default
    ``HERALD_MAX_MEDIA_BYTES``) lets resumable uploads take files up to their own limit, and
    ``place(name, mime_type)`` puts bytes already in the store at the item's name (an S3
    multipart upload, copied inside the bucket) and answers the name used."""
    limit = settings.HERALD_MAX_MEDIA_BYTES if max_bytes is None else max_bytes
    access = require_workspace(actor, workspace_id, role=WorkspaceMembership.Role.EDITOR)
    size = _checked_size(upload, limit)
    mime = _sniffed(upload)
    width, height = _checked_content(upload, mime)
    media = Media(
        workspace=access.workspace,
        name=(upload.name or "upload")[-200:],
        mime_type=mime,
        size_bytes=size,
        width=width,
        height=height,
        checksum_sha256=_sha256(upload),
        alt_text=alt_text,
        created_by=actor.user,
        # A video is parsed now (a 422 when it is not one) and probed fully by a worker.
        status=Media.Status.READY if mime.startswith("image/") else Media.Status.PROCESSING,
    )
    _store_file(media, upload, place)
    try:
        media.save()
    except Exception:
        media.file.delete(save=False)  # nothing orphaned in the store
        raise
    if media.status == Media.Status.PROCESSING:
        transaction.on_commit(partial(nudge, tasks.media_probe, str(media.pk)))
    return media


def _checked_size(upload: UploadedFile[bytes], limit: int) -> int:
    size = upload.size or 0
    if size <= 0:
        raise FieldValidationError.at("body.file", "The file is empty.")
    if size > limit:
        raise FieldValidationError.at("body.file", f"At most {limit} bytes.")
    return size


def _checked_content(upload: UploadedFile[bytes], mime: str) -> tuple[int | None, int | None]:
    """An image's width and height, once it decodes within the pixel limit; a video's container
    is parsed (its dimensions come from the probe)."""
    if mime.startswith("image/"):
        return _image_dimensions(upload)
    _check_video(upload, mime)
    return None, None


def _store_file(
    media: Media, upload: UploadedFile[bytes], place: Callable[[str, str], str] | None
) -> None:
    name = f"{media.pk}{_extension(media.mime_type)}"
    if place is None:
        media.file.save(name, upload, save=False)
    else:
        media.file.name = place(media.file.field.generate_filename(media, name), media.mime_type)


def _sniffed(upload: UploadedFile[bytes]) -> str:
    """The type the file's first bytes say; a 422 at ``body.file`` for any other."""
    upload.seek(0)
    mime = sniff_mime_type(upload.read(32))
    if mime is None:
        raise FieldValidationError.at(
            "body.file", "Unsupported file type (PNG, JPEG, GIF, WebP, MP4, MOV or WebM)."
        )
    return mime


def _sha256(upload: UploadedFile[bytes]) -> str:
    digest = hashlib.sha256()
    upload.seek(0)
    for chunk in upload.chunks():
        digest.update(chunk)
    upload.seek(0)
    return digest.hexdigest()


def media_probe(*, media_id: ModelId) -> Media | None:
    """Probe a ``processing`` video: ``ready`` with its facts and a JPEG poster, or ``failed``
    with the reason; a video in another container or codec than MP4 (H.264/AAC) is converted
    first when that fits the bounds (``publishing.services.video_convert``). Idempotent: an
    item already decided (or deleted) is left as it is."""
    media = Media.objects.filter(pk=media_id).first()
    if media is None or media.status != Media.Status.PROCESSING:
        return media
    with tempfile.TemporaryDirectory(
        prefix="herald-convert-", dir=settings.FILE_UPLOAD_TEMP_DIR
    ) as folder:
        try:
            with media.file.open("rb") as handle:
                probe = probe_video(handle, media.mime_type)
                probe, converted = convert_probed(handle, media.mime_type, probe, Path(folder))
        except VideoRefused as exc:
            return _probe_settle(media, status=Media.Status.FAILED, reason=str(exc))
        except OSError:
            logger.warning("media %s: the stored file cannot be read", media.pk)
            return _probe_settle(
                media, status=Media.Status.FAILED, reason="The stored file cannot be read."
            )
        replaced = _replace_file(media, converted) if converted is not None else None
    media.poster.save(f"{media.pk}-poster.jpg", ContentFile(probe.poster_jpeg), save=False)
    media.width, media.height = probe.facts["width"], probe.facts["height"]
    return _probe_settle(
        media, status=Media.Status.READY, reason="", facts=probe.facts, replaced=replaced
    )


def _replace_file(media: Media, converted: Path) -> str:
    """Store the converted MP4 as the item's file; the name of the file it replaces."""
    replaced = str(media.file.name)
    digest = hashlib.sha256()
    with converted.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1024 * 1024), b""):
            digest.update(chunk)
        handle.seek(0)
        media.file.save(f"{media.pk}.mp4", File(handle), save=False)
    media.mime_type = "video/mp4"
    media.size_bytes = converted.stat().st_size
    media.checksum_sha256 = digest.hexdigest()
    return replaced


def _probe_settle(
    media: Media,
    *,
    status: str,
    reason: str,
    facts: dict[str, object] | None = None,
    replaced: str | None = None,
) -> Media:
    """Record the outcome unless another run already did (the row is re-checked under lock);
    the file a conversion ``replaced`` is deleted once the new one is recorded."""
    with transaction.atomic():
        current = Media.objects.select_for_update().filter(pk=media.pk).first()
        if current is None or current.status != Media.Status.PROCESSING:
            _drop_unrecorded(media, current, replaced)
            return current or media
        media.status = status
        media.failure_reason = reason[:500]
        media.probe = facts
        fields = ["status", "failure_reason", "probe", "poster", "width", "height"]
        if replaced is not None:
            fields += ["file", "mime_type", "size_bytes", "checksum_sha256"]
            transaction.on_commit(partial(_delete_stored, media.file.storage, [replaced]))
        media.save(update_fields=fields)
    return media


def _drop_unrecorded(media: Media, current: Media | None, replaced: str | None) -> None:
    """Files this run stored that another run's outcome does not use."""
    if media.poster and (current is None or current.poster.name != media.poster.name):
        media.poster.delete(save=False)
    if replaced is not None and (current is None or current.file.name != media.file.name):
        media.file.delete(save=False)


def _image_dimensions(upload: UploadedFile[bytes]) -> tuple[int, int]:
    """Width and height of an uploaded image, decoded fully; anything else is a 422 at ``body.file``.

    The pixel count in the header is checked before any pixel is decoded, against
    ``HERALD_MAX_IMAGE_PIXELS`` capped at Pillow's own decompression-bomb limit (Pillow raises
    ``DecompressionBombError`` from ``open`` past twice that; it is refused the same way).
    """
    limit = settings.HERALD_MAX_IMAGE_PIXELS
    if Image.MAX_IMAGE_PIXELS:
        limit = min(limit, Image.MAX_IMAGE_PIXELS)
    too_many = [field_error("body.file", f"The image has too many pixels; at most {limit}.")]
    damaged = [field_error("body.file", "The image is damaged or not decodable.")]
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


def _check_video(upload: UploadedFile[bytes], mime: str) -> None:
    """A video is stored only when FFmpeg parses it and decodes its first frame; anything else
    is a 422 at ``body.file``."""
    try:
        upload.seek(0)
        check_mp4_video(upload, mime)
    except VideoRefused as exc:
        raise FieldValidationError.at("body.file", str(exc)) from exc
    finally:
        upload.seek(0)


def _extension(mime: str) -> str:
    return {
        "image/png": ".png",
        "image/jpeg": ".jpg",
        "image/gif": ".gif",
        "image/webp": ".webp",
        "video/mp4": ".mp4",
        "video/quicktime": ".mov",
        "video/webm": ".webm",
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
        stored_names = [name for name in (media.file.name, media.poster.name) if name]
        media.delete()
    transaction.on_commit(partial(_delete_stored, media.file.storage, stored_names))


def _delete_stored(storage: Storage, names: list[str]) -> None:
    for name in names:
        storage.delete(name)


def media_absolute_url(media: Media) -> str:
    """The address a receiver outside Herald fetches ``media`` from: its signed public URL
    (``publishing.services.media_links``), as the media API's ``url``; ``""`` when no origin is
    known (no ``HERALD_PUBLIC_URL`` and a local file)."""
    return media_links.media_absolute_url(media)
