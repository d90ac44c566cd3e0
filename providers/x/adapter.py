"""The X adapter: connect (the operator's OAuth 2 app, PKCE), refresh with rotation, revoke,
posts with images through the chunked media upload, reconcile, delete and metrics on the X API
v2. See docs/providers/x.md."""

from __future__ import annotations

import base64
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
from providers.helpers import precheck, read_media
from providers.http import HttpClient
from providers.http_errors import (
    CannotReconcile,
    ErrorDetail,
    ProviderHTTPError,
    default_error_detail,
)
from providers.oauth_http import OAuthHttpAdapter
from providers.pkce import pkce_pair
from providers.x import video as video_protocol
from providers.x.text import POST_PROFILE, comparable_text

PROVIDER = "x"
LABEL = "X"
DEFAULT_API_URL = "https://api.x.com"
DEFAULT_AUTHORIZE_URL = "https://x.com/i/oauth2/authorize"
SCOPES = ("tweet.read", "tweet.write", "users.read", "media.write", "offline.access")
PUBLIC_URL = "https://x.com"
RECONCILE_SLACK = timedelta(minutes=5)
RECENT_PAGE = 100  # max_results of GET /2/users/:id/tweets
RECENT_PAGES = 3
_TOKEN_ERRORS = {"invalid_grant", "invalid_request", "invalid_client", "unauthorized_client"}


def _header(headers: Any, name: str) -> str:
    return str(headers.get(name) or "").strip()


def _rate_limit_reset(response: requests.Response) -> float | None:
    """Seconds until ``x-rate-limit-reset`` (epoch seconds), X's own rate-limit header."""
    value = _header(response.headers, "x-rate-limit-reset")
    try:
        return max(0.0, round(float(value) - time.time(), 3)) if value else None
    except ValueError:
        return None


def _parse_error(response: requests.Response) -> ErrorDetail:
    """X's error shapes: OAuth ``{"error", "error_description"}`` from the token endpoints,
    problem objects ``{"title", "detail", "type", "status"}`` and ``{"errors": [...]}`` from
    the API. A 403 for duplicate content is the provider refusing this text, not an auth
    failure; a refused token (``invalid_grant``, or X's ``invalid_request`` "Value passed for
    the token was invalid") means the user must reconnect."""
    detail = default_error_detail(response)
    retry_after = _rate_limit_reset(response) if response.status_code == 429 else None
    try:
        body = response.json()
    except ValueError:
        body = {}
    body = body if isinstance(body, dict) else {}
    error = str(body.get("error") or "")
    if error in _TOKEN_ERRORS:
        return ErrorDetail(message=detail.message, kind=ErrorKind.AUTH, code="invalid_grant")
    messages = [str(body.get("detail") or body.get("title") or "")]
    for item in body.get("errors") or []:
        if isinstance(item, dict) and item.get("message"):
            messages.append(str(item["message"]))
    message = " - ".join(m for m in messages if m)[:400] or detail.message
    if response.status_code == 403 and "duplicate" in message.lower():
        return ErrorDetail(message=message, kind=ErrorKind.PERMANENT, code="duplicate")
    return ErrorDetail(message=message, retry_after=retry_after, code=str(body.get("type") or ""))


def _is_video(item: MediaItem) -> bool:
    return item.mime_type.startswith("video/")


def _created_at(post: dict[str, Any]) -> datetime | None:
    try:
        moment = datetime.fromisoformat(str(post.get("created_at", "")).replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _rfc3339(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class XAdapter(OAuthHttpAdapter):
    label = LABEL
    error_parser = staticmethod(_parse_error)
    capabilities = Capabilities(
        provider=PROVIDER,
        display_name=LABEL,
        connection=ConnectionMode.OAUTH2,
        pkce=True,
        required_scopes=SCOPES,
        profiles=(POST_PROFILE,),
        account_kind="user",
        supports_refresh=True,  # refresh tokens (offline.access) rotate on every use
        supports_revoke=True,
        supports_metrics=True,
    )
    chunk_bytes = 1024 * 1024  # APPEND segment size (X accepts up to 5 MB per segment)
    media_poll_attempts = 10  # STATUS polls while FINALIZE reports processing
    media_poll_cap = 5.0  # seconds; X's check_after_secs, bounded
    video_segment_bytes = 4 * 1024 * 1024  # a video's APPEND segments (providers/x/video.py)
    video_check_seconds = 1.0  # the least wait between two STATUS reads of a processing video
    video_check_max_seconds = 60.0

    def __init__(self, *, http: HttpClient | None = None, app: dict[str, Any] | None = None):
        self.http = http or HttpClient()
        app = dict(app or {})
        self.client_id = str(app.get("client_id") or "")
        self.client_secret = str(app.get("client_secret") or "")
        self.api_url = str(app.get("api_url") or DEFAULT_API_URL).rstrip("/")
        self.authorize_url = str(app.get("authorize_url") or DEFAULT_AUTHORIZE_URL)
        self.token_url = str(app.get("token_url") or f"{self.api_url}/2/oauth2/token")
        self.revoke_url = str(app.get("revoke_url") or f"{self.api_url}/2/oauth2/revoke")

    # --- plumbing ---------------------------------------------------------------------------

    def _require_app(self) -> None:
        if not self.client_id or not self.client_secret:
            raise ProviderError(
                ErrorKind.PERMANENT,
                f"{LABEL}: the app is not configured (HERALD_X_CLIENT_ID, HERALD_X_CLIENT_SECRET).",
            )

    def _basic(self) -> str:
        pair = f"{quote(self.client_id, safe='')}:{quote(self.client_secret, safe='')}"
        return "Basic " + base64.b64encode(pair.encode()).decode("ascii")

    def _token_call(self, data: dict[str, str], operation: str, secrets: tuple[str, ...]) -> Any:
        self._require_app()
        response = self._call(
            "POST",
            self.token_url,
            operation=operation,
            headers={"Authorization": self._basic()},
            data={**data, "client_id": self.client_id},
            extra_secrets=(self._basic(), *secrets),
        )
        grant = self._json(response, operation)
        if not grant.get("access_token"):
            raise ProviderError(ErrorKind.AUTH, f"{LABEL}: the token answer had no access token.")
        return grant

    @staticmethod
    def _grant_credentials(
        grant: dict[str, Any], previous_refresh: str = ""
    ) -> tuple[dict[str, str], datetime | None, tuple[str, ...]]:
        # A refresh token is never replaced by nothing.
        refresh = str(grant.get("refresh_token") or previous_refresh)
        credentials = {"access_token": str(grant["access_token"]), "refresh_token": refresh}
        try:
            seconds = int(float(grant.get("expires_in") or 0))
        except (TypeError, ValueError):
            seconds = 0
        expires_at = datetime.now(UTC) + timedelta(seconds=seconds) if seconds > 0 else None
        scopes = tuple(str(grant.get("scope") or "").split())
        return credentials, expires_at, scopes

    def _post_url(self, account: AccountContext, post_id: str) -> str:
        if account.username:
            return f"{PUBLIC_URL}/{quote(account.username, safe='')}/status/{post_id}"
        return f"{PUBLIC_URL}/i/web/status/{post_id}"

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
        verifier, challenge = pkce_pair()
        query = urlencode(
            {
                "response_type": "code",
                "client_id": self.client_id,
                "redirect_uri": redirect_uri,
                "scope": " ".join(SCOPES),
                "state": state,
                "code_challenge": challenge,
                "code_challenge_method": "S256",
            }
        )
        return AuthorizationStart(
            authorization_url=f"{self.authorize_url}?{query}", code_verifier=verifier
        )

    def complete_authorization(
        self,
        *,
        code: str,
        redirect_uri: str,
        code_verifier: str,
        instance_url: str = "",
        app: dict[str, str] | None = None,
    ) -> ConnectedAccount:
        grant = self._token_call(
            {
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": redirect_uri,
                "code_verifier": code_verifier,
            },
            "token exchange",
            (code, code_verifier),
        )
        credentials, expires_at, scopes = self._grant_credentials(grant)
        response = self._call(
            "GET",
            "/2/users/me",
            token=credentials["access_token"],
            operation="account lookup",
            params={"user.fields": "profile_image_url"},
            extra_secrets=(credentials["refresh_token"],),
        )
        me = self._json(response, "account lookup").get("data") or {}
        if not me.get("id"):
            raise ProviderError(ErrorKind.AUTH, f"{LABEL}: the account could not be read.")
        username = str(me.get("username") or "")
        return ConnectedAccount(
            external_id=str(me["id"]),
            username=username,
            display_name=str(me.get("name") or ""),
            avatar_url=str(me.get("profile_image_url") or ""),
            credentials=credentials,
            # The API base: the delivery service's per-host limits and 429 pauses key on it.
            instance_url=self.api_url,
            granted_scopes=scopes or SCOPES,
            expires_at=expires_at,
            profile_url=f"{PUBLIC_URL}/{quote(username, safe='')}" if username else "",
        )

    def can_refresh(self, *, credentials: dict[str, str]) -> bool:
        return bool(credentials.get("refresh_token"))  # only with offline.access

    def refresh(self, *, account: AccountContext) -> ConnectedAccount:
        """``grant_type=refresh_token``. X rotates the refresh token on every use (the previous
        one stops working): the caller must store the returned credentials before anything
        else. No profile read here, so nothing runs between the reply and that store."""
        refresh_token = account.credentials.get("refresh_token", "")
        if not refresh_token:
            raise ProviderError(
                ErrorKind.AUTH, f"{LABEL}: no refresh token; reconnect the account."
            )
        grant = self._token_call(
            {"grant_type": "refresh_token", "refresh_token": refresh_token},
            "token refresh",
            (refresh_token, account.credentials.get("access_token", "")),
        )
        credentials, expires_at, scopes = self._grant_credentials(grant, refresh_token)
        username = account.username
        return ConnectedAccount(
            external_id=account.external_id,
            username=username,
            credentials=credentials,
            instance_url=account.instance_url or self.api_url,
            granted_scopes=scopes,
            expires_at=expires_at,
            profile_url=f"{PUBLIC_URL}/{quote(username, safe='')}" if username else "",
        )

    def revoke(self, *, account: AccountContext) -> None:
        """``POST /2/oauth2/revoke`` for the refresh token (the grant) and the access token."""
        self._require_app()
        for hint in ("refresh_token", "access_token"):
            token = account.credentials.get(hint, "")
            if not token:
                continue
            self._call(
                "POST",
                self.revoke_url,
                operation="token revocation",
                headers={"Authorization": self._basic()},
                data={"token": token, "token_type_hint": hint, "client_id": self.client_id},
                extra_secrets=(token, self._basic()),
            )

    # --- publish ------------------------------------------------------------------------------

    def publish(
        self, *, account: AccountContext, request: PublishRequest
    ) -> PublishResult | Pending:
        """Images are uploaded and posted here. A video is a long send: uploaded in segments,
        then :class:`Pending` while X processes it, and :meth:`resume` posts it once
        ``succeeded`` (docs/decisions/0020-long-sends.md)."""
        if request.profile != POST_PROFILE.key:
            raise ProviderError(ErrorKind.PERMANENT, f"{LABEL}: unknown format {request.profile}.")
        precheck(POST_PROFILE, request, provider=LABEL)
        alone = [m for m in request.media if m.mime_type == "image/gif" or _is_video(m)]
        if alone and len(request.media) > 1:
            raise ProviderError(
                ErrorKind.PERMANENT,
                f"{LABEL}: a GIF or a video must be the only media item of a post.",
            )
        token = self._token(account)
        if alone and _is_video(alone[0]):
            return self._send_video(account, token, request)
        media_ids = [self._upload(token, item) for item in request.media]
        return self.create_post(account, token, request.text, media_ids)

    def _send_video(
        self, account: AccountContext, token: str, request: PublishRequest
    ) -> PublishResult | Pending:
        media_id, processing = video_protocol.send(self, token, request.media[0])
        if processing.done:  # nothing for X to process
            return self._post_video(account, token, request, media_id)
        return self._processing({"media_id": media_id, "since": time.time()}, processing)

    def resume(
        self, *, account: AccountContext, request: PublishRequest, state: dict[str, Any]
    ) -> PublishResult | Pending:
        """One ``STATUS`` read of the video; the post once it ``succeeded``, else
        :class:`Pending` again (``failed`` and the processing bound fail it)."""
        token = self._token(account)
        media_id = str(state.get("media_id") or "")
        since = float(state.get("since") or time.time())
        processing = video_protocol.ready(self, token, media_id, started_at=since)
        if not processing.done:
            return self._processing(state, processing)
        return self._post_video(account, token, request, media_id)

    def _processing(self, state: dict[str, Any], processing: video_protocol.Processing) -> Pending:
        """X is processing the video: checked again after X's ``check_after_secs`` (at least
        ``video_check_seconds``, at most ``video_check_max_seconds``)."""
        wait = min(
            max(processing.check_after_secs, self.video_check_seconds),
            self.video_check_max_seconds,
        )
        checks = int(state.get("checks") or 0) + 1
        return Pending(
            stage="processing", state={**state, "checks": checks}, check_after_seconds=wait
        )

    def _post_video(
        self, account: AccountContext, token: str, request: PublishRequest, media_id: str
    ) -> PublishResult:
        alt_text = request.media[0].alt_text if request.media else ""
        self.describe_media(token, media_id, alt_text)
        return self.create_post(account, token, request.text, [media_id])

    def create_post(
        self, account: AccountContext, token: str, text: str, media_ids: list[str]
    ) -> PublishResult:
        """``POST /2/tweets`` with media X has processed (images here, a video from
        ``video``)."""
        body: dict[str, Any] = {"text": text}
        if media_ids:
            body["media"] = {"media_ids": media_ids}
        response = self._call(
            "POST",
            "/2/tweets",
            token=token,
            operation="post",
            write=True,
            json_body=body,
        )
        post = self._json(response, "post", write=True).get("data") or {}
        if not post.get("id"):
            raise ProviderError(ErrorKind.AMBIGUOUS, f"{LABEL}: the post answer had no id.")
        post_id = str(post["id"])
        return PublishResult(external_id=post_id, external_url=self._post_url(account, post_id))

    def _upload(self, token: str, item: MediaItem) -> str:
        """INITIALIZE, APPEND (segments), FINALIZE, then STATUS while processing. Every step is
        retried like a read: an unfinished or unused upload expires at X on its own."""
        payload = read_media(item, provider=LABEL, max_bytes=POST_PROFILE.media.max_bytes)
        category = "tweet_gif" if item.mime_type == "image/gif" else "tweet_image"
        init = self._json(
            self._call(
                "POST",
                "/2/media/upload/initialize",
                token=token,
                operation="media upload",
                json_body={
                    "media_type": item.mime_type,
                    "total_bytes": len(payload),
                    "media_category": category,
                },
            ),
            "media upload",
        )
        media_id = str((init.get("data") or {}).get("id") or "")
        if not media_id:
            raise ProviderError(ErrorKind.TRANSIENT, f"{LABEL}: the upload answer had no id.")
        path = f"/2/media/upload/{quote(media_id, safe='')}"
        for index, offset in enumerate(range(0, len(payload), self.chunk_bytes)):
            self._call(
                "POST",
                f"{path}/append",
                token=token,
                operation="media upload",
                ok=(200, 201, 202, 204),
                data={"segment_index": str(index)},
                files={"media": (item.name, payload[offset : offset + self.chunk_bytes])},
            )
        final = self._json(
            self._call("POST", f"{path}/finalize", token=token, operation="media upload"),
            "media upload",
        )
        self._wait_processed(token, media_id, (final.get("data") or {}).get("processing_info"))
        self.describe_media(token, media_id, item.alt_text)
        return media_id

    def describe_media(self, token: str, media_id: str, alt_text: str) -> None:
        """``POST /2/media/metadata``: the alt text of an upload (none: no call)."""
        if not alt_text:
            return
        self._call(
            "POST",
            "/2/media/metadata",
            token=token,
            operation="media description",
            json_body={"id": media_id, "metadata": {"alt_text": {"text": alt_text[:1000]}}},
        )

    def _wait_processed(self, token: str, media_id: str, info: Any) -> None:
        """An image or GIF X is still processing, polled in the call (bounded, read-only)."""
        processing = video_protocol.processing_of(info)
        for _ in range(self.media_poll_attempts):
            if processing.done:
                return
            if processing.state == video_protocol.FAILED:
                raise ProviderError(
                    ErrorKind.PERMANENT,
                    f"{LABEL}: the media was refused: {processing.error or 'failed'}",
                )
            time.sleep(min(processing.check_after_secs, self.media_poll_cap))
            processing = video_protocol.status(self, token, media_id, operation="media status")
        raise ProviderError(ErrorKind.TRANSIENT, f"{LABEL}: the media is still being processed.")

    # --- reconcile, delete, metrics -----------------------------------------------------------

    def _post(self, token: str, post_id: str, fields: str) -> dict[str, Any] | None:
        """``GET /2/tweets/:id``; ``None`` when X says the post does not exist (a 404, or a 200
        whose ``errors`` name the id as not found)."""
        try:
            response = self._call(
                "GET",
                f"/2/tweets/{quote(post_id, safe='')}",
                token=token,
                operation="post lookup",
                params={"tweet.fields": fields},
            )
        except ProviderHTTPError as exc:
            if exc.status == 404:
                return None
            raise
        body = self._json(response, "post lookup")
        data = body.get("data")
        return data if isinstance(data, dict) and data.get("id") else None

    def reconcile(
        self, *, account: AccountContext, request: PublishRequest, external_id: str = ""
    ) -> PublishResult | None:
        """Find the post of an earlier attempt (X has no idempotency key); see
        docs/providers/x.md.

        1. ``external_id`` known: ``GET /2/tweets/:id`` (not found -> ``None``).
        2. Otherwise the account's own posts since the first attempt (minus 5 min):
           ``GET /2/users/:id/tweets`` (replies and reposts excluded, up to 3 pages of 100), a
           post with the same text (links compared as X rewrites them) and media count.
        3. Not found: ``None`` when those pages covered the whole window (no ``next_token``
           left: safe to send again), else :class:`CannotReconcile`.
        """
        token = self._token(account)
        if external_id:
            post = self._post(token, external_id, "created_at")
            if post is None:
                return None
            return PublishResult(
                external_id=str(post["id"]), external_url=self._post_url(account, str(post["id"]))
            )
        if not account.external_id:
            raise CannotReconcile(f"{LABEL}: the account id is unknown; check the account.")
        return self._find_in_recent_posts(token, account, request)

    def _find_in_recent_posts(
        self, token: str, account: AccountContext, request: PublishRequest
    ) -> PublishResult | None:
        """Steps 2 and 3 of :meth:`reconcile`: page through the account's own recent posts."""
        since = request.first_attempt_at - RECONCILE_SLACK if request.first_attempt_at else None
        wanted = comparable_text(request.text)
        params: dict[str, Any] = {
            "max_results": RECENT_PAGE,
            "exclude": "replies,retweets",
            "tweet.fields": "created_at,attachments",
        }
        if since is not None:
            params["start_time"] = _rfc3339(since)
        for _ in range(RECENT_PAGES):
            body = self._json(
                self._call(
                    "GET",
                    f"/2/users/{quote(account.external_id, safe='')}/tweets",
                    token=token,
                    operation="recent posts",
                    params=params,
                ),
                "recent posts",
            )
            post_id = _matching_post_id(
                body.get("data") or [], since=since, text=wanted, media_count=len(request.media)
            )
            if post_id:
                return PublishResult(
                    external_id=post_id, external_url=self._post_url(account, post_id)
                )
            next_token = (body.get("meta") or {}).get("next_token")
            if not next_token:
                return None  # every post since the window start (or ever) was seen
            params["pagination_token"] = next_token
        raise CannotReconcile(
            f"{LABEL}: cannot tell whether the earlier attempt was published; check the account."
        )

    def delete(self, *, account: AccountContext, external_id: str) -> None:
        try:
            self._call(
                "DELETE",
                f"/2/tweets/{quote(external_id, safe='')}",
                token=self._token(account),
                operation="post deletion",
            )
        except ProviderHTTPError as exc:
            if exc.status != 404:  # already gone
                raise

    def metrics(self, *, account: AccountContext, external_id: str) -> Metrics:
        post = self._post(self._token(account), external_id, "public_metrics")
        if post is None:
            raise ProviderError(ErrorKind.PERMANENT, f"{LABEL}: the post no longer exists.")
        counts = post.get("public_metrics") or {}
        return Metrics(
            likes=int(counts.get("like_count") or 0),
            comments=int(counts.get("reply_count") or 0),
            reposts=int(counts.get("retweet_count") or 0) + int(counts.get("quote_count") or 0),
            views=int(counts.get("impression_count") or 0),
        )


def _matching_post_id(
    posts: list[Any], *, since: datetime | None, text: str, media_count: int
) -> str:
    """The id of the first post created since ``since`` with that comparable text and that
    many media, or ``""``."""
    for post in posts:
        if not isinstance(post, dict) or not post.get("id"):
            continue
        created = _created_at(post)
        if since is not None and created is not None and created < since:
            continue
        keys = (post.get("attachments") or {}).get("media_keys") or []
        if len(keys) != media_count:
            continue
        if comparable_text(str(post.get("text") or "")) == text:
            return str(post["id"])
    return ""
