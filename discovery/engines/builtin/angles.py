"""The built-in engine's angles: 3 to 5 ways to write each card, in the profile's register,
with its own sets for opinion, interview and starter cards."""

from __future__ import annotations

from discovery.cards import MIN_ANGLES
from discovery.context import DiscoveryContext
from discovery.engines.builtin.profile import Profile
from discovery.engines.builtin.signals import Seed
from discovery.engines.builtin.text import _clip, _gist, _join, _lower_first, _sentence

# Starter angles: (label, thesis, approach); {name} and {audience} are filled in.
_STARTER_ANGLES: dict[str, list[tuple[str, str, str]]] = {
    "starter:intro": [
        (
            "Who it is for",
            "Who {name} serves, and the one problem it solves for them.",
            "Name the reader in the first line, then the problem, then what you do about it; no company history.",
        ),
        (
            "What to expect here",
            "What {audience} will get from these posts, and how often.",
            "Promise two or three kinds of post, then keep the promise in the next ones.",
        ),
        (
            "Why now",
            "Why {name} starts posting now.",
            "One honest sentence about the moment, then invite people to say hello.",
        ),
    ],
    "starter:question": [
        (
            "One open question",
            "The one question you most want {audience} to answer.",
            "Ask something people can answer in a one-line reply, and give your own answer first.",
        ),
        (
            "Either-or",
            "Two options {audience} can pick between, and why you care which wins.",
            "Offer exactly two choices, say which you would pick, and promise to share the result.",
        ),
        (
            "Finish the sentence",
            "A sentence {audience} complete in the replies.",
            "Start the sentence, leave the end open, and answer the first replies yourself.",
        ),
    ],
    "starter:behind": [
        (
            "One moment this week",
            "A single moment from this week's work at {name}.",
            "Describe it as if to a friend: where you were, what happened, what it taught you.",
        ),
        (
            "The step nobody sees",
            "The unglamorous step the finished work depends on.",
            "Show the step (a photo or screenshot works) and say why you never skip it.",
        ),
        (
            "What went wrong",
            "Something that went wrong this week, and the fix.",
            "Keep it short and specific; end with what you changed.",
        ),
    ],
    "starter:lesson": [
        (
            "The mistake",
            "The decision that went wrong, told plainly.",
            "Start at the decision, not the backstory; one line on why it seemed right.",
        ),
        (
            "What it cost",
            "What the mistake cost in time, money or trust.",
            "Use one concrete figure or consequence instead of adjectives.",
        ),
        (
            "The rule now",
            "The rule you follow since, and how others can apply it.",
            "State the rule in one line, then one example of it in action.",
        ),
    ],
    "starter:tools": [
        (
            "The one to keep",
            "The one tool {name} could not work without, and why.",
            "Name it, show what it does for you in one example, and say what it replaced.",
        ),
        (
            "The one you dropped",
            "A popular tool you stopped using, and what you use instead.",
            "Be fair to the tool; the point is the fit, not the brand.",
        ),
        (
            "Your setup in three steps",
            "How the tools fit together in a normal day.",
            "Three numbered steps, one tool each; a screenshot makes it concrete.",
        ),
    ],
    "starter:myth": [
        (
            "The myth, stated fairly",
            "The belief, in the words its believers would use.",
            "Quote or paraphrase it fairly before you say anything against it.",
        ),
        (
            "What you saw instead",
            "The evidence from your own work that contradicts it.",
            "One specific case beats a general argument.",
        ),
        (
            "What to do instead",
            "The practice you recommend in its place.",
            "End with one step people can try this week.",
        ),
    ],
    "starter:numbers": [
        (
            "The number",
            "One figure from your recent work, and why it matters.",
            "Lead with the number itself; give the context in one sentence.",
        ),
        (
            "What changed it",
            "What moved that number, up or down.",
            "Name the one change that made the difference.",
        ),
        (
            "What comes next",
            "What you will do about it next month.",
            "Make one concrete commitment people can hold you to.",
        ),
    ],
    "starter:faq": [
        (
            "The short answer",
            "The answer to the question you hear most, in one line.",
            "Quote the question as people ask it, then answer it in a sentence.",
        ),
        (
            "The longer answer",
            "The nuance the short answer leaves out.",
            "Two or three points, each with an example.",
        ),
        (
            "What people get wrong",
            "The assumption behind the question that is not quite right.",
            "Correct it kindly; people ask because it is confusing.",
        ),
    ],
}


def angles(
    profile: Profile, ctx: DiscoveryContext, seed: Seed, opinion: str, story: str, index: int
) -> list[dict[str, str]]:
    """3 to 5 angles. The profile's guidance is spread where it matters most rather than
    repeated: the register on the stand, vocabulary on the how-to, boundaries on the
    story, disliked patterns on the myth and the audience question."""
    topic = _lower_first(_clip(seed.topic, 100))
    quote = profile.quoted(seed.publication)
    about_post = (
        seed.kind in {"follow_up", "covered", "second_chance"} and seed.publication is not None
    )
    subject = quote if about_post and seed.kind != "covered" and quote else topic
    # A follow-up or second run is about a post, whose "topic" is its first sentence: the
    # angles then refer to that post instead of pasting a sentence into "about …".
    about_sentence = about_post and seed.kind != "covered"
    ref = quote or "that post"
    expression = profile.expression(index + 1)
    vocabulary = profile.items("vocabulary")[:3]
    boundaries = profile.items("boundaries")[:2]
    disliked = profile.items("disliked_patterns")[:2]
    lessons = [c.get("lesson", "") for c in profile.items("corrections") if c.get("lesson")][:1]

    def with_(core: str, *extras: str) -> str:
        return _clip(" ".join([core, *[e for e in extras if e]]), 700)

    register = profile.register()
    stay = (
        f"Stay within your boundaries: {_join([_clip(b, 90) for b in boundaries])}."
        if boundaries
        else ""
    )
    avoid = f"Avoid {_join([_lower_first(_clip(d, 80)) for d in disliked])}." if disliked else ""
    lesson = f"Remember: {_sentence(_clip(lessons[0], 120))}" if lessons else ""

    if seed.kind == "opinion":
        return opinion_angles(profile, ctx, seed, register, stay, avoid, expression, index)
    if seed.kind == "interview":
        return interview_angles(ctx, seed, register, stay, lesson)
    if seed.kind == "starter":
        return starter_angles(ctx, seed, register, stay, avoid)
    angles: list[dict[str, str]] = []
    if opinion:
        stand = _sentence(_clip(opinion, 400))
    elif about_post:
        stand = f"Where you stand now on {ref if about_sentence else subject}, with what you know today."
    else:
        stand = f"Say plainly where you stand on {topic} and why."
    angles.append(
        {
            "label": "Take a stand",
            "thesis": stand,
            "approach": with_(
                "Open with the claim in one line, back it with one reason from your own work, "
                "and end by inviting disagreement.",
                register,
                lesson,
            ),
        }
    )
    if about_post:
        angles.append(
            {
                "label": "What happened next",
                "thesis": f"What changed since you posted {quote or f'about {topic}'}.",
                "approach": with_(
                    "Quote or link the earlier post, then give the update: one result, one "
                    "surprise, one thing you would do differently."
                ),
            }
        )
    else:
        words = (
            f"Use your own terms ({_join([f'“{v}”' for v in vocabulary])}) where they fit."
            if vocabulary
            else ""
        )
        angles.append(
            {
                "label": "Show how",
                "thesis": f"A concrete, repeatable way to handle {topic}, taken from how you work.",
                "approach": with_(
                    "Three short numbered steps, each with a real example; keep theory to one "
                    "sentence.",
                    words,
                ),
            }
        )
    example = profile.example(index, seed.topic)
    if story:
        story_core = f"Retell it in the first person: {_clip(story, 220)}"
    elif example is not None:
        where = f" for {example['platform']}" if example.get("platform") else ""
        story_core = (
            "Anchor it in one specific moment and match the rhythm of the example you "
            f"saved{where}: “{_clip(example['text'], 160)}”"
        )
    else:
        story_core = (
            "Anchor it in one specific moment: who was there, what went wrong, what you learned."
        )
    if about_sentence:
        story_thesis = (
            f"The moment behind {quote} that the first post left out."
            if quote
            else "The moment behind that post, which it left out."
        )
    else:
        story_thesis = f"A real moment from your work where {topic} mattered."
    angles.append(
        {
            "label": "Story from the work",
            "thesis": story_thesis,
            "approach": with_(story_core, stay),
        }
    )
    if disliked or len(profile.items("opinions")) >= 2 or seed.kind in {"gap", "focus"}:
        angles.append(
            {
                "label": "Myth vs. reality",
                "thesis": (
                    f"What readers may have assumed from {ref}, and what actually happened."
                    if about_sentence
                    else f"A common belief about {topic} that your experience contradicts."
                ),
                "approach": with_(
                    "State the myth fairly in one line, then correct it with evidence from your "
                    "own work.",
                    f"Work in your phrase “{expression}”." if expression else "",
                    avoid,
                ),
            }
        )
    if ctx.audience and len(angles) < 5:
        angles.append(
            {
                "label": "Ask your audience",
                "thesis": (
                    f"Whether {_clip(ctx.audience, 120)} have been through the same, and "
                    "what they saw."
                    if about_sentence
                    else f"What {_clip(ctx.audience, 120)} find hardest about {topic}."
                ),
                "approach": with_(
                    "Share your own answer in two sentences, then ask one specific question "
                    "people can answer in a reply.",
                    avoid,
                ),
            }
        )
    if len(angles) < MIN_ANGLES:
        angles.append(
            {
                "label": "Lessons learned",
                "thesis": (
                    "Three things you would tell someone about to try the same."
                    if about_sentence
                    else f"Three things you would tell someone about to take on {topic}."
                ),
                "approach": with_(
                    "One short paragraph per lesson, each ending in a concrete action.", stay
                ),
            }
        )
    return angles[:5]


def opinion_angles(
    profile: Profile,
    ctx: DiscoveryContext,
    seed: Seed,
    register: str,
    stay: str,
    avoid: str,
    expression: str,
    index: int,
) -> list[dict[str, str]]:
    claim = _sentence(_clip(seed.opinion, 400))
    example = profile.example(index, seed.opinion)
    rhythm = (
        f"Match the rhythm of the example you saved: “{_clip(example['text'], 160)}”"
        if example is not None
        else ""
    )
    angles = [
        {
            "label": "Take a stand",
            "thesis": claim,
            "approach": _clip(
                "Open with the claim in one line, back it with one reason from your own work, "
                f"and end by inviting disagreement. {register}",
                700,
            ).strip(),
        },
        {
            "label": "The evidence",
            "thesis": "The strongest case from your own work for this view.",
            "approach": _clip(
                f"Lead with one specific case, then the general point; numbers beat adjectives. {rhythm}",
                700,
            ).strip(),
        },
        {
            "label": "Story from the work",
            "thesis": "The moment that convinced you.",
            "approach": _clip(
                f"Tell it in the first person, from before you held this view to after. {stay}", 700
            ).strip(),
        },
        {
            "label": "Steelman the other side",
            "thesis": "The best argument against this view, and why you still hold it.",
            "approach": _clip(
                "State the opposing view so fairly its holders would sign it, then answer it."
                + (f" Work in your phrase “{expression}”." if expression else "")
                + f" {avoid}",
                700,
            ).strip(),
        },
    ]
    if ctx.audience:
        angles.append(
            {
                "label": "Ask your audience",
                "thesis": f"Whether {_clip(ctx.audience, 120)} agree, and where they have seen the opposite.",
                "approach": _clip(
                    f"State your view in one line, then ask for counter-examples. {avoid}", 700
                ).strip(),
            }
        )
    return angles


def interview_angles(
    ctx: DiscoveryContext, seed: Seed, register: str, stay: str, lesson: str
) -> list[dict[str, str]]:
    question = _sentence(_clip(seed.topic, 300)).rstrip(".")
    angles = [
        {
            "label": "The short version",
            "thesis": _sentence(_gist(seed.story, 300)) or question,
            "approach": _clip(
                f"Answer the question in the first sentence, then give the one detail that makes it real. {register}",
                700,
            ).strip(),
        },
        {
            "label": "Story from the work",
            "thesis": "The full story behind your answer.",
            "approach": _clip(
                f"Retell it in the first person: {_clip(seed.story, 220)} {stay}", 700
            ).strip(),
        },
        {
            "label": "What you would do differently",
            "thesis": "What you would change if it happened again tomorrow.",
            "approach": _clip(
                f"Name the decision, what you know now, and the one change you would make. {lesson}",
                700,
            ).strip(),
        },
    ]
    if ctx.audience:
        angles.append(
            {
                "label": "Ask your audience",
                "thesis": f"Ask {_clip(ctx.audience, 120)} the same question: {question}",
                "approach": "Give your answer in two sentences first, so replies have something to build on.",
            }
        )
    return angles


def starter_angles(
    ctx: DiscoveryContext, seed: Seed, register: str, stay: str, avoid: str
) -> list[dict[str, str]]:
    """A starter card's own angles (its topic is a clause, not a noun: the general
    templates would read "where you stand on what … does and who it is for")."""
    values = {
        "name": ctx.workspace_name,
        "audience": _clip(ctx.audience, 120) or "your followers",
    }
    extras = {0: register, 1: stay, 2: avoid}
    return [
        {
            "label": label,
            "thesis": _clip(thesis.format(**values), 500),
            "approach": _clip(f"{approach.format(**values)} {extras.get(n, '')}".strip(), 700),
        }
        for n, (label, thesis, approach) in enumerate(_STARTER_ANGLES[seed.key])
    ]
