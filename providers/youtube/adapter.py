"""The YouTube adapter (Data API v3): connect (Google OAuth 2 with offline access and PKCE),
refresh keeping the refresh token, revoke, the resumable video upload as a long send that
resumes after an interruption, custom thumbnails, reconcile through the channel's uploads,
delete, metrics and the day's API quota. See docs/providers/youtube.md."""

from __future__ import annotations

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
    OutputProfile,
    Pending,
    ProviderError,
    PublishRequest,
    PublishResult,
)
from providers.helpers import precheck
from providers.http import HttpClient
from providers.http_errors import (
    CannotReconcile,
    ErrorDetail,
    ProviderHTTPError,
    default_error_detail,
)
from providers.oauth_http import OAuthHttpAdapter
from providers.pkce import pkce_pair
from providers.quota import QUOTA_LEDGER, next_reset, quota_day, seconds_until_reset
from providers.youtube import upload
from providers.youtube.profiles import (
    MAX_TAGS,
    MAX_THUMBNAIL_BYTES,
    PROFILES,
    SHORT_PROFILE,
    tag_list,
    tags_length,
)

PROVIDER = "youtube"
LABEL = "YouTube"
DEFAULT_API_URL = "https://www.googleapis.com"
DEFAULT_AUTHORIZE_URL = "https://accounts.google.com/o/oauth2/v2/auth"
DEFAULT_TOKEN_URL = "https://oauth2.googleapis.com/token"  # noqa: S105 - a URL
DEFAULT_REVOKE_URL = "https://oauth2.googleapis.com/revoke"
DEFAULT_DAILY_QUOTA = 10_000
PUBLIC_URL = "https://www.youtube.com"
# Upload, and manage the channel's videos (delete, thumbnails, reading its uploads).
SCOPES = (
    "https://www.googleapis.com/auth/youtube.upload",
    "https://www.googleapis.com/auth/youtube",
)
# Quota units per call, from Google's quota cost table (an invalid request costs too).
COSTS = {
    "videos.insert": 1600,
    "thumbnails.set": 50,
    "videos.delete": 50,
    "videos.list": 1,
    "channels.list": 1,
    "playlistItems.list": 1,
    "videoCategories.list": 1,
}
RECONCILE_SLACK = timedelta(minutes=5)
RECENT_PAGE = 50
MAX_INTERRUPTIONS = 8  # an upload interrupted more often in a row is handed to reconcile
MAX_SESSIONS = 3  # upload sessions started for one send (one expired: a new one)
THUMBNAIL_TRIES = 3
QUOTA_EXHAUSTED = "quota_exhausted"
UPLOAD_LIMIT = "upload_limit_exceeded"
_TOKEN_ERRORS = {"invalid_grant", "invalid_request", "invalid_client", "unauthorized_client"}
_WAIT_REASONS = {
    "quotaExceeded": QUOTA_EXHAUSTED,
    "dailyLimitExceeded": QUOTA_EXHAUSTED,
    "uploadLimitExceeded": UPLOAD_LIMIT,
}
_REASON_KINDS = {
    "quotaExceeded": ErrorKind.RATE_LIMITED,
    "dailyLimitExceeded": ErrorKind.RATE_LIMITED,
    "uploadLimitExceeded": ErrorKind.RATE_LIMITED,
    "rateLimitExceeded": ErrorKind.RATE_LIMITED,
    "userRateLimitExceeded": ErrorKind.RATE_LIMITED,
    "authError": ErrorKind.AUTH,
    "insufficientPermissions": ErrorKind.AUTH,
    "youtubeSignupRequired": ErrorKind.PERMANENT,
}


def _parse_error(response: requests.Response) -> ErrorDetail:
    """Google's shapes: OAuth ``{"error": "invalid_grant", "error_description"}`` from the
    token endpoints; ``{"error": {"code", "message", "errors": [{"domain", "reason",
    "message"}]}}`` from the API. The first ``reason`` decides: quota and upload limits are
    waits, a refused or insufficient grant needs a reconnect, and any other 403 (``forbidden``,
    ``forbiddenPrivacySetting``...) refuses this request, not the grant."""
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
    items = [e for e in error.get("errors") or [] if isinstance(e, dict)]
    reason = str(items[0].get("reason") or "") if items else ""
    message = str(error.get("message") or detail.message)[:400]
    kind = _REASON_KINDS.get(reason)
    if kind is None and response.status_code == 403:
        kind = ErrorKind.PERMANENT
    if response.status_code == 401:
        kind = ErrorKind.AUTH
    return ErrorDetail(message=message, kind=kind, code=reason)


def _boolean(value: str | None, default: bool) -> bool:
    return default if value in (None, "") else value == "true"


def _is_video(item: MediaItem) -> bool:
    return item.mime_type.startswith("video/")


class YouTubeAdapter(OAuthHttpAdapter):
    label = LABEL
    error_parser = staticmethod(_parse_error)
    capabilities = Capabilities(
        provider=PROVIDER,
        display_name=LABEL,
        connection=ConnectionMode.OAUTH2,
        pkce=True,
        required_scopes=SCOPES,
        profiles=PROFILES,
        account_kind="channel",
        supports_refresh=True,  # offline access: a refresh token Google keeps until revoked
        supports_revoke=True,
        supports_metrics=True,
        supports_destination_options=True,
    )
    costs = COSTS
    chunk_bytes = 8 * 1024 * 1024  # a multiple of upload.CHUNK_UNIT
    bytes_per_check = 256 * 1024 * 1024  # uploaded per turn; then the send waits a moment
    upload_check_seconds = 0.5
    thumbnail_retry_seconds = 30.0

    def __init__(self, *, http: HttpClient | None = None, app: dict[str, Any] | None = None):
        self.http = http or HttpClient()
        app = dict(app or {})
        self.client_id = str(app.get("client_id") or "")
        self.client_secret = str(app.get("client_secret") or "")
        self.api_url = str(app.get("api_url") or DEFAULT_API_URL).rstrip("/")
        self.upload_url = str(app.get("upload_url") or self.api_url).rstrip("/")
        self.authorize_url = str(app.get("authorize_url") or DEFAULT_AUTHORIZE_URL)
        self.token_url = str(app.get("token_url") or DEFAULT_TOKEN_URL)
        self.revoke_url = str(app.get("revoke_url") or DEFAULT_REVOKE_URL)
        # HERALD_YOUTUBE_SCOPES: scopes requested in addition to the adapter's own.
        extra = [x for x in str(app.get("scopes") or "").split() if x not in SCOPES]
        self.scopes = SCOPES + tuple(extra)
        try:
            self.daily_quota = int(app.get("daily_quota") or DEFAULT_DAILY_QUOTA)
        except (TypeError, ValueError):
            self.daily_quota = DEFAULT_DAILY_QUOTA

    # --- plumbing ---------------------------------------------------------------------------

    def _require_app(self) -> None:
        if not self.client_id or not self.client_secret:
            raise ProviderError(
                ErrorKind.PERMANENT,
                f"{LABEL}: the app is not configured "
                "(HERALD_YOUTUBE_CLIENT_ID, HERALD_YOUTUBE_CLIENT_SECRET).",
            )

    def _call(
        self, method: str, path_or_url: str, *, quota_cost: int = 0, **kwargs: Any
    ) -> requests.Response:
        """Every API call counts its quota units first (refused, as a wait, when the day's
        quota would be exceeded); a quota or upload limit YouTube reports is a wait too."""
        if quota_cost:
            self._spend(quota_cost)
        try:
            return super()._call(method, path_or_url, **kwargs)
        except ProviderHTTPError as exc:
            reason = _WAIT_REASONS.get(exc.code)
            if reason is None:
                raise
            if reason == QUOTA_EXHAUSTED:
                QUOTA_LEDGER.get().exhaust(
                    provider=PROVIDER, day=quota_day(), limit=self.daily_quota
                )
            raise self._wait(reason, exc.message) from exc

    def _spend(self, units: int) -> None:
        if not QUOTA_LEDGER.get().spend(
            provider=PROVIDER, day=quota_day(), units=units, limit=self.daily_quota
        ):
            raise self._wait(
                QUOTA_EXHAUSTED,
                f"{LABEL}: the day's API quota ({self.daily_quota} units) is spent.",
            )

    @staticmethod
    def _wait(reason: str, message: str) -> ProviderError:
        resets = next_reset().astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
        return ProviderError(
            ErrorKind.RATE_LIMITED,
            f"{message} Waiting until YouTube's quota day resets ({resets}).",
            retry_after=seconds_until_reset(),
            wait_reason=reason,
        )

    def quota_status(self) -> dict[str, Any]:
        """The day's quota as Herald counted it, and how many uploads it still allows."""
        used = QUOTA_LEDGER.get().used(provider=PROVIDER, day=quota_day())
        remaining = max(self.daily_quota - used, 0)
        return {
            "daily_units": self.daily_quota,
            "used_units": min(used, self.daily_quota),
            "remaining_units": remaining,
            "upload_cost_units": COSTS["videos.insert"],
            "uploads_remaining": remaining // COSTS["videos.insert"],
            "resets_at": next_reset().astimezone(UTC).isoformat(),
        }

    def _token_call(self, data: dict[str, str], operation: str, secrets: tuple[str, ...]) -> Any:
        """Google's token endpoint takes the client credentials in the form body."""
        self._require_app()
        response = self._call(
            "POST",
            self.token_url,
            operation=operation,
            data={**data, "client_id": self.client_id, "client_secret": self.client_secret},
            extra_secrets=secrets,
        )
        grant = self._json(response, operation)
        if not grant.get("access_token"):
            raise ProviderError(ErrorKind.AUTH, f"{LABEL}: the token answer had no access token.")
        return grant

    @staticmethod
    def _grant_credentials(
        grant: dict[str, Any], previous_refresh: str = ""
    ) -> tuple[dict[str, str], datetime | None, tuple[str, ...]]:
        # Google answers a refresh without a new refresh token: the old one stays.
        refresh = str(grant.get("refresh_token") or previous_refresh)
        credentials = {"access_token": str(grant["access_token"])}
        if refresh:
            credentials["refresh_token"] = refresh
        try:
            seconds = int(float(grant.get("expires_in") or 0))
        except (TypeError, ValueError):
            seconds = 0
        expires_at = datetime.now(UTC) + timedelta(seconds=seconds) if seconds > 0 else None
        return credentials, expires_at, tuple(str(grant.get("scope") or "").split())

    @staticmethod
    def _video_url(video_id: str, short: bool) -> str:
        return f"{PUBLIC_URL}/shorts/{video_id}" if short else f"{PUBLIC_URL}/watch?v={video_id}"

    def _result(self, request: PublishRequest, video_id: str) -> PublishResult:
        short = request.profile == SHORT_PROFILE.key
        return PublishResult(external_id=video_id, external_url=self._video_url(video_id, short))

    # --- connect ------------------------------------------------------------------------------

    def begin_authorization(
        self,
        *,
        redirect_uri: str,
        state: str,
        instance_url: str = "",
        app: dict[str, str] | None = None,
    ) -> AuthorizationStart:
        """Offline access (a refresh token), the consent screen every time (Google gives a
        refresh token only on consent), PKCE with S256."""
        self._require_app()
        verifier, challenge = pkce_pair()
        query = urlencode(
            {
                "response_type": "code",
                "client_id": self.client_id,
                "redirect_uri": redirect_uri,
                "scope": " ".join(self.scopes),
                "state": state,
                "access_type": "offline",
                "prompt": "consent",
                "include_granted_scopes": "true",
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
        channel = self._my_channel(credentials["access_token"], "snippet")
        snippet = channel.get("snippet") or {}
        handle = str(snippet.get("customUrl") or "")
        title = str(snippet.get("title") or channel["id"])
        thumbnail = ((snippet.get("thumbnails") or {}).get("default") or {}).get("url")
        return ConnectedAccount(
            external_id=str(channel["id"]),
            username=handle or title,
            display_name=title,
            avatar_url=str(thumbnail or ""),
            credentials=credentials,
            instance_url=self.api_url,
            account_kind="channel",
            granted_scopes=scopes or self.scopes,
            expires_at=expires_at,
            profile_url=f"{PUBLIC_URL}/{handle}"
            if handle.startswith("@")
            else f"{PUBLIC_URL}/channel/{channel['id']}",
        )

    def _my_channel(self, token: str, part: str) -> dict[str, Any]:
        """``channels.list?mine=true``: the channel of the grant (a Google account without a
        channel cannot upload)."""
        body = self._json(
            self._call(
                "GET",
                "/youtube/v3/channels",
                token=token,
                operation="channel lookup",
                params={"part": part, "mine": "true"},
                quota_cost=COSTS["channels.list"],
            ),
            "channel lookup",
        )
        items = [i for i in body.get("items") or [] if isinstance(i, dict) and i.get("id")]
        if not items:
            raise ProviderError(
                ErrorKind.PERMANENT,
                f"{LABEL}: this Google account has no YouTube channel; create one and connect again.",
            )
        return items[0]

    def can_refresh(self, *, credentials: dict[str, str]) -> bool:
        return bool(credentials.get("refresh_token"))

    def refresh(self, *, account: AccountContext) -> ConnectedAccount:
        """``grant_type=refresh_token``; Google usually answers no new refresh token, and the
        one the account holds stays."""
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
        return ConnectedAccount(
            external_id=account.external_id,
            username=account.username,
            credentials=credentials,
            instance_url=account.instance_url or self.api_url,
            account_kind="channel",
            granted_scopes=scopes,
            expires_at=expires_at,
        )

    def revoke(self, *, account: AccountContext) -> None:
        """``POST`` the refresh token (else the access token) to Google's revoke endpoint: the
        whole grant ends. A token Google no longer knows is already revoked."""
        token = account.credentials.get("refresh_token") or account.credentials.get(
            "access_token", ""
        )
        if not token:
            return
        try:
            self._call(
                "POST",
                self.revoke_url,
                operation="token revocation",
                data={"token": token},
                extra_secrets=(token,),
            )
        except ProviderHTTPError as exc:
            if exc.status != 400:  # invalid_token: already revoked or expired
                raise

    # --- publish ------------------------------------------------------------------------------

    def _profile(self, request: PublishRequest) -> OutputProfile:
        profile = self.capabilities.profile(request.profile)
        if profile is None:
            raise ProviderError(ErrorKind.PERMANENT, f"{LABEL}: unknown format {request.profile}.")
        return profile

    def _parts(self, request: PublishRequest) -> tuple[MediaItem, MediaItem | None]:
        """The video and the image sent for its thumbnail (if any), with the checks YouTube
        would make that the format's rules cannot say."""
        videos = [item for item in request.media if _is_video(item)]
        images = [item for item in request.media if not _is_video(item)]
        if len(videos) != 1 or len(images) > 1:
            raise ProviderError(
                ErrorKind.PERMANENT,
                f"{LABEL}: send one video, and at most one image for its thumbnail.",
            )
        thumbnail = request.options.get("thumbnail") or "none"
        if (thumbnail == "image") != bool(images):
            raise ProviderError(
                ErrorKind.PERMANENT,
                f"{LABEL}: an image is sent with the video only as its thumbnail "
                "(option thumbnail=image).",
            )
        if tags_length(tag_list(request.options.get("tags", ""))) > MAX_TAGS:
            raise ProviderError(
                ErrorKind.PERMANENT, f"{LABEL}: the tags are longer than {MAX_TAGS} together."
            )
        return videos[0], (images[0] if images else None)

    @staticmethod
    def resource(request: PublishRequest) -> dict[str, Any]:
        """The video resource sent when the upload session starts."""
        options = request.options
        snippet: dict[str, Any] = {
            "title": options.get("title", ""),
            "description": request.text,
            "categoryId": options.get("category") or "22",
        }
        if tags := tag_list(options.get("tags", "")):
            snippet["tags"] = tags
        return {
            "snippet": snippet,
            "status": {
                "privacyStatus": options.get("privacy") or "private",
                "selfDeclaredMadeForKids": options.get("made_for_kids") == "true",
                "embeddable": _boolean(options.get("embeddable"), True),
                "license": options.get("license") or "youtube",
            },
        }

    def publish(
        self, *, account: AccountContext, request: PublishRequest
    ) -> PublishResult | Pending:
        """Check, start the upload session, and answer :class:`Pending` with its URI: the
        bytes go in :meth:`resume`, so that the session is on record before any byte is sent
        (docs/decisions/0020-long-sends.md)."""
        precheck(self._profile(request), request, provider=LABEL)
        video, _ = self._parts(request)
        session = self._initiate(self._token(account), request, video)
        return self._uploading({"session": session, "offset": 0, "sessions": 1})

    def _initiate(self, token: str, request: PublishRequest, video: MediaItem) -> str:
        return upload.initiate(
            self,
            token,
            video,
            self.resource(request),
            notify_subscribers=_boolean(request.options.get("notify_subscribers"), True),
        )

    def _uploading(self, state: dict[str, Any], wait: float | None = None) -> Pending:
        return Pending(
            stage="uploading",
            state=state,
            check_after_seconds=self.upload_check_seconds if wait is None else wait,
        )

    def resume(
        self, *, account: AccountContext, request: PublishRequest, state: dict[str, Any]
    ) -> PublishResult | Pending:
        """Go on with the upload from the byte YouTube holds (asked first after an
        interruption); once the video exists, its thumbnail, then the result."""
        token = self._token(account)
        if state.get("video"):
            return self._finish(token, request, state)
        video, _ = self._parts(request)
        try:
            progress = self._upload_turn(token, video, state)
        except upload.SessionGone:
            return self._new_session(token, request, video, state)
        except ProviderError as exc:
            if exc.wait_reason or exc.kind not in (
                ErrorKind.TRANSIENT,
                ErrorKind.AMBIGUOUS,
                ErrorKind.RATE_LIMITED,
            ):
                raise
            return self._interrupted(state, exc)
        if progress.video is None:
            return self._uploading({**state, "offset": progress.offset, "interruptions": 0})
        return self._finish(token, request, {"video": progress.video_id})

    def _upload_turn(self, token: str, video: MediaItem, state: dict[str, Any]) -> upload.Progress:
        session = str(state.get("session") or "")
        if not session:
            raise upload.SessionGone()
        if state.get("interrupted"):
            progress = upload.query(self, token, session, video.size)
            if progress.video is not None:
                return progress
        else:
            progress = upload.Progress(offset=int(state.get("offset") or 0))
        return upload.send_from(
            self, token, session, video, progress.offset, self.chunk_bytes, self.bytes_per_check
        )

    def _interrupted(self, state: dict[str, Any], exc: ProviderError) -> Pending:
        """A chunk failed or its answer was lost: the next turn asks the session what it holds
        and goes on from there. Interrupted too often in a row, the outcome is left to
        reconcile (which asks the same session)."""
        count = int(state.get("interruptions") or 0) + 1
        if count > MAX_INTERRUPTIONS:
            raise ProviderError(
                ErrorKind.AMBIGUOUS,
                f"{LABEL}: the upload was interrupted {count} times in a row ({exc.message})",
            )
        wait = exc.retry_after if exc.retry_after is not None else min(2.0**count, 60.0)
        return self._uploading({**state, "interrupted": True, "interruptions": count}, wait)

    def _new_session(
        self, token: str, request: PublishRequest, video: MediaItem, state: dict[str, Any]
    ) -> Pending:
        """The session expired before the last byte (so it made no video): a new one."""
        sessions = int(state.get("sessions") or 1) + 1
        if sessions > MAX_SESSIONS:
            raise ProviderError(ErrorKind.TRANSIENT, f"{LABEL}: the upload sessions kept expiring.")
        session = self._initiate(token, request, video)
        return self._uploading({"session": session, "offset": 0, "sessions": sessions})

    def _finish(
        self, token: str, request: PublishRequest, state: dict[str, Any]
    ) -> PublishResult | Pending:
        """The video exists: set its custom thumbnail if one was chosen. A thumbnail YouTube
        refuses (a channel not allowed custom thumbnails, the day's quota) leaves YouTube's
        own; a failure that may pass is tried again a few times. The video is never sent
        again from here."""
        video_id = str(state["video"])
        choice = request.options.get("thumbnail") or "none"
        image = self._thumbnail(request, choice)
        if image is None:
            return self._result(request, video_id)
        try:
            self._set_thumbnail(token, video_id, image)
        except ProviderError as exc:
            tries = int(state.get("thumbnail_tries") or 0) + 1
            passing = exc.kind in (ErrorKind.TRANSIENT, ErrorKind.AMBIGUOUS, ErrorKind.RATE_LIMITED)
            if passing and not exc.wait_reason and tries < THUMBNAIL_TRIES:
                return Pending(
                    stage="publishing",
                    state={"video": video_id, "thumbnail_tries": tries},
                    check_after_seconds=self.thumbnail_retry_seconds,
                )
        return self._result(request, video_id)

    @staticmethod
    def _thumbnail(request: PublishRequest, choice: str) -> tuple[str, Any] | None:
        """``(MIME type, opener)`` of the chosen thumbnail, or None."""
        if choice == "image":
            image = next((i for i in request.media if not _is_video(i)), None)
            return (image.mime_type, image.open) if image is not None else None
        if choice == "poster":
            video = next((i for i in request.media if _is_video(i)), None)
            if video is not None and video.poster is not None:
                return ("image/jpeg", video.poster)
        return None

    def _set_thumbnail(self, token: str, video_id: str, image: tuple[str, Any]) -> None:
        """``thumbnails.set``: the image's bytes (at most 2 MB) as the video's thumbnail."""
        mime_type, opener = image
        with opener() as handle:
            data = handle.read(MAX_THUMBNAIL_BYTES + 1)
        if len(data) > MAX_THUMBNAIL_BYTES:
            raise ProviderError(ErrorKind.PERMANENT, f"{LABEL}: the thumbnail is over 2 MB.")
        self._call(
            "POST",
            f"{self.upload_url}/upload/youtube/v3/thumbnails/set",
            token=token,
            operation="thumbnail",
            params={"videoId": video_id, "uploadType": "media"},
            headers={"Content-Type": mime_type},
            data=bytes(data),
            quota_cost=COSTS["thumbnails.set"],
        )

    # --- reconcile, delete, metrics -----------------------------------------------------------

    def _videos(self, token: str, video_id: str, part: str) -> list[dict[str, Any]]:
        body = self._json(
            self._call(
                "GET",
                "/youtube/v3/videos",
                token=token,
                operation="video lookup",
                params={"part": part, "id": video_id},
                quota_cost=COSTS["videos.list"],
            ),
            "video lookup",
        )
        return [v for v in body.get("items") or [] if isinstance(v, dict) and v.get("id")]

    def reconcile(
        self, *, account: AccountContext, request: PublishRequest, external_id: str = ""
    ) -> PublishResult | Pending | None:
        """Find the video of an earlier attempt (see docs/providers/youtube.md):

        1. ``external_id`` known, or the send's state names the video: ``videos.list``.
        2. The send's upload session: asked what it holds. The finished video is the answer;
           an unfinished upload goes on (:class:`Pending`) in the same session.
        3. Otherwise the channel's uploads playlist, newest first (one page of 50): a video
           published since the first attempt (minus 5 min) with the same title and
           description. ``None`` when the page reached past that time or the list ended.
        """
        token = self._token(account)
        state = request.send_state or {}
        known = external_id or str(state.get("video") or "")
        if known:
            found = self._videos(token, known, "id")
            return self._result(request, known) if found else None
        session = str(state.get("session") or "")
        if session and request.media:
            video, _ = self._parts(request)
            try:
                progress = upload.query(self, token, session, video.size)
            except upload.SessionGone:
                pass  # that session made no video; an earlier one may have
            else:
                if progress.video is not None:
                    return self._result(request, progress.video_id)
                return self._uploading({**state, "offset": progress.offset, "interrupted": True})
        return self._find_upload(token, request)

    def _find_upload(self, token: str, request: PublishRequest) -> PublishResult | None:
        channel = self._my_channel(token, "contentDetails")
        playlist = str(
            ((channel.get("contentDetails") or {}).get("relatedPlaylists") or {}).get("uploads")
            or ""
        )
        if not playlist:
            raise CannotReconcile(f"{LABEL}: the channel's uploads cannot be listed.")
        body = self._json(
            self._call(
                "GET",
                "/youtube/v3/playlistItems",
                token=token,
                operation="recent uploads",
                params={"part": "snippet", "playlistId": playlist, "maxResults": RECENT_PAGE},
                quota_cost=COSTS["playlistItems.list"],
            ),
            "recent uploads",
        )
        since = request.first_attempt_at - RECONCILE_SLACK if request.first_attempt_at else None
        items = [i for i in body.get("items") or [] if isinstance(i, dict)]
        reached_start = False
        title = request.options.get("title", "")
        for item in items:
            snippet = item.get("snippet") or {}
            published = _moment(snippet.get("publishedAt"))
            if since is not None and published is not None and published < since:
                reached_start = True
                continue
            if snippet.get("title") == title and (snippet.get("description") or "") == (
                request.text
            ):
                video_id = str((snippet.get("resourceId") or {}).get("videoId") or "")
                if video_id:
                    return self._result(request, video_id)
        if reached_start or not body.get("nextPageToken"):
            return None
        raise CannotReconcile(
            f"{LABEL}: cannot tell whether the earlier upload was published; check the channel."
        )

    def delete(self, *, account: AccountContext, external_id: str) -> None:
        try:
            self._call(
                "DELETE",
                "/youtube/v3/videos",
                token=self._token(account),
                operation="video deletion",
                params={"id": external_id},
                ok=(200, 204),
                quota_cost=COSTS["videos.delete"],
            )
        except ProviderHTTPError as exc:
            if exc.status not in (404, 410):  # already gone
                raise

    def metrics(self, *, account: AccountContext, external_id: str) -> Metrics:
        """``videos.list?part=statistics``: views, likes and comments."""
        found = self._videos(self._token(account), external_id, "statistics")
        if not found:
            raise ProviderError(ErrorKind.PERMANENT, f"{LABEL}: the video no longer exists.")
        stats = found[0].get("statistics") or {}
        return Metrics(
            views=_count(stats.get("viewCount")),
            likes=_count(stats.get("likeCount")),
            comments=_count(stats.get("commentCount")),
        )

    # --- destination options -------------------------------------------------------------------

    def destination_options(
        self, *, account: AccountContext, region_code: str = "US", language: str = "en"
    ) -> dict[str, list[dict[str, str]]]:
        """The categories a video may be given in the region (``videoCategories.list``,
        assignable ones), and the fixed choices of the other options."""
        body = self._json(
            self._call(
                "GET",
                "/youtube/v3/videoCategories",
                token=self._token(account),
                operation="video categories",
                params={"part": "snippet", "regionCode": region_code or "US", "hl": language},
                quota_cost=COSTS["videoCategories.list"],
            ),
            "video categories",
        )
        categories = [
            {"label": str((c.get("snippet") or {}).get("title") or c["id"]), "value": str(c["id"])}
            for c in body.get("items") or []
            if isinstance(c, dict) and c.get("id") and (c.get("snippet") or {}).get("assignable")
        ]
        return {
            "category": categories,
            "privacy": [
                {"label": p.title(), "value": p} for p in ("private", "unlisted", "public")
            ],
            "made_for_kids": [
                {"label": "Made for kids", "value": "true"},
                {"label": "Not made for kids", "value": "false"},
            ],
        }


def _moment(value: Any) -> datetime | None:
    try:
        moment = datetime.fromisoformat(str(value or "").replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _count(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0
