"""Generic signed webhook (``webhook``): POST each publication, as JSON, to a URL the user owns.

Connect takes ``url`` and ``secret`` and calls nothing (there is no standard way to ask an
arbitrary receiver whether it exists); the checks are local: an https URL on a public address
(any http(s) URL with ``HERALD_ALLOW_PRIVATE_PROVIDER_URLS``) and a secret of at least 16
characters. Each delivery is one request::

    POST <url>
    Content-Type: application/json
    X-Herald-Delivery: <idempotency key of the destination>
    X-Herald-Signature: sha256=<hex HMAC-SHA256 of the raw body, keyed with the secret (UTF-8)>

    {"id": <the same key>, "publication_id", "text", "media": [{"url", "mime_type", "name",
     "size_bytes", "alt_text"}], "scheduled_at": <ISO 8601 or null>, "created_at"}

A 2xx answer is success; a JSON ``{"id": ...}`` in it becomes the destination's ``external_id``
(otherwise the delivery key does: the receiver was told it). Errors are classified like every
other provider (:func:`providers.http_errors.classify`): 429 rate limited with Retry-After,
5xx and 408 transient, 504 and a timeout or a broken connection after sending ambiguous,
401/403 auth (reconnect with the right secret), other 4xx permanent.

An arbitrary receiver cannot be asked whether a delivery arrived, so reconcile raises
``CannotReconcile``: an ambiguous destination stays ``ambiguous`` for a person, and Herald never
re-sends it on its own (docs/decisions/0007-delivery-guarantees.md), even though receivers are asked to deduplicate on
``X-Herald-Delivery``. ``delete`` keeps the base ``NotSupported`` (a receiver cannot be asked to
remove a post), and there is no refresh or revoke: disconnecting forgets the URL and the secret.
"""

from __future__ import annotations

import hashlib
import hmac
from datetime import datetime
from typing import Any
from urllib.parse import parse_qsl, urlsplit, urlunsplit

import requests

from providers.base import (
    AccountContext,
    Capabilities,
    ConnectedAccount,
    ConnectionMode,
    ErrorKind,
    MediaRule,
    OutputProfile,
    ProviderAdapter,
    ProviderError,
    ProviderInputError,
    PublishRequest,
    PublishResult,
    VideoRule,
)
from providers.helpers import dumps, precheck
from providers.http import HttpClient
from providers.http_errors import CannotReconcile
from providers.url_safety import check_public_url

PROVIDER = "webhook"
LABEL = "Webhook"
MIN_SECRET_CHARS = 16
MAX_SECRET_CHARS = 1024
MAX_URL_CHARS = 2048
MAX_EXTERNAL_ID_CHARS = 200  # Destination.external_id
SIGNATURE_HEADER = "X-Herald-Signature"
DELIVERY_HEADER = "X-Herald-Delivery"
_SUCCESS = tuple(range(200, 300))


def webhook_length(text: str) -> int:
    return len(text)


POST_PROFILE = OutputProfile(
    key="webhook.post",
    text_limit=65_536,
    text_counter=webhook_length,
    # Media go as links, not bytes: Herald's own upload limit is the only size limit.
    media=MediaRule(
        max_count=20,
        mime_types=(
            "image/jpeg",
            "image/png",
            "image/gif",
            "image/webp",
            "video/mp4",
            "video/quicktime",
            "video/webm",
        ),
        max_bytes=2**40,
    ),
    video=VideoRule(
        network="Webhook",
        delivers=True,  # receivers are sent the signed URL
        containers=("mp4", "mov", "webm"),
        video_codecs=(),  # any: Herald's upload limits only
        audio_codecs=(),
        max_count=20,
        mixes_with_images=True,
        source="Herald: HERALD_MAX_MEDIA_BYTES bounds every upload",
    ),
    counting_rule="characters",
)


def sign(body: bytes, secret: str) -> str:
    """The ``X-Herald-Signature`` value of ``body``."""
    return "sha256=" + hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()


def _iso(value: datetime | None) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value is not None else None


def _receiver_id(response: requests.Response) -> str:
    """The receiver's ``{"id": ...}`` (a string or integer of printable characters), or ""."""
    if not response.content:
        return ""
    try:
        body = response.json()
    except ValueError:
        return ""
    value = body.get("id") if isinstance(body, dict) else None
    if isinstance(value, bool) or not isinstance(value, str | int):
        return ""
    text = str(value).strip()
    if not text or len(text) > MAX_EXTERNAL_ID_CHARS or not text.isprintable():
        return ""
    return text


class WebhookAdapter(ProviderAdapter):
    capabilities = Capabilities(
        provider=PROVIDER,
        display_name="Webhook (signed JSON POST)",
        connection=ConnectionMode.WEBHOOK,
        profiles=(POST_PROFILE,),
        account_kind="webhook",
        credential_fields=("url", "secret"),
    )

    def __init__(self, *, http: HttpClient | None = None) -> None:
        self.http = http or HttpClient()

    def _url(self, value: str) -> str:
        value = value.strip()
        if len(value) > MAX_URL_CHARS:
            raise ProviderInputError(
                "url", f"{LABEL}: the URL is longer than {MAX_URL_CHARS} characters."
            )
        check_public_url(
            value,
            allow_private=self.http.allow_private,
            provider=LABEL,
            what="webhook URL",
            field="url",
        )
        # Stored as given (a receiver may care about a trailing slash), without a fragment.
        parts = urlsplit(value)
        return urlunsplit((parts.scheme.lower(), parts.netloc, parts.path or "/", parts.query, ""))

    @staticmethod
    def _secret(value: str) -> str:
        if not MIN_SECRET_CHARS <= len(value) <= MAX_SECRET_CHARS:
            raise ProviderInputError(
                "secret",
                f"{LABEL}: the secret must be {MIN_SECRET_CHARS} to {MAX_SECRET_CHARS} characters long.",
            )
        if value != value.strip():
            raise ProviderInputError(
                "secret", f"{LABEL}: the secret must not start or end with white space."
            )
        return value

    def connect_with_credentials(self, *, fields: dict[str, str]) -> ConnectedAccount:
        url = self._url(str(fields.get("url") or ""))
        secret = self._secret(str(fields.get("secret") or ""))
        host = urlsplit(url).netloc.rsplit("@", 1)[-1].lower()
        # One account per URL in a workspace: connecting the same URL again replaces the secret.
        # The ID is a digest (the path or query may hold a token); the name is the host only.
        return ConnectedAccount(
            external_id=hashlib.sha256(url.encode()).hexdigest()[:32],
            username=host[:150],
            display_name=f"Webhook to {host}"[:150],
            account_kind="webhook",
            credentials={"url": url, "secret": secret},
        )

    @staticmethod
    def _stored(account: AccountContext) -> tuple[str, str]:
        url = account.credentials.get("url", "")
        secret = account.credentials.get("secret", "")
        if not url or not secret:
            raise ProviderError(
                ErrorKind.AUTH, f"{LABEL}: no URL or secret; reconnect the webhook."
            )
        return url, secret

    @staticmethod
    def body(request: PublishRequest) -> bytes:
        """The exact bytes sent (and signed) for ``request``."""
        missing = [
            item.name for item in request.media if not item.url.startswith(("https://", "http://"))
        ]
        if missing:
            raise ProviderError(
                ErrorKind.PERMANENT,
                f"{LABEL}: media have no public address to send (set HERALD_PUBLIC_URL or use "
                "object storage).",
            )
        payload: dict[str, Any] = {
            "id": request.idempotency_key,
            "publication_id": request.publication_id,
            "text": request.text,
            "media": [
                {
                    "url": item.url,
                    "mime_type": item.mime_type,
                    "name": item.name,
                    "size_bytes": item.size,
                    "alt_text": item.alt_text,
                }
                for item in request.media
            ],
            "scheduled_at": _iso(request.scheduled_at),
            "created_at": _iso(request.created_at),
        }
        return dumps(payload).encode("utf-8")

    def publish(self, *, account: AccountContext, request: PublishRequest) -> PublishResult:
        if request.profile != POST_PROFILE.key:
            raise ProviderError(ErrorKind.PERMANENT, f"{LABEL}: unknown format {request.profile}.")
        precheck(POST_PROFILE, request, provider=LABEL)
        url, secret = self._stored(account)
        body = self.body(request)
        parts = urlsplit(url)
        response = self.http.request(
            "POST",
            url,
            provider=LABEL,
            operation="delivery",
            write=True,
            user_url=True,
            ok=_SUCCESS,
            headers={
                "Content-Type": "application/json",
                SIGNATURE_HEADER: sign(body, secret),
                DELIVERY_HEADER: request.idempotency_key,
            },
            data=body,
            # A receiver's error text is shown to users: never with the secret or the URL's
            # path and query (they may hold a token).
            secrets=(
                secret,
                url,
                parts.path,
                parts.query,
                *parts.path.split("/"),
                *(value for _, value in parse_qsl(parts.query)),
            ),
        )
        return PublishResult(external_id=_receiver_id(response) or request.idempotency_key)

    def reconcile(
        self, *, account: AccountContext, request: PublishRequest, external_id: str = ""
    ) -> PublishResult | None:
        raise CannotReconcile(
            f"{LABEL}: a receiver cannot be asked whether a delivery arrived; check it for "
            f"delivery {request.idempotency_key} and resolve this destination by hand."
        )
