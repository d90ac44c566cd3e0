"""The built-in engine's angles: 3 to 5 ways to write each card, in the profile's register,
with its own sets for opinion, interview and starter cards."""

from __future__ import annotations

from dataclasses import dataclass

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


_STAND = (
    "Open with the claim in one line, back it with one reason from your own work, and end by "
    "inviting disagreement."
)


@dataclass(frozen=True)
class _Guidance:
    """The profile's guidance, each piece ready to append to an approach ("" when absent)."""

    register: str
    stay: str  # the boundaries
    avoid: str  # the disliked patterns
    lesson: str  # the first lesson of the corrections
    expression: str  # a recurring expression
    words: str  # the vocabulary
    has_disliked: bool


def _guidance(profile: Profile, index: int) -> _Guidance:
    boundaries = profile.items("boundaries")[:2]
    disliked = profile.items("disliked_patterns")[:2]
    vocabulary = profile.items("vocabulary")[:3]
    lessons = [c.get("lesson", "") for c in profile.items("corrections") if c.get("lesson")][:1]
    return _Guidance(
        register=profile.register(),
        stay=(
            f"Stay within your boundaries: {_join([_clip(b, 90) for b in boundaries])}."
            if boundaries
            else ""
        ),
        avoid=(
            f"Avoid {_join([_lower_first(_clip(d, 80)) for d in disliked])}." if disliked else ""
        ),
        lesson=f"Remember: {_sentence(_clip(lessons[0], 120))}" if lessons else "",
        expression=profile.expression(index + 1),
        words=(
            f"Use your own terms ({_join([f'“{v}”' for v in vocabulary])}) where they fit."
            if vocabulary
            else ""
        ),
        has_disliked=bool(disliked),
    )


@dataclass(frozen=True)
class _Subject:
    """What a topic card's angles are about: a topic, or an earlier post (a follow-up or a
    second run is about a post, whose "topic" is its first sentence: the angles then refer to
    that post instead of pasting a sentence into "about …")."""

    topic: str  # clipped, lower-cased for use mid-sentence
    quote: str  # the post's first sentence in quotes, or ""
    about_post: bool  # a follow-up, covered topic or second run with its post
    about_sentence: bool  # about the post itself (not a covered topic)

    @property
    def ref(self) -> str:
        return self.quote or "that post"


def _with(core: str, *extras: str) -> str:
    """An approach: ``core`` and the non-blank ``extras``, clipped."""
    return _clip(" ".join([core, *[e for e in extras if e]]), 700)


def _angle(label: str, thesis: str, approach: str) -> dict[str, str]:
    return {"label": label, "thesis": thesis, "approach": approach}


def angles(
    profile: Profile, ctx: DiscoveryContext, seed: Seed, opinion: str, story: str, index: int
) -> list[dict[str, str]]:
    """3 to 5 angles. The profile's guidance is spread where it matters most rather than
    repeated: the register on the stand, vocabulary on the how-to, boundaries on the
    story, disliked patterns on the myth and the audience question."""
    guidance = _guidance(profile, index)
    if seed.kind == "opinion":
        return opinion_angles(profile, ctx, seed, guidance, index)
    if seed.kind == "interview":
        return interview_angles(ctx, seed, guidance)
    if seed.kind == "starter":
        return starter_angles(ctx, seed, guidance.register, guidance.stay, guidance.avoid)
    about_post = (
        seed.kind in {"follow_up", "covered", "second_chance"} and seed.publication is not None
    )
    subject = _Subject(
        topic=_lower_first(_clip(seed.topic, 100)),
        quote=profile.quoted(seed.publication),
        about_post=about_post,
        about_sentence=about_post and seed.kind != "covered",
    )
    found = [
        _stand_angle(subject, opinion, guidance),
        _next_angle(subject) if about_post else _how_to_angle(subject, guidance),
        _story_angle(subject, story, profile.example(index, seed.topic), guidance),
    ]
    if (
        guidance.has_disliked
        or len(profile.items("opinions")) >= 2
        or seed.kind in {"gap", "focus"}
    ):
        found.append(_myth_angle(subject, guidance))
    if ctx.audience and len(found) < 5:
        found.append(_audience_angle(subject, ctx.audience, guidance))
    return found[:5]


def _stand_angle(subject: _Subject, opinion: str, guidance: _Guidance) -> dict[str, str]:
    if opinion:
        stand = _sentence(_clip(opinion, 400))
    elif subject.about_post:
        on = subject.ref if subject.about_sentence else subject.topic
        stand = f"Where you stand now on {on}, with what you know today."
    else:
        stand = f"Say plainly where you stand on {subject.topic} and why."
    return _angle("Take a stand", stand, _with(_STAND, guidance.register, guidance.lesson))


def _next_angle(subject: _Subject) -> dict[str, str]:
    return _angle(
        "What happened next",
        f"What changed since you posted {subject.quote or f'about {subject.topic}'}.",
        _with(
            "Quote or link the earlier post, then give the update: one result, one "
            "surprise, one thing you would do differently."
        ),
    )


def _how_to_angle(subject: _Subject, guidance: _Guidance) -> dict[str, str]:
    return _angle(
        "Show how",
        f"A concrete, repeatable way to handle {subject.topic}, taken from how you work.",
        _with(
            "Three short numbered steps, each with a real example; keep theory to one sentence.",
            guidance.words,
        ),
    )


def _story_angle(
    subject: _Subject, story: str, example: dict[str, str] | None, guidance: _Guidance
) -> dict[str, str]:
    if story:
        core = f"Retell it in the first person: {_clip(story, 220)}"
    elif example is not None:
        where = f" for {example['platform']}" if example.get("platform") else ""
        core = (
            "Anchor it in one specific moment and match the rhythm of the example you "
            f"saved{where}: “{_clip(example['text'], 160)}”"
        )
    else:
        core = "Anchor it in one specific moment: who was there, what went wrong, what you learned."
    if not subject.about_sentence:
        thesis = f"A real moment from your work where {subject.topic} mattered."
    elif subject.quote:
        thesis = f"The moment behind {subject.quote} that the first post left out."
    else:
        thesis = "The moment behind that post, which it left out."
    return _angle("Story from the work", thesis, _with(core, guidance.stay))


def _myth_angle(subject: _Subject, guidance: _Guidance) -> dict[str, str]:
    thesis = (
        f"What readers may have assumed from {subject.ref}, and what actually happened."
        if subject.about_sentence
        else f"A common belief about {subject.topic} that your experience contradicts."
    )
    phrase = f"Work in your phrase “{guidance.expression}”." if guidance.expression else ""
    approach = _with(
        "State the myth fairly in one line, then correct it with evidence from your own work.",
        phrase,
        guidance.avoid,
    )
    return _angle("Myth vs. reality", thesis, approach)


def _audience_angle(subject: _Subject, audience: str, guidance: _Guidance) -> dict[str, str]:
    thesis = (
        f"Whether {_clip(audience, 120)} have been through the same, and what they saw."
        if subject.about_sentence
        else f"What {_clip(audience, 120)} find hardest about {subject.topic}."
    )
    approach = _with(
        "Share your own answer in two sentences, then ask one specific question "
        "people can answer in a reply.",
        guidance.avoid,
    )
    return _angle("Ask your audience", thesis, approach)


def opinion_angles(
    profile: Profile, ctx: DiscoveryContext, seed: Seed, guidance: _Guidance, index: int
) -> list[dict[str, str]]:
    example = profile.example(index, seed.opinion)
    rhythm = (
        f"Match the rhythm of the example you saved: “{_clip(example['text'], 160)}”"
        if example is not None
        else ""
    )
    phrase = f"Work in your phrase “{guidance.expression}”." if guidance.expression else ""
    rows = [
        ("Take a stand", _sentence(_clip(seed.opinion, 400)), _STAND, (guidance.register,)),
        (
            "The evidence",
            "The strongest case from your own work for this view.",
            "Lead with one specific case, then the general point; numbers beat adjectives.",
            (rhythm,),
        ),
        (
            "Story from the work",
            "The moment that convinced you.",
            "Tell it in the first person, from before you held this view to after.",
            (guidance.stay,),
        ),
        (
            "Steelman the other side",
            "The best argument against this view, and why you still hold it.",
            "State the opposing view so fairly its holders would sign it, then answer it.",
            (phrase, guidance.avoid),
        ),
    ]
    if ctx.audience:
        rows.append(
            (
                "Ask your audience",
                f"Whether {_clip(ctx.audience, 120)} agree, and where they have seen the opposite.",
                "State your view in one line, then ask for counter-examples.",
                (guidance.avoid,),
            )
        )
    return [_angle(label, thesis, _with(core, *extras)) for label, thesis, core, extras in rows]


def interview_angles(
    ctx: DiscoveryContext, seed: Seed, guidance: _Guidance
) -> list[dict[str, str]]:
    question = _sentence(_clip(seed.topic, 300)).rstrip(".")
    found = [
        _angle(
            "The short version",
            _sentence(_gist(seed.story, 300)) or question,
            _with(
                "Answer the question in the first sentence, then give the one detail that "
                "makes it real.",
                guidance.register,
            ),
        ),
        _angle(
            "Story from the work",
            "The full story behind your answer.",
            _with(f"Retell it in the first person: {_clip(seed.story, 220)}", guidance.stay),
        ),
        _angle(
            "What you would do differently",
            "What you would change if it happened again tomorrow.",
            _with(
                "Name the decision, what you know now, and the one change you would make.",
                guidance.lesson,
            ),
        ),
    ]
    if ctx.audience:
        found.append(
            _angle(
                "Ask your audience",
                f"Ask {_clip(ctx.audience, 120)} the same question: {question}",
                "Give your answer in two sentences first, so replies have something to build on.",
            )
        )
    return found


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
