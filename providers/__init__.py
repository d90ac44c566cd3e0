"""Provider adapters and their registry.

``get_adapter("mastodon")`` returns an adapter configured from Django settings (read with
``getattr`` and defaults, so nothing here requires a setting to exist):

* ``HERALD_PROVIDER_TIMEOUT_SECONDS`` (default 10): read timeout; connect timeout is
  ``min(5, that)``.
* ``HERALD_ALLOW_PRIVATE_PROVIDER_URLS`` (default False): accept http and private/loopback
  addresses for user-supplied URLs (Mastodon instances, Discord and generic webhooks, Bluesky
  PDS). Tests.
* ``HERALD_BLUESKY_SERVICE_URL`` (default https://bsky.social) and ``HERALD_BLUESKY_VIDEO_URL``
  (its video service, default https://video.bsky.app).
* ``HERALD_TELEGRAM_API_URL`` (default https://api.telegram.org).
* ``PROVIDER_OAUTH_APPS`` (``{provider: {"client_id", "client_secret", "api_url", ...}}``): the
  operator's OAuth apps of X, LinkedIn, Threads, YouTube, TikTok and Pinterest, and the Meta app
  of Facebook and Instagram (config/settings.py).

The adapter modules themselves read no setting, except the built-in feed (``HERALD_PUBLIC_URL``,
when one is connected); ``credentials`` reads ``HERALD_CREDENTIALS_KEY``. Nothing in this package
imports an app: it sits below ``readiness`` and ``publishing`` (``[tool.importlinter]``).
"""

from __future__ import annotations

from functools import lru_cache

from providers.base import ProviderAdapter
from providers.bluesky import DEFAULT_SERVICE_URL, BlueskyAdapter
from providers.bluesky.video import DEFAULT_VIDEO_URL
from providers.discord_webhook import DiscordWebhookAdapter
from providers.facebook import FacebookAdapter
from providers.feed import FeedAdapter
from providers.http import DEFAULT_CONNECT_TIMEOUT, HttpClient
from providers.instagram import InstagramAdapter
from providers.linkedin import LinkedInAdapter
from providers.mastodon import MastodonAdapter
from providers.pinterest import PinterestAdapter
from providers.telegram import DEFAULT_API_URL, TelegramAdapter
from providers.threads import ThreadsAdapter
from providers.tiktok import TikTokAdapter
from providers.webhook import WebhookAdapter
from providers.x import XAdapter
from providers.youtube import YouTubeAdapter

PROVIDERS: tuple[str, ...] = ("mastodon", "bluesky", "discord_webhook", "telegram")
PROVIDERS += ("webhook",)  # generic signed JSON POST (providers/webhook.py)
PROVIDERS += ("feed",)  # built-in public Atom / JSON Feed (providers/feed.py)
PROVIDERS += ("x",)  # the operator's OAuth 2 app (providers/x/)
PROVIDERS += ("linkedin",)  # the operator's OAuth 2 app (providers/linkedin/)
PROVIDERS += ("threads",)  # the operator's Threads app (providers/threads/)
PROVIDERS += ("facebook",)  # Facebook Pages, the operator's Meta app (providers/facebook/)
PROVIDERS += ("instagram",)  # the Meta app and Instagram Login (providers/instagram/)
PROVIDERS += ("youtube",)  # the operator's Google OAuth 2 app (providers/youtube/)
PROVIDERS += ("tiktok",)  # the operator's TikTok app (providers/tiktok/)
PROVIDERS += ("pinterest",)  # the operator's OAuth 2 app (providers/pinterest/)

# One provider's entry of PROVIDER_OAUTH_APPS as a hashable key of the adapter cache:
# ((key, value), ...), None for a provider whose app is not configured.
OAuthApp = tuple[tuple[str, str], ...] | None


# The adapters built from the operator's OAuth app of their provider (PROVIDER_OAUTH_APPS).
_OAUTH_ADAPTERS: dict[
    str,
    type[
        XAdapter
        | LinkedInAdapter
        | ThreadsAdapter
        | FacebookAdapter
        | InstagramAdapter
        | YouTubeAdapter
        | TikTokAdapter
        | PinterestAdapter
    ],
] = {
    "x": XAdapter,
    "linkedin": LinkedInAdapter,
    "threads": ThreadsAdapter,
    "facebook": FacebookAdapter,
    "instagram": InstagramAdapter,
    "youtube": YouTubeAdapter,
    "tiktok": TikTokAdapter,
    "pinterest": PinterestAdapter,
}


@lru_cache(maxsize=32)
def _build(
    provider: str,
    timeout: float,
    allow_private: bool,
    bluesky_url: str,
    telegram_url: str,
    oauth_app: OAuthApp = None,
    bluesky_video_url: str = DEFAULT_VIDEO_URL,
) -> ProviderAdapter:
    http = HttpClient(
        read_timeout=timeout,
        connect_timeout=min(DEFAULT_CONNECT_TIMEOUT, timeout),
        allow_private=allow_private,
    )
    if provider == "mastodon":
        return MastodonAdapter(http=http)
    if provider == "bluesky":
        return BlueskyAdapter(http=http, service_url=bluesky_url, video_url=bluesky_video_url)
    if provider == "discord_webhook":
        return DiscordWebhookAdapter(http=http)
    if provider == "telegram":
        return TelegramAdapter(http=http, api_url=telegram_url)
    if provider == "feed":
        return FeedAdapter()  # built in: no HTTP, writes feed entries to the database
    if provider == "webhook":
        return WebhookAdapter(http=http)
    oauth_adapter = _OAUTH_ADAPTERS.get(provider)
    if oauth_adapter is None:
        raise KeyError(provider)
    return oauth_adapter(http=http, app=None if oauth_app is None else dict(oauth_app))


def _oauth_app(settings: object, provider: str) -> OAuthApp:
    """Only ``provider``'s own app: every send asks for its adapter, and building a key of every
    provider's app each time cost a send more the more OAuth providers Herald has."""
    apps = getattr(settings, "PROVIDER_OAUTH_APPS", {}) or {}
    if provider not in _OAUTH_ADAPTERS or provider not in apps:
        return None
    return tuple(sorted((str(k), str(v)) for k, v in (apps[provider] or {}).items()))


def get_adapter(provider: str) -> ProviderAdapter:
    """The adapter for ``provider``; ``KeyError`` for an unknown name.

    Adapters are cached per settings combination (they hold per-thread connection pools), so
    ``override_settings`` in tests yields a fresh adapter.
    """
    if provider not in PROVIDERS:
        raise KeyError(f"unknown provider: {provider}")
    from django.conf import settings

    return _build(
        provider,
        float(getattr(settings, "HERALD_PROVIDER_TIMEOUT_SECONDS", 10) or 10),
        bool(getattr(settings, "HERALD_ALLOW_PRIVATE_PROVIDER_URLS", False)),
        str(getattr(settings, "HERALD_BLUESKY_SERVICE_URL", "") or DEFAULT_SERVICE_URL),
        str(getattr(settings, "HERALD_TELEGRAM_API_URL", "") or DEFAULT_API_URL),
        _oauth_app(settings, provider),
        str(getattr(settings, "HERALD_BLUESKY_VIDEO_URL", "") or DEFAULT_VIDEO_URL),
    )


def all_adapters() -> list[ProviderAdapter]:
    return [get_adapter(name) for name in PROVIDERS]


__all__ = ["PROVIDERS", "all_adapters", "get_adapter"]
