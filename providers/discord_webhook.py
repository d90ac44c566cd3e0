"""Discord incoming webhook (``discord_webhook``): post messages to one channel.

Protocol (discord.com/developers/docs/resources/webhook): ``GET <webhook>`` (webhook object),
``POST <webhook>?wait=true`` ("Execute Webhook": JSON, or multipart with ``payload_json`` and
``files[n]``; returns the message object), ``GET <webhook>/messages/<id>``.

Discord webhooks have no idempotency key and no message search: a post whose outcome is unknown
cannot be found again without its message id. Reconcile therefore only answers when the message
id is known; otherwise it raises ``CannotReconcile`` (a ``NotSupported`` of kind ``AMBIGUOUS``)
and the destination stays ``ambiguous`` for a person to check the channel. It never claims the
message is absent.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote, urlsplit

import requests

from providers.base import (
    AccountContext,
    Capabilities,
    ConnectedAccount,
    ConnectionMode,
    ErrorKind,
    MediaRule,
    OptionSpec,
    OutputProfile,
    ProviderAdapter,
    ProviderError,
    ProviderInputError,
    PublishRequest,
    PublishResult,
    VideoRule,
)
from providers.helpers import dumps, precheck
from providers.http import HttpClient
from providers.http_errors import (
    CannotReconcile,
    ErrorDetail,
    ProviderHTTPError,
    default_error_detail,
)
from providers.streamed_form import streamed_form
from providers.url_safety import check_public_url

PROVIDER = "discord_webhook"
LABEL = "Discord"
# Discord's upload limits: 10 MiB per file by default (a server's boost tier raises it for its
# members; a webhook is held to the default), 25 MiB per request.
MAX_FILE_BYTES = 10 * 1024 * 1024
MAX_TOTAL_BYTES = 25 * 1024 * 1024
_WEBHOOK_RE = re.compile(
    r"^https://(?:ptb\.|canary\.)?(?:discord\.com|discordapp\.com)"
    r"/api(?:/v\d+)?/webhooks/(\d{5,25})/([A-Za-z0-9_-]{20,200})$"
)
_ANY_WEBHOOK_PATH_RE = re.compile(r"/webhooks/(\d+)/([A-Za-z0-9_.-]+)$")
# Discord error codes meaning "this webhook is gone or its token is wrong": reconnect.
_AUTH_CODES = {"10015", "50027"}


_IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
_VIDEO_TYPES = ("video/mp4", "video/quicktime", "video/webm")  # played in the channel


def discord_length(text: str) -> int:
    return len(text)


MESSAGE_PROFILE = OutputProfile(
    key="discord_webhook.message",
    text_limit=2000,
    text_counter=discord_length,
    media=MediaRule(
        max_count=10,
        mime_types=(*_IMAGE_TYPES, *_VIDEO_TYPES),
        max_bytes=MAX_FILE_BYTES,
        max_total_bytes=MAX_TOTAL_BYTES,  # refused at create time, not found at delivery
    ),
    video=VideoRule(
        network="Discord",
        delivers=True,  # an attachment of the message (files[n]), played in the channel
        containers=("mp4", "mov", "webm"),
        video_codecs=("h264", "hevc", "vp8", "vp9", "av1"),
        audio_codecs=("aac", "mp3", "opus", "vorbis"),
        max_bytes=MAX_FILE_BYTES,
        max_count=10,
        mixes_with_images=True,
        source=(
            "discord.com/developers/docs/reference#uploading-files: 10 MiB per file by default "
            "(a server's boost tier raises it; a webhook is held to the default), 25 MiB per "
            "request, 10 attachments per message (Execute Webhook)"
        ),
    ),
    options=(
        OptionSpec("username", max_length=80),
        OptionSpec("thread_id", max_length=25),
    ),
    counting_rule="characters",
)


def _parse_error(response: requests.Response) -> ErrorDetail:
    try:
        body = response.json()
    except ValueError:
        return default_error_detail(response)
    if not isinstance(body, dict):
        return ErrorDetail()
    code = str(body.get("code", ""))
    message = str(body.get("message") or "")
    retry_after = body.get("retry_after")
    kind = ErrorKind.AUTH if code in _AUTH_CODES else None
    return ErrorDetail(
        message=message,
        kind=kind,
        code=code,
        retry_after=float(retry_after) if isinstance(retry_after, int | float) else None,
    )


class DiscordWebhookAdapter(ProviderAdapter):
    capabilities = Capabilities(
        provider=PROVIDER,
        display_name="Discord (incoming webhook)",
        connection=ConnectionMode.WEBHOOK,
        profiles=(MESSAGE_PROFILE,),
        account_kind="webhook",
        credential_fields=("webhook_url",),
        supports_refresh=True,  # re-reads the webhook (validates that it still exists)
    )

    def __init__(self, *, http: HttpClient | None = None) -> None:
        self.http = http or HttpClient()

    def _webhook_url(self, url: str) -> str:
        url = url.strip()
        if self.http.allow_private:
            checked = check_public_url(
                url, allow_private=True, provider=LABEL, what="webhook URL", field="webhook_url"
            )
            parts = urlsplit(checked)
            return f"{parts.scheme}://{parts.netloc}{parts.path}"
        malformed = ProviderInputError(
            "webhook_url",
            f"{LABEL}: the webhook URL must look like https://discord.com/api/webhooks/<id>/<token>.",
        )
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError:  # an unparsable netloc or port
            raise malformed from None
        bare = f"{parts.scheme}://{(parts.hostname or '').lower()}{parts.path.rstrip('/')}"
        if port or parts.username or not _WEBHOOK_RE.match(bare):
            raise malformed
        return bare

    @staticmethod
    def _stored_url(account: AccountContext) -> str:
        url = account.credentials.get("webhook_url", "")
        if not url:
            raise ProviderError(ErrorKind.AUTH, f"{LABEL}: no webhook URL; reconnect the account.")
        return url

    def _call(
        self, method: str, url: str, *, operation: str, write: bool = False, **kwargs: Any
    ) -> requests.Response:
        token_match = _ANY_WEBHOOK_PATH_RE.search(urlsplit(url).path.split("/messages/")[0])
        secrets = (token_match.group(2),) if token_match else ()
        return self.http.request(
            method,
            url,
            provider=LABEL,
            operation=operation,
            write=write,
            user_url=True,
            secrets=secrets,
            parse_error=_parse_error,
            **kwargs,
        )

    def _json(self, response: requests.Response, operation: str, write: bool = False) -> Any:
        return self.http.json(response, provider=LABEL, operation=operation, write=write)

    def _account(self, url: str) -> ConnectedAccount:
        hook = self._json(self._call("GET", url, operation="webhook lookup"), "webhook lookup")
        hook_id = str(hook.get("id") or "")
        if not hook_id:
            raise ProviderError(
                ErrorKind.PERMANENT, f"{LABEL}: the URL is not an incoming webhook."
            )
        avatar = hook.get("avatar")
        credentials = {
            "webhook_url": url,
            "channel_id": str(hook.get("channel_id") or ""),
            "guild_id": str(hook.get("guild_id") or ""),
        }
        return ConnectedAccount(
            external_id=hook_id,
            username=str(hook.get("name") or "webhook"),
            display_name=str(hook.get("name") or ""),
            avatar_url=f"https://cdn.discordapp.com/avatars/{hook_id}/{avatar}.png"
            if avatar
            else "",
            account_kind="webhook",
            credentials=credentials,
        )

    def connect_with_credentials(self, *, fields: dict[str, str]) -> ConnectedAccount:
        return self._account(self._webhook_url(fields.get("webhook_url", "")))

    def refresh(self, *, account: AccountContext) -> ConnectedAccount:
        return self._account(self._stored_url(account))

    def _message_url(self, account: AccountContext, message: dict[str, Any]) -> str:
        guild = account.credentials.get("guild_id", "")
        channel = str(message.get("channel_id") or account.credentials.get("channel_id", ""))
        if not guild or not channel:
            return ""
        return f"https://discord.com/channels/{guild}/{channel}/{message['id']}"

    def publish(self, *, account: AccountContext, request: PublishRequest) -> PublishResult:
        if request.profile != MESSAGE_PROFILE.key:
            raise ProviderError(ErrorKind.PERMANENT, f"{LABEL}: unknown format {request.profile}.")
        precheck(MESSAGE_PROFILE, request, provider=LABEL)
        if sum(item.size for item in request.media) > MAX_TOTAL_BYTES:
            raise ProviderError(ErrorKind.PERMANENT, f"{LABEL}: attachments exceed 25 MB in total.")
        url = self._stored_url(account)
        params = {"wait": "true"}
        if request.options.get("thread_id"):
            params["thread_id"] = request.options["thread_id"]
        payload: dict[str, Any] = {
            "content": request.text,
            "allowed_mentions": {"parse": []},  # never ping @everyone or roles by accident
        }
        if request.options.get("username"):
            payload["username"] = request.options["username"]
        if request.media:
            response = self._post_files(url, params, payload, request)
        else:
            response = self._call(
                "POST",
                url,
                operation="message post",
                write=True,
                params=params,
                ok=(200,),
                json_body=payload,
            )
        message = self._json(response, "message post", write=True)
        return PublishResult(
            external_id=str(message["id"]), external_url=self._message_url(account, message)
        )

    def _post_files(
        self, url: str, params: dict[str, str], payload: dict[str, Any], request: PublishRequest
    ) -> requests.Response:
        """Execute Webhook as multipart: ``payload_json`` naming each attachment, then the
        files as ``files[n]``, streamed from storage."""
        payload["attachments"] = [
            {"id": index, "filename": item.name, "description": item.alt_text[:1024]}
            for index, item in enumerate(request.media)
        ]
        files = [
            (f"files[{index}]", item, MAX_FILE_BYTES) for index, item in enumerate(request.media)
        ]
        with streamed_form({"payload_json": dumps(payload)}, files, provider=LABEL) as form:
            return self._call(
                "POST", url, operation="message post", write=True, params=params, ok=(200,), **form
            )

    def reconcile(
        self, *, account: AccountContext, request: PublishRequest, external_id: str = ""
    ) -> PublishResult | None:
        if not external_id:
            raise CannotReconcile(
                f"{LABEL}: webhooks have no idempotency key or message search; "
                "check the channel and resolve this destination by hand."
            )
        url = self._stored_url(account)
        params = (
            {"thread_id": request.options["thread_id"]}
            if request.options.get("thread_id")
            else None
        )
        try:
            response = self._call(
                "GET",
                f"{url}/messages/{quote(external_id)}",
                operation="message lookup",
                params=params,
            )
        except ProviderHTTPError as exc:
            if exc.code == "10008" or (exc.status == 404 and exc.code not in _AUTH_CODES):
                return None  # Unknown Message: it does not exist (any more)
            raise
        message = self._json(response, "message lookup")
        return PublishResult(
            external_id=str(message["id"]), external_url=self._message_url(account, message)
        )
