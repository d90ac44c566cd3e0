"""A stand-in OpenAI-compatible chat-completions server: a real HTTP server on 127.0.0.1.

``POST /v1/chat/completions`` answers like a chat-completions API. By default it reads the
request's ``response_format`` JSON schema and the context in the user message and answers
with cards that satisfy the schema (one treatment per requested platform, first format of
each). ``mode`` changes the answer:

* ``ok`` — a valid reply (``extra_text`` is appended to every hook, e.g. a forbidden phrase);
* ``malformed`` — message content that is not JSON;
* ``invalid`` — JSON that breaks the card rules (two angles, a missing member);
* ``refusal`` — a refusal message;
* ``http_error`` — HTTP 500 with an error body;
* ``slow`` — sleeps ``delay`` seconds before answering (past the client's timeout);
* ``trickle`` — answers at once with a valid reply, but sends its body a few bytes every
  ``trickle_interval`` seconds (each read is quick; the whole reply is not).

Every request is recorded (``requests``: headers and JSON body) for assertions. Use it as a
context manager::

    with LlmStandIn() as server:
        settings.HERALD_DISCOVERY_LLM_URL = server.url      # …/v1
        server.mode = "slow"
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


class LlmStandIn:
    def __init__(self) -> None:
        self.mode = "ok"
        self.delay = 2.0
        self.trickle_interval = 0.3
        self.trickle_bytes = 16
        self.extra_text = ""
        self.model = "standin-model-1"
        self.requests: list[dict[str, Any]] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        # stop() (shutdown) waits up to one poll interval: 10 ms, not the default 0.5 s
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    # --- answers ------------------------------------------------------------------------

    def cards(self, body: dict[str, Any]) -> dict[str, Any]:
        schema = body["response_format"]["json_schema"]["schema"]
        card_schema = schema["properties"]["opportunities"]["items"]
        treatment = card_schema["properties"]["platform_treatments"]["items"]["properties"]
        platforms = treatment["platform"]["enum"]
        context = json.loads(body["messages"][-1]["content"])
        formats = {p["platform"]: p["formats"][0]["format"] for p in context["platforms"]}
        wanted = min(int(context["cards_wanted"]), 2)
        cards = []
        for n in range(wanted):
            cards.append(
                {
                    "title": f"Idea {n + 1} for {context['workspace']}",
                    "hook": f"Here is idea {n + 1}.{self.extra_text}",
                    "signal_date": context["today"],
                    "why_it_fits": "It fits the voice profile.",
                    "why_now": "It is timely.",
                    "angles": [
                        {
                            "label": f"Angle {k}",
                            "thesis": f"Thesis {k}",
                            "approach": f"Approach {k}",
                        }
                        for k in range(3)
                    ],
                    "platform_treatments": [
                        {
                            "platform": platform,
                            "format": formats[platform],
                            "media": "Text only",
                            "objective": "Start a conversation",
                            "rationale": "Fits the length limit",
                        }
                        for platform in platforms
                    ],
                }
            )
        return {"opportunities": cards}

    def answer(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if self.mode == "slow":
            time.sleep(self.delay)
        if self.mode == "http_error":
            return 500, {"error": {"message": "internal error", "type": "server_error"}}
        message: dict[str, Any] = {"role": "assistant", "content": None}
        if self.mode == "malformed":
            message["content"] = "Sure! Here are some ideas: {not json"
        elif self.mode == "refusal":
            message["refusal"] = "I cannot help with that."
        elif self.mode == "invalid":
            cards = self.cards(body)
            cards["opportunities"][0]["angles"] = cards["opportunities"][0]["angles"][:2]
            del cards["opportunities"][0]["why_now"]
            message["content"] = json.dumps(cards)
        else:
            message["content"] = json.dumps(self.cards(body))
        return 200, {
            "id": "chatcmpl-standin",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # quiet
                return

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = None
                standin.requests.append(
                    {"path": self.path, "headers": dict(self.headers), "body": body}
                )
                if self.path != "/v1/chat/completions" or not isinstance(body, dict):
                    status, payload = 404, {"error": {"message": "not found"}}
                else:
                    status, payload = standin.answer(body)
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    if standin.mode != "trickle":
                        self.wfile.write(data)
                        return
                    step = standin.trickle_bytes
                    for start in range(0, len(data), step):
                        self.wfile.write(data[start : start + step])
                        self.wfile.flush()
                        time.sleep(standin.trickle_interval)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

        return Handler
