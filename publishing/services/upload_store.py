"""Where the bytes of a resumable upload wait until the last one is in.

- :class:`LocalSpool` (media on the local disk): one spool file under the media root, written
  in place at the upload's offset.
- :class:`S3Multipart` (media in an S3 bucket): an S3 multipart upload; each PATCH's bytes go
  to the bucket as parts of ``HERALD_S3_UPLOAD_PART_BYTES`` while they arrive, and only the part
  being filled waits on the local disk. The last byte completes the multipart upload; the media
  service then reads the object back in a stream and copies it, inside the bucket, to its name.

A PATCH writes through a :class:`Patch`: its bytes count only once ``keep()`` is called, so the
tus checksum extension can discard a PATCH whose bytes do not match their checksum (the
upload's offset is then unchanged and the same bytes can be sent again).
"""

from __future__ import annotations

import fcntl
import io
import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import IO, Any, BinaryIO, Protocol

from django.conf import settings
from django.core.files.storage import default_storage

from publishing.errors import UploadExpiredError, UploadOffsetMismatchError
from publishing.models import Upload
from publishing.services.s3_objects import (
    S3Object,
    StreamedObject,
    copy_to,
    delete,
    multipart_abort,
    multipart_complete,
    multipart_create,
    multipart_part,
    s3_object,
    s3_storage,
)

READ_BYTES = 1024 * 1024  # the read-back of a finished S3 upload holds at most this in memory

# Puts the finished file at a media item's name (given the name wanted and the sniffed type)
# and answers the name it has; ``None``: the media service saves the file itself.
Placer = Callable[[str, str], str]


class Patch(Protocol):
    def write(self, chunk: bytes) -> None: ...

    def keep(self, received: int) -> dict[str, Any]:
        """Count the first ``received`` bytes written; the Upload fields to save with them."""
        ...


class UploadStore(Protocol):
    def start(self, upload: Upload) -> None:
        """Prepare a new upload's store (before the row is saved)."""
        ...

    def patch(self, upload: Upload) -> AbstractContextManager[Patch]:
        """One PATCH's writer, under the upload's lock; what is not kept is dropped on exit."""
        ...

    def complete(self, upload: Upload) -> None:
        """After the last byte: make the stored bytes one file (S3: complete the upload)."""
        ...

    def finished(self, upload: Upload) -> AbstractContextManager[tuple[IO[bytes], Placer | None]]:
        """The finished file to read, and how to put it at a media item's name."""
        ...

    def remove(self, upload: Upload) -> None:
        """Drop every byte the store holds for the upload; safe to run again."""
        ...


def spool_dir() -> Path:
    return Path(settings.MEDIA_ROOT) / "uploads"


def _spool_path(upload: Upload) -> Path:
    return spool_dir() / Path(upload.spool_name).name


def _scratch_path(upload: Upload) -> Path:
    return _spool_path(upload).with_suffix(".patch")


@contextmanager
def _locked(path: Path) -> Iterator[BinaryIO]:
    """``path`` open for writing, under an exclusive lock: a second PATCH of the same upload
    while one runs is a 409, not interleaved bytes."""
    try:
        handle = path.open("r+b")
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


class _SpoolPatch:
    """Bytes written in place after the upload's offset; what is not kept is cut off."""

    def __init__(self, spool: BinaryIO, offset: int) -> None:
        self.spool, self.offset = spool, offset
        self.kept = 0
        spool.seek(offset)

    def write(self, chunk: bytes) -> None:
        self.spool.write(chunk)

    def keep(self, received: int) -> dict[str, Any]:
        self.kept = received
        return {}

    def close(self) -> None:
        self.spool.truncate(self.offset + self.kept)
        self.spool.flush()
        os.fsync(self.spool.fileno())


class LocalSpool:
    def start(self, upload: Upload) -> None:
        spool_dir().mkdir(parents=True, exist_ok=True)
        _spool_path(upload).touch()

    @contextmanager
    def patch(self, upload: Upload) -> Iterator[Patch]:
        with _locked(_spool_path(upload)) as spool:
            patch = _SpoolPatch(spool, upload.offset)
            try:
                yield patch
            finally:
                patch.close()

    def complete(self, upload: Upload) -> None:
        return None

    @contextmanager
    def finished(self, upload: Upload) -> Iterator[tuple[IO[bytes], Placer | None]]:
        with _spool_path(upload).open("rb") as handle:
            yield handle, None

    def remove(self, upload: Upload) -> None:
        _spool_path(upload).unlink(missing_ok=True)


def _buffer_path(upload: Upload, end: int) -> Path:
    """The part being filled, named by the upload offset it ends at: only the file matching
    the saved offset is ever read, so a crash between writing it and saving the offset leaves
    a stale file (removed later), never a wrong part."""
    return spool_dir() / f"{upload.pk}.{end}.buf"


def _drop_stale_buffers(upload: Upload) -> None:
    offset = Upload.objects.filter(pk=upload.pk).values_list("offset", flat=True).first()
    current = _buffer_path(upload, offset) if offset is not None else None
    for path in spool_dir().glob(f"{upload.pk}.*.buf"):
        if path != current:
            path.unlink(missing_ok=True)
    _scratch_path(upload).unlink(missing_ok=True)


def _multipart(upload: Upload) -> S3Object:
    return s3_object(f"uploads/{upload.pk}")


class _PartsPatch:
    """The part being filled is copied to a scratch file and the PATCH's bytes appended; each
    time it reaches the part size it goes to the bucket. Parts sent for bytes that are then
    discarded are sent again under the same number later (S3 keeps the last) or freed when the
    multipart upload completes without them or is aborted."""

    def __init__(self, upload: Upload) -> None:
        self.upload, self.obj = upload, _multipart(upload)
        self.parts: list[dict[str, Any]] = list(upload.s3_parts)
        self.part_bytes = int(settings.HERALD_S3_UPLOAD_PART_BYTES)
        self.scratch = _scratch_path(upload).open("w+b")
        current = _buffer_path(upload, upload.offset)
        if current.exists():
            with current.open("rb") as held:
                shutil.copyfileobj(held, self.scratch)
        self.size = self.scratch.tell()

    def write(self, chunk: bytes) -> None:
        while chunk:
            room = self.part_bytes - self.size
            self.scratch.write(chunk[:room])
            self.size += min(room, len(chunk))
            chunk = chunk[room:]
            if self.size == self.part_bytes:
                self._send()

    def _send(self) -> None:
        number = len(self.parts) + 1
        self.scratch.flush()
        etag = multipart_part(self.obj, self.upload.s3_upload_id, number, self.scratch, self.size)
        self.parts.append({"PartNumber": number, "ETag": etag})
        self.scratch.seek(0)
        self.scratch.truncate()
        self.size = 0

    def keep(self, received: int) -> dict[str, Any]:
        self.scratch.close()
        os.replace(
            _scratch_path(self.upload), _buffer_path(self.upload, self.upload.offset + received)
        )
        return {"s3_parts": self.parts}

    def close(self) -> None:
        self.scratch.close()
        _drop_stale_buffers(self.upload)


class S3Multipart:
    def start(self, upload: Upload) -> None:
        spool_dir().mkdir(parents=True, exist_ok=True)
        _spool_path(upload).touch()  # the lock file of the upload's PATCHes
        obj = _multipart(upload)
        upload.s3_key = obj.key
        upload.s3_upload_id = multipart_create(obj)

    @contextmanager
    def patch(self, upload: Upload) -> Iterator[Patch]:
        with _locked(_spool_path(upload)):
            patch = _PartsPatch(upload)
            try:
                yield patch
            finally:
                patch.close()

    def complete(self, upload: Upload) -> None:
        """Send the part being filled as the last part and complete the multipart upload
        (again after a failure: the upload keeps its multipart ID until it completed)."""
        if not upload.s3_upload_id:
            return
        obj, parts = _multipart(upload), list(upload.s3_parts)
        with _locked(_spool_path(upload)):
            last = _buffer_path(upload, upload.length)
            size = last.stat().st_size if last.exists() else 0
            if size or not parts:
                with last.open("rb") as held:
                    etag = multipart_part(obj, upload.s3_upload_id, len(parts) + 1, held, size)
                parts.append({"PartNumber": len(parts) + 1, "ETag": etag})
            multipart_complete(obj, upload.s3_upload_id, parts)
        Upload.objects.filter(pk=upload.pk).update(s3_parts=parts, s3_upload_id="")
        upload.s3_parts, upload.s3_upload_id = parts, ""
        last.unlink(missing_ok=True)

    @contextmanager
    def finished(self, upload: Upload) -> Iterator[tuple[IO[bytes], Placer | None]]:
        obj = _multipart(upload)

        def place(name: str, content_type: str) -> str:
            storage = default_storage
            final = storage.get_available_name(name, max_length=300)
            copy_to(obj, s3_object(final).key, content_type)
            return str(final)

        with io.BufferedReader(StreamedObject(obj, upload.length), READ_BYTES) as stream:
            yield stream, place

    def remove(self, upload: Upload) -> None:
        """Abort an unfinished multipart upload (S3 frees its parts) or delete the completed
        object, and the local files."""
        obj = _multipart(upload)
        if upload.s3_upload_id:
            multipart_abort(obj, upload.s3_upload_id)
        else:
            delete(obj)
        _spool_path(upload).unlink(missing_ok=True)
        for path in spool_dir().glob(f"{upload.pk}.*.buf"):
            path.unlink(missing_ok=True)
        _scratch_path(upload).unlink(missing_ok=True)


def store_for(upload: Upload) -> UploadStore:
    """The upload's own store: S3 multipart when it was created with S3 media storage."""
    return S3Multipart() if upload.s3_key else LocalSpool()


def store_for_new_upload() -> UploadStore:
    return S3Multipart() if s3_storage() is not None else LocalSpool()
