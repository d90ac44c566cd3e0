"""Resumable uploads (tus 1.0) at /api/v1/uploads, through the live test client: real PNG and
MP4 files, resumption after an interrupted PATCH, the protocol's refusals, expiry and memory."""

from __future__ import annotations

import base64
import hashlib
import io
import itertools
import os
import tracemalloc
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config
from django.utils import timezone
from PIL import Image
from rest_framework.test import APIClient

from publishing.models import Media, Upload
from publishing.services import media as media_service
from publishing.services import uploads
from tests.topology_support import free_port
from tests.video_support import make_video, mp4_video
from workspaces.models import WorkspaceMembership

TUS = {"HTTP_TUS_RESUMABLE": "1.0.0"}
OCTETS = "application/offset+octet-stream"


@pytest.fixture
def spool(settings: Any, tmp_path: Path, media_storage: Any) -> Path:
    settings.MEDIA_ROOT = tmp_path
    return tmp_path / "uploads"


@pytest.fixture
def client(user: Any, bearer_client: Any) -> APIClient:
    return bearer_client(user)


def png_bytes(size: int = 64) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (size, size), (200, 30, 30)).save(out, "PNG")
    return out.getvalue()


def metadata(**values: str) -> str:
    return ",".join(f"{k} {base64.b64encode(v.encode()).decode()}" for k, v in values.items())


def create(client: APIClient, workspace: Any, length: int, **extra: Any) -> Any:
    return client.post(
        "/api/v1/uploads",
        HTTP_UPLOAD_LENGTH=str(length),
        HTTP_UPLOAD_METADATA=metadata(
            workspace_id=str(workspace.pk), filename="clip.bin", filetype="video/mp4"
        ),
        **TUS,
        **extra,
    )


def patch(client: APIClient, url: str, offset: int, data: bytes, **extra: Any) -> Any:
    return client.generic(
        "PATCH", url, data, content_type=OCTETS, HTTP_UPLOAD_OFFSET=str(offset), **TUS, **extra
    )


class Interrupted(io.RawIOBase):
    """A request body that stops after ``data``: the connection dropped mid-PATCH."""

    def __init__(self, data: bytes) -> None:
        self.stream = io.BytesIO(data)

    def read(self, size: int = -1) -> bytes:
        return self.stream.read(size)


def test_options_announces_the_protocol(api_client: APIClient, settings: Any) -> None:
    response = api_client.options("/api/v1/uploads")
    assert response.status_code == 204
    assert response["Tus-Version"] == "1.0.0"
    assert response["Tus-Resumable"] == "1.0.0"
    assert "creation-with-upload" in response["Tus-Extension"].split(",")
    assert response["Tus-Max-Size"] == str(settings.HERALD_MAX_VIDEO_BYTES)


def test_an_mp4_in_three_patches_becomes_a_media_item(
    client: APIClient, workspace: Any, spool: Path
) -> None:
    data = mp4_video()
    created = create(client, workspace, len(data))
    assert created.status_code == 201, created.content
    url = created["Location"]
    assert url.startswith("http://testserver/api/v1/uploads/")
    assert created["Upload-Offset"] == "0"
    assert created["Upload-Expires"].endswith("GMT")
    third = len(data) // 3
    for start, end in ((0, third), (third, 2 * third)):
        step = patch(client, url, start, data[start:end])
        assert step.status_code == 204, step.content
        assert step["Upload-Offset"] == str(end)
        assert "Herald-Media-Id" not in step
    head = client.head(url, **TUS)
    assert head.status_code == 200
    assert head["Upload-Offset"] == str(2 * third)
    last = patch(client, url, 2 * third, data[2 * third :])
    assert last.status_code == 204, last.content
    item = Media.objects.get(pk=last["Herald-Media-Id"])
    assert item.mime_type == "video/mp4"
    assert item.size_bytes == len(data)
    assert item.file.read() == data
    assert list(spool.iterdir()) == []  # the spool file is gone
    usage = client.get(f"/api/v1/workspaces/{workspace.pk}/usage").json()
    assert usage["usage"]["media_bytes"] == len(data)


def test_creation_with_upload_and_session_auth(user: Any, workspace: Any, spool: Path) -> None:
    session = APIClient()
    session.force_login(user)
    data = png_bytes()
    created = session.generic(
        "POST",
        "/api/v1/uploads",
        data,
        content_type=OCTETS,
        HTTP_UPLOAD_LENGTH=str(len(data)),
        HTTP_UPLOAD_METADATA=metadata(
            workspace_id=str(workspace.pk), filename="red.png", filetype="image/png", alt_text="Red"
        ),
        **TUS,
    )
    assert created.status_code == 201, created.content
    item = Media.objects.get(pk=created["Herald-Media-Id"])
    assert (item.mime_type, item.width, item.alt_text) == ("image/png", 64, "Red")


def test_an_interrupted_patch_keeps_its_bytes_and_resumes(
    client: APIClient, workspace: Any, spool: Path
) -> None:
    data = png_bytes(300)
    url = create(client, workspace, len(data))["Location"]
    cut = len(data) // 2
    broken = client.generic(
        "PATCH",
        url,
        b"",
        content_type=OCTETS,
        HTTP_UPLOAD_OFFSET="0",
        CONTENT_LENGTH=str(len(data)),
        **{"wsgi.input": Interrupted(data[:cut])},
        **TUS,
    )
    assert broken.status_code == 400
    assert broken.json()["code"] == "upload_interrupted"
    head = client.head(url, **TUS)
    assert head["Upload-Offset"] == str(cut)
    done = patch(client, url, cut, data[cut:])
    assert done.status_code == 204, done.content
    assert Media.objects.get(pk=done["Herald-Media-Id"]).file.read() == data


def test_offset_mismatch_is_409(client: APIClient, workspace: Any, spool: Path) -> None:
    data = png_bytes()
    url = create(client, workspace, len(data))["Location"]
    response = patch(client, url, 5, data[5:])
    assert response.status_code == 409
    assert response.json()["code"] == "upload_offset_mismatch"
    assert response["Tus-Resumable"] == "1.0.0"  # tus headers on errors too


def test_version_and_content_type_are_checked(
    client: APIClient, workspace: Any, spool: Path
) -> None:
    url = create(client, workspace, 10)["Location"]
    wrong = client.head(url, HTTP_TUS_RESUMABLE="0.2.2")
    assert wrong.status_code == 412
    assert wrong["Tus-Version"] == "1.0.0"
    response = client.generic(
        "PATCH", url, b"x", content_type="text/plain", HTTP_UPLOAD_OFFSET="0", **TUS
    )
    assert response.status_code == 415


def test_above_the_limit_is_413(
    client: APIClient, workspace: Any, spool: Path, settings: Any
) -> None:
    settings.HERALD_MAX_VIDEO_BYTES = 1000
    response = create(client, workspace, 1001)
    assert response.status_code == 413
    assert response.json()["code"] == "upload_too_large"
    url = create(client, workspace, 10)["Location"]
    assert patch(client, url, 0, b"x" * 11).status_code == 413  # more than the upload's length


def test_expired_is_410_then_removed_by_the_cleanup(
    client: APIClient, workspace: Any, spool: Path
) -> None:
    url = create(client, workspace, 10)["Location"]
    assert patch(client, url, 0, b"12345").status_code == 204
    Upload.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    assert client.head(url, **TUS).status_code == 410
    assert patch(client, url, 5, b"67890").status_code == 410
    assert uploads.uploads_expire() == 1
    assert uploads.uploads_expire() == 0  # idempotent
    assert list(spool.iterdir()) == []
    assert client.head(url, **TUS).status_code == 404


def test_termination(client: APIClient, workspace: Any, spool: Path) -> None:
    url = create(client, workspace, 10)["Location"]
    assert client.delete(url, **TUS).status_code == 204
    assert client.head(url, **TUS).status_code == 404
    assert list(spool.iterdir()) == []


def test_other_workspaces_and_viewers_are_refused(
    client: APIClient, user: Any, workspace: Any, spool: Path, make_user: Any, bearer_client: Any
) -> None:
    url = create(client, workspace, 10)["Location"]
    stranger = bearer_client(make_user("stranger@example.com"))
    assert stranger.head(url, **TUS).status_code in (403, 404)
    assert patch(stranger, url, 0, b"0123456789").status_code in (403, 404)
    viewer = make_user("viewer@example.com")
    WorkspaceMembership.objects.create(workspace=workspace, user=viewer, role="viewer")
    assert create(bearer_client(viewer), workspace, 10).status_code == 403
    assert patch(bearer_client(viewer), url, 0, b"0123456789").status_code == 403
    read_only = bearer_client(user, permissions=("api:read",))
    assert patch(read_only, url, 0, b"0123456789").status_code == 403
    assert Upload.objects.get().offset == 0


def test_a_bad_file_is_422_on_the_last_patch_and_the_spool_removed(
    client: APIClient, workspace: Any, spool: Path
) -> None:
    data = b"\x00\x00\x00\x18ftypmp42" + os.urandom(2000)  # MP4 magic, garbage inside
    url = create(client, workspace, len(data))["Location"]
    response = patch(client, url, 0, data)
    assert response.status_code == 422, response.content
    assert response["Tus-Resumable"] == "1.0.0"
    assert not Upload.objects.exists()
    assert not Media.objects.exists()
    assert list(spool.iterdir()) == []


def test_a_64_mib_patch_is_never_held_in_memory(
    client: APIClient, workspace: Any, spool: Path
) -> None:
    size = 64 * 1024 * 1024
    url = create(client, workspace, size + 1)["Location"]  # one byte short: no media step

    class Zeros(io.RawIOBase):
        left = size

        def read(self, n: int = -1) -> bytes:
            n = min(n if n >= 0 else self.left, self.left)
            self.left -= n
            return b"\0" * n

    tracemalloc.start()
    try:
        response = client.generic(
            "PATCH",
            url,
            b"",
            content_type=OCTETS,
            HTTP_UPLOAD_OFFSET="0",
            CONTENT_LENGTH=str(size),
            **{"wsgi.input": Zeros()},
            **TUS,
        )
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert response.status_code == 204, response.content
    assert response["Upload-Offset"] == str(size)
    assert peak < 4 * 1024 * 1024, peak


# --- tus checksum extension ------------------------------------------------------------------


def checksum(algorithm: str, data: bytes) -> str:
    return f"{algorithm} {base64.b64encode(hashlib.new(algorithm, data).digest()).decode()}"


def test_options_announces_the_checksum_extension(api_client: APIClient) -> None:
    response = api_client.options("/api/v1/uploads")
    assert "checksum" in response["Tus-Extension"].split(",")
    assert response["Tus-Checksum-Algorithm"].split(",") == ["sha1", "sha256", "md5"]


@pytest.mark.parametrize("algorithm", ["sha1", "sha256", "md5"])
def test_patches_with_matching_checksums_become_a_media_item(
    client: APIClient, workspace: Any, spool: Path, algorithm: str
) -> None:
    data = mp4_video()
    url = create(client, workspace, len(data))["Location"]
    half = len(data) // 2
    for start, end in ((0, half), (half, len(data))):
        piece = data[start:end]
        step = patch(client, url, start, piece, HTTP_UPLOAD_CHECKSUM=checksum(algorithm, piece))
        assert step.status_code == 204, step.content
        assert step["Upload-Offset"] == str(end)
    assert Media.objects.get(pk=step["Herald-Media-Id"]).file.read() == data


def test_a_checksum_mismatch_is_460_discards_the_bytes_and_the_upload_resumes(
    client: APIClient, workspace: Any, spool: Path
) -> None:
    data = png_bytes(300)
    url = create(client, workspace, len(data))["Location"]
    cut = len(data) // 2
    assert patch(client, url, 0, data[:cut], HTTP_UPLOAD_CHECKSUM=checksum("sha1", data[:cut]))[
        "Upload-Offset"
    ] == str(cut)
    damaged = b"\xff" + data[cut + 1 :]
    wrong = patch(client, url, cut, damaged, HTTP_UPLOAD_CHECKSUM=checksum("sha1", data[cut:]))
    assert wrong.status_code == 460, wrong.content
    assert wrong.reason_phrase == "Checksum Mismatch"
    body = wrong.json()
    assert (body["code"], body["status"], body["title"]) == (
        "upload_checksum_mismatch",
        460,
        "Checksum Mismatch",
    )
    assert wrong["Tus-Resumable"] == "1.0.0"
    assert client.head(url, **TUS)["Upload-Offset"] == str(cut)  # offset unchanged
    assert (spool / f"{Upload.objects.get().pk}.part").stat().st_size == cut  # bytes discarded
    again = patch(client, url, cut, data[cut:], HTTP_UPLOAD_CHECKSUM=checksum("sha1", data[cut:]))
    assert again.status_code == 204, again.content
    assert Media.objects.get(pk=again["Herald-Media-Id"]).file.read() == data


def test_a_checksum_patch_cut_short_keeps_nothing(
    client: APIClient, workspace: Any, spool: Path
) -> None:
    """A checksum covers the whole body: bytes of a body that ended early cannot be verified."""
    data = png_bytes(300)
    url = create(client, workspace, len(data))["Location"]
    broken = client.generic(
        "PATCH",
        url,
        b"",
        content_type=OCTETS,
        HTTP_UPLOAD_OFFSET="0",
        HTTP_UPLOAD_CHECKSUM=checksum("sha256", data),
        CONTENT_LENGTH=str(len(data)),
        **{"wsgi.input": Interrupted(data[:100])},
        **TUS,
    )
    assert broken.status_code == 400
    assert broken.json()["code"] == "upload_interrupted"
    assert client.head(url, **TUS)["Upload-Offset"] == "0"


@pytest.mark.parametrize(
    "header",
    [
        "crc32 AAAAAA==",  # not an algorithm the server takes
        "sha1 not-base64!",
        "sha1 " + base64.b64encode(b"short").decode(),  # not a SHA-1 digest
        "sha1",
    ],
)
def test_an_unsupported_or_malformed_checksum_is_400(
    client: APIClient, workspace: Any, spool: Path, header: str
) -> None:
    url = create(client, workspace, 10)["Location"]
    response = patch(client, url, 0, b"0123456789", HTTP_UPLOAD_CHECKSUM=header)
    assert response.status_code == 400, response.content
    assert response.json()["code"] == "upload_checksum_unsupported"
    assert Upload.objects.get().offset == 0


def test_creation_with_upload_checks_the_checksum(
    client: APIClient, workspace: Any, spool: Path
) -> None:
    data = png_bytes()
    response = client.generic(
        "POST",
        "/api/v1/uploads",
        data,
        content_type=OCTETS,
        HTTP_UPLOAD_LENGTH=str(len(data)),
        HTTP_UPLOAD_METADATA=metadata(workspace_id=str(workspace.pk), filename="red.png"),
        HTTP_UPLOAD_CHECKSUM=checksum("sha256", data + b"x"),
        **TUS,
    )
    assert response.status_code == 460, response.content
    assert Upload.objects.get().offset == 0


# --- S3 media storage: multipart per PATCH (a real S3-compatible server on 127.0.0.1) --------

MIB = 1024 * 1024


@pytest.fixture(scope="module")
def moto_endpoint() -> Iterator[str]:
    from moto.server import ThreadedMotoServer

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


@pytest.fixture
def s3(moto_endpoint: str, settings: Any, tmp_path: Path) -> Any:
    """Media in a fresh bucket of the S3 server, the spool folder in ``tmp_path``, 5 MiB parts."""
    client = boto3.client(
        "s3",
        endpoint_url=moto_endpoint,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name="us-east-1",
    )
    bucket = f"herald-{uuid.uuid4().hex[:12]}"
    client.create_bucket(Bucket=bucket)
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "storages.backends.s3.S3Storage",
            "OPTIONS": {
                "bucket_name": bucket,
                "endpoint_url": moto_endpoint,
                "client_config": Config(s3={"addressing_style": "path"}),
                "access_key": "testing",
                "secret_key": "testing",
                "region_name": "us-east-1",
                "location": "herald",
                "default_acl": None,
                "file_overwrite": False,
            },
        },
    }
    settings.MEDIA_ROOT = str(tmp_path)
    settings.HERALD_S3_UPLOAD_PART_BYTES = 5 * MIB
    client.herald_bucket = bucket
    return client


def noise_png(width: int = 2400, height: int = 2000) -> bytes:
    """A real PNG of random pixels, stored uncompressed: about 14 MB, three 5 MiB parts."""
    out = io.BytesIO()
    Image.frombytes("RGB", (width, height), os.urandom(width * height * 3)).save(
        out, "PNG", compress_level=0
    )
    return out.getvalue()


def keys(s3: Any) -> list[str]:
    return [item["Key"] for item in s3.list_objects_v2(Bucket=s3.herald_bucket).get("Contents", [])]


def multipart_uploads(s3: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = s3.list_multipart_uploads(Bucket=s3.herald_bucket).get(
        "Uploads", []
    )
    return found


def spooled_bytes(tmp_path: Path) -> int:
    return sum(path.stat().st_size for path in (tmp_path / "uploads").iterdir())


def test_an_s3_upload_goes_up_in_parts_as_patches_arrive_and_lands_as_one_object(
    client: APIClient, workspace: Any, s3: Any, tmp_path: Path
) -> None:
    data = noise_png()
    url = create(client, workspace, len(data))["Location"]
    upload = Upload.objects.get()
    assert upload.s3_key == f"herald/uploads/{upload.pk}"
    [pending] = multipart_uploads(s3)
    assert pending["Key"] == upload.s3_key
    cuts = [0, 3 * MIB, 7 * MIB, 12 * MIB, len(data)]
    for start, end in itertools.pairwise(cuts):
        piece = data[start:end]
        step = patch(client, url, start, piece, HTTP_UPLOAD_CHECKSUM=checksum("sha256", piece))
        assert step.status_code == 204, step.content
        if end == len(data):
            break
        assert client.head(url, **TUS)["Upload-Offset"] == str(end)  # resumable from here
        parts = s3.list_parts(
            Bucket=s3.herald_bucket, Key=upload.s3_key, UploadId=upload.s3_upload_id
        )
        assert [part["Size"] for part in parts.get("Parts", [])] == [5 * MIB] * (end // (5 * MIB))
        assert spooled_bytes(tmp_path) == end % (5 * MIB)  # only the part being filled waits
    item = Media.objects.get(pk=step["Herald-Media-Id"])
    assert (item.mime_type, item.width, item.size_bytes) == ("image/png", 2400, len(data))
    assert item.checksum_sha256 == hashlib.sha256(data).hexdigest()
    stored = s3.get_object(Bucket=s3.herald_bucket, Key=f"herald/{item.file.name}")
    assert stored["ContentType"] == "image/png"
    assert stored["Body"].read() == data
    assert keys(s3) == [f"herald/{item.file.name}"]  # the multipart object was moved
    assert multipart_uploads(s3) == []
    assert list((tmp_path / "uploads").iterdir()) == []


def test_an_s3_upload_of_a_video_becomes_a_media_item_in_one_last_part(
    client: APIClient, workspace: Any, s3: Any
) -> None:
    data = mp4_video()
    url = create(client, workspace, len(data))["Location"]
    half = len(data) // 2
    assert patch(client, url, 0, data[:half]).status_code == 204
    last = patch(client, url, half, data[half:])
    assert last.status_code == 204, last.content
    item = Media.objects.get(pk=last["Herald-Media-Id"])
    assert (item.mime_type, item.status) == ("video/mp4", Media.Status.PROCESSING)
    assert item.file.name.endswith(".mp4")
    assert item.file.read() == data
    assert multipart_uploads(s3) == []


def test_an_s3_patch_that_fails_its_checksum_after_a_part_went_up_keeps_nothing(
    client: APIClient, workspace: Any, s3: Any, tmp_path: Path
) -> None:
    data = noise_png()
    url = create(client, workspace, len(data))["Location"]
    assert patch(client, url, 0, data[: 2 * MIB]).status_code == 204
    piece = data[2 * MIB : 8 * MIB]  # fills the first part: it goes up before the digest is known
    wrong = patch(client, url, 2 * MIB, piece, HTTP_UPLOAD_CHECKSUM=checksum("sha1", b"other"))
    assert wrong.status_code == 460
    assert client.head(url, **TUS)["Upload-Offset"] == str(2 * MIB)
    assert Upload.objects.get().s3_parts == []
    assert spooled_bytes(tmp_path) == 2 * MIB
    rest = patch(client, url, 2 * MIB, data[2 * MIB :])
    assert rest.status_code == 204, rest.content
    assert Media.objects.get(pk=rest["Herald-Media-Id"]).file.read() == data


@pytest.mark.parametrize("end", ["termination", "expiry"])
def test_termination_and_expiry_abort_the_multipart_upload(
    client: APIClient, workspace: Any, s3: Any, tmp_path: Path, end: str
) -> None:
    data = noise_png()
    url = create(client, workspace, len(data))["Location"]
    assert patch(client, url, 0, data[: 6 * MIB]).status_code == 204
    upload = Upload.objects.get()
    parts = s3.list_parts(Bucket=s3.herald_bucket, Key=upload.s3_key, UploadId=upload.s3_upload_id)
    assert len(parts["Parts"]) == 1
    if end == "termination":
        assert client.delete(url, **TUS).status_code == 204
    else:
        Upload.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
        assert uploads.uploads_expire() == 1
    assert multipart_uploads(s3) == []  # no orphan parts
    assert keys(s3) == []
    assert list((tmp_path / "uploads").iterdir()) == []
    assert not Upload.objects.exists()


def test_an_s3_upload_of_a_mov_is_remuxed_in_the_bucket_by_the_probe(
    client: APIClient, workspace: Any, s3: Any, django_capture_on_commit_callbacks: Any
) -> None:
    data = make_video("mov", seconds=2, audio=True)
    url = create(client, workspace, len(data))["Location"]
    item_id = patch(client, url, 0, data)["Herald-Media-Id"]
    uploaded = Media.objects.get(pk=item_id).file.name
    assert uploaded.endswith(".mov")
    with django_capture_on_commit_callbacks(execute=True):
        media_service.media_probe(media_id=item_id)
    item = Media.objects.get(pk=item_id)
    assert (item.status, item.mime_type, item.probe["conversion"]) == (
        "ready",
        "video/mp4",
        "remux",
    )
    stored = s3.get_object(Bucket=s3.herald_bucket, Key=f"herald/{item.file.name}")
    assert stored["ContentType"] == "video/mp4"
    assert hashlib.sha256(stored["Body"].read()).hexdigest() == item.checksum_sha256
    assert sorted(keys(s3)) == sorted(f"herald/{n}" for n in (item.file.name, item.poster.name))
    assert f"herald/{uploaded}" not in keys(s3)  # the MOV is gone
