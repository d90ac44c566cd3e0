"""Facebook Login, shared by ``facebook`` and by ``instagram`` connected through Facebook Login:
one login may grant several Pages and the Instagram professional accounts linked to them, so
its result is a list of candidates the person chooses from (each choice becomes an account).

The flow (developers.facebook.com/docs/facebook-login/guides/advanced/manual-flow and
.../access-levels, /docs/pages-api/getting-started):

1. the Login dialog ``{authorize_url}?client_id&redirect_uri&state&scope&response_type=code``;
2. ``GET /oauth/access_token?client_id&client_secret&redirect_uri&code``: a short-lived user
   token (about an hour);
3. ``GET /oauth/access_token?grant_type=fb_exchange_token&fb_exchange_token=...``: the
   long-lived user token (about 60 days);
4. ``GET /me`` and ``GET /me/permissions`` (what was really granted: the scope evidence);
5. ``GET /me/accounts`` (paged): each Page with its Page token, which, derived from a
   long-lived user token, does not expire; and each Page's linked Instagram professional
   account (``instagram_business_account``).

Herald keeps the Page tokens, never the user token. Credentials of a candidate:

* a Page (``facebook``): ``{"access_token": <page token>, "page_id", "meta_user_id",
  "login": "facebook"}``;
* an Instagram account through Facebook Login (``instagram``): ``{"access_token": <token of the
  Page it is linked to>, "ig_user_id", "page_id", "meta_user_id", "login": "facebook"}``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode

from providers.base import Candidate, ConnectedAccount, ErrorKind, ProviderError

if TYPE_CHECKING:
    from providers.meta.graph import MetaGraphAdapter

FACEBOOK = "facebook"
INSTAGRAM = "instagram"
# Minimal scopes per provider (developers.facebook.com/docs/permissions): listing the Pages and
# their tokens, publishing and deleting as the Page, comments (the first comment) and insights.
FACEBOOK_SCOPES = (
    "pages_show_list",
    "pages_read_engagement",
    "pages_manage_posts",
    "pages_manage_engagement",
    "read_insights",
)
# What a Page account cannot publish without (readiness's scope evidence); the others serve the
# first comment and metrics, and are asked for but not required.
FACEBOOK_REQUIRED_SCOPES = ("pages_show_list", "pages_read_engagement", "pages_manage_posts")
INSTAGRAM_SCOPES = (
    "instagram_basic",
    "instagram_content_publish",
    "instagram_manage_comments",
    "instagram_manage_insights",
    # An Instagram professional account is reached through its Page.
    "pages_show_list",
    "pages_read_engagement",
)
PAGE_FIELDS = (
    "id,name,access_token,tasks,link,picture{url},"
    "instagram_business_account{id,username,name,profile_picture_url}"
)
MAX_PAGES = 10  # pages of /me/accounts read (100 Pages each)


def scopes_for(provider: str) -> tuple[str, ...]:
    """What a login started from ``provider`` asks for: from ``facebook`` both sets (one login
    offers the Pages and their Instagram accounts), from ``instagram`` only Instagram's."""
    if provider == INSTAGRAM:
        return INSTAGRAM_SCOPES
    return tuple(dict.fromkeys(FACEBOOK_SCOPES + INSTAGRAM_SCOPES))


def authorization_url(adapter: MetaGraphAdapter, *, redirect_uri: str, state: str) -> str:
    adapter._require_app()
    query = urlencode(
        {
            "client_id": adapter.client_id,
            "redirect_uri": redirect_uri,
            "state": state,
            "scope": ",".join(scopes_for(adapter.capabilities.provider)),
            "response_type": "code",
        }
    )
    return f"{adapter.meta.authorize_url}?{query}"


def _token(answer: dict[str, Any], what: str, label: str) -> str:
    token = str(answer.get("access_token") or "")
    if not token:
        raise ProviderError(ErrorKind.AUTH, f"{label}: the {what} answer had no access token.")
    return token


def user_token(adapter: MetaGraphAdapter, *, code: str, redirect_uri: str) -> str:
    """Steps 2 and 3: the long-lived user token."""
    adapter._require_app()
    app = {"client_id": adapter.client_id, "client_secret": adapter.client_secret}
    short = adapter._json(
        adapter._graph(
            "GET",
            "/oauth/access_token",
            operation="token exchange",
            token_endpoint=True,
            params={**app, "redirect_uri": redirect_uri, "code": code},
            extra_secrets=(code,),
        ),
        "token exchange",
    )
    short_token = _token(short, "token exchange", adapter.label)
    long = adapter._json(
        adapter._graph(
            "GET",
            "/oauth/access_token",
            operation="long-lived token exchange",
            token_endpoint=True,
            params={**app, "grant_type": "fb_exchange_token", "fb_exchange_token": short_token},
            extra_secrets=(short_token,),
        ),
        "long-lived token exchange",
    )
    return _token(long, "long-lived token exchange", adapter.label)


def granted_permissions(adapter: MetaGraphAdapter, token: str) -> tuple[str, ...]:
    body = adapter._json(
        adapter._graph("GET", "/me/permissions", operation="permissions", token=token),
        "permissions",
    )
    return tuple(
        str(p.get("permission"))
        for p in body.get("data") or []
        if isinstance(p, dict) and p.get("status") == "granted" and p.get("permission")
    )


def pages(adapter: MetaGraphAdapter, token: str) -> list[dict[str, Any]]:
    """Every Page the login granted, with its token (bounded paging)."""
    found: list[dict[str, Any]] = []
    params: dict[str, Any] = {"fields": PAGE_FIELDS, "limit": 100}
    for _ in range(MAX_PAGES):
        body = adapter._json(
            adapter._graph(
                "GET", "/me/accounts", operation="page list", token=token, params=params
            ),
            "page list",
        )
        found.extend(p for p in body.get("data") or [] if isinstance(p, dict) and p.get("id"))
        paging = body.get("paging") or {}
        after = (paging.get("cursors") or {}).get("after")
        if not paging.get("next") or not after:
            break
        params["after"] = after
    return found


def _picture(page: dict[str, Any]) -> str:
    data = (page.get("picture") or {}).get("data") or {}
    url = str(data.get("url") or "")
    return url if url.startswith("https://") else ""


def candidates(adapter: MetaGraphAdapter, *, code: str, redirect_uri: str) -> list[Candidate]:
    """The whole login: the Pages (when started from ``facebook``) and the linked Instagram
    accounts (when their scopes were granted), each with the scopes it was granted."""
    token = user_token(adapter, code=code, redirect_uri=redirect_uri)
    me = adapter._json(
        adapter._graph(
            "GET", "/me", operation="account lookup", token=token, params={"fields": "id,name"}
        ),
        "account lookup",
    )
    user_id = str(me.get("id") or "")
    if not user_id:
        raise ProviderError(ErrorKind.AUTH, f"{adapter.label}: the account could not be read.")
    granted = granted_permissions(adapter, token)
    started_from = adapter.capabilities.provider
    found: list[Candidate] = []
    for page in pages(adapter, token):
        page_token = str(page.get("access_token") or "")
        if not page_token:
            continue  # no task on this Page that gives a token
        if started_from == FACEBOOK:
            found.append(_page_candidate(adapter, page, page_token, user_id, granted))
        linked = page.get("instagram_business_account") or {}
        if linked.get("id") and "instagram_basic" in granted:
            found.append(_instagram_candidate(adapter, page, linked, page_token, user_id, granted))
    return found


def _page_candidate(
    adapter: MetaGraphAdapter,
    page: dict[str, Any],
    page_token: str,
    user_id: str,
    granted: tuple[str, ...],
) -> Candidate:
    page_id = str(page["id"])
    link = str(page.get("link") or "")
    account = ConnectedAccount(
        external_id=page_id,
        username=str(page.get("name") or page_id),
        display_name=str(page.get("name") or ""),
        avatar_url=_picture(page),
        credentials={
            "access_token": page_token,
            "page_id": page_id,
            "meta_user_id": user_id,
            "login": "facebook",
        },
        instance_url=adapter.api_url,
        account_kind="page",
        granted_scopes=tuple(s for s in granted if s in FACEBOOK_SCOPES),
        expires_at=None,  # a Page token from a long-lived user token does not expire
        profile_url=link if link.startswith("https://") else f"https://www.facebook.com/{page_id}",
    )
    return Candidate(provider=FACEBOOK, account=account, label=f"Facebook Page {account.username}")


def _instagram_candidate(
    adapter: MetaGraphAdapter,
    page: dict[str, Any],
    linked: dict[str, Any],
    page_token: str,
    user_id: str,
    granted: tuple[str, ...],
) -> Candidate:
    ig_id = str(linked["id"])
    username = str(linked.get("username") or ig_id)
    picture = str(linked.get("profile_picture_url") or "")
    account = ConnectedAccount(
        external_id=ig_id,
        username=username,
        display_name=str(linked.get("name") or ""),
        avatar_url=picture if picture.startswith("https://") else "",
        credentials={
            "access_token": page_token,
            "ig_user_id": ig_id,
            "page_id": str(page["id"]),
            "meta_user_id": user_id,
            "login": "facebook",
        },
        instance_url=adapter.api_url,
        account_kind="business",
        granted_scopes=tuple(s for s in granted if s in INSTAGRAM_SCOPES),
        expires_at=None,
        profile_url=f"https://www.instagram.com/{quote(username, safe='')}/",
    )
    return Candidate(
        provider=INSTAGRAM,
        account=account,
        label=f"Instagram @{username} (through Page {page.get('name') or page['id']})",
    )
