"""The built-in engine's angles for each kind of card: which angles a card gets, their theses,
and where the profile's register, vocabulary, boundaries, lessons, expressions and patterns to
avoid are worked into the approaches."""

from __future__ import annotations

from typing import Any

from discovery.engines.builtin import BuiltinEngine
from discovery.engines.builtin.angles import angles
from discovery.engines.builtin.profile import Profile
from discovery.engines.builtin.signals import Seed
from tests.discovery.builtin_support import TODAY, context, post

VOICE = {
    "traits": ["Direct", "Warm"],
    "vocabulary": ["toil", "blast radius", "paved road", "yak shaving"],
    "recurring_expressions": ["Here's the thing"],
    "boundaries": ["No client names"],
    "disliked_patterns": ["Clickbait questions"],
    "corrections": [{"original": "utilize", "preferred": "use", "lesson": "Plain words win"}],
}
REGISTER = "Sound direct and warm; reach for words like “toil”, “blast radius” and “paved road”."
STAY = "Stay within your boundaries: No client names."
AVOID = "Avoid clickbait questions."
LESSON = "Remember: Plain words win."
STAND = (
    "Open with the claim in one line, back it with one reason from your own work, and end by "
    "inviting disagreement."
)


def angles_for(
    seed: Seed,
    definition: dict[str, Any] | None = None,
    *,
    audience: str = "",
    opinion: str = "",
    story: str = "",
    index: int = 0,
) -> dict[str, dict[str, str]]:
    ctx = context(definition, audience=audience)
    found = angles(Profile(ctx), ctx, seed, opinion, story, index)
    by_label = {a["label"]: a for a in found}
    assert len(by_label) == len(found)
    return by_label


def seed(kind: str, topic: str, **extra: Any) -> Seed:
    return Seed(f"{kind}:{topic}", kind, topic, TODAY, "Why now.", topic, **extra)


# --- Cards about a topic --------------------------------------------------------------------------


def test_a_gap_gets_a_stand_a_how_to_a_story_and_a_myth_in_the_profiles_register() -> None:
    found = angles_for(seed("gap", "PostgreSQL tuning"), VOICE)
    assert list(found) == ["Take a stand", "Show how", "Story from the work", "Myth vs. reality"]
    assert found["Take a stand"] == {
        "label": "Take a stand",
        "thesis": "Say plainly where you stand on PostgreSQL tuning and why.",
        "approach": f"{STAND} {REGISTER} {LESSON}",
    }
    assert found["Show how"]["thesis"] == (
        "A concrete, repeatable way to handle PostgreSQL tuning, taken from how you work."
    )
    assert found["Show how"]["approach"].endswith(
        "Use your own terms (“toil”, “blast radius” and “paved road”) where they fit."
    )
    assert found["Story from the work"] == {
        "label": "Story from the work",
        "thesis": "A real moment from your work where PostgreSQL tuning mattered.",
        "approach": "Anchor it in one specific moment: who was there, what went wrong, what "
        f"you learned. {STAY}",
    }
    assert found["Myth vs. reality"]["thesis"] == (
        "A common belief about PostgreSQL tuning that your experience contradicts."
    )
    assert found["Myth vs. reality"]["approach"].endswith(
        f"own work. Work in your phrase “Here's the thing”. {AVOID}"
    )


def test_an_audience_gets_its_own_question_and_five_angles_at_most() -> None:
    found = angles_for(seed("focus", "Incident reviews"), VOICE, audience="engineering leads")
    assert list(found) == [
        "Take a stand",
        "Show how",
        "Story from the work",
        "Myth vs. reality",
        "Ask your audience",
    ]
    assert found["Ask your audience"]["thesis"] == (
        "What engineering leads find hardest about incident reviews."
    )
    assert found["Ask your audience"]["approach"].endswith(AVOID)


def test_a_matching_opinion_and_story_fill_the_stand_and_the_story() -> None:
    found = angles_for(
        seed("gap", "Retries"),
        {},
        opinion="Retries without budgets are a denial of service you run on yourself",
        story="A cascading failure took our database down.",
    )
    assert found["Take a stand"]["thesis"] == (
        "Retries without budgets are a denial of service you run on yourself."
    )
    assert found["Take a stand"]["approach"] == STAND  # an empty profile adds nothing
    assert found["Story from the work"]["approach"] == (
        "Retell it in the first person: A cascading failure took our database down."
    )


def test_a_saved_example_sets_the_rhythm_of_the_story() -> None:
    example = {"text": "We cut p99 from 900 ms to 40 ms with one index.", "platform": "Mastodon"}
    found = angles_for(seed("gap", "Indexes"), {"examples": [example]})
    assert found["Story from the work"]["approach"] == (
        "Anchor it in one specific moment and match the rhythm of the example you saved for "
        "Mastodon: “We cut p99 from 900 ms to 40 ms with one index.”"
    )


def test_a_covered_topic_asks_what_happened_next_and_needs_a_reason_for_a_myth() -> None:
    earlier = post("p", "Incident response is easier with runbooks.", 9, ("mastodon", "published"))
    covered = seed("covered", "Incident response", publication=earlier)
    found = angles_for(covered, {})
    assert list(found) == ["Take a stand", "What happened next", "Story from the work"]
    assert found["Take a stand"]["thesis"] == (
        "Where you stand now on incident response, with what you know today."
    )
    assert found["What happened next"]["thesis"] == (
        "What changed since you posted “Incident response is easier with runbooks”."
    )
    assert found["Story from the work"]["thesis"] == (
        "A real moment from your work where incident response mattered."
    )
    # Patterns to avoid (or two opinions) are what the myth angle is built from.
    with_patterns = angles_for(covered, {"disliked_patterns": ["Hot takes"]})
    assert with_patterns["Myth vs. reality"]["thesis"] == (
        "A common belief about incident response that your experience contradicts."
    )


def test_a_follow_up_refers_to_its_post_instead_of_pasting_its_sentence() -> None:
    earlier = post(
        "p", "Our team switched to four-day weeks. Six months in.", 9, ("mastodon", "published")
    )
    follow = seed("follow_up", "Our team switched to four-day weeks", publication=earlier)
    found = angles_for(follow, {"opinions": ["One", "Two"]}, audience="founders")
    quote = "“Our team switched to four-day weeks”"
    assert found["Take a stand"]["thesis"] == (
        f"Where you stand now on {quote}, with what you know today."
    )
    assert found["What happened next"]["thesis"] == f"What changed since you posted {quote}."
    assert found["Story from the work"]["thesis"] == (
        f"The moment behind {quote} that the first post left out."
    )
    assert found["Myth vs. reality"]["thesis"] == (
        f"What readers may have assumed from {quote}, and what actually happened."
    )
    assert found["Ask your audience"]["thesis"] == (
        "Whether founders have been through the same, and what they saw."
    )


def test_a_post_carrying_a_forbidden_phrase_is_never_quoted_back() -> None:
    earlier = post(
        "p", "Runbooks are a game changer. Write them early.", 9, ("mastodon", "published")
    )
    second = seed("second_chance", "Runbooks are a game changer", publication=earlier)
    found = angles_for(second, {"forbidden_phrases": ["game changer"], "disliked_patterns": ["x"]})
    assert found["Take a stand"]["thesis"] == (
        "Where you stand now on that post, with what you know today."
    )
    assert found["What happened next"]["thesis"] == (
        "What changed since you posted about runbooks are a game changer."
    )
    assert (
        found["Story from the work"]["thesis"] == "The moment behind that post, which it left out."
    )
    assert found["Myth vs. reality"]["thesis"] == (
        "What readers may have assumed from that post, and what actually happened."
    )


# --- Opinions, interview answers and starters -----------------------------------------------------


def test_an_opinion_card_argues_the_opinion() -> None:
    opinion = "Most teams should run fewer microservices"
    example = {"text": "We cut p99 from 900 ms to 40 ms with one index."}
    found = angles_for(
        seed("opinion", opinion, opinion=opinion),
        {**VOICE, "examples": [example]},
        audience="engineering leads",
    )
    assert found == {
        "Take a stand": {
            "label": "Take a stand",
            "thesis": "Most teams should run fewer microservices.",
            "approach": f"{STAND} {REGISTER}",
        },
        "The evidence": {
            "label": "The evidence",
            "thesis": "The strongest case from your own work for this view.",
            "approach": "Lead with one specific case, then the general point; numbers beat "
            "adjectives. Match the rhythm of the example you saved: “We cut p99 from 900 ms to "
            "40 ms with one index.”",
        },
        "Story from the work": {
            "label": "Story from the work",
            "thesis": "The moment that convinced you.",
            "approach": "Tell it in the first person, from before you held this view to after. "
            + STAY,
        },
        "Steelman the other side": {
            "label": "Steelman the other side",
            "thesis": "The best argument against this view, and why you still hold it.",
            "approach": "State the opposing view so fairly its holders would sign it, then "
            f"answer it. Work in your phrase “Here's the thing”. {AVOID}",
        },
        "Ask your audience": {
            "label": "Ask your audience",
            "thesis": "Whether engineering leads agree, and where they have seen the opposite.",
            "approach": f"State your view in one line, then ask for counter-examples. {AVOID}",
        },
    }
    bare = angles_for(seed("opinion", opinion, opinion=opinion), {})
    assert list(bare) == [
        "Take a stand",
        "The evidence",
        "Story from the work",
        "Steelman the other side",
    ]
    assert bare["The evidence"]["approach"] == (
        "Lead with one specific case, then the general point; numbers beat adjectives."
    )


def test_an_interview_card_retells_the_answer() -> None:
    question = "What is the hardest incident you handled?"
    answer = "A cascading failure took our database down. We added backoff."
    interview = seed("interview", question, story=answer)
    found = angles_for(interview, VOICE, audience="engineering leads")
    assert list(found) == [
        "The short version",
        "Story from the work",
        "What you would do differently",
        "Ask your audience",
    ]
    assert found["The short version"]["thesis"] == "A cascading failure took our database down."
    assert found["The short version"]["approach"].endswith(f"makes it real. {REGISTER}")
    assert found["Story from the work"]["approach"] == (
        f"Retell it in the first person: {answer} {STAY}"
    )
    assert found["What you would do differently"]["approach"] == (
        f"Name the decision, what you know now, and the one change you would make. {LESSON}"
    )
    assert found["Ask your audience"]["thesis"] == (
        f"Ask engineering leads the same question: {question}"
    )
    # Without an answer the question itself is the short version.
    assert angles_for(seed("interview", question), {})["The short version"]["thesis"] == question


def test_every_starter_has_its_own_three_angles_filled_with_name_and_audience() -> None:
    keys = ["intro", "question", "behind", "lesson", "tools", "myth", "numbers", "faq"]
    sets = set()
    for key in keys:
        starter = Seed(f"starter:{key}", "starter", "a clause", TODAY, "Why.", "Title")
        found = angles_for(starter, {})
        assert len(found) == 3
        sets.add(tuple(found))
    assert len(sets) == len(keys)

    intro = Seed("starter:intro", "starter", "what Acme Ops does", TODAY, "Why.", "Title")
    plain = list(angles_for(intro, {}).values())
    assert plain[0]["thesis"] == "Who Acme Ops serves, and the one problem it solves for them."
    assert plain[1]["thesis"] == "What your followers will get from these posts, and how often."
    assert plain[2]["approach"] == (
        "One honest sentence about the moment, then invite people to say hello."
    )
    # The register, the boundaries and the patterns to avoid go to the first three approaches.
    voiced = list(angles_for(intro, VOICE, audience="platform leads").values())
    assert voiced[1]["thesis"] == "What platform leads will get from these posts, and how often."
    assert voiced[0]["approach"].endswith(f"no company history. {REGISTER}")
    assert voiced[1]["approach"].endswith(f"in the next ones. {STAY}")
    assert voiced[2]["approach"].endswith(f"say hello. {AVOID}")


def test_an_angle_label_emptied_by_a_forbidden_phrase_gets_a_spare_label() -> None:
    ctx = context(
        {"expertise": ["Incident response"], "forbidden_phrases": ["Take a stand", "Show how"]},
        limit=1,
    )
    [card] = BuiltinEngine().discover(ctx).opportunities
    assert [a["label"] for a in card["angles"]] == [
        "Another view",
        "A second look",
        "Story from the work",
        "Myth vs. reality",
    ]


def test_a_card_whose_angles_the_forbidden_phrases_gutted_is_dropped() -> None:
    """Two whole theses forbidden leave the card two angles: it is dropped, never sent with
    fewer than three (and a result can then be empty)."""
    gutting = [
        "Say plainly where you stand on incident response and why.",
        "A concrete, repeatable way to handle incident response, taken from how you work.",
    ]
    definition = {"expertise": ["Incident response"], "forbidden_phrases": gutting}
    assert BuiltinEngine().discover(context(definition, limit=1)).opportunities == []
    cards = BuiltinEngine().discover(context(definition, limit=2)).opportunities
    assert [c["title"] for c in cards] == ["What Acme Ops is here for"]


def test_a_hook_scrubbed_to_nothing_gets_a_neutral_stand_in() -> None:
    definition = {
        "expertise": ["Incident response"],
        "forbidden_phrases": [
            "What I wish someone had told me about incident response much earlier."
        ],
    }
    [card] = BuiltinEngine().discover(context(definition, limit=1)).opportunities
    assert card["hook"] == "A post about Incident response."
