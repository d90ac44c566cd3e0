"""The Bluesky adapter: sessions (handle + app password), posts, reconcile, metrics and reposts
through XRPC on the account's PDS."""

from __future__ import annotations

import base64
import json
import re
import time
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

import requests

from providers.base import (
    AccountContext,
    Capabilities,
    ConnectedAccount,
    ConnectionMode,
    ErrorKind,
    MediaItem,
    Metrics,
    Pending,
    ProviderAdapter,
    ProviderError,
    ProviderInputError,
    PublishRequest,
    PublishResult,
)
from providers.bluesky import video as video_protocol
from providers.bluesky.media import image_entry, read_image
from providers.bluesky.records import (
    POST,
    POST_PROFILE,
    REPOST,
    _rkey,
    build_facets,
    record_key_for,
)
from providers.bluesky.video import DEFAULT_VIDEO_URL
from providers.helpers import language_options, precheck
from providers.http import HttpClient
from providers.http_errors import ErrorDetail, ProviderHTTPError, default_error_detail
from providers.url_safety import check_public_url

PROVIDER = "bluesky"
LABEL = "Bluesky"
DEFAULT_SERVICE_URL = "https://bsky.social"
_AUTH_ERRORS = {
    "ExpiredToken",
    "InvalidToken",
    "AuthenticationRequired",
    "AuthFactorTokenRequired",
    "AccountTakedown",
    "AccountDeactivated",
}
_POST_URL_RE = re.compile(r"^/profile/([^/]+)/post/([A-Za-z0-9._:~-]+)/?$")


def _jwt_expiry(token: str) -> datetime | None:
    try:
        payload = token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        return datetime.fromtimestamp(int(claims["exp"]), tz=UTC)
    except (IndexError, KeyError, TypeError, ValueError):
        return None


def _parse_error(response: requests.Response) -> ErrorDetail:
    try:
        body = response.json()
    except ValueError:
        return default_error_detail(response)
    if not isinstance(body, dict):
        return ErrorDetail()
    error = str(body.get("error") or "")
    message = str(body.get("message") or "")
    text = f"{error}: {message}" if error and message else error or message
    kind = ErrorKind.AUTH if error in _AUTH_ERRORS else None
    return ErrorDetail(message=text, kind=kind, code=error)


def _is_video(item: MediaItem) -> bool:
    return item.mime_type.startswith("video/")


class BlueskyAdapter(ProviderAdapter):
    capabilities = Capabilities(
        provider=PROVIDER,
        display_name=LABEL,
        connection=ConnectionMode.CREDENTIALS,
        profiles=(POST_PROFILE,),
        account_kind="user",
        credential_fields=("handle", "app_password"),
        supports_refresh=True,
        supports_revoke=True,
        supports_metrics=True,
        supports_repost=True,
        supports_destination_options=True,
    )
    video_check_seconds = 2.0  # a processing video is first checked after this long
    video_check_max_seconds = 30.0

    def __init__(
        self,
        *,
        http: HttpClient | None = None,
        service_url: str = DEFAULT_SERVICE_URL,
        video_url: str = DEFAULT_VIDEO_URL,
    ) -> None:
        self.http = http or HttpClient()
        self.service_url = (service_url or DEFAULT_SERVICE_URL).rstrip("/")
        self.video_url = (video_url or DEFAULT_VIDEO_URL).rstrip("/")  # the video service

    # --- plumbing ---------------------------------------------------------------------------

    def _service(self, account: AccountContext | None = None) -> str:
        return ((account.instance_url if account else "") or self.service_url).rstrip("/")

    def _pds(self, account: AccountContext) -> str:
        return (account.credentials.get("pds_url") or self._service(account)).rstrip("/")

    def _is_operator_host(self, url: str) -> bool:
        return urlsplit(url).netloc == urlsplit(self.service_url).netloc

    def _request(
        self,
        method: str,
        base: str,
        nsid: str,
        *,
        operation: str,
        token: str = "",
        write: bool = False,
        secrets: tuple[str, ...] = (),
        headers: dict[str, str] | None = None,
        **kwargs: Any,
    ) -> requests.Response:
        all_headers = dict(headers or {})
        if token:
            all_headers["Authorization"] = f"Bearer {token}"
        return self.http.request(
            method,
            f"{base}/xrpc/{nsid}",
            provider=LABEL,
            operation=operation,
            write=write,
            # The PDS address comes from the account's DID document, not from the operator.
            user_url=not self._is_operator_host(base),
            headers=all_headers,
            secrets=(token, *secrets),
            parse_error=_parse_error,
            **kwargs,
        )

    def _xrpc(
        self,
        account: AccountContext,
        method: str,
        nsid: str,
        *,
        operation: str,
        write: bool = False,
        retry_expired: bool = True,
        **kwargs: Any,
    ) -> requests.Response:
        """An authenticated call on the account's PDS. An expired access token is refreshed
        once and the call repeated (callers that create records pass ``retry_expired=False``)."""
        try:
            return self._request(
                method,
                self._pds(account),
                nsid,
                operation=operation,
                write=write,
                token=account.credentials.get("access_jwt", ""),
                **kwargs,
            )
        except ProviderHTTPError as exc:
            if exc.code != "ExpiredToken" or not retry_expired:
                raise
        self._refresh_in_place(account)
        return self._request(
            method,
            self._pds(account),
            nsid,
            operation=operation,
            write=write,
            token=account.credentials.get("access_jwt", ""),
            **kwargs,
        )

    def _json(self, response: requests.Response, operation: str, write: bool = False) -> Any:
        return self.http.json(response, provider=LABEL, operation=operation, write=write)

    def _refresh_in_place(self, account: AccountContext) -> None:
        fresh = self.refresh(account=account)
        account.credentials.update(fresh.credentials)
        if account.on_credentials_changed is not None:
            account.on_credentials_changed(dict(account.credentials))

    def _post_url(self, account: AccountContext, uri: str) -> str:
        actor = account.username or account.external_id
        return f"https://bsky.app/profile/{actor}/post/{_rkey(uri)}"

    # --- connect ------------------------------------------------------------------------------

    def _session_account(
        self, session: dict[str, Any], service: str, default_pds: str = ""
    ) -> ConnectedAccount:
        access = str(session.get("accessJwt") or "")
        refresh = str(session.get("refreshJwt") or "")
        did = str(session.get("did") or "")
        if not access or not did:
            raise ProviderError(ErrorKind.AUTH, f"{LABEL}: the server returned no session.")
        pds = default_pds or service
        for item in (session.get("didDoc") or {}).get("service") or []:
            if isinstance(item, dict) and str(item.get("id", "")).endswith("#atproto_pds"):
                pds = str(item.get("serviceEndpoint") or service).rstrip("/")
        if not self._is_operator_host(pds):
            pds = check_public_url(
                pds, allow_private=self.http.allow_private, provider=LABEL, what="PDS address"
            )
        credentials = {"access_jwt": access, "refresh_jwt": refresh, "pds_url": pds}
        return ConnectedAccount(
            external_id=did,
            username=str(session.get("handle") or ""),
            credentials=credentials,
            instance_url=service,
            account_kind="user",
            expires_at=_jwt_expiry(access),
            profile_url=f"https://bsky.app/profile/{session.get('handle') or did}",
        )

    def connect_with_credentials(self, *, fields: dict[str, str]) -> ConnectedAccount:
        identifier = (fields.get("handle") or fields.get("identifier") or "").strip().lstrip("@")
        password = (fields.get("app_password") or fields.get("password") or "").strip()
        if not identifier:
            raise ProviderInputError("handle", f"{LABEL}: the handle is required.")
        if not password:
            raise ProviderInputError("app_password", f"{LABEL}: the app password is required.")
        service = self.service_url
        response = self._request(
            "POST",
            service,
            "com.atproto.server.createSession",
            operation="sign-in",
            json_body={"identifier": identifier, "password": password},
            secrets=(password,),
        )
        account = self._session_account(self._json(response, "sign-in"), service)
        try:  # display name and avatar are a nicety: never fail a connect on them
            profile = self._json(
                self._request(
                    "GET",
                    account.credentials["pds_url"],
                    "app.bsky.actor.getProfile",
                    operation="profile",
                    token=account.credentials["access_jwt"],
                    params={"actor": account.external_id},
                ),
                "profile",
            )
            account.display_name = str(profile.get("displayName") or "")
            account.avatar_url = str(profile.get("avatar") or "")
        except ProviderError:
            pass
        return account

    def refresh(self, *, account: AccountContext) -> ConnectedAccount:
        refresh_jwt = account.credentials.get("refresh_jwt", "")
        if not refresh_jwt:
            raise ProviderError(
                ErrorKind.AUTH, f"{LABEL}: no refresh token; reconnect the account."
            )
        service = self._service(account)
        response = self._request(
            "POST",
            service,
            "com.atproto.server.refreshSession",
            operation="session refresh",
            token=refresh_jwt,
        )
        session = self._json(response, "session refresh")
        # Never overwrite a refresh token with nothing.
        session["refreshJwt"] = session.get("refreshJwt") or refresh_jwt
        fresh = self._session_account(session, service, account.credentials.get("pds_url", ""))
        fresh.username = fresh.username or account.username
        return fresh

    def revoke(self, *, account: AccountContext) -> None:
        refresh_jwt = account.credentials.get("refresh_jwt", "")
        if not refresh_jwt:
            return
        self._request(
            "POST",
            self._service(account),
            "com.atproto.server.deleteSession",
            operation="sign-out",
            token=refresh_jwt,
        )

    # --- publish ------------------------------------------------------------------------------

    def _resolve_handle(self, account: AccountContext, handle: str) -> str | None:
        try:
            response = self._xrpc(
                account,
                "GET",
                "com.atproto.identity.resolveHandle",
                operation="handle lookup",
                params={"handle": handle},
            )
        except ProviderHTTPError as exc:
            if exc.kind == ErrorKind.PERMANENT:
                return None  # unknown handle: the mention stays plain text
            raise
        did = self._json(response, "handle lookup").get("did")
        return str(did) if did else None

    def _upload(self, account: AccountContext, item: MediaItem) -> dict[str, Any]:
        payload = read_image(item, provider=LABEL)
        # Blobs are content-addressed: uploading twice stores one blob, so retry like a read.
        response = self._xrpc(
            account,
            "POST",
            "com.atproto.repo.uploadBlob",
            operation="image upload",
            data=payload,
            headers={"Content-Type": item.mime_type},
        )
        return image_entry(item, self._json(response, "image upload")["blob"], payload)

    def publish(
        self, *, account: AccountContext, request: PublishRequest
    ) -> PublishResult | Pending:
        """Images are uploaded and posted here. A video is a long send: sent to the video
        service, then :class:`Pending` while it processes the video, and :meth:`resume` posts
        it once the job has its blob (docs/decisions/0020-long-sends.md)."""
        if request.profile != POST_PROFILE.key:
            raise ProviderError(ErrorKind.PERMANENT, f"{LABEL}: unknown format {request.profile}.")
        precheck(POST_PROFILE, request, provider=LABEL)
        if any(_is_video(item) for item in request.media):
            return self._send_video(account, request)
        images = [self._upload(account, item) for item in request.media]
        embed = {"$type": "app.bsky.embed.images", "images": images} if images else None
        return self.create_post(account, request, embed)

    def _send_video(
        self, account: AccountContext, request: PublishRequest
    ) -> PublishResult | Pending:
        if len(request.media) != 1:
            raise ProviderError(
                ErrorKind.PERMANENT, f"{LABEL}: a video is posted alone, without images."
            )
        item = request.media[0]
        video_protocol.check_limits(video_protocol.upload_limits(self, account), item)
        job = video_protocol.upload(self, account, item)
        blob = video_protocol.finished_blob(job)
        if blob is not None:  # a video the service processed before
            return self._post_video(account, request, blob)
        return self._processing({"job_id": job.job_id, "since": time.time()})

    def resume(
        self, *, account: AccountContext, request: PublishRequest, state: dict[str, Any]
    ) -> PublishResult | Pending:
        """One ``getJobStatus`` read; the post once the job has the video's blob, else
        :class:`Pending` again (a failed job and the processing bound fail it)."""
        since = float(state.get("since") or time.time())
        blob = video_protocol.ready(self, str(state.get("job_id") or ""), started_at=since)
        if blob is None:
            return self._processing(state)
        return self._post_video(account, request, blob)

    def _processing(self, state: dict[str, Any]) -> Pending:
        """The video service is processing the video: checked after ``video_check_seconds``,
        then half as long again each time, up to ``video_check_max_seconds``."""
        checks = int(state.get("checks") or 0)
        wait = min(self.video_check_seconds * 1.5**checks, self.video_check_max_seconds)
        return Pending(
            stage="processing", state={**state, "checks": checks + 1}, check_after_seconds=wait
        )

    def _post_video(
        self, account: AccountContext, request: PublishRequest, blob: dict[str, Any]
    ) -> PublishResult:
        item = request.media[0]
        size = item.display_size()  # the probe's stored facts
        return self.create_post(account, request, video_protocol.embed(blob, item.alt_text, size))

    def create_post(
        self, account: AccountContext, request: PublishRequest, embed: dict[str, Any] | None
    ) -> PublishResult:
        """The post record (text, facets, language and ``embed``: images, or a video the video
        service has processed) at the destination's deterministic key."""
        record: dict[str, Any] = {
            "$type": POST,
            "text": request.text,
            "createdAt": datetime.now(UTC)
            .isoformat(timespec="milliseconds")
            .replace("+00:00", "Z"),
        }
        facets = build_facets(request.text, lambda handle: self._resolve_handle(account, handle))
        if facets:
            record["facets"] = facets
        if embed:
            record["embed"] = embed
        if request.options.get("language"):
            record["langs"] = [request.options["language"]]
        rkey = record_key_for(request.idempotency_key)
        uri = self._create(account, POST, rkey, record, write=True)
        return PublishResult(external_id=uri, external_url=self._post_url(account, uri))

    def _create(
        self,
        account: AccountContext,
        collection: str,
        rkey: str,
        record: dict[str, Any],
        *,
        write: bool,
    ) -> str:
        """``createRecord`` with a deterministic key; returns the record's AT URI.

        Never re-creates blindly: after a token refresh, and after any error answer (a second
        create of an existing key is an error, HTTP 500 on current PDS versions), the record is
        looked up with ``getRecord`` first.
        """
        body = {
            "repo": account.external_id,
            "collection": collection,
            "rkey": rkey,
            "record": record,
        }
        refreshed = False
        while True:
            try:
                response = self._xrpc(
                    account,
                    "POST",
                    "com.atproto.repo.createRecord",
                    operation="post",
                    write=write,
                    retry_expired=False,
                    json_body=body,
                )
            except ProviderHTTPError as exc:
                if exc.code == "ExpiredToken" and not refreshed:
                    refreshed = True
                    self._refresh_in_place(account)
                    if found := self._get_record(account, collection, rkey):
                        return found
                    continue
                if exc.status is not None and exc.kind in (
                    ErrorKind.TRANSIENT,
                    ErrorKind.PERMANENT,
                ):
                    try:
                        found = self._get_record(account, collection, rkey)
                    except ProviderError:
                        found = None
                    if found:
                        return found
                raise
            return str(self._json(response, "post", write=write)["uri"])

    def _get_record(self, account: AccountContext, collection: str, rkey: str) -> str | None:
        try:
            response = self._xrpc(
                account,
                "GET",
                "com.atproto.repo.getRecord",
                operation="record lookup",
                params={"repo": account.external_id, "collection": collection, "rkey": rkey},
            )
        except ProviderHTTPError as exc:
            if exc.code == "RecordNotFound" or exc.status == 404:
                return None
            raise
        return str(self._json(response, "record lookup")["uri"])

    def reconcile(
        self, *, account: AccountContext, request: PublishRequest, external_id: str = ""
    ) -> PublishResult | None:
        """``getRecord`` at the deterministic key (or the key of ``external_id``): certain."""
        rkey = _rkey(external_id) if external_id else record_key_for(request.idempotency_key)
        uri = self._get_record(account, POST, rkey)
        return (
            PublishResult(external_id=uri, external_url=self._post_url(account, uri))
            if uri
            else None
        )

    # --- reads and reposts -----------------------------------------------------------------

    def destination_options(
        self, *, account: AccountContext, region_code: str = "US", language: str = "en"
    ) -> dict[str, list[dict[str, str]]]:
        return {"language": language_options(language)}

    def _post_view(self, account: AccountContext, uri: str) -> dict[str, Any]:
        response = self._xrpc(
            account,
            "GET",
            "app.bsky.feed.getPosts",
            operation="post lookup",
            params={"uris": [uri]},
        )
        posts = self._json(response, "post lookup").get("posts") or []
        if not posts:
            raise ProviderError(ErrorKind.PERMANENT, f"{LABEL}: the post no longer exists.")
        post: dict[str, Any] = posts[0]
        return post

    def metrics(self, *, account: AccountContext, external_id: str) -> Metrics:
        post = self._post_view(account, external_id)
        return Metrics(
            likes=int(post.get("likeCount") or 0),
            comments=int(post.get("replyCount") or 0),
            reposts=int(post.get("repostCount") or 0) + int(post.get("quoteCount") or 0),
        )

    def _uri_from_url(self, account: AccountContext, source_url: str) -> str:
        parts = urlsplit(source_url)
        match = _POST_URL_RE.match(parts.path)
        if not match:
            raise ProviderError(ErrorKind.PERMANENT, f"{LABEL}: not a Bluesky post address.")
        actor, rkey = match.groups()
        did = actor if actor.startswith("did:") else self._resolve_handle(account, actor)
        if not did:
            raise ProviderError(ErrorKind.PERMANENT, f"{LABEL}: unknown author of the post.")
        return f"at://{did}/{POST}/{rkey}"

    @staticmethod
    def _repost_key(account: AccountContext, subject_uri: str, idempotency_key: str) -> str:
        # A deterministic key per (account, subject[, repost]): a retry cannot create a second
        # repost record, and reconciliation is one getRecord.
        name = f"repost:{account.external_id}:{subject_uri}"
        return record_key_for(f"{name}:{idempotency_key}" if idempotency_key else name)

    def _viewer_repost(self, account: AccountContext, post: dict[str, Any]) -> str:
        """The account's live repost of ``post``: the AppView's ``viewer.repost``, confirmed
        with ``getRecord`` in the account's own repository. The AppView indexes deletions with
        a lag, so a repost that was just removed (the previous stage's) may still be reported;
        trusting it would record a dead repost as the new stage's."""
        reported = str((post.get("viewer") or {}).get("repost") or "")
        if not reported:
            return ""
        owner, _, rest = reported.removeprefix("at://").partition("/")
        collection, _, rkey = rest.partition("/")
        if owner != account.external_id or collection != REPOST or not rkey:
            return ""
        return self._get_record(account, REPOST, rkey) or ""

    def _repost_result(self, uri: str, post: dict[str, Any], repost_uri: str) -> PublishResult:
        author = (post.get("author") or {}).get("handle") or uri.split("/")[2]
        return PublishResult(
            external_id=repost_uri,
            external_url=f"https://bsky.app/profile/{author}/post/{_rkey(uri)}",
        )

    def repost(
        self,
        *,
        account: AccountContext,
        external_id: str,
        source_url: str = "",
        idempotency_key: str = "",
    ) -> PublishResult:
        uri = external_id or self._uri_from_url(account, source_url)
        post = self._post_view(account, uri)
        existing = self._viewer_repost(account, post)
        if existing:  # one live repost per account and post, as in the Bluesky app
            return self._repost_result(uri, post, existing)
        record = {
            "$type": REPOST,
            "subject": {"uri": post["uri"], "cid": post["cid"]},
            "createdAt": datetime.now(UTC)
            .isoformat(timespec="milliseconds")
            .replace("+00:00", "Z"),
        }
        rkey = self._repost_key(account, str(post["uri"]), idempotency_key)
        # The deterministic key makes a retried create harmless, so timeouts are retried like
        # reads (``write=False``).
        repost_uri = self._create(account, REPOST, rkey, record, write=False)
        return self._repost_result(uri, post, repost_uri)

    def find_repost(
        self,
        *,
        account: AccountContext,
        external_id: str,
        source_url: str = "",
        idempotency_key: str = "",
    ) -> PublishResult | None:
        """The repost record at its deterministic key (``getRecord``), else the account's live
        repost of the post as the AppView reports it (``viewer.repost`` of ``getPosts``)."""
        uri = external_id or self._uri_from_url(account, source_url)
        post = self._post_view(account, uri)
        found = self._get_record(
            account, REPOST, self._repost_key(account, str(post["uri"]), idempotency_key)
        )
        found = found or self._viewer_repost(account, post)
        return self._repost_result(uri, post, found) if found else None

    def unrepost(
        self,
        *,
        account: AccountContext,
        repost_id: str,
        external_id: str = "",
        source_url: str = "",
    ) -> None:
        if not repost_id:
            found = self.find_repost(
                account=account, external_id=external_id, source_url=source_url
            )
            if found is None:
                return  # nothing to remove
            repost_id = found.external_id
        # deleteRecord succeeds whether or not the record still exists: safe to retry.
        self._xrpc(
            account,
            "POST",
            "com.atproto.repo.deleteRecord",
            operation="repost removal",
            json_body={"repo": account.external_id, "collection": REPOST, "rkey": _rkey(repost_id)},
        )
