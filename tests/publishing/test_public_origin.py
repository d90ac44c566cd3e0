"""The hourly check that this server's media are reachable through ``HERALD_PUBLIC_URL`` (what
Facebook and Instagram fetch), reported at ``/api/v1/ready`` as ``public_origin`` without ever
making it fail."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from publishing.services.public_origin import public_origin_check
from tests.publishing_support import upload

pytestmark = pytest.mark.django_db(transaction=True)


def _ready() -> dict[str, Any]:
    answer = APIClient().get("/api/v1/ready")
    assert answer.status_code == 200, answer.content[:300]
    body: dict[str, Any] = answer.json()
    return body


def test_the_check_requests_a_media_url_through_the_public_origin(
    settings: Any, live_server: Any, owner_client: APIClient, workspace: Any, media_storage: Any
) -> None:
    settings.HERALD_PUBLIC_URL = ""
    assert public_origin_check() is None
    assert "public_origin" not in _ready()

    settings.HERALD_PUBLIC_URL = str(live_server.url)
    assert _ready()["public_origin"] == "unchecked"
    assert public_origin_check() == "ok"  # Herald's health: no media yet
    upload(owner_client, workspace)
    assert public_origin_check() == "ok"  # the newest media item's signed URL
    assert _ready()["public_origin"] == "ok"

    settings.HERALD_PUBLIC_URL = "http://127.0.0.1:9"  # nothing listens there
    assert public_origin_check() == "unreachable"
    ready = _ready()
    assert ready["public_origin"] == "unreachable"
    assert ready["status"] == "ready"  # informative, never a failure of /ready
