"""The TikTok adapter: connect (Login Kit, OAuth 2 with ``client_key`` and PKCE), refresh
(TikTok answers a new refresh token), revoke, the creator info asked before every post, direct
video posts uploaded in chunks as a long send whose publish status is polled, reconcile by the
stored ``publish_id``, and metrics. See docs/providers/tiktok.md."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlencode

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
from providers.http_errors import ErrorDetail, ProviderHTTPError, default_error_detail
from providers.oauth_http import OAuthHttpAdapter
from providers.pkce import pkce_pair
from providers.tiktok.profiles import (
    MAX_CHUNK,
    MIN_CHUNK,
    PRIVATE,
    PROFILES,
    chunk_bounds,
    chunk_plan,
    profiles_for,
)

PROVIDER = "tiktok"
PHOTO_KEY = "tiktok.photo"
LABEL = "TikTok"
DEFAULT_API_URL = "https://open.tiktokapis.com"
DEFAULT_AUTHORIZE_URL = "https://www.tiktok.com/v2/auth/authorize/"
PUBLIC_URL = "https://www.tiktok.com"
# Read the profile, post directly, read the account's videos (metrics).
SCOPES = ("user.info.basic", "user.info.profile", "video.publish", "video.list")
USER_FIELDS = "open_id,union_id,avatar_url,display_name,username,profile_deep_link"
METRIC_FIELDS = "id,like_count,comment_count,share_count,view_count"
RATE_WINDOW_SECONDS = 60.0  # TikTok's rate limits are per user token per minute
POSTING_LIMIT_SECONDS = 3600.0
POSTING_LIMIT = "posting_limit"
MAX_POLLS = 360  # status checks of one send before it is handed to reconcile
_AUTH_CODES = {"access_token_invalid", "scope_not_authorized", "scope_permission_missed"}
_TOKEN_ERRORS = {"invalid_grant", "invalid_request", "invalid_client", "unauthorized_client"}
_WAIT_CODES = {"spam_risk_too_many_posts", "reached_active_user_cap"}
PROCESSING = ("PROCESSING_UPLOAD", "PROCESSING_DOWNLOAD")
DONE = ("PUBLISH_COMPLETE", "SEND_TO_USER_INBOX")


def _parse_error(response: requests.Response) -> ErrorDetail:
    """TikTok's shapes: ``{"error": "invalid_grant", "error_description", "log_id"}`` from the
    OAuth endpoints; ``{"data": {}, "error": {"code", "message", "log_id"}}`` from the API. The
    code decides: an invalid token or missing scope needs a reconnect, a rate limit or the
    creator's posting cap is a wait, anything else refuses this request."""
    detail = default_error_detail(response)
    try:
        body = response.json()
    except ValueError:
        body = {}
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, str):
        if error in _TOKEN_ERRORS:
            return ErrorDetail(message=detail.message, kind=ErrorKind.AUTH, code="invalid_grant")
        return detail
    if not isinstance(error, dict):
        return detail
    code = str(error.get("code") or "")
    message = f"{error.get('message') or detail.message} ({code})"[:400]
    kind: ErrorKind | None = None
    if code in _AUTH_CODES or response.status_code == 401:
        kind = ErrorKind.AUTH
    elif code == "rate_limit_exceeded" or code in _WAIT_CODES:
        kind = ErrorKind.RATE_LIMITED
    elif response.status_code in (400, 403, 404):
        kind = ErrorKind.PERMANENT
    return ErrorDetail(message=message, kind=kind, code=code)


def _flag(options: dict[str, str], name: str) -> bool:
    return options.get(name) == "true"


class TikTokAdapter(OAuthHttpAdapter):
    label = LABEL
    error_parser = staticmethod(_parse_error)
    capabilities = Capabilities(
        provider=PROVIDER,
        display_name=LABEL,
        connection=ConnectionMode.OAUTH2,
        pkce=True,
        required_scopes=("user.info.basic", "video.publish"),
        profiles=PROFILES,
        account_kind="creator",
        supports_refresh=True,  # a refresh token of 365 days, renewed on every refresh
        supports_revoke=True,
        supports_metrics=True,
        supports_destination_options=True,
    )
    chunk_bytes = MAX_CHUNK  # chunks of the upload (5 to 64 MB)
    min_chunk = MIN_CHUNK  # TikTok's lower bound (tests shrink it with the stand-in's)
    upload_check_seconds = 0.5
    status_check_seconds = 5.0

    def __init__(self, *, http: HttpClient | None = None, app: dict[str, Any] | None = None):
        self.http = http or HttpClient()
        app = dict(app or {})
        self.client_key = str(app.get("client_id") or "")
        self.client_secret = str(app.get("client_secret") or "")
        self.api_url = str(app.get("api_url") or DEFAULT_API_URL).rstrip("/")
        self.authorize_url = str(app.get("authorize_url") or DEFAULT_AUTHORIZE_URL)
        self.token_url = str(app.get("token_url") or f"{self.api_url}/v2/oauth/token/")
        self.revoke_url = str(app.get("revoke_url") or f"{self.api_url}/v2/oauth/revoke/")
        extra = list(str(app.get("scopes") or "").replace(",", " ").split())
        self.scopes = SCOPES + tuple(x for x in extra if x not in SCOPES)
        # An app TikTok has not audited may only post to private (SELF_ONLY) accounts.
        self.audited = str(app.get("audited") or "").lower() in ("1", "true", "yes", "on")
        self.verified_prefixes = tuple(
            p for p in str(app.get("verified_url_prefixes") or "").split() if "://" in p
        )
        self.capabilities = replace(type(self).capabilities, profiles=profiles_for(self.audited))

    # --- plumbing ---------------------------------------------------------------------------

    def _require_app(self) -> None:
        if not self.client_key or not self.client_secret:
            raise ProviderError(
                ErrorKind.PERMANENT,
                f"{LABEL}: the app is not configured "
                "(HERALD_TIKTOK_CLIENT_KEY, HERALD_TIKTOK_CLIENT_SECRET).",
            )

    def _call(self, method: str, path_or_url: str, **kwargs: Any) -> requests.Response:
        """A rate limit holds this user's calls to the endpoint for TikTok's minute window;
        the creator's posting cap holds their posts for an hour. Both are waits of this
        account only (other creators go on)."""
        try:
            return super()._call(method, path_or_url, **kwargs)
        except ProviderHTTPError as exc:
            if exc.kind != ErrorKind.RATE_LIMITED:
                raise
            posting_cap = exc.code in _WAIT_CODES
            raise ProviderError(
                ErrorKind.RATE_LIMITED,
                exc.message,
                retry_after=POSTING_LIMIT_SECONDS if posting_cap else RATE_WINDOW_SECONDS,
                status=exc.status,
                host_wide=False,
                wait_reason=POSTING_LIMIT if posting_cap else "",
            ) from exc

    def _api(self, path: str, token: str, operation: str, **kwargs: Any) -> dict[str, Any]:
        """A call of the Content Posting or Display API: its ``data`` object."""
        response = self._call(
            kwargs.pop("method", "POST"),
            path,
            token=token,
            operation=operation,
            headers={"Content-Type": "application/json; charset=UTF-8"},
            **kwargs,
        )
        data = self._json(response, operation).get("data")
        return data if isinstance(data, dict) else {}

    def _token_call(self, data: dict[str, str], operation: str, secrets: tuple[str, ...]) -> Any:
        """TikTok's token endpoint takes ``client_key`` and ``client_secret`` in the form."""
        self._require_app()
        response = self._call(
            "POST",
            self.token_url,
            operation=operation,
            data={**data, "client_key": self.client_key, "client_secret": self.client_secret},
            headers={"Content-Type": "application/x-www-form-urlencoded"},
            extra_secrets=secrets,
        )
        grant = self._json(response, operation)
        if grant.get("error") or not grant.get("access_token"):
            raise ProviderError(ErrorKind.AUTH, f"{LABEL}: the token answer had no access token.")
        return grant

    @staticmethod
    def _grant(grant: dict[str, Any]) -> tuple[dict[str, str], datetime | None, tuple[str, ...]]:
        credentials = {
            "access_token": str(grant["access_token"]),
            "refresh_token": str(grant.get("refresh_token") or ""),
            "open_id": str(grant.get("open_id") or ""),
        }
        try:
            refresh_seconds = int(grant.get("refresh_expires_in") or 0)
        except (TypeError, ValueError):
            refresh_seconds = 0
        if refresh_seconds > 0:
            until = datetime.now(UTC) + timedelta(seconds=refresh_seconds)
            credentials["refresh_expires_at"] = until.isoformat()
        try:
            seconds = int(grant.get("expires_in") or 0)
        except (TypeError, ValueError):
            seconds = 0
        expires_at = datetime.now(UTC) + timedelta(seconds=seconds) if seconds > 0 else None
        scopes = tuple(str(grant.get("scope") or "").replace(",", " ").split())
        return credentials, expires_at, scopes

    # --- connect ------------------------------------------------------------------------------

    def begin_authorization(
        self,
        *,
        redirect_uri: str,
        state: str,
        instance_url: str = "",
        app: dict[str, str] | None = None,
    ) -> AuthorizationStart:
        """Login Kit's authorization page: ``client_key``, comma-separated scopes, PKCE S256."""
        self._require_app()
        verifier, challenge = pkce_pair()
        query = urlencode(
            {
                "client_key": self.client_key,
                "response_type": "code",
                "scope": ",".join(self.scopes),
                "redirect_uri": redirect_uri,
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
        credentials, expires_at, scopes = self._grant(grant)
        user = self._api(
            "/v2/user/info/",
            credentials["access_token"],
            "user info",
            method="GET",
            params={"fields": USER_FIELDS},
        ).get("user")
        user = user if isinstance(user, dict) else {}
        open_id = str(user.get("open_id") or credentials["open_id"])
        if not open_id:
            raise ProviderError(ErrorKind.AUTH, f"{LABEL}: the grant named no user.")
        username = str(user.get("username") or "")
        return ConnectedAccount(
            external_id=open_id,
            username=username or str(user.get("display_name") or open_id),
            display_name=str(user.get("display_name") or username),
            avatar_url=str(user.get("avatar_url") or ""),
            credentials=credentials,
            instance_url=self.api_url,
            account_kind="creator",
            granted_scopes=scopes or self.scopes,
            expires_at=expires_at,
            profile_url=f"{PUBLIC_URL}/@{username}" if username else "",
        )

    def can_refresh(self, *, credentials: dict[str, str]) -> bool:
        return bool(credentials.get("refresh_token"))

    def refresh(self, *, account: AccountContext) -> ConnectedAccount:
        """``grant_type=refresh_token``: a new access token (24 hours) and a new refresh token
        (its 365 days start again)."""
        refresh_token = account.credentials.get("refresh_token", "")
        if not refresh_token:
            raise ProviderError(ErrorKind.AUTH, f"{LABEL}: no refresh token; reconnect.")
        grant = self._token_call(
            {"grant_type": "refresh_token", "refresh_token": refresh_token},
            "token refresh",
            (refresh_token, account.credentials.get("access_token", "")),
        )
        if not grant.get("refresh_token"):
            grant["refresh_token"] = refresh_token
        credentials, expires_at, scopes = self._grant(grant)
        credentials["open_id"] = credentials["open_id"] or account.external_id
        return ConnectedAccount(
            external_id=account.external_id,
            username=account.username,
            credentials=credentials,
            instance_url=account.instance_url or self.api_url,
            account_kind="creator",
            granted_scopes=scopes,
            expires_at=expires_at,
        )

    def revoke(self, *, account: AccountContext) -> None:
        """``POST /v2/oauth/revoke/`` with the access token: the whole grant ends. A token
        TikTok no longer knows is already revoked."""
        token = account.credentials.get("access_token", "")
        if not token:
            return
        self._require_app()
        try:
            self._call(
                "POST",
                self.revoke_url,
                operation="token revocation",
                data={
                    "client_key": self.client_key,
                    "client_secret": self.client_secret,
                    "token": token,
                },
                extra_secrets=(token,),
            )
        except ProviderError as exc:
            if exc.kind not in (ErrorKind.AUTH, ErrorKind.PERMANENT):
                raise

    # --- creator info, options ----------------------------------------------------------------

    def creator_info(self, token: str) -> dict[str, Any]:
        """``creator_info/query``: the privacy levels the creator may post with, whether they
        turned comments, duets and stitches off, and their longest video."""
        return self._api("/v2/post/publish/creator_info/query/", token, "creator info")

    def destination_options(
        self, *, account: AccountContext, region_code: str = "US", language: str = "en"
    ) -> dict[str, list[dict[str, str]]]:
        info = self.creator_info(self._token(account))
        levels = [str(x) for x in info.get("privacy_level_options") or []]
        if not self.audited:
            levels = [x for x in levels if x == PRIVATE]
        options: dict[str, list[dict[str, str]]] = {
            "privacy_level": [{"label": x.replace("_", " ").title(), "value": x} for x in levels],
            "max_video_post_duration_sec": [
                {"label": "seconds", "value": str(info.get("max_video_post_duration_sec") or "")}
            ],
        }
        for name, flag in (
            ("disable_comment", "comment_disabled"),
            ("disable_duet", "duet_disabled"),
            ("disable_stitch", "stitch_disabled"),
        ):
            choices = ["true"] if info.get(flag) else ["false", "true"]
            options[name] = [{"label": c, "value": c} for c in choices]
        return options

    def _check_creator(
        self, info: dict[str, Any], request: PublishRequest, video: MediaItem | None
    ) -> None:
        """What the creator info says this post may not be (TikTok requires the check before
        every post): a privacy level not offered, an interaction the creator turned off, a
        video longer than their limit. (A public level from an app TikTok has not audited is
        the format's own rule, checked first.)"""
        options = request.options
        level = options.get("privacy_level", "")
        problems = []
        if level not in [str(x) for x in info.get("privacy_level_options") or []]:
            problems.append(f"privacy level {level or '(none)'} is not offered to this creator")
        for name, flag in (
            ("disable_comment", "comment_disabled"),
            ("disable_duet", "duet_disabled"),
            ("disable_stitch", "stitch_disabled"),
        ):
            if video is None and name != "disable_comment":
                continue  # a photo post has no duets or stitches
            if info.get(flag) and options.get(name) != "true":
                problems.append(f"the creator turned {flag.split('_')[0]}s off ({name}=true)")
        limit = info.get("max_video_post_duration_sec")
        seconds = video.duration_seconds() if video is not None else None
        if isinstance(limit, int | float) and limit > 0 and seconds and seconds > limit:
            problems.append(f"the video is longer than the creator's {int(limit)} seconds")
        if problems:
            raise ProviderError(ErrorKind.PERMANENT, f"{LABEL}: " + "; ".join(problems) + ".")

    # --- publish ------------------------------------------------------------------------------

    def _post_info(self, request: PublishRequest) -> dict[str, Any]:
        options = request.options
        return {
            "title": request.text,
            "privacy_level": options.get("privacy_level", ""),
            "disable_comment": _flag(options, "disable_comment"),
            "disable_duet": _flag(options, "disable_duet"),
            "disable_stitch": _flag(options, "disable_stitch"),
            "brand_content_toggle": _flag(options, "brand_content_toggle"),
            "brand_organic_toggle": _flag(options, "brand_organic_toggle"),
            "is_aigc": _flag(options, "is_aigc"),
        }

    def publish(
        self, *, account: AccountContext, request: PublishRequest
    ) -> PublishResult | Pending:
        """Check the post against its format and the creator info, then initialise it. A video
        answers :class:`Pending` with the ``publish_id`` and upload URL before any byte is
        sent, so a send resumed after a kill uploads to the same post and never initialises a
        second one (docs/decisions/0020-long-sends.md); a photo post is pulled by TikTok from
        the images' URLs and answers :class:`Pending` to poll its status."""
        profile = self.capabilities.profile(request.profile)
        if profile is None:
            raise ProviderError(ErrorKind.PERMANENT, f"{LABEL}: unknown format {request.profile}.")
        precheck(profile, request, provider=LABEL)
        token = self._token(account)
        if profile.key == PHOTO_KEY:
            return self._publish_photos(token, request)
        if len(request.media) != 1 or not request.media[0].mime_type.startswith("video/"):
            raise ProviderError(ErrorKind.PERMANENT, f"{LABEL}: a post is exactly one video.")
        video = request.media[0]
        self._check_creator(self.creator_info(token), request, video)
        if self._pulled(video):
            return self._pull_video(token, request, video)
        chunk, count = chunk_plan(video.size, self.chunk_bytes, self.min_chunk)
        data = self._api(
            "/v2/post/publish/video/init/",
            token,
            "video init",
            write=True,
            json_body={
                "post_info": self._post_info(request),
                "source_info": {
                    "source": "FILE_UPLOAD",
                    "video_size": video.size,
                    "chunk_size": chunk,
                    "total_chunk_count": count,
                },
            },
        )
        publish_id = str(data.get("publish_id") or "")
        upload_url = str(data.get("upload_url") or "")
        if not publish_id or not upload_url.startswith(("http://", "https://")):
            raise ProviderError(ErrorKind.AMBIGUOUS, f"{LABEL}: the init answer had no upload.")
        state = {"publish_id": publish_id, "upload_url": upload_url, "chunk": chunk}
        return Pending("uploading", {**state, "count": count, "next": 0}, self.upload_check_seconds)

    def _pulled(self, video: MediaItem) -> bool:
        """The video is at an address verified with TikTok (HERALD_TIKTOK_VERIFIED_URL_PREFIXES):
        TikTok pulls it instead of Herald uploading it."""
        return bool(video.url) and any(video.url.startswith(p) for p in self.verified_prefixes)

    def _pull_video(self, token: str, request: PublishRequest, video: MediaItem) -> Pending:
        """``video/init`` with ``PULL_FROM_URL``: TikTok fetches the video
        (``PROCESSING_DOWNLOAD``), the send polls the status."""
        data = self._api(
            "/v2/post/publish/video/init/",
            token,
            "video init",
            write=True,
            json_body={
                "post_info": self._post_info(request),
                "source_info": {"source": "PULL_FROM_URL", "video_url": video.url},
            },
        )
        publish_id = str(data.get("publish_id") or "")
        if not publish_id:
            raise ProviderError(ErrorKind.AMBIGUOUS, f"{LABEL}: the init answer had no id.")
        return Pending("processing", {"publish_id": publish_id}, self.status_check_seconds)

    def _publish_photos(self, token: str, request: PublishRequest) -> Pending:
        """``content/init`` with ``media_type`` PHOTO and ``PULL_FROM_URL``: TikTok fetches
        every image from its URL (a domain verified with TikTok)."""
        urls = [item.url for item in request.media]
        if not all(u.startswith(("https://", "http://")) for u in urls):
            raise ProviderError(
                ErrorKind.PERMANENT,
                f"{LABEL}: photo posts need the images at a public address "
                "(HERALD_PUBLIC_URL or object storage) on a domain verified with TikTok.",
            )
        self._check_creator(self.creator_info(token), request, None)
        options = request.options
        info = self._post_info(request)
        for name in ("disable_duet", "disable_stitch", "is_aigc"):
            info.pop(name)
        info.update(
            title=options.get("title", ""),
            description=request.text,
            auto_add_music=options.get("auto_add_music", "true") == "true",
        )
        data = self._api(
            "/v2/post/publish/content/init/",
            token,
            "photo init",
            write=True,
            json_body={
                "post_info": info,
                "source_info": {
                    "source": "PULL_FROM_URL",
                    "photo_cover_index": 0,
                    "photo_images": urls,
                },
                "post_mode": "DIRECT_POST",
                "media_type": "PHOTO",
            },
        )
        publish_id = str(data.get("publish_id") or "")
        if not publish_id:
            raise ProviderError(ErrorKind.AMBIGUOUS, f"{LABEL}: the init answer had no id.")
        return Pending("processing", {"publish_id": publish_id}, self.status_check_seconds)

    def resume(
        self, *, account: AccountContext, request: PublishRequest, state: dict[str, Any]
    ) -> PublishResult | Pending:
        """Upload the next chunk; once every chunk is in, poll the publish status."""
        token = self._token(account)
        if "upload_url" in state and int(state.get("next") or 0) < int(state.get("count") or 0):
            return self._upload_turn(token, request, state)
        return self._poll(token, state)

    def _upload_turn(self, token: str, request: PublishRequest, state: dict[str, Any]) -> Pending:
        """``PUT`` one chunk with its ``Content-Range``; an interrupted chunk is sent again
        (TikTok takes a chunk again in full); the upload URL leaves the state with the last."""
        video = request.media[0]
        chunk, count, index = int(state["chunk"]), int(state["count"]), int(state["next"])
        first, last = chunk_bounds(video.size, chunk, count, index)
        with video.open() as handle:
            handle.seek(first)
            data = bytes(handle.read(last - first + 1))
        try:
            self._call(
                "PUT",
                str(state["upload_url"]),
                operation="video upload",
                ok=(200, 201, 206),
                headers={
                    "Content-Type": video.mime_type,
                    "Content-Range": f"bytes {first}-{last}/{video.size}",
                },
                data=data,
                extra_secrets=(str(state["upload_url"]),),
            )
        except ProviderError as exc:
            if exc.kind not in (ErrorKind.TRANSIENT, ErrorKind.AMBIGUOUS):
                raise
            tries = int(state.get("tries") or 0) + 1
            if tries > 8:
                raise
            return Pending("uploading", {**state, "tries": tries}, min(2.0**tries, 60.0))
        if index + 1 < count:
            return Pending("uploading", {**state, "next": index + 1, "tries": 0}, 0.0)
        return Pending("processing", {"publish_id": state["publish_id"]}, self.status_check_seconds)

    def _status(self, token: str, publish_id: str) -> dict[str, Any]:
        return self._api(
            "/v2/post/publish/status/fetch/",
            token,
            "publish status",
            json_body={"publish_id": publish_id},
        )

    def _poll(self, token: str, state: dict[str, Any]) -> PublishResult | Pending:
        """``status/fetch`` by ``publish_id``: processing goes on being polled (a rate limit on
        the status endpoint only waits longer); published answers the post; FAILED is refused
        with TikTok's ``fail_reason``."""
        publish_id = str(state["publish_id"])
        polls = int(state.get("polls") or 0) + 1
        try:
            status = self._status(token, publish_id)
        except ProviderError as exc:
            if exc.kind != ErrorKind.RATE_LIMITED or exc.wait_reason:
                raise
            return Pending("processing", {**state, "polls": polls}, exc.retry_after or 60.0)
        answer = self._answer(publish_id, status)
        if answer is not None:
            return answer
        if polls >= MAX_POLLS:
            raise ProviderError(
                ErrorKind.AMBIGUOUS, f"{LABEL}: the post is still processing after {polls} checks."
            )
        return Pending(
            "processing", {"publish_id": publish_id, "polls": polls}, self.status_check_seconds
        )

    @staticmethod
    def _answer(publish_id: str, status: dict[str, Any]) -> PublishResult | None:
        """The post for a finished status, None while TikTok is processing."""
        value = str(status.get("status") or "")
        if value == "FAILED":
            reason = str(status.get("fail_reason") or "unknown")
            raise ProviderError(ErrorKind.PERMANENT, f"{LABEL}: the post failed ({reason}).")
        if value not in DONE:
            return None
        ids = status.get("publicaly_available_post_id") or []
        post_id = str(ids[0]) if isinstance(ids, list) and ids else ""
        if not post_id:  # a private post has no public id: the publish id names it
            return PublishResult(external_id=publish_id)
        return PublishResult(external_id=post_id, external_url=f"{PUBLIC_URL}/video/{post_id}")

    # --- reconcile, delete, metrics -----------------------------------------------------------

    def reconcile(
        self, *, account: AccountContext, request: PublishRequest, external_id: str = ""
    ) -> PublishResult | Pending | None:
        """By the ``publish_id`` kept in the send's state: its status says whether the post
        exists, is being processed (the send goes on polling) or failed (safe to send again).
        An unfinished upload is resumed at the chunk recorded. Without a ``publish_id`` the
        init never answered: ``None`` (TikTok made no post it could upload to)."""
        state = request.send_state or {}
        publish_id = str(state.get("publish_id") or "")
        if external_id and not publish_id:
            return PublishResult(external_id=external_id)
        if not publish_id:
            return None
        if "upload_url" in state and int(state.get("next") or 0) < int(state.get("count") or 0):
            return Pending("uploading", dict(state), 0.0)
        status = self._status(self._token(account), publish_id)
        if str(status.get("status") or "") == "FAILED":
            return None
        answer = self._answer(publish_id, status)
        return answer or Pending(
            "processing", {"publish_id": publish_id}, self.status_check_seconds
        )

    def metrics(self, *, account: AccountContext, external_id: str) -> Metrics:
        """``video/query`` (scope ``video.list``): views, likes, comments and shares."""
        data = self._api(
            "/v2/video/query/",
            self._token(account),
            "video metrics",
            params={"fields": METRIC_FIELDS},
            json_body={"filters": {"video_ids": [external_id]}},
        )
        videos = [v for v in data.get("videos") or [] if isinstance(v, dict)]
        if not videos:
            raise ProviderError(ErrorKind.PERMANENT, f"{LABEL}: the video is not readable.")
        video = videos[0]
        return Metrics(
            views=_count(video.get("view_count")),
            likes=_count(video.get("like_count")),
            comments=_count(video.get("comment_count")),
            reposts=_count(video.get("share_count")),
        )


def _count(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0
