"""The Pinterest adapter (API v5): connect (OAuth 2, client credentials in Basic auth),
refresh, boards and board sections as destination options, image Pins from the media's URL,
video Pins (register, upload to the form Pinterest names, wait for processing as a long send,
pin with the poster frame as cover), reconcile through the board's recent Pins, delete and Pin
analytics. See docs/providers/pinterest.md."""

from __future__ import annotations

import base64
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
from providers.pinterest.rules import MAX_ALT_TEXT, PROFILES, VIDEO_PROFILE

PROVIDER = "pinterest"
LABEL = "Pinterest"
DEFAULT_API_URL = "https://api.pinterest.com"
DEFAULT_AUTHORIZE_URL = "https://www.pinterest.com/oauth/"
DEFAULT_TOKEN_URL = "https://api.pinterest.com/v5/oauth/token"  # noqa: S105 - a URL
PUBLIC_URL = "https://www.pinterest.com"
SCOPES = ("boards:read", "pins:read", "pins:write", "user_accounts:read")
RECONCILE_SLACK = timedelta(minutes=5)
RECENT_PAGE = 50
MAX_BOARDS = 250  # boards listed in the destination options (sections read for each)
PROCESSING_SECONDS = 5.0
MAX_PROCESSING_CHECKS = 720  # an hour at 5 s: then the send fails rather than wait forever
_AUTH_CODES = {2, 3, 4}  # Pinterest's authentication and authorization failure codes


def _parse_error(response: requests.Response) -> ErrorDetail:
    """Pinterest answers ``{"code": <int>, "message": "..."}``; the OAuth endpoint may answer
    ``{"error", "error_description"}``. 401 (and an authentication code) needs a reconnect;
    a 403 refuses this request; 429 is a rate limit (Retry-After read by the HTTP client)."""
    detail = default_error_detail(response)
    try:
        body = response.json()
    except ValueError:
        body = {}
    if not isinstance(body, dict):
        return detail
    message = str(body.get("message") or body.get("error_description") or detail.message)[:400]
    code = str(body.get("code") or body.get("error") or "")
    kind: ErrorKind | None = None
    if response.status_code == 401 or body.get("error") == "invalid_grant":
        kind = ErrorKind.AUTH
    elif response.status_code == 403:
        kind = ErrorKind.AUTH if body.get("code") in _AUTH_CODES else ErrorKind.PERMANENT
    elif response.status_code == 429:
        kind = ErrorKind.RATE_LIMITED
    return ErrorDetail(message=message, kind=kind, code=code)


def _is_video(item: MediaItem) -> bool:
    return item.mime_type.startswith("video/")


class PinterestAdapter(OAuthHttpAdapter):
    label = LABEL
    error_parser = staticmethod(_parse_error)
    capabilities = Capabilities(
        provider=PROVIDER,
        display_name=LABEL,
        connection=ConnectionMode.OAUTH2,
        required_scopes=SCOPES,
        profiles=PROFILES,
        account_kind="user",
        supports_refresh=True,
        supports_revoke=False,  # API v5 has no revoke endpoint: disconnecting forgets the grant
        supports_metrics=True,
        supports_destination_options=True,
    )
    processing_seconds = PROCESSING_SECONDS
    page_size = 100  # items per page of a listing (Pinterest's largest)

    def __init__(self, *, http: HttpClient | None = None, app: dict[str, Any] | None = None):
        self.http = http or HttpClient()
        app = dict(app or {})
        self.client_id = str(app.get("client_id") or "")
        self.client_secret = str(app.get("client_secret") or "")
        self.api_url = str(app.get("api_url") or DEFAULT_API_URL).rstrip("/")
        self.authorize_url = str(app.get("authorize_url") or DEFAULT_AUTHORIZE_URL)
        self.token_url = str(app.get("token_url") or DEFAULT_TOKEN_URL)
        extra = [x for x in str(app.get("scopes") or "").split() if x not in SCOPES]
        self.scopes = SCOPES + tuple(extra)

    # --- connect ------------------------------------------------------------------------------

    def _require_app(self) -> None:
        if not self.client_id or not self.client_secret:
            raise ProviderError(
                ErrorKind.PERMANENT,
                f"{LABEL}: the app is not configured "
                "(HERALD_PINTEREST_CLIENT_ID, HERALD_PINTEREST_CLIENT_SECRET).",
            )

    def _token_call(self, data: dict[str, str], operation: str, secrets: tuple[str, ...]) -> Any:
        """The token endpoint takes the app's credentials as HTTP Basic auth."""
        self._require_app()
        basic = base64.b64encode(f"{self.client_id}:{self.client_secret}".encode()).decode()
        grant = self._json(
            self._call(
                "POST",
                self.token_url,
                operation=operation,
                headers={"Authorization": f"Basic {basic}"},
                data=data,
                extra_secrets=(*secrets, basic),
            ),
            operation,
        )
        if not grant.get("access_token"):
            raise ProviderError(ErrorKind.AUTH, f"{LABEL}: the token answer had no access token.")
        return grant

    @staticmethod
    def _grant_credentials(
        grant: dict[str, Any], previous_refresh: str = ""
    ) -> tuple[dict[str, str], datetime | None, tuple[str, ...]]:
        credentials = {"access_token": str(grant["access_token"])}
        refresh = str(grant.get("refresh_token") or previous_refresh)
        if refresh:
            credentials["refresh_token"] = refresh
        try:
            seconds = int(float(grant.get("expires_in") or 0))
        except (TypeError, ValueError):
            seconds = 0
        expires_at = datetime.now(UTC) + timedelta(seconds=seconds) if seconds > 0 else None
        scope = str(grant.get("scope") or "").replace(",", " ")
        return credentials, expires_at, tuple(scope.split())

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
                "response_type": "code",
                "scope": ",".join(self.scopes),
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
        grant = self._token_call(
            {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri},
            "token exchange",
            (code,),
        )
        credentials, expires_at, scopes = self._grant_credentials(grant)
        user = self._json(
            self._call(
                "GET",
                "/v5/user_account",
                token=credentials["access_token"],
                operation="account lookup",
            ),
            "account lookup",
        )
        username = str(user.get("username") or "")
        if not username:
            raise ProviderError(ErrorKind.PERMANENT, f"{LABEL}: the account has no username.")
        return ConnectedAccount(
            external_id=str(user.get("id") or username),
            username=username,
            display_name=str(user.get("business_name") or username),
            avatar_url=str(user.get("profile_image") or ""),
            credentials=credentials,
            instance_url=self.api_url,
            account_kind="user",
            granted_scopes=scopes or self.scopes,
            expires_at=expires_at,
            profile_url=f"{PUBLIC_URL}/{username}/",
        )

    def can_refresh(self, *, credentials: dict[str, str]) -> bool:
        return bool(credentials.get("refresh_token"))

    def refresh(self, *, account: AccountContext) -> ConnectedAccount:
        """``grant_type=refresh_token``; a new refresh token in the answer replaces the old
        one, otherwise the old one stays."""
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
            account_kind="user",
            granted_scopes=scopes,
            expires_at=expires_at,
        )

    # --- destination options -----------------------------------------------------------------

    def _pages(self, token: str, path: str, operation: str, limit: int) -> list[dict[str, Any]]:
        """A listing followed through its ``bookmark`` pages, up to ``limit`` items."""
        items: list[dict[str, Any]] = []
        bookmark = ""
        while len(items) < limit:
            params = {
                "page_size": str(self.page_size),
                **({"bookmark": bookmark} if bookmark else {}),
            }
            body = self._json(
                self._call("GET", path, token=token, operation=operation, params=params),
                operation,
            )
            page = [i for i in body.get("items") or [] if isinstance(i, dict) and i.get("id")]
            items += page
            bookmark = str(body.get("bookmark") or "")
            if not bookmark or not page:  # the last page (an empty page ends it too)
                break
        return items[:limit]

    def destination_options(
        self, *, account: AccountContext, region_code: str = "", language: str = ""
    ) -> dict[str, list[dict[str, str]]]:
        """The account's boards (``GET /v5/boards``) and their sections
        (``GET /v5/boards/{id}/sections``), a section labelled "Board / Section"."""
        token = self._token(account)
        boards = self._pages(token, "/v5/boards", "boards", MAX_BOARDS)
        sections: list[dict[str, str]] = []
        for board in boards:
            for section in self._pages(
                token, f"/v5/boards/{board['id']}/sections", "board sections", MAX_BOARDS
            ):
                sections.append(
                    {
                        "label": f"{board.get('name') or board['id']} / "
                        f"{section.get('name') or section['id']}",
                        "value": str(section["id"]),
                        "board_id": str(board["id"]),
                    }
                )
        return {
            "board_id": [
                {"label": str(b.get("name") or b["id"]), "value": str(b["id"])} for b in boards
            ],
            "board_section_id": sections,
        }

    # --- publish ------------------------------------------------------------------------------

    def _profile(self, request: PublishRequest) -> OutputProfile:
        profile = self.capabilities.profile(request.profile)
        if profile is None:
            raise ProviderError(ErrorKind.PERMANENT, f"{LABEL}: unknown format {request.profile}.")
        return profile

    @staticmethod
    def _pin_body(request: PublishRequest, media_source: dict[str, Any]) -> dict[str, Any]:
        options = request.options
        body: dict[str, Any] = {"board_id": options["board_id"], "media_source": media_source}
        if options.get("board_section_id"):
            body["board_section_id"] = options["board_section_id"]
        if request.text:
            body["description"] = request.text
        for key in ("title", "link"):
            if options.get(key):
                body[key] = options[key]
        alt = options.get("alt_text") or (request.media[0].alt_text if request.media else "")
        if alt:
            body["alt_text"] = alt[:MAX_ALT_TEXT]
        return body

    def _create_pin(self, token: str, body: dict[str, Any]) -> PublishResult:
        pin = self._json(
            self._call(
                "POST", "/v5/pins", token=token, operation="pin", write=True, json_body=body
            ),
            "pin",
            write=True,
        )
        pin_id = str(pin.get("id") or "")
        if not pin_id:
            raise ProviderError(ErrorKind.AMBIGUOUS, f"{LABEL}: the Pin answer had no id.")
        return self._result(pin_id)

    @staticmethod
    def _result(pin_id: str) -> PublishResult:
        return PublishResult(external_id=pin_id, external_url=f"{PUBLIC_URL}/pin/{pin_id}/")

    def publish(
        self, *, account: AccountContext, request: PublishRequest
    ) -> PublishResult | Pending:
        """An image: one ``POST /v5/pins`` with its URL. A video: registered and uploaded,
        then :class:`Pending` while Pinterest processes it (the media id in the send state, so
        a retry never uploads or pins again)."""
        profile = self._profile(request)
        precheck(profile, request, provider=LABEL)
        token = self._token(account)
        item = request.media[0]
        if profile.key != VIDEO_PROFILE.key:
            if not item.url:
                raise ProviderError(
                    ErrorKind.PERMANENT,
                    f"{LABEL}: the image has no public URL Pinterest can fetch "
                    "(set HERALD_PUBLIC_URL or use S3 storage).",
                )
            source = {"source_type": "image_url", "url": item.url}
            return self._create_pin(token, self._pin_body(request, source))
        media_id = self._upload(token, item)
        return Pending(
            stage="processing",
            state={"media_id": media_id, "checks": 0},
            check_after_seconds=self.processing_seconds,
        )

    def _upload(self, token: str, item: MediaItem) -> str:
        """``POST /v5/media`` registers the upload; the file goes as a multipart form POST to
        the ``upload_url`` with every ``upload_parameters`` field, the file last (an S3
        form)."""
        registered = self._json(
            self._call(
                "POST",
                "/v5/media",
                token=token,
                operation="media registration",
                write=True,
                json_body={"media_type": "video"},
            ),
            "media registration",
            write=True,
        )
        media_id = str(registered.get("media_id") or "")
        upload_url = str(registered.get("upload_url") or "")
        fields = registered.get("upload_parameters") or {}
        if not media_id or not upload_url or not isinstance(fields, dict):
            raise ProviderError(
                ErrorKind.TRANSIENT, f"{LABEL}: the media registration was incomplete."
            )
        with item.open() as handle:
            self._call(
                "POST",
                upload_url,
                operation="video upload",
                ok=(200, 201, 204),
                data={str(k): str(v) for k, v in fields.items()},
                files={"file": (item.name or "video.mp4", handle, item.mime_type)},
                extra_secrets=tuple(str(v) for k, v in fields.items() if "signature" in k.lower()),
            )
        return media_id

    def resume(
        self, *, account: AccountContext, request: PublishRequest, state: dict[str, Any]
    ) -> PublishResult | Pending:
        """Ask for the video's processing status (``GET /v5/media/{id}``); once it
        ``succeeded``, pin it with the first frame (Herald's poster) as its cover."""
        token = self._token(account)
        if state.get("pin"):
            return self._result(str(state["pin"]))
        media_id = str(state.get("media_id") or "")
        status = self._json(
            self._call("GET", f"/v5/media/{media_id}", token=token, operation="media status"),
            "media status",
        )
        value = str(status.get("status") or "")
        if value == "failed":
            raise ProviderError(ErrorKind.PERMANENT, f"{LABEL}: the video failed processing.")
        if value != "succeeded":
            checks = int(state.get("checks") or 0) + 1
            if checks > MAX_PROCESSING_CHECKS:
                raise ProviderError(
                    ErrorKind.PERMANENT, f"{LABEL}: the video never finished processing."
                )
            return Pending(
                stage="processing",
                state={"media_id": media_id, "checks": checks},
                check_after_seconds=self.processing_seconds,
            )
        source = {
            "source_type": "video_id",
            "media_id": media_id,
            "cover_image_key_frame_time": 0,  # the poster frame Herald shows is the first
        }
        return self._create_pin(token, self._pin_body(request, source))

    # --- reconcile, delete, metrics -----------------------------------------------------------

    def reconcile(
        self, *, account: AccountContext, request: PublishRequest, external_id: str = ""
    ) -> PublishResult | Pending | None:
        """Find the Pin of an earlier attempt: a known id is looked up; otherwise the board's
        recent Pins (newest first, one page) are searched for one created since the first
        attempt (minus 5 minutes) with the same title and description. A video whose Pin
        was never asked for goes on waiting for its processing."""
        token = self._token(account)
        if external_id:
            try:
                self._call("GET", f"/v5/pins/{external_id}", token=token, operation="pin lookup")
            except ProviderHTTPError as exc:
                if exc.status == 404:
                    return None
                raise
            return self._result(external_id)
        found = self._find_pin(token, request)
        if found is not None:
            return found
        state = request.send_state or {}
        if state.get("media_id"):
            return Pending(stage="processing", state=dict(state), check_after_seconds=0)
        return None

    def _find_pin(self, token: str, request: PublishRequest) -> PublishResult | None:
        board = request.options.get("board_id", "")
        body = self._json(
            self._call(
                "GET",
                f"/v5/boards/{board}/pins",
                token=token,
                operation="board pins",
                params={"page_size": str(RECENT_PAGE)},
            ),
            "board pins",
        )
        since = request.first_attempt_at - RECONCILE_SLACK if request.first_attempt_at else None
        reached_start = False
        for pin in [p for p in body.get("items") or [] if isinstance(p, dict)]:
            created = _moment(pin.get("created_at"))
            if since is not None and created is not None and created < since:
                reached_start = True
                continue
            if (pin.get("title") or "") == request.options.get("title", "") and (
                pin.get("description") or ""
            ) == request.text:
                return self._result(str(pin["id"]))
        if reached_start or not body.get("bookmark"):
            return None
        raise CannotReconcile(f"{LABEL}: cannot tell whether the Pin was created; check the board.")

    def delete(self, *, account: AccountContext, external_id: str) -> None:
        try:
            self._call(
                "DELETE",
                f"/v5/pins/{external_id}",
                token=self._token(account),
                operation="pin deletion",
                write=True,
                ok=(200, 204),
            )
        except ProviderHTTPError as exc:
            if exc.status != 404:  # already gone
                raise

    def metrics(self, *, account: AccountContext, external_id: str) -> Metrics:
        """``GET /v5/pins/{id}/analytics`` over the last 90 days (Pinterest's furthest
        reach back): impressions as views, and saves."""
        today = datetime.now(UTC).date()
        body = self._json(
            self._call(
                "GET",
                f"/v5/pins/{external_id}/analytics",
                token=self._token(account),
                operation="pin analytics",
                params={
                    "start_date": (today - timedelta(days=89)).isoformat(),
                    "end_date": today.isoformat(),
                    "metric_types": "IMPRESSION,SAVE,PIN_CLICK,OUTBOUND_CLICK",
                },
            ),
            "pin analytics",
        )
        totals = (
            (body.get("all") or {}).get("summary_metrics")
            or (body.get("all") or {}).get("lifetime_metrics")
            or {}
        )
        return Metrics(views=_count(totals.get("IMPRESSION")), saves=_count(totals.get("SAVE")))


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
