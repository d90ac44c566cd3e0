"""The Mastodon adapter: connect (OAuth), publish with ``Idempotency-Key``, media upload,
reconcile, metrics and boosts against any instance."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote, urlsplit

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
    ProviderAdapter,
    ProviderError,
    PublishRequest,
    PublishResult,
)
from providers.helpers import language_options, precheck
from providers.http import HttpClient
from providers.http_errors import (
    CannotReconcile,
    ErrorDetail,
    ProviderHTTPError,
    default_error_detail,
)
from providers.mastodon.oauth import (
    SCOPES,
    authorization_url,
    needs_registration,
)
from providers.mastodon.statuses import (
    POST_PROFILE,
    _created_at,
    _normalize_text,
    status_body,
    visibility_options,
)
from providers.mastodon.video import is_video, media_max_bytes, video_limits
from providers.pkce import pkce_pair
from providers.streamed_form import FilePart, streamed_form
from providers.url_safety import check_public_url

PROVIDER = "mastodon"
LABEL = "Mastodon"
# Mastodon keeps an Idempotency-Key's result for 1 hour; keep a margin for clock skew.
IDEMPOTENCY_WINDOW = timedelta(minutes=55)
RECONCILE_SLACK = timedelta(minutes=5)
RECENT_LIMIT = 40
MAX_SOURCE_LOOKUPS = 10


def _parse_error(response: requests.Response) -> ErrorDetail:
    detail = default_error_detail(response)
    try:
        body = response.json()
    except ValueError:
        body = {}
    error = body.get("error") if isinstance(body, dict) else None
    if error in ("invalid_grant", "invalid_client", "unauthorized_client", "invalid_token"):
        return ErrorDetail(message=detail.message, kind=ErrorKind.AUTH, code=str(error))
    return detail


class MastodonAdapter(ProviderAdapter):
    capabilities = Capabilities(
        provider=PROVIDER,
        display_name=LABEL,
        connection=ConnectionMode.OAUTH2,
        federated=True,
        pkce=True,
        required_scopes=SCOPES,
        profiles=(POST_PROFILE,),
        account_kind="user",
        supports_refresh=True,  # re-validates the grant; Mastodon tokens do not expire
        supports_revoke=True,
        supports_metrics=True,
        supports_repost=True,
        supports_destination_options=True,
    )
    media_check_seconds = 2.0  # media the server is processing is first checked after this
    media_check_max_seconds = 30.0

    def __init__(self, *, http: HttpClient | None = None) -> None:
        self.http = http or HttpClient()

    # --- plumbing ---------------------------------------------------------------------------

    def _instance(self, url: str, *, resolve: bool = False, field: str | None = None) -> str:
        """The instance origin. DNS is checked at connect time (``resolve``); afterwards the
        socket-level guard of the HTTP client checks every address actually connected to.
        ``field``: the URL is the user's input (a refusal is a :class:`ProviderInputError`)."""
        checked = check_public_url(
            url if "://" in url else f"https://{url}",
            allow_private=self.http.allow_private,
            provider=LABEL,
            what="instance URL",
            resolve=resolve,
            field=field,
        )
        parts = urlsplit(checked)
        return f"{parts.scheme}://{parts.netloc}"

    @staticmethod
    def _token(account: AccountContext) -> str:
        token = account.credentials.get("access_token", "")
        if not token:
            raise ProviderError(ErrorKind.AUTH, f"{LABEL}: no access token; reconnect the account.")
        return token

    def _call(
        self,
        method: str,
        instance: str,
        path: str,
        *,
        operation: str,
        write: bool = False,
        token: str = "",
        ok: tuple[int, ...] = (200,),
        headers: dict[str, str] | None = None,
        extra_secrets: tuple[str, ...] = (),
        **kwargs: Any,
    ) -> requests.Response:
        all_headers = dict(headers or {})
        if token:
            all_headers["Authorization"] = f"Bearer {token}"
        return self.http.request(
            method,
            instance + path,
            provider=LABEL,
            operation=operation,
            write=write,
            user_url=True,
            ok=ok,
            headers=all_headers,
            secrets=(token, *extra_secrets),
            parse_error=_parse_error,
            **kwargs,
        )

    def _json(self, response: requests.Response, operation: str, write: bool = False) -> Any:
        return self.http.json(response, provider=LABEL, operation=operation, write=write)

    @staticmethod
    def _result(status: dict[str, Any]) -> PublishResult:
        return PublishResult(
            external_id=str(status["id"]),
            external_url=str(status.get("url") or status.get("uri") or ""),
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
        instance = self._instance(instance_url, resolve=True, field="instance_url")
        app = dict(app or {})
        if needs_registration(app, redirect_uri=redirect_uri, instance=instance):
            # A duplicate registration is harmless, so this POST is retried like a read.
            response = self._call(
                "POST",
                instance,
                "/api/v1/apps",
                operation="app registration",
                data={
                    "client_name": "Herald",
                    "redirect_uris": redirect_uri,
                    "scopes": " ".join(SCOPES),
                },
            )
            registered = self._json(response, "app registration")
            app = {
                "client_id": str(registered["client_id"]),
                "client_secret": str(registered["client_secret"]),
                "redirect_uri": redirect_uri,
                "instance_url": instance,
            }
        verifier, challenge = pkce_pair()
        url = authorization_url(
            instance,
            client_id=app["client_id"],
            redirect_uri=redirect_uri,
            state=state,
            challenge=challenge,
        )
        return AuthorizationStart(authorization_url=url, code_verifier=verifier, app=app)

    def complete_authorization(
        self,
        *,
        code: str,
        redirect_uri: str,
        code_verifier: str,
        instance_url: str = "",
        app: dict[str, str] | None = None,
    ) -> ConnectedAccount:
        instance = self._instance(instance_url)
        app = app or {}
        if not app.get("client_id") or not app.get("client_secret"):
            raise ProviderError(
                ErrorKind.PERMANENT, f"{LABEL}: no app registration for {instance}."
            )
        response = self._call(
            "POST",
            instance,
            "/oauth/token",
            operation="token exchange",
            data={
                "grant_type": "authorization_code",
                "code": code,
                "client_id": app["client_id"],
                "client_secret": app["client_secret"],
                "redirect_uri": redirect_uri,
                "code_verifier": code_verifier,
                "scope": " ".join(SCOPES),
            },
            extra_secrets=(code, app["client_secret"], code_verifier),
        )
        grant = self._json(response, "token exchange")
        token = str(grant.get("access_token") or "")
        if not token:
            raise ProviderError(ErrorKind.AUTH, f"{LABEL}: the instance returned no access token.")
        scopes = tuple(str(grant.get("scope") or " ".join(SCOPES)).split())
        return self._verify(instance, token, scopes)

    def _verify(self, instance: str, token: str, scopes: tuple[str, ...]) -> ConnectedAccount:
        response = self._call(
            "GET",
            instance,
            "/api/v1/accounts/verify_credentials",
            token=token,
            operation="account lookup",
        )
        me = self._json(response, "account lookup")
        host = urlsplit(instance).hostname or ""
        acct = str(me.get("acct") or me.get("username") or "")
        return ConnectedAccount(
            external_id=str(me["id"]),
            username=acct if "@" in acct else f"{acct}@{host}",
            display_name=str(me.get("display_name") or ""),
            avatar_url=str(me.get("avatar") or ""),
            instance_url=instance,
            account_kind="bot" if me.get("bot") else "user",
            credentials={"access_token": token},
            granted_scopes=scopes,
            profile_url=f"{instance}/@{quote(acct.split('@')[0], safe='')}" if acct else "",
        )

    def refresh(self, *, account: AccountContext) -> ConnectedAccount:
        """Mastodon access tokens do not expire: re-validate the grant and the profile."""
        instance = self._instance(account.instance_url)
        scopes = tuple(account.credentials.get("scope", " ".join(SCOPES)).split())
        return self._verify(instance, self._token(account), scopes)

    def revoke(self, *, account: AccountContext) -> None:
        instance = self._instance(account.instance_url)
        token = self._token(account)
        if not account.app.get("client_id"):
            raise ProviderError(
                ErrorKind.PERMANENT, f"{LABEL}: no app registration to revoke with."
            )
        self._call(
            "POST",
            instance,
            "/oauth/revoke",
            operation="token revocation",
            data={
                "client_id": account.app["client_id"],
                "client_secret": account.app.get("client_secret", ""),
                "token": token,
            },
            extra_secrets=(token, account.app.get("client_secret", "")),
        )

    # --- publish ------------------------------------------------------------------------------

    def publish(
        self, *, account: AccountContext, request: PublishRequest
    ) -> PublishResult | Pending:
        """Upload the media, then post the status with the ``Idempotency-Key``. Media the
        server is still processing (``POST /api/v2/media`` answered 202: a video, or an image
        it processes in the background) makes this a long send: :class:`Pending` with the media
        ids, and :meth:`resume` posts once every item is processed; no worker thread waits
        meanwhile (docs/decisions/0020-long-sends.md)."""
        if request.profile != POST_PROFILE.key:
            raise ProviderError(ErrorKind.PERMANENT, f"{LABEL}: unknown format {request.profile}.")
        precheck(POST_PROFILE, request, provider=LABEL)
        instance = self._instance(account.instance_url)
        token = self._token(account)
        if any(is_video(item) for item in request.media):
            self._check_video_limits(instance, token, request.media)
        uploads = [self._upload(instance, token, item) for item in request.media]
        media_ids = [media_id for media_id, _ in uploads]
        waiting = [media_id for media_id, ready in uploads if not ready]
        if waiting:
            return self._processing({"media_ids": media_ids, "waiting": waiting, "checks": 0})
        return self._post_status(instance, token, request, media_ids)

    def resume(
        self, *, account: AccountContext, request: PublishRequest, state: dict[str, Any]
    ) -> PublishResult | Pending:
        """Ask ``GET /api/v1/media/:id`` about each item still processing; post the status
        once none is, else answer :class:`Pending` again (with a longer wait)."""
        instance = self._instance(account.instance_url)
        token = self._token(account)
        waiting = [
            str(media_id)
            for media_id in state.get("waiting") or []
            if not self._processed(instance, token, str(media_id))
        ]
        media_ids = [str(media_id) for media_id in state.get("media_ids") or []]
        if waiting:
            checks = int(state.get("checks") or 0) + 1
            return self._processing({"media_ids": media_ids, "waiting": waiting, "checks": checks})
        return self._post_status(instance, token, request, media_ids)

    def _processing(self, state: dict[str, Any]) -> Pending:
        """Waiting for the server to process media: checked after 2 s, then half as long
        again each time, up to ``media_check_max_seconds``."""
        wait = min(
            self.media_check_seconds * 1.5 ** int(state["checks"]), self.media_check_max_seconds
        )
        return Pending(stage="processing", state=state, check_after_seconds=wait)

    def _post_status(
        self, instance: str, token: str, request: PublishRequest, media_ids: list[str]
    ) -> PublishResult:
        response = self._call(
            "POST",
            instance,
            "/api/v1/statuses",
            token=token,
            operation="status post",
            write=True,
            headers={"Idempotency-Key": request.idempotency_key},
            json_body=status_body(request, media_ids),
        )
        return self._result(self._json(response, "status post", write=True))

    def _check_video_limits(self, instance: str, token: str, media: list[MediaItem]) -> None:
        """The server's own video size limit (``GET /api/v2/instance``
        ``configuration.media_attachments.video_size_limit``), asked before a video is
        uploaded: one read, only for posts with a video. A server too old to answer is held to
        the documented default (the profile's video rule, checked when the post was made)."""
        try:
            response = self._call(
                "GET", instance, "/api/v2/instance", token=token, operation="server limits"
            )
        except ProviderHTTPError as exc:
            if exc.status == 404:
                return
            raise
        limits = video_limits(self._json(response, "server limits"))
        for item in media:
            if is_video(item) and limits.max_bytes and item.size > limits.max_bytes:
                raise ProviderError(
                    ErrorKind.PERMANENT,
                    f"{LABEL}: {item.name} is {item.size} bytes; this server takes videos "
                    f"up to {limits.max_bytes} bytes.",
                )

    def _upload(self, instance: str, token: str, item: MediaItem) -> tuple[str, bool]:
        """Upload one item: its media id, and whether the server has processed it (200 with
        its ``url``). One it is still processing (202), image or video, is not waited for here:
        :meth:`publish` answers :class:`Pending` and :meth:`resume` asks about it later."""
        fields = {"description": item.alt_text} if item.alt_text else {}
        files: list[FilePart] = [("file", item, media_max_bytes(item))]
        # The file is streamed from storage as the body is sent (a 99 MB video never sits in
        # the worker's memory). An orphaned upload is harmless (the instance deletes unattached
        # media), so a timeout here is retried like a read rather than treated as ambiguous.
        with streamed_form(fields, files, provider=LABEL) as form:
            response = self._call(
                "POST",
                instance,
                "/api/v2/media",
                token=token,
                operation="media upload",
                ok=(200, 202),
                headers=form["headers"],
                data=form["data"],
            )
        media = self._json(response, "media upload")
        media_id = str(media["id"])
        return media_id, response.status_code == 200 and bool(media.get("url"))

    def _processed(self, instance: str, token: str, media_id: str) -> bool:
        """``GET /api/v1/media/:id``: 206 while processing, 200 once done. A 4xx other than
        401/404/429 means the server could not process it (permanent); a 404, that the upload
        is gone (sent again from the start, as a retry)."""
        try:
            polled = self._call(
                "GET",
                instance,
                f"/api/v1/media/{quote(media_id)}",
                token=token,
                operation="media status",
                ok=(200, 206),
            )
        except ProviderHTTPError as exc:
            if exc.status == 404:
                raise ProviderError(
                    ErrorKind.TRANSIENT, f"{LABEL}: the uploaded media is gone; uploading again."
                ) from exc
            if exc.status is not None and 400 <= exc.status < 500 and exc.status not in (401, 429):
                raise ProviderError(
                    ErrorKind.PERMANENT,
                    f"{LABEL}: the server could not process the media ({exc.message}).",
                ) from exc
            raise
        return polled.status_code == 200

    def reconcile(
        self, *, account: AccountContext, request: PublishRequest, external_id: str = ""
    ) -> PublishResult | None:
        """Find the status of an earlier attempt; see docs/providers/mastodon.md.

        1. ``external_id`` known: ``GET /api/v1/statuses/:id`` (404 -> ``None``).
        2. Scan the account's 40 most recent statuses created since the first attempt (minus
           5 min) and compare their source text (``GET /api/v1/statuses/:id/source``).
        3. Not found and the first attempt is younger than 55 min: re-send with the SAME
           ``Idempotency-Key``; Mastodon returns the original status if one was created (a
           post with a video, or media the server is still processing: ``None``, the engine
           sends it again under that key).
        4. Otherwise ``None`` when the scan covered the whole window, else
           :class:`CannotReconcile` (a ``NotSupported`` of kind ``AMBIGUOUS``).
        """
        instance = self._instance(account.instance_url)
        token = self._token(account)
        if external_id:
            status = self._status(instance, token, external_id)
            return self._result(status) if status else None
        since = request.first_attempt_at - RECONCILE_SLACK if request.first_attempt_at else None
        found, covered = self._scan_recent(instance, token, account, request, since)
        if found:
            return found
        first = request.first_attempt_at
        if first is not None and datetime.now(UTC) - first < IDEMPOTENCY_WINDOW:
            return self._resend(account, request)
        if covered:  # the scan saw every status since the window start (or the whole history)
            return None
        raise CannotReconcile(
            f"{LABEL}: cannot tell whether the earlier attempt was published; check the account."
        )

    def _resend(self, account: AccountContext, request: PublishRequest) -> PublishResult | None:
        """Within the key's window: a post is sent again with the SAME ``Idempotency-Key`` here;
        a post with a video is a long send, so it answers ``None`` and the engine sends it
        again from the start, under the same key (Mastodon answers the original status if
        there was one)."""
        if any(is_video(item) for item in request.media):
            return None
        resent = self.publish(account=account, request=request)
        return resent if isinstance(resent, PublishResult) else None

    def _status(self, instance: str, token: str, status_id: str) -> dict[str, Any] | None:
        try:
            response = self._call(
                "GET",
                instance,
                f"/api/v1/statuses/{quote(status_id)}",
                token=token,
                operation="status lookup",
            )
        except ProviderHTTPError as exc:
            if exc.status == 404:
                return None
            raise
        status: dict[str, Any] = self._json(response, "status lookup")
        return status

    def _scan_recent(
        self,
        instance: str,
        token: str,
        account: AccountContext,
        request: PublishRequest,
        since: datetime | None,
    ) -> tuple[PublishResult | None, bool]:
        if not account.external_id:
            return None, False
        response = self._call(
            "GET",
            instance,
            f"/api/v1/accounts/{quote(account.external_id)}/statuses",
            token=token,
            operation="recent statuses",
            params={"limit": RECENT_LIMIT, "exclude_reblogs": "true"},
        )
        statuses = [s for s in self._json(response, "recent statuses") if isinstance(s, dict)]
        wanted_text = _normalize_text(request.text)
        visibility = request.options.get("visibility") or "public"
        lookups = 0
        oldest: datetime | None = None
        for status in statuses:
            created = _created_at(status)
            if created is not None:
                oldest = created if oldest is None else min(oldest, created)
            if since is not None and (created is None or created < since):
                continue
            if len(status.get("media_attachments") or []) != len(request.media):
                continue
            if status.get("visibility", visibility) != visibility:
                continue
            if lookups >= MAX_SOURCE_LOOKUPS:
                break
            lookups += 1
            source = self._json(
                self._call(
                    "GET",
                    instance,
                    f"/api/v1/statuses/{quote(str(status['id']))}/source",
                    token=token,
                    operation="status source",
                ),
                "status source",
            )
            if _normalize_text(str(source.get("text", ""))) == wanted_text:
                return self._result(status), True
        covered = len(statuses) < RECENT_LIMIT or (
            since is not None and oldest is not None and oldest < since
        )
        return None, covered

    # --- reads and reposts -----------------------------------------------------------------

    def destination_options(
        self, *, account: AccountContext, region_code: str = "US", language: str = "en"
    ) -> dict[str, list[dict[str, str]]]:
        return {
            "visibility": visibility_options(language),
            "language": language_options(language),
        }

    def metrics(self, *, account: AccountContext, external_id: str) -> Metrics:
        instance = self._instance(account.instance_url)
        status = self._status(instance, self._token(account), external_id)
        if status is None:
            raise ProviderError(ErrorKind.PERMANENT, f"{LABEL}: the status no longer exists.")
        return Metrics(
            likes=int(status.get("favourites_count") or 0),
            comments=int(status.get("replies_count") or 0),
            reposts=int(status.get("reblogs_count") or 0),
        )

    def _local_status(
        self, instance: str, token: str, external_id: str, source_url: str
    ) -> dict[str, Any] | None:
        """The post as the account's own instance shows it (with the account's ``reblogged``
        flag): by id on the same instance, else resolved from its URL. ``None``: gone."""
        if external_id:
            return self._status(instance, token, external_id)
        response = self._call(
            "GET",
            instance,
            "/api/v2/search",
            token=token,
            operation="status search",
            params={"q": source_url, "type": "statuses", "resolve": "true", "limit": 1},
        )
        statuses = self._json(response, "status search").get("statuses") or []
        return statuses[0] if statuses and isinstance(statuses[0], dict) else None

    def _require_status(
        self, instance: str, token: str, external_id: str, source_url: str
    ) -> dict[str, Any]:
        status = self._local_status(instance, token, external_id, source_url)
        if status is None:
            raise ProviderError(ErrorKind.PERMANENT, f"{LABEL}: the status to boost was not found.")
        return status

    def repost(
        self,
        *,
        account: AccountContext,
        external_id: str,
        source_url: str = "",
        idempotency_key: str = "",
    ) -> PublishResult:
        instance = self._instance(account.instance_url)
        token = self._token(account)
        status_id = external_id or str(self._require_status(instance, token, "", source_url)["id"])
        # Reblogging is idempotent on Mastodon (a second reblog by the same account returns the
        # first), so this write can be retried safely; no key is needed.
        response = self._call(
            "POST",
            instance,
            f"/api/v1/statuses/{quote(status_id)}/reblog",
            token=token,
            operation="boost",
        )
        reblog = self._json(response, "boost")
        original = reblog.get("reblog") or {}
        return PublishResult(
            external_id=str(reblog["id"]),
            external_url=str(original.get("url") or reblog.get("url") or ""),
        )

    def find_repost(
        self,
        *,
        account: AccountContext,
        external_id: str,
        source_url: str = "",
        idempotency_key: str = "",
    ) -> PublishResult | None:
        """The status's ``reblogged`` flag (as the account sees it) says whether the boost
        exists; its id comes from the account's recent statuses (reblogs included)."""
        instance = self._instance(account.instance_url)
        token = self._token(account)
        status = self._local_status(instance, token, external_id, source_url)
        if status is None or not status.get("reblogged"):
            return None
        status_id = str(status["id"])
        url = str(status.get("url") or status.get("uri") or "")
        if account.external_id:
            response = self._call(
                "GET",
                instance,
                f"/api/v1/accounts/{quote(account.external_id)}/statuses",
                token=token,
                operation="recent statuses",
                params={"limit": RECENT_LIMIT},
            )
            for item in self._json(response, "recent statuses"):
                if (
                    isinstance(item, dict)
                    and str((item.get("reblog") or {}).get("id")) == status_id
                ):
                    return PublishResult(external_id=str(item["id"]), external_url=url)
        return PublishResult(external_id="", external_url=url)

    def unrepost(
        self,
        *,
        account: AccountContext,
        repost_id: str,
        external_id: str = "",
        source_url: str = "",
    ) -> None:
        instance = self._instance(account.instance_url)
        token = self._token(account)
        original_id = external_id
        if not original_id and repost_id:
            reblog = self._status(instance, token, repost_id)
            if reblog is None:
                return  # already gone
            original_id = str((reblog.get("reblog") or {}).get("id") or "")
            if not original_id:
                raise ProviderError(ErrorKind.PERMANENT, f"{LABEL}: {repost_id} is not a boost.")
        if not original_id:
            status = self._local_status(instance, token, "", source_url) if source_url else None
            if status is None:
                return  # nothing to remove
            original_id = str(status["id"])
        # Unreblogging a status that is not boosted answers 200 too: safe to repeat.
        self._call(
            "POST",
            instance,
            f"/api/v1/statuses/{quote(original_id)}/unreblog",
            token=token,
            operation="unboost",
        )
