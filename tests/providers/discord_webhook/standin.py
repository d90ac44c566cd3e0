"""Stand-in Discord incoming webhooks: get webhook, execute (JSON or multipart with
``payload_json`` + ``files[n]``, ``?wait=true``), get message.

Webhook URLs look like ``<url>/api/webhooks/<id>/<token>`` (``/api/v10/...`` also accepted).
Attachments are parsed from the multipart body: a file past the upload limit (10 MiB by
default, ``max_file_bytes``) is answered 413 with Discord's error JSON (code 40005), a file sent
as a video must be one by its bytes, and ``uploads`` records every file received.
Run alone: ``python -m tests.providers.discord_webhook.standin --port 8403``.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from typing import Any

from tests.providers.standin import Part, Reply, Request, Route, StandIn, serve_main

WEBHOOK_ID = "112233445566778899"
WEBHOOK_TOKEN = "fixture-webhook-token_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
CHANNEL_ID = "223344556677889900"
GUILD_ID = "334455667788990011"
MAX_FILE_BYTES = 10 * 1024 * 1024
_DISCORD_EPOCH_MS = 1_420_070_400_000


def is_video(data: bytes) -> bool:
    """MP4 and MOV start with an ``ftyp`` box, WebM with the EBML magic."""
    return data[4:8] == b"ftyp" or data[:4] == b"\x1a\x45\xdf\xa3"


class DiscordWebhookStandIn(StandIn):
    provider = "discord_webhook"
    permanent_status = 400

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__(host, port)
        self.webhooks = {
            WEBHOOK_ID: {
                "token": WEBHOOK_TOKEN,
                "name": "Herald Hook",
                "channel_id": CHANNEL_ID,
                "guild_id": GUILD_ID,
            }
        }
        self._seq = 0
        self.clear_data()

    def clear_data(self) -> None:
        self.messages: dict[str, dict[str, Any]] = {}
        self.uploads: list[dict[str, Any]] = []
        self.max_file_bytes = MAX_FILE_BYTES  # a test may lower it to provoke the 413

    def webhook_url(self, webhook_id: str = WEBHOOK_ID) -> str:
        return f"{self.url}/api/webhooks/{webhook_id}/{self.webhooks[webhook_id]['token']}"

    def fixtures(self) -> dict[str, Any]:
        return {"webhook_url": self.webhook_url()}

    def build_routes(self) -> list[Route]:
        hook = r"/api(?:/v\d+)?/webhooks/(?P<webhook_id>\d+)/(?P<token>[A-Za-z0-9_.-]+)"
        return [
            Route("GET", hook, self.get_webhook),
            Route("POST", hook, self.execute),
            Route("GET", hook + r"/messages/(?P<message_id>\d+)", self.get_message),
        ]

    # --- error shapes -------------------------------------------------------------------------

    def error_reply(self, status: int, message: str, code: int = 0) -> Reply:
        if status >= 500:
            return Reply(status, {"message": f"{status}: Internal Server Error", "code": 0})
        if status == 400 and not code:
            code = 50035
            return Reply(
                400,
                {
                    "code": code,
                    "message": "Invalid Form Body",
                    "errors": {
                        "content": {"_errors": [{"code": "BASE_TYPE_BAD", "message": message}]}
                    },
                },
            )
        return Reply(status, {"message": message, "code": code})

    def rate_limited_reply(self, retry_after: float) -> Reply:
        return Reply(
            429,
            {"message": "You are being rate limited.", "retry_after": retry_after, "global": False},
            {
                "X-RateLimit-Limit": "5",
                "X-RateLimit-Remaining": "0",
                "X-RateLimit-Reset": f"{time.time() + retry_after:.3f}",
                "X-RateLimit-Reset-After": f"{retry_after:.3f}",
                "X-RateLimit-Bucket": "standin",
                "X-RateLimit-Scope": "user",
            },
        )

    def unauthorized_reply(self) -> Reply:
        return Reply(401, {"message": "Invalid Webhook Token", "code": 50027})

    # --- helpers ------------------------------------------------------------------------------

    def _check(self, webhook_id: str, token: str) -> Reply | None:
        hook = self.webhooks.get(webhook_id)
        if hook is None:
            return Reply(404, {"message": "Unknown Webhook", "code": 10015})
        if hook["token"] != token:
            return Reply(401, {"message": "Invalid Webhook Token", "code": 50027})
        return None

    def _snowflake(self) -> str:
        with self.lock:
            self._seq += 1
            return str(
                ((int(time.time() * 1000) - _DISCORD_EPOCH_MS) << 22) | (self._seq & 0x3FFFFF)
            )

    # --- handlers -----------------------------------------------------------------------------

    def get_webhook(self, request: Request, webhook_id: str, token: str) -> Reply:
        denied = self._check(webhook_id, token)
        if denied:
            return denied
        hook = self.webhooks[webhook_id]
        return Reply(
            200,
            {
                "id": webhook_id,
                "type": 1,
                "name": hook["name"],
                "avatar": None,
                "channel_id": hook["channel_id"],
                "guild_id": hook["guild_id"],
                "application_id": None,
                "token": token,
            },
        )

    def execute(self, request: Request, webhook_id: str, token: str) -> Reply:
        denied = self._check(webhook_id, token)
        if denied:
            return denied
        wait = (request.query.get("wait") or ["false"])[0].lower() == "true"
        if request.content_type == "multipart/form-data":
            fields = request.fields()
            try:
                payload = json.loads(fields.get("payload_json") or "{}")
            except ValueError:
                return self.error_reply(400, "payload_json is not valid JSON")
            files = [p for p in request.files() if p.name.startswith("files[")]
        else:
            payload = request.json if isinstance(request.json, dict) else None
            if payload is None:
                return self.error_reply(400, "The request body contains invalid JSON.", code=50109)
            files = []
        with self.lock:
            fault = self.gate_post()
            if fault is not None:
                return fault
            content = str(payload.get("content") or "")
            if len(content) > 2000:
                return self.error_reply(400, "Must be 2000 or fewer in length.")
            if not content and not files and not payload.get("embeds"):
                return Reply(400, {"message": "Cannot send an empty message", "code": 50006})
            if len(files) > 10:
                return self.error_reply(400, "Must be 10 or fewer in length.")
            refusal = self._file_fault(files)
            if refusal is not None:
                return refusal
            hook = self.webhooks[webhook_id]
            message_id = self._snowflake()
            message = {
                "id": message_id,
                "type": 0,
                "content": content,
                "channel_id": hook["channel_id"],
                "author": {
                    "id": webhook_id,
                    "username": payload.get("username") or hook["name"],
                    "bot": True,
                    "discriminator": "0000",
                    "avatar": None,
                },
                "attachments": [
                    {
                        "id": self._snowflake(),
                        "filename": f.filename,
                        "size": len(f.data),
                        "content_type": f.content_type,
                        "url": f"{self.url}/attachments/{hook['channel_id']}/{message_id}/{f.filename}",
                    }
                    for f in files
                ],
                "embeds": payload.get("embeds") or [],
                "mentions": [],
                "mention_roles": [],
                "pinned": False,
                "mention_everyone": False,
                "tts": False,
                "timestamp": datetime.now(UTC).isoformat(),
                "edited_timestamp": None,
                "flags": 0,
                "components": [],
                "webhook_id": webhook_id,
            }
            self.messages[message_id] = message
            self.uploads += [
                {
                    "message_id": message_id,
                    "filename": f.filename,
                    "content_type": f.content_type,
                    "bytes": len(f.data),
                    "data": f.data,
                }
                for f in files
            ]
            self.accept_post(
                {
                    "id": message_id,
                    "content": content,
                    "files": len(files),
                    "allowed_mentions": payload.get("allowed_mentions"),
                }
            )
        self.stall_if_asked()
        return Reply(200, message) if wait else Reply(204, None)

    def _file_fault(self, files: list[Part]) -> Reply | None:
        if any(len(f.data) > self.max_file_bytes for f in files):
            return Reply(413, {"message": "Request entity too large", "code": 40005})
        for f in files:
            if f.content_type.startswith("video/") and not is_video(f.data):
                return self.error_reply(400, f"{f.filename} is not a valid video file.")
        return None

    def get_message(self, request: Request, webhook_id: str, token: str, message_id: str) -> Reply:
        denied = self._check(webhook_id, token)
        if denied:
            return denied
        with self.lock:
            message = self.messages.get(message_id)
        if message is None:
            return Reply(404, {"message": "Unknown Message", "code": 10008})
        return Reply(200, message)


if __name__ == "__main__":
    serve_main(DiscordWebhookStandIn)
