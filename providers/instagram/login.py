"""Instagram's own login (Business Login for Instagram), for professional accounts without a
Facebook Page: ``GET https://www.instagram.com/oauth/authorize``, ``POST https://api.instagram.com/
oauth/access_token`` (the code for a short-lived token, one hour), ``GET https://graph.instagram.com/
access_token?grant_type=ig_exchange_token`` (a long-lived token, 60 days), ``GET
/refresh_access_token?grant_type=ig_refresh_token`` (a long-lived token at least 24 hours old and
unexpired: 60 days again), ``GET /me``. The account's calls then go to ``graph.instagram.com``.

An ``instagram`` connect takes this path when it asks for the Instagram Login mode (its
``instance_url`` is then the Instagram API base, see :func:`is_instagram_login`); without a
mode, Instagram accounts connect through Facebook Login (the meta connect).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode

from providers.base import (
    AccountContext,
    AuthorizationStart,
    ConnectedAccount,
    ConnectionCandidates,
    ErrorKind,
    NotSupported,
    ProviderError,
)
from providers.meta import login as meta_login
from providers.meta.errors import parse_token_error

if TYPE_CHECKING:
    from providers.instagram.adapter import InstagramAdapter

LABEL = "Instagram"
MODE = "instagram_login"
DEFAULT_API_URL = "https://graph.instagram.com"
DEFAULT_AUTHORIZE_URL = "https://www.instagram.com/oauth/authorize"
DEFAULT_TOKEN_URL = "https://api.instagram.com/oauth/access_token"  # noqa: S105 (a URL)
# Publishing, insights (metrics) and comments (the first comment).
SCOPES = (
    "instagram_business_basic",
    "instagram_business_content_publish",
    "instagram_business_manage_insights",
    "instagram_business_manage_comments",
)
PUBLISH_SCOPES = SCOPES[:2]  # what readiness requires of such an account
REFRESH_MIN_AGE = timedelta(hours=24)
PUBLIC_URL = "https://www.instagram.com"


def is_instagram_login(api: InstagramAdapter, instance_url: str) -> bool:
    return bool(instance_url) and instance_url.rstrip("/") == api.ig_api_url


def _require_app(api: InstagramAdapter) -> None:
    if not api.ig_client_id or not api.ig_client_secret:
        raise ProviderError(
            ErrorKind.PERMANENT,
            f"{LABEL}: the Instagram app is not configured "
            "(HERALD_INSTAGRAM_CLIENT_ID, HERALD_INSTAGRAM_CLIENT_SECRET).",
        )


def begin_authorization(
    api: InstagramAdapter,
    *,
    redirect_uri: str,
    state: str,
    instance_url: str = "",
    app: dict[str, str] | None = None,
) -> AuthorizationStart:
    if not is_instagram_login(api, instance_url):  # Facebook Login: the Meta app's dialog
        return AuthorizationStart(
            authorization_url=meta_login.authorization_url(
                api, redirect_uri=redirect_uri, state=state
            )
        )
    _require_app(api)
    query = urlencode(
        {
            "client_id": api.ig_client_id,
            "redirect_uri": redirect_uri,
            "response_type": "code",
            "scope": ",".join(SCOPES),
            "state": state,
        }
    )
    return AuthorizationStart(authorization_url=f"{api.ig_authorize_url}?{query}")


def complete_authorization(
    api: InstagramAdapter,
    *,
    code: str,
    redirect_uri: str,
    code_verifier: str,
    instance_url: str = "",
    app: dict[str, str] | None = None,
) -> ConnectedAccount | ConnectionCandidates:
    """The code for a short-lived token, that for a long-lived one, then the profile. Through
    Facebook Login (no mode): the Instagram accounts linked to the granted Pages, to choose
    from (``providers.meta.login``)."""
    if not is_instagram_login(api, instance_url):
        found = meta_login.candidates(api, code=code, redirect_uri=redirect_uri)
        if not found:
            raise ProviderError(
                ErrorKind.PERMANENT,
                f"{LABEL}: the login reached no Instagram professional account linked to a Page.",
            )
        return ConnectionCandidates(candidates=found)
    _require_app(api)
    short = _exchange_code(api, code=code, redirect_uri=redirect_uri)
    grant = _get_token(
        api,
        "access_token",
        "long-lived token exchange",
        grant_type="ig_exchange_token",
        client_secret=api.ig_client_secret,
        access_token=short["access_token"],
    )
    credentials, expires_at = _long_lived(grant)
    me = api._json(
        api._call(
            "GET",
            f"{api.ig_api_url}/{api.meta.graph_version}/me",
            token=credentials["access_token"],
            operation="account lookup",
            params={"fields": "user_id,username,name,profile_picture_url,account_type"},
        ),
        "account lookup",
    )
    user_id = str(me.get("user_id") or me.get("id") or "")
    if not user_id:
        raise ProviderError(ErrorKind.AUTH, f"{LABEL}: the account could not be read.")
    username = str(me.get("username") or "")
    credentials["ig_user_id"] = user_id
    return ConnectedAccount(
        external_id=user_id,
        username=username,
        display_name=str(me.get("name") or ""),
        avatar_url=str(me.get("profile_picture_url") or ""),
        credentials=credentials,
        instance_url=api.ig_api_url,
        account_kind="business",
        granted_scopes=short["scopes"] or SCOPES,
        expires_at=expires_at,
        profile_url=f"{PUBLIC_URL}/{quote(username, safe='')}/" if username else "",
    )


def _exchange_code(api: InstagramAdapter, *, code: str, redirect_uri: str) -> dict[str, Any]:
    """``POST /oauth/access_token``: ``{"access_token", "scopes"}`` of the short-lived grant
    (Instagram answers it flat or inside ``data``; ``permissions`` names the granted scopes)."""
    body = api._json(
        api._call(
            "POST",
            api.ig_token_url,
            operation="token exchange",
            parse_error=parse_token_error,
            data={
                "client_id": api.ig_client_id,
                "client_secret": api.ig_client_secret,
                "grant_type": "authorization_code",
                "redirect_uri": redirect_uri,
                "code": code,
            },
            extra_secrets=(code, api.ig_client_secret),
        ),
        "token exchange",
    )
    rows = body.get("data")
    grant = rows[0] if isinstance(rows, list) and rows and isinstance(rows[0], dict) else body
    token = str(grant.get("access_token") or "")
    if not token:
        raise ProviderError(ErrorKind.AUTH, f"{LABEL}: the token answer had no access token.")
    permissions = grant.get("permissions") or []
    if isinstance(permissions, str):
        permissions = permissions.split(",")
    return {"access_token": token, "scopes": tuple(str(p).strip() for p in permissions if p)}


def _get_token(api: InstagramAdapter, path: str, operation: str, **params: str) -> dict[str, Any]:
    grant: dict[str, Any] = api._json(
        api._call(
            "GET",
            f"{api.ig_api_url}/{path}",
            operation=operation,
            parse_error=parse_token_error,
            params=params,
            extra_secrets=(params.get("access_token", ""), api.ig_client_secret),
        ),
        operation,
    )
    return grant


def _long_lived(grant: dict[str, Any]) -> tuple[dict[str, str], datetime | None]:
    if not grant.get("access_token"):
        raise ProviderError(ErrorKind.AUTH, f"{LABEL}: the token answer had no access token.")
    try:
        seconds = int(float(grant.get("expires_in") or 0))
    except (TypeError, ValueError):
        seconds = 0
    now = datetime.now(UTC)
    credentials = {
        "access_token": str(grant["access_token"]),
        "login": "instagram",
        # When this long-lived token was issued: Instagram refreshes it once 24 hours old.
        "issued_at": str(int(now.timestamp())),
    }
    return credentials, (now + timedelta(seconds=seconds) if seconds > 0 else None)


def refresh(api: InstagramAdapter, *, account: AccountContext) -> ConnectedAccount:
    """``GET /refresh_access_token?grant_type=ig_refresh_token``: 60 days again for a
    long-lived token at least 24 hours old and unexpired. Before 24 hours Instagram would
    refuse: answered here as temporary, without a call. A Page token (Facebook Login) never
    expires: nothing to refresh."""
    if account.credentials.get("login") != "instagram":
        raise NotSupported("Refreshing a Facebook Login token")
    token = api._token(account)
    try:
        issued = float(account.credentials.get("issued_at") or 0)
    except ValueError:
        issued = 0.0
    age = time.time() - issued
    if issued and age < REFRESH_MIN_AGE.total_seconds():
        raise ProviderError(
            ErrorKind.TRANSIENT,
            f"{LABEL}: a long-lived token can be refreshed once 24 hours old "
            f"(in {int((REFRESH_MIN_AGE.total_seconds() - age) // 60)} minutes).",
        )
    grant = _get_token(
        api,
        "refresh_access_token",
        "token refresh",
        grant_type="ig_refresh_token",
        access_token=token,
    )
    credentials, expires_at = _long_lived(grant)
    credentials["ig_user_id"] = account.credentials.get("ig_user_id") or account.external_id
    return ConnectedAccount(
        external_id=account.external_id,
        username=account.username,
        credentials=credentials,
        instance_url=account.instance_url or api.ig_api_url,
        account_kind="business",
        expires_at=expires_at,
    )
