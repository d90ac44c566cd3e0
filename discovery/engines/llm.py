"""Discovery through an OpenAI-compatible chat-completions endpoint.

The request asks for JSON constrained by a JSON schema (``response_format`` of type
``json_schema``, ``strict``) built for this call: the requested platforms and their formats are
enumerations, the number of cards and angles is bounded. Whatever comes back is still checked
strictly (``discovery.cards.validate_opportunities``): a reply that is not JSON, lacks a member,
adds one, breaks a card invariant or exceeds a bound is refused (502), never repaired. Forbidden
phrases of the voice profile are scrubbed before that check, so they never reach the caller.

Failures: not configured → 503 ``discovery_unavailable``; connection refused or unreachable →
503 ``model_unavailable``; no answer within ``HERALD_DISCOVERY_LLM_TIMEOUT_SECONDS`` (connect,
each read, and the whole reply, checked between reads: a call ends within the connect timeout
plus twice that) → 504 ``model_timeout``; an HTTP error, a refusal, a truncated
or invalid reply → 502 ``model_failed`` / ``model_invalid_reply``. The API key is sent only as
a bearer header and never logged or echoed; no model text is echoed in errors either.
"""

from __future__ import annotations

import copy
import json
import logging
import time
from dataclasses import asdict
from typing import Any

import requests
from django.views.decorators.debug import sensitive_variables
from urllib3 import exceptions as urllib3_exceptions

from config.errors import ServiceUnavailableError, UpstreamError, UpstreamTimeoutError
from discovery.cards import (
    ANGLE_KEYS,
    LIMITS,
    MAX_ANGLES,
    MIN_ANGLES,
    OPPORTUNITY_KEYS,
    TREATMENT_KEYS,
    CardError,
    scrub_cards,
    stable_id,
    validate_opportunities,
)
from discovery.context import DiscoveryContext, EngineResult

logger = logging.getLogger(__name__)

NAME = "openai-compatible"
MAX_REPLY_BYTES = 2 * 1024 * 1024
RECENT_IN_PROMPT = 20

SYSTEM_PROMPT = """You are the content-discovery engine of Herald, a social publishing tool.
From the workspace context you receive (its voice profile, recent publications with delivery
outcomes and engagement, focus, audience and target platforms with their format limits), propose
idea cards for posts the workspace could write next. Rules:
- Ground every card in the context: the profile's expertise, opinions, examples, interview
  answers and recent publications. No generic filler.
- Respect the voice profile: its traits, formality, humour, vocabulary and recurring
  expressions; stay within its boundaries; never use any of its forbidden phrases or disliked
  patterns.
- Each card: a unique title; a hook (an opening line in the profile's voice); signal_date (the
  ISO date of the signal the idea comes from, YYYY-MM-DD); why_it_fits (why it suits this voice
  and audience); why_now (why it is timely, citing the signal); 3 to 5 angles with distinct
  labels, each with a thesis and an approach; exactly one platform treatment per requested
  platform, using one of that platform's formats and its real limits.
- You only suggest ideas. Never write the finished post, never claim anything was published.
Answer with JSON that matches the given schema exactly."""


def _text(name: str) -> dict[str, Any]:
    return {"type": "string", "description": f"at most {LIMITS[name]} characters"}


# The JSON schema the model's reply must follow (card ids are added by Herald). The requested
# platforms, their formats and the numbers of cards and treatments differ per call:
# ``reply_schema`` fills them into a copy.
REPLY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["opportunities"],
    "properties": {
        "opportunities": {
            "type": "array",
            "minItems": 1,
            "maxItems": None,  # the cards wanted
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": [k for k in OPPORTUNITY_KEYS if k != "id"],
                "properties": {
                    "title": _text("title"),
                    "hook": _text("hook"),
                    "signal_date": {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$"},
                    "why_it_fits": _text("why_it_fits"),
                    "why_now": _text("why_now"),
                    "angles": {
                        "type": "array",
                        "minItems": MIN_ANGLES,
                        "maxItems": MAX_ANGLES,
                        "items": {
                            "type": "object",
                            "additionalProperties": False,
                            "required": [k for k in ANGLE_KEYS if k != "id"],
                            "properties": {
                                "label": _text("label"),
                                "thesis": _text("thesis"),
                                "approach": _text("approach"),
                            },
                        },
                    },
                    "platform_treatments": {
                        "type": "array",
                        "minItems": None,  # one per requested platform
                        "maxItems": None,
                        "items": {
                            "type": "object",
                            "additionalProperties": False,
                            "required": list(TREATMENT_KEYS),
                            "properties": {
                                "platform": {"type": "string", "enum": None},  # requested
                                "format": {"type": "string", "enum": None},  # theirs
                                "media": _text("media"),
                                "objective": _text("objective"),
                                "rationale": _text("rationale"),
                            },
                        },
                    },
                },
            },
        }
    },
}


def reply_schema(context: DiscoveryContext) -> dict[str, Any]:
    """``REPLY_SCHEMA`` for this call: the requested platforms and their formats as
    enumerations, one treatment per platform, at most ``context.limit`` cards."""
    platforms = [p.provider for p in context.platforms]
    schema = copy.deepcopy(REPLY_SCHEMA)
    cards = schema["properties"]["opportunities"]
    cards["maxItems"] = context.limit
    treatments = cards["items"]["properties"]["platform_treatments"]
    treatments["minItems"] = treatments["maxItems"] = len(platforms)
    members = treatments["items"]["properties"]
    members["platform"]["enum"] = platforms
    members["format"]["enum"] = sorted({f.key for p in context.platforms for f in p.formats})
    return schema


def prompt_payload(context: DiscoveryContext) -> dict[str, Any]:
    """The context as the model sees it (recent posts clipped; no ids beyond the workspace's)."""
    return {
        "workspace": context.workspace_name,
        "today": context.today.isoformat(),
        "cards_wanted": context.limit,
        "focus": context.focus,
        "audience": context.audience,
        "voice_profile": (
            {"name": context.voice.name, **context.voice.definition} if context.voice else None
        ),
        "platforms": [
            {
                "platform": p.provider,
                "name": p.display_name,
                "connected_accounts": p.connected_accounts,
                "formats": [
                    {
                        "format": f.key,
                        "text_limit": f.text_limit,
                        "counting_rule": f.counting_rule,
                        "media_max_count": f.media_max_count,
                        "media_types": list(f.media_types),
                        "media_required": f.media_required,
                    }
                    for f in p.formats
                ],
                "recent_deliveries": {
                    "published": p.deliveries.published,
                    "failed": p.deliveries.failed,
                    "pending": p.deliveries.pending,
                    "last_error_kind": p.deliveries.last_error_kind,
                },
            }
            for p in context.platforms
        ],
        "recent_publications": [
            {
                "date": post.created_at.date().isoformat(),
                "text": post.text[:500],
                "status": post.status,
                "outcomes": [asdict(o) for o in post.outcomes],
                "engagement": asdict(post.engagement) if post.engagement else None,
            }
            for post in context.publications[:RECENT_IN_PROMPT]
        ],
    }


def completions_url(base: str) -> str:
    base = base.rstrip("/")
    return base if base.endswith("/chat/completions") else f"{base}/chat/completions"


class LlmEngine:
    name = NAME

    def __init__(self, *, url: str, model: str, api_key: str, timeout: float) -> None:
        self.url = url
        self.model = model
        self.api_key = api_key
        self.timeout = max(0.1, float(timeout))
        # The longest a call can take: the connect timeout, then the whole-reply deadline, which
        # is checked between reads, so one last read may wait up to the read timeout past it.
        self.time_budget_seconds = min(5.0, self.timeout) + 2 * self.timeout

    @property
    def configured(self) -> bool:
        return bool(self.url and self.model)

    def check_configured(self) -> None:
        if not self.configured:
            raise ServiceUnavailableError(
                "The LLM discovery engine is not configured (HERALD_DISCOVERY_LLM_URL and "
                "HERALD_DISCOVERY_LLM_MODEL).",
                code="discovery_unavailable",
            )

    def discover(self, context: DiscoveryContext) -> EngineResult:
        self.check_configured()
        body = {
            "model": self.model,
            "messages": [
                {"role": "system", "content": SYSTEM_PROMPT},
                {
                    "role": "user",
                    "content": json.dumps(prompt_payload(context), ensure_ascii=False),
                },
            ],
            "response_format": {
                "type": "json_schema",
                "json_schema": {
                    "name": "discovery_result",
                    "strict": True,
                    "schema": reply_schema(context),
                },
            },
            "temperature": 0.2,
        }
        reply = self._post(body)
        return self._parse(reply, context)

    # --- transport ------------------------------------------------------------------------

    def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        """The reply as a JSON object, read within the deadline and the size cap."""
        deadline = time.monotonic() + self.timeout
        response = self._send(body)
        try:
            raw = self._read(response, deadline)
        finally:
            response.close()
        if response.status_code != 200:
            logger.warning("discovery model answered HTTP %s", response.status_code)
            raise UpstreamError(
                f"The discovery model answered HTTP {response.status_code}.", code="model_failed"
            )
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError) as exc:  # RecursionError: nested past the C stack
            raise self._invalid("the reply is not JSON") from exc
        if not isinstance(data, dict):
            raise self._invalid("the reply is not a JSON object")
        return data

    @sensitive_variables("headers")  # the bearer header never reaches an error report
    def _send(self, body: dict[str, Any]) -> requests.Response:
        """The response, its body not read yet (streamed)."""
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        try:
            return requests.post(
                completions_url(self.url),
                data=json.dumps(body, ensure_ascii=False).encode("utf-8"),
                headers=headers,
                timeout=(min(5.0, self.timeout), self.timeout),
                stream=True,
                allow_redirects=False,
            )
        except requests.Timeout as exc:
            raise self._timeout() from exc
        except requests.ConnectionError as exc:
            logger.warning("discovery model unreachable: %s", type(exc).__name__)
            raise ServiceUnavailableError(
                "The discovery model is unreachable.", code="model_unavailable"
            ) from exc
        except requests.RequestException as exc:
            raise UpstreamError("The discovery model request failed.", code="model_failed") from exc

    def _read(self, response: requests.Response, deadline: float) -> bytes:
        """The body, refused past ``MAX_REPLY_BYTES`` (decompressed) or past ``deadline``."""
        chunks: list[bytes] = []
        size = 0
        try:
            while True:
                # ``read1``: whatever one socket read brings (``iter_content`` would wait for
                # a full chunk, so a reply that trickles in could outlast the deadline).
                chunk = response.raw.read1(64 * 1024, decode_content=True)
                if not chunk:
                    return b"".join(chunks)
                chunks.append(chunk)
                size += len(chunk)
                if size > MAX_REPLY_BYTES:
                    raise UpstreamError(
                        "The discovery model's reply is too large.", code="model_invalid_reply"
                    )
                if time.monotonic() > deadline:
                    raise self._timeout()
        except (requests.Timeout, urllib3_exceptions.ReadTimeoutError, TimeoutError) as exc:
            raise self._timeout() from exc
        except (requests.RequestException, urllib3_exceptions.HTTPError, OSError) as exc:
            raise UpstreamError(
                "The discovery model's reply broke off.", code="model_failed"
            ) from exc

    def _timeout(self) -> UpstreamTimeoutError:
        return UpstreamTimeoutError(
            f"The discovery model did not answer within {self.timeout:g} s.", code="model_timeout"
        )

    @staticmethod
    def _invalid(reason: str) -> UpstreamError:
        logger.warning("discovery model reply refused: %s", reason)
        return UpstreamError(
            f"The discovery model's reply was invalid: {reason}.", code="model_invalid_reply"
        )

    # --- reply ----------------------------------------------------------------------------

    def _parse(self, reply: dict[str, Any], context: DiscoveryContext) -> EngineResult:
        """The cards of a chat-completions reply, with their ids, checked (502 otherwise)."""
        items = self._opportunities(self._content(reply))
        cards = self._checked([_with_ids(item, context) for item in items], context)
        upstream_model = reply.get("model")
        model = upstream_model if isinstance(upstream_model, str) and upstream_model else self.model
        return EngineResult(model=f"{NAME}:{model[:100]}", opportunities=cards)

    def _content(self, reply: dict[str, Any]) -> str:
        """The text of the first choice, which must have finished normally."""
        choices = reply.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise self._invalid("no choices")
        choice = choices[0]
        if choice.get("finish_reason") not in (None, "stop"):
            raise self._invalid("the generation did not finish normally (truncated or filtered)")
        message = choice.get("message")
        if not isinstance(message, dict):
            raise self._invalid("no message")
        if message.get("refusal"):
            raise self._invalid("the model refused")
        content = message.get("content")
        if not isinstance(content, str):
            raise self._invalid("the message has no text content")
        return content

    def _opportunities(self, content: str) -> list[dict[str, Any]]:
        """The cards of ``{"opportunities": [...]}``, each an object without an id of its own."""
        try:
            document = json.loads(content)
        except (ValueError, RecursionError) as exc:
            raise self._invalid("the content is not JSON") from exc
        if not isinstance(document, dict) or set(document) != {"opportunities"}:
            raise self._invalid("the content is not an object with only 'opportunities'")
        items = document["opportunities"]
        if not isinstance(items, list):
            raise self._invalid("'opportunities' is not an array")
        if not all(isinstance(item, dict) and "id" not in item for item in items):
            raise self._invalid("a card is not an object of the schema")
        return items

    def _checked(
        self, cards: list[dict[str, Any]], context: DiscoveryContext
    ) -> list[dict[str, Any]]:
        """The cards scrubbed of forbidden phrases, then held to every card invariant, each
        treatment naming a format of its own platform."""
        forbidden = context.forbidden_phrases
        try:
            cards = validate_opportunities(
                scrub_cards(cards, forbidden),
                platforms=[p.provider for p in context.platforms],
                limit=context.limit,
                forbidden=forbidden,
            )
        except CardError as exc:
            raise self._invalid(str(exc)) from exc
        allowed = {p.provider: {f.key for f in p.formats} for p in context.platforms}
        for card in cards:
            for treatment in card["platform_treatments"]:
                if treatment["format"] not in allowed[treatment["platform"]]:
                    raise self._invalid("a treatment names a format its platform does not have")
        return cards


def _with_ids(item: dict[str, Any], context: DiscoveryContext) -> dict[str, Any]:
    """A model card with Herald's ids: the card's from its content, each angle's from its
    label (an angle that is not an object, or has an id, is left for validation to refuse)."""
    card_id = stable_id("opp", context.workspace_id, json.dumps(item, sort_keys=True))
    angles = item.get("angles")
    if isinstance(angles, list):
        angles = [
            {"id": stable_id("ang", card_id, str(a.get("label"))), **a}
            if isinstance(a, dict) and "id" not in a
            else a
            for a in angles
        ]
    return {"id": card_id, **item, "angles": angles}
