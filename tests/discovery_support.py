"""Shared by the discovery tests (tests/discovery/): the discover call and the invariants every
result holds, whichever engine answered."""

from __future__ import annotations

from datetime import date
from typing import Any

from rest_framework.test import APIClient

URL = "/api/v1/publication-opportunities/discover"


def discover(client: APIClient, workspace: Any, **body: Any) -> Any:
    payload = {"workspace_id": str(workspace.pk), "platforms": ["mastodon", "bluesky"], **body}
    return client.post(URL, payload, format="json")


def assert_card_invariants(result: dict[str, Any], platforms: list[str], limit: int) -> None:
    assert set(result) == {"$schema", "generated_at", "model", "opportunities"}
    assert result["$schema"].endswith("/api/v1/schemas/DiscoveryResult.json")
    assert isinstance(result["generated_at"], str)
    assert "T" in result["generated_at"]
    cards = result["opportunities"]
    assert 1 <= len(cards) <= limit
    assert len({c["title"].casefold() for c in cards}) == len(cards)
    assert len({c["id"] for c in cards}) == len(cards)
    for card in cards:
        assert set(card) == {
            "id",
            "title",
            "hook",
            "signal_date",
            "why_it_fits",
            "why_now",
            "angles",
            "platform_treatments",
        }
        for key in ("id", "title", "hook", "why_it_fits", "why_now"):
            assert isinstance(card[key], str)
            assert card[key].strip()
        date.fromisoformat(card["signal_date"])
        assert len(card["signal_date"]) == 10
        assert 3 <= len(card["angles"]) <= 5
        assert len({a["label"].casefold() for a in card["angles"]}) == len(card["angles"])
        for angle in card["angles"]:
            assert set(angle) == {"id", "label", "thesis", "approach"}
            assert all(isinstance(v, str) and v.strip() for v in angle.values())
        assert [t["platform"] for t in card["platform_treatments"]] == platforms
        for treatment in card["platform_treatments"]:
            assert set(treatment) == {"platform", "format", "media", "objective", "rationale"}
            assert all(isinstance(v, str) and v.strip() for v in treatment.values())


def llm_context(limit: int = 2) -> Any:
    """A small discovery context (Mastodon and Telegram) for parsing model replies directly."""
    from discovery.context import DeliveryStats, DiscoveryContext, PlatformInfo
    from discovery.selectors import platform_formats

    platforms = []
    for provider in ("mastodon", "telegram"):
        name, formats = platform_formats(provider)
        platforms.append(PlatformInfo(provider, name, formats, 1, DeliveryStats()))
    return DiscoveryContext(
        workspace_id="w",
        workspace_name="W",
        today=date(2026, 1, 5),
        platforms=tuple(platforms),
        limit=limit,
    )
