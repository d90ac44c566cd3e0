"""The LLM engine's request schema, transport and reply reading, called directly (no API round
trip): the schema built for a context, HTTP failures, replies that break off, are too large or
are not JSON, the time bound, and each way a chat-completions reply can be malformed."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest

from config.errors import DomainError, UpstreamError, UpstreamTimeoutError
from discovery.cards import LIMITS, OPPORTUNITY_KEYS
from discovery.context import Voice
from discovery.engines import llm
from discovery.engines.llm import LlmEngine, completions_url, reply_schema
from tests.bomb_support import answering_server
from tests.discovery_support import llm_context
from tests.llm_standin import LlmStandIn

BODY = {"model": "m", "messages": []}


def engine(url: str = "http://127.0.0.1:9", *, timeout: float = 2, api_key: str = "") -> LlmEngine:
    return LlmEngine(url=url, model="m", api_key=api_key, timeout=timeout)


def refused(call: Any, *args: Any) -> DomainError:
    with pytest.raises(DomainError) as caught:
        call(*args)
    return caught.value


# --- The schema the reply must follow -------------------------------------------------------------


def test_the_reply_schema_bounds_cards_angles_platforms_and_formats() -> None:
    context = llm_context(limit=4)
    schema = reply_schema(context)
    assert schema["required"] == ["opportunities"]
    assert schema["additionalProperties"] is False
    cards = schema["properties"]["opportunities"]
    assert (cards["type"], cards["minItems"], cards["maxItems"]) == ("array", 1, 4)
    card = cards["items"]
    assert card["additionalProperties"] is False
    # Every member of a card but its id, which is Herald's, not the model's.
    assert card["required"] == [k for k in OPPORTUNITY_KEYS if k != "id"]
    assert set(card["properties"]) == set(card["required"])
    assert card["properties"]["signal_date"] == {
        "type": "string",
        "pattern": r"^\d{4}-\d{2}-\d{2}$",
    }
    for name in ("title", "hook", "why_it_fits", "why_now"):
        assert card["properties"][name] == {
            "type": "string",
            "description": f"at most {LIMITS[name]} characters",
        }
    angles = card["properties"]["angles"]
    assert (angles["minItems"], angles["maxItems"]) == (3, 5)
    assert angles["items"]["required"] == ["label", "thesis", "approach"]
    assert angles["items"]["additionalProperties"] is False
    assert angles["items"]["properties"]["label"]["description"] == "at most 60 characters"
    treatments = card["properties"]["platform_treatments"]
    assert (treatments["minItems"], treatments["maxItems"]) == (2, 2)
    treatment = treatments["items"]
    assert treatment["required"] == ["platform", "format", "media", "objective", "rationale"]
    assert treatment["properties"]["platform"] == {
        "type": "string",
        "enum": ["mastodon", "telegram"],
    }
    formats = sorted({f.key for p in context.platforms for f in p.formats})
    assert treatment["properties"]["format"] == {"type": "string", "enum": formats}
    assert "mastodon.post" in formats
    assert {f for f in formats if f.startswith("telegram.")}
    # Each call gets its own schema: nothing is shared between contexts.
    schema["properties"]["opportunities"]["maxItems"] = 99
    assert reply_schema(context)["properties"]["opportunities"]["maxItems"] == 4


def test_the_completions_url_is_derived_from_the_base() -> None:
    assert completions_url("https://m.example/v1") == "https://m.example/v1/chat/completions"
    assert completions_url("https://m.example/v1/") == "https://m.example/v1/chat/completions"
    assert completions_url("https://m.example/v1/chat/completions") == (
        "https://m.example/v1/chat/completions"
    )


def test_the_time_budget_covers_connect_and_twice_the_timeout() -> None:
    assert engine(timeout=2).time_budget_seconds == 6.0
    assert engine(timeout=30).time_budget_seconds == 65.0
    assert engine(timeout=0).timeout == 0.1  # never an unbounded wait


# --- Transport ------------------------------------------------------------------------------------


def test_without_an_api_key_no_authorization_header_is_sent() -> None:
    with LlmStandIn() as server:
        reply = engine(server.url)._post(_request_body())
    assert reply["model"] == "standin-model-1"
    [request] = server.requests
    assert "Authorization" not in request["headers"]
    assert request["headers"]["Content-Type"] == "application/json"
    assert request["headers"]["Accept"] == "application/json"


def test_a_reply_larger_than_the_cap_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(llm, "MAX_REPLY_BYTES", 300)
    with LlmStandIn() as server:
        error = refused(engine(server.url)._post, _request_body())
    assert isinstance(error, UpstreamError)
    assert (error.code, error.detail) == (
        "model_invalid_reply",
        "The discovery model's reply is too large.",
    )


@pytest.mark.parametrize("status", [500, 404, 429])
def test_an_http_error_is_model_failed_with_its_status(status: int) -> None:
    with answering_server(b'{"error": "x"}', status=status) as url:
        error = refused(engine(url)._post, BODY)
    assert isinstance(error, UpstreamError)
    assert (error.code, error.detail) == (
        "model_failed",
        f"The discovery model answered HTTP {status}.",
    )


def test_a_redirect_is_not_followed() -> None:
    with LlmStandIn() as target:
        headers = {"Location": f"{target.url}/chat/completions"}
        with answering_server(b"", status=307, headers=headers) as url:
            error = refused(engine(url)._post, BODY)
        assert (error.code, error.detail) == (
            "model_failed",
            "The discovery model answered HTTP 307.",
        )
        assert target.requests == []


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"<html>Bad gateway</html>", "the reply is not JSON"),
        (b"", "the reply is not JSON"),
        (b'[{"choices": []}]', "the reply is not a JSON object"),
        (b'"text"', "the reply is not a JSON object"),
    ],
)
def test_a_body_that_is_not_a_json_object_is_an_invalid_reply(body: bytes, reason: str) -> None:
    with answering_server(body) as url:
        error = refused(engine(url)._post, BODY)
    assert (error.code, error.detail) == (
        "model_invalid_reply",
        f"The discovery model's reply was invalid: {reason}.",
    )


def test_a_reply_that_breaks_off_is_model_failed() -> None:
    with _breaking_server() as url:
        error = refused(engine(url)._post, BODY)
    assert (error.code, error.detail) == ("model_failed", "The discovery model's reply broke off.")


def test_a_reply_that_stalls_midway_times_out() -> None:
    with _breaking_server(stall=2.0) as url:
        error = refused(engine(url, timeout=0.5)._post, BODY)
    assert isinstance(error, UpstreamTimeoutError)
    assert error.code == "model_timeout"


def test_a_request_that_cannot_be_made_is_model_failed() -> None:
    error = refused(engine("http://")._post, BODY)
    assert (error.code, error.detail) == ("model_failed", "The discovery model request failed.")


def test_a_model_that_never_answers_times_out_within_the_budget() -> None:
    with LlmStandIn() as server:
        server.mode, server.delay = "slow", 3.0
        slow = engine(server.url, timeout=0.5)
        started = time.monotonic()
        error = refused(slow._post, _request_body())
        elapsed = time.monotonic() - started
    assert isinstance(error, UpstreamTimeoutError)
    assert (error.code, error.detail) == (
        "model_timeout",
        "The discovery model did not answer within 0.5 s.",
    )
    assert elapsed < slow.time_budget_seconds


def _request_body() -> dict[str, Any]:
    """A request as ``discover`` sends it (the stand-in reads its schema and context)."""
    context = llm_context()
    return {
        "model": "m",
        "messages": [{"role": "user", "content": json.dumps(llm.prompt_payload(context))}],
        "response_format": {"json_schema": {"schema": reply_schema(context)}},
    }


@contextlib.contextmanager
def _breaking_server(stall: float = 0.0) -> Iterator[str]:
    """Announces a 1000-byte JSON body, sends 20 bytes, waits ``stall`` seconds and closes the
    connection."""
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        with contextlib.suppress(OSError):
            connection, _ = listener.accept()
            with connection:
                connection.recv(65536)
                connection.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    b'Content-Length: 1000\r\n\r\n{"choices": [{"mess'
                )
                time.sleep(stall)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        listener.close()
        thread.join(timeout=5)


# --- Reading the reply ----------------------------------------------------------------------------


def _card(title: str = "One") -> dict[str, Any]:
    return {
        "title": title,
        "hook": "Hook.",
        "signal_date": "2026-01-05",
        "why_it_fits": "Fits.",
        "why_now": "Now.",
        "angles": [{"label": f"L{n}", "thesis": "T", "approach": "A"} for n in range(3)],
        "platform_treatments": [
            {
                "platform": "mastodon",
                "format": "mastodon.post",
                "media": "M",
                "objective": "O",
                "rationale": "R",
            },
            {
                "platform": "telegram",
                "format": "telegram.message",
                "media": "M",
                "objective": "O",
                "rationale": "R",
            },
        ],
    }


def _choice(content: Any = None, **extra: Any) -> dict[str, Any]:
    text = json.dumps({"opportunities": [_card()]}) if content is None else content
    message = {"role": "assistant", "content": text, **extra.pop("message", {})}
    return {"message": message, "finish_reason": "stop", **extra}


MALFORMED: dict[str, tuple[dict[str, Any], str]] = {
    "no choices member": ({"model": "m"}, "no choices"),
    "empty choices": ({"choices": []}, "no choices"),
    "choices not an array": ({"choices": {"0": _choice()}}, "no choices"),
    "a choice that is not an object": ({"choices": ["text"]}, "no choices"),
    "cut at the length limit": (
        {"choices": [_choice(finish_reason="length")]},
        "the generation did not finish normally (truncated or filtered)",
    ),
    "filtered": (
        {"choices": [_choice(finish_reason="content_filter")]},
        "the generation did not finish normally (truncated or filtered)",
    ),
    "no message": ({"choices": [{"finish_reason": "stop"}]}, "no message"),
    "a message that is text": ({"choices": [{"message": "hi"}]}, "no message"),
    "a refusal": (
        {"choices": [_choice(message={"refusal": "I cannot help with that."})]},
        "the model refused",
    ),
    "no content": (
        {"choices": [_choice(message={"content": None})]},
        "the message has no text content",
    ),
    "content as parts": (
        {"choices": [_choice(message={"content": [{"type": "text", "text": "{}"}]})]},
        "the message has no text content",
    ),
    "content in prose": (
        {"choices": [_choice("Here are some ideas: 1. Write more.")]},
        "the content is not JSON",
    ),
    "content nested past the decoder": (
        {"choices": [_choice("[" * 100_000)]},
        "the content is not JSON",
    ),
    "content that is an array": (
        {"choices": [_choice(json.dumps([_card()]))]},
        "the content is not an object with only 'opportunities'",
    ),
    "content with another member": (
        {"choices": [_choice(json.dumps({"opportunities": [_card()], "notes": "x"}))]},
        "the content is not an object with only 'opportunities'",
    ),
    "opportunities not an array": (
        {"choices": [_choice(json.dumps({"opportunities": {"0": _card()}}))]},
        "'opportunities' is not an array",
    ),
    "a card that is text": (
        {"choices": [_choice(json.dumps({"opportunities": ["An idea"]}))]},
        "a card is not an object of the schema",
    ),
    "a card with an id of its own": (
        {"choices": [_choice(json.dumps({"opportunities": [{**_card(), "id": "mine"}]}))]},
        "a card is not an object of the schema",
    ),
    "angles that are not an array": (
        {"choices": [_choice(json.dumps({"opportunities": [{**_card(), "angles": "many"}]}))]},
        "opportunities[0].angles must hold 3 to 5 angles",
    ),
    "a format of another platform": (
        {
            "choices": [
                _choice(
                    json.dumps(
                        {
                            "opportunities": [
                                {
                                    **_card(),
                                    "platform_treatments": [
                                        {**_card()["platform_treatments"][0]},
                                        {
                                            **_card()["platform_treatments"][1],
                                            "format": "mastodon.post",
                                        },
                                    ],
                                }
                            ]
                        }
                    )
                )
            ]
        },
        "a treatment names a format its platform does not have",
    ),
}


@pytest.mark.parametrize(("reply", "reason"), MALFORMED.values(), ids=MALFORMED.keys())
def test_a_malformed_reply_is_refused_with_its_reason(reply: dict[str, Any], reason: str) -> None:
    error = refused(engine()._parse, reply, llm_context())
    assert isinstance(error, UpstreamError)
    assert (error.code, error.detail) == (
        "model_invalid_reply",
        f"The discovery model's reply was invalid: {reason}.",
    )


def test_a_reply_without_a_finish_reason_or_model_is_accepted_under_the_configured_model() -> None:
    reply = {"choices": [{"message": {"content": json.dumps({"opportunities": [_card()]})}}]}
    result = engine()._parse(reply, llm_context())
    assert result.model == "openai-compatible:m"
    assert [c["title"] for c in result.opportunities] == ["One"]
    long_name = {**reply, "model": "x" * 300}
    assert engine()._parse(long_name, llm_context()).model == f"openai-compatible:{'x' * 100}"


def test_card_and_angle_ids_are_derived_from_the_content() -> None:
    def ids(*titles: str) -> list[tuple[str, list[str]]]:
        reply = {"choices": [_choice(json.dumps({"opportunities": [_card(t) for t in titles]}))]}
        cards = engine()._parse(reply, llm_context()).opportunities
        return [(c["id"], [a["id"] for a in c["angles"]]) for c in cards]

    first = ids("One", "Two")
    assert first == ids("One", "Two")  # the same reply gives the same ids
    assert ids("Two", "One") == [first[1], first[0]]
    assert ids("Three")[0][0] != first[0][0]
    for card_id, angle_ids in first:
        assert card_id.startswith("opp_")
        assert len(set(angle_ids)) == 3
        assert all(a.startswith("ang_") for a in angle_ids)


def test_forbidden_phrases_are_scrubbed_from_the_reply_before_it_is_checked() -> None:
    voice = Voice(
        "v", "Voice", {"forbidden_phrases": ["synergy"]}, datetime(2026, 1, 5, tzinfo=UTC)
    )
    context = replace(llm_context(), voice=voice)
    card = {**_card(), "hook": "Pure Synergy, every day.", "why_now": "synergy"}
    reply = {"choices": [_choice(json.dumps({"opportunities": [card]}))]}
    error = refused(engine()._parse, reply, context)
    # why_now was nothing but the phrase: scrubbed to blank, the card is refused, not repaired.
    assert error.detail == (
        "The discovery model's reply was invalid: opportunities[0].why_now must be a non-blank "
        "string."
    )
    card["why_now"] = "Now, without synergy."
    [result] = (
        engine()
        ._parse({"choices": [_choice(json.dumps({"opportunities": [card]}))]}, context)
        .opportunities
    )
    assert (result["hook"], result["why_now"]) == ("Pure, every day.", "Now, without.")
