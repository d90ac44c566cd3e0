"""The built-in Herald feed (``feed``): a public Atom and JSON Feed that Herald serves itself.

Connecting one needs no outside service: ``fields: {"title": ..., "description": ...}``
(description optional) creates a feed named by a random 32-character token
(``secrets.token_hex(16)``, the account's external id). Its public URLs, served by
``publishing.feeds`` without authentication, are

* ``/feeds/<token>.atom`` (Atom, ``application/atom+xml``; the account's ``profile_url``),
* ``/feeds/<token>.json`` (JSON Feed 1.1, ``application/feed+json``),
* ``/feeds/<token>/entries/<entry id>`` (an HTML page of one entry: the ``external_url``),
* ``/feeds/<token>/media/<media id>`` (an entry's media, the feed's enclosures).

Unlike the other adapters this one talks to no provider over HTTP: publishing writes a
``FeedEntry`` row (unique on the destination's idempotency key, so a repeated send finds the
same entry), ``reconcile`` finds it by that key and ``delete`` withdraws it. The rows belong to
publishing, a layer above this one, so the adapter reaches them through ``FEED_ENTRIES``, which
publishing fills in its ``AppConfig.ready`` (``publishing.feed_entries``).
"""

from __future__ import annotations

import secrets
import unicodedata
import uuid
from typing import Protocol
from urllib.parse import urlsplit

from config.registry import One
from config.types import ModelId
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
from providers.helpers import precheck

PROVIDER = "feed"
LABEL = "Herald feed"
# Set by the accounts service (never taken from the user): the public origin this Herald is
# reached at when the feed is connected, so stored URLs (profile_url, external_url) are
# absolute even without HERALD_PUBLIC_URL.
ORIGIN_FIELD = "herald_origin"
TITLE_MAX = 200
DESCRIPTION_MAX = 1000
MAX_ENTRIES = 50  # newest entries in a feed document (older ones keep their permalinks)
MAX_MEDIA_BYTES = 200 * 1024 * 1024


class FeedEntries(Protocol):
    """The stored entries of the feeds, by feed token (the account's external id). Each method
    raises ``ProviderError(AUTH)`` when no connected feed has that token."""

    def write(self, *, feed: str, request: PublishRequest) -> ModelId:
        """The entry written with ``request.idempotency_key`` (written now, or brought back if
        it was withdrawn), with ``request``'s text and media."""
        ...

    def find(
        self, *, feed: str, idempotency_key: str, entry_id: uuid.UUID | None
    ) -> ModelId | None:
        """The live entry with this key, else the live entry ``entry_id``, else ``None``."""
        ...

    def withdraw(self, *, feed: str, entry_id: uuid.UUID) -> None:
        """Withdraw the entry if it is live (its text and media are dropped)."""
        ...


FEED_ENTRIES: One[FeedEntries] = One("providers.feed_entries")


def feed_length(text: str) -> int:
    return len(text)


ENTRY_PROFILE = OutputProfile(
    key="feed.entry",
    text_limit=10000,
    text_counter=feed_length,
    media=MediaRule(
        max_count=10,
        mime_types=(
            "image/jpeg",
            "image/png",
            "image/gif",
            "image/webp",
            "video/mp4",
            "video/quicktime",
            "video/webm",
        ),
        max_bytes=MAX_MEDIA_BYTES,
    ),
    video=VideoRule(
        network="Feed",
        delivers=True,  # an enclosure with the signed URL, type and length
        containers=("mp4", "mov", "webm"),
        video_codecs=(),  # any: Herald's upload limits only
        audio_codecs=(),
        max_count=10,
        mixes_with_images=True,
        source="Herald: HERALD_MAX_MEDIA_BYTES bounds every upload",
    ),
    counting_rule="characters",
)


def new_token() -> str:
    """32 hexadecimal characters (128 random bits): unguessable."""
    return secrets.token_hex(16)


def feed_path(token: str, kind: str) -> str:
    """``/feeds/<token>.atom`` or ``.json``."""
    return f"/feeds/{token}.{kind}"


def entry_path(token: str, entry_id: ModelId) -> str:
    return f"/feeds/{token}/entries/{entry_id}"


def media_path(token: str, media_id: ModelId) -> str:
    return f"/feeds/{token}/media/{media_id}"


def _origin(value: str) -> str:
    parts = urlsplit((value or "").strip())
    if parts.scheme in ("http", "https") and parts.netloc:
        return f"{parts.scheme}://{parts.netloc}"
    return ""


def _clean_line(value: str, *, field: str, limit: int, required: bool) -> str:
    value = " ".join((value or "").split())  # one line: newlines and runs of spaces collapse
    value = "".join(ch for ch in value if unicodedata.category(ch) not in ("Cc", "Cs"))
    if required and not value:
        raise ProviderInputError(field, f"{LABEL}: the {field} is required.")
    if len(value) > limit:
        raise ProviderInputError(field, f"{LABEL}: the {field} is longer than {limit} characters.")
    return value


class FeedAdapter(ProviderAdapter):
    capabilities = Capabilities(
        provider=PROVIDER,
        display_name=LABEL,
        connection=ConnectionMode.CREDENTIALS,
        profiles=(ENTRY_PROFILE,),
        account_kind="feed",
        credential_fields=("title",),  # plus an optional "description"
    )

    # Connect ---------------------------------------------------------------------------------
    def connect_with_credentials(self, *, fields: dict[str, str]) -> ConnectedAccount:
        from django.conf import settings

        title = _clean_line(fields.get("title", ""), field="title", limit=TITLE_MAX, required=True)
        description = _clean_line(
            fields.get("description", ""),
            field="description",
            limit=DESCRIPTION_MAX,
            required=False,
        )
        origin = _origin(fields.get(ORIGIN_FIELD, "")) or _origin(
            str(getattr(settings, "HERALD_PUBLIC_URL", "") or "")
        )
        token = new_token()
        return ConnectedAccount(
            external_id=token,
            username=title,
            display_name=title,
            account_kind="feed",
            # Not secrets, but the token is what makes the feed unguessable: kept with the
            # other connection data (encrypted) and dropped on disconnect.
            credentials={"feed_token": token, "description": description, "origin": origin},
            profile_url=f"{origin}{feed_path(token, 'atom')}",
        )

    # Publish ---------------------------------------------------------------------------------
    @staticmethod
    def _result(account: AccountContext, entry_id: ModelId) -> PublishResult:
        origin = account.credentials.get("origin", "")
        return PublishResult(
            external_id=str(entry_id),
            external_url=f"{origin}{entry_path(account.external_id, entry_id)}",
        )

    def publish(self, *, account: AccountContext, request: PublishRequest) -> PublishResult:
        if request.profile != ENTRY_PROFILE.key:
            raise ProviderError(ErrorKind.PERMANENT, f"{LABEL}: unknown format {request.profile}.")
        precheck(ENTRY_PROFILE, request, provider=LABEL)
        if any(not item.media_id for item in request.media):
            raise ProviderError(
                ErrorKind.PERMANENT, f"{LABEL}: a media item has no Herald media id."
            )
        entry_id = FEED_ENTRIES.get().write(feed=account.external_id, request=request)
        return self._result(account, entry_id)

    def reconcile(
        self, *, account: AccountContext, request: PublishRequest, external_id: str = ""
    ) -> PublishResult | None:
        """The live entry written with ``request.idempotency_key`` (or ``external_id``);
        ``None`` when there is none (never written, or withdrawn): sending again is safe."""
        entry_id = FEED_ENTRIES.get().find(
            feed=account.external_id,
            idempotency_key=request.idempotency_key,
            entry_id=_uuid_or_none(external_id) if external_id else None,
        )
        return self._result(account, entry_id) if entry_id is not None else None

    def delete(self, *, account: AccountContext, external_id: str) -> None:
        """Withdraw the entry: gone from the feed documents, its permalink and media answer
        410. Repeating it, or deleting an unknown entry, succeeds."""
        entry_id = _uuid_or_none(external_id)
        if entry_id is None:
            return
        FEED_ENTRIES.get().withdraw(feed=account.external_id, entry_id=entry_id)


def _uuid_or_none(value: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None
