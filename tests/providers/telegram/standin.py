"""Stand-in Telegram Bot API: ``/bot<token>/<method>`` with getMe, getChat, getUpdates,
sendMessage, sendPhoto, sendVideo and sendMediaGroup, answering ``{"ok": ...}`` envelopes like
the real API. Uploads are parsed from the multipart body: a request past the upload limit (50 MB
for a bot, ``max_upload_bytes``) is answered 413 as the Bot API does, a video is checked to be
one by its bytes, and ``uploads`` records every file received.

Run alone: ``python -m tests.providers.telegram.standin --port 8404``.
"""

from __future__ import annotations

import io
import json
import time
from typing import Any

from tests.providers.standin import Part, Reply, Request, Route, StandIn, serve_main

BOT_TOKEN = "123456789:AAFixtureTokenForHeraldStandIn_abcdefgh"
BOT = {"id": 123456789, "is_bot": True, "first_name": "Herald", "username": "herald_test_bot"}
GROUP = {"id": -1001234567890, "type": "supergroup", "title": "Herald Test Group"}
CHANNEL = {
    "id": -1009876543210,
    "type": "channel",
    "title": "Herald News",
    "username": "heraldnews",
}
PRIVATE = {"id": 4242, "type": "private", "first_name": "Ada", "last_name": "Lovelace"}
MAX_UPLOAD_BYTES = 50 * 1024 * 1024  # what a bot may upload
MAX_PHOTO_BYTES = 10 * 1024 * 1024


def too_large() -> Reply:
    return Reply(413, {"ok": False, "error_code": 413, "description": "Request Entity Too Large"})


def is_video(data: bytes) -> bool:
    """MP4 and MOV start with an ``ftyp`` box, WebM with the EBML magic."""
    return data[4:8] == b"ftyp" or data[:4] == b"\x1a\x45\xdf\xa3"


def _utf16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


class TelegramStandIn(StandIn):
    provider = "telegram"
    permanent_status = 400

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__(host, port)
        self.bots = {BOT_TOKEN: BOT}
        self.chats = {str(c["id"]): c for c in (GROUP, CHANNEL, PRIVATE)}
        self.chats["@heraldnews"] = CHANNEL
        self.updates: list[dict[str, Any]] = [
            {
                "update_id": 1,
                "message": {"message_id": 1, "date": 1700000000, "chat": GROUP, "text": "hi"},
            },
            {
                "update_id": 2,
                "channel_post": {"message_id": 1, "date": 1700000001, "chat": CHANNEL, "text": "x"},
            },
            {
                "update_id": 3,
                "message": {"message_id": 2, "date": 1700000002, "chat": PRIVATE, "text": "/start"},
            },
        ]
        self.clear_data()

    def clear_data(self) -> None:
        self.messages: dict[tuple[int, int], dict[str, Any]] = {}
        self.uploads: list[dict[str, Any]] = []
        self.max_upload_bytes = MAX_UPLOAD_BYTES  # a test may lower it to provoke the 413
        self._next_message: dict[int, int] = {}

    def fixtures(self) -> dict[str, Any]:
        return {
            "api_url": self.url,
            "bot_token": BOT_TOKEN,
            "chat_id": str(GROUP["id"]),
            "channel_chat_id": str(CHANNEL["id"]),
        }

    def build_routes(self) -> list[Route]:
        pattern = r"/bot(?P<token>[^/]+)/(?P<method>[A-Za-z]+)"
        return [Route("GET", pattern, self.call), Route("POST", pattern, self.call)]

    # --- error shapes -------------------------------------------------------------------------

    def error_reply(self, status: int, message: str) -> Reply:
        description = {401: "Unauthorized", 404: "Not Found"}.get(status, message)
        if status == 400 and not message.startswith("Bad Request"):
            description = f"Bad Request: {message}"
        if status >= 500:
            description = "Bad Gateway" if status == 502 else "Internal Server Error"
        return Reply(status, {"ok": False, "error_code": status, "description": description})

    def rate_limited_reply(self, retry_after: float) -> Reply:
        seconds = max(1, round(retry_after))
        return Reply(
            429,
            {
                "ok": False,
                "error_code": 429,
                "description": f"Too Many Requests: retry after {seconds}",
                "parameters": {"retry_after": seconds},
            },
        )

    def unauthorized_reply(self) -> Reply:
        return Reply(401, {"ok": False, "error_code": 401, "description": "Unauthorized"})

    # --- methods ------------------------------------------------------------------------------

    def call(self, request: Request, token: str, method: str) -> Reply:
        bot = self.bots.get(token)
        if bot is None:
            return self.unauthorized_reply()
        handler = {
            "getMe": self.get_me,
            "getChat": self.get_chat,
            "getUpdates": self.get_updates,
            "sendMessage": self.send_message,
            "sendPhoto": self.send_photo,
            "sendVideo": self.send_video,
            "sendMediaGroup": self.send_media_group,
        }.get(method)
        if handler is None:
            return Reply(404, {"ok": False, "error_code": 404, "description": "Not Found"})
        if len(request.body) > self.max_upload_bytes:
            return too_large()
        return handler(request, request.fields())

    @staticmethod
    def ok(result: Any) -> Reply:
        return Reply(200, {"ok": True, "result": result})

    def _chat(self, fields: dict[str, Any]) -> dict[str, Any] | None:
        return self.chats.get(str(fields.get("chat_id") or ""))

    def _post_chat(self, fields: dict[str, Any]) -> dict[str, Any] | Reply:
        """The chat a send goes to, or the fault or refusal to answer instead."""
        fault = self.gate_post()
        if fault is not None:
            return fault
        chat = self._chat(fields)
        return chat if chat is not None else self.error_reply(400, "Bad Request: chat not found")

    def get_me(self, request: Request, fields: dict[str, Any]) -> Reply:
        return self.ok(BOT | {"can_join_groups": True, "can_read_all_group_messages": False})

    def get_chat(self, request: Request, fields: dict[str, Any]) -> Reply:
        chat = self._chat(fields)
        if chat is None:
            return self.error_reply(400, "Bad Request: chat not found")
        return self.ok(chat)

    def get_updates(self, request: Request, fields: dict[str, Any]) -> Reply:
        offset = int(fields.get("offset") or 0)
        return self.ok([u for u in self.updates if u["update_id"] >= offset])

    def _store(self, chat: dict[str, Any], **content: Any) -> dict[str, Any]:
        chat_id = int(chat["id"])
        self._next_message[chat_id] = self._next_message.get(chat_id, 100) + 1
        message = {
            "message_id": self._next_message[chat_id],
            "date": int(time.time()),
            "chat": chat,
            **content,
        }
        if chat["type"] == "channel":
            message["sender_chat"] = chat
        else:
            message["from"] = BOT
        self.messages[(chat_id, message["message_id"])] = message
        return message

    def send_message(self, request: Request, fields: dict[str, Any]) -> Reply:
        with self.lock:
            chat = self._post_chat(fields)
            if isinstance(chat, Reply):
                return chat
            text = str(fields.get("text") or "")
            if not text.strip():
                return self.error_reply(400, "Bad Request: message text is empty")
            if _utf16(text) > 4096:
                return self.error_reply(400, "Bad Request: message is too long")
            message = self._store(chat, text=text)
            self.accept_post(
                {"chat_id": chat["id"], "message_id": message["message_id"], "text": text}
            )
        self.stall_if_asked()
        return self.ok(message)

    def send_photo(self, request: Request, fields: dict[str, Any]) -> Reply:
        with self.lock:
            chat = self._post_chat(fields)
            if isinstance(chat, Reply):
                return chat
            photos = [p for p in request.files() if p.name == "photo"]
            if not photos and not fields.get("photo"):
                return self.error_reply(400, "Bad Request: there is no photo in the request")
            size = len(photos[0].data) if photos else 0
            if size > 10 * 1024 * 1024:
                return self.error_reply(400, "Bad Request: file is too big")
            caption = str(fields.get("caption") or "")
            fault = self._caption_fault(caption)
            if fault is not None:
                return fault
            sizes = [
                {
                    "file_id": f"photo-{len(self.messages)}-{w}",
                    "file_unique_id": f"u{w}",
                    "width": w,
                    "height": w,
                    "file_size": size,
                }
                for w in (90, 320)
            ]
            content: dict[str, Any] = {"photo": sizes}
            if caption:
                content["caption"] = caption
            message = self._store(chat, **content)
            self.accept_post(
                {
                    "chat_id": chat["id"],
                    "message_id": message["message_id"],
                    "caption": caption,
                    "photo_bytes": size,
                }
            )
        self.stall_if_asked()
        return self.ok(message)

    # --- video ----------------------------------------------------------------------------------

    def _record(self, message: dict[str, Any], part: Part, kind: str) -> None:
        self.uploads.append(
            {
                "message_id": message["message_id"],
                "kind": kind,
                "filename": part.filename,
                "content_type": part.content_type,
                "bytes": len(part.data),
                "data": part.data,
            }
        )

    @staticmethod
    def _video(part: Part, fields: dict[str, Any]) -> dict[str, Any]:
        return {
            "file_id": f"video-{len(part.data)}",
            "file_unique_id": f"v{len(part.data)}",
            "width": int(fields.get("width") or 0),
            "height": int(fields.get("height") or 0),
            "duration": int(fields.get("duration") or 0),
            "mime_type": part.content_type,
            "file_size": len(part.data),
        }

    @staticmethod
    def _thumbnail(request: Request, attach: Any) -> dict[str, Any] | str | None:
        """The thumbnail uploaded under ``attach://<name>``, as Telegram takes it: a JPEG under
        200 kB, at most 320 px a side (its size, or why it is refused); None when none was
        sent."""
        if not attach:
            return None
        name = str(attach).removeprefix("attach://")
        part = next((p for p in request.files() if p.name == name), None)
        if part is None:
            return "Bad Request: wrong thumbnail file identifier specified"
        from PIL import Image

        with Image.open(io.BytesIO(part.data)) as picture:
            width, height, kind = picture.width, picture.height, picture.format
        if kind != "JPEG" or len(part.data) >= 200 * 1000 or max(width, height) > 320:
            return "Bad Request: THUMBNAIL_INVALID"
        return {"width": width, "height": height, "bytes": len(part.data)}

    def _caption_fault(self, caption: str) -> Reply | None:
        if _utf16(caption) > 1024:
            return self.error_reply(400, "Bad Request: message caption is too long")
        return None

    def send_video(self, request: Request, fields: dict[str, Any]) -> Reply:
        with self.lock:
            chat = self._post_chat(fields)
            if isinstance(chat, Reply):
                return chat
            videos = [p for p in request.files() if p.name == "video"]
            if not videos or not is_video(videos[0].data):
                return self.error_reply(400, "Bad Request: VIDEO_FILE_INVALID")
            caption = str(fields.get("caption") or "")
            fault = self._caption_fault(caption)
            if fault is not None:
                return fault
            thumb = self._thumbnail(request, fields.get("thumbnail"))
            if isinstance(thumb, str):
                return self.error_reply(400, thumb)
            content: dict[str, Any] = {"video": self._video(videos[0], fields)}
            if caption:
                content["caption"] = caption
            message = self._store(chat, **content)
            self._record(message, videos[0], "video")
            self.accept_post(
                {
                    "chat_id": chat["id"],
                    "message_id": message["message_id"],
                    "caption": caption,
                    "video_bytes": len(videos[0].data),
                    "supports_streaming": fields.get("supports_streaming") == "true",
                    "width": fields.get("width"),
                    "height": fields.get("height"),
                    "duration": fields.get("duration"),
                    "thumbnail": thumb,
                }
            )
        self.stall_if_asked()
        return self.ok(message)

    def _album_items(
        self, request: Request, fields: dict[str, Any]
    ) -> tuple[list[tuple[dict[str, Any], Part]], str]:
        """The album's (InputMedia, uploaded part) pairs, or why the request is refused."""
        try:
            media = json.loads(str(fields.get("media") or ""))
        except ValueError:
            return [], "Bad Request: can't parse media JSON object"
        if not isinstance(media, list) or not 2 <= len(media) <= 10:
            return [], "Bad Request: wrong number of messages specified (2-10)"
        parts = {p.name: p for p in request.files()}
        items = []
        for entry in media:
            part = parts.get(str(entry.get("media", "")).removeprefix("attach://"))
            kind = entry.get("type")
            if part is None or kind not in ("photo", "video"):
                return [], "Bad Request: wrong file identifier/HTTP URL specified"
            if kind == "video" and not is_video(part.data):
                return [], "Bad Request: VIDEO_FILE_INVALID"
            if kind == "photo" and len(part.data) > MAX_PHOTO_BYTES:
                return [], "Bad Request: file is too big"
            items.append((entry, part))
        return items, ""

    def send_media_group(self, request: Request, fields: dict[str, Any]) -> Reply:
        with self.lock:
            chat = self._post_chat(fields)
            if isinstance(chat, Reply):
                return chat
            items, refusal = self._album_items(request, fields)
            if refusal:
                return self.error_reply(400, refusal)
            caption = str(items[0][0].get("caption") or "")
            fault = self._caption_fault(caption)
            if fault is not None:
                return fault
            messages = self._store_album(chat, items, caption)
            self.accept_post(
                {
                    "chat_id": chat["id"],
                    "message_ids": [m["message_id"] for m in messages],
                    "caption": caption,
                    "kinds": [entry["type"] for entry, _ in items],
                    "entries": [entry for entry, _ in items],
                    "thumbnails": [
                        self._thumbnail(request, entry.get("thumbnail")) for entry, _ in items
                    ],
                }
            )
        self.stall_if_asked()
        return self.ok(messages)

    def _store_album(
        self, chat: dict[str, Any], items: list[tuple[dict[str, Any], Part]], caption: str
    ) -> list[dict[str, Any]]:
        group = f"album-{len(self.messages)}"
        messages = []
        for index, (entry, part) in enumerate(items):
            content: dict[str, Any] = {"media_group_id": group}
            if entry["type"] == "video":
                content["video"] = self._video(part, entry)
            else:
                content["photo"] = [{"file_id": f"photo-{group}-{index}", "width": 320}]
            if index == 0 and caption:
                content["caption"] = caption
            message = self._store(chat, **content)
            self._record(message, part, entry["type"])
            messages.append(message)
        return messages


if __name__ == "__main__":
    serve_main(TelegramStandIn)
