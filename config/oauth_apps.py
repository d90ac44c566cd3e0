"""The operator's OAuth 2 app registration per provider (X, LinkedIn, Threads), read from the
environment for ``settings.PROVIDER_OAUTH_APPS`` (docs/operations.md "Configuration", docs/oauth-and-tokens.md).

``HERALD_<P>_CLIENT_ID`` / ``_CLIENT_SECRET`` (both accept ``_FILE``); the API, authorize, token
and revoke URLs default to the real services and can be overridden (tests point them at stand-ins
on 127.0.0.1); ``HERALD_<P>_SCOPES`` adds scopes to the adapter's own.
"""

from __future__ import annotations

from config.env import env_str

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
    return app


def oauth_apps_from_env() -> dict[str, dict[str, object]]:
    return {
        provider: _oauth_app(provider, defaults)
        for provider, defaults in _OAUTH_APP_DEFAULTS.items()
    }
