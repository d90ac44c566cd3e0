"""The built-in engine is a pure function of its context: for any valid voice definition, any
recent publications, focus, audience, platforms and limit it returns cards that keep every card
invariant, never contain a forbidden phrase, and are the same for the same context."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from discovery.cards import contains_forbidden, validate_opportunities
from discovery.context import (
    DeliveryStats,
    DiscoveryContext,
    Engagement,
    Outcome,
    PastPublication,
    PlatformInfo,
    Voice,
)
from discovery.engines.builtin import BuiltinEngine
from discovery.selectors import platform_formats
from providers import PROVIDERS
from voice.definition import DefinitionError, clean_definition

WORDS = st.sampled_from(
    [
        "incident",
        "response",
        "postgres",
        "indexes",
        "on-call",
        "teams",
        "synergy",
        "release",
        "notes",
        "game",
        "changer",
        "Take",
        "a",
        "stand",
        "Show",
        "how",
        "story",
        "myth",
        "audience",
        "the",
        "a",
        "of",
        "and",
        "I",
        "Kubernetes",
        "CI",
        "paved",
        "road",
        "toil",
        "é",
        "ü",
        "日本",
        "🙂",
        "—",
        "“quoted”",
        "10x",
    ]
)
PHRASE = st.lists(WORDS, min_size=1, max_size=8).map(" ".join)
TEXT = st.one_of(PHRASE, st.text(max_size=120))


def _definition() -> st.SearchStrategy[dict[str, Any]]:
    lists = {
        name: st.lists(PHRASE, max_size=6)
        for name in (
            "traits",
            "vocabulary",
            "recurring_expressions",
            "expertise",
            "forbidden_phrases",
            "opinions",
            "boundaries",
            "disliked_patterns",
        )
    }
    return st.fixed_dictionaries(
        {},
        optional={
            **lists,
            "identity_summary": TEXT,
            "humor": PHRASE,
            "formality": PHRASE,
            "examples": st.lists(
                st.fixed_dictionaries({"text": PHRASE}, optional={"platform": PHRASE}), max_size=3
            ),
            "interview_answers": st.lists(
                st.fixed_dictionaries({"question": PHRASE, "answer": TEXT}), max_size=3
            ),
            "corrections": st.lists(
                st.fixed_dictionaries(
                    {"original": PHRASE, "preferred": PHRASE}, optional={"lesson": PHRASE}
                ),
                max_size=2,
            ),
        },
    )


NOW = datetime(2026, 3, 1, 12, tzinfo=UTC)
STATUSES = st.sampled_from(["published", "failed", "queued", "canceled", "draft"])


@st.composite
def contexts(draw: Any) -> DiscoveryContext:
    try:
        definition = clean_definition(draw(_definition()))
    except DefinitionError:
        definition = clean_definition({})
    providers = draw(st.lists(st.sampled_from(PROVIDERS), min_size=1, max_size=4, unique=True))
    platforms = tuple(
        PlatformInfo(
            p,
            *platform_formats(p),
            draw(st.integers(0, 2)),
            DeliveryStats(
                published=draw(st.integers(0, 5)),
                failed=draw(st.integers(0, 2)),
                last_error_kind=draw(st.sampled_from(["", "auth", "transient"])),
            ),
        )
        for p in providers
    )
    posts = tuple(
        PastPublication(
            id=f"p{n}",
            text=draw(TEXT),
            created_at=NOW - timedelta(days=draw(st.integers(0, 89))),
            status="published",
            outcomes=tuple(
                Outcome(p, draw(STATUSES), draw(st.sampled_from(["", "auth"]))) for p in providers
            ),
            engagement=draw(
                st.none()
                | st.builds(
                    Engagement,
                    st.integers(0, 50),
                    st.integers(0, 9),
                    st.integers(0, 9),
                    st.integers(0, 999),
                )
            ),
        )
        for n in range(draw(st.integers(0, 5)))
    )
    voice = draw(st.none() | st.just(Voice("v", "Voice", definition, NOW)))
    return DiscoveryContext(
        workspace_id="w",
        workspace_name=draw(PHRASE),
        today=date(2026, 3, 1),
        platforms=platforms,
        limit=draw(st.integers(1, 8)),
        focus=draw(st.just("") | PHRASE),
        audience=draw(st.just("") | PHRASE),
        voice=voice,
        publications=posts,
    )


@settings(
    max_examples=150, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck)
)
@given(context=contexts())
def test_any_context_gives_valid_cards_without_forbidden_phrases(context: DiscoveryContext) -> None:
    engine = BuiltinEngine()
    result = engine.discover(context)
    platforms = [p.provider for p in context.platforms]
    forbidden = context.forbidden_phrases
    cards = validate_opportunities(
        result.opportunities, platforms=platforms, limit=context.limit, forbidden=forbidden
    )
    assert cards == result.opportunities
    for card in cards:
        prose = [card["title"], card["hook"], card["why_it_fits"], card["why_now"]]
        prose += [a[k] for a in card["angles"] for k in ("label", "thesis", "approach")]
        prose += [
            t[k] for t in card["platform_treatments"] for k in ("media", "objective", "rationale")
        ]
        assert not [text for text in prose if contains_forbidden(text, forbidden)]
    assert len({json.dumps(card, sort_keys=True) for card in cards}) == len(cards)
    assert engine.discover(context).opportunities == result.opportunities
