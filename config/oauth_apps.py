"""The operator's OAuth 2 app registration per provider (X, LinkedIn, Threads, YouTube, TikTok, Pinterest, and the
Meta app of Facebook and Instagram), read from the
environment for ``settings.PROVIDER_OAUTH_APPS`` (docs/operations.md "Configuration", docs/oauth-and-tokens.md).

``HERALD_<P>_CLIENT_ID`` / ``_CLIENT_SECRET`` (both accept ``_FILE``); the API, authorize, token
and revoke URLs default to the real services and can be overridden (tests point them at stand-ins
on 127.0.0.1); ``HERALD_<P>_SCOPES`` adds scopes to the adapter's own. YouTube has two more:
``HERALD_YOUTUBE_UPLOAD_URL`` (the upload host, default the API URL) and
``HERALD_YOUTUBE_DAILY_QUOTA`` (the Google Cloud project's daily API units, default 10,000).
TikTok's client ID is ``HERALD_TIKTOK_CLIENT_KEY`` (``_FILE``), and ``HERALD_TIKTOK_AUDITED``
(default false) says whether TikTok has audited the app.
"""

from __future__ import annotations

from config.env import env_bool, env_int, env_str

_OAUTH_APP_DEFAULTS: dict[str, dict[str, str]] = {
    "x": {
        "api_url": "https://api.x.com",
        "authorize_url": "https://x.com/i/oauth2/authorize",
        "token_url": "https://api.x.com/2/oauth2/token",
        "revoke_url": "https://api.x.com/2/oauth2/revoke",
    },
    "linkedin": {
        "api_url": "https://api.linkedin.com",
        "authorize_url": "https://www.linkedin.com/oauth/v2/authorization",
        "token_url": "https://www.linkedin.com/oauth/v2/accessToken",
        "revoke_url": "https://www.linkedin.com/oauth/v2/revoke",
    },
    "threads": {
        "api_url": "https://graph.threads.net",
        "authorize_url": "https://threads.net/oauth/authorize",
        "token_url": "https://graph.threads.net/oauth/access_token",
        "revoke_url": "",
    },
    "youtube": {
        "api_url": "https://www.googleapis.com",
        "authorize_url": "https://accounts.google.com/o/oauth2/v2/auth",
        "token_url": "https://oauth2.googleapis.com/token",
        "revoke_url": "https://oauth2.googleapis.com/revoke",
    },
    "tiktok": {
        "api_url": "https://open.tiktokapis.com",
        "authorize_url": "https://www.tiktok.com/v2/auth/authorize/",
        "token_url": "https://open.tiktokapis.com/v2/oauth/token/",
        "revoke_url": "https://open.tiktokapis.com/v2/oauth/revoke/",
    },
    "pinterest": {
        "api_url": "https://api.pinterest.com",
        "authorize_url": "https://www.pinterest.com/oauth/",
        "token_url": "https://api.pinterest.com/v5/oauth/token",
        "revoke_url": "",
    },
}


def _oauth_app(provider: str, defaults: dict[str, str]) -> dict[str, object]:
    prefix = f"HERALD_{provider.upper()}"
    api_url = (env_str(f"{prefix}_API_URL") or defaults["api_url"]).rstrip("/")
    app: dict[str, object] = {
        "client_id": env_str(f"{prefix}_CLIENT_ID") or "",
        "client_secret": env_str(f"{prefix}_CLIENT_SECRET") or "",
        "api_url": api_url,
        "authorize_url": env_str(f"{prefix}_AUTHORIZE_URL") or defaults["authorize_url"],
        # Scopes requested in addition to the adapter's own (e.g. LinkedIn organization pages:
        # HERALD_LINKEDIN_SCOPES="w_organization_social r_organization_social ...").
        "scopes": env_str(f"{prefix}_SCOPES") or "",
    }
    # Token and revoke endpoints follow an overridden API URL unless set themselves (X and
    # Threads serve them under the API host; LinkedIn under www.linkedin.com).
    for key in ("token_url", "revoke_url"):
        default = defaults[key]
        if default.startswith(defaults["api_url"]):
            default = api_url + default[len(defaults["api_url"]) :]
        app[key] = env_str(f"{prefix}_{key.upper()}") or default
    if provider == "youtube":
        app["upload_url"] = (env_str(f"{prefix}_UPLOAD_URL") or api_url).rstrip("/")
        app["daily_quota"] = env_int(f"{prefix}_DAILY_QUOTA", 10_000)
    if provider == "tiktok":
        # TikTok names the client ID its "client key"; HERALD_TIKTOK_AUDITED says whether
        # TikTok audited the app (until then it may only post privately).
        app["client_id"] = env_str(f"{prefix}_CLIENT_KEY") or ""
        app["audited"] = "true" if env_bool(f"{prefix}_AUDITED", False) else "false"
        # Media URL prefixes verified with TikTok: videos there are pulled, not uploaded.
        app["verified_url_prefixes"] = env_str(f"{prefix}_VERIFIED_URL_PREFIXES") or ""
    if provider == "pinterest":
        # HERALD_PINTEREST_STANDARD_ACCESS: Pinterest granted the app Standard access. Until
        # then (Trial access) its Pins are visible only to their creator and production
        # refuses them: readiness reports trial_only, and such an app points
        # HERALD_PINTEREST_API_URL at Pinterest's API sandbox.
        app["audited"] = "true" if env_bool(f"{prefix}_STANDARD_ACCESS", False) else "false"
    return app


def meta_app_from_env() -> dict[str, object]:
    """The operator's Meta app, shared by ``facebook`` and ``instagram`` (providers/meta/).

    ``HERALD_META_APP_ID`` / ``HERALD_META_APP_SECRET`` (``_FILE``) are its ``client_id`` and
    ``client_secret``. ``HERALD_META_GRAPH_VERSION`` moves the pinned Graph API version (empty:
    the one pinned in providers/meta/graph.py); ``HERALD_META_API_URL`` (graph.facebook.com),
    ``HERALD_META_AUTHORIZE_URL`` (the Facebook Login dialog of that version) and
    ``HERALD_INSTAGRAM_API_URL`` (graph.instagram.com) default to Meta's hosts when empty.
    ``HERALD_META_USAGE_PAUSE_PERCENT``: the usage, in percent of a Meta rate limit, at which
    Herald pauses calls for the app or the Page / account (default 90).
    """
    return {
        "client_id": env_str("HERALD_META_APP_ID") or "",
        "client_secret": env_str("HERALD_META_APP_SECRET") or "",
        "graph_version": env_str("HERALD_META_GRAPH_VERSION") or "",
        "api_url": (env_str("HERALD_META_API_URL") or "https://graph.facebook.com").rstrip("/"),
        "authorize_url": env_str("HERALD_META_AUTHORIZE_URL") or "",
        "instagram_api_url": (
            env_str("HERALD_INSTAGRAM_API_URL") or "https://graph.instagram.com"
        ).rstrip("/"),
        "usage_pause_percent": env_str("HERALD_META_USAGE_PAUSE_PERCENT") or "90",
    }


def instagram_login_from_env() -> dict[str, object]:
    """Instagram's own login (accounts without a Facebook Page): the *Instagram* app ID and
    secret of the Meta app (``HERALD_INSTAGRAM_CLIENT_ID`` / ``_CLIENT_SECRET``, ``_FILE``), its
    authorization window and token endpoint (``HERALD_INSTAGRAM_AUTHORIZE_URL``,
    ``HERALD_INSTAGRAM_TOKEN_URL``; Meta's when empty)."""
    return {
        "instagram_client_id": env_str("HERALD_INSTAGRAM_CLIENT_ID") or "",
        "instagram_client_secret": env_str("HERALD_INSTAGRAM_CLIENT_SECRET") or "",
        "instagram_authorize_url": env_str("HERALD_INSTAGRAM_AUTHORIZE_URL")
        or "https://www.instagram.com/oauth/authorize",
        "instagram_token_url": env_str("HERALD_INSTAGRAM_TOKEN_URL")
        or "https://api.instagram.com/oauth/access_token",
        # How often a send waiting for a spent publishing limit reads it again (seconds).
        "limit_check_seconds": env_str("HERALD_INSTAGRAM_LIMIT_CHECK_SECONDS") or "300",
    }


def oauth_apps_from_env() -> dict[str, dict[str, object]]:
    apps = {
        provider: _oauth_app(provider, defaults)
        for provider, defaults in _OAUTH_APP_DEFAULTS.items()
    }
    # One Meta app serves both Meta providers (one Facebook Login grants Pages and the
    # Instagram accounts linked to them).
    meta = meta_app_from_env()
    apps["facebook"] = dict(meta)
    apps["instagram"] = {**meta, **instagram_login_from_env()}
    return apps
