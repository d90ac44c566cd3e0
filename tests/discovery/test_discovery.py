"""Content discovery through the API: the result shape and card invariants, the built-in engine
on a realistic workspace, no writes and no provider calls, the per-user limits, the plan limit,
and the nine error kinds."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
import requests
from django.utils import timezone
from rest_framework.test import APIClient

from discovery.throttling import one_in_flight
from publishing.models import Account, Destination, Media, Publication, PublicationEvent
from tests.discovery_support import URL, assert_card_invariants, discover
from tests.problem_asserts import assert_invalid, assert_problem
from voice.models import VoiceProfile
from workspaces.models import Plan, User, WorkspaceMembership

pytestmark = pytest.mark.django_db

PROFILE = {
    "identity_summary": "I run a small platform-engineering consultancy and write for engineering leads.",
    "traits": ["Direct", "Practical", "Warm"],
    "formality": "Plain and conversational",
    "humor": "Dry, now and then",
    "vocabulary": ["toil", "blast radius", "paved road"],
    "recurring_expressions": ["Here's the thing", "Ship small, ship often"],
    "expertise": ["PostgreSQL performance tuning", "Incident response", "Developer experience"],
    "opinions": [
        "Most teams should run fewer microservices than they do",
        "On-call pain is a design smell, not a staffing problem",
        "PostgreSQL performance problems are usually missing indexes, not hardware",
    ],
    "boundaries": ["No client names or confidential numbers"],
    "disliked_patterns": ["Clickbait questions"],
    "forbidden_phrases": ["game changer", "synergy", "10x"],
    "examples": [
        {
            "text": "We cut our p99 from 900 ms to 40 ms with one index. Here's the thing: measure first.",
            "platform": "mastodon",
            "why_it_fits": "Concrete numbers, one lesson",
        }
    ],
    "interview_answers": [
        {
            "question": "What is the hardest incident you handled?",
            "answer": "A cascading failure where retries from 40 services took down our database; we added backoff and circuit breakers.",
        }
    ],
}


def ok(response: Any, status: int = 200) -> Any:
    assert response.status_code == status, (response.status_code, response.content[:800])
    return response.json()


@pytest.fixture
def realistic(workspace: Any, user: User) -> dict[str, Any]:
    """A workspace with a filled-in default voice, two connected accounts, and recent posts
    with delivery outcomes and engagement."""
    profile = VoiceProfile.objects.get(workspace=workspace, is_default=True)
    from voice.definition import clean_definition

    profile.definition = clean_definition(PROFILE)
    profile.save()
    mastodon = Account.objects.create(
        workspace=workspace,
        provider="mastodon",
        external_id="1",
        username="ops",
        instance_url="https://social.example",
    )
    bluesky = Account.objects.create(
        workspace=workspace, provider="bluesky", external_id="did:plc:x", username="ops.bsky.social"
    )
    now = timezone.now()

    def post(text: str, days_ago: int, outcomes: dict[Account, tuple[str, str]]) -> Publication:
        publication = Publication.objects.create(
            workspace=workspace,
            created_by=user,
            text=text,
            status=Publication.Status.PUBLISHED,
            created_at=now - timedelta(days=days_ago),
        )
        for position, (account, (status, error_kind)) in enumerate(outcomes.items()):
            Destination.objects.create(
                publication=publication,
                account=account,
                position=position,
                profile=f"{account.provider}.post",
                status=status,
                error_kind=error_kind,
                idempotency_key=f"{publication.pk.hex}{position}",
                published_at=now - timedelta(days=days_ago) if status == "published" else None,
            )
        return publication

    runbooks = post(
        "Incident response is a GAME CHANGER when the runbook exists before the incident. "
        "Write it on a calm day.",
        12,
        {mastodon: ("published", "")},
    )
    PublicationEvent.objects.create(
        publication=runbooks,
        kind="destination.metrics",
        data={"metrics": {"likes": 42, "reposts": 7, "comments": 5}},
    )
    post(
        "Why we moved our CI to a paved road, and what it did to deploy toil.",
        5,
        {mastodon: ("published", ""), bluesky: ("failed", "auth")},
    )
    weeks = post(
        "Our team switched to four-day weeks. Six months in, here is what changed.",
        20,
        {mastodon: ("published", ""), bluesky: ("published", "")},
    )
    PublicationEvent.objects.create(
        publication=weeks, kind="destination.metrics", data={"metrics": {"likes": 3}}
    )
    return {"profile": profile, "mastodon": mastodon, "bluesky": bluesky}


# --- The built-in engine -------------------------------------------------------------------------


def test_result_has_the_discovery_result_shape(owner_client: APIClient, workspace: Any) -> None:
    result = ok(discover(owner_client, workspace))
    assert result["model"] == "herald-builtin/1.1"
    assert len(result["opportunities"]) == 5  # default limit, starters fill an empty workspace
    assert_card_invariants(result, ["mastodon", "bluesky"], 5)


def test_a_new_workspace_gets_starter_cards_with_their_own_angles(
    owner_client: APIClient, workspace: Any
) -> None:
    """No posts and an empty profile: starter cards, each with angles written for it (not the
    general templates with a clause pasted in, "where you stand on what Main does and …")."""
    cards = ok(discover(owner_client, workspace, limit=8, platforms=["telegram"]))["opportunities"]
    assert len(cards) == 8
    labels = [tuple(a["label"] for a in c["angles"]) for c in cards]
    assert len(set(labels)) == 8  # every starter has its own set
    text = json.dumps(cards).casefold()
    assert "where you stand on what" not in text
    assert "let me tell you about" not in text
    assert cards[0]["hook"] == "Who we are at Main, what we do, and why we are posting here."
    # Telegram's photo format needs a photo or a video (an album of up to ten); the card says so.
    assert cards[0]["platform_treatments"][0]["format"] == "telegram.photo"
    assert cards[0]["platform_treatments"][0]["media"].startswith(
        "Required: 1 to 10 (images and video)"
    )


@pytest.mark.parametrize("limit", [1, 3, 8])
def test_limit_bounds_the_cards(
    owner_client: APIClient, workspace: Any, realistic: Any, limit: int
) -> None:
    result = ok(discover(owner_client, workspace, limit=limit, platforms=["telegram"]))
    assert len(result["opportunities"]) == limit
    assert_card_invariants(result, ["telegram"], limit)


def test_cards_come_from_the_workspace_and_its_voice(
    owner_client: APIClient, workspace: Any, realistic: Any
) -> None:
    result = ok(
        discover(owner_client, workspace, limit=8, audience="engineering leads at startups")
    )
    assert_card_invariants(result, ["mastodon", "bluesky"], 8)
    cards = result["opportunities"]
    text = json.dumps(cards)
    titles = [c["title"] for c in cards]

    # Forbidden phrases never appear, not even when the workspace's own posts contain them.
    for phrase in PROFILE["forbidden_phrases"]:
        assert phrase.casefold() not in text.casefold()

    # Expertise the workspace has not written about recently comes first, as its own card.
    assert titles[0] == "PostgreSQL performance tuning"
    assert "none of your 3 posts" in cards[0]["why_now"]
    assert "expertise" in cards[0]["why_it_fits"]
    assert cards[0]["hook"] == (
        "Here's the thing: PostgreSQL performance problems are usually missing indexes, not hardware."
    )
    # Its stand angle argues the matching opinion from the profile.
    stand = next(a for a in cards[0]["angles"] if a["label"] == "Take a stand")
    assert stand["thesis"].startswith("PostgreSQL performance problems are usually missing indexes")
    # Expertise it did write about builds on the best-received post: engagement and date.
    covered = next(c for c in cards if c["title"] == "Incident response")
    assert "42 likes" in covered["why_now"]
    assert "7 reposts" in covered["why_now"]
    assert covered["signal_date"] == (timezone.now() - timedelta(days=12)).date().isoformat()
    assert any(a["label"] == "What happened next" for a in covered["angles"])
    # Another well-received post gets a follow-up.
    follow = next(c for c in cards if c["title"].startswith("Follow-up: Our team switched"))
    assert "went out on Bluesky and Mastodon (3 likes)" in follow["why_now"]
    # Every opinion is argued somewhere; recurring expressions open hooks.
    theses = " ".join(a["thesis"] for c in cards for a in c["angles"])
    for opinion in PROFILE["opinions"]:
        assert opinion in theses or opinion in text
    assert any(c["hook"].startswith(("Here's the thing", "Ship small, ship often")) for c in cards)
    # The interview answer becomes a story; the audience gets its own angle.
    assert "cascading failure" in text
    assert any(
        a["label"] == "Ask your audience" and "engineering leads at startups" in a["thesis"]
        for c in cards
        for a in c["angles"]
    )
    # Approaches carry the register and the boundaries.
    angles = {a["label"]: a for a in cards[0]["angles"]}
    assert "Sound direct, practical and warm" in angles["Take a stand"]["approach"]
    assert "“toil”, “blast radius” and “paved road”" in angles["Show how"]["approach"]
    assert "No client names or confidential numbers" in angles["Story from the work"]["approach"]
    assert "Avoid clickbait questions" in angles["Myth vs. reality"]["approach"]
    # A post that quoted a forbidden phrase is never quoted back (no words put in the author's
    # mouth): its card refers to the topic instead.
    assert covered["hook"].endswith(
        "I wrote about incident response. Here is what I have learned since."
    )
    # The post that failed on Bluesky gets a second run.
    second = next(c for c in cards if c["title"].startswith("Second run:"))
    assert "failed on Bluesky (auth)" in second["why_now"]


def test_cards_read_as_usable_briefs_not_templates(
    owner_client: APIClient, workspace: Any, realistic: Any
) -> None:
    """What a social media manager would reject: a slogan glued in front of an unrelated claim,
    a post's whole first sentence pasted into "about …", and the same treatment on every card."""
    cards = ok(discover(owner_client, workspace, limit=8, audience="engineering leads"))[
        "opportunities"
    ]
    by_title = {c["title"]: c for c in cards}

    # "Here's the thing" is a lead-in and opens claims; the slogan "Ship small, ship often" has
    # nothing to do with any card here and never opens a hook.
    assert not [c["hook"] for c in cards if c["hook"].startswith("Ship small")]
    assert cards[0]["hook"].startswith("Here's the thing: PostgreSQL performance problems")
    assert by_title["Where you stand: Most teams should run fewer microservices than they do"][
        "hook"
    ].endswith("ost teams should run fewer microservices than they do.")
    # A catchphrase on every card wears thin: at most a third of the hooks carry one.
    assert 1 <= sum(c["hook"].startswith("Here's the thing") for c in cards) <= 8 // 3
    # Cards about a post refer to the post instead of pasting its sentence into a template.
    follow = next(c for c in cards if c["title"].startswith("Follow-up: Our team switched"))
    second = next(c for c in cards if c["title"].startswith("Second run:"))
    for card in (follow, second):
        theses = " ".join(a["thesis"] for a in card["angles"]).casefold()
        assert "about our team switched" not in theses
        assert "about why we moved" not in theses
    assert follow["hook"].startswith("On ")
    assert second["hook"].startswith("Some of you never saw this one: “Why we moved our CI")

    # Treatments fit the card and what happened to the earlier post on each platform.
    mastodon, bluesky = second["platform_treatments"]
    assert "already saw the first post" in mastodon["rationale"]
    assert "first real run on Bluesky" in bluesky["rationale"]
    assert "missed it" in bluesky["objective"]
    opinion = by_title["Where you stand: Most teams should run fewer microservices than they do"]
    assert opinion["platform_treatments"][0]["objective"].startswith("Spark replies")
    assert len({c["platform_treatments"][0]["objective"] for c in cards}) >= 4
    assert len({c["platform_treatments"][0]["media"] for c in cards}) >= 4
    # A saved example is quoted where it is about the card's subject.
    postgres = by_title["PostgreSQL performance tuning"]
    story = next(a for a in postgres["angles"] if a["label"] == "Story from the work")
    assert "p99 from 900 ms to 40 ms" in story["approach"]


def test_drafts_are_not_coverage_but_are_pointed_out(
    owner_client: APIClient, workspace: Any, user: User, realistic: Any
) -> None:
    """A draft or scheduled post is not something the audience has seen: the topic is still a
    gap (not "you covered it"), and the card points at the waiting draft."""
    Publication.objects.create(
        workspace=workspace,
        created_by=user,
        status=Publication.Status.DRAFT,
        text="Developer experience is mostly removing toil from the paved road.",
    )
    cards = ok(discover(owner_client, workspace, limit=8))["opportunities"]
    devex = next(c for c in cards if c["title"] == "Developer experience")
    assert "none of your 3 posts" in devex["why_now"]
    assert (
        f"You already have a draft on it from {timezone.now().date().isoformat()}"
        in devex["why_now"]
    )
    assert not any(
        c["why_now"].startswith("You covered it in") and c["title"] == "Developer experience"
        for c in cards
    )


def test_treatments_use_the_platforms_capabilities_and_history(
    owner_client: APIClient, workspace: Any, realistic: Any
) -> None:
    result = ok(discover(owner_client, workspace, platforms=["mastodon", "bluesky", "telegram"]))
    mastodon, bluesky, telegram = result["opportunities"][0]["platform_treatments"]
    assert mastodon["format"] == "mastodon.post"
    assert "up to 500 graphemes (each URL counts as 23" in mastodon["rationale"]
    assert "3 of your last 3 deliveries here were published (100 %)" in mastodon["rationale"]
    assert mastodon["media"].startswith("Optional: up to 4")
    assert bluesky["format"] == "bluesky.post"
    assert "up to 300 graphemes" in bluesky["rationale"]
    assert "reconnect" in bluesky["rationale"]
    assert telegram["format"].startswith("telegram.")
    assert "No Telegram bot account is connected yet" in telegram["rationale"]


def test_focus_leads_and_the_same_input_gives_the_same_cards(
    owner_client: APIClient, workspace: Any, realistic: Any
) -> None:
    first = ok(discover(owner_client, workspace, focus="On-call rotations for small teams"))
    second = ok(discover(owner_client, workspace, focus="On-call rotations for small teams"))
    assert first["opportunities"] == second["opportunities"]
    assert first["model"] == second["model"]
    lead = first["opportunities"][0]
    assert lead["title"] == "On-call rotations for small teams"
    assert lead["why_now"].startswith("You asked for ideas on this now")
    assert lead["signal_date"] == timezone.now().date().isoformat()
    stand = next(a for a in lead["angles"] if a["label"] == "Take a stand")
    assert stand["thesis"] == "On-call pain is a design smell, not a staffing problem."


def test_a_named_voice_profile_is_used(
    owner_client: APIClient, workspace: Any, realistic: Any
) -> None:
    other = VoiceProfile.objects.create(
        workspace=workspace,
        name="Quiet",
        definition={"expertise": ["Sourdough baking"], "forbidden_phrases": ["postgresql"]},
    )
    result = ok(discover(owner_client, workspace, voice_profile_id=str(other.pk)))
    assert result["opportunities"][0]["title"] == "Sourdough baking"
    assert "postgresql" not in json.dumps(result).casefold()


def test_an_assigned_profile_is_used_when_the_accounts_agree(
    owner_client: APIClient, workspace: Any, realistic: Any
) -> None:
    assigned = VoiceProfile.objects.create(
        workspace=workspace, name="Assigned", definition={"expertise": ["Kubernetes upgrades"]}
    )
    from voice.models import VoiceProfileAssignment

    VoiceProfileAssignment.objects.create(account=realistic["mastodon"], voice_profile=assigned)
    result = ok(discover(owner_client, workspace, platforms=["mastodon"]))
    assert result["opportunities"][0]["title"] == "Kubernetes upgrades"
    # Mastodon and Bluesky accounts disagree: the workspace default applies.
    result = ok(discover(owner_client, workspace, platforms=["mastodon", "bluesky"]))
    assert result["opportunities"][0]["title"] == "PostgreSQL performance tuning"


def test_discovery_never_writes_a_draft_and_never_calls_a_provider(
    owner_client: APIClient, workspace: Any, realistic: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []

    def refuse(*args: Any, **kwargs: Any) -> Any:
        calls.append(repr(args[:2]))
        raise AssertionError("discovery must not make an HTTP request")

    from providers.http import HttpClient
    from publishing import tasks

    monkeypatch.setattr(HttpClient, "request", refuse)
    monkeypatch.setattr(requests.Session, "send", refuse)
    monkeypatch.setattr(tasks.delivery_send, "delay", refuse)
    monkeypatch.setattr(tasks.delivery_send, "apply_async", refuse)
    models = (Publication, Destination, PublicationEvent, Media, Account, VoiceProfile)
    before = {model.__name__: list(model.objects.order_by("pk").values()) for model in models}

    result = ok(discover(owner_client, workspace, focus="Postmortems", limit=8))

    assert result["opportunities"]
    assert calls == []
    after = {model.__name__: list(model.objects.order_by("pk").values()) for model in models}
    assert after == before


# --- Limits ----------------------------------------------------------------------------------------


def test_six_per_minute_per_user_then_429_with_retry_after(
    owner_client: APIClient,
    workspace: Any,
    bearer_client: Callable[..., APIClient],
    make_user: Callable[..., User],
) -> None:
    for _ in range(6):
        ok(discover(owner_client, workspace, limit=1))
    response = discover(owner_client, workspace, limit=1)
    assert_problem(response, 429, "rate_limited")
    assert 1 <= int(response["Retry-After"]) <= 60
    # Another user of the same workspace has their own allowance.
    colleague = make_user()
    WorkspaceMembership.objects.create(workspace=workspace, user=colleague, role="editor")
    ok(discover(bearer_client(colleague), workspace, limit=1))


def test_one_request_in_flight_per_user(
    owner_client: APIClient, workspace: Any, user: User
) -> None:
    with one_in_flight(user.pk, ttl_seconds=30, retry_after=3):
        response = discover(owner_client, workspace)
        assert_problem(response, 429, "discovery_in_flight")
        assert int(response["Retry-After"]) >= 1
    ok(discover(owner_client, workspace))  # released


def test_the_plan_limits_discovery_calls(owner_client: APIClient, workspace: Any) -> None:
    plan = Plan.objects.create(code="starter", name="Starter", max_discovery_calls_per_month=2)
    workspace.plan = plan
    workspace.save()
    ok(discover(owner_client, workspace))
    ok(discover(owner_client, workspace))
    assert_problem(discover(owner_client, workspace), 403, "plan_limit")
    usage = ok(owner_client.get(f"/api/v1/workspaces/{workspace.pk}/usage"))
    assert usage["usage"]["discovery_calls"] == 2


# --- The nine error kinds (the LLM-specific 502/503/504 are in test_discovery_llm.py) -------------


def test_malformed_json_is_400(owner_client: APIClient) -> None:
    response = owner_client.post(URL, b'{"workspace_id": ', content_type="application/json")
    assert_problem(response, 400, "malformed_body")


def test_unauthenticated_is_401(workspace: Any) -> None:
    assert_problem(discover(APIClient(), workspace), 401, "not_authenticated")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Bearer hrld_00000000_nonsense")
    assert_problem(discover(client, workspace), 401, "not_authenticated")


def test_viewers_outsiders_and_read_tokens_are_403(
    workspace: Any,
    user: User,
    bearer_client: Callable[..., APIClient],
    make_user: Callable[..., User],
) -> None:
    viewer = make_user()
    WorkspaceMembership.objects.create(workspace=workspace, user=viewer, role="viewer")
    assert_problem(discover(bearer_client(viewer), workspace), 403, "role_too_low")
    assert_problem(discover(bearer_client(make_user()), workspace), 403, "no_workspace_access")
    assert_problem(
        discover(bearer_client(user, permissions=("api:read",)), workspace), 403, "token_permission"
    )


def test_unknown_resources_are_404(
    owner_client: APIClient, workspace: Any, user: User, organization: Any
) -> None:
    from workspaces.access import Actor
    from workspaces.services import workspace_create

    assert_problem(
        discover(owner_client, workspace, voice_profile_id="00000000-0000-0000-0000-000000000000"),
        404,
        "not_found",
    )
    assert_problem(
        discover(owner_client, workspace, voice_profile_id="not-an-id"), 404, "not_found"
    )
    elsewhere = workspace_create(
        actor=Actor(user=user), organization_id=organization.pk, name="Elsewhere"
    )
    foreign = VoiceProfile.objects.get(workspace=elsewhere)
    assert_problem(
        discover(owner_client, workspace, voice_profile_id=str(foreign.pk)), 404, "not_found"
    )
    response = owner_client.post(
        URL,
        {"workspace_id": "00000000-0000-0000-0000-000000000000", "platforms": ["mastodon"]},
        format="json",
    )
    assert_problem(response, 404, "not_found")


@pytest.mark.parametrize(
    ("body", "locations"),
    [
        ({"platforms": []}, ["body.platforms"]),
        ({"platforms": ["mastodon", "mastodon"]}, ["body.platforms"]),
        ({"platforms": ["myspace"]}, ["body.platforms[0]"]),
        ({"platforms": "mastodon"}, ["body.platforms"]),
        (
            {
                "platforms": [
                    "mastodon",
                    "bluesky",
                    "telegram",
                    "discord_webhook",
                    "mastodon",
                    "bluesky",
                ]
            },
            ["body.platforms"],
        ),
        ({"limit": 0}, ["body.limit"]),
        ({"limit": 9}, ["body.limit"]),
        ({"focus": "f" * 1001}, ["body.focus"]),
        ({"audience": "a" * 501}, ["body.audience"]),
        ({"focus": "bell\x07"}, ["body.focus"]),
        ({"tone": "calm"}, ["body.tone"]),
        ({"workspace_id": None}, ["body.workspace_id"]),
    ],
)
def test_bad_input_is_422_at_its_location(
    owner_client: APIClient, workspace: Any, body: dict[str, Any], locations: list[str]
) -> None:
    assert_invalid(discover(owner_client, workspace, **body), *locations)


def test_a_platform_disabled_on_this_instance_is_422(
    owner_client: APIClient, workspace: Any, settings: Any
) -> None:
    settings.HERALD_DISABLED_PROVIDERS = ["telegram"]
    body = assert_invalid(
        discover(owner_client, workspace, platforms=["mastodon", "telegram"]), "body.platforms[1]"
    )
    assert body["errors"][0]["value"] == "telegram"


def test_focus_and_audience_at_their_limits_are_accepted(
    owner_client: APIClient, workspace: Any
) -> None:
    ok(discover(owner_client, workspace, focus="f" * 1000, audience="a" * 500, limit=8))


@pytest.fixture
def unknown_engine(settings: Any) -> None:
    settings.HERALD_DISCOVERY_ENGINE = "oracle"


def test_an_unknown_engine_setting_is_503(
    owner_client: APIClient, workspace: Any, unknown_engine: None
) -> None:
    assert_problem(discover(owner_client, workspace), 503, "discovery_unavailable")


def _redis() -> Any:
    from django.core.cache import caches

    from config.api.throttling import redis_client

    return redis_client(caches["default"])


@pytest.mark.skipif(
    _redis() is None, reason="needs REDIS_URL (the limits are then shared through Redis)"
)
def test_both_limits_are_shared_through_redis(
    owner_client: APIClient, workspace: Any, user: User
) -> None:
    from django.core.cache import caches

    backend, client = caches["default"], _redis()
    in_flight = backend.make_and_validate_key(f"discovery:in-flight:{user.pk}")
    with one_in_flight(user.pk, ttl_seconds=30, retry_after=1):
        assert client.exists(in_flight) == 1
        assert 0 < client.ttl(in_flight) <= 30
    assert client.exists(in_flight) == 0
    ok(discover(owner_client, workspace))
    assert int(client.get(backend.make_and_validate_key(f"throttle:discovery:{user.pk}"))) == 1


def test_forbidden_phrases_are_kept_out_even_when_the_profile_itself_uses_them(
    owner_client: APIClient, workspace: Any, realistic: Any
) -> None:
    from voice.definition import clean_definition

    profile = realistic["profile"]
    profile.definition = clean_definition(
        {
            **PROFILE,
            "recurring_expressions": ["Honestly, synergy"],
            "opinions": ["Synergy is a symptom of unclear ownership", *PROFILE["opinions"]],
            "expertise": ["Incident response synergy", *PROFILE["expertise"]],
            # Even the engine's own words: labels and templates.
            "forbidden_phrases": [
                "synergy",
                "Take a stand",
                "Show how",
                "expertise",
                "A real moment",
            ],
        }
    )
    profile.save()
    result = ok(discover(owner_client, workspace, limit=8, audience="platform teams"))
    assert_card_invariants(result, ["mastodon", "bluesky"], 8)
    text = json.dumps(result["opportunities"]).casefold()
    for phrase in ("synergy", "take a stand", "show how", "expertise", "a real moment"):
        assert phrase not in text


def test_pathologically_broad_forbidden_phrases_never_break_the_answer(
    owner_client: APIClient, workspace: Any, realistic: Any
) -> None:
    from voice.definition import clean_definition

    profile = realistic["profile"]
    profile.definition = clean_definition(
        {**PROFILE, "forbidden_phrases": ["e", "a", "o", "i", "u"]}
    )
    profile.save()
    result = ok(discover(owner_client, workspace, limit=8))
    assert 1 <= len(result["opportunities"]) <= 8
    for card in result["opportunities"]:
        for key in ("title", "hook", "why_it_fits", "why_now"):
            assert not any(v in card[key].casefold() for v in "eaoiu")
