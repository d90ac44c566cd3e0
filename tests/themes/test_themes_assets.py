"""Theme assets (docs/themes.md): typed uploads through
django-storages, limits, the content endpoint, stable newest-first pagination, deletion of assets
in use, and the S3 path against a real S3-compatible server on 127.0.0.1 (moto server mode)."""

from __future__ import annotations

import hashlib
import socket
import uuid
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import boto3
import pytest
from botocore.config import Config
from django.test import override_settings
from django.utils import timezone
from rest_framework.test import APIClient

from tests.problem_asserts import assert_invalid, assert_problem
from tests.themes_support import (
    create_theme,
    image_bytes,
    make_assets,
    manifest,
    png_header_only,
    publish,
    replace_draft,
    upload_asset,
    woff2_font,
)
from themes.models import ThemeAsset
from workspaces.models import OrganizationMembership, User

pytestmark = pytest.mark.django_db

RECORD_FIELDS = {
    "$schema",
    "id",
    "organization_id",
    "name",
    "kind",
    "media_type",
    "size_bytes",
    "checksum_sha256",
    "url",
    "width",
    "height",
    "font_family",
    "font_style",
    "font_weight",
    "license_acknowledged",
    "created_at",
    "created_by",
}


@pytest.fixture
def owner(
    bearer_client: Callable[..., APIClient], user: User, workspace: Any, media_storage: Any
) -> APIClient:
    return bearer_client(user)


def font_fields(**extra: Any) -> dict[str, Any]:
    return {
        "font_family": "Brand Sans",
        "font_style": "normal",
        "font_weight": 400,
        "license_acknowledged": "true",
        **extra,
    }


def content(client: APIClient, record: dict[str, Any], **headers: Any) -> Any:
    return client.get(record["url"].removeprefix("http://testserver"), **headers)


def test_image_upload_record_and_content(
    owner: APIClient, organization: Any, user: User, media_storage: Any
) -> None:
    data = image_bytes(320, 200)
    response = upload_asset(owner, organization, data, name="Texture")
    assert response.status_code == 201, response.content[:400]
    record = response.json()
    assert set(record) == RECORD_FIELDS
    assert record["kind"] == "image"
    assert record["media_type"] == "image/png"
    assert (record["width"], record["height"]) == (320, 200)
    assert record["size_bytes"] == len(data)
    assert record["checksum_sha256"] == hashlib.sha256(data).hexdigest()
    assert record["font_family"] is None
    assert record["font_weight"] is None
    assert record["created_by"] == str(user.pk)
    assert record["url"] == (
        f"http://testserver/api/v1/theme-assets/{record['id']}/content?organization_id={organization.pk}"
    )
    assert response["Location"] == record["url"]
    assert any(media_storage.rglob(f"{record['id']}.png"))

    served = content(owner, record)
    assert served.status_code == 200
    assert b"".join(served.streaming_content) == data
    assert served["Content-Type"] == "image/png"
    assert served["ETag"] == f'"{record["checksum_sha256"]}"'
    assert served["X-Content-Type-Options"] == "nosniff"
    assert "max-age=31536000" in served["Cache-Control"]
    not_modified = content(owner, record, HTTP_IF_NONE_MATCH=served["ETag"])
    assert not_modified.status_code == 304
    assert not_modified["ETag"] == served["ETag"]


@pytest.mark.parametrize(
    ("image_format", "media_type"),
    [("JPEG", "image/jpeg"), ("WEBP", "image/webp"), ("AVIF", "image/avif")],
)
def test_other_image_types_are_sniffed(
    owner: APIClient, organization: Any, image_format: str, media_type: str
) -> None:
    response = upload_asset(
        owner, organization, image_bytes(40, 30, image_format), filename="x.png"
    )
    assert response.status_code == 201, response.content[:300]
    assert response.json()["media_type"] == media_type


def test_font_upload_reads_and_checks_font_metadata(owner: APIClient, organization: Any) -> None:
    data = woff2_font(weight=700, italic=True)
    response = upload_asset(
        owner,
        organization,
        data,
        kind="font",
        name="Brand Bold Italic",
        **font_fields(font_style="italic", font_weight=700),
    )
    assert response.status_code == 201, response.content[:300]
    record = response.json()
    assert record["media_type"] == "font/woff2"
    assert (record["font_family"], record["font_style"], record["font_weight"]) == (
        "Brand Sans",
        "italic",
        700,
    )
    assert record["license_acknowledged"] is True
    assert record["width"] is None
    assert record["height"] is None
    served = content(owner, record)
    assert served["Content-Type"] == "font/woff2"
    assert b"".join(served.streaming_content) == data

    mismatch = upload_asset(
        owner, organization, data, kind="font", **font_fields(font_style="italic", font_weight=400)
    )
    assert_invalid(mismatch, "body.font_weight")
    mismatch = upload_asset(owner, organization, data, kind="font", **font_fields(font_weight=700))
    assert_invalid(mismatch, "body.font_style")


def test_rejected_uploads_have_clear_problems(owner: APIClient, organization: Any) -> None:
    png = image_bytes()
    font = woff2_font()
    body = assert_invalid(
        upload_asset(owner, organization, png, kind="font", **font_fields()), "body.file"
    )
    assert "image/png, declared as a font" in body["errors"][0]["message"]

    oversized = image_bytes(1400, 1400, noise=True)
    assert len(oversized) > 5 * 1024 * 1024
    body = assert_invalid(upload_asset(owner, organization, oversized), "body.file")
    assert "at most 5242880 bytes" in body["errors"][0]["message"]

    body = assert_invalid(upload_asset(owner, organization, image_bytes(9000, 1)), "body.file")
    assert "at most 8192 px per side" in body["errors"][0]["message"]
    body = assert_invalid(upload_asset(owner, organization, image_bytes(6000, 6000)), "body.file")
    assert "pixels" in body["errors"][0]["message"]
    body = assert_invalid(
        upload_asset(owner, organization, png_header_only(8000, 7000)), "body.file"
    )
    assert "pixels" in body["errors"][0]["message"]  # 56 MP: refused before any decoding
    body = assert_invalid(
        upload_asset(owner, organization, png_header_only(60000, 60000)), "body.file"
    )
    assert "too many pixels" in body["errors"][0]["message"]  # Pillow refuses such a header at once

    body = assert_invalid(
        upload_asset(
            owner, organization, font, kind="font", **font_fields(license_acknowledged="false")
        ),
        "body.license_acknowledged",
    )
    assert "license" in body["errors"][0]["message"]
    no_fields = upload_asset(owner, organization, font, kind="font", license_acknowledged="true")
    assert_invalid(no_fields, "body.font_family", "body.font_style", "body.font_weight")
    assert_invalid(
        upload_asset(owner, organization, woff2_font(variable=True), kind="font", **font_fields()),
        "body.file",
    )
    assert_invalid(
        upload_asset(owner, organization, font), "body.file"
    )  # a font declared as an image
    assert_invalid(upload_asset(owner, organization, png, font_family="Brand"), "body.font_family")
    assert_invalid(upload_asset(owner, organization, b"GIF89a" + b"\0" * 40), "body.file")
    assert_invalid(upload_asset(owner, organization, b"plain text, not an image"), "body.file")
    assert_invalid(
        upload_asset(owner, organization, png[:60]), "body.file"
    )  # truncated: does not decode
    assert_invalid(upload_asset(owner, organization, png, kind="video"), "body.kind")
    assert ThemeAsset.objects.count() == 0


def test_pagination_is_stable_while_assets_arrive(
    owner: APIClient, organization: Any, user: User
) -> None:
    base = timezone.now() - timedelta(days=1)
    original = set(make_assets(organization, user, 250, start=base, step=timedelta(seconds=1)))
    expected_order = [
        str(pk)
        for pk in ThemeAsset.objects.filter(organization=organization)
        .order_by("-created_at", "-id")
        .values_list("pk", flat=True)
    ]
    seen: list[str] = []
    cursor = None
    inserted = 0
    pages = 0
    while True:
        query = {
            "organization_id": str(organization.pk),
            "limit": 23,
            **({"cursor": cursor} if cursor else {}),
        }
        response = owner.get("/api/v1/theme-assets", query)
        assert response.status_code == 200, response.content[:300]
        body = response.json()
        assert all(set(item) == RECORD_FIELDS for item in body["items"])
        seen += [item["id"] for item in body["items"]]
        pages += 1
        if inserted < 50:  # 50 newer assets arrive between pages
            make_assets(organization, user, 5, start=timezone.now(), step=timedelta(microseconds=1))
            inserted += 5
        cursor = body["next_cursor"]
        if not cursor:
            break
    assert inserted == 50
    assert len(seen) == len(set(seen)) == 250  # nothing repeated
    assert set(seen) == original  # nothing skipped, nothing new slipped in
    assert seen == expected_order  # newest first, then by ID
    assert pages == 11
    first = owner.get("/api/v1/theme-assets", {"organization_id": str(organization.pk)}).json()
    assert len(first["items"]) == 20  # default limit; the newest come first now
    assert first["items"][0]["id"] not in original


def test_page_parameters_are_checked(owner: APIClient, organization: Any, user: User) -> None:
    make_assets(organization, user, 3, start=timezone.now(), step=timedelta(seconds=1))
    org = {"organization_id": str(organization.pk)}
    assert_invalid(owner.get("/api/v1/theme-assets", {**org, "limit": 0}), "query.limit")
    assert_invalid(owner.get("/api/v1/theme-assets", {**org, "limit": 101}), "query.limit")
    assert owner.get("/api/v1/theme-assets", {**org, "limit": 100}).status_code == 200
    assert_invalid(owner.get("/api/v1/theme-assets", {**org, "cursor": "a" * 1025}), "query.cursor")
    cursor = owner.get("/api/v1/theme-assets", {**org, "limit": 1}).json()["next_cursor"]
    assert cursor
    assert len(cursor) <= 1024
    tampered = cursor[:-2] + ("A" if cursor[-2] != "A" else "B") + cursor[-1]
    assert_invalid(owner.get("/api/v1/theme-assets", {**org, "cursor": tampered}), "query.cursor")
    assert_invalid(
        owner.get("/api/v1/theme-assets", {**org, "cursor": "not-a-cursor"}), "query.cursor"
    )
    assert_invalid(owner.get("/api/v1/theme-assets"), "query.organization_id")
    # A cursor of another list (another organization's) is foreign here.
    from workspaces.access import Actor
    from workspaces.services import organization_create

    other = organization_create(actor=Actor(user=user), name="Other")
    make_assets(other, user, 2, start=timezone.now(), step=timedelta(seconds=1))
    foreign = owner.get(
        "/api/v1/theme-assets", {"organization_id": str(other.pk), "limit": 1}
    ).json()["next_cursor"]
    assert_invalid(owner.get("/api/v1/theme-assets", {**org, "cursor": foreign}), "query.cursor")


def test_assets_in_use_cannot_be_deleted(
    owner: APIClient, organization: Any, media_storage: Any, django_capture_on_commit_callbacks: Any
) -> None:
    font = upload_asset(owner, organization, woff2_font(), kind="font", **font_fields()).json()
    texture = upload_asset(owner, organization, image_bytes()).json()
    theme = create_theme(owner, organization)
    body = manifest(
        fonts=[
            {
                "id": "brand",
                "family": "Brand Sans",
                "sourceUrl": f"asset:{font['id']}",
                "format": "woff2",
                "style": "normal",
                "weight": 400,
                "display": "swap",
            }
        ],
        assets=[
            {
                "id": "texture",
                "alt": "",
                "mimeType": "image/png",
                "slot": "background-texture",
                "sourceUrl": f"asset:{texture['id']}",
            }
        ],
    )
    body["schemes"]["light"]["typography"]["body"]["family"] = "Brand Sans"
    response = replace_draft(owner, organization, theme, body)
    assert response.status_code == 200, response.content[:400]
    theme_id = theme["draft"]["theme_id"]

    def delete(asset: dict[str, Any]) -> Any:
        return owner.delete(f"/api/v1/theme-assets/{asset['id']}?organization_id={organization.pk}")

    assert_problem(delete(font), 409, "theme_asset_in_use")  # used by the draft
    assert publish(owner, organization, theme_id, draft=2, published=None).status_code == 201
    plain = manifest()
    assert replace_draft(owner, organization, theme, plain, expected_revision=2).status_code == 200
    assert_problem(delete(font), 409, "theme_asset_in_use")  # still used by revision 1
    assert_problem(delete(texture), 409, "theme_asset_in_use")

    unused = upload_asset(owner, organization, image_bytes(10, 10)).json()
    stored = list(media_storage.rglob(f"{unused['id']}.png"))
    assert stored
    with django_capture_on_commit_callbacks(execute=True):
        assert delete(unused).status_code == 204
    assert not stored[0].exists()
    assert_problem(delete(unused), 404, "not_found")

    # A wrong kind or media type in a manifest is reported where it is written.
    wrong = manifest(
        fonts=[
            {
                "id": "f",
                "family": "Brand Sans",
                "sourceUrl": f"asset:{texture['id']}",
                "format": "woff2",
                "style": "normal",
                "weight": 400,
                "display": "swap",
            }
        ],
        assets=[
            {
                "id": "t",
                "alt": "",
                "mimeType": "image/webp",
                "slot": "background-texture",
                "sourceUrl": f"asset:{texture['id']}",
            }
        ],
    )
    assert_invalid(
        replace_draft(owner, organization, theme, wrong, expected_revision=3),
        "body.manifest.fonts[0].sourceUrl",
        "body.manifest.assets[0].mimeType",
    )


def test_content_is_readable_by_organization_members_only(
    owner: APIClient,
    bearer_client: Callable[..., APIClient],
    make_user: Callable[..., User],
    user: User,
    organization: Any,
    workspace: Any,
) -> None:
    record = upload_asset(owner, organization, image_bytes()).json()
    member = make_user()
    OrganizationMembership.objects.create(organization=organization, user=member, role="member")
    renderers = {
        "member": bearer_client(member),
        "workspace-bound token": bearer_client(user, workspace=workspace),
    }
    # Only owners and admins see assets no published revision uses (the draft inventory).
    assert content(owner, record).status_code == 200
    for client in renderers.values():
        assert_problem(content(client, record), 404, "not_found")
    theme = create_theme(owner, organization)
    texture = [
        {
            "id": "t",
            "alt": "",
            "mimeType": "image/png",
            "slot": "background-texture",
            "sourceUrl": f"asset:{record['id']}",
        }
    ]
    assert replace_draft(owner, organization, theme, manifest(assets=texture)).status_code == 200
    for client in renderers.values():
        assert_problem(content(client, record), 404, "not_found")  # a draft only uses it
    assert (
        publish(
            owner, organization, theme["draft"]["theme_id"], draft=2, published=None
        ).status_code
        == 201
    )
    for (
        label,
        client,
    ) in renderers.items():  # a published revision uses it: whoever renders reads it
        assert content(client, record).status_code == 200, label
    assert_problem(content(bearer_client(make_user()), record), 403, "no_organization_access")
    # Listing and deleting stay with organization owners and admins.
    assert_problem(
        bearer_client(member).get(
            "/api/v1/theme-assets", {"organization_id": str(organization.pk)}
        ),
        403,
        "role_too_low",
    )


# --- S3: a real S3-compatible server on 127.0.0.1 -----------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    from moto.server import ThreadedMotoServer

    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


def test_assets_are_stored_in_and_served_from_s3(
    s3_endpoint: str,
    bearer_client: Callable[..., APIClient],
    user: User,
    organization: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    credentials = {
        "aws_access_key_id": "testing",
        "aws_secret_access_key": "testing",
        "region_name": "us-east-1",
    }
    s3 = boto3.client("s3", endpoint_url=s3_endpoint, **credentials)
    bucket = f"herald-themes-{uuid.uuid4().hex[:10]}"
    s3.create_bucket(Bucket=bucket)
    options = {
        "bucket_name": bucket,
        "endpoint_url": s3_endpoint,
        "location": "",
        "default_acl": None,
        "file_overwrite": False,
        "access_key": "testing",
        "secret_key": "testing",
        "region_name": "us-east-1",
        "client_config": Config(
            s3={"addressing_style": "path"}, retries={"mode": "standard", "max_attempts": 3}
        ),
    }
    storages = {
        "default": {"BACKEND": "storages.backends.s3.S3Storage", "OPTIONS": options},
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }
    owner = bearer_client(user)
    data = woff2_font(weight=400)
    with override_settings(STORAGES=storages, HERALD_S3_BUCKET=bucket):
        response = upload_asset(owner, organization, data, kind="font", **font_fields())
        assert response.status_code == 201, response.content[:300]
        record = response.json()
        key = f"theme-assets/{organization.pk}/{record['id']}.woff2"
        stored = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
        assert stored == data
        assert hashlib.sha256(stored).hexdigest() == record["checksum_sha256"]
        served = content(owner, record)
        assert served.status_code == 200
        assert b"".join(served.streaming_content) == data
        assert served["ETag"] == f'"{record["checksum_sha256"]}"'
        with django_capture_on_commit_callbacks(execute=True):
            deleted = owner.delete(
                f"/api/v1/theme-assets/{record['id']}?organization_id={organization.pk}"
            )
        assert deleted.status_code == 204
    assert s3.list_objects_v2(Bucket=bucket).get("KeyCount", 0) == 0


# --- Content safety, conditional requests and upload access ---------------------------------------


def test_if_none_match_follows_rfc_9110(owner: APIClient, organization: Any) -> None:
    record = upload_asset(owner, organization, image_bytes()).json()
    etag = f'"{record["checksum_sha256"]}"'
    for header in (etag, f"W/{etag}", f'"other", {etag}', "*"):
        response = content(owner, record, HTTP_IF_NONE_MATCH=header)
        assert response.status_code == 304, header
        assert response["ETag"] == etag
        assert response["X-Content-Type-Options"] == "nosniff"
    for header in ('"other"', 'W/"other"', "garbage"):
        assert content(owner, record, HTTP_IF_NONE_MATCH=header).status_code == 200, header


@pytest.mark.parametrize(
    ("data", "filename"),
    [
        (
            b'<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"><script>alert(2)</script></svg>',
            "x.svg",
        ),
        (b"<!doctype html><html><body><script>alert(1)</script></body></html>", "x.html"),
        (b"\x89PNG\r\n\x1a\n<script>alert(1)</script>", "x.png"),  # a PNG signature, then no PNG
    ],
)
def test_files_that_could_run_script_are_refused(
    owner: APIClient, organization: Any, data: bytes, filename: str
) -> None:
    response = upload_asset(owner, organization, data, filename=filename)
    assert_invalid(response, "body.file")
    assert ThemeAsset.objects.count() == 0


def test_content_is_served_so_a_browser_never_runs_it(owner: APIClient, organization: Any) -> None:
    record = upload_asset(owner, organization, image_bytes(), filename="<evil>.html").json()
    served = content(owner, record)
    assert served["Content-Type"] == "image/png"  # the sniffed type, never the client's
    assert served["X-Content-Type-Options"] == "nosniff"
    assert served["Content-Security-Policy"] == "default-src 'none'; sandbox"
    assert (
        served["Content-Disposition"] == f'inline; filename="{record["id"]}.png"'
    )  # not the upload's name


def test_uploads_need_an_organization_owner_or_admin(
    bearer_client: Callable[..., APIClient],
    make_user: Callable[..., User],
    user: User,
    organization: Any,
    workspace: Any,
    media_storage: Any,
) -> None:
    member = make_user()
    OrganizationMembership.objects.create(organization=organization, user=member, role="member")
    callers = {
        "token_workspace_scope": bearer_client(user, workspace=workspace),
        "no_organization_access": bearer_client(make_user()),
        "role_too_low": bearer_client(member),
    }
    for code, client in callers.items():
        assert_problem(upload_asset(client, organization, image_bytes()), 403, code)
    assert ThemeAsset.objects.count() == 0
