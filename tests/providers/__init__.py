"""The provider tests: one folder per provider and the tests that span every provider.

``tests/providers/<name>/`` holds the provider's stand-in (``standin.py``: a real HTTP server on
127.0.0.1 that speaks just enough of the provider's public protocol for Herald's adapter, counts
every post it accepts and injects faults on demand; runnable alone with
``python -m tests.providers.<name>.standin --port N``) and its adapter tests. ``standin.py`` here
is the stand-ins' shared control API; the ``test_*.py`` here test the adapters' shared plumbing
(HTTP client, error classes, URL safety, bounded answers) and every stand-in as a process. Tests
that go through publishing's services and delivery stay in ``tests/publishing/``.

Also small helpers for adapter tests (media items, secret checks).
"""

from __future__ import annotations

import io
from collections.abc import Iterable
from typing import Any

from providers.base import AccountContext, ErrorKind, MediaItem, ProviderAdapter, ProviderError


def tiny_png(width: int = 3, height: int = 2, color: tuple[int, int, int] = (200, 30, 30)) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (width, height), color).save(buffer, format="PNG")
    return buffer.getvalue()


def media_item(
    payload: bytes | None = None,
    *,
    name: str = "pixel.png",
    mime_type: str = "image/png",
    alt_text: str = "",
) -> MediaItem:
    data = tiny_png() if payload is None else payload
    return MediaItem(
        name=name,
        mime_type=mime_type,
        size=len(data),
        open=lambda: io.BytesIO(data),
        alt_text=alt_text,
    )


def assert_no_secret(error: ProviderError, secrets: Iterable[str]) -> None:
    """No secret may appear in anything a ProviderError exposes."""
    exposed = " ".join([str(error), error.message, repr(error.args)])
    for secret in secrets:
        assert secret, "empty secret in the check"
        assert secret not in exposed, "a secret leaked into a ProviderError"


def assert_too_large(error: ProviderError, description: str, secrets: Iterable[str]) -> None:
    """A network's 413 is a permanent refusal that keeps its own words and no secret: sending
    the same file again cannot succeed."""
    assert error.kind == ErrorKind.PERMANENT
    assert error.status == 413
    assert description in error.message
    assert_no_secret(error, secrets)


class ReadSizes(io.BytesIO):
    """A stored file that logs how much each ``read`` returned: an upload that must stream a
    video by parts is checked never to read it whole."""

    def __init__(self, data: bytes, log: list[int]) -> None:
        super().__init__(data)
        self.log = log

    def read(self, size: int | None = -1) -> bytes:
        chunk = super().read(size)
        self.log.append(len(chunk))
        return chunk


def video_media(
    data: bytes,
    reads: list[int] | None = None,
    *,
    name: str = "clip.mp4",
    mime_type: str = "video/mp4",
    alt_text: str = "",
    probe: dict[str, Any] | None = None,
) -> MediaItem:
    """A video item whose every read is logged in ``reads``; ``probe``: the facts the media
    probe stored (what the delivery hands the adapter)."""
    log = reads if reads is not None else []
    return MediaItem(
        name=name,
        mime_type=mime_type,
        size=len(data),
        open=lambda: ReadSizes(data, log),
        alt_text=alt_text,
        probe=dict(probe or {}),
    )


OAUTH_REDIRECT = "https://herald.example/api/v1/accounts/oauth/callback"


def grant(adapter: ProviderAdapter) -> AccountContext:
    """An account connected through the adapter's whole OAuth flow against its stand-in."""
    from tests.publishing_support import follow_authorization

    start = adapter.begin_authorization(redirect_uri=OAUTH_REDIRECT, state="st")
    code = follow_authorization(start.authorization_url)["code"]
    connected = adapter.complete_authorization(
        code=code, redirect_uri=OAUTH_REDIRECT, code_verifier=""
    )
    return AccountContext(
        external_id=connected.external_id,
        credentials=dict(connected.credentials),
        username=connected.username,
    )
