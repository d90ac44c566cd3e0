"""The Instagram adapter: Instagram professional accounts, connected through Facebook Login
(a Page's linked account: ``graph.facebook.com``, the Page's token) or through Instagram's own
login (``graph.instagram.com``, a long-lived Instagram user token refreshed before its 60 days
end). Publishing follows the container flow (``providers/instagram/media.py``) without holding a
worker thread: every send answers :class:`~providers.base.Pending` while Instagram fetches and
processes the media, and :meth:`resume` publishes once the containers are ``FINISHED``. Before a
publish the account's content publishing limit (posts per rolling 24 hours) is read; when it is
spent the send waits (stage ``waiting``, reason ``publishing_limit``) instead of failing.
See docs/providers/instagram.md.
"""

from __future__ import annotations

import logging
import time
from datetime import timedelta
from typing import Any
from urllib.parse import quote

import requests

from providers.base import (
    AccountContext,
    Capabilities,
    ConnectionMode,
    ErrorKind,
    Metrics,
    Pending,
    ProviderError,
    PublishRequest,
    PublishResult,
)
from providers.helpers import precheck
from providers.http import HttpClient
from providers.http_errors import CannotReconcile, ProviderHTTPError
from providers.instagram import login, media
from providers.instagram.rules import PROFILES, REEL_PROFILE, STORY_PROFILE
from providers.meta import errors as meta_errors
from providers.meta.errors import gone
from providers.meta.graph import MetaGraphAdapter, appsecret_proof
from providers.threads.errors import post_timestamp
from providers.threads.text import comparable_text

logger = logging.getLogger(__name__)

PROVIDER = "instagram"
LABEL = "Instagram"
PUBLIC_URL = "https://www.instagram.com"
# Facebook Login scopes of an Instagram account (the meta connect asks for them).
SCOPES = ("instagram_basic", "instagram_content_publish", "pages_read_engagement")
LIMIT_REACHED = 2207042  # media_publish's subcode: the account's publishing limit is spent
HOLD_REASON = "publishing_limit"
HOLD_MAX = timedelta(hours=25)  # a rolling 24-hour limit frees a slot within a day
RECONCILE_SLACK = timedelta(minutes=5)
RECENT_PAGE = 50
RECENT_PAGES = 3


class InstagramAdapter(MetaGraphAdapter):
    label = LABEL
    capabilities = Capabilities(
        provider=PROVIDER,
        display_name=LABEL,
        connection=ConnectionMode.OAUTH2,
        pkce=False,
        required_scopes=SCOPES,
        profiles=PROFILES,
        account_kind="business",
        supports_refresh=True,  # Instagram Login tokens; Page tokens do not expire
        supports_metrics=True,
        supports_destination_options=True,
    )
    image_check_seconds = 2.0  # an image container is first checked after this long
    video_check_seconds = 10.0  # a video's, then half as long again each time
    video_check_max_seconds = 60.0
    limit_check_seconds = 300.0  # a spent publishing limit is read again (limit_check_seconds)

    def __init__(self, *, http: HttpClient | None = None, app: dict[str, Any] | None = None):
        """``app``: the Meta app (``providers.meta.graph.MetaApp``) and Instagram Login's own
        (``instagram_client_id``, ``instagram_client_secret``, ``instagram_authorize_url``,
        ``instagram_token_url``: config/oauth_apps.py)."""
        super().__init__(http=http, app=app)
        app = dict(app or {})
        self.ig_api_url = self.meta.instagram_api_url
        self.ig_client_id = str(app.get("instagram_client_id") or "")
        self.ig_client_secret = str(app.get("instagram_client_secret") or "")
        self.ig_authorize_url = str(
            app.get("instagram_authorize_url") or login.DEFAULT_AUTHORIZE_URL
        )
        self.ig_token_url = str(app.get("instagram_token_url") or login.DEFAULT_TOKEN_URL)
        try:
            self.limit_check_seconds = max(float(app.get("limit_check_seconds") or 300), 1.0)
        except (TypeError, ValueError):
            self.limit_check_seconds = 300.0

    # --- plumbing ---------------------------------------------------------------------------

    def _base(self, account: AccountContext) -> str:
        """The versioned API base of the account's login: Instagram's own, or Facebook's."""
        if account.credentials.get("login") == "instagram":
            return f"{self.ig_api_url}/{self.meta.graph_version}"
        return f"{self.api_url}/{self.meta.graph_version}"

    def _ig_user(self, account: AccountContext) -> str:
        user = account.credentials.get("ig_user_id") or account.external_id
        if not user:
            raise ProviderError(ErrorKind.AUTH, f"{LABEL}: the account id is unknown; reconnect.")
        return quote(user, safe="")

    def _api(
        self, account: AccountContext, method: str, url: str, *, operation: str, **kwargs: Any
    ) -> requests.Response:
        """One call for the account, under Meta's usage pauses (``providers.meta.usage``): a
        Facebook Login account through the Meta app (``appsecret_proof`` with its secret); an
        Instagram Login account to graph.instagram.com, proven with the Instagram app's
        secret."""
        token = self._token(account)
        user = account.credentials.get("ig_user_id") or account.external_id
        if account.credentials.get("login") != "instagram":
            return self._graph(
                method, url, operation=operation, token=token, object_id=user, **kwargs
            )
        params = dict(kwargs.pop("params", None) or {})
        if self.ig_client_secret:
            params["appsecret_proof"] = appsecret_proof(token, self.ig_client_secret)
        self._refuse_if_paused(user)
        try:
            response = self._call(
                method,
                url,
                operation=operation,
                token=token,
                params=params or None,
                parse_error=self._noting_usage(meta_errors.parse_error, user),
                extra_secrets=(self.ig_client_secret,),
                **kwargs,
            )
        except ProviderHTTPError as exc:
            self._pause_after_limit(exc, user)
            raise
        self._note_usage(response.headers, user)
        return response

    def _get(
        self, account: AccountContext, url: str, operation: str, **params: Any
    ) -> dict[str, Any]:
        body: dict[str, Any] = self._json(
            self._api(account, "GET", url, operation=operation, params=params), operation
        )
        return body

    def _post_url(self, account: AccountContext, post: dict[str, Any]) -> str:
        permalink = str(post.get("permalink") or "")
        if permalink.startswith("https://"):
            return permalink
        return f"{PUBLIC_URL}/{quote(account.username, safe='')}/" if account.username else ""

    # --- connect (Instagram Login; Facebook Login is the meta connect's) --------------------

    begin_authorization = login.begin_authorization
    complete_authorization = login.complete_authorization
    refresh = login.refresh

    def connection_mode_instance(self, mode: str) -> str | None:
        """``instagram_login``: Instagram's own login, at the Instagram API base."""
        return self.ig_api_url if mode == login.MODE else None

    def account_required_scopes(self, *, instance_url: str) -> tuple[str, ...] | None:
        """An Instagram Login account is granted Instagram's own scopes (publishing needs
        ``instagram_business_basic`` and ``instagram_business_content_publish``), not Facebook
        Login's."""
        return login.PUBLISH_SCOPES if login.is_instagram_login(self, instance_url) else None

    def can_refresh(self, *, credentials: dict[str, str]) -> bool:
        """Instagram Login tokens are refreshed; a Page token (Facebook Login) does not
        expire and has nothing to refresh."""
        return credentials.get("login") == "instagram" and bool(credentials.get("access_token"))

    # --- publish ------------------------------------------------------------------------------

    def publish(
        self, *, account: AccountContext, request: PublishRequest
    ) -> PublishResult | Pending:
        """The publishing limit first (a spent one waits), then the containers: a
        :class:`Pending` while Instagram fetches and processes the media."""
        self._check_request(account, request)
        token = self._token(account)
        held = self._limit_hold(account, token, {})
        return held or self._start(account, token, request)

    def _check_request(self, account: AccountContext, request: PublishRequest) -> None:
        profile = self.capabilities.profile(request.profile)
        if profile is None:
            raise ProviderError(ErrorKind.PERMANENT, f"{LABEL}: unknown format {request.profile}.")
        precheck(profile, request, provider=LABEL)
        for item in request.media:
            if not item.url.startswith(("https://", "http://")):
                raise ProviderError(
                    ErrorKind.PERMANENT,
                    f"{LABEL}: Instagram fetches images and videos by URL, and {item.name} has "
                    "no public address (set HERALD_PUBLIC_URL, or use object storage).",
                )
        if request.profile == REEL_PROFILE.key:
            media.reel_fields(request)  # one video (and an optional cover)
        media.collaborators(request.options.get("collaborators") or "")
        self._ig_user(account)

    def _start(self, account: AccountContext, token: str, request: PublishRequest) -> Pending:
        """The post's container, or a carousel's item containers (the carousel container is
        made in :meth:`resume` once they are finished)."""
        single = media.single_fields(request)
        if single is not None:
            container = self._create(account, token, single)
            return self._processing(request, {"container": container}, 0)
        children = [
            self._create(account, token, fields) for fields in media.carousel_children(request)
        ]
        return self._processing(request, {"children": children}, 0)

    def resume(
        self, *, account: AccountContext, request: PublishRequest, state: dict[str, Any]
    ) -> PublishResult | Pending:
        """Where the send is: waiting for a publishing slot before any container, the
        carousel's items, or the post's container; the publish once it is ``FINISHED``."""
        token = self._token(account)
        container = str(state.get("container") or "")
        children = [str(c) for c in state.get("children") or []]
        checks = int(state.get("checks") or 0) + 1
        if not container and not children:  # held by the limit before anything was made
            return self._limit_hold(account, token, state) or self._start(account, token, request)
        if not state.get("finished"):
            if not media.all_finished(self, account, [container] if container else children):
                return self._processing(request, state, checks)
            if not container:
                fields = media.carousel_fields(children, request)
                carousel = self._create(account, token, fields)
                return self._processing(request, {"container": carousel}, checks)
        since = {"hold_since": state["hold_since"]} if state.get("hold_since") else {}
        state = {"container": container, "finished": True, **since}
        held = self._limit_hold(account, token, state)
        return held or self._publish(account, token, request, state)

    def _processing(self, request: PublishRequest, state: dict[str, Any], checks: int) -> Pending:
        """Images are checked after ``image_check_seconds``; videos after
        ``video_check_seconds``, then half as long again each time, up to a minute."""
        if any(media.is_video(item) for item in request.media):
            wait = min(self.video_check_seconds * 1.5**checks, self.video_check_max_seconds)
        else:
            wait = self.image_check_seconds
        return Pending(
            stage="processing", state={**state, "checks": checks}, check_after_seconds=wait
        )

    def _limit_hold(
        self, account: AccountContext, token: str, state: dict[str, Any]
    ) -> Pending | None:
        """``GET /{ig-user-id}/content_publishing_limit``: None while a post may be published;
        else the send waits (stage ``waiting``, reason ``publishing_limit``) and reads the limit
        again later, for at most a little over a day."""
        body = self._get(
            account,
            f"{self._base(account)}/{self._ig_user(account)}/content_publishing_limit",
            "publishing limit",
            fields="quota_usage,config",
        )
        used, total = media.quota(body)
        if not total or used < total:
            return None
        return self._hold(state, f"{used} of {total} posts in the last 24 hours")

    def _hold(self, state: dict[str, Any], why: str) -> Pending:
        since = float(state.get("hold_since") or time.time())
        if time.time() - since > HOLD_MAX.total_seconds():
            raise ProviderError(
                ErrorKind.TRANSIENT,
                f"{LABEL}: the publishing limit was still spent after 25 hours ({why}).",
            )
        return Pending(
            stage="waiting",
            state={**state, "hold_since": since},
            check_after_seconds=self.limit_check_seconds,
            reason=HOLD_REASON,
        )

    def _create(self, account: AccountContext, token: str, fields: dict[str, str]) -> str:
        # Creating a container publishes nothing: a failure here is safe to retry.
        body = self._json(
            self._api(
                account,
                "POST",
                f"{self._base(account)}/{self._ig_user(account)}/media",
                operation="media container",
                data=fields,
            ),
            "media container",
        )
        container = str(body.get("id") or "")
        if not container:
            raise ProviderError(ErrorKind.TRANSIENT, f"{LABEL}: the container answer had no id.")
        return container

    def _publish(
        self,
        account: AccountContext,
        token: str,
        request: PublishRequest,
        state: dict[str, Any],
    ) -> PublishResult | Pending:
        """``POST /{ig-user-id}/media_publish`` of the ``FINISHED`` container: the post is live.
        Instagram's own "limit reached" answer waits as a spent limit read before does."""
        try:
            response = self._api(
                account,
                "POST",
                f"{self._base(account)}/{self._ig_user(account)}/media_publish",
                operation="post",
                write=True,
                data={"creation_id": state["container"]},
            )
        except ProviderHTTPError as exc:
            if meta_errors.codes(exc)[1] == LIMIT_REACHED:
                return self._hold(state, "Instagram answered that the limit is reached")
            raise
        media_id = str(self._json(response, "post", write=True).get("id") or "")
        if not media_id:
            raise ProviderError(
                ErrorKind.AMBIGUOUS, f"{LABEL}: the publish answer had no id; it may be live."
            )
        self._first_comment(account, token, request, media_id)
        return PublishResult(external_id=media_id, external_url=self._permalink(account, media_id))

    def _first_comment(
        self, account: AccountContext, token: str, request: PublishRequest, media_id: str
    ) -> None:
        """The ``first_comment`` option: ``POST /{ig-media-id}/comments`` once the post is live
        (not on stories, which take no comments). The post is live whatever happens here: a
        refused comment is logged, never a failed post (and never sent twice)."""
        comment = (request.options.get("first_comment") or "").strip()
        if not comment or request.profile == STORY_PROFILE.key:
            return
        try:
            self._api(
                account,
                "POST",
                f"{self._base(account)}/{quote(media_id, safe='')}/comments",
                operation="first comment",
                write=True,
                data={"message": comment},
            )
        except ProviderError as exc:
            logger.warning("Instagram: the first comment on %s failed: %s", media_id, exc.message)

    def _permalink(self, account: AccountContext, media_id: str) -> str:
        """The post's ``permalink``; the post is live, so a failure here never fails it."""
        try:
            post = self._media(account, media_id, "id,permalink")
        except ProviderError:
            post = None
        return self._post_url(account, post or {})

    # --- reconcile, delete, metrics, options --------------------------------------------------

    def _media(self, account: AccountContext, media_id: str, fields: str) -> dict[str, Any] | None:
        """``GET /{ig-media-id}``; None when Instagram says it does not exist."""
        try:
            body = self._get(
                account,
                f"{self._base(account)}/{quote(media_id, safe='')}",
                "post lookup",
                fields=fields,
            )
        except ProviderHTTPError as exc:
            if gone(exc):
                return None
            raise
        return body if body.get("id") else None

    def reconcile(
        self, *, account: AccountContext, request: PublishRequest, external_id: str = ""
    ) -> PublishResult | None:
        """Find the post of an earlier attempt (Instagram has no idempotency key).

        1. ``external_id`` known: ``GET /{ig-media-id}`` (gone: None).
        2. The send's container (kept in its state): a container that is not ``PUBLISHED`` was
           never published (None: sending again is safe).
        3. The account's recent media (``/media``, or ``/stories`` for a story) since the first
           attempt (minus 5 minutes): a post of the same kind with the same caption.
        4. Not found: None when nothing said it was published and the pages covered the
           window; else :class:`CannotReconcile`.
        """
        if external_id:
            post = self._media(account, external_id, "id,permalink")
            return None if post is None else self._found(account, post)
        container = str(request.send_state.get("container") or "")
        published = False
        if container:
            status_code = self._container_status(account, container)
            if status_code not in ("PUBLISHED", ""):
                return None
            published = status_code == "PUBLISHED"
        found, covered = self._search_recent(account, request)
        if found is not None:
            return self._found(account, found)
        if covered and not published:
            return None
        raise CannotReconcile(
            f"{LABEL}: cannot tell which post the earlier attempt made; check the account."
        )

    def _found(self, account: AccountContext, post: dict[str, Any]) -> PublishResult:
        return PublishResult(
            external_id=str(post["id"]), external_url=self._post_url(account, post)
        )

    def _container_status(self, account: AccountContext, container: str) -> str:
        """The container's ``status_code``; "" when Instagram no longer knows it."""
        try:
            status_code, _ = media.read_status(self, account, container)
        except ProviderHTTPError as exc:
            if gone(exc):
                return ""
            raise
        return status_code

    def _search_recent(
        self, account: AccountContext, request: PublishRequest
    ) -> tuple[dict[str, Any] | None, bool]:
        """``(the matching post or None, whether every post of the window was seen)``."""
        since = request.first_attempt_at - RECONCILE_SLACK if request.first_attempt_at else None
        story = request.profile == STORY_PROFILE.key
        kinds = media.post_kinds(request)
        wanted = comparable_text(request.text)
        url: str | None = (
            f"{self._base(account)}/{self._ig_user(account)}/{'stories' if story else 'media'}"
        )
        params: dict[str, Any] = {
            "fields": "id,caption,media_product_type,timestamp,permalink",
            "limit": RECENT_PAGE,
        }
        for _ in range(RECENT_PAGES):
            if url is None:
                return None, True
            body = self._get(account, url, "recent media", **params)
            for post in body.get("data") or []:
                if not isinstance(post, dict) or not post.get("id"):
                    continue
                created = post_timestamp(post)
                if since is not None and created is not None and created < since:
                    return None, True  # newest first: the rest is older than the window
                if str(post.get("media_product_type") or kinds[0]) not in kinds:
                    continue
                if story or comparable_text(str(post.get("caption") or "")) == wanted:
                    return post, True
            after = ((body.get("paging") or {}).get("cursors") or {}).get("after")
            url = url if (body.get("paging") or {}).get("next") and after else None
            params["after"] = after
        return None, url is None

    def delete(self, *, account: AccountContext, external_id: str) -> None:
        """``DELETE /{ig-media-id}``: Meta allows it for accounts connected through Facebook
        Login; Instagram Login accounts cannot delete through the API."""
        if account.credentials.get("login") == "instagram":
            raise ProviderError(
                ErrorKind.PERMANENT,
                f"{LABEL}: posts of accounts connected through Instagram Login cannot be "
                "deleted through the API; delete it in the Instagram app.",
            )
        try:
            self._api(
                account,
                "DELETE",
                f"{self._base(account)}/{quote(external_id, safe='')}",
                operation="post deletion",
            )
        except ProviderHTTPError as exc:
            if not gone(exc):  # already gone
                raise

    def metrics(self, *, account: AccountContext, external_id: str) -> Metrics:
        """``GET /{ig-media-id}/insights?metric=reach,views,likes,comments,shares,saved``:
        likes, comments, shares (as reposts), views, reach and saves (``saved``)."""
        try:
            response = self._api(
                account,
                "GET",
                f"{self._base(account)}/{quote(external_id, safe='')}/insights",
                operation="insights",
                params={"metric": "reach,views,likes,comments,shares,saved"},
            )
        except ProviderHTTPError as exc:
            if gone(exc):
                raise ProviderError(
                    ErrorKind.PERMANENT, f"{LABEL}: the post no longer exists."
                ) from exc
            raise
        counts = _insight_counts(self._json(response, "insights"))
        return Metrics(
            likes=counts.get("likes", 0),
            comments=counts.get("comments", 0),
            reposts=counts.get("shares", 0),
            views=counts.get("views", 0),
            reach=counts.get("reach", 0),
            saves=counts.get("saved", 0),
        )

    def destination_options(
        self, *, account: AccountContext, region_code: str = "US", language: str = "en"
    ) -> dict[str, list[dict[str, str]]]:
        """The Reel's feed choice; the account itself is the only place a post goes."""
        return {
            "share_to_feed": [
                {"label": "Reels tab and feed", "value": "true"},
                {"label": "Reels tab only", "value": "false"},
            ],
        }


def _insight_counts(body: dict[str, Any]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for entry in body.get("data") or []:
        if not isinstance(entry, dict):
            continue
        values = entry.get("values") or []
        value = values[0].get("value") if values and isinstance(values[0], dict) else None
        if value is None:
            value = (entry.get("total_value") or {}).get("value")
        try:
            counts[str(entry.get("name"))] = int(value or 0)
        except (TypeError, ValueError):
            continue
    return counts


__all__ = ["InstagramAdapter"]
