"""Stand-in receiver of Herald's generic ``webhook`` provider (a real HTTP server on 127.0.0.1).

It behaves as ``docs/providers/webhook.md`` tells a receiver to: every delivery's
``X-Herald-Signature`` is checked with the documentation's own Python example (loaded from the
page, so the example is what the tests run), a bad signature is a 401, and a repeated
``X-Herald-Delivery`` is answered with the first answer instead of being stored twice. Accepted
deliveries are recorded (parsed body, raw bytes, headers) and answered ``200 {"id": "rcv-<n>"}``
(``204`` without a body after ``set_faults(reply_id=False)``). The usual stand-in faults apply.

Run alone: ``python -m tests.providers.webhook.standin --port 8405`` (prints the URL and the secret).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from tests.providers.standin import Reply, Request, Route, StandIn, serve_main

SECRET = "fixture-webhook-secret-0123456789abcdef"
PATH = "/hooks/herald"
PATH_TOKEN = "path-token-9f8e7d6c5b4a39281706"  # a token in the URL's query, never shown
DOCS_PAGE = Path(__file__).resolve().parents[3] / "docs" / "providers" / "webhook.md"

SignatureCheck = Callable[[bytes, str, str], bool]


@cache
def documented_signature_check() -> SignatureCheck:
    """``herald_signature_ok`` exactly as the documentation prints it."""
    page = DOCS_PAGE.read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", page, flags=re.DOTALL)
    source = next(block for block in blocks if "def herald_signature_ok" in block)
    namespace: dict[str, Any] = {}
    exec(compile(source, str(DOCS_PAGE), "exec"), namespace)  # noqa: S102 - our own docs
    check: SignatureCheck = namespace["herald_signature_ok"]
    return check


class WebhookReceiverStandIn(StandIn):
    provider = "webhook"
    permanent_status = 400

    def __init__(self, host: str = "127.0.0.1", port: int = 0, secret: str = SECRET) -> None:
        self.secret = secret
        self.reply_id = True
        super().__init__(host, port)
        self.clear_data()

    def clear_data(self) -> None:
        self.answers: dict[str, Reply] = {}  # delivery key -> first answer
        self.raw_bodies: list[bytes] = []
        self.headers_seen: list[dict[str, str]] = []
        self.rejected_signatures = 0
        self.reply_id = True

    def webhook_url(self) -> str:
        return f"{self.url}{PATH}?token={PATH_TOKEN}"

    def fixtures(self) -> dict[str, Any]:
        return {"url": self.webhook_url(), "secret": self.secret}

    def configure_extra(self, spec: dict[str, Any]) -> None:
        if "reply_id" in spec:
            self.reply_id = bool(spec.pop("reply_id"))

    def build_routes(self) -> list[Route]:
        return [Route("POST", PATH, self.deliver)]

    def error_reply(self, status: int, message: str) -> Reply:
        return Reply(status, {"error": message})

    def rate_limited_reply(self, retry_after: float) -> Reply:
        return Reply(429, {"error": "Too many deliveries; slow down."})

    def unauthorized_reply(self) -> Reply:
        return Reply(401, {"error": "Unknown sender."})

    def deliver(self, request: Request) -> Reply:
        signature = request.headers.get("X-Herald-Signature") or ""
        if not documented_signature_check()(request.body, signature, self.secret):
            with self.lock:
                self.rejected_signatures += 1
            return Reply(401, {"error": "bad signature"})
        body = request.json
        key = request.headers.get("X-Herald-Delivery") or ""
        if request.content_type != "application/json" or not isinstance(body, dict):
            return self.error_reply(400, "expected a JSON object")
        if not key or body.get("id") != key:
            return self.error_reply(400, "X-Herald-Delivery must equal the body's id")
        with self.lock:
            if key in self.answers:  # a repeat: the first answer, nothing stored twice
                self.bump("duplicates")
                return self.answers[key]
            fault = self.gate_post()
            if fault is not None:
                return fault
            self.raw_bodies.append(request.body)
            self.headers_seen.append({name: str(value) for name, value in request.headers.items()})
            receiver_id = f"rcv-{len(self.raw_bodies)}"
            reply = Reply(200, {"id": receiver_id}) if self.reply_id else Reply(204, None)
            self.answers[key] = reply
            self.accept_post(
                {"id": receiver_id, "delivery": key, "signature": signature, "body": body}
            )
        self.stall_if_asked()
        return reply


if __name__ == "__main__":
    serve_main(WebhookReceiverStandIn)
