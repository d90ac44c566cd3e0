"""The OpenAI-compatible discovery engine against a stand-in chat-completions server on
127.0.0.1: JSON-schema-constrained requests, strict validation of the
reply (502), a bounded timeout (504), and 503 when unconfigured or unreachable."""

from __future__ import annotations

import json
import logging
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
from rest_framework.test import APIClient

from publishing.models import Publication
from tests.discovery_support import assert_card_invariants, discover, llm_context
from tests.llm_standin import LlmStandIn
from tests.problem_asserts import assert_problem
from voice.definition import clean_definition
from voice.models import VoiceProfile

pytestmark = pytest.mark.django_db

API_KEY = "sk-test-0123456789abcdef"


@pytest.fixture
def llm(settings: Any) -> Iterator[LlmStandIn]:
    with LlmStandIn() as server:
        settings.HERALD_DISCOVERY_ENGINE = "llm"
        settings.HERALD_DISCOVERY_LLM_URL = server.url
        settings.HERALD_DISCOVERY_LLM_MODEL = "standin-model-1"
        settings.HERALD_DISCOVERY_LLM_API_KEY = API_KEY
        settings.HERALD_DISCOVERY_LLM_TIMEOUT_SECONDS = 1.0
        yield server


def test_valid_reply_becomes_the_result(
    owner_client: APIClient, workspace: Any, llm: LlmStandIn
) -> None:
    response = discover(owner_client, workspace, focus="Release notes", limit=3)
    assert response.status_code == 200, response.content[:500]
    result = response.json()
    assert result["model"] == "openai-compatible:standin-model-1"
    assert_card_invariants(result, ["mastodon", "bluesky"], 3)
    assert [c["title"] for c in result["opportunities"]] == ["Idea 1 for Main", "Idea 2 for Main"]
    assert all(c["id"].startswith("opp_") for c in result["opportunities"])

    [request] = llm.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["Authorization"] == f"Bearer {API_KEY}"
    body = request["body"]
    assert body["model"] == "standin-model-1"
    response_format = body["response_format"]
    assert response_format["type"] == "json_schema"
    assert response_format["json_schema"]["strict"] is True
    schema = response_format["json_schema"]["schema"]
    assert schema["additionalProperties"] is False
    cards = schema["properties"]["opportunities"]
    assert cards["maxItems"] == 3
    treatments = cards["items"]["properties"]["platform_treatments"]
    assert (treatments["minItems"], treatments["maxItems"]) == (2, 2)
    assert treatments["items"]["properties"]["platform"]["enum"] == ["mastodon", "bluesky"]
    context = json.loads(body["messages"][-1]["content"])
    assert context["focus"] == "Release notes"
    assert context["cards_wanted"] == 3
    assert {p["platform"] for p in context["platforms"]} == {"mastodon", "bluesky"}


def test_the_voice_profile_reaches_the_model_and_forbidden_phrases_are_scrubbed(
    owner_client: APIClient, workspace: Any, llm: LlmStandIn
) -> None:
    profile = VoiceProfile.objects.get(workspace=workspace, is_default=True)
    profile.definition = clean_definition(
        {"expertise": ["Release engineering"], "forbidden_phrases": ["Synergy"]}
    )
    profile.save()
    llm.extra_text = " Pure synergy!"
    result = discover(owner_client, workspace).json()
    assert "synergy" not in json.dumps(result).casefold()
    context = json.loads(llm.requests[0]["body"]["messages"][-1]["content"])
    assert context["voice_profile"]["expertise"] == ["Release engineering"]
    assert context["voice_profile"]["forbidden_phrases"] == ["Synergy"]


def test_a_malformed_reply_is_502(owner_client: APIClient, workspace: Any, llm: LlmStandIn) -> None:
    llm.mode = "malformed"
    body = assert_problem(discover(owner_client, workspace), 502, "model_invalid_reply")
    assert "{not json" not in body["detail"]


def test_a_reply_that_breaks_the_card_rules_is_502(
    owner_client: APIClient, workspace: Any, llm: LlmStandIn
) -> None:
    llm.mode = "invalid"
    assert_problem(discover(owner_client, workspace), 502, "model_invalid_reply")


def test_a_refusal_is_502(owner_client: APIClient, workspace: Any, llm: LlmStandIn) -> None:
    llm.mode = "refusal"
    assert_problem(discover(owner_client, workspace), 502, "model_invalid_reply")


def test_an_upstream_error_is_502(owner_client: APIClient, workspace: Any, llm: LlmStandIn) -> None:
    llm.mode = "http_error"
    assert_problem(discover(owner_client, workspace), 502, "model_failed")


def test_a_slow_model_is_504(owner_client: APIClient, workspace: Any, llm: LlmStandIn) -> None:
    llm.mode = "slow"
    llm.delay = 2.5
    body = assert_problem(discover(owner_client, workspace), 504, "model_timeout")
    assert "1 s" in body["detail"]
    llm.mode = "ok"  # the slot was released: the next call succeeds
    assert discover(owner_client, workspace).status_code == 200


def test_a_reply_that_trickles_in_is_cut_off_at_the_deadline(
    owner_client: APIClient, workspace: Any, llm: LlmStandIn
) -> None:
    """Every read returns within the read timeout, but the whole reply would take minutes:
    the call still ends near the deadline (connect + twice the 1 s timeout at most)."""
    llm.mode = "trickle"
    llm.trickle_interval, llm.trickle_bytes = 0.2, 8
    started = time.monotonic()
    assert_problem(discover(owner_client, workspace), 504, "model_timeout")
    assert time.monotonic() - started < 3.0


@pytest.mark.parametrize("missing", ["HERALD_DISCOVERY_LLM_URL", "HERALD_DISCOVERY_LLM_MODEL"])
def test_an_unconfigured_backend_is_503(
    owner_client: APIClient, workspace: Any, settings: Any, missing: str
) -> None:
    settings.HERALD_DISCOVERY_ENGINE = "llm"
    settings.HERALD_DISCOVERY_LLM_URL = "http://127.0.0.1:9/v1"
    settings.HERALD_DISCOVERY_LLM_MODEL = "m"
    setattr(settings, missing, "")
    assert_problem(discover(owner_client, workspace), 503, "discovery_unavailable")
    # Refused before it was admitted: not counted against the plan.
    usage = owner_client.get(f"/api/v1/workspaces/{workspace.pk}/usage").json()
    assert usage["usage"]["discovery_calls"] == 0


def test_an_unreachable_backend_is_503(
    owner_client: APIClient, workspace: Any, settings: Any
) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings.HERALD_DISCOVERY_ENGINE = "llm"
    settings.HERALD_DISCOVERY_LLM_URL = f"http://127.0.0.1:{port}/v1"
    settings.HERALD_DISCOVERY_LLM_MODEL = "m"
    settings.HERALD_DISCOVERY_LLM_TIMEOUT_SECONDS = 1.0
    assert_problem(discover(owner_client, workspace), 503, "model_unavailable")


def test_the_api_key_is_never_echoed_or_logged(
    owner_client: APIClient, workspace: Any, llm: LlmStandIn, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    for mode in ("ok", "malformed", "http_error"):
        llm.mode = mode
        response = discover(owner_client, workspace)
        assert API_KEY not in response.content.decode()
    assert API_KEY not in caplog.text


def test_the_llm_engine_writes_nothing(
    owner_client: APIClient, workspace: Any, llm: LlmStandIn
) -> None:
    assert discover(owner_client, workspace).status_code == 200
    assert not Publication.objects.exists()


# --- Strict validation of what comes back ---------------------------------------------------------


def _card(title: str = "A title") -> dict[str, Any]:
    return {
        "title": title,
        "hook": "Hook.",
        "signal_date": "2026-01-05",
        "why_it_fits": "Fits.",
        "why_now": "Now.",
        "angles": [{"label": f"L{n}", "thesis": "T", "approach": "A"} for n in range(3)],
        "platform_treatments": [
            {
                "platform": "telegram",
                "format": "telegram.message",
                "media": "M",
                "objective": "O",
                "rationale": "R",
            },
            {
                "platform": "mastodon",
                "format": "mastodon.post",
                "media": "M",
                "objective": "O",
                "rationale": "R",
            },
        ],
    }


def _reply(content: Any, finish_reason: str = "stop") -> dict[str, Any]:
    text = content if isinstance(content, str) else json.dumps(content)
    return {
        "model": "m",
        "choices": [
            {"message": {"role": "assistant", "content": text}, "finish_reason": finish_reason}
        ],
    }


def _mutated(change: Any) -> dict[str, Any]:
    cards = [_card("One"), _card("Two")]
    change(cards)
    return {"opportunities": cards}


INVALID = {
    "too many cards": _mutated(lambda c: c.append(_card("Three"))),
    "no cards": {"opportunities": []},
    "duplicate titles": _mutated(lambda c: c[1].update(title="one")),
    "extra member": _mutated(lambda c: c[0].update(score=5)),
    "missing member": _mutated(lambda c: c[0].pop("hook")),
    "blank text": _mutated(lambda c: c[0].update(hook="  ")),
    "not a date": _mutated(lambda c: c[0].update(signal_date="next week")),
    "a date-time": _mutated(lambda c: c[0].update(signal_date="2026-01-05T10:00:00")),
    "six angles": _mutated(
        lambda c: c[0].update(
            angles=[{"label": f"L{n}", "thesis": "T", "approach": "A"} for n in range(6)]
        )
    ),
    "duplicate labels": _mutated(lambda c: c[0]["angles"][1].update(label="l0")),
    "a platform missing": _mutated(lambda c: c[0]["platform_treatments"].pop()),
    "a platform twice": _mutated(
        lambda c: c[0]["platform_treatments"].__setitem__(1, c[0]["platform_treatments"][0])
    ),
    "a foreign platform": _mutated(
        lambda c: c[0]["platform_treatments"][0].update(platform="bluesky")
    ),
    "a foreign format": _mutated(
        lambda c: c[0]["platform_treatments"][0].update(format="mastodon.post")
    ),
    "over-long title": _mutated(lambda c: c[0].update(title="t" * 141)),
    "an id of its own": _mutated(lambda c: c[0].update(id="mine")),
    "other top-level members": {"opportunities": [_card()], "note": "hi"},
}


@pytest.mark.parametrize("document", INVALID.values(), ids=INVALID.keys())
def test_every_broken_rule_is_refused(document: dict[str, Any]) -> None:
    from config.errors import UpstreamError
    from discovery.engines.llm import LlmEngine

    engine = LlmEngine(url="http://127.0.0.1:9", model="m", api_key="", timeout=1)
    with pytest.raises(UpstreamError) as caught:
        engine._parse(_reply(document), llm_context())
    assert caught.value.code == "model_invalid_reply"


def test_a_truncated_generation_is_refused() -> None:
    from config.errors import UpstreamError
    from discovery.engines.llm import LlmEngine

    engine = LlmEngine(url="http://127.0.0.1:9", model="m", api_key="", timeout=1)
    with pytest.raises(UpstreamError):
        engine._parse(_reply({"opportunities": [_card()]}, finish_reason="length"), llm_context())


def test_a_valid_reply_is_put_in_platform_order_with_ids() -> None:
    from discovery.engines.llm import LlmEngine

    engine = LlmEngine(url="http://127.0.0.1:9", model="m", api_key="", timeout=1)
    result = engine._parse(_reply({"opportunities": [_card("One"), _card("Two")]}), llm_context())
    assert result.model == "openai-compatible:m"
    for card in result.opportunities:
        assert [t["platform"] for t in card["platform_treatments"]] == ["mastodon", "telegram"]
        assert card["id"].startswith("opp_")
        assert all(a["id"].startswith("ang_") for a in card["angles"])
