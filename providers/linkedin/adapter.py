"""The LinkedIn adapter: connect (the operator's OAuth 2 app), refresh where LinkedIn issues a
refresh token, revoke, member and organization-page posts with images through the Images API,
reconcile, delete and metrics on the versioned REST API. See docs/providers/linkedin.md."""

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
from providers.helpers import precheck, read_media
from providers.http import HttpClient
from providers.http_errors import (
    CannotReconcile,
    ErrorDetail,
    ProviderHTTPError,
    default_error_detail,
)
from providers.linkedin import video as video_protocol
from providers.linkedin.text import (
    POST_PROFILE,
    comparable_text,
    escape_little,
    unescape_little,
)
from providers.oauth_http import OAuthHttpAdapter

PROVIDER = "linkedin"
LABEL = "LinkedIn"
DEFAULT_API_URL = "https://api.linkedin.com"
DEFAULT_AUTHORIZE_URL = "https://www.linkedin.com/oauth/v2/authorization"
DEFAULT_TOKEN_URL = "https://www.linkedin.com/oauth/v2/accessToken"  # noqa: S105 - a URL
DEFAULT_REVOKE_URL = "https://www.linkedin.com/oauth/v2/revoke"
# LinkedIn's versioned APIs (YYYYMM); each version is served for about a year, so this moves
# forward with Herald's releases.
API_VERSION = "202610"
SCOPES = ("openid", "profile", "w_member_social")
# Requested in addition when the operator's app has them (HERALD_LINKEDIN_SCOPES): organization
# pages need the Community Management API product.
ORGANIZATION_SCOPES = ("w_organization_social", "r_organization_social", "rw_organization_admin")
PUBLIC_URL = "https://www.linkedin.com"
RECONCILE_SLACK = timedelta(minutes=5)
RECENT_PAGE = 50
RECENT_PAGES = 3
MAX_ORGANIZATIONS = 20
_TOKEN_ERRORS = {"invalid_grant", "invalid_request", "invalid_client", "unauthorized_client"}
_PERSON = "urn:li:person:"
_ORGANIZATION = "urn:li:organization:"


def _parse_error(response: requests.Response) -> ErrorDetail:
    """LinkedIn's error shapes: OAuth ``{"error", "error_description"}`` from the token
    endpoints; ``{"status", "serviceErrorCode", "code", "message"}`` from the API. A 403 that
    says the member lacks a permission for this call (``ACCESS_DENIED``, service error 100) is
    a refusal of the request, not a dead grant; a 401 (65600 invalid token, 65601 revoked,
    65602 expired) or a refused token means the user must reconnect."""
    detail = default_error_detail(response)
    try:
        body = response.json()
    except ValueError:
        body = {}
    body = body if isinstance(body, dict) else {}
    error = str(body.get("error") or "")
    if error in _TOKEN_ERRORS:
        return ErrorDetail(message=detail.message, kind=ErrorKind.AUTH, code="invalid_grant")
    service_code = str(body.get("serviceErrorCode") or "")
    code = str(body.get("code") or service_code)
    message = str(body.get("message") or detail.message)[:400]
    if response.status_code == 403:
        return ErrorDetail(message=message, kind=ErrorKind.PERMANENT, code=code or "forbidden")
    if response.status_code == 422 and "duplicate" in message.lower():
        return ErrorDetail(message=message, kind=ErrorKind.PERMANENT, code="duplicate")
    return ErrorDetail(message=message, code=code)


def _scopes(value: Any) -> tuple[str, ...]:
    """LinkedIn answers granted scopes comma-separated (``"openid,profile,w_member_social"``)."""
    return tuple(s for s in str(value or "").replace(",", " ").split() if s)


def _urn_path(urn: str) -> str:
    return quote(urn, safe="")


def _post_body(author: str, text: str) -> dict[str, Any]:
    """A public main-feed post of ``author``; the content is added by the caller."""
    return {
        "author": author,
        "commentary": escape_little(text),
        "visibility": "PUBLIC",
        "distribution": {
            "feedDistribution": "MAIN_FEED",
            "targetEntities": [],
            "thirdPartyDistributionChannels": [],
        },
        "lifecycleState": "PUBLISHED",
        "isReshareDisabledByAuthor": False,
    }


class LinkedInAdapter(OAuthHttpAdapter):
    label = LABEL
    error_parser = staticmethod(_parse_error)
    capabilities = Capabilities(
        provider=PROVIDER,
        display_name=LABEL,
        connection=ConnectionMode.OAUTH2,
        pkce=False,  # LinkedIn's standard flow is a confidential client without PKCE
        required_scopes=SCOPES,
        profiles=(POST_PROFILE,),
        account_kind="user",
        # Only apps LinkedIn enrolled in programmatic refresh get refresh tokens; can_refresh
        # says per account, and the others are asked to reconnect before the 60-day expiry.
        supports_refresh=True,
        supports_revoke=True,
        supports_metrics=True,
        supports_destination_options=True,
    )
    video_check_seconds = 5.0  # a processing video is first checked after this long
    video_check_max_seconds = 60.0

    def __init__(self, *, http: HttpClient | None = None, app: dict[str, Any] | None = None):
        self.http = http or HttpClient()
        app = dict(app or {})
        self.client_id = str(app.get("client_id") or "")
        self.client_secret = str(app.get("client_secret") or "")
        self.api_url = str(app.get("api_url") or DEFAULT_API_URL).rstrip("/")
        self.authorize_url = str(app.get("authorize_url") or DEFAULT_AUTHORIZE_URL)
        self.token_url = str(app.get("token_url") or DEFAULT_TOKEN_URL)
        self.revoke_url = str(app.get("revoke_url") or DEFAULT_REVOKE_URL)
        extra = [s for s in _scopes(app.get("scopes")) if s not in SCOPES]
        self.scopes = SCOPES + tuple(extra)

    # --- plumbing ---------------------------------------------------------------------------

    def _require_app(self) -> None:
        if not self.client_id or not self.client_secret:
            raise ProviderError(
                ErrorKind.PERMANENT,
                f"{LABEL}: the app is not configured "
                "(HERALD_LINKEDIN_CLIENT_ID, HERALD_LINKEDIN_CLIENT_SECRET).",
            )

    def _call(
        self,
        method: str,
        path_or_url: str,
        *,
        rest: bool = True,
        headers: dict[str, str] | None = None,
        **kwargs: Any,
    ) -> requests.Response:
        """The versioned REST API (``rest``) wants its version headers; the OAuth and OpenID
        endpoints do not."""
        if rest:
            headers = {
                **(headers or {}),
                "LinkedIn-Version": API_VERSION,
                "X-Restli-Protocol-Version": "2.0.0",
            }
        return super()._call(method, path_or_url, headers=headers, **kwargs)

    def _token_call(self, data: dict[str, str], operation: str, secrets: tuple[str, ...]) -> Any:
        """The token endpoint takes the client credentials in the form body."""
        self._require_app()
        response = self._call(
            "POST",
            self.token_url,
            operation=operation,
            rest=False,
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
        # A refresh token is never replaced by nothing; most apps get none.
        refresh = str(grant.get("refresh_token") or previous_refresh)
        credentials = {"access_token": str(grant["access_token"])}
        if refresh:
            credentials["refresh_token"] = refresh
        try:
            seconds = int(float(grant.get("expires_in") or 0))
        except (TypeError, ValueError):
            seconds = 0
        expires_at = datetime.now(UTC) + timedelta(seconds=seconds) if seconds > 0 else None
        return credentials, expires_at, _scopes(grant.get("scope"))

    @staticmethod
    def _post_url(urn: str) -> str:
        return f"{PUBLIC_URL}/feed/update/{quote(urn, safe=':')}/"

    @staticmethod
    def _member(account: AccountContext) -> str:
        if not account.external_id:
            raise ProviderError(ErrorKind.AUTH, f"{LABEL}: the member is unknown; reconnect.")
        return _PERSON + account.external_id

    def _author(self, account: AccountContext, request: PublishRequest) -> str:
        member = self._member(account)
        chosen = (request.options.get("author") or "").strip()
        if not chosen or chosen == member:
            return member
        suffix = chosen.removeprefix(_ORGANIZATION)
        if chosen.startswith(_ORGANIZATION) and suffix.isdigit():
            return chosen
        raise ProviderError(
            ErrorKind.PERMANENT,
            f"{LABEL}: the author must be the member or an organization page (urn:li:organization).",
        )

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
                "response_type": "code",
                "client_id": self.client_id,
                "redirect_uri": redirect_uri,
                "state": state,
                "scope": " ".join(self.scopes),
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
        response = self._call(
            "GET",
            "/v2/userinfo",
            token=credentials["access_token"],
            operation="account lookup",
            rest=False,
            extra_secrets=(credentials.get("refresh_token", ""),),
        )
        me = self._json(response, "account lookup")
        if not me.get("sub"):
            raise ProviderError(ErrorKind.AUTH, f"{LABEL}: the member could not be read.")
        name = str(
            me.get("name") or " ".join(str(me.get(k) or "") for k in ("given_name", "family_name"))
        ).strip()
        return ConnectedAccount(
            external_id=str(me["sub"]),
            # userinfo has no public vanity name: the username is the member's name.
            username=name or str(me["sub"]),
            display_name=name,
            avatar_url=str(me.get("picture") or ""),
            credentials=credentials,
            instance_url=self.api_url,
            granted_scopes=scopes or self.scopes,
            expires_at=expires_at,
            profile_url="",  # not readable with these scopes (no vanity name in userinfo)
        )

    def can_refresh(self, *, credentials: dict[str, str]) -> bool:
        return bool(credentials.get("refresh_token"))  # programmatic refresh apps only

    def refresh(self, *, account: AccountContext) -> ConnectedAccount:
        """``grant_type=refresh_token`` for apps LinkedIn gives refresh tokens. LinkedIn keeps
        the refresh token (its own expiry does not move); a new one in the answer replaces it."""
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
            granted_scopes=scopes,
            expires_at=expires_at,
        )

    def revoke(self, *, account: AccountContext) -> None:
        """``POST /oauth/v2/revoke`` with the access token (the grant)."""
        self._require_app()
        token = account.credentials.get("access_token", "")
        if not token:
            return
        self._call(
            "POST",
            self.revoke_url,
            operation="token revocation",
            rest=False,
            data={
                "token": token,
                "client_id": self.client_id,
                "client_secret": self.client_secret,
            },
            extra_secrets=(token,),
        )

    # --- publish ------------------------------------------------------------------------------

    def publish(
        self, *, account: AccountContext, request: PublishRequest
    ) -> PublishResult | Pending:
        """Images are uploaded and posted here. A video is a long send: uploaded through the
        Videos API, then :class:`Pending` while LinkedIn processes it, and :meth:`resume` posts
        it once ``AVAILABLE`` (docs/decisions/0020-long-sends.md)."""
        if request.profile != POST_PROFILE.key:
            raise ProviderError(ErrorKind.PERMANENT, f"{LABEL}: unknown format {request.profile}.")
        precheck(POST_PROFILE, request, provider=LABEL)
        author = self._author(account, request)
        token = self._token(account)
        if any(video_protocol.is_video(item) for item in request.media):
            return self._send_video(token, author, request)
        images = [(self._upload(token, author, item), item.alt_text) for item in request.media]
        body = _post_body(author, request.text)
        if len(images) == 1:
            media: dict[str, str] = {"id": images[0][0]}
            if images[0][1]:
                media["altText"] = images[0][1][:4086]
            body["content"] = {"media": media}
        elif images:
            body["content"] = {
                "multiImage": {
                    "images": [
                        {"id": urn, **({"altText": alt[:4086]} if alt else {})}
                        for urn, alt in images
                    ]
                }
            }
        return self._create_post(token, body)

    def _send_video(self, token: str, author: str, request: PublishRequest) -> Pending:
        if len(request.media) != 1:
            raise ProviderError(
                ErrorKind.PERMANENT, f"{LABEL}: a video is posted alone, without images."
            )
        urn = video_protocol.send(self, token, author, request.media[0])
        return self._processing({"video": urn, "author": author, "since": time.time()}, 0)

    def resume(
        self, *, account: AccountContext, request: PublishRequest, state: dict[str, Any]
    ) -> PublishResult | Pending:
        """One status read of the video; the post once it is ``AVAILABLE``, else
        :class:`Pending` again (``PROCESSING_FAILED`` and the processing bound fail it)."""
        urn = str(state.get("video") or "")
        since = float(state.get("since") or time.time())
        if not video_protocol.ready(self, self._token(account), urn, started_at=since):
            return self._processing(state, int(state.get("checks") or 0) + 1)
        return self.publish_video_post(
            account,
            text=request.text,
            video=urn,
            title=video_protocol.title_of(request.media[0]) if request.media else "",
            author=str(state.get("author") or ""),
        )

    def _processing(self, state: dict[str, Any], checks: int) -> Pending:
        """LinkedIn is processing the video: checked after ``video_check_seconds``, then half
        as long again each time, up to ``video_check_max_seconds``."""
        wait = min(self.video_check_seconds * 1.5**checks, self.video_check_max_seconds)
        return Pending(
            stage="processing", state={**state, "checks": checks}, check_after_seconds=wait
        )

    def publish_video_post(
        self, account: AccountContext, *, text: str, video: str, title: str, author: str = ""
    ) -> PublishResult:
        """The post of a video LinkedIn has processed (``AVAILABLE``; see ``video``)."""
        body = _post_body(author or self._member(account), text)
        body["content"] = video_protocol.media_content(video, title)
        return self._create_post(self._token(account), body)

    def _create_post(self, token: str, body: dict[str, Any]) -> PublishResult:
        response = self._call(
            "POST", "/rest/posts", token=token, operation="post", write=True, json_body=body
        )
        urn = str(response.headers.get("x-restli-id") or "").strip()
        if not urn:
            raise ProviderError(ErrorKind.AMBIGUOUS, f"{LABEL}: the post answer had no id.")
        return PublishResult(external_id=urn, external_url=self._post_url(urn))

    def _upload(self, token: str, owner: str, item: MediaItem) -> str:
        """``initializeUpload`` for ``owner``, then PUT the bytes to the returned upload URL.
        Both are retried like reads: an image that is never used expires at LinkedIn."""
        payload = read_media(item, provider=LABEL, max_bytes=POST_PROFILE.media.max_bytes)
        init = self._json(
            self._call(
                "POST",
                "/rest/images?action=initializeUpload",
                token=token,
                operation="media upload",
                json_body={"initializeUploadRequest": {"owner": owner}},
            ),
            "media upload",
        )
        value = init.get("value") or {}
        upload_url = str(value.get("uploadUrl") or "")
        image = str(value.get("image") or "")
        if not upload_url or not image:
            raise ProviderError(ErrorKind.TRANSIENT, f"{LABEL}: the upload answer was incomplete.")
        self.put_bytes(token, upload_url, payload, "media upload")
        return image

    def put_bytes(
        self, token: str, upload_url: str, data: bytes, operation: str
    ) -> requests.Response:
        """PUT bytes to an upload URL LinkedIn handed out (the URL itself is a secret)."""
        return self._call(
            "PUT",
            upload_url,
            token=token,
            operation=operation,
            rest=False,
            ok=(200, 201),
            headers={"Content-Type": "application/octet-stream"},
            data=data,
            extra_secrets=(upload_url,),
        )

    # --- reconcile, delete, metrics -----------------------------------------------------------

    def _post(self, token: str, urn: str) -> dict[str, Any] | None:
        try:
            response = self._call(
                "GET", f"/rest/posts/{_urn_path(urn)}", token=token, operation="post lookup"
            )
        except ProviderHTTPError as exc:
            if exc.status in (404, 410):
                return None
            raise
        post = self._json(response, "post lookup")
        return post if post.get("id") else None

    @staticmethod
    def _media_count(post: dict[str, Any]) -> int:
        content = post.get("content") or {}
        if isinstance(content.get("media"), dict):
            return 1
        return len((content.get("multiImage") or {}).get("images") or [])

    def reconcile(
        self, *, account: AccountContext, request: PublishRequest, external_id: str = ""
    ) -> PublishResult | None:
        """Find the post of an earlier attempt (LinkedIn has no idempotency key); see
        docs/providers/linkedin.md.

        1. ``external_id`` known: ``GET /rest/posts/{urn}`` (404 -> ``None``).
        2. Otherwise the author's posts, newest first (``GET /rest/posts?q=author``, up to 3
           pages of 50): one created since the first attempt (minus 5 min) with the same text
           and media count. Reading a member's posts needs ``r_member_social`` (an organization
           page's, ``r_organization_social``); without it: :class:`CannotReconcile`.
        3. Not found: ``None`` once a page reached past the window start or the list ended,
           else :class:`CannotReconcile`.
        """
        token = self._token(account)
        if external_id:
            post = self._post(token, external_id)
            if post is None:
                return None
            urn = str(post["id"])
            return PublishResult(external_id=urn, external_url=self._post_url(urn))
        author = self._author(account, request)
        since = request.first_attempt_at - RECONCILE_SLACK if request.first_attempt_at else None
        wanted = comparable_text(request.text)
        for page in range(RECENT_PAGES):
            try:
                response = self._call(
                    "GET",
                    f"/rest/posts?author={_urn_path(author)}&q=author&count={RECENT_PAGE}"
                    f"&start={page * RECENT_PAGE}&sortBy=CREATED",
                    token=token,
                    operation="recent posts",
                )
            except ProviderHTTPError as exc:
                if exc.status == 403:
                    raise CannotReconcile(
                        f"{LABEL}: this app may not read the author's posts (r_member_social or "
                        "r_organization_social); check the account's posts."
                    ) from exc
                raise
            elements = self._json(response, "recent posts").get("elements") or []
            reached_start = False
            for post in elements:
                if not isinstance(post, dict) or not post.get("id"):
                    continue
                created = int(post.get("createdAt") or 0) / 1000
                if since is not None and created and created < since.timestamp():
                    reached_start = True
                    continue
                if self._media_count(post) != len(request.media):
                    continue
                text = unescape_little(str(post.get("commentary") or ""))
                if comparable_text(text) == wanted:
                    urn = str(post["id"])
                    return PublishResult(external_id=urn, external_url=self._post_url(urn))
            if reached_start or len(elements) < RECENT_PAGE:
                return None  # every post since the window start (or ever) was seen
        raise CannotReconcile(
            f"{LABEL}: cannot tell whether the earlier attempt was published; check the account."
        )

    def delete(self, *, account: AccountContext, external_id: str) -> None:
        try:
            self._call(
                "DELETE",
                f"/rest/posts/{_urn_path(external_id)}",
                token=self._token(account),
                operation="post deletion",
                ok=(200, 204),
            )
        except ProviderHTTPError as exc:
            if exc.status not in (404, 410):  # already gone
                raise

    def metrics(self, *, account: AccountContext, external_id: str) -> Metrics:
        """``GET /rest/socialActions/{urn}``: likes and comments (LinkedIn's public counts)."""
        try:
            response = self._call(
                "GET",
                f"/rest/socialActions/{_urn_path(external_id)}",
                token=self._token(account),
                operation="metrics",
            )
        except ProviderHTTPError as exc:
            if exc.status in (404, 410):
                raise ProviderError(
                    ErrorKind.PERMANENT, f"{LABEL}: the post no longer exists."
                ) from exc
            raise
        body = self._json(response, "metrics")
        return Metrics(
            likes=int((body.get("likesSummary") or {}).get("totalLikes") or 0),
            comments=int((body.get("commentsSummary") or {}).get("aggregatedTotalComments") or 0),
        )

    # --- destination options -------------------------------------------------------------------

    def destination_options(
        self, *, account: AccountContext, region_code: str = "US", language: str = "en"
    ) -> dict[str, list[dict[str, str]]]:
        """Authors: the member, then the organization pages the member administers
        (``organizationAcls``, role ADMINISTRATOR, approved) when the grant allows reading
        them; a grant without organization scopes lists the member alone."""
        token = self._token(account)
        member = self._member(account)
        authors = [{"label": account.username or "Me", "value": member}]
        try:
            response = self._call(
                "GET",
                "/rest/organizationAcls",
                token=token,
                operation="organization pages",
                params={"q": "roleAssignee", "role": "ADMINISTRATOR", "state": "APPROVED"},
            )
        except ProviderHTTPError as exc:
            if exc.status == 403:  # no organization scopes in this grant
                return {"author": authors}
            raise
        elements = self._json(response, "organization pages").get("elements") or []
        for acl in elements[:MAX_ORGANIZATIONS]:
            urn = str((acl or {}).get("organization") or "")
            org_id = urn.removeprefix(_ORGANIZATION)
            if not urn.startswith(_ORGANIZATION) or not org_id.isdigit():
                continue
            label = urn
            try:
                org = self._json(
                    self._call(
                        "GET",
                        f"/rest/organizations/{org_id}",
                        token=token,
                        operation="organization lookup",
                    ),
                    "organization lookup",
                )
                label = str(org.get("localizedName") or urn)
            except ProviderHTTPError as exc:
                if exc.kind != ErrorKind.PERMANENT:
                    raise
            authors.append({"label": label, "value": urn})
        return {"author": authors}
