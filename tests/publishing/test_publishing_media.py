"""Media: multipart upload typed by its bytes, size limits, list/get/delete through the
configured storage, and deletion refused while an unfinished publication uses the item."""

from __future__ import annotations

import hashlib
import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from rest_framework.test import APIClient

from publishing.models import Account, Media
from tests.endpoint_support import MEMBERS_ONLY, DetailTests, WorkspaceListTests
from tests.problem_asserts import assert_invalid, assert_problem
from tests.providers import tiny_png
from tests.publishing_support import API, gif_bytes, make_media, ok, upload
from workspaces.access import Actor
from workspaces.models import User, WorkspaceMembership

pytestmark = pytest.mark.django_db


def jpeg_bytes() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (5, 4), (10, 200, 10)).save(buffer, format="JPEG")
    return buffer.getvalue()


def stored_files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file()]


def test_upload_png_and_jpeg(owner_client: APIClient, workspace: Any, media_storage: Path) -> None:
    png = tiny_png(3, 2)
    body = upload(owner_client, workspace, png, name="pixel.png", alt_text="A red pixel")
    assert body["mime_type"] == "image/png"
    assert (body["width"], body["height"]) == (3, 2)
    assert body["size_bytes"] == len(png)
    assert body["checksum_sha256"] == hashlib.sha256(png).hexdigest()
    assert body["alt_text"] == "A red pixel"
    assert body["name"] == "pixel.png"
    assert body["workspace_id"] == str(workspace.pk)
    assert body["$schema"].endswith("/schemas/Media.json")
    assert body["url"].startswith("http://testserver/media/")
    jpeg = upload(owner_client, workspace, jpeg_bytes(), name="photo.jpeg")
    assert jpeg["mime_type"] == "image/jpeg"
    assert (jpeg["width"], jpeg["height"]) == (5, 4)
    # Stored through the storage backend, under the media ID (the client's name is not a path).
    files = sorted(p.name for p in stored_files(media_storage))
    assert files == sorted([f"{body['id']}.png", f"{jpeg['id']}.jpg"])
    assert (next(p for p in stored_files(media_storage) if p.suffix == ".png")).read_bytes() == png


def test_media_url_is_on_the_public_url_when_set(
    owner_client: APIClient, workspace: Any, media_storage: Path, settings: Any
) -> None:
    """Asset URLs use HERALD_PUBLIC_URL, not the Host a reverse proxy forwards."""
    settings.HERALD_PUBLIC_URL = "https://herald.example.com:8443"
    body = upload(owner_client, workspace)
    assert body["url"].startswith("https://herald.example.com:8443/media/")
    assert ok(owner_client.get(f"{API}/media/{body['id']}"))["url"] == body["url"]


def test_upload_answers_201_with_location(
    owner_client: APIClient, workspace: Any, media_storage: Path
) -> None:
    handle = io.BytesIO(tiny_png())
    handle.name = "a.png"
    response = owner_client.post(
        f"{API}/media", {"workspace_id": str(workspace.pk), "file": handle}, format="multipart"
    )
    body = ok(response, 201)
    assert response["Location"].endswith(f"/api/v1/media/{body['id']}")


def test_type_comes_from_the_bytes_not_the_name(
    owner_client: APIClient, workspace: Any, media_storage: Path
) -> None:
    response = upload(
        owner_client, workspace, b"just some text, not an image\n", name="x.png", status=422
    )
    assert_invalid(response, "body.file")
    # A JPEG named .png is a JPEG.
    assert upload(owner_client, workspace, jpeg_bytes(), name="x.png")["mime_type"] == "image/jpeg"
    # A GIF is accepted as a GIF.
    assert upload(owner_client, workspace, gif_bytes(), name="x.bin")["mime_type"] == "image/gif"
    assert Media.objects.count() == 2


def test_damaged_images_are_refused(
    owner_client: APIClient, workspace: Any, media_storage: Path
) -> None:
    png = tiny_png(40, 40)
    assert_invalid(
        upload(owner_client, workspace, png[: len(png) // 2], name="cut.png", status=422),
        "body.file",
    )
    assert_invalid(
        upload(owner_client, workspace, png[:12], name="cut.png", status=422), "body.file"
    )
    assert_invalid(
        upload(owner_client, workspace, b"\x89PNG\r\n\x1a\n" + b"\x00" * 40, status=422),
        "body.file",
    )
    assert not Media.objects.exists()
    assert stored_files(media_storage) == []


def test_empty_and_missing_files(
    owner_client: APIClient, workspace: Any, media_storage: Path
) -> None:
    assert_invalid(upload(owner_client, workspace, b"", name="empty.png", status=422), "body.file")
    response = owner_client.post(
        f"{API}/media", {"workspace_id": str(workspace.pk)}, format="multipart"
    )
    assert_invalid(response, "body.file")


def test_size_limit(
    owner_client: APIClient, workspace: Any, media_storage: Path, settings: Any
) -> None:
    png = tiny_png(30, 30)
    settings.HERALD_MAX_MEDIA_BYTES = len(png) - 1
    assert_invalid(upload(owner_client, workspace, png, status=422), "body.file")
    settings.HERALD_MAX_MEDIA_BYTES = len(png)
    upload(owner_client, workspace, png)


def test_pixel_limit(
    owner_client: APIClient, workspace: Any, media_storage: Path, settings: Any
) -> None:
    settings.HERALD_MAX_IMAGE_PIXELS = 100
    assert_invalid(upload(owner_client, workspace, tiny_png(11, 10), status=422), "body.file")


def test_a_media_cursor_is_refused_by_another_list(
    owner_client: APIClient, workspace: Any, media_storage: Path
) -> None:
    for i in range(2):
        upload(owner_client, workspace, tiny_png(2, 2, (i, i, i)))
    first = ok(owner_client.get(f"{API}/media", {"workspace_id": str(workspace.pk), "limit": 1}))
    assert first["next_cursor"]
    assert_invalid(
        owner_client.get(
            f"{API}/accounts", {"workspace_id": str(workspace.pk), "cursor": first["next_cursor"]}
        ),
        "query.cursor",
    )


def test_get_and_delete_removes_the_file(
    owner_client: APIClient,
    workspace: Any,
    media_storage: Path,
    django_capture_on_commit_callbacks: Any,
) -> None:
    item = upload(owner_client, workspace)
    assert ok(owner_client.get(f"{API}/media/{item['id']}"))["id"] == item["id"]
    assert len(stored_files(media_storage)) == 1
    with django_capture_on_commit_callbacks(execute=True):
        response = owner_client.delete(f"{API}/media/{item['id']}")
    assert response.status_code == 204
    assert stored_files(media_storage) == []
    assert_problem(owner_client.get(f"{API}/media/{item['id']}"), 404, "not_found")
    assert_problem(owner_client.delete(f"{API}/media/{item['id']}"), 404, "not_found")
    assert_problem(owner_client.get(f"{API}/media/nope"), 404, "not_found")


def _discord_account(workspace: Any) -> Account:
    from providers import credentials

    return Account.objects.create(
        workspace=workspace,
        provider="discord_webhook",
        external_id="1",
        username="Herald Hook",
        account_kind="webhook",
        credentials_encrypted=credentials.encrypt(
            {"webhook_url": "https://discord.com/api/webhooks/1/x"}
        ),
    )


def test_media_in_use_by_a_draft_cannot_be_deleted(
    owner_client: APIClient,
    workspace: Any,
    media_storage: Path,
    django_capture_on_commit_callbacks: Any,
) -> None:
    account = _discord_account(workspace)
    shared = upload(owner_client, workspace)
    override = upload(owner_client, workspace, tiny_png(2, 2))
    publication = ok(
        owner_client.post(
            f"{API}/publications",
            {
                "workspace_id": str(workspace.pk),
                "text": "hi",
                "media_ids": [shared["id"]],
                "destinations": [{"account_id": str(account.pk)}],
            },
            format="json",
        ),
        201,
    )
    other = ok(
        owner_client.post(
            f"{API}/publications",
            {
                "workspace_id": str(workspace.pk),
                "text": "hi",
                "destinations": [{"account_id": str(account.pk), "media_ids": [override["id"]]}],
            },
            format="json",
        ),
        201,
    )
    assert_problem(owner_client.delete(f"{API}/media/{shared['id']}"), 409, "media_in_use")
    assert_problem(owner_client.delete(f"{API}/media/{override['id']}"), 409, "media_in_use")
    assert len(stored_files(media_storage)) == 2
    # Once the publications are withdrawn, the media can go.
    for pub in (publication, other):
        ok(owner_client.post(f"{API}/publications/{pub['id']}/cancel"))
    with django_capture_on_commit_callbacks(execute=True):
        assert owner_client.delete(f"{API}/media/{shared['id']}").status_code == 204
        assert owner_client.delete(f"{API}/media/{override['id']}").status_code == 204
    assert stored_files(media_storage) == []


def test_upload_access(
    owner_client: APIClient,
    workspace: Any,
    media_storage: Path,
    make_user: Callable[..., User],
    bearer_client: Callable[..., APIClient],
) -> None:
    """Uploading (the standard reads and delete: TestMediaEndpoints)."""
    viewer = make_user()
    WorkspaceMembership.objects.create(workspace=workspace, user=viewer, role="viewer")
    assert_problem(upload(bearer_client(viewer), workspace, status=403), 403, "role_too_low")

    from workspaces.services import organization_create, workspace_create

    stranger = make_user()
    org = organization_create(actor=Actor(user=stranger), name="Other")
    workspace_create(actor=Actor(user=stranger), organization_id=org.pk, name="Elsewhere")
    stranger_client = bearer_client(stranger)
    assert_problem(upload(stranger_client, workspace, status=403), 403, "no_workspace_access")
    read_only = bearer_client(
        User.objects.get(email="owner@example.com"), permissions=("api:read",)
    )
    assert upload(read_only, workspace, status=403).status_code == 403
    assert not Media.objects.exists()


def png_header_only(width: int, height: int) -> bytes:
    """A tiny PNG whose IHDR claims ``width`` x ``height`` pixels, with one empty IDAT."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(b""))
        + chunk(b"IEND", b"")
    )


@pytest.mark.parametrize(
    ("width", "height", "limit"),
    [
        (
            20000,
            10000,
            None,
        ),  # past Pillow's DecompressionBombError threshold (2x its MAX_IMAGE_PIXELS)
        (12000, 10000, None),  # past Pillow's DecompressionBombWarning threshold only
        (
            20000,
            10000,
            10**12,
        ),  # Herald's own limit raised above Pillow's: still refused, never a 500
        (12000, 10000, 10**12),
    ],
)
def test_decompression_bomb_headers_are_a_422(
    owner_client: APIClient,
    workspace: Any,
    media_storage: Path,
    settings: Any,
    width: int,
    height: int,
    limit: int | None,
) -> None:
    if limit is not None:
        settings.HERALD_MAX_IMAGE_PIXELS = limit
    payload = png_header_only(width, height)
    assert len(payload) < 100
    with Image.open(io.BytesIO(tiny_png())):  # Pillow itself is unchanged by the upload
        pass
    response = upload(owner_client, workspace, payload, name="bomb.png", status=422)
    body = assert_invalid(response, "body.file")
    assert "pixels" in body["errors"][0]["message"] or "decod" in body["errors"][0]["message"]
    assert not Media.objects.exists()
    assert stored_files(media_storage) == []


def test_an_image_whose_pixels_cannot_be_decoded_is_a_422(
    owner_client: APIClient, workspace: Any, media_storage: Path
) -> None:
    # Well-formed chunks (verify() alone accepts it) but no pixel data behind the header.
    response = upload(
        owner_client, workspace, png_header_only(10, 10), name="hollow.png", status=422
    )
    assert_invalid(response, "body.file")
    assert not Media.objects.exists()
    upload(owner_client, workspace, tiny_png(10, 10))


# --- The standard endpoint tests (tests/endpoint_support.py) ----------------------------------


class TestMediaEndpoints(WorkspaceListTests, DetailTests):
    list_url = f"{API}/media"
    schema = "Media"
    write_role = "editor"
    foreign_answer = MEMBERS_ONLY
    not_allowed = (("put", "detail"), ("patch", "detail"), ("delete", "list"))

    def make(self, workspace: Any, owner: User) -> str:
        return str(make_media(workspace).pk)

    def detail_url(self, obj: str) -> str:
        return f"{API}/media/{obj}"
