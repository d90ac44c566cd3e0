"""Public media URLs: a media item's ``url`` is a signed, expiring, absolute
URL that serves the bytes without credentials (type, length, ETag, byte ranges), redirects to a
presigned URL with S3 storage (a real S3-compatible server on 127.0.0.1: moto's server mode),
and members of the workspace read the bytes with API credentials at ``/media/{id}/content``."""

from __future__ import annotations

import hashlib
import socket
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import boto3
import pytest
import requests
from botocore.config import Config
from django.test import Client, override_settings
from rest_framework.test import APIClient

from publishing.models import Media
from publishing.services import media_links
from publishing.services.media import media_absolute_url
from tests.problem_asserts import assert_problem
from tests.publishing_support import API, gif_bytes, ok, upload
from workspaces.access import Actor
from workspaces.models import User

pytestmark = pytest.mark.django_db

PAYLOAD = gif_bytes()  # a real, decodable image; more than 20 bytes


def path_of(url: str) -> str:
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


def body_of(response: Any) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content


@pytest.fixture
def item(owner_client: APIClient, workspace: Any, media_storage: Path) -> dict[str, Any]:
    assert len(PAYLOAD) > 20
    return dict(upload(owner_client, workspace, PAYLOAD, name="holiday.gif"))


def test_url_serves_the_bytes_without_credentials(item: dict[str, Any]) -> None:
    url = item["url"]
    assert url.startswith("http://testserver/media/")
    assert url.endswith(f"/{item['id']}.gif")  # the stored name, not the client's
    assert "holiday" not in url
    response = Client().get(path_of(url))
    assert response.status_code == 200
    assert body_of(response) == PAYLOAD
    assert response["Content-Type"] == "image/gif"
    assert response["Content-Length"] == str(len(PAYLOAD))
    assert response["Accept-Ranges"] == "bytes"
    assert response["ETag"] == f'"{hashlib.sha256(PAYLOAD).hexdigest()}"'
    assert response["Last-Modified"]
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Cache-Control"].startswith("private, max-age=")
    head = Client().head(path_of(url))
    assert head.status_code == 200
    assert head["Content-Length"] == str(len(PAYLOAD))
    # Conditional: the ETag answers 304.
    again = Client().get(path_of(url), HTTP_IF_NONE_MATCH=response["ETag"])
    assert again.status_code == 304


@pytest.mark.parametrize(
    ("header", "first", "last"),
    [
        ("bytes=0-9", 0, 9),
        ("bytes=-5", len(PAYLOAD) - 5, len(PAYLOAD) - 1),  # suffix
        ("bytes=10-", 10, len(PAYLOAD) - 1),  # open-ended
        ("bytes=3-100000", 3, len(PAYLOAD) - 1),  # the end is clamped
        ("bytes=-100000", 0, len(PAYLOAD) - 1),  # a suffix longer than the file
    ],
)
def test_range_requests(item: dict[str, Any], header: str, first: int, last: int) -> None:
    response = Client().get(path_of(item["url"]), HTTP_RANGE=header)
    assert response.status_code == 206
    assert body_of(response) == PAYLOAD[first : last + 1]
    assert response["Content-Range"] == f"bytes {first}-{last}/{len(PAYLOAD)}"
    assert response["Content-Length"] == str(last - first + 1)
    assert response["Content-Type"] == "image/gif"


@pytest.mark.parametrize("header", [f"bytes={len(PAYLOAD)}-", "bytes=-0", "bytes=99999-99999"])
def test_unsatisfiable_range_is_416(item: dict[str, Any], header: str) -> None:
    response = Client().get(path_of(item["url"]), HTTP_RANGE=header)
    assert response.status_code == 416
    assert response["Content-Range"] == f"bytes */{len(PAYLOAD)}"


@pytest.mark.parametrize("header", ["bytes=0-1,4-5", "items=0-1", "bytes=5-2", "bytes=x-"])
def test_ranges_it_does_not_serve_get_the_whole_file(item: dict[str, Any], header: str) -> None:
    response = Client().get(path_of(item["url"]), HTTP_RANGE=header)
    assert response.status_code == 200
    assert body_of(response) == PAYLOAD


def test_if_range_with_another_version_gets_the_whole_file(item: dict[str, Any]) -> None:
    path = path_of(item["url"])
    etag = f'"{item["checksum_sha256"]}"'
    same = Client().get(path, HTTP_RANGE="bytes=0-9", HTTP_IF_RANGE=etag)
    assert same.status_code == 206
    stale = Client().get(path, HTTP_RANGE="bytes=0-9", HTTP_IF_RANGE='"other"')
    assert stale.status_code == 200
    assert body_of(stale) == PAYLOAD


def test_expired_and_tampered_tokens_are_refused(item: dict[str, Any], workspace: Any) -> None:
    media = Media.objects.get(pk=item["id"])
    name = f"{item['id']}.gif"
    expired = media_links.media_token(media, expires_at=int(time.time()) - 1)
    response = Client().get(f"/media/{expired}/{name}")
    assert response.status_code == 403
    assert b"expired" in response.content
    assert PAYLOAD not in response.content

    token = urlsplit(item["url"]).path.split("/")[2]
    media_hex, expiry, signature = token.split(".")
    flipped = ("A" if signature[0] != "A" else "B") + signature[1:]
    later = int(expiry, 36) + 3600
    forged = [
        f"{media_hex}.{expiry}.{flipped}",  # another signature
        f"{media_hex}.{later:x}.{signature}",  # a longer life under the old signature
        f"{uuid.uuid4().hex}.{expiry}.{signature}",  # another item under this signature
    ]
    for bad in forged:
        answer = Client().get(f"/media/{bad}/{name}")
        assert answer.status_code == 404, bad
        assert PAYLOAD not in answer.content
    assert Client().get(f"/media/{token}/{name}").status_code == 200
    # A link does not outlive its item.
    Media.objects.filter(pk=item["id"]).delete()
    assert Client().get(f"/media/{token}/{name}").status_code == 404


def test_lifetime_follows_the_setting(item: dict[str, Any], settings: Any) -> None:
    settings.HERALD_MEDIA_URL_SECONDS = 120
    media = Media.objects.get(pk=item["id"])
    token = media_links.media_token(media)
    expires_at = int(token.split(".")[1], 36)
    assert 110 <= expires_at - time.time() <= 121
    link = media_links.media_link_resolve(token)
    assert link.media.pk == media.pk
    with pytest.raises(media_links.MediaLinkExpired):
        media_links.media_link_resolve(token, now=time.time() + 121)


def test_url_uses_the_public_url_for_api_and_deliveries(
    item: dict[str, Any], settings: Any
) -> None:
    """Behind a proxy the configured origin wins; deliveries (no request) build the same kind of
    URL (webhook payloads' ``media`` URLs), and it works."""
    settings.HERALD_PUBLIC_URL = "https://herald.example.com"
    media = Media.objects.get(pk=item["id"])
    for url in (media_absolute_url(media), media_links.media_absolute_url(media)):
        assert url.startswith("https://herald.example.com/media/")
        assert body_of(Client().get(path_of(url))) == PAYLOAD
    settings.HERALD_PUBLIC_URL = ""
    assert media_absolute_url(media) == ""  # a local file has no origin outside a request


def test_authenticated_download_and_workspace_access(
    item: dict[str, Any],
    owner_client: APIClient,
    bearer_client: Callable[..., APIClient],
    make_user: Callable[..., User],
) -> None:
    content = f"{API}/media/{item['id']}/content"
    response = owner_client.get(content, HTTP_ACCEPT="image/*")
    assert response.status_code == 200
    assert body_of(response) == PAYLOAD
    assert response["Content-Type"] == "image/gif"
    assert response["Content-Length"] == str(len(PAYLOAD))
    part = owner_client.get(content, HTTP_RANGE="bytes=-4")
    assert part.status_code == 206
    assert body_of(part) == PAYLOAD[-4:]
    assert owner_client.get(content, HTTP_RANGE="bytes=9999-").status_code == 416
    # Without credentials: 401; a member of another workspace only: refused like GET /media/{id}.
    assert_problem(APIClient().get(content), 401, "not_authenticated")
    from workspaces.services import organization_create, workspace_create

    stranger = make_user()
    org = organization_create(actor=Actor(user=stranger), name="Other")
    workspace_create(actor=Actor(user=stranger), organization_id=org.pk, name="Elsewhere")
    refused = bearer_client(stranger).get(content)
    assert_problem(refused, 403, "no_workspace_access")
    assert PAYLOAD not in refused.content
    assert_problem(owner_client.get(f"{API}/media/{uuid.uuid4()}/content"), 404, "not_found")


@pytest.mark.django_db(transaction=True)
def test_url_works_for_a_plain_http_client_on_a_live_server(
    live_server: Any, owner_client: APIClient, workspace: Any, media_storage: Path, settings: Any
) -> None:
    settings.HERALD_PUBLIC_URL = str(live_server.url)
    body = upload(owner_client, workspace, PAYLOAD, name="holiday.gif")
    assert body["url"].startswith(f"{live_server.url}/media/")
    whole = requests.get(body["url"], timeout=10)
    assert whole.status_code == 200
    assert whole.content == PAYLOAD
    assert whole.headers["Content-Type"] == "image/gif"
    assert whole.headers["Content-Length"] == str(len(PAYLOAD))
    part = requests.get(body["url"], headers={"Range": "bytes=0-9"}, timeout=10)
    assert part.status_code == 206
    assert part.content == PAYLOAD[:10]
    assert part.headers["Content-Range"] == f"bytes 0-9/{len(PAYLOAD)}"
    assert requests.get(body["url"] + "x", timeout=10).status_code == 200  # name is cosmetic
    broken = body["url"].replace("/media/", "/media/0", 1)
    assert requests.get(broken, timeout=10).status_code == 404


# --- S3 storage: a redirect to a presigned URL of the same lifetime ------------------------


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


def test_s3_storage_redirects_to_a_presigned_url(
    s3_endpoint: str, owner_client: APIClient, workspace: Any, settings: Any
) -> None:
    keys = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}
    s3 = boto3.client("s3", endpoint_url=s3_endpoint, region_name="us-east-1", **keys)
    bucket = f"herald-media-{uuid.uuid4().hex[:10]}"
    s3.create_bucket(Bucket=bucket)
    options = {
        "bucket_name": bucket,
        "endpoint_url": s3_endpoint,
        "location": "",
        "default_acl": None,
        "file_overwrite": False,
        "querystring_auth": True,
        "access_key": "testing",
        "secret_key": "testing",
        "region_name": "us-east-1",
        "client_config": Config(s3={"addressing_style": "path"}, signature_version="s3v4"),
    }
    storages = {
        "default": {"BACKEND": "storages.backends.s3.S3Storage", "OPTIONS": options},
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }
    settings.HERALD_MEDIA_URL_SECONDS = 600
    with override_settings(STORAGES=storages, HERALD_S3_BUCKET=bucket):
        body = upload(owner_client, workspace, PAYLOAD, name="holiday.gif")
        assert body["url"].startswith("http://testserver/media/")  # Herald's URL, not S3's
        redirect = Client().get(path_of(body["url"]))
        assert redirect.status_code == 302
        assert redirect["Cache-Control"] == "no-store"
        presigned = redirect["Location"]
        assert presigned.startswith(f"{s3_endpoint}/{bucket}/media/")
        query = parse_qs(urlsplit(presigned).query)
        assert 590 <= int(query["X-Amz-Expires"][0]) <= 600  # the token's remaining lifetime
        assert query["response-content-type"] == ["image/gif"]
        fetched = requests.get(presigned, timeout=10)  # the object store serves it
        assert fetched.status_code == 200
        assert fetched.content == PAYLOAD
        assert fetched.headers["Content-Type"] == "image/gif"
        ranged = requests.get(presigned, headers={"Range": "bytes=0-9"}, timeout=10)
        assert ranged.status_code == 206
        assert ranged.content == PAYLOAD[:10]
        # Authenticated API clients read the bytes through Herald, from the store.
        content = owner_client.get(f"{API}/media/{body['id']}/content", HTTP_RANGE="bytes=2-5")
        assert content.status_code == 206
        assert body_of(content) == PAYLOAD[2:6]
        # Without a public origin, deliveries get the store's presigned URL itself.
        media = Media.objects.get(pk=body["id"])
        direct = media_absolute_url(media)
        assert direct.startswith(f"{s3_endpoint}/{bucket}/media/")
        assert requests.get(direct, timeout=10).content == PAYLOAD


def test_each_read_signs_a_working_url(item: dict[str, Any], owner_client: APIClient) -> None:
    """The media record read back carries a working URL too (a fresh signature each time)."""
    again = ok(owner_client.get(f"{API}/media/{item['id']}"))
    assert again["url"].startswith("http://testserver/media/")
    assert body_of(Client().get(path_of(again["url"]))) == PAYLOAD
