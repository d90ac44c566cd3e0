"""Telegram bot: a bot token and a chat; text messages, a photo, a video, or an album of 2-10
photos and videos.

Protocol (core.telegram.org/bots/api): ``<api>/bot<token>/<method>`` with ``getMe``,
``getChat``, ``getUpdates``, ``sendMessage``, ``sendPhoto``, ``sendVideo`` and
``sendMediaGroup`` (files uploaded in the same multipart request, streamed from storage); answers
``{"ok": true, "result": ...}`` or ``{"ok": false, "error_code", "description",
"parameters": {"retry_after", "migrate_to_chat_id"}}``.

The Bot API has no idempotency key and no way for a bot to look up a message it may have sent,
so reconcile is not supported: an ambiguous send stays ``ambiguous`` for a person to check.
"""

from __future__ import annotations

import io
import json
import math
import re
from typing import Any

import requests

from providers.base import (
    AccountContext,
    Capabilities,
    ConnectedAccount,
    ConnectionMode,
    ErrorKind,
    MediaItem,
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
from providers.helpers import precheck
from providers.http import HttpClient
from providers.http_errors import ErrorDetail, ProviderHTTPError, default_error_detail
from providers.streamed_form import FilePart, streamed_form

PROVIDER = "telegram"
LABEL = "Telegram"
DEFAULT_API_URL = "https://api.telegram.org"
MAX_PHOTO_BYTES = 10 * 1024 * 1024
MAX_VIDEO_BYTES = 50 * 1024 * 1024  # what a bot may upload (sendVideo)
MAX_ALBUM_ITEMS = 10  # sendMediaGroup: 2-10 items
# A video's thumbnail: a JPEG under 200 kB, at most 320 px a side (sendVideo ``thumbnail``).
THUMBNAIL_SIDE = 320
MAX_THUMBNAIL_BYTES = 200 * 1000
_TOKEN_RE = re.compile(r"^\d{3,20}:[A-Za-z0-9_-]{20,100}$")
_CHAT_RE = re.compile(r"^(-?\d{1,20}|@[A-Za-z][A-Za-z0-9_]{3,31})$")


def telegram_length(text: str) -> int:
    """Telegram limits count UTF-16 code units (an emoji outside the BMP counts 2)."""
    return len(text.encode("utf-16-le")) // 2


_CHAT_OPTION = OptionSpec("chat_id", max_length=40)
MESSAGE_PROFILE = OutputProfile(
    key="telegram.message",
    text_limit=4096,
    text_counter=telegram_length,
    text_required=True,
    options=(_CHAT_OPTION,),
    counting_rule="UTF-16 code units",
)
PHOTO_PROFILE = OutputProfile(
    key="telegram.photo",
    text_limit=1024,
    text_counter=telegram_length,
    # One item: sendPhoto or sendVideo; 2-10: one album (sendMediaGroup). A video is held to
    # the video rule's size, a photo to the media rule's.
    media=MediaRule(
        max_count=MAX_ALBUM_ITEMS,
        mime_types=("image/jpeg", "image/png", "image/webp", "video/mp4"),
        max_bytes=MAX_PHOTO_BYTES,
        required=True,
    ),
    video=VideoRule(
        network="Telegram",
        delivers=True,
        containers=("mp4",),
        video_codecs=("h264", "hevc"),
        audio_codecs=("aac", "mp3"),
        max_bytes=MAX_VIDEO_BYTES,
        max_count=MAX_ALBUM_ITEMS,
        mixes_with_images=True,
        source=(
            "core.telegram.org/bots/api: sendVideo (MPEG4 videos; bots upload files up to "
            "50 MB; caption up to 1024 characters), sendMediaGroup (2-10 photos and videos "
            "in one album)"
        ),
    ),
    options=(_CHAT_OPTION,),
    counting_rule="UTF-16 code units (caption)",
)


def _parse_error(response: requests.Response) -> ErrorDetail:
    try:
        body = response.json()
    except ValueError:
        return default_error_detail(response)
    if not isinstance(body, dict):
        return ErrorDetail()
    parameters = body.get("parameters") or {}
    retry_after = parameters.get("retry_after") if isinstance(parameters, dict) else None
    description = str(body.get("description") or "")
    kind = None
    if isinstance(parameters, dict) and parameters.get("migrate_to_chat_id"):
        description += " (the group became a supergroup; reconnect with its new chat id)"
        kind = ErrorKind.AUTH
    return ErrorDetail(
        message=description,
        kind=kind,
        code=str(body.get("error_code") or ""),
        retry_after=float(retry_after) if isinstance(retry_after, int | float) else None,
    )


def _kind(item: MediaItem) -> str:
    return "video" if item.mime_type.startswith("video/") else "photo"


def _file_part(kind: str, item: MediaItem, name: str = "") -> FilePart:
    """A photo or a video as a form part, with the most bytes Telegram takes for its kind."""
    return (name or kind, item, MAX_VIDEO_BYTES if kind == "video" else MAX_PHOTO_BYTES)


def video_fields(item: MediaItem) -> dict[str, Any]:
    """sendVideo's (and InputMediaVideo's) description of a video from the probe's stored
    facts: its size as shown, its length in whole seconds, and that it may play while it loads
    (an MP4)."""
    fields: dict[str, Any] = {"supports_streaming": True}
    size = item.display_size()
    if size is not None:
        fields["width"], fields["height"] = size
    seconds = item.duration_seconds()
    if seconds is not None:
        fields["duration"] = max(1, math.ceil(seconds))
    return fields


def thumbnail(item: MediaItem, name: str) -> FilePart | None:
    """The video's poster as Telegram's thumbnail: scaled to 320 px a side, a JPEG under
    200 kB, uploaded under ``name`` in the same request; None without a poster (Telegram then
    makes its own) or when the poster cannot be read."""
    if item.poster is None:
        return None
    try:
        from PIL import Image

        with item.poster() as handle, Image.open(handle) as poster:
            picture = poster.convert("RGB")
        picture.thumbnail((THUMBNAIL_SIDE, THUMBNAIL_SIDE))
        out = io.BytesIO()
        picture.save(out, format="JPEG", quality=85)
    except (OSError, ValueError):  # an unreadable poster: Telegram makes its own thumbnail
        return None
    data = out.getvalue()
    if len(data) >= MAX_THUMBNAIL_BYTES:
        return None
    jpeg = MediaItem(
        name="thumbnail.jpg", mime_type="image/jpeg", size=len(data), open=lambda: io.BytesIO(data)
    )
    return (name, jpeg, MAX_THUMBNAIL_BYTES)


def _chat_label(chat: dict[str, Any]) -> str:
    if chat.get("title"):
        return str(chat["title"])
    if chat.get("username"):
        return "@" + str(chat["username"])
    name = " ".join(str(chat.get(k) or "") for k in ("first_name", "last_name")).strip()
    return name or str(chat.get("id", ""))


class TelegramAdapter(ProviderAdapter):
    capabilities = Capabilities(
        provider=PROVIDER,
        display_name="Telegram bot",
        connection=ConnectionMode.CREDENTIALS,
        profiles=(MESSAGE_PROFILE, PHOTO_PROFILE),
        account_kind="bot",
        credential_fields=("bot_token", "chat_id"),
        supports_refresh=True,  # re-validates the token and the chat
        supports_destination_options=True,
    )

    def __init__(self, *, http: HttpClient | None = None, api_url: str = DEFAULT_API_URL) -> None:
        self.http = http or HttpClient()
        # Operator-configured (e.g. a local Bot API server): not a user URL.
        self.api_url = (api_url or DEFAULT_API_URL).rstrip("/")

    def _call(
        self,
        token: str,
        method: str,
        *,
        operation: str,
        write: bool = False,
        http_method: str = "POST",
        **kwargs: Any,
    ) -> Any:
        if not _TOKEN_RE.match(token or ""):
            raise ProviderError(ErrorKind.AUTH, f"{LABEL}: the bot token is malformed; reconnect.")
        response = self.http.request(
            http_method,
            f"{self.api_url}/bot{token}/{method}",
            provider=LABEL,
            operation=operation,
            write=write,
            ok=(200,),
            secrets=(token,),
            parse_error=_parse_error,
            **kwargs,
        )
        body = self.http.json(response, provider=LABEL, operation=operation, write=write)
        if not isinstance(body, dict) or not body.get("ok"):
            kind = ErrorKind.AMBIGUOUS if write else ErrorKind.TRANSIENT
            raise ProviderHTTPError(kind, f"{LABEL}: unexpected answer to {operation}.", status=200)
        return body.get("result")

    def _account(self, token: str, chat_id: str) -> ConnectedAccount:
        bot = self._call(token, "getMe", operation="bot lookup", http_method="GET")
        try:
            chat = self._call(
                token, "getChat", operation="chat lookup", json_body={"chat_id": chat_id}
            )
        except ProviderHTTPError as exc:
            if exc.kind == ErrorKind.PERMANENT:
                raise ProviderError(
                    ErrorKind.PERMANENT,
                    f"{LABEL}: the bot cannot see chat {chat_id[:40]}; add the bot to the chat first.",
                ) from None
            raise
        return ConnectedAccount(
            external_id=f"{bot['id']}:{chat['id']}",
            username=str(bot.get("username") or bot.get("first_name") or bot["id"]),
            display_name=_chat_label(chat),
            account_kind="bot",
            credentials={"bot_token": token, "chat_id": str(chat["id"])},
            profile_url=f"https://t.me/{chat['username']}" if chat.get("username") else "",
        )

    def connect_with_credentials(self, *, fields: dict[str, str]) -> ConnectedAccount:
        token = (fields.get("bot_token") or "").strip()
        chat_id = (fields.get("chat_id") or "").strip()
        if not _TOKEN_RE.match(token):
            raise ProviderInputError(
                "bot_token",
                f"{LABEL}: the bot token must look like <digits>:<letters, digits, _ or ->.",
            )
        if not _CHAT_RE.match(chat_id):
            raise ProviderInputError(
                "chat_id", f"{LABEL}: chat_id must be a number or an @channel name."
            )
        return self._account(token, chat_id)

    def refresh(self, *, account: AccountContext) -> ConnectedAccount:
        return self._account(
            account.credentials.get("bot_token", ""), account.credentials.get("chat_id", "")
        )

    @staticmethod
    def _message_url(chat: dict[str, Any], message_id: int) -> str:
        if chat.get("username"):
            return f"https://t.me/{chat['username']}/{message_id}"
        chat_id = str(chat.get("id", ""))
        if chat_id.startswith("-100"):
            return f"https://t.me/c/{chat_id[4:]}/{message_id}"
        return ""

    def publish(self, *, account: AccountContext, request: PublishRequest) -> PublishResult:
        profile = {MESSAGE_PROFILE.key: MESSAGE_PROFILE, PHOTO_PROFILE.key: PHOTO_PROFILE}.get(
            request.profile
        )
        if profile is None:
            raise ProviderError(ErrorKind.PERMANENT, f"{LABEL}: unknown format {request.profile}.")
        precheck(profile, request, provider=LABEL)
        token = account.credentials.get("bot_token", "")
        chat_id = request.options.get("chat_id") or account.credentials.get("chat_id", "")
        if not _CHAT_RE.match(chat_id):
            raise ProviderError(ErrorKind.PERMANENT, f"{LABEL}: no valid chat to post to.")
        if profile is MESSAGE_PROFILE:
            message = self._call(
                token,
                "sendMessage",
                operation="message post",
                write=True,
                json_body={"chat_id": chat_id, "text": request.text},
            )
        elif len(request.media) == 1:
            message = self._send_one(token, chat_id, request)
        else:
            message = self._send_album(token, chat_id, request)
        chat = message.get("chat") or {"id": chat_id}
        return PublishResult(
            external_id=f"{chat['id']}:{message['message_id']}",
            external_url=self._message_url(chat, int(message["message_id"])),
        )

    def _send_one(self, token: str, chat_id: str, request: PublishRequest) -> dict[str, Any]:
        """sendPhoto or sendVideo, the file uploaded in the request; a video with the probe's
        size and length and its poster as the thumbnail."""
        item = request.media[0]
        kind = _kind(item)
        fields: dict[str, str] = {"chat_id": chat_id}
        if request.text:
            fields["caption"] = request.text
        files = [_file_part(kind, item)]
        if kind == "video":
            fields.update({k: str(v).lower() for k, v in video_fields(item).items()})
            thumb = thumbnail(item, "thumb")
            if thumb is not None:
                fields["thumbnail"] = "attach://thumb"
                files.append(thumb)
        method = "sendVideo" if kind == "video" else "sendPhoto"
        with streamed_form(fields, files, provider=LABEL) as form:
            result = self._call(token, method, operation=f"{kind} post", write=True, **form)
        return dict(result)

    def _send_album(self, token: str, chat_id: str, request: PublishRequest) -> dict[str, Any]:
        """sendMediaGroup: 2-10 photos and videos as one album, the caption on its first item
        (Telegram shows it as the album's); the first message stands for the album."""
        media: list[dict[str, Any]] = []
        files: list[FilePart] = []
        for index, item in enumerate(request.media):
            kind, name = _kind(item), f"file{index}"
            entry: dict[str, Any] = {"type": kind, "media": f"attach://{name}"}
            files.append(_file_part(kind, item, name))
            if kind == "video":
                entry.update(video_fields(item))
                thumb = thumbnail(item, f"thumb{index}")
                if thumb is not None:
                    entry["thumbnail"] = f"attach://thumb{index}"
                    files.append(thumb)
            media.append(entry)
        if request.text:
            media[0]["caption"] = request.text
        fields = {"chat_id": chat_id, "media": json.dumps(media, separators=(",", ":"))}
        with streamed_form(fields, files, provider=LABEL) as form:
            messages = self._call(
                token, "sendMediaGroup", operation="album post", write=True, **form
            )
        if not isinstance(messages, list) or not messages or not isinstance(messages[0], dict):
            raise ProviderHTTPError(
                ErrorKind.AMBIGUOUS, f"{LABEL}: unexpected answer to album post.", status=200
            )
        return messages[0]

    # reconcile: not supported (base class raises NotSupported) - see the module docstring.

    def destination_options(
        self, *, account: AccountContext, region_code: str = "US", language: str = "en"
    ) -> dict[str, list[dict[str, str]]]:
        """Chats the bot has seen (``getUpdates``, without confirming any update), the
        connected chat first."""
        token = account.credentials.get("bot_token", "")
        chats: dict[str, str] = {}
        configured = account.credentials.get("chat_id", "")
        if configured:
            try:
                chat = self._call(
                    token, "getChat", operation="chat lookup", json_body={"chat_id": configured}
                )
                chats[str(chat["id"])] = _chat_label(chat)
            except ProviderHTTPError as exc:
                if exc.kind != ErrorKind.PERMANENT:
                    raise
                chats[configured] = configured
        try:
            updates = self._call(
                token, "getUpdates", operation="chat discovery", json_body={"timeout": 0}
            )
        except ProviderHTTPError as exc:
            if exc.status != 409:  # 409: a webhook is set, so getUpdates is unavailable
                raise
            updates = []
        for update in updates or []:
            for key in (
                "message",
                "edited_message",
                "channel_post",
                "edited_channel_post",
                "my_chat_member",
                "chat_member",
                "chat_join_request",
            ):
                chat = (update.get(key) or {}).get("chat")
                if isinstance(chat, dict) and "id" in chat:
                    chats.setdefault(str(chat["id"]), _chat_label(chat))
        return {"chat_id": [{"label": label, "value": value} for value, label in chats.items()]}
