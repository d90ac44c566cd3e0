"""The card invariants every engine's output must meet (``discovery.cards``): each rule refuses a
card with a message naming the member and the rule, a valid list comes back with its treatments
in the requested platform order, and forbidden phrases are scrubbed to a stable result."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from discovery.cards import CardError, scrub, scrub_cards, validate_opportunities

PLATFORMS = ["mastodon", "bluesky"]


def _card(n: int = 0) -> dict[str, Any]:
    return {
        "id": f"opp_{n}",
        "title": f"Card {n}",
        "hook": "Hook.",
        "signal_date": "2026-03-01",
        "why_it_fits": "Fits.",
        "why_now": "Now.",
        "angles": [
            {"id": f"ang_{n}_{k}", "label": f"Label {k}", "thesis": "T", "approach": "A"}
            for k in range(3)
        ],
        "platform_treatments": [
            {
                "platform": platform,
                "format": f"{platform}.post",
                "media": "M",
                "objective": "O",
                "rationale": "R",
            }
            for platform in PLATFORMS
        ],
    }


def _validate(cards: Any, *, limit: int = 3, forbidden: tuple[str, ...] = ()) -> Any:
    return validate_opportunities(
        cards, platforms=PLATFORMS, limit=limit, forbidden=list(forbidden)
    )


def _broken(change: Callable[[list[dict[str, Any]]], Any]) -> list[dict[str, Any]]:
    cards = [_card(0), _card(1)]
    change(cards)
    return cards


def _angles(count: int) -> list[dict[str, str]]:
    return [{"id": f"a{k}", "label": f"L{k}", "thesis": "T", "approach": "A"} for k in range(count)]


BROKEN: dict[str, tuple[Any, str]] = {
    "not an array": ({"opportunities": []}, "opportunities must be an array of 1 to 3 cards"),
    "no cards": ([], "opportunities must be an array of 1 to 3 cards"),
    "over the limit": (
        [_card(n) for n in range(4)],
        "opportunities must be an array of 1 to 3 cards",
    ),
    "a card that is not an object": (["card"], "opportunities[0] must be an object"),
    "a missing member": (
        _broken(lambda c: c[1].pop("why_now")),
        "opportunities[1] has missing members ['why_now'] or unknown members []",
    ),
    "an unknown member": (
        _broken(lambda c: c[0].update(score=3)),
        "opportunities[0] has missing members [] or unknown members ['score']",
    ),
    "a blank text": (
        _broken(lambda c: c[0].update(hook=" \n")),
        "opportunities[0].hook must be a non-blank string",
    ),
    "a text that is not a string": (
        _broken(lambda c: c[0].update(title=7)),
        "opportunities[0].title must be a non-blank string",
    ),
    "an over-long title": (
        _broken(lambda c: c[0].update(title="t" * 141)),
        "opportunities[0].title is longer than 140 characters",
    ),
    "an over-long why_now": (
        _broken(lambda c: c[1].update(why_now="w" * 701)),
        "opportunities[1].why_now is longer than 700 characters",
    ),
    "a repeated id": (
        _broken(lambda c: c[1].update(id="opp_0")),
        "opportunities[1].id repeats another card's id",
    ),
    "a repeated title": (
        _broken(lambda c: c[1].update(title=" card 0 ")),
        "opportunities[1].title repeats another card's title",
    ),
    "a date that is not a string": (
        _broken(lambda c: c[0].update(signal_date=20260301)),
        "opportunities[0].signal_date must be an ISO date (YYYY-MM-DD)",
    ),
    "a date-time": (
        _broken(lambda c: c[0].update(signal_date="2026-03-01T10:00")),
        "opportunities[0].signal_date must be an ISO date (YYYY-MM-DD)",
    ),
    "an impossible date": (
        _broken(lambda c: c[0].update(signal_date="2026-02-30")),
        "opportunities[0].signal_date must be an ISO date (YYYY-MM-DD)",
    ),
    "angles that are not an array": (
        _broken(lambda c: c[0].update(angles={"label": "L"})),
        "opportunities[0].angles must hold 3 to 5 angles",
    ),
    "two angles": (
        _broken(lambda c: c[0].update(angles=_angles(2))),
        "opportunities[0].angles must hold 3 to 5 angles",
    ),
    "six angles": (
        _broken(lambda c: c[0].update(angles=_angles(6))),
        "opportunities[0].angles must hold 3 to 5 angles",
    ),
    "an angle that is not an object": (
        _broken(lambda c: c[0]["angles"].__setitem__(2, "angle")),
        "opportunities[0].angles[2] must be an object",
    ),
    "an angle without an id": (
        _broken(lambda c: c[0]["angles"][1].pop("id")),
        "opportunities[0].angles[1] has missing members ['id'] or unknown members []",
    ),
    "an over-long label": (
        _broken(lambda c: c[0]["angles"][0].update(label="l" * 61)),
        "opportunities[0].angles[0].label is longer than 60 characters",
    ),
    "a blank approach": (
        _broken(lambda c: c[1]["angles"][2].update(approach="")),
        "opportunities[1].angles[2].approach must be a non-blank string",
    ),
    "a repeated label": (
        _broken(lambda c: c[0]["angles"][2].update(label="LABEL 0")),
        "opportunities[0].angles[2].label repeats another angle's label",
    ),
    "a repeated angle id": (
        _broken(lambda c: c[0]["angles"][1].update(id="ang_0_0")),
        "opportunities[0].angles[1].id repeats another angle's id",
    ),
    "treatments that are not an array": (
        _broken(lambda c: c[0].update(platform_treatments={})),
        "opportunities[0].platform_treatments must be an array",
    ),
    "a treatment with an unknown member": (
        _broken(lambda c: c[0]["platform_treatments"][0].update(hashtags="#x")),
        "opportunities[0].platform_treatments[0] has missing members [] or unknown members "
        "['hashtags']",
    ),
    "an over-long media text": (
        _broken(lambda c: c[0]["platform_treatments"][1].update(media="m" * 301)),
        "opportunities[0].platform_treatments[1].media is longer than 300 characters",
    ),
    "a platform twice": (
        _broken(lambda c: c[0]["platform_treatments"].append(c[0]["platform_treatments"][0])),
        "opportunities[0].platform_treatments[2].platform repeats another treatment's platform",
    ),
    "a platform missing": (
        _broken(lambda c: c[0]["platform_treatments"].pop()),
        "opportunities[0].platform_treatments must cover exactly ['mastodon', 'bluesky']",
    ),
    "a platform not requested": (
        _broken(lambda c: c[1]["platform_treatments"][1].update(platform="telegram")),
        "opportunities[1].platform_treatments must cover exactly ['mastodon', 'bluesky']",
    ),
}


@pytest.mark.parametrize(("cards", "message"), BROKEN.values(), ids=BROKEN.keys())
def test_each_broken_rule_is_refused_with_its_place_and_reason(cards: Any, message: str) -> None:
    with pytest.raises(CardError) as caught:
        _validate(cards)
    assert str(caught.value) == message


def test_a_forbidden_phrase_in_any_prose_is_refused_but_not_in_identifiers() -> None:
    for place, change in {
        "title": lambda c: c.update(title="Pure Synergy"),
        "angles[1].thesis": lambda c: c["angles"][1].update(thesis="More synergy."),
        "platform_treatments[1].rationale": lambda c: c["platform_treatments"][1].update(
            rationale="SYNERGY"
        ),
    }.items():
        card = _card()
        change(card)
        with pytest.raises(CardError) as caught:
            _validate([card], forbidden=("synergy",))
        assert str(caught.value) == f"opportunities[0].{place} contains a forbidden phrase"
    # Ids, dates, platform and format names are not prose: a phrase there is not refused.
    card = _card()
    card["id"] = "opp_synergy"
    card["platform_treatments"][0]["format"] = "mastodon.synergy"
    assert _validate([card], forbidden=("synergy", "  ")) == [card]


def test_valid_cards_come_back_with_treatments_in_the_requested_order() -> None:
    cards = [_card(0), _card(1)]
    cards[0]["platform_treatments"].reverse()
    cards[1]["angles"] = _angles(5)
    original = copy.deepcopy(cards)
    result = _validate(cards)
    assert cards == original  # the input is not changed
    for card in result:
        assert [t["platform"] for t in card["platform_treatments"]] == PLATFORMS
    assert [{**c, "platform_treatments": None} for c in result] == [
        {**c, "platform_treatments": None} for c in original
    ]
    assert _validate([_card(0)], limit=1) == [_card(0)]


def test_scrub_removes_phrases_case_insensitively_and_tidies_the_text() -> None:
    assert scrub("This is a Game Changer , truly!", ["game changer"]) == "This is a, truly!"
    assert scrub("10x  engineers  10X", ["10x"]) == "engineers"
    assert scrub("Nothing here.", ["", "  "]) == "Nothing here."
    # Removing one occurrence can join the halves of another: repeat until none is left.
    assert scrub("A synesynergyrgy plan", ["synergy"]) == "A plan"
    assert scrub("ssynergyynergy!", ["synergy"]) == "!"


def test_a_text_that_cannot_be_cleaned_in_twenty_passes_is_dropped() -> None:
    nested = "a" * 25 + "b" * 25  # each pass removes only the "ab" in the middle
    assert scrub(nested, ["ab"]) == ""
    assert scrub("a" * 5 + "b" * 5 + " tail", ["ab"]) == "tail"


def test_scrub_cards_cleans_prose_and_keeps_identifiers() -> None:
    card = _card()
    card["id"] = "opp_synergy"
    card["hook"] = "Synergy is the hook."
    card["angles"][0]["thesis"] = "All synergy."
    card["platform_treatments"][0]["format"] = "synergy.post"
    [cleaned] = scrub_cards([card], ["synergy"])
    assert cleaned["id"] == "opp_synergy"
    assert cleaned["hook"] == "is the hook."
    assert cleaned["angles"][0]["thesis"] == "All."
    assert cleaned["platform_treatments"][0]["format"] == "synergy.post"
    assert scrub_cards([card], [" ", ""]) == [card]
