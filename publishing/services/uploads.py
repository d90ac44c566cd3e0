"""Resumable uploads (tus 1.0): bytes stream into a spool file under the media root as they
arrive, in bounded chunks, never whole in memory; the last byte hands the file to the media
service, which validates and stores it exactly as ``POST /api/v1/media`` does.

The spool is a local file even with S3 storage: the finished file then reaches the bucket in
one streaming copy (django-storages uploads it in parts), not through S3 multipart per PATCH.
"""

from __future__ import annotations

import base64
import binascii
import fcntl
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import BinaryIO

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db.models import Sum
from django.utils.timezone import now

from config.errors import FieldValidationError, NotFoundError
from config.types import ModelId
from publishing.errors import (
    UploadExpiredError,
    UploadInterruptedError,
    UploadOffsetMismatchError,
    UploadTooLargeError,
)
from publishing.models import Media, Upload
from publishing.services import media as media_service
from workspaces.access import Actor, parse_id, require_workspace
from workspaces.models import Workspace, WorkspaceMembership

logger = logging.getLogger(__name__)

CHUNK_BYTES = 256 * 1024  # what one read of the request body may hold in memory
EDITOR = WorkspaceMembership.Role.EDITOR


def spool_dir() -> Path:
    return Path(settings.MEDIA_ROOT) / "uploads"


def parse_metadata(header: str) -> dict[str, str]:
    """``Upload-Metadata``: comma-separated ``key base64value`` pairs (the value may be absent)."""
    found: dict[str, str] = {}
    for pair in (header or "").split(","):
        parts = pair.strip().split(" ")
        if not parts[0]:
            continue
        if len(parts) > 2:
            raise _header_error("Upload-Metadata", "Each pair is a key, a space, a base64 value.")
        value = ""
        if len(parts) == 2:
            try:
                value = base64.b64decode(parts[1], validate=True).decode("utf-8")
            except (binascii.Error, UnicodeDecodeError) as exc:
                raise _header_error("Upload-Metadata", f"{parts[0]}: not base64 UTF-8.") from exc
        found[parts[0]] = value
    return found


def parse_length(value: str | None, header: str) -> int:
    if value is None or not value.isdigit():
        raise _header_error(header, "A non-negative whole number of bytes is required.")
    return int(value)


def _header_error(header: str, message: str) -> FieldValidationError:
    return FieldValidationError.at(f"header.{header}", message)


def upload_create(*, actor: Actor, length: int, metadata: dict[str, str]) -> Upload:
    """A new, empty upload in the metadata's workspace (editor or above)."""
    workspace_id = metadata.get("workspace_id", "")
    if not workspace_id:
        raise _header_error("Upload-Metadata", "workspace_id is required.")
    access = require_workspace(actor, workspace_id, role=EDITOR)
    filename = metadata.get("filename", "").strip()
    if not filename:
        raise _header_error("Upload-Metadata", "filename is required.")
    alt_text = metadata.get("alt_text", "")
    if len(alt_text) > 1500:
        raise _header_error("Upload-Metadata", "alt_text: at most 1500 characters.")
    if length <= 0:
        raise _header_error("Upload-Length", "The file is empty.")
    limit = settings.HERALD_MAX_VIDEO_BYTES
    if length > limit:
        raise UploadTooLargeError(f"The upload is {length} bytes; the limit is {limit} bytes.")
    upload = Upload(
        workspace=access.workspace,
        created_by=actor.user,
        length=length,
        filename=filename[-200:],
        filetype=metadata.get("filetype", "")[:100],
        alt_text=alt_text,
        expires_at=_expiry(),
    )
    upload.spool_name = f"{upload.pk}.part"
    spool_dir().mkdir(parents=True, exist_ok=True)
    _spool_path(upload).touch()
    upload.save()
    return upload


def upload_get(*, actor: Actor, upload_id: ModelId) -> Upload:
    """The caller's view of an upload: 404 unknown, 410 expired, 403 without editor access."""
    pk = parse_id(upload_id, what="upload")
    upload = Upload.objects.filter(pk=pk).first()
    if upload is None:
        raise NotFoundError(f"No upload with ID {pk}.")
    require_workspace(actor, upload.workspace_id, role=EDITOR)
    if upload.media_id is None and upload.expires_at <= now():
        raise UploadExpiredError()
    return upload


def upload_append(
    *, actor: Actor, upload_id: ModelId, offset: int, body: BinaryIO, body_length: int
) -> Upload:
    """Append ``body_length`` bytes read from ``body`` at ``offset``; on the last byte the
    upload becomes a media item (``upload.media``). A body that ends early keeps what came."""
    upload = upload_get(actor=actor, upload_id=upload_id)
    if upload.media_id is not None or offset != upload.offset:
        raise UploadOffsetMismatchError(
            f"Upload-Offset is {offset}; the upload is at {upload.offset} of {upload.length}."
        )
    if offset + body_length > upload.length:
        raise UploadTooLargeError(
            f"{body_length} bytes at offset {offset} exceed the upload's length {upload.length}."
        )
    with _locked_spool(upload) as spool:
        spool.seek(offset)
        received, complete = _copy(body, spool, body_length)
        spool.truncate(offset + received)
    moved = Upload.objects.filter(pk=upload.pk, offset=offset).update(
        offset=offset + received, expires_at=_expiry()
    )
    if not moved:  # another PATCH finished in between
        raise UploadOffsetMismatchError()
    upload.refresh_from_db()
    if not complete:
        raise UploadInterruptedError(
            f"The body ended after {received} of {body_length} bytes; resume at {upload.offset}."
        )
    if upload.offset == upload.length:
        _finish(actor, upload)
    return upload


def upload_terminate(*, actor: Actor, upload_id: ModelId) -> None:
    upload = upload_get(actor=actor, upload_id=upload_id)
    _remove(upload)


def uploads_expire() -> int:
    """Remove uploads past their expiry and their spool files; safe to run again at any time."""
    removed = 0
    for upload in Upload.objects.filter(expires_at__lte=now()).iterator():
        _remove(upload)
        removed += 1
    return removed


def workspace_media_bytes(workspace: Workspace) -> int:
    """Storage the workspace's media and unfinished uploads hold, in bytes."""
    stored = Media.objects.filter(workspace=workspace).aggregate(n=Sum("size_bytes"))["n"] or 0
    pending = (
        Upload.objects.filter(workspace=workspace, media__isnull=True).aggregate(n=Sum("offset"))[
            "n"
        ]
        or 0
    )
    return int(stored) + int(pending)


def _finish(actor: Actor, upload: Upload) -> None:
    """Hand the spool to the media service; a refused file (422) removes the upload."""
    path = _spool_path(upload)
    try:
        with path.open("rb") as handle:
            item = media_service.media_upload(
                actor=actor,
                workspace_id=upload.workspace_id,
                upload=UploadedFile(
                    handle, name=upload.filename, content_type=upload.filetype, size=upload.length
                ),
                alt_text=upload.alt_text,
                max_bytes=settings.HERALD_MAX_VIDEO_BYTES,
            )
    except FieldValidationError:
        _remove(upload)
        raise
    upload.media = item
    upload.save(update_fields=["media"])
    path.unlink(missing_ok=True)


def _copy(body: BinaryIO, spool: BinaryIO, length: int) -> tuple[int, bool]:
    """Copy up to ``length`` bytes in bounded chunks; (bytes copied, whether all came)."""
    received = 0
    while received < length:
        try:
            chunk = body.read(min(CHUNK_BYTES, length - received))
        except OSError:  # the client went away mid-body
            chunk = b""
        if not chunk:
            return received, False
        spool.write(chunk)
        received += len(chunk)
    return received, True


@contextmanager
def _locked_spool(upload: Upload) -> Iterator[BinaryIO]:
    """The spool file open for writing, under an exclusive lock: a second PATCH of the same
    upload while one runs is a 409, not interleaved bytes."""
    try:
        handle = _spool_path(upload).open("r+b")
    except FileNotFoundError:
        raise UploadExpiredError() from None
    with handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UploadOffsetMismatchError(
                "Another PATCH of this upload is in progress."
            ) from None
        yield handle
        handle.flush()
        os.fsync(handle.fileno())


def _spool_path(upload: Upload) -> Path:
    return spool_dir() / Path(upload.spool_name).name


def _remove(upload: Upload) -> None:
    _spool_path(upload).unlink(missing_ok=True)
    Upload.objects.filter(pk=upload.pk).delete()


def _expiry() -> datetime:
    return now() + timedelta(seconds=settings.HERALD_UPLOAD_EXPIRY_SECONDS)
