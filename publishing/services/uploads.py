"""Resumable uploads (tus 1.0): bytes stream, in bounded chunks and never whole in memory, to
the upload's store as they arrive (``publishing.services.upload_store``: a spool file under the
media root, or an S3 multipart upload part by part); the last byte hands the file to the media
service, which validates and stores it exactly as ``POST /api/v1/media`` does.

A PATCH may carry ``Upload-Checksum`` (tus's checksum extension): its bytes are hashed while
they are written and count only when the digest matches; otherwise they are discarded and the
offset stays where it was.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, BinaryIO

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db.models import Sum
from django.utils.timezone import now

from config.errors import FieldValidationError, NotFoundError
from config.types import ModelId
from publishing.errors import (
    UploadChecksumError,
    UploadChecksumMismatchError,
    UploadExpiredError,
    UploadInterruptedError,
    UploadOffsetMismatchError,
    UploadTooLargeError,
)
from publishing.models import Media, Upload
from publishing.services import media as media_service
from publishing.services import upload_store
from workspaces.access import Actor, parse_id, require_workspace
from workspaces.models import Workspace, WorkspaceMembership

logger = logging.getLogger(__name__)

CHUNK_BYTES = 256 * 1024  # what one read of the request body may hold in memory
EDITOR = WorkspaceMembership.Role.EDITOR
# tus checksum algorithms (sha1 is the one every server must take), announced in OPTIONS.
CHECKSUM_ALGORITHMS: dict[str, Callable[[], Any]] = {
    "sha1": hashlib.sha1,
    "sha256": hashlib.sha256,
    "md5": hashlib.md5,
}


@dataclass(frozen=True)
class Checksum:
    """A PATCH's ``Upload-Checksum``: the algorithm and the digest its bytes must have."""

    algorithm: str
    digest: bytes

    def hasher(self) -> Any:
        return CHECKSUM_ALGORITHMS[self.algorithm]()


def parse_checksum(header: str | None) -> Checksum | None:
    """``Upload-Checksum: <algorithm> <base64 digest>``; 400 for an algorithm not in
    :data:`CHECKSUM_ALGORITHMS` or a digest of the wrong form."""
    if header is None or not header.strip():
        return None
    algorithm, _, encoded = header.strip().partition(" ")
    algorithm = algorithm.lower()
    if algorithm not in CHECKSUM_ALGORITHMS:
        raise UploadChecksumError(
            f"{algorithm[:20]!r} is not a supported checksum algorithm; "
            f"use one of {', '.join(CHECKSUM_ALGORITHMS)}."
        )
    try:
        digest = base64.b64decode(encoded.strip(), validate=True)
    except binascii.Error:
        digest = b""
    checksum = Checksum(algorithm, digest)
    if len(digest) != checksum.hasher().digest_size:
        raise UploadChecksumError(f"The {algorithm} digest is not base64 of {algorithm} bytes.")
    return checksum


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
    upload_store.store_for_new_upload().start(upload)
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
    *,
    actor: Actor,
    upload_id: ModelId,
    offset: int,
    body: BinaryIO,
    body_length: int,
    checksum: Checksum | None = None,
) -> Upload:
    """Append ``body_length`` bytes read from ``body`` at ``offset``; on the last byte the
    upload becomes a media item (``upload.media``). A body that ends early keeps what came,
    unless it carried a checksum (which then cannot be verified); bytes that do not match their
    checksum are discarded (460)."""
    upload = upload_get(actor=actor, upload_id=upload_id)
    if upload.media_id is not None or offset != upload.offset:
        raise UploadOffsetMismatchError(
            f"Upload-Offset is {offset}; the upload is at {upload.offset} of {upload.length}."
        )
    if offset + body_length > upload.length:
        raise UploadTooLargeError(
            f"{body_length} bytes at offset {offset} exceed the upload's length {upload.length}."
        )
    store = upload_store.store_for(upload)
    hasher = checksum.hasher() if checksum is not None else None
    with store.patch(upload) as part:
        received, complete = _copy(body, part, body_length, hasher)
        kept = _verified(checksum, hasher, received, complete)
        moved = Upload.objects.filter(pk=upload.pk, offset=offset).update(
            offset=offset + kept, expires_at=_expiry(), **part.keep(kept)
        )
    if not moved:  # another PATCH finished in between
        raise UploadOffsetMismatchError()
    upload.refresh_from_db()
    if not complete:
        raise UploadInterruptedError(
            f"The body ended after {received} of {body_length} bytes; resume at {upload.offset}."
        )
    if upload.offset == upload.length:
        _finish(actor, upload, store)
    return upload


def _verified(checksum: Checksum | None, hasher: Any, received: int, complete: bool) -> int:
    """How many of the ``received`` bytes count: all without a checksum; with one, all when
    they match it, none when the body was cut short; a mismatch raises (nothing counts)."""
    if checksum is None:
        return received
    if not complete:
        return 0
    if hasher.digest() != checksum.digest:
        raise UploadChecksumMismatchError(
            f"The {received} bytes do not match their {checksum.algorithm} checksum; they were "
            "discarded. Send them again."
        )
    return received


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


def _finish(actor: Actor, upload: Upload, store: upload_store.UploadStore) -> None:
    """Hand the finished file to the media service; a refused file (422) removes the upload."""
    store.complete(upload)
    try:
        with store.finished(upload) as (handle, place):
            item = media_service.media_upload(
                actor=actor,
                workspace_id=upload.workspace_id,
                upload=UploadedFile(
                    handle, name=upload.filename, content_type=upload.filetype, size=upload.length
                ),
                alt_text=upload.alt_text,
                max_bytes=settings.HERALD_MAX_VIDEO_BYTES,
                place=place,
            )
    except FieldValidationError:
        _remove(upload)
        raise
    upload.media = item
    upload.save(update_fields=["media"])
    store.remove(upload)


def _copy(body: BinaryIO, part: upload_store.Patch, length: int, hasher: Any) -> tuple[int, bool]:
    """Copy up to ``length`` bytes in bounded chunks, hashing them when a checksum came;
    (bytes copied, whether all came)."""
    received = 0
    while received < length:
        try:
            chunk = body.read(min(CHUNK_BYTES, length - received))
        except OSError:  # the client went away mid-body
            chunk = b""
        if not chunk:
            return received, False
        part.write(chunk)
        if hasher is not None:
            hasher.update(chunk)
        received += len(chunk)
    return received, True


def _remove(upload: Upload) -> None:
    upload_store.store_for(upload).remove(upload)
    Upload.objects.filter(pk=upload.pk).delete()


def _expiry() -> datetime:
    return now() + timedelta(seconds=settings.HERALD_UPLOAD_EXPIRY_SECONDS)
