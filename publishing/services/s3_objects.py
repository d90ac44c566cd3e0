"""The S3 calls django-storages does not make for media: a multipart upload part by part, a
streamed read from any position, a copy inside the bucket. The client, bucket and key prefix
are those of the configured ``S3Storage`` (``config/storage.py``), so its timeouts, retries and
credentials apply."""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import IO, Any

from botocore.exceptions import ClientError
from django.core.files.storage import default_storage


@dataclass(frozen=True)
class S3Object:
    client: Any
    bucket: str
    key: str


def s3_storage() -> Any | None:
    """The default storage when it is an S3 bucket, else ``None``."""
    from storages.backends.s3 import S3Storage

    return default_storage if isinstance(default_storage, S3Storage) else None


def s3_object(name: str) -> S3Object:
    """The object the S3 storage keeps under ``name`` (the storage's key prefix applied)."""
    from storages.utils import clean_name

    storage = s3_storage()
    if storage is None:
        raise RuntimeError("Media storage is not an S3 bucket.")
    key = storage._normalize_name(clean_name(name))
    return S3Object(storage.connection.meta.client, storage.bucket_name, key)


def with_key(obj: S3Object, key: str) -> S3Object:
    return S3Object(obj.client, obj.bucket, key)


def multipart_create(obj: S3Object) -> str:
    return str(obj.client.create_multipart_upload(Bucket=obj.bucket, Key=obj.key)["UploadId"])


def multipart_part(obj: S3Object, upload_id: str, number: int, body: IO[bytes], size: int) -> str:
    """Send ``size`` bytes of ``body`` (from its start) as part ``number``; the part's ETag."""
    body.seek(0)
    answer = obj.client.upload_part(
        Bucket=obj.bucket,
        Key=obj.key,
        UploadId=upload_id,
        PartNumber=number,
        Body=body,
        ContentLength=size,
    )
    return str(answer["ETag"])


def multipart_complete(obj: S3Object, upload_id: str, parts: list[dict[str, Any]]) -> None:
    obj.client.complete_multipart_upload(
        Bucket=obj.bucket,
        Key=obj.key,
        UploadId=upload_id,
        MultipartUpload={"Parts": parts},
    )


def multipart_abort(obj: S3Object, upload_id: str) -> None:
    """Abort the multipart upload and free its parts; one already gone is fine."""
    try:
        obj.client.abort_multipart_upload(Bucket=obj.bucket, Key=obj.key, UploadId=upload_id)
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") not in ("NoSuchUpload", "404"):
            raise


def copy_to(obj: S3Object, key: str, content_type: str) -> None:
    """Copy the object to ``key`` inside the bucket (the bytes never leave the store; large
    objects are copied part by part)."""
    obj.client.copy(
        {"Bucket": obj.bucket, "Key": obj.key},
        obj.bucket,
        key,
        ExtraArgs={"ContentType": content_type, "MetadataDirective": "REPLACE"},
    )


def delete(obj: S3Object) -> None:
    obj.client.delete_object(Bucket=obj.bucket, Key=obj.key)


class StreamedObject(io.RawIOBase):
    """A read-only, seekable file over an object of known ``size``: one streamed GET from the
    position read, reopened only when the reader seeks elsewhere (FFmpeg looking for an index
    at the end). Memory holds one read's bytes, never the object."""

    def __init__(self, obj: S3Object, size: int) -> None:
        super().__init__()
        self.obj, self.size, self.position = obj, size, 0
        self._body: Any = None
        self._body_at = -1

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.position, io.SEEK_END: self.size}[whence]
        self.position = max(0, base + offset)
        return self.position

    def readinto(self, buffer: Any) -> int:
        if self.position >= self.size:
            return 0
        if self._body is None or self._body_at != self.position:
            self._drop_body()
            self._body = self.obj.client.get_object(
                Bucket=self.obj.bucket, Key=self.obj.key, Range=f"bytes={self.position}-"
            )["Body"]
            self._body_at = self.position
        data = self._body.read(len(buffer))
        buffer[: len(data)] = data
        self.position += len(data)
        self._body_at = self.position
        return len(data)

    def close(self) -> None:
        self._drop_body()
        super().close()

    def _drop_body(self) -> None:
        if self._body is not None:
            self._body.close()
            self._body = None
