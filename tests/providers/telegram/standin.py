"""Stand-in Telegram Bot API: ``/bot<token>/<method>`` with getMe, getChat, getUpdates,
sendMessage and sendPhoto, answering ``{"ok": ...}`` envelopes like the real API.

Run alone: ``python -m tests.providers.telegram.standin --port 8404``.
"""

from __future__ import annotations

import time
from typing import Any

from tests.providers.standin import Reply, Request, Route, StandIn, serve_main

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
        }.get(method)
        if handler is None:
            return Reply(404, {"ok": False, "error_code": 404, "description": "Not Found"})
        return handler(request, request.fields())

    @staticmethod
    def ok(result: Any) -> Reply:
        return Reply(200, {"ok": True, "result": result})

    def _chat(self, fields: dict[str, Any]) -> dict[str, Any] | None:
        return self.chats.get(str(fields.get("chat_id") or ""))

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
            fault = self.gate_post()
            if fault is not None:
                return fault
            chat = self._chat(fields)
            if chat is None:
                return self.error_reply(400, "Bad Request: chat not found")
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
            fault = self.gate_post()
            if fault is not None:
                return fault
            chat = self._chat(fields)
            if chat is None:
                return self.error_reply(400, "Bad Request: chat not found")
            photos = [p for p in request.files() if p.name == "photo"]
            if not photos and not fields.get("photo"):
                return self.error_reply(400, "Bad Request: there is no photo in the request")
            size = len(photos[0].data) if photos else 0
            if size > 10 * 1024 * 1024:
                return self.error_reply(400, "Bad Request: file is too big")
            caption = str(fields.get("caption") or "")
            if _utf16(caption) > 1024:
                return self.error_reply(400, "Bad Request: message caption is too long")
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


if __name__ == "__main__":
    serve_main(TelegramStandIn)
