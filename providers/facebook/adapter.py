"""The Facebook Pages adapter: Facebook Login with a choice of Pages, feed posts (text, link, one
or many photos, video), Reels and Stories, the first comment, reconcile over the Page's recent
posts, delete and metrics. See docs/providers/facebook.md."""

from __future__ import annotations

import json
import logging
import time
import unicodedata
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote

from providers.base import (
    AccountContext,
    AuthorizationStart,
    Capabilities,
    ConnectedAccount,
    ConnectionCandidates,
    ConnectionMode,
    ErrorKind,
    MediaItem,
    Metrics,
    Pending,
    ProviderError,
    PublishRequest,
    PublishResult,
)
from providers.facebook import formats
from providers.helpers import find_urls, precheck
from providers.http_errors import CannotReconcile, ProviderHTTPError
from providers.meta import login
from providers.meta.errors import gone
from providers.meta.graph import MetaGraphAdapter

logger = logging.getLogger(__name__)

PROVIDER = "facebook"
LABEL = "Facebook"
RECONCILE_SLACK = timedelta(minutes=5)
RECENT_PAGE = 100
RECENT_PAGES = 3


def is_video(item: MediaItem) -> bool:
    return item.mime_type.startswith("video/")


def comparable_text(text: str) -> str:
    return " ".join(unicodedata.normalize("NFC", text).split())


def _stamp(value: Any) -> datetime | None:
    """Graph's ``created_time`` (``2026-11-28T12:00:00+0000``)."""
    raw = str(value or "")
    if len(raw) > 5 and raw[-5] in "+-" and raw[-3] != ":":
        raw = raw[:-2] + ":" + raw[-2:]
    try:
        moment = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


class FacebookAdapter(MetaGraphAdapter):
    label = LABEL
    capabilities = Capabilities(
        provider=PROVIDER,
        display_name=LABEL,
        connection=ConnectionMode.OAUTH2,
        pkce=False,
        required_scopes=login.FACEBOOK_REQUIRED_SCOPES,
        profiles=formats.PROFILES,
        account_kind="page",
        supports_refresh=False,  # a Page token from a long-lived user token does not expire
        supports_revoke=False,  # revoking would end the login for every Page it granted
        supports_metrics=True,
    )
    video_check_seconds = 10.0
    video_check_max_seconds = 60.0

    # --- connect ------------------------------------------------------------------------------

    def begin_authorization(
        self,
        *,
        redirect_uri: str,
        state: str,
        instance_url: str = "",
        app: dict[str, str] | None = None,
    ) -> AuthorizationStart:
        return AuthorizationStart(
            authorization_url=login.authorization_url(self, redirect_uri=redirect_uri, state=state)
        )

    def complete_authorization(
        self,
        *,
        code: str,
        redirect_uri: str,
        code_verifier: str,
        instance_url: str = "",
        app: dict[str, str] | None = None,
    ) -> ConnectedAccount | ConnectionCandidates:
        """The Pages (and linked Instagram accounts) the login granted: the person chooses."""
        found = login.candidates(self, code=code, redirect_uri=redirect_uri)
        if not found:
            raise ProviderError(
                ErrorKind.PERMANENT,
                f"{LABEL}: the login granted no Page; choose at least one Page in the dialog.",
            )
        return ConnectionCandidates(candidates=found)

    def can_refresh(self, *, credentials: dict[str, str]) -> bool:
        return False

    # --- plumbing -----------------------------------------------------------------------------

    @staticmethod
    def _page(account: AccountContext) -> str:
        page = account.credentials.get("page_id") or account.external_id
        if not page:
            raise ProviderError(ErrorKind.AUTH, f"{LABEL}: the Page id is unknown; reconnect.")
        return quote(page, safe="")

    def _post(
        self, account: AccountContext, path: str, operation: str, data: dict[str, Any], **kw: Any
    ) -> dict[str, Any]:
        body: dict[str, Any] = self._json(
            self._graph(
                "POST",
                path,
                operation=operation,
                token=self._token(account),
                object_id=self._page(account),
                data=data,
                **kw,
            ),
            operation,
            write=bool(kw.get("write")),
        )
        return body

    def _get(
        self, account: AccountContext, path: str, operation: str, params: dict[str, Any]
    ) -> dict[str, Any]:
        body: dict[str, Any] = self._json(
            self._graph(
                "GET",
                path,
                operation=operation,
                token=self._token(account),
                object_id=self._page(account),
                params=params,
            ),
            operation,
        )
        return body

    # --- publish ------------------------------------------------------------------------------

    def publish(
        self, *, account: AccountContext, request: PublishRequest
    ) -> PublishResult | Pending:
        profile = self.capabilities.profile(request.profile)
        if profile is None:
            raise ProviderError(ErrorKind.PERMANENT, f"{LABEL}: unknown format {request.profile}.")
        precheck(profile, request, provider=LABEL)
        for item in request.media:
            if not item.url.startswith(("https://", "http://")):
                raise ProviderError(
                    ErrorKind.PERMANENT,
                    f"{LABEL}: Facebook fetches media by URL, and {item.name} has no public "
                    "address (set HERALD_PUBLIC_URL, or use object storage).",
                )
        if request.profile == formats.REEL_PROFILE.key:
            return self._send_reel(account, request)
        if request.profile == formats.STORY_PROFILE.key:
            return self._send_story(account, request)
        if request.media and is_video(request.media[0]):
            return self._send_video(account, request)
        return self._finish(account, request, self._send_feed_post(account, request))

    def _send_feed_post(self, account: AccountContext, request: PublishRequest) -> str:
        """Text and link, one photo (``/photos`` publishes it with its caption), or several
        (each an unpublished photo, then one ``/feed`` post attaching them)."""
        page = self._page(account)
        if len(request.media) == 1:
            item = request.media[0]
            data = {"url": item.url, "caption": request.text, "published": "true"}
            if item.alt_text:
                data["alt_text_custom"] = item.alt_text
            body = self._post(account, f"/{page}/photos", "photo post", data, write=True)
            return self._id(body.get("post_id") or body.get("id"), "photo post")
        data = {"message": request.text, "published": "true"}
        if request.media:
            photos = [self._unpublished_photo(account, item) for item in request.media]
            data["attached_media"] = json.dumps([{"media_fbid": p} for p in photos])
        link = self._link(request)
        if link and not request.media:
            data["link"] = link
        return self._id(
            self._post(account, f"/{page}/feed", "post", data, write=True).get("id"), "post"
        )

    @staticmethod
    def _link(request: PublishRequest) -> str:
        link = (request.options.get("link") or "").strip()
        if link:
            return link
        urls = find_urls(request.text)
        return urls[0][2] if len(urls) == 1 else ""

    def _unpublished_photo(self, account: AccountContext, item: MediaItem) -> str:
        """An unpublished photo (nothing is visible yet: safe to retry)."""
        data = {"url": item.url, "published": "false", "temporary": "true"}
        if item.alt_text:
            data["alt_text_custom"] = item.alt_text
        body = self._post(account, f"/{self._page(account)}/photos", "photo upload", data)
        return self._id(body.get("id"), "photo upload", kind=ErrorKind.TRANSIENT)

    @staticmethod
    def _id(value: Any, operation: str, *, kind: ErrorKind = ErrorKind.AMBIGUOUS) -> str:
        text = str(value or "")
        if not text:
            raise ProviderError(kind, f"{LABEL}: the {operation} answer had no id.")
        return text

    def _finish(
        self, account: AccountContext, request: PublishRequest, post_id: str
    ) -> PublishResult:
        """The post is live: the first comment (a failure is logged, never fails the post)
        and its permalink."""
        comment = (request.options.get("first_comment") or "").strip()
        if comment:
            try:
                self._post(
                    account,
                    f"/{quote(post_id, safe='')}/comments",
                    "first comment",
                    {"message": comment},
                    write=True,
                )
            except ProviderError as exc:
                logger.warning("Facebook first comment not added: %s", exc.message)
        return PublishResult(external_id=post_id, external_url=self._permalink(account, post_id))

    def _permalink(self, account: AccountContext, post_id: str) -> str:
        try:
            body = self._get(
                account, f"/{quote(post_id, safe='')}", "post lookup", {"fields": "permalink_url"}
            )
        except ProviderError:
            body = {}
        url = str(body.get("permalink_url") or "")
        return url if url.startswith("https://") else f"https://www.facebook.com/{post_id}"

    # --- long sends: video, Reels, Stories ---------------------------------------------------

    def _processing(self, state: dict[str, Any], checks: int = 0) -> Pending:
        wait = min(self.video_check_seconds * 1.5**checks, self.video_check_max_seconds)
        return Pending(
            stage="processing", state={**state, "checks": checks}, check_after_seconds=wait
        )

    def _send_video(self, account: AccountContext, request: PublishRequest) -> Pending:
        """``POST /{page}/videos`` with ``file_url``: Facebook fetches and processes it, and the
        post appears once processing is done (the write is this call)."""
        item = request.media[0]
        body = self._post(
            account,
            f"/{self._page(account)}/videos",
            "video post",
            {"file_url": item.url, "description": request.text, "published": "true"},
            write=True,
        )
        video_id = self._id(body.get("id"), "video post")
        return self._processing({"kind": "video", "video_id": video_id, "since": time.time()})

    def _upload_by_url(self, account: AccountContext, edge: str, item: MediaItem) -> str:
        """Reels and video Stories: ``upload_phase=start`` gives a video id and an upload URL;
        the upload URL is told the file's URL (Facebook fetches it)."""
        page = self._page(account)
        started = self._post(account, f"/{page}/{edge}", "video upload", {"upload_phase": "start"})
        video_id = self._id(started.get("video_id"), "video upload", kind=ErrorKind.TRANSIENT)
        upload_url = str(started.get("upload_url") or "")
        if not upload_url.startswith(("https://", "http://")):
            raise ProviderError(ErrorKind.TRANSIENT, f"{LABEL}: no upload URL was given.")
        token = self._token(account)
        self._graph(
            "POST",
            upload_url,
            operation="video upload",
            object_id=page,
            headers={"Authorization": f"OAuth {token}", "file_url": item.url},
            extra_secrets=(token,),
        )
        return video_id

    def _send_reel(self, account: AccountContext, request: PublishRequest) -> Pending:
        video_id = self._upload_by_url(account, "video_reels", request.media[0])
        self._post(
            account,
            f"/{self._page(account)}/video_reels",
            "reel",
            {
                "upload_phase": "finish",
                "video_id": video_id,
                "video_state": "PUBLISHED",
                "description": request.text,
            },
            write=True,
        )
        return self._processing({"kind": "reel", "video_id": video_id, "since": time.time()})

    def _send_story(
        self, account: AccountContext, request: PublishRequest
    ) -> PublishResult | Pending:
        item = request.media[0]
        page = self._page(account)
        if not is_video(item):
            photo = self._unpublished_photo(account, item)
            body = self._post(
                account, f"/{page}/photo_stories", "story", {"photo_id": photo}, write=True
            )
            story = self._id(body.get("post_id"), "story")
            return PublishResult(
                external_id=story, external_url=f"https://www.facebook.com/{story}"
            )
        video_id = self._upload_by_url(account, "video_stories", item)
        body = self._post(
            account,
            f"/{page}/video_stories",
            "story",
            {"upload_phase": "finish", "video_id": video_id},
            write=True,
        )
        state = {"kind": "story", "video_id": video_id, "post_id": str(body.get("post_id") or "")}
        return self._processing({**state, "since": time.time()})

    def resume(
        self, *, account: AccountContext, request: PublishRequest, state: dict[str, Any]
    ) -> PublishResult | Pending:
        """One status read of the video: still processing -> :class:`Pending` again; an
        ``error`` status fails it with Facebook's reason; ready -> the post."""
        video_id = str(state.get("video_id") or "")
        body = self._get(
            account,
            f"/{quote(video_id, safe='')}",
            "video status",
            {"fields": "status,post_id,permalink_url"},
        )
        status = body.get("status") or {}
        video_status = str(status.get("video_status") or "")
        if video_status == "error":
            reason = str(
                ((status.get("processing_phase") or {}).get("error") or {}).get("message") or ""
            )
            raise ProviderError(
                ErrorKind.PERMANENT,
                f"{LABEL}: Facebook could not process the video"
                + (f": {reason}" if reason else "."),
            )
        published = (status.get("publishing_phase") or {}).get("status") in (None, "complete")
        if video_status != "ready" or not published:
            return self._processing(state, int(state.get("checks") or 0) + 1)
        post_id = str(state.get("post_id") or body.get("post_id") or video_id)
        if state.get("kind") == "story":
            return PublishResult(
                external_id=post_id, external_url=f"https://www.facebook.com/{post_id}"
            )
        return self._finish(account, request, post_id)

    # --- reconcile, delete, metrics -----------------------------------------------------------

    def reconcile(
        self, *, account: AccountContext, request: PublishRequest, external_id: str = ""
    ) -> PublishResult | None:
        """The post of an earlier attempt (Graph has no idempotency key): by its id when known,
        else among the Page's posts since the first attempt (minus 5 minutes) with the same
        text. Reels and Stories have no such list here: :class:`CannotReconcile`."""
        if external_id:
            try:
                post = self._get(
                    account, f"/{quote(external_id, safe='')}", "post lookup", {"fields": "id"}
                )
            except ProviderHTTPError as exc:
                if gone(exc):
                    return None
                raise
            return (
                PublishResult(
                    external_id=external_id, external_url=self._permalink(account, external_id)
                )
                if post.get("id")
                else None
            )
        if request.profile != formats.POST_PROFILE.key:
            raise CannotReconcile(f"{LABEL}: check the Page for the Reel or Story.")
        return self._find_recent(account, request)

    def _find_recent(
        self, account: AccountContext, request: PublishRequest
    ) -> PublishResult | None:
        since = request.first_attempt_at - RECONCILE_SLACK if request.first_attempt_at else None
        wanted = comparable_text(request.text)
        params: dict[str, Any] = {
            "fields": "id,message,created_time,permalink_url",
            "limit": RECENT_PAGE,
        }
        if since is not None:
            params["since"] = int(since.timestamp())
        path = f"/{self._page(account)}/published_posts"
        for _ in range(RECENT_PAGES):
            body = self._get(account, path, "recent posts", params)
            for post in body.get("data") or []:
                if not isinstance(post, dict) or not post.get("id"):
                    continue
                created = _stamp(post.get("created_time"))
                if since is not None and created is not None and created < since:
                    continue
                if comparable_text(str(post.get("message") or "")) == wanted:
                    url = str(post.get("permalink_url") or "")
                    return PublishResult(external_id=str(post["id"]), external_url=url)
            paging = body.get("paging") or {}
            after = (paging.get("cursors") or {}).get("after")
            if not paging.get("next") or not after:
                return None
            params["after"] = after
        raise CannotReconcile(
            f"{LABEL}: cannot tell whether the post was published; check the Page."
        )

    def delete(self, *, account: AccountContext, external_id: str) -> None:
        try:
            self._graph(
                "DELETE",
                f"/{quote(external_id, safe='')}",
                operation="post deletion",
                token=self._token(account),
                object_id=self._page(account),
            )
        except ProviderHTTPError as exc:
            if not gone(exc):
                raise

    def metrics(self, *, account: AccountContext, external_id: str) -> Metrics:
        """Reactions, comments and shares of the post (``GET /{post-id}`` with summaries), and
        its views (``/insights``)."""
        fields = (
            "reactions.summary(total_count).limit(0),comments.summary(total_count).limit(0),shares"
        )
        try:
            body = self._get(
                account, f"/{quote(external_id, safe='')}", "metrics", {"fields": fields}
            )
        except ProviderHTTPError as exc:
            if gone(exc):
                raise ProviderError(
                    ErrorKind.PERMANENT, f"{LABEL}: the post no longer exists."
                ) from exc
            raise

        def total(name: str) -> int:
            try:
                return int(((body.get(name) or {}).get("summary") or {}).get("total_count") or 0)
            except (TypeError, ValueError):
                return 0

        try:
            shares = int((body.get("shares") or {}).get("count") or 0)
        except (TypeError, ValueError):
            shares = 0
        return Metrics(
            likes=total("reactions"),
            comments=total("comments"),
            reposts=shares,
            views=self._views(account, external_id),
        )

    def _views(self, account: AccountContext, external_id: str) -> int:
        """The post's ``post_media_view`` insight (views; Meta replaced impressions with it in
        November 2025). Best effort: without ``read_insights``, or for a post Meta keeps no
        insights of, the views are 0 and the other counts still stand."""
        try:
            body = self._get(
                account,
                f"/{quote(external_id, safe='')}/insights",
                "insights",
                {"metric": "post_media_view"},
            )
        except ProviderError:
            return 0
        for entry in body.get("data") or []:
            values = entry.get("values") if isinstance(entry, dict) else None
            if entry.get("name") == "post_media_view" and values and isinstance(values[0], dict):
                try:
                    return int(values[0].get("value") or 0)
                except (TypeError, ValueError):
                    return 0
        return 0
