"""The Threads adapter: connect (the operator's app, then the long-lived token exchange), refresh
of long-lived tokens, two-step publishing with the container status polled, reconcile over the
account's own posts, delete and insights. See docs/providers/threads.md."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote, urlencode

import requests

from providers.base import (
    AccountContext,
    AuthorizationStart,
    Capabilities,
    ConnectedAccount,
    ConnectionMode,
    ErrorKind,
    MediaItem,
    Metrics,
    Pending,
    ProviderError,
    PublishRequest,
    PublishResult,
)
from providers.helpers import precheck
from providers.http import HttpClient
from providers.http_errors import (
    CannotReconcile,
    ProviderHTTPError,
)
from providers.oauth_http import OAuthHttpAdapter
from providers.threads import video
from providers.threads.errors import (
    gone,
    parse_error,
    parse_token_error,
    post_timestamp,
)
from providers.threads.text import POST_PROFILE, comparable_text

PROVIDER = "threads"
LABEL = "Threads"
DEFAULT_API_URL = "https://graph.threads.net"
DEFAULT_AUTHORIZE_URL = "https://threads.net/oauth/authorize"
API_VERSION = "v1.0"
SCOPES = ("threads_basic", "threads_content_publish", "threads_manage_insights", "threads_delete")
PUBLIC_URL = "https://www.threads.net"
REFRESH_MIN_AGE = timedelta(hours=24)  # Threads refreshes a long-lived token once 24 h old
RECONCILE_SLACK = timedelta(minutes=5)
RECENT_PAGE = 100
RECENT_PAGES = 3


def _post_kind(media: list[MediaItem]) -> str:
    """How the post list names what a request publishes."""
    if not media:
        return "TEXT_POST"
    if len(media) > 1:
        return "CAROUSEL_ALBUM"
    return "VIDEO" if video.is_video(media[0]) else "IMAGE"


class ThreadsAdapter(OAuthHttpAdapter):
    label = LABEL
    error_parser = staticmethod(parse_error)
    capabilities = Capabilities(
        provider=PROVIDER,
        display_name=LABEL,
        connection=ConnectionMode.OAUTH2,
        pkce=False,  # Threads' authorization window takes no PKCE parameters
        required_scopes=SCOPES,
        profiles=(POST_PROFILE,),
        account_kind="user",
        supports_refresh=True,  # long-lived tokens, once at least 24 h old and unexpired
        supports_revoke=False,  # no documented token revocation endpoint
        supports_metrics=True,
    )
    container_poll_attempts = 8  # status reads before publishing (bounded)
    container_poll_seconds = 2.0  # wait before each status read
    video_check_seconds = 10.0  # a video's containers are first checked after this long
    video_check_max_seconds = 60.0

    def __init__(self, *, http: HttpClient | None = None, app: dict[str, Any] | None = None):
        self.http = http or HttpClient()
        app = dict(app or {})
        self.client_id = str(app.get("client_id") or "")
        self.client_secret = str(app.get("client_secret") or "")
        self.api_url = str(app.get("api_url") or DEFAULT_API_URL).rstrip("/")
        self.authorize_url = str(app.get("authorize_url") or DEFAULT_AUTHORIZE_URL)
        self.token_url = str(app.get("token_url") or f"{self.api_url}/oauth/access_token")

    # --- plumbing ---------------------------------------------------------------------------

    def _require_app(self) -> None:
        if not self.client_id or not self.client_secret:
            raise ProviderError(
                ErrorKind.PERMANENT,
                f"{LABEL}: the app is not configured "
                "(HERALD_THREADS_CLIENT_ID, HERALD_THREADS_CLIENT_SECRET).",
            )

    def _call(
        self, method: str, path_or_url: str, *, token_endpoint: bool = False, **kwargs: Any
    ) -> requests.Response:
        """A path is under the Graph API version; the token endpoints answer OAuth errors."""
        versioned = path_or_url if "://" in path_or_url else f"/{API_VERSION}{path_or_url}"
        parser = parse_token_error if token_endpoint else parse_error
        return super()._call(method, versioned, parse_error=parser, **kwargs)

    @staticmethod
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
            # When this long-lived token was issued: Threads refreshes it once 24 h old.
            "issued_at": str(int(now.timestamp())),
        }
        return credentials, (now + timedelta(seconds=seconds) if seconds > 0 else None)

    @staticmethod
    def _profile_url(username: str) -> str:
        return f"{PUBLIC_URL}/@{quote(username, safe='')}" if username else ""

    def _post_url(self, account: AccountContext, post: dict[str, Any]) -> str:
        permalink = str(post.get("permalink") or "")
        if permalink.startswith("https://"):
            return permalink
        return self._profile_url(account.username)

    # --- connect ------------------------------------------------------------------------------

    def begin_authorization(
        self,
        *,
        redirect_uri: str,
        state: str,
        instance_url: str = "",
        app: dict[str, str] | None = None,
    ) -> AuthorizationStart:
        self._require_app()
        query = urlencode(
            {
                "client_id": self.client_id,
                "redirect_uri": redirect_uri,
                "scope": ",".join(SCOPES),
                "response_type": "code",
                "state": state,
            }
        )
        return AuthorizationStart(authorization_url=f"{self.authorize_url}?{query}")

    def complete_authorization(
        self,
        *,
        code: str,
        redirect_uri: str,
        code_verifier: str,
        instance_url: str = "",
        app: dict[str, str] | None = None,
    ) -> ConnectedAccount:
        """The code for a short-lived token (1 h), that for a long-lived one (60 days), then
        the profile."""
        self._require_app()
        short_token = self._exchange_code(code=code, redirect_uri=redirect_uri)
        credentials, expires_at = self._long_lived(self._exchange_short_lived(short_token))
        me = self._account_lookup(credentials["access_token"])
        username = str(me.get("username") or "")
        return ConnectedAccount(
            external_id=str(me["id"]),
            username=username,
            display_name=str(me.get("name") or ""),
            avatar_url=str(me.get("threads_profile_picture_url") or ""),
            credentials=credentials,
            # The API base: the delivery service's per-host limits and pauses key on it.
            instance_url=self.api_url,
            # Threads' token answers carry no scope: the grant is what the window asked for.
            granted_scopes=SCOPES,
            expires_at=expires_at,
            profile_url=self._profile_url(username),
        )

    def _exchange_code(self, *, code: str, redirect_uri: str) -> str:
        """``POST /oauth/access_token``: the authorization code for a short-lived token."""
        short = self._json(
            self._call(
                "POST",
                self.token_url,
                operation="token exchange",
                token_endpoint=True,
                data={
                    "client_id": self.client_id,
                    "client_secret": self.client_secret,
                    "grant_type": "authorization_code",
                    "redirect_uri": redirect_uri,
                    "code": code,
                },
                extra_secrets=(code,),
            ),
            "token exchange",
        )
        short_token = str(short.get("access_token") or "")
        if not short_token:
            raise ProviderError(ErrorKind.AUTH, f"{LABEL}: the token answer had no access token.")
        return short_token

    def _exchange_short_lived(self, short_token: str) -> dict[str, Any]:
        """``GET /access_token?grant_type=th_exchange_token``: the long-lived grant."""
        grant: dict[str, Any] = self._json(
            self._call(
                "GET",
                f"{self.api_url}/access_token",
                operation="long-lived token exchange",
                token_endpoint=True,
                params={
                    "grant_type": "th_exchange_token",
                    "client_secret": self.client_secret,
                    "access_token": short_token,
                },
                extra_secrets=(short_token,),
            ),
            "long-lived token exchange",
        )
        return grant

    def _account_lookup(self, token: str) -> dict[str, Any]:
        """``GET /me``: the connected account's id (required), name and picture."""
        me: dict[str, Any] = self._json(
            self._call(
                "GET",
                "/me",
                token=token,
                operation="account lookup",
                params={"fields": "id,username,name,threads_profile_picture_url"},
            ),
            "account lookup",
        )
        if not me.get("id"):
            raise ProviderError(ErrorKind.AUTH, f"{LABEL}: the account could not be read.")
        return me

    def can_refresh(self, *, credentials: dict[str, str]) -> bool:
        return bool(credentials.get("access_token"))

    def refresh(self, *, account: AccountContext) -> ConnectedAccount:
        """``GET /refresh_access_token?grant_type=th_refresh_token``: a new long-lived token
        for one at least 24 h old and unexpired (the previous one is not rotated away). Before
        24 h Threads would refuse: that is answered here, as a temporary failure, without a
        call (the next sweep tries again)."""
        token = self._token(account)
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
        grant = self._json(
            self._call(
                "GET",
                f"{self.api_url}/refresh_access_token",
                operation="token refresh",
                token_endpoint=True,
                params={"grant_type": "th_refresh_token", "access_token": token},
                extra_secrets=(token,),
            ),
            "token refresh",
        )
        credentials, expires_at = self._long_lived(grant)
        return ConnectedAccount(
            external_id=account.external_id,
            username=account.username,
            credentials=credentials,
            instance_url=account.instance_url or self.api_url,
            expires_at=expires_at,
            profile_url=self._profile_url(account.username),
        )

    # --- publish ------------------------------------------------------------------------------

    def publish(
        self, *, account: AccountContext, request: PublishRequest
    ) -> PublishResult | Pending:
        """Text and images: the container, its status polled here, then the publish. A post
        with a video is a long send: its containers, then :class:`Pending` while Threads fetches
        and processes the video, and :meth:`resume` publishes once every container is
        ``FINISHED`` (docs/decisions/0020-long-sends.md)."""
        self._check_request(account, request)
        token = self._token(account)
        user = quote(account.external_id, safe="")
        if any(video.is_video(item) for item in request.media):
            return self._send_video(token, user, request)
        container = self._container(token, user, request)
        self._wait_finished(token, container)
        return self.publish_container(account, container)

    def _check_request(self, account: AccountContext, request: PublishRequest) -> None:
        if request.profile != POST_PROFILE.key:
            raise ProviderError(ErrorKind.PERMANENT, f"{LABEL}: unknown format {request.profile}.")
        precheck(POST_PROFILE, request, provider=LABEL)
        if not request.text.strip() and not request.media:
            raise ProviderError(ErrorKind.PERMANENT, f"{LABEL}: a post needs text or an image.")
        for item in request.media:
            if not item.url.startswith(("https://", "http://")):
                raise ProviderError(
                    ErrorKind.PERMANENT,
                    f"{LABEL}: Threads fetches images and videos by URL, and {item.name} has "
                    "no public address (set HERALD_PUBLIC_URL, or use object storage).",
                )
        if not account.external_id:
            raise ProviderError(ErrorKind.AUTH, f"{LABEL}: the account id is unknown; reconnect.")

    def _send_video(self, token: str, user: str, request: PublishRequest) -> Pending:
        """The video's container, or a carousel's item containers (the carousel container
        is made in :meth:`resume` once they are finished)."""
        since = time.time()
        if len(request.media) == 1:
            fields = video.single_fields(request.media[0], request.text)
            return self._processing({"container": self._create(token, user, fields)}, since, 0)
        children = video.create_children(self, token, user, request.media)
        return self._processing({"children": children}, since, 0)

    def resume(
        self, *, account: AccountContext, request: PublishRequest, state: dict[str, Any]
    ) -> PublishResult | Pending:
        """A status read of each container not yet known finished: the carousel container once
        its items are finished, the publish once the post's container is; else
        :class:`Pending` again (``ERROR``, ``EXPIRED`` and the processing bound fail it)."""
        token = self._token(account)
        since = float(state.get("since") or time.time())
        checks = int(state.get("checks") or 0) + 1
        container = str(state.get("container") or "")
        waiting = [container] if container else [str(c) for c in state.get("children") or []]
        if not video.ready(self, token, waiting, started_at=since):
            return self._processing(state, since, checks)
        if container:
            return self.publish_container(account, container)
        user = quote(account.external_id, safe="")
        carousel = self._create(token, user, video.carousel_fields(waiting, request.text))
        return self._processing({"container": carousel}, since, checks)

    def _processing(self, state: dict[str, Any], since: float, checks: int) -> Pending:
        """Threads is processing: checked after ``video_check_seconds``, then half as long
        again each time, up to ``video_check_max_seconds`` (Threads advises about a minute)."""
        wait = min(self.video_check_seconds * 1.5**checks, self.video_check_max_seconds)
        return Pending(
            stage="processing",
            state={**state, "since": since, "checks": checks},
            check_after_seconds=wait,
        )

    def publish_container(self, account: AccountContext, container: str) -> PublishResult:
        """``POST /{user-id}/threads_publish`` of a ``FINISHED`` container: the post is live."""
        published = self._json(
            self._call(
                "POST",
                f"/{quote(account.external_id, safe='')}/threads_publish",
                token=self._token(account),
                operation="post",
                write=True,
                data={"creation_id": container},
            ),
            "post",
            write=True,
        )
        media_id = str(published.get("id") or "")
        if not media_id:
            raise ProviderError(
                ErrorKind.AMBIGUOUS, f"{LABEL}: the publish answer had no id; it may be live."
            )
        return PublishResult(external_id=media_id, external_url=self._permalink(account, media_id))

    def _create(self, token: str, user: str, fields: dict[str, str]) -> str:
        # Creating a container publishes nothing: a failure here is safe to retry.
        body = self._json(
            self._call(
                "POST", f"/{user}/threads", token=token, operation="post container", data=fields
            ),
            "post container",
        )
        container = str(body.get("id") or "")
        if not container:
            raise ProviderError(ErrorKind.TRANSIENT, f"{LABEL}: the container answer had no id.")
        return container

    def _container(self, token: str, user: str, request: PublishRequest) -> str:
        if not request.media:
            return self._create(token, user, {"media_type": "TEXT", "text": request.text})
        if len(request.media) == 1:
            return self._create(token, user, video.single_fields(request.media[0], request.text))
        children = video.create_children(self, token, user, request.media)
        for child in children:
            self._wait_finished(token, child)
        return self._create(token, user, video.carousel_fields(children, request.text))

    def _wait_finished(self, token: str, container: str) -> None:
        """Read the container's status until ``FINISHED`` (bounded; Threads fetches the image
        meanwhile; ``video.is_finished`` says what each status means). A status still
        ``IN_PROGRESS`` at the end is temporary."""
        for attempt in range(self.container_poll_attempts):
            if attempt:
                time.sleep(self.container_poll_seconds)
            if video.is_finished(*video.read_status(self, token, container)):
                return
        raise ProviderError(ErrorKind.TRANSIENT, f"{LABEL}: the post is still being processed.")

    def _permalink(self, account: AccountContext, media_id: str) -> str:
        """The post's ``permalink``. The post is live by now: a failure here never fails the
        publish (the profile URL stands in)."""
        try:
            post = self._media(self._token(account), media_id, "id,permalink")
        except ProviderError:
            post = None
        return self._post_url(account, post or {})

    # --- reconcile, delete, metrics -----------------------------------------------------------

    def _media(self, token: str, media_id: str, fields: str) -> dict[str, Any] | None:
        """``GET /{media-id}``; ``None`` when Threads says it does not exist."""
        try:
            response = self._call(
                "GET",
                f"/{quote(media_id, safe='')}",
                token=token,
                operation="post lookup",
                params={"fields": fields},
            )
        except ProviderHTTPError as exc:
            if gone(exc):
                return None
            raise
        body = self._json(response, "post lookup")
        return body if body.get("id") else None

    def reconcile(
        self, *, account: AccountContext, request: PublishRequest, external_id: str = ""
    ) -> PublishResult | None:
        """Find the post of an earlier attempt (Threads has no idempotency key).

        1. ``external_id`` known: ``GET /{media-id}`` (gone -> ``None``).
        2. Otherwise the account's own posts since the first attempt (minus 5 min):
           ``GET /{user-id}/threads`` (up to 3 pages of 100), a post of the same kind (text,
           image, video, carousel) with the same text.
        3. Not found: ``None`` when those pages covered the whole window (no next page), else
           :class:`CannotReconcile`.
        """
        token = self._token(account)
        if external_id:
            post = self._media(token, external_id, "id,permalink")
            if post is None:
                return None
            return PublishResult(
                external_id=str(post["id"]), external_url=self._post_url(account, post)
            )
        if not account.external_id:
            raise CannotReconcile(f"{LABEL}: the account id is unknown; check the account.")
        since = request.first_attempt_at - RECONCILE_SLACK if request.first_attempt_at else None
        wanted = comparable_text(request.text)
        kind = _post_kind(request.media)
        params: dict[str, Any] = {
            "fields": "id,text,timestamp,permalink,media_type",
            "limit": RECENT_PAGE,
        }
        if since is not None:
            params["since"] = int(since.timestamp())
        path = f"/{quote(account.external_id, safe='')}/threads"
        for _ in range(RECENT_PAGES):
            body = self._json(
                self._call("GET", path, token=token, operation="recent posts", params=params),
                "recent posts",
            )
            for post in body.get("data") or []:
                if not isinstance(post, dict) or not post.get("id"):
                    continue
                created = post_timestamp(post)
                if since is not None and created is not None and created < since:
                    continue
                if str(post.get("media_type") or kind) != kind:
                    continue
                if comparable_text(str(post.get("text") or "")) == wanted:
                    return PublishResult(
                        external_id=str(post["id"]), external_url=self._post_url(account, post)
                    )
            paging = body.get("paging") or {}
            after = (paging.get("cursors") or {}).get("after")
            if not paging.get("next") or not after:
                return None  # every post since the window start (or ever) was seen
            params["after"] = after
        raise CannotReconcile(
            f"{LABEL}: cannot tell whether the earlier attempt was published; check the account."
        )

    def delete(self, *, account: AccountContext, external_id: str) -> None:
        """``DELETE /{media-id}`` (permission ``threads_delete``; 100 deletions a day)."""
        try:
            self._call(
                "DELETE",
                f"/{quote(external_id, safe='')}",
                token=self._token(account),
                operation="post deletion",
            )
        except ProviderHTTPError as exc:
            if not gone(exc):  # already gone
                raise

    def metrics(self, *, account: AccountContext, external_id: str) -> Metrics:
        """``GET /{media-id}/insights?metric=views,likes,replies,reposts,quotes``."""
        try:
            response = self._call(
                "GET",
                f"/{quote(external_id, safe='')}/insights",
                token=self._token(account),
                operation="insights",
                params={"metric": "views,likes,replies,reposts,quotes"},
            )
        except ProviderHTTPError as exc:
            if gone(exc):
                raise ProviderError(
                    ErrorKind.PERMANENT, f"{LABEL}: the post no longer exists."
                ) from exc
            raise
        counts: dict[str, int] = {}
        for entry in self._json(response, "insights").get("data") or []:
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
        return Metrics(
            likes=counts.get("likes", 0),
            comments=counts.get("replies", 0),
            reposts=counts.get("reposts", 0) + counts.get("quotes", 0),
            views=counts.get("views", 0),
        )
